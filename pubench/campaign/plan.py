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

**Measured before trusted** (:func:`for_device`, on the device the window plans for): each
projection is marked ``measured`` (records, or a figure of the job's own configuration on a
GPU of that name) or ``conservative``, after two checks:

* a figure from another GPU (the committed figures are the H200's) is scaled by that device's
  step time over the figure's: measured by a window's calibration (a ``packing-*.json`` with
  ``device_factor``), else the largest such ratio the committed checks of both GPUs show
  (:func:`device_factor`);
* a projection far below the job's CPU cost is **flagged, not trusted**: the job's committed
  CPU figure spends more than :data:`OUTSIDE_SHARE` of its time outside its training stages
  (data loading, feature extraction, evaluation, which a GPU hardly shortens), yet its
  projection rests on another configuration's figure scaled by the ratio of their CPU costs
  (an untrained encoder's probe projected at 0.4 s from a pre-training's figure: its CPU
  figure has 61 s of its 77 s outside training), or its CPU records' wall is over
  :data:`MAX_SPEEDUP` x its projection. Its time is then at least that CPU time outside
  training (or its CPU wall / :data:`MAX_SPEEDUP`), said with the flag.
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
    reference: object = None        # the committed figure its time rests on (pubench.preflight.committed.Figure)
    cpu_outside_s: float | None = None  # its CPU figure's time outside the training stages
    cpu_peak_bytes: int | None = None   # its CPU figure's peak resident set (what its process holds of the host)
    cpu_walls: tuple[float, ...] = ()   # walls of its CPU records (any store)
    mark: str = "conservative"      # measured | conservative (for_device)
    flag: str | None = None         # why its projection is not trusted (for_device)
    base_s: float | None = None     # the projection before for_device adjusted it


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
    """(cell and config) -> walls of the records under ``numerics``' profile; under ``("cpu",
    key)`` the walls of its CPU records."""
    from pubench.report.compute import past_walls

    mine = (numerics.device, numerics.threads, numerics.isa) + (("fast",) if getattr(numerics, "fast", False) else ())
    out: dict = {}
    for key, seen in past_walls(records).items():
        out[key] = [w for p, w in seen if p == mine]
        out[("cpu", key)] = [w for p, w in seen if p[0] == "cpu" and "fast" not in p]
    return out


def project(job, walls: dict[tuple, list[float]], entry: Entry, entry_jobs: int) -> Planned:
    """The :class:`Planned` of ``job`` (module docstring); ``entry`` and its job count give the
    last resort."""
    from pubench.preflight.committed import project as committed
    from pubench.preflight.report import cached
    from pubench.report.compute import cell_key

    key = cell_key(job.to_dict())
    past = walls.get(key)
    fig = committed(job)
    peak = fig.peak_bytes if fig is not None else None
    tflops = fig.reference.achieved_tflops() if fig is not None and fig.reference is not None else None
    cpu = _cpu_figure(job)
    evidence = {"cpu_outside_s": None if cpu is None else max(0.0, cpu.job_s - sum(
        float(s.get("projected_s") or 0.0) for s in cpu.stages)), "cpu_peak_bytes": None if cpu is None else cpu.peak_bytes,
        "cpu_walls": tuple(walls.get(("cpu", key)) or ())}
    if past:
        return Planned(job, 0, statistics.median(past), "records", peak, tflops, mark="measured", **evidence)
    if (entry_cache := cached(job)) is not None:
        bytes_ = (entry_cache.get("peak_memory") or {}).get("bytes")
        return Planned(job, 0, float(entry_cache["job_s"]), "preflight cache", bytes_ or peak, tflops,
                       mark="measured", **evidence)
    if fig is not None:
        return Planned(job, 0, fig.job_s, fig.basis, peak, tflops, fig.reference,
                       mark="measured" if fig.basis in ("measured", "cpu task") else "conservative", **evidence)
    if entry.projected_min is not None and entry_jobs:
        return Planned(job, 0, entry.projected_min * 60 / entry_jobs, "queue", **evidence)
    return Planned(job, 0, None, "none", **evidence)


def _cpu_figure(job):
    """The job's committed CPU figure (:class:`pubench.preflight.committed.Figure`), or None."""
    from pubench.preflight.committed import figures
    from pubench.preflight.plan import cost_key

    return figures().get("cpu", {}).get(cost_key(job.task, job.params))


#: a job whose CPU figure spends more than this share of its time outside training is not
#: GPU-bound: another configuration's GPU figure scaled by their CPU costs does not hold for it
OUTSIDE_SHARE = 0.5
#: the most a committed pair of figures (one configuration on CPU and on CUDA) shows a GPU
#: shortening a job: CIFAR-10's ResNet-18 pre-training, 1,255x on the H200 (rounded up)
MAX_SPEEDUP = 1500.0
#: the bases whose time is another configuration's figure, modelled
_MODELLED = ("scaled", "FLOP model", "table average", "queue")


def device_factor(device_name: str, reference_name: str) -> tuple[float, str, str] | None:
    """(factor, mark, why): how much longer a step takes on ``device_name`` than on
    ``reference_name``: a window's measurement (``packing-*.json`` with ``device_factor``),
    else the largest ratio of the committed checks both GPUs ran (conservative); None when
    neither is there."""
    from pubench.preflight.packing import measurements

    for m in reversed(measurements()):
        f = m.get("device_factor") or {}
        if m.get("device_name") == device_name and f.get("reference_device") == reference_name and f.get("factor"):
            return (float(f["factor"]), "measured", f"measured by the window of {m.get('date')} on "
                    f"{f.get('cell')} ({m['file']})")
    pairs = committed_step_ratios(device_name, reference_name)
    if not pairs:
        return None
    worst = max(pairs, key=lambda x: x[1])
    return (max(1.0, worst[1]), "conservative", f"the largest step-time ratio of the {len(pairs)} checks both GPUs "
            f"ran ({worst[0]}: {worst[1]:.2f}x; benchmarks/results/gpu-check-*.json)")


def committed_step_ratios(device_name: str, reference_name: str) -> list[tuple[str, float]]:
    """(what, time on ``device_name`` / time on ``reference_name``) for each check both GPUs'
    committed gpu-check files hold: preflight cells' main-stage steps and gpu_step frameworks."""
    import json

    from pubench.paths import measurements_root

    by_device: dict[str, dict[str, float]] = {}
    for path in sorted(measurements_root().glob("gpu-check-*.json")):
        try:
            data = json.loads(path.read_text())
            name = data["environment"]["device_name"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        times = by_device.setdefault(name, {})
        for f in (data.get("parts", {}).get("gpu_step") or {}).get("frameworks") or []:
            if f.get("step_s"):
                times[f"gpu_step {f['name']}"] = float(f["step_s"])
        for c in (data.get("parts", {}).get("preflight") or {}).get("cells") or []:
            for cell in ((c.get("preflight") or {}).get("cells") or []):
                stages = [s for s in (cell.get("figures") or {}).get("stages") or [] if len(s.get("step_s") or []) > 1]
                if cell.get("status") == "ok" and stages:
                    main = max(stages, key=lambda s: s.get("projected_s") or 0.0)
                    times[f"{cell['id']} {cell['row']}|{cell['col']}"] = statistics.median(main["step_s"][1:])
    mine, theirs = by_device.get(device_name, {}), by_device.get(reference_name, {})
    return [(k, mine[k] / theirs[k]) for k in sorted(set(mine) & set(theirs)) if theirs[k] > 0]


def for_device(plan: Plan, device_name: str, measured_factor: tuple[float, str] | None = None) -> list[str]:
    """Adjust the CUDA projections of ``plan`` to the GPU ``device_name`` (module docstring):
    scale figures of other GPUs, floor what is not trusted, mark each; ``measured_factor``:
    (factor, what) measured by this window (a second call re-plans from the projections as
    made). One line per adjustment made."""
    if plan.numerics.device != "cuda":
        return []
    said: dict[str, int] = {}
    notes = []
    factors: dict[str, tuple[float, str, str] | None] = {}
    for p in plan.pending:
        if p.projected_s is None or p.basis in ("records", "preflight cache"):
            continue
        if p.base_s is None:
            p.base_s = p.projected_s
        p.projected_s, p.flag = p.base_s, None
        ref = p.reference
        if ref is not None and ref.device == "cuda" and ref.device_name != device_name:
            if measured_factor is not None:
                f = (measured_factor[0], "measured", measured_factor[1])
            else:
                if ref.device_name not in factors:
                    factors[ref.device_name] = device_factor(device_name, ref.device_name)
                f = factors[ref.device_name]
            if f is None:
                p.mark = "conservative"
                key = f"no figure on {device_name}: its {ref.device_name} figures as they are, until the window measures it"
            else:
                p.projected_s *= f[0]
                p.mark = "conservative" if f[1] != "measured" or p.basis != "measured" else "measured"
                key = f"{ref.device_name} figures x {f[0]:.2f} on {device_name} ({f[1]}: {f[2]})"
            said[key] = said.get(key, 0) + 1
        elif p.basis == "measured":
            p.mark = "measured"
        floor, why = 0.0, None
        if p.basis in _MODELLED and p.cpu_outside_s is not None and p.cpu_outside_s > p.projected_s:
            floor, why = p.cpu_outside_s, (f"its CPU figure spends {p.cpu_outside_s:.0f} s outside training, which a "
                                          "GPU hardly shortens")
        if p.cpu_walls and statistics.median(p.cpu_walls) / MAX_SPEEDUP > max(floor, p.projected_s):
            floor = statistics.median(p.cpu_walls) / MAX_SPEEDUP
            why = f"its CPU records took {statistics.median(p.cpu_walls):.0f} s, over {MAX_SPEEDUP:g}x the projection"
        if why is not None:
            p.flag = f"projected {p.projected_s:.1f} s ({p.basis}), not trusted: {why}; planned at {floor:.0f} s"
            p.projected_s = floor
            p.mark = "conservative"
    for key, n in said.items():
        notes.append(f"  device: {n} job(s) rest on {key}")
    flagged = [p for p in plan.pending if p.flag]
    if flagged:
        notes.append(f"  flagged, not trusted: {len(flagged)} job(s), e.g. {flagged[0].job.name}: {flagged[0].flag}")
    for e in plan.entries:
        e.projected_s = 0.0
    for p in plan.pending:
        plan.entries[p.entry].projected_s += p.projected_s or 0.0
    return notes
