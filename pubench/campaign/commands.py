"""The three commands of a campaign (``pubench campaign``, ``pubench campaign pack``,
``pubench campaign import``), each printing what it does and returning its exit status."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from pubench import paths
from pubench.campaign import concurrency, schedule, travel
from pubench.campaign import plan as plans
from pubench.campaign.queue import Queue, default_path, load
from pubench.errors import UsageError


@dataclass
class WindowOptions:
    """``pubench campaign``'s flags."""

    budget_s: float
    out: Path
    started: float                  # time.time() at the command's start (the budget counts from it)
    queue: Path | None = None       # default campaigns/paper-gpu.yaml
    tier: str | None = None         # default the queue's
    device: str | None = None       # default the queue's
    concurrency: int | str = "auto"
    slowdown: float | None = None   # each packed job's time over its time alone (default: the packing's)
    carry: Path | None = None       # what travelled (data, source stamp, checkpoints); default .campaign/
    dry_run: bool = False
    allow_dirty: bool = False
    for_kind: str | None = None     # plan for a lease's machine (pubench.campaign.lease.KINDS), a dry run
    calibrate: str = "auto"         # auto (CUDA without a packing figure of its GPU) | always | never


def _queue(path: Path | None) -> Queue:
    return load(path or default_path())


def run_window(opts: WindowOptions, say: Callable[[str], None] = print) -> int:
    """One window: plan what is left, measure the packing where no figure of this GPU is
    committed, run what fits the budget several at once, and keep the archive of the new
    records (and at the end the stopped jobs' checkpoints) in ``opts.out`` as jobs end.
    0, or 1 when a job failed."""
    from pubench import numerics as nm
    from pubench.campaign import lease
    from pubench.runner import check_clean_tree
    from pubench.store import ResultStore
    from pubench.utils.io import check_writable

    queue = _queue(opts.queue)
    target = lease.KINDS[opts.for_kind] if opts.for_kind else None
    tier, kind = opts.tier or queue.tier, opts.device or ("cuda" if target else queue.device)
    budget = schedule.Budget(opts.started, opts.budget_s)
    store = ResultStore(paths.results_root())
    carry = opts.carry or paths.project_root() / travel.DEFAULT_FOLDER
    if not opts.dry_run:
        check_writable(store.root, "results ($PUBENCH_RESULTS)")
        check_writable(opts.out, "--out")
        check_clean_tree(store.root, opts.allow_dirty)
    env = travel.source_env(carry, paths.project_root())
    os.environ.update(env)  # the workers' records name the commit that travelled
    if target is not None:
        device = concurrency.Device("cuda", target.gpu, target.gpu_memory_bytes, cores=target.cores,
                                    planned_for=target.name, host_bytes=int(target.memory_gib * 2**30))
    else:
        device = concurrency.probe(kind)
    if kind == "cuda" and device.free_bytes is None:
        if not opts.dry_run:
            raise UsageError(f"--device cuda: no CUDA device here ({'; '.join(device.notes)}); `--dry-run` plans "
                             "without one (`--for KIND`: for a lease's machine)")
        device.name = queue.projected_on or device.name  # plan by the figures of the device the queue is for
    numerics = nm.resolve(device=kind)
    plan = plans.make(queue, tier, numerics, store)
    say(f"campaign: {queue.path.name} at tier '{tier}' on {device.name} ({kind}"
        + (f", planned for a lease's {target.name}" if target else "") + f"); budget {budget.total_s:.0f} s, "
        f"jobs end by {budget.total_s - budget.reserve_s:.0f} s (the last {budget.reserve_s:.0f} s stop them and "
        f"bundle); store {store.root}" + (f"; records name commit {env['PUBENCH_SOURCE_SHA'][:12]}"
                                         + (" (code differs)" if env["PUBENCH_SOURCE_DIRTY"] == "1" else "")
                                         if env else ""))
    if target is not None or kind == "cuda":
        for line in lease.lines(target):
            say(line)
    adjusted = plans.for_device(plan, device.name)
    for line in entry_lines(plan):
        say(line)
    for line in adjusted:
        say(line)
    for note in plan.notes:
        say(f"  left out: {note}")
    _data(plan, carry, opts.dry_run, target is not None, say)
    if not opts.dry_run:
        travel.restore_checkpoints(carry, store.root, [p.job.id for p in plan.pending], say)
    window = None if opts.dry_run else Window(opts.out, device, plan, budget, store)
    if window is not None:
        window.write(schedule.Outcome(), {})  # the plan comes back even if nothing else does
    pack, measuring_s = _calibrate(opts, plan, device, budget, numerics.threads, window, say)
    choice, slowdown = _concurrency(opts, plan, device, budget, numerics.threads, say, pack, measuring_s)
    if window is not None:
        window.choice, window.slowdown, window.packing = choice, slowdown, pack
    if opts.dry_run:
        left = budget.left() - measuring_s
        started = schedule.simulate(plan.pending, choice.n, left, slowdown)
        say(f"campaign: dry run: if the projections hold, this window starts {len(started)} of {len(plan.pending)} "
            f"pending job(s) ({_entries_of(plan, started)})")
        for line in _fit_lines(plan, started, budget, measuring_s, target):
            say(line)
        return 0
    outcome = schedule.run(plan.pending, choice.n, budget, str(store.root), slowdown, say,
                           on_end=lambda out: window.write(out, {}))
    return _close(window, outcome, say)


