"""Compute accounting: what a table's runs took, and what a new run will take.

From each record: ``timing.wall_s`` (the job's wall clock), the threads per job and the
device of its numerics profile (``job.numerics``; older records without one give
``machine.torch_threads``, else count as 1 thread and are flagged), and the machine
(``machine.cpu_model``, ``machine.gpu``).

* CPU core-hours = wall x threads per job, summed over jobs (a job holds that many core
  slots while it runs, so this is the CPU time it reserved, not what it used).
* GPU-hours = wall of the jobs whose device is ``cuda`` (one GPU per job).
* Job-hours = the wall clocks summed: the time one worker would take to run them in turn.

:func:`estimate` predicts a run from the past records of the same cells: per job, the
median wall of the records of its cell with the same resolved config (any seed, preferring
its own numerics profile and saying when it had to use another); cells without one have no
estimate from records; ``estimate(..., preflight=...)`` fills them from the figures of
``pubench preflight`` (its cache: the job's configuration on its device, projected from
a few measured steps), and says so.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pubench.utils.hashing import canonical_json


@dataclass
class Compute:
    """What a set of records took. ``add`` one record at a time."""

    jobs: int = 0
    failed: int = 0  # of ``jobs``: failure records (their time was spent too)
    wall_s: float = 0.0
    core_s: float = 0.0
    gpu_s: float = 0.0
    threads_unrecorded: int = 0  # records with no threads recorded: counted as 1 thread
    untimed: int = 0  # records without a wall time (not counted in the sums)
    cache_hits: int = 0  # records that reused a cached encoder or another spec's record: another job spent it
    cpus: Counter = field(default_factory=Counter)  # CPU model -> jobs
    gpus: Counter = field(default_factory=Counter)  # GPU model -> jobs
    devices: Counter = field(default_factory=Counter)  # "cuda (NVIDIA H200)" / "cpu (AMD EPYC)" -> jobs

    def add(self, rec: dict[str, Any], failed: bool = False) -> None:
        wall = (rec.get("timing") or {}).get("wall_s")
        if not isinstance(wall, (int, float)) or isinstance(wall, bool) or wall < 0:
            self.untimed += 1
            return
        self.jobs += 1
        self.failed += failed
        threads = record_threads(rec)
        if threads is None:
            self.threads_unrecorded += 1
            threads = 1
        self.cache_hits += _cache_hit(rec)
        self.wall_s += wall
        self.core_s += wall * threads
        machine = rec.get("machine") or {}
        if machine.get("cpu_model"):
            self.cpus[machine["cpu_model"]] += 1
        self.devices[device_label(rec)] += 1
        if record_device(rec) == "cuda":
            self.gpu_s += wall
            self.gpus[machine.get("gpu") or "unrecorded GPU"] += 1

    @property
    def core_h(self) -> float:
        return self.core_s / 3600

    @property
    def gpu_h(self) -> float:
        return self.gpu_s / 3600

    @property
    def wall_h(self) -> float:
        return self.wall_s / 3600

    def merge(self, other: "Compute") -> "Compute":
        return Compute(self.jobs + other.jobs, self.failed + other.failed, self.wall_s + other.wall_s,
                       self.core_s + other.core_s, self.gpu_s + other.gpu_s,
                       self.threads_unrecorded + other.threads_unrecorded, self.untimed + other.untimed,
                       self.cache_hits + other.cache_hits, self.cpus + other.cpus, self.gpus + other.gpus,
                       self.devices + other.devices)


def record_threads(rec: dict[str, Any]) -> int | None:
    num = (rec.get("job") or {}).get("numerics") or {}
    threads = num.get("threads") or (rec.get("machine") or {}).get("torch_threads")
    return threads if isinstance(threads, int) and threads > 0 else None


def _cache_hit(rec: dict[str, Any]) -> bool:
    info = rec.get("info") or {}
    return bool((info.get("encoder_cache") or {}).get("hit") or info.get("shared_from"))


def record_device(rec: dict[str, Any]) -> str:
    return ((rec.get("job") or {}).get("numerics") or {}).get("device") or "cpu"


def machine_model(rec: dict[str, Any]) -> str | None:
    """The model of the GPU or CPU a record ran on (``NVIDIA H200``, ``AMD EPYC 7B13``), None if unnamed."""
    machine = rec.get("machine") or {}
    model = machine.get("gpu") if record_device(rec) == "cuda" else machine.get("cpu_model")
    return model or ((rec.get("info") or {}).get("accelerator") or {}).get("device_name")


def device_label(rec: dict[str, Any]) -> str:
    """The device a record ran on, as its numerics profile and its machine name it:
    ``cuda (NVIDIA H200)``, ``cpu (AMD EPYC 7B13)``."""
    device, model = record_device(rec), machine_model(rec)
    return f"{device} ({model})" if model else device


def of_records(ok: Iterable[dict[str, Any]], failed: Iterable[dict[str, Any]] = ()) -> Compute:
    out = Compute()
    for rec in ok:
        out.add(rec)
    for rec in failed:
        out.add(rec, failed=True)
    return out


def fmt_hours(h: float) -> str:
    """Hours to two significant digits, never in scientific notation: 0.0064, 0.35, 1.2, 12, 340."""
    if h == 0:
        return "0"
    h = float(f"{h:.2g}")
    if h >= 10:
        return f"{h:.0f}"
    if h >= 1:
        return f"{h:.1f}"
    exponent = math.floor(math.log10(h))  # 0.0064 -> -3: four decimals
    return f"{h:.{1 - exponent}f}"


def fmt_duration(s: float) -> str:
    """A wall time for people: 42 s, 3.5 min, 2.1 h, 340 h (14 days), 22000 h (2.5 years): hours
    to :func:`fmt_hours`' two significant digits, as the core-hours beside them."""
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    hours = s / 3600
    if hours < 72:
        return f"{fmt_hours(hours)} h"
    days = hours / 24
    return f"{fmt_hours(hours)} h ({f'{days:.0f} days' if days < 365 else f'{days / 365.25:.1f} years'})"


