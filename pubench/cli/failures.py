"""``pubench failures | log``: the failed jobs of the store, grouped by reason, and one job's log."""

from __future__ import annotations

import json
from pathlib import Path

from pubench import paths
from pubench.cli._common import FMT, TIER_CHOICES, UsageError, bounded_int, specs
from pubench.errors import PubenchError
from pubench.utils.io import loads_json


def failures_parser(sub) -> None:
    s = sub.add_parser(
        "failures", help="failed jobs grouped by reason, with their record paths and last traceback lines",
        formatter_class=FMT,
        description="Read the failure records (results/<tier>/<id>/*.failed.json) of jobs that have not succeeded "
                    "since, and print each distinct reason once: how many jobs it hit, which cells, the record paths "
                    "and the last lines of one traceback. The next `pubench run` retries these jobs.",
        epilog="examples:\n  pubench failures\n  pubench failures table1-punce --tier reduced --lines 12")
    s.add_argument("ids", nargs="*", help="table or figure ids (default: every one with failures)")
    s.add_argument("--tier", action="append", choices=TIER_CHOICES, help="only this tier (repeatable; default: all)")
    s.add_argument("--lines", type=bounded_int("--lines", 0, 200), default=6,
                   help="traceback lines to print per reason (default 6)")
    s.add_argument("--paths", type=bounded_int("--paths", 1, 100000), default=3,
                   help="record paths to print per reason (default 3)")
    s.add_argument("--json", action="store_true", help="machine-readable: one object per reason")
    s.set_defaults(fn=cmd_failures)


def log_parser(sub) -> None:
    s = sub.add_parser(
        "log", help="a job's log: its SLURM stdout/stderr, or the traceback of its failure record",
        formatter_class=FMT,
        description="Print what a job left: for a job submitted to SLURM, its stdout and stderr files (from the "
                    "submission manifest under $PUBENCH_LOGS); for a local job, which writes no log file of its "
                    "own (its output goes to the terminal of `pubench run`), the traceback kept in its failure "
                    "record. JOB is a job id or a unique prefix of one (`pubench expand`, `pubench failures` and "
                    "record file names show them).",
        epilog="examples:\n  pubench log 94c0635a\n  pubench log 94c0635ab5d9cee7 --tail 50")
    s.add_argument("job", metavar="JOB", help="job id or a unique prefix of one")
    s.add_argument("--tail", type=bounded_int("--tail", 0, 10**6), default=0,
                   help="only the last N lines of each file (default 0: all)")
    s.set_defaults(fn=cmd_log)


# ---- failures ----------------------------------------------------------------------------
def reason_of(rec: dict) -> str:
    err = rec.get("error") or {}
    text = f"{err.get('type', 'Error')}: {err.get('message', '')}".strip()
    return (text.splitlines() or [""])[0][:300]


def collect_failures(ids: list[str] | None, tiers: list[str] | None) -> list[dict]:
    """The failures of the chosen specs and tiers grouped by reason (current configs first, then
    most jobs first): each ``{"reason", "stale", "jobs", "tables", "cells", "paths", "job_ids",
    "traceback"}``. ``stale``: the failed jobs' configs no longer exist (the spec's version or the
    cell's resolved config changed since, or the cell is gone), so no run retries them."""
    from pubench.store import ResultStore

    store = ResultStore(paths.results_root())
    groups: dict[tuple[bool, str], dict] = {}
    for spec in specs(ids).values():
        for tier in tiers or spec.tiers:
            if tier not in spec.tiers:
                continue
            scan = store.scan(tier, spec.id)
            current: dict[tuple[str, str], dict | None] = dict.fromkeys(spec.cells())
            for job_id, path in sorted(scan.failed.items(), key=lambda kv: str(kv[1])):
                if job_id in scan.done:
                    continue
                rec, _ = ResultStore.read_file(path, failed=True)
                if rec is None:  # vanished or rewritten since the scan
                    continue
                stale = _stale(spec, tier, rec.get("job") or {}, current)
                g = groups.setdefault((stale, reason_of(rec)), {
                    "reason": reason_of(rec), "stale": stale, "jobs": 0, "tables": [], "cells": [], "paths": [],
                    "job_ids": [], "traceback": ""})
                g["jobs"] += 1
                table = f"{spec.id} ({tier})"
                if table not in g["tables"]:
                    g["tables"].append(table)
                cell = f"{rec['job']['row']}|{rec['job']['col']}"
                if cell not in g["cells"]:
                    g["cells"].append(cell)
                g["paths"].append(str(path))
                g["job_ids"].append(job_id)
                if not g["traceback"]:
                    g["traceback"] = (rec.get("error") or {}).get("traceback_tail", "")
    return sorted(groups.values(), key=lambda g: (g["stale"], -g["jobs"], g["reason"]))


def _stale(spec, tier: str, job: dict, current: dict) -> bool:
    """Whether a failed job's config is no current cell's (``current``: every cell, with its resolved
    params once asked)."""
    cell = (job.get("row"), job.get("col"))
    if job.get("spec_version") != spec.version or cell not in current:
        return True
    if current[cell] is None:
        current[cell] = spec.resolve(tier, *cell)["params"]
    return job.get("params") != current[cell]