def _calibrate(opts: WindowOptions, plan, device, budget, threads: int, window, say) -> tuple:
    """The packing the window runs by, and the seconds the window spends measuring it: on CUDA
    without a figure of this GPU (``--calibrate auto``), the first minutes measure R(N) and
    the step alone on the queue's first network (:mod:`pubench.campaign.calibrate`), write them
    to ``--out`` and re-plan by them; a dry run plans that time (conservative)."""
    from pubench.campaign import calibrate
    from pubench.preflight.packing import campaign_packing, from_measurement

    pack = campaign_packing(device.kind, device.name)
    wanted = opts.calibrate == "always" or (opts.calibrate == "auto" and device.kind == "cuda" and not pack.measured)
    if not wanted or opts.slowdown is not None or opts.concurrency != "auto":
        return pack, 0.0
    first = calibrate.first_network(plan.pending)
    reach = concurrency.reachable(plan.pending, max(0.0, budget.left()), concurrency.cores_bound(threads, device.cores))
    bounds = concurrency.choose("auto", device, reach, threads).bounds
    counts = calibrate.counts_for(min(v for k, v in bounds.items() if k != "throughput"))
    if first is None or len(counts) < 2:
        say("  calibration: none (" + ("no pending job trains on the device" if first is None
                                       else "the bounds allow one job at a time") + f"); packing: {pack.describe(2)}")
        return pack, 0.0
    planned = calibrate.planned_s(counts)
    if planned > calibrate.BUDGET_SHARE * budget.left():
        say(f"  calibration: none (its {planned:.0f} s are over {calibrate.BUDGET_SHARE:.0%} of the {budget.left():.0f} "
            f"s left); packing: {pack.describe(2)}")
        return pack, 0.0
    say(f"  calibration: {pack.source}; the window's first {planned:.0f} s at most (conservative: "
        f"{calibrate.READY_LIMIT_S:.0f} s for {max(counts)} worker(s) to start, {len(counts)} phases of "
        f"{calibrate.PHASE_S + calibrate.GAP_S:.0f} s) measure R(N) for N = {', '.join(map(str, counts))} and the step "
        f"alone on {first.job.name}, into --out, then re-plan by them")
    if window is None:
        return pack, planned
    t0 = time.time()
    result = calibrate.measure(first.job, counts, say)
    if result is None:
        return pack, time.time() - t0
    path = calibrate.write(result, first, device, window.out)
    import json

    doc = json.loads(path.read_text())
    window.measurement = path
    pack = from_measurement(doc, path.name)
    say(f"  calibration: {', '.join(f'R({n}) = {r:.2f}' for n, r in doc['ratios'].items())}; the step alone "
        f"{doc['step_s_alone'] * 1000:.1f} ms ({result['wall_s']:.0f} s, {path.name})")
    factor = doc.get("device_factor")
    if factor and factor.get("reference_device") != device.name:
        lines = plans.for_device(plan, device.name, (factor["factor"], f"this window's calibration ({path.name})"))
        for line in lines:
            say(line)
    return pack, 0.0


