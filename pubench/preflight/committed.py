"""What a job costs, from the figures committed with the code: a fresh clone (no records,
an empty preflight cache) still estimates a run (``run --dry-run``) and plans a campaign.

The figures: every ``preflight-*.json`` under ``benchmarks/results/`` (``pubench preflight
--json``: one report, or a list of them) and the preflight part of every ``gpu-check-*.json``;
per device and configuration (:func:`pubench.preflight.plan.cost_key`) the newest ok check.

:func:`project` projects a job on its device (``job.numerics["device"]``), by the first of:

1. ``measured``: a figure of the job's configuration on that device;
2. ``cpu task``: a task that trains on the CPU whatever the device (:data:`CPU_TASKS`): its
   CPU figure;
3. ``scaled`` (cuda): a configuration measured on CUDA with the job's task, backbone and data
   set (of its own spec first; among those, the one whose CPU figure is nearest the job's):
   that CUDA time x the job's CPU figure / that configuration's CPU figure. The same network
   on the same data with another loss, method or label count costs on the GPU what it costs
   on the CPU, relative to the measured one;
4. ``FLOP model`` (cuda): the job's CPU figure's counted FLOPs and steps at the achieved
   rates of :mod:`pubench.preflight.rates` (per stage FLOPs / rate, at least one step floor
   per step), the model of docs/gpu.md's cost table;
5. ``table average`` (cuda; no CPU figure: its check was skipped for memory): the GPU-hours
   per job of the job's table in docs/gpu.md's cost table (``pubench.tools.paper_cost``, the
   same FLOP model over every job of the table).

The projection keeps the figure its time rests on (:attr:`Projection.reference`, the CUDA one
for ``scaled``): its peak memory and the FLOP rate its main stage achieved are what a
campaign packs jobs by (:mod:`pubench.campaign.concurrency`).
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: tasks that train on the CPU whatever the device (the GIN of infograph; the BCL simulations)
CPU_TASKS = ("infograph", "bcl_simulation", "bcl_score_density")


@dataclass(frozen=True, eq=False)  # one object per committed check: hashed by identity
class Figure:
    """One ok preflight check of a configuration on a device, as committed."""

    device: str
    device_name: str
    date: str
    tier: str
    spec_id: str
    row: str
    col: str
    task: str
    key: str
    job_s: float
    peak_bytes: int | None
    stages: tuple[dict[str, Any], ...]
    eval_flops: float
    file: str

    @property
    def cell(self) -> str:
        return f"{self.spec_id} {self.row}|{self.col}"

    def achieved_tflops(self) -> float | None:
        """TFLOP/s of the main stage's steady steps (counted FLOPs / measured step time)."""
        rated = [s for s in self.stages if s.get("step_flops") and len(s.get("step_s") or []) > 1]
        if not rated:
            return None
        main = max(rated, key=lambda s: s.get("projected_s") or 0.0)
        return main["step_flops"] / statistics.median(main["step_s"][1:]) / 1e12


@dataclass(frozen=True)
class Projection:
    """A job's projected time alone on its device, and what it rests on."""

    job_s: float
    basis: str                 # measured | cpu task | scaled | FLOP model | table average
    detail: str                # one line: which figure, measured where and when
    reference: Figure | None   # the figure the time (and the memory) comes from

    @property
    def peak_bytes(self) -> int | None:
        return self.reference.peak_bytes if self.reference is not None and self.basis != "FLOP model" else None

    def as_entry(self) -> dict[str, Any]:
        """The shape of a preflight-cache entry (:func:`pubench.preflight.report.cached`), with
        ``basis``: where the time comes from, in words."""
        ref = self.reference
        on = f"{ref.device_name}, {ref.date}" if ref else ""
        basis = {"measured": f"measured ({on}; benchmarks/results/)",
                 "cpu task": f"the CPU check of a task that trains on the CPU ({on})",
                 "scaled": f"scaled by the CPU checks' cost ratio from a cell measured on {on} (benchmarks/results/)",
                 "FLOP model": "the FLOP model at docs/gpu.md's rates (counted by the CPU check)",
                 "table average": "the table's average in docs/gpu.md's cost table (FLOP model)"}[self.basis]
        return {"job_s": self.job_s, "device_name": ref.device_name if ref else None, "date": ref.date if ref else None,
                "basis": basis, "detail": self.detail}