def cmd_failures(args) -> int:
    groups = collect_failures(args.ids or None, args.tier)
    if args.json:
        for g in groups:
            g["traceback"] = _last_lines(g["traceback"], args.lines)
        print(json.dumps(groups, indent=1, ensure_ascii=False))
        return 0
    live, stale = [g for g in groups if not g["stale"]], [g for g in groups if g["stale"]]
    where = (f" in {', '.join(args.ids)}" if args.ids else "") + (f" at tier(s) {', '.join(args.tier)}" if args.tier
                                                                  else "")
    if not live:
        print("no failed jobs" + where)
    else:
        print(f"{sum(g['jobs'] for g in live)} failed job(s), {len(live)} reason(s); the next `pubench run` retries "
              "them")
    _print_groups(live, args)
    if stale:
        print(f"\n{sum(g['jobs'] for g in stale)} failure record(s) of configs that no longer exist (the spec's "
              "version or the cell's config changed since): no run retries them, `pubench prune` removes them")
        _print_groups(stale, args)
    return 0


def _print_groups(groups: list[dict], args) -> None:
    for g in groups:
        print(f"\n{g['jobs']} job(s): {g['reason']}")
        print(f"  in: {', '.join(g['tables'])}; cells: {_some(g['cells'], 8)}")
        for p in g["paths"][:args.paths]:
            print(f"  {p}")
        if len(g["paths"]) > args.paths:
            print(f"  ... and {len(g['paths']) - args.paths} more (--paths N)")
        tail = _last_lines(g["traceback"], args.lines)
        if tail:
            print("  last traceback lines (first record; `pubench log JOB` shows one job's):")
            print("\n".join(f"    | {line}" for line in tail.splitlines()))


def _some(items: list[str], n: int) -> str:
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def _last_lines(text: str, n: int) -> str:
    lines = [line for line in (text or "").rstrip().splitlines()]
    return "\n".join(lines[-n:]) if n else ""


# ---- log -------------------------------------------------------------------------------
def find_job(prefix: str) -> dict:
    """What the store and the SLURM manifests know of the job whose id starts with ``prefix``:
    ``{"id", "records": [paths], "slurm": [manifest entries]}``; a :class:`UsageError` when no job or
    several match."""
    if not prefix or not all(c in "0123456789abcdef" for c in prefix.lower()):
        raise UsageError(f"{prefix!r} is not a job id (hex digits, e.g. 94c0635ab5d9cee7, or a prefix of one)")
    prefix = prefix.lower()
    results, logs = paths.results_root(), paths.logs_root()
    found: dict[str, dict] = {}
    if results.is_dir():
        for p in results.glob(f"*/*/*--{prefix}*.json"):
            job_id = p.name.split("--")[-1].split(".")[0]
            found.setdefault(job_id, {"id": job_id, "records": [], "slurm": []})["records"].append(p)
    if logs.is_dir():
        for m in sorted(logs.glob("*/*/manifest-*.json")):
            try:
                manifest = loads_json(m.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError):
                continue
            entries = manifest.get("jobs") if isinstance(manifest, dict) else None
            for e in entries if isinstance(entries, list) else ():
                if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"].startswith(prefix):
                    found.setdefault(e["id"], {"id": e["id"], "records": [], "slurm": []})["slurm"].append(
                        {**e, "manifest": str(m)})
    if not found:
        raise UsageError(f"no job {prefix!r} in the result store ({results}) or the SLURM submissions ({logs})")
    if len(found) > 1:
        raise UsageError(f"{prefix!r} matches {len(found)} jobs ({', '.join(sorted(found)[:4])}"
                         f"{' ...' if len(found) > 4 else ''}): give more of the id")
    return next(iter(found.values()))


def cmd_log(args) -> int:
    from pubench.store import ResultStore

    job = find_job(args.job)
    printed = False
    for entry in job["slurm"]:  # the newest submission last
        for stream in ("stdout", "stderr"):
            path = Path(entry[stream]) if isinstance(entry.get(stream), str) else None
            if path is not None and path.is_file():
                print(f"==> {path} (SLURM job {entry.get('slurm_id')}, {stream}) <==")
                print(_last_lines(path.read_text(encoding="utf-8", errors="replace"), args.tail)
                      if args.tail else path.read_text(encoding="utf-8", errors="replace").rstrip())
                printed = True
    for path in sorted(job["records"]):
        if not path.name.endswith(".failed.json"):
            continue
        rec, _ = ResultStore.read_file(path, failed=True)
        if rec is None:  # a corrupt failure record: `pubench status` counts it
            continue
        tb = rec["error"].get("traceback_tail") or reason_of(rec)
        print(f"==> {path} (failure record of {rec['job'].get('name', job['id'])}) <==")
        print(_last_lines(tb, args.tail) if args.tail else tb.rstrip())
        printed = True
    if printed:
        return 0
    where = ", ".join(str(p) for p in job["records"])
    if job["slurm"]:
        raise UsageError(f"job {job['id']}: its SLURM log files are not there (yet): "
                         f"{job['slurm'][-1].get('stdout')}")
    raise PubenchError(f"job {job['id']} has no log: it ran locally (local jobs write no log file; their output "
                       f"went to the terminal of `pubench run`) and did not fail; its record: {where}")