def _concurrency(opts: WindowOptions, plan, device, budget, threads: int, say, pack, measuring_s: float = 0.0) -> tuple:
    """How many jobs at once (:func:`pubench.campaign.concurrency.choose`; for ``auto``, then the
    count that does the most of the queue's first entries in the window) and each one's
    slowdown; said with their figures."""
    left = max(0.0, budget.left() - measuring_s)
    reach = concurrency.reachable(plan.pending, left, concurrency.cores_bound(threads, device.cores))
    choice = concurrency.choose(opts.concurrency, device, reach, threads)

    def slowdown_of(n: int) -> float:
        return opts.slowdown if opts.slowdown is not None else pack.slowdown(n)

    if opts.concurrency == "auto" and choice.n > 1:
        n, done = schedule.best_count(plan.pending, choice.n, left, slowdown_of)
        choice.lines.append(f"  window: {n} at once does the most of the first entries in the {left:.0f} s "
                            f"left ({done / 60:.1f} min of the jobs' time alone, if the projections hold)"
                            + ("" if n == choice.n else f"; {choice.n} would slow each job past the window's end"
                               if pack.measured or not pack.conservative else
                               "; more gain nothing while R(N) = 1 is all that is measured"))
        choice.n = n
    for line in choice.lines:
        say(line)
    say(f"  packing: each of {choice.n} job(s) at once takes {slowdown_of(choice.n):.2f}x its time alone "
        "(--packing-slowdown)" if opts.slowdown is not None else f"  packing ({pack.basis}): {pack.describe(choice.n)}")
    return choice, slowdown_of(choice.n)


def _data(plan, carry: Path, dry_run: bool, for_lease: bool, say) -> None:
    """Unpack what travelled for the data sets the pending jobs lack, and leave out jobs whose
    data are still missing (a dry run too: it plans only what can run). Planning for a lease
    (``for_lease``), only what ``carry`` holds whole counts: the data root does not travel."""
    from pubench.runner import missing_data

    if for_lease:
        if (carry / "data.json").is_file():
            have = set(travel.carried(carry))
            lacking = {n: f"not carried whole in {carry.name}/" for n in sorted(plan.datasets)
                       if n not in have and _has_files(n)}
        else:
            say(f"  data: no {carry.name}/ packed yet: planned with this machine's data root (`pubench campaign pack` "
                "decides what travels, each data set whole or not at all)")
            lacking = missing_data([p.job for p in plan.pending])
    else:
        lacking = missing_data([p.job for p in plan.pending])
        if lacking and not dry_run and carry.is_dir():
            travel.unpack(carry, paths.data_root(), set(lacking), say)
            lacking = missing_data([p.job for p in plan.pending])
        elif lacking and carry.is_dir():
            lacking = {n: why for n, why in lacking.items() if n not in travel.carried(carry)}
    for name, why in lacking.items():
        jobs = sum(name in _datasets_of(p.job) for p in plan.pending)
        say(f"  data missing: {name} ({why.split('. ')[0]}); its {jobs} job(s) are left out of this window"
            + ("" if dry_run else f" (`pubench campaign pack` carries it in {carry.name}/ when it fits whole)"))
    if lacking:
        plan.pending = [p for p in plan.pending if not (_datasets_of(p.job) & set(lacking))]
        for e in plan.entries:
            e.pending, e.projected_s = 0, 0.0
        for p in plan.pending:
            plan.entries[p.entry].pending += 1
            plan.entries[p.entry].projected_s += p.projected_s or 0.0


