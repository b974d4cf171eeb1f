"""What ``pubench preflight`` prints and writes: one line per check, the per-table cost,
the JSON, and the preflight cache that ``run --dry-run`` reads.

Cost of a table on this device = the sum over its cells of the projected job time x the
tier's seeds (the jobs of a full run); cells without a projection (failed, skipped) are
counted apart. The cache holds, per configuration (:func:`pubench.preflight.plan.cost_key`)
and device, the projected job seconds and FLOPs of the last ok check:
``$PUBENCH_CACHE/preflight/<device>/<key>.json`` (``PUBENCH_CACHE`` default ``<home>/.cache``).
"""

from __future__ import annotations

import json
import os
import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pubench.report.compute import fmt_duration, fmt_hours


# ------------------------------------------------------------------ one check
def main_stage(figures: dict[str, Any]) -> dict[str, Any] | None:
    """The stage with the largest projected time (the one a job's cost rests on)."""
    stages = [s for s in figures.get("stages") or [] if s.get("step_s")]
    return max(stages, key=lambda s: s["projected_s"]) if stages else None


def steady_step_s(stage: dict[str, Any]) -> float:
    steps = stage["step_s"]
    return statistics.median(steps[1:]) if len(steps) > 1 else steps[0]


def fmt_bytes(n: int | None) -> str:
    return "?" if not n else f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.0f} MiB"


def describe_check(status: str, reason: str | None, res: dict[str, Any]) -> str:
    """One line: ``ok: 0.41 s/step (pretrain info_nce), 3.1 GiB, job 12 h [synthetic cifar10]``."""
    where = f" [{res['inputs']}]" if res.get("inputs") and res["inputs"] != "real data" else ""
    took = f" ({res['process_s']:.0f} s)" if "process_s" in res else ""
    if status != "ok":
        return f"{status}: {reason}{where}{took}"
    fig = res["figures"]
    stage = main_stage(fig)
    step = f"{steady_step_s(stage):.3g} s/step ({stage['desc']}), " if stage else ""
    notes = "; ".join(n for n in res.get("notes") or [] if not n.startswith("synthetic "))
    return (f"ok: {step}{fmt_bytes((res.get('peak_memory') or {}).get('bytes'))}, job "
            f"{fmt_duration(fig['job_s'])}{where}{took}" + (f"; {notes}" if notes else ""))


# ------------------------------------------------------------------ tables
def table_costs(report) -> list[dict[str, Any]]:
    """Per table: cells by status, jobs of a full run (cells x seeds) and their projected
    hours on this device (ok cells only), FLOPs likewise."""
    out: dict[str, dict[str, Any]] = {}
    for r in report.cells:
        t = out.setdefault(r.cell.spec_id, {"id": r.cell.spec_id, "cells": 0, "ok": 0, "failed": 0, "skipped": 0,
                                            "jobs": 0, "jobs_estimated": 0, "hours": 0.0, "flops": 0.0})
        t["cells"] += 1
        t[r.status] += 1
        t["jobs"] += r.cell.seeds
        if r.job_s is not None:
            t["jobs_estimated"] += r.cell.seeds
            t["hours"] += r.job_s * r.cell.seeds / 3600
            t["flops"] += (r.figures.get("job_flops") or 0.0) * r.cell.seeds
    return list(out.values())


