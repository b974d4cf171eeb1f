"""What a campaign has left to run: its queue's jobs in queue order, less those the store
holds (a finished record: the last window ran it, or the committed store has it) or a live
runner has claimed, each with its projected time alone on the device and the figure that
projection rests on.

A job's projection, by the first of: the median wall of the store's records of its cell and
config under its own numerics profile (``records``); this machine's preflight cache
(``preflight cache``); the figures committed with the code
(:func:`pubench.preflight.committed.project`: ``measured``, ``scaled``, ``FLOP model``,
``table average``); its queue entry's ``projected_min`` shared among the entry's jobs
(``queue``). A job with none is not started (:mod:`pubench.campaign.schedule`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from pubench.campaign.queue import Entry, Queue


@dataclass
class Planned:
    """One job of the queue that is still to run."""

    job: object                 # pubench.jobs.Job
    entry: int                  # its queue entry
    projected_s: float | None   # alone on its device
    basis: str                  # what the projection rests on (module docstring)
    peak_bytes: int | None = None   # device memory of its figure (CUDA: max_memory_allocated; CPU: resident set)
    tflops: float | None = None     # the FLOP rate its figure's main stage achieved


@dataclass
class EntryState:
    entry: Entry
    jobs: int = 0
    done: int = 0
    claimed: int = 0
    pending: int = 0
    projected_s: float = 0.0    # of the pending jobs with a projection


@dataclass
class Plan:
    queue: Queue
    tier: str
    numerics: object            # pubench.numerics.Numerics of every job
    pending: list[Planned] = field(default_factory=list)
    entries: list[EntryState] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # cells left out and why, one line each

    @property
    def datasets(self) -> set[str]:
        from pubench.registry.units import units

        return {n for p in self.pending for k, n in units(p.job.task, p.job.params) if k == "dataset"}


def make(queue: Queue, tier: str, numerics, store) -> Plan:
    """The plan of ``queue`` at ``tier`` with ``numerics``, against ``store``."""
    from pubench.jobs import expand
    from pubench.registry import get_spec
    from pubench.runner import split_unimplemented

    plan = Plan(queue, tier, numerics)
    seen: set[str] = set()
    for i, entry in enumerate(queue.entries):
        spec = get_spec(entry.spec)
        expanded = expand(spec, tier, entry.seeds, list(entry.only) or None, numerics=numerics)
        jobs, lacking = split_unimplemented([j for j in expanded.jobs if j.id not in seen])
        seen |= {j.id for j in jobs}
        plan.notes += [f"{entry.spec} {r}|{c}: not runnable at tier {tier}: {why}" for r, c, why in expanded.unavailable]
        plan.notes += [f"{entry.spec} {r}|{c}: not implemented yet: {', '.join(m)}" for (r, c), m in lacking.items()]
        scan = store.scan(tier, spec.id)
        claimed = store.claims(tier, spec.id).live_ids()
        state = EntryState(entry, jobs=len(jobs))
        walls = _own_walls(scan.records, numerics)
        todo = []
        for job in jobs:
            if job.id in scan.done:
                state.done += 1
            elif job.id in claimed:
                state.claimed += 1
            else:
                todo.append(job)
        for job in todo:
            p = project(job, walls, entry, len(jobs))
            p.entry = i
            plan.pending.append(p)
            state.pending += 1
            state.projected_s += p.projected_s or 0.0
        plan.entries.append(state)
    return plan


def _own_walls(records, numerics) -> dict[tuple, list[float]]:
    """(cell and config) -> walls of the records under ``numerics``' profile."""
    from pubench.report.compute import past_walls

    mine = (numerics.device, numerics.threads, numerics.isa) + (("fast",) if getattr(numerics, "fast", False) else ())
    return {key: [w for p, w in seen if p == mine] for key, seen in past_walls(records).items()}


def project(job, walls: dict[tuple, list[float]], entry: Entry, entry_jobs: int) -> Planned:
    """The :class:`Planned` of ``job`` (module docstring); ``entry`` and its job count give the
    last resort."""
    from pubench.preflight.committed import project as committed
    from pubench.preflight.report import cached
    from pubench.report.compute import cell_key

    past = walls.get(cell_key(job.to_dict()))
    fig = committed(job)
    peak = fig.peak_bytes if fig is not None else None
    tflops = fig.reference.achieved_tflops() if fig is not None and fig.reference is not None else None
    if past:
        return Planned(job, 0, statistics.median(past), "records", peak, tflops)
    if (entry_cache := cached(job)) is not None:
        bytes_ = (entry_cache.get("peak_memory") or {}).get("bytes")
        return Planned(job, 0, float(entry_cache["job_s"]), "preflight cache", bytes_ or peak, tflops)
    if fig is not None:
        return Planned(job, 0, fig.job_s, fig.basis, peak, tflops)
    if entry.projected_min is not None and entry_jobs:
        return Planned(job, 0, entry.projected_min * 60 / entry_jobs, "queue")
    return Planned(job, 0, None, "none")