def _has_files(name: str) -> bool:
    """Whether data set ``name`` is files under a data root (not generated by its task)."""
    from pubench.data import DATASETS, graphs

    return name in DATASETS or name in graphs.SPECS


def _fit_lines(plan, started: list[int], budget, measuring_s: float, target) -> list[str]:
    """How the window fits one command and one lease, each figure marked."""
    from pubench.campaign import lease

    marks = {"measured": 0, "conservative": 0}
    for i in started:
        marks[plan.pending[i].mark] = marks.get(plan.pending[i].mark, 0) + 1
    flagged = sum(1 for i in started if plan.pending[i].flag)
    end = budget.total_s
    out = [f"  job times of those started: {marks['measured']} measured, {marks['conservative']} conservative"
           + (f" ({flagged} flagged, not trusted: planned at their CPU time outside training)" if flagged else "")]
    if target is not None or plan.numerics.device == "cuda":
        fits = end <= lease.COMMAND_LIMIT_S and lease.START_S[1] + lease.COMMAND_LIMIT_S <= lease.DEVICE_TIME_S
        out.append(f"  fits: one command of {end:.0f} s from its start (stated limit {lease.COMMAND_LIMIT_S} s, "
                   f"timeout_s {lease.TIMEOUT_S}): the wheels and the data's unpacking in its first seconds, "
                   + (f"the calibration's {measuring_s:.0f} s (conservative), " if measuring_s else "")
                   + f"jobs until {end - budget.reserve_s:.0f} s, then {budget.reserve_s:.0f} s to stop and bundle; "
                   f"with a start of up to {lease.START_S[1] // 60} min, {lease.START_S[1] // 60 + lease.COMMAND_LIMIT_S // 60}"
                   f" of the lease's {lease.DEVICE_TIME_S // 60} min (stated): "
                   + ("one command, one lease" if fits else "DOES NOT FIT one lease"))
    return out


def _datasets_of(job) -> set[str]:
    from pubench.registry.units import units

    return {n for k, n in units(job.task, job.params) if k == "dataset"}


def entry_lines(plan, why: bool = True) -> list[str]:
    out = []
    for k, st in enumerate(plan.entries, 1):
        state = "complete" if st.done == st.jobs else f"{st.pending} to run"
        mine = [p for p in plan.pending if p.entry == k - 1]
        measured = sum(p.mark == "measured" for p in mine)
        marks = (f" ({'measured' if measured == len(mine) else 'conservative' if not measured else f'{measured} measured, {len(mine) - measured} conservative'})"
                 if mine else "")
        out.append(f"  [{k}] {st.entry.label}: {st.done} of {st.jobs} done, {state}"
                   + (f", {st.claimed} claimed elsewhere" if st.claimed else "")
                   + (f", {st.projected_s / 60:.1f} min alone{marks}" if st.pending else "")
                   + (f"; {st.entry.why}" if why else ""))
    return out


def _entries_of(plan, started: list[int]) -> str:
    by_entry: dict[int, int] = {}
    for i in started:
        by_entry[plan.pending[i].entry] = by_entry.get(plan.pending[i].entry, 0) + 1
    parts = []
    for e, n in sorted(by_entry.items()):
        st = plan.entries[e]
        parts.append(f"[{e + 1}] {n} of {st.pending}" + (" (completes it)" if n == st.pending else ""))
    return ", ".join(parts) or "none"