def describe(c: Compute) -> str:
    """One line: ``0.0064 CPU core-hours (23 s of job time, 360 jobs) ...``."""
    if not c.jobs:
        return "no timed records"
    text = f"{fmt_hours(c.core_h)} CPU core-hours ({fmt_duration(c.wall_s)} of job time over {c.jobs} job(s)"
    text += f", {c.failed} failed)" if c.failed else ")"
    if c.gpu_s:
        text += f", {fmt_hours(c.gpu_h)} GPU-hours on {', '.join(sorted(c.gpus))}"
    if c.gpu_s:  # a table with GPU records: which device ran how many
        text += f"; ran on: {', '.join(f'{d} {n} record(s)' for d, n in c.devices.most_common())}"
    elif c.cpus:
        text += f"; CPU: {', '.join(f'{m} ({n})' for m, n in c.cpus.most_common(3))}"
    if c.threads_unrecorded:
        text += f"; {c.threads_unrecorded} record(s) without a thread count, counted as 1 thread"
    if c.untimed:
        text += f"; {c.untimed} record(s) without a wall time left out"
    if c.cache_hits:
        text += (f"; {c.cache_hits} job(s) reused a cached encoder or another table's record of the same computation "
                 "(that part is counted in another job)")
    return text


# ---- estimates for `run --dry-run` ------------------------------------------------------
def cell_key(job: dict[str, Any]) -> tuple:
    # not the spec version: a version bump that leaves a cell's params alone leaves its cost alone
    return (job["spec_id"], job["tier"], job["row"], job["col"], canonical_json(job["params"]))


def _profile(numerics: dict[str, Any] | None) -> tuple:
    n = numerics or {}
    base = (n.get("device"), n.get("threads"), n.get("isa"))
    return base + ("fast",) if n.get("fast") else base  # the fast profile's walls are its own


@dataclass
class Estimate:
    jobs: int
    known: int  # jobs with past records of their cell and config
    job_s: float  # predicted job-seconds of the known jobs
    core_s: float
    gpu_s: float
    records_used: int
    other_profile: int = 0  # of ``known``: estimated from records of another device / threads / code path
    from_preflight: int = 0  # of ``known``: estimated from preflight figures (no past record)
    preflight_sources: Counter = field(default_factory=Counter)  # where those figures come from -> jobs
    longest_s: float = 0.0  # the longest known job
    #: of ``known``: jobs of rows added with ``--add-row`` estimated from the records of the row they run
    #: like (no record, no preflight figure of their own), per that row (``"MLP nnPU at tier reduced"``)
    from_like: Counter = field(default_factory=Counter)

    @property
    def unknown(self) -> int:
        return self.jobs - self.known


@dataclass(frozen=True)
class Parallelism:
    """How a run's jobs share the machines, for its wall time: ``jobs`` at once, ``per_device``
    of them on one device (GPU), each ``slowdown`` times its time alone (packing,
    :mod:`pubench.preflight.packing`); ``how`` says so in words."""

    jobs: int
    per_device: int = 1
    slowdown: float = 1.0
    how: str = ""


def past_walls(records: Iterable[dict[str, Any]]) -> dict[tuple, list[tuple[tuple, float]]]:
    """(cell and config) -> [(numerics profile, wall)] of the ok records given. Records that
    reused a cached encoder are left out when their cell has others (they skipped pre-training)."""
    out: dict[tuple, list[tuple[tuple, float, bool]]] = {}
    for rec in records:
        wall = (rec.get("timing") or {}).get("wall_s")
        if isinstance(wall, (int, float)) and not isinstance(wall, bool) and wall >= 0:
            out.setdefault(cell_key(rec["job"]), []).append(
                (_profile(rec["job"].get("numerics")), float(wall), _cache_hit(rec)))
    return {key: [(p, w) for p, w, hit in seen if not hit] or [(p, w) for p, w, _ in seen]
            for key, seen in out.items()}