def _read_reports(path: Path) -> list[dict[str, Any]]:
    """The preflight reports a committed JSON holds (a report, a list, or a gpu-check's part)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    if isinstance(data, dict) and "parts" in data:
        part = (data["parts"].get("preflight") or {}).get("cells", [])
        return [c["preflight"] for c in part if isinstance(c.get("preflight"), dict)]
    return [r for r in (data if isinstance(data, list) else [data]) if isinstance(r, dict) and "cells" in r]


@functools.lru_cache(maxsize=4)
def figures(folder: Path | None = None) -> dict[str, dict[str, Figure]]:
    """device -> configuration key -> the newest ok figure, from every committed file."""
    from pubench.paths import measurements_root

    folder = folder or measurements_root()
    out: dict[str, dict[str, Figure]] = {}
    files = sorted(folder.glob("preflight-*.json")) + sorted(folder.glob("gpu-check-*.json"))
    for path in files:
        for rep in _read_reports(path):
            device = rep.get("device") or "cpu"
            for c in rep.get("cells") or []:
                fig = c.get("figures") or {}
                if c.get("status") != "ok" or not isinstance(c.get("job_s"), (int, float)) or not fig:
                    continue  # a cell that shares another's check carries no figures of its own
                f = Figure(device=device, device_name=rep.get("device_name") or device, date=str(rep.get("date")),
                           tier=rep.get("tier") or "paper", spec_id=c["id"], row=c["row"], col=c["col"],
                           task=c["task"], key=c["key"], job_s=float(c["job_s"]),
                           peak_bytes=(c.get("peak_memory") or {}).get("bytes"), stages=tuple(fig.get("stages") or ()),
                           eval_flops=float(fig.get("eval_flops") or 0.0), file=path.name)
                have = out.setdefault(device, {}).get(f.key)
                if have is None or f.date >= have.date:
                    out[device][f.key] = f
    return out


def _identity(task: str, params: dict[str, Any]) -> tuple:
    """What two configurations must share for one's GPU time to scale to the other's:
    the task, the backbone and the data set."""
    from pubench.registry.units import units

    named = dict((k, n) for k, n in units(task, params) if k in ("backbone", "dataset"))
    return task, named.get("backbone"), named.get("dataset")


@functools.lru_cache(maxsize=None)
def _figure_identity(fig: Figure) -> tuple | None:
    from pubench.registry import get_spec

    try:
        params = get_spec(fig.spec_id).resolve(fig.tier, fig.row, fig.col)["params"]
    except Exception:  # noqa: BLE001 - a cell renamed since it was measured: no sibling
        return None
    return _identity(fig.task, params)


def project(job, folder: Path | None = None) -> Projection | None:
    """The projection of ``job`` (a :class:`pubench.jobs.Job`) from the committed figures,
    None where none applies (module docstring)."""
    from pubench.preflight.plan import cost_key

    figs = figures(folder)
    device = job.numerics.get("device") or "cpu"
    key = cost_key(job.task, job.params)
    own = figs.get(device, {}).get(key)
    if own is not None:
        return Projection(own.job_s, "measured", f"{own.cell} on {own.device_name} ({own.date}, {own.file})", own)
    cpu = figs.get("cpu", {}).get(key)
    if cpu is None:
        return _table_average(job) if device == "cuda" and job.task not in CPU_TASKS else None
    if device == "cpu" or job.task in CPU_TASKS:
        return Projection(cpu.job_s, "cpu task", f"{cpu.cell} on {cpu.device_name} ({cpu.date}; the task trains on the "
                          "CPU)", cpu)
    scaled = _scaled(job, cpu, figs)
    return scaled if scaled is not None else _flop_model(job, cpu)


def _scaled(job, cpu: Figure, figs: dict[str, dict[str, Figure]]) -> Projection | None:
    mine = _identity(job.task, job.params)
    best = None
    for ref in figs.get(job.numerics.get("device"), {}).values():
        ref_cpu = figs.get("cpu", {}).get(ref.key)
        if ref_cpu is None or _figure_identity(ref) != mine:
            continue
        rank = (ref.spec_id != job.spec_id, abs(math.log(cpu.job_s / ref_cpu.job_s)))
        if best is None or rank < best[0]:
            best = (rank, ref, ref_cpu)
    if best is None:
        return None
    _, ref, ref_cpu = best
    return Projection(ref.job_s * cpu.job_s / ref_cpu.job_s, "scaled",
                      f"{ref.cell} on {ref.device_name} ({ref.date}) x {cpu.job_s / ref_cpu.job_s:.3g}, the CPU "
                      "figures' ratio", ref)


def _flop_model(job, cpu: Figure) -> Projection | None:
    from pubench.preflight.plan import _input_shape
    from pubench.preflight.rates import committed_rates, kind_of

    if not any(s.get("projected_flops") for s in cpu.stages):
        return None
    rates, source = committed_rates()
    rate = rates[kind_of(job.task, _input_shape(job.params))] * 1e12
    job_s = sum(max((s.get("projected_flops") or 0.0) / rate, (s.get("steps") or 0) * rates["step_floor_s"])
                for s in cpu.stages) + cpu.eval_flops / rate
    return Projection(job_s, "FLOP model", f"{cpu.cell}'s counted FLOPs at the rates {source}", cpu)


@functools.lru_cache(maxsize=2)
def table_costs(page: Path | None = None) -> dict[str, tuple[int, float]]:
    """spec id -> (jobs, GPU-hours on one GPU) of the cost table of docs/gpu.md (between its
    ``paper-cost`` markers, written by ``python -m pubench.tools.paper_cost --write``)."""
    from pubench.paths import project_root

    try:
        text = (page or project_root() / "docs" / "gpu.md").read_text()
    except OSError:
        return {}
    section = text.partition("<!-- paper-cost:begin -->")[2].partition("<!-- paper-cost:end -->")[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|")]
    if not rows or "jobs" not in rows[0] or "GPU-hours (one GPU)" not in rows[0]:
        return {}
    jobs, hours = rows[0].index("jobs"), rows[0].index("GPU-hours (one GPU)")
    out = {}
    for r in rows[2:]:
        try:
            out[r[0]] = (int(r[jobs]), float(r[hours]))
        except (ValueError, IndexError):
            continue  # the total row, a separator
    return out


def _table_average(job) -> Projection | None:
    jobs, hours = table_costs().get(job.spec_id, (0, 0.0))
    if not jobs or not hours:
        return None
    return Projection(hours * 3600 / jobs, "table average",
                      f"{job.spec_id}'s {hours:g} GPU-hours over {jobs} jobs in docs/gpu.md's cost table (FLOP model)",
                      None)