class Window:
    """A running window's archive and summary in ``--out``, rewritten as jobs end (whole files:
    a command stopped from outside still returns what finished), and at the end with the
    stopped jobs' checkpoints."""

    def __init__(self, out: Path, device, plan, budget, store):
        self.out, self.device, self.plan, self.budget, self.store = out, device, plan, budget, store
        self.name = f"campaign-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')}-{_slug(device.name)}"
        self.choice = self.slowdown = self.packing = self.measurement = None
        self.files: list[Path] = []

    def summary(self, outcome, final: bool) -> dict:
        from collections import Counter

        plan = self.plan
        after = plans.make(plan.queue, plan.tier, plan.numerics, self.store) if final else plan
        choice = self.choice
        return {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "queue": plan.queue.path.name,
            "tier": plan.tier, "final": final,
            "device": {"kind": self.device.kind, "name": self.device.name, "free_bytes": self.device.free_bytes},
            "budget_s": self.budget.total_s, "wall_s": round(time.time() - self.budget.started, 1),
            "concurrency": {"n": choice.n, "bounds": choice.bounds, "how": choice.lines} if choice else None,
            "slowdown": self.slowdown,
            "packing": {"basis": self.packing.basis, "source": self.packing.source} if self.packing else None,
            "measurement": self.measurement.name if self.measurement else None,
            "stopped": outcome.stopped, "counts": dict(Counter(r.status for r in outcome.ran)),
            "jobs": [{"id": plan.pending[r.index].job.id, "name": plan.pending[r.index].job.name,
                      "spec": plan.pending[r.index].job.spec_id, "tier": plan.pending[r.index].job.tier,
                      "entry": plan.pending[r.index].entry + 1, "status": r.status, "wall_s": round(r.wall_s, 1),
                      "projected_s": plan.pending[r.index].projected_s, "basis": plan.pending[r.index].basis,
                      "mark": plan.pending[r.index].mark, "flag": plan.pending[r.index].flag}
                     for r in outcome.ran],
            "not_started": len(outcome.not_started),
            "entries": [{"entry": k + 1, "spec": st.entry.spec, "only": list(st.entry.only), "jobs": st.jobs,
                         "done": st.done} for k, st in enumerate(after.entries)],
        }

    def ok_records(self, outcome) -> list[Path]:
        return [self.store.path(self.plan.pending[r.index].job) for r in outcome.ran
                if r.status == "ok" and self.store.path(self.plan.pending[r.index].job).is_file()]

    def write(self, outcome, checkpoints: dict, final: bool = False) -> list[Path]:
        from pubench.campaign import archive

        self.files = archive.bundle(self.ok_records(outcome), self.store.root, self.summary(outcome, final), self.out,
                                    self.name, checkpoints)
        return self.files


def _close(window: Window, outcome, say) -> int:
    """Bundle the new records, the stopped jobs' checkpoints and the summary; say what the
    window completed."""
    from collections import Counter

    from pubench.train.checkpoint import checkpoint_root

    stopped = [window.plan.pending[r.index].job.id for r in outcome.ran if r.status == "interrupted"]
    checkpoints = travel.checkpoint_files(checkpoint_root(window.store.root), stopped)
    files = window.write(outcome, checkpoints, final=True)
    import json

    carried = json.loads(files[-1].read_text()).get("checkpoints", [])
    counts = Counter(r.status for r in outcome.ran)
    ok = window.ok_records(outcome)
    say(f"campaign: {counts['ok']} ok, {counts['failed']} failed, {counts['interrupted']} interrupted (recorded, "
        f"resumed next window), {counts['killed']} killed, {len(outcome.not_started)} not started"
        + (f"; {outcome.stopped}" if outcome.stopped else "") + f"; {time.time() - window.budget.started:.0f} s of "
        f"{window.budget.total_s:.0f}")
    if stopped:
        say(f"  checkpoints: {len(carried)} of the {len(stopped)} stopped job(s)' checkpoints in the archive"
            + ("" if len(carried) == len(stopped) else " (the rest over the archive's limits: they start over)"))
    after = plans.make(window.plan.queue, window.plan.tier, window.plan.numerics, window.store)
    for line in entry_lines(after, why=False):
        say(line)
    measured = [window.measurement.name] if window.measurement else []
    say(f"campaign: {len(ok)} new record(s) in {', '.join(str(f) for f in files)}"
        + (f"; the window's measurement in {', '.join(measured)}" if measured else "")
        + "; bring them into the store with `pubench campaign import FILE ...`")
    return 1 if counts["failed"] else 0


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