def render(report) -> str:
    """The closing note: every cell not ok, the per-table cost and the totals."""
    from tabulate import tabulate

    opts = report.options
    lines = []
    bad = [r for r in report.cells if r.status != "ok"]
    for r in bad:
        lines.append(f"  {r.status}: {r.cell.name}: {r.reason}")
    rows, total = [], {"cells": 0, "ok": 0, "failed": 0, "skipped": 0, "jobs": 0, "jobs_estimated": 0, "hours": 0.0}
    for t in table_costs(report):
        for k in total:
            total[k] += t[k]
        rows.append([t["id"], t["cells"], t["ok"], t["failed"], t["skipped"], t["jobs"],
                     fmt_hours(t["hours"]) + ("" if t["jobs_estimated"] == t["jobs"]
                                              else f" ({t['jobs'] - t['jobs_estimated']} jobs unestimated)")])
    rows.append(["total", total["cells"], total["ok"], total["failed"], total["skipped"], total["jobs"],
                 fmt_hours(total["hours"])])
    unit = "GPU-hours" if opts.device == "cuda" else f"hours ({opts.threads or 1} thread(s)/job)"
    lines.append(tabulate(rows, headers=["table", "cells", "ok", "failed", "skipped", "jobs", f"{unit} on this device"]))
    lines.append(f"preflight: {total['ok']} ok, {total['failed']} failed, {total['skipped']} skipped of "
                 f"{total['cells']} cell(s) in {fmt_duration(report.wall_s)} on {report.device_name} "
                 f"({opts.device}, torch {report.torch}, {opts.steps} step(s)); the {opts.tier} tier as selected: "
                 f"{fmt_hours(total['hours'])} {unit.split(' (')[0]} for {total['jobs_estimated']} of "
                 f"{total['jobs']} job(s)")
    for name, why in report.unavailable:
        lines.append(f"  not runnable at this tier: {name}: {why}")
    over = sum(r.skipped_for == "memory" and r.shares is None for r in report.cells)
    if over and opts.device == "cpu" and opts.jobs > 1:
        lines.append(f"preflight: {over} configuration(s) skipped over a check's 1/{opts.jobs} share of the memory "
                     "budget: `--json FILE --resume --retry-skipped --jobs 1` checks them again with all of it")
    return "\n".join(lines)


def to_json(report) -> dict[str, Any]:
    opts = report.options
    return {
        "device": opts.device, "device_name": report.device_name, "torch": report.torch, "date": report.date,
        "tier": opts.tier, "steps": opts.steps, "threads": opts.threads or 1, "wall_s": round(report.wall_s, 1),
        "complete": report.complete,
        "cells": [{"id": r.cell.spec_id, "row": r.cell.row, "col": r.cell.col, "seeds": r.cell.seeds,
                   "task": r.cell.job.task, "key": r.cell.key, "status": r.status, "reason": r.reason,
                   "shares": r.shares, "inputs": r.check.get("inputs"), "notes": r.check.get("notes"),
                   "peak_memory": r.check.get("peak_memory"), "job_s": r.job_s,
                   "batch_divisor": r.check.get("batch_divisor"), "eval_divisor": r.check.get("eval_divisor"),
                   "skipped_for": r.skipped_for, "memory_budget": r.check.get("memory_budget"),
                   "figures": r.figures if r.shares is None else None} for r in report.cells],
        "tables": table_costs(report),
        "unavailable": [{"cell": n, "reason": w} for n, w in report.unavailable],
    }


# ------------------------------------------------------------------ the cache
def cache_root() -> Path:
    from pubench.paths import project_root

    return Path(os.environ.get("PUBENCH_CACHE") or project_root() / ".cache") / "preflight"


def store_cached(key: str, device: str, res: dict[str, Any], steps: int) -> None:
    """Remember an ok check's projection (atomic; a read-only cache only costs the estimate)."""
    fig = res["figures"]
    entry = {"job_s": fig["job_s"], "job_flops": fig.get("job_flops"), "device_name": res.get("device_name"),
             "peak_memory": res.get("peak_memory"), "steps": steps,
             "date": datetime.now(timezone.utc).date().isoformat()}
    path = cache_root() / device / f"{key}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(entry))
        tmp.replace(path)
    except OSError:
        pass


def cached(job) -> dict[str, Any] | None:
    """The preflight cache's entry for ``job`` (a :class:`pubench.jobs.Job`) on its device."""
    from pubench.preflight.plan import cost_key

    path = cache_root() / (job.numerics.get("device") or "cpu") / f"{cost_key(job.task, job.params)}.json"
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and isinstance(entry.get("job_s"), (int, float)) else None