def estimate(jobs: Iterable[Any], walls: dict[tuple, list[tuple[tuple, float]]],
             preflight: Callable[[Any], dict[str, Any] | None] | None = None) -> Estimate:
    """Predict the jobs (``pubench.jobs.Job``) from ``past_walls``: each job's cell-and-config
    median wall, over the records of its own numerics profile when there are any; a job
    without records from ``preflight(job)`` (a preflight cache entry: ``job_s``,
    ``device_name``, ``date``, and ``basis`` where it is not this machine's preflight cache)
    when given."""
    jobs = list(jobs)
    known = other = from_preflight = 0
    like: Counter = Counter()
    used: dict[tuple, int] = {}  # cell key -> records its estimate rests on
    sources: Counter = Counter()
    job_s = core_s = gpu_s = longest = 0.0
    for j in jobs:
        key = cell_key(j.to_dict())
        past = walls.get(key)
        if past:
            mine = [w for p, w in past if p == _profile(j.numerics)]
            other += not mine
            wall = statistics.median(mine or [w for _, w in past])
            used[key] = len(mine or past)
        else:
            entry = preflight(j) if preflight is not None else None
            if entry is None:
                continue
            wall = float(entry["job_s"])
            if entry.get("like"):
                like[entry["like"]] += 1
            else:
                from_preflight += 1
                where = f"{entry.get('device_name') or '?'}, {entry.get('date') or '?'}"
                sources[entry.get("basis") or f"from this machine's preflight cache ({where})"] += 1
        known += 1
        longest = max(longest, wall)
        job_s += wall
        core_s += wall * int(j.numerics.get("threads") or 1)
        gpu_s += wall if j.numerics.get("device") == "cuda" else 0.0
    return Estimate(len(jobs), known, job_s, core_s, gpu_s, sum(used.values()), other, from_preflight,
                    sources, longest, like)


def render_estimate(e: Estimate, parallel: "int | Parallelism | None", measure: str | None = None) -> str:
    """What ``run --dry-run`` prints. ``parallel``: local workers, or a :class:`Parallelism`
    (None: unknown, no wall time). GPU-hours count a device's time once however many jobs
    share it (packed jobs: their time alone x slowdown / jobs per device). ``measure``: what would
    give an estimate where there is none (default: ``pubench preflight ID --tier TIER --device DEVICE``)."""
    if not e.jobs:
        return "  estimate: nothing to run"
    if not e.known:
        return (f"  estimate: cannot estimate: no past record of these cells with the same config in the store "
                f"and no preflight figure for them on this device ({e.jobs} job(s); "
                f"{measure or '`pubench preflight ID --tier TIER --device DEVICE` measures them'})")
    par = Parallelism(parallel, how=f"{parallel} worker(s)") if isinstance(parallel, int) else parallel
    scale = e.jobs / e.known
    liked = sum(e.from_like.values())
    records = e.known - e.from_preflight - liked
    parts = ([f"whose cell and config have past records (median wall per cell, {e.records_used} record(s))"]
             if records else []) + ([f"from preflight figures ({e.from_preflight})" if records or liked else
                                     "from preflight figures"] if e.from_preflight else [])
    if liked:
        parts.append(f"of added rows from the records of the rows they run like ({liked}; "
                     + ", ".join(f"{n} like {row}" for row, n in e.from_like.items())
                     + ", median wall per cell: their budget, a method of their own may cost more or less)")
    where = " or ".join(parts)
    text = (f"  estimate: {fmt_duration(e.job_s)} of job time for the {e.known} of {e.jobs} job(s) {where}; "
            f"{fmt_hours(e.core_s / 3600)} CPU core-hours")
    packed = par is not None and par.per_device > 1
    if e.gpu_s:
        text += f", {fmt_hours(e.gpu_s / 3600)} GPU-hours"
        if packed:
            text += (f" one job per GPU, {fmt_hours(e.gpu_s * par.slowdown / par.per_device / 3600)} with "
                     f"{par.per_device} per GPU")
    if par:
        wall = max(e.job_s * par.slowdown / par.jobs, e.longest_s * par.slowdown)
        text += f"; about {fmt_duration(wall)} of wall time with {par.how or f'{par.jobs} at once'}"
        if par.slowdown > 1:
            text += f" (each packed job {par.slowdown:.2f}x its time alone)"
    if e.from_preflight:
        text += (f"\n  estimate: {e.from_preflight} job(s) estimated by `pubench preflight` figures (a few steps "
                 f"measured, projected to every epoch; no past record): "
                 + "; ".join(f"{n} {where}" for where, n in e.preflight_sources.most_common()))
    if e.other_profile:
        text += (f"\n  estimate: {e.other_profile} of these job(s) have past records only under another numerics profile "
                 "(device, threads or CPU code paths): a rough guess")
    if e.unknown:
        text += (f"\n  estimate: {e.unknown} job(s) have no past record of their cell and config nor a preflight "
                 f"figure: if they take as long as the others, about {fmt_duration(e.job_s * scale)} of job time in all")
    return text