# ---- pack: what travels to a machine without the data or git ------------------------------
def pack(queue_path: Path | None, tier: str | None, folder: Path, datasets: list[str] | None = None,
         allow_dirty: bool = False, say: Callable[[str], None] = print) -> int:
    """Write into ``folder`` the stopped jobs' checkpoints and the data sets the queue's pending
    jobs read (queue order, each whole or not at all, while the working tree and the carried
    folders stay within the travel limit) and the source stamp. Every data set is checked
    first: one the data root lacks is a :class:`UsageError` (exit 2) before anything is
    written. 0."""
    from pubench import numerics as nm
    from pubench.campaign.lease import TRAVEL_LIMIT
    from pubench.store import ResultStore
    from pubench.store.provenance import code_changes

    changes = code_changes()
    if changes and not allow_dirty:
        raise UsageError(f"uncommitted changes to code or specs ({', '.join(changes[:3])}): the records of the "
                         "campaign would name a commit that is not their code; commit first, or --allow-dirty (they "
                         "are then marked and `import` refuses them without --allow-dirty)")
    queue = _queue(queue_path)
    store = ResultStore(paths.results_root())
    plan = plans.make(queue, tier or queue.tier, nm.resolve(device=queue.device), store)
    if datasets is None:
        datasets = []
        for name in sorted(plan.datasets, key=lambda n: _first_entry(plan, n)):
            datasets.append(name)
    lacking = travel.missing(datasets, paths.data_root())
    if lacking:
        names = " ".join(lacking)
        first = next(iter(lacking.values()))[0]
        raise UsageError(f"campaign pack: the data root lacks {', '.join(lacking)} ({first}"
                         f"{' ...' if sum(map(len, lacking.values())) > 1 else ''}), which the queue's pending jobs read; "
                         f"`pubench prepare {names} --from ../shared/data` places them (or `--datasets NAME ...` to "
                         "carry fewer); nothing was written")
    root = paths.project_root()
    tracked = travel.tracked_bytes(root)
    wheels = travel.folder_bytes(root / ".whl")
    room = None if tracked is None else TRAVEL_LIMIT - tracked - wheels - 2**20
    say(f"campaign pack: into {folder}: {', '.join(datasets) or 'no data set'} (the queue's pending jobs read them, "
        f"in queue order)" + ("" if room is None else f"; room {room / 2**20:.1f} MiB (64 MiB less the tracked "
                                                      f"files' {tracked / 2**20:.1f} MiB, .whl/'s "
                                                      f"{wheels / 2**20:.1f} MiB and 1 MiB spare, in 4-KiB blocks)"))
    stopped = travel.pack_checkpoints(store.root, [p.job.id for p in plan.pending], folder, room, say)
    manifest = travel.pack(datasets, folder, paths.data_root(), room, say)
    for name in datasets:
        if name not in manifest["datasets"] and travel.files_of(name) is not None:
            jobs = sum(name in _datasets_of(p.job) for p in plan.pending)
            say(f"  left out of the queue there: {name} ({jobs} pending job(s)): it does not fit whole; they wait for "
                "a machine that has it (a cluster, a GPU of one's own)")
    stamp = travel.stamp_source(folder, root)
    size = travel.folder_bytes(folder)
    say(f"campaign pack: {folder} holds {size / 2**20:.1f} MiB ({len(manifest['files'])} data file(s) of "
        f"{', '.join(manifest['datasets']) or 'no data set'}, checkpoints of {len(stopped)} stopped job(s)) and the "
        f"source stamp of commit {str(stamp['git_sha'])[:12]}; carry it to the GPU machine (`carry: "
        f"[\"{folder.name}\", \".whl\"]`) and run `make gpu-paper` there (docs/gpu.md)")
    return 0


def _first_entry(plan, name: str) -> int:
    return min((p.entry for p in plan.pending if name in _datasets_of(p.job)), default=len(plan.entries))


# ---- import: the records of an archive into the store -------------------------------------
def import_(archives: list[Path], allow_dirty: bool = False, dry_run: bool = False,
            say: Callable[[str], None] = print) -> int:
    """Check and write the records of ``archives`` into the store, and the stopped jobs'
    checkpoints into its checkpoint folder; a window's measurement (``packing-*.json``, also
    named here) is saved beside the committed figures, where the planner reads it. The summary
    files beside the archives are skipped (each archive holds its own). 0, or 1 when something
    was refused."""
    import json

    from pubench.campaign import archive
    from pubench.store import ResultStore

    tars = [a for a in archives if a.name.endswith((".tar.gz", ".tgz"))]
    measured = [a for a in archives if a.name.startswith("packing-") and a.suffix == ".json"]
    other = [a for a in archives if a not in tars and a not in measured]
    for a in other:
        if not (a.name.startswith("campaign-") and a.suffix == ".json"):
            raise UsageError(f"{a}: not a campaign archive (*.tar.gz), a window's summary or its measurement "
                             "(packing-*.json)")
    store = ResultStore(paths.results_root())
    committed = (paths.project_root() / "results").resolve() == store.root.resolve()
    got = archive.import_archives(tars, store, allow_dirty=allow_dirty, dry_run=dry_run)
    verb = "would write" if dry_run else "wrote"
    say(f"campaign import: {verb} {len(got.written)} record(s) into {store.root}"
        + (f" ({', '.join(f'{d}: {n}' for d, n in got.devices.most_common())})" if got.devices else "")
        + f"; {len(got.present)} already there with the same metrics; {len(got.rejected)} refused")
    if got.checkpoints:
        say(f"  checkpoints of {len(got.checkpoints)} stopped job(s) {'would be written' if dry_run else 'written'} into "
            f"{store.root / '.checkpoints'}: the next `pubench campaign pack` carries them, the next window resumes "
            "them")
    for member, why in got.rejected[:20]:
        say(f"  refused: {member}: {why}")
    if len(got.rejected) > 20:
        say(f"  ... and {len(got.rejected) - 20} more refused")
    bad = 0
    for path in measured:
        try:
            doc = json.loads(path.read_text())
            ok = isinstance(doc.get("ratios"), dict) and doc.get("device") and doc.get("device_name") and doc.get("date")
        except (OSError, ValueError):
            ok = False
        if not ok:
            say(f"  refused: {path.name}: not a packing measurement (device, device_name, date, ratios)")
            bad += 1
            continue
        target = paths.measurements_root() / path.name
        figures = f"{', '.join(f'R({n}) = {r}' for n, r in doc['ratios'].items())} on {doc['device_name']}"
        if committed and not dry_run:
            target.write_text(path.read_text())
            say(f"  the window's measurement: {target} ({figures}; the planner packs by it from now on: commit it)")
        else:
            say(f"  the window's measurement: {path.name} ({figures}) not saved: the store is not the committed one"
                + (" (a dry run)" if dry_run else f"; copy it to {target.parent} to plan by it"))
    if committed and not dry_run:
        for summary in got.summaries:  # what the window measured: its packing, its jobs' walls
            stamp = re.sub(r"[^0-9T]", "", summary.get("date", ""))[:13] or "undated"
            path = paths.measurements_root() / f"campaign-{stamp}-{_slug(summary['device']['name'])}.json"
            path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
            say(f"  the window's summary: {path}")
    return 1 if got.rejected or bad else 0
