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
    carry: Path | None = None       # what travelled (data, source stamp); default .campaign/
    dry_run: bool = False
    allow_dirty: bool = False


def _queue(path: Path | None) -> Queue:
    return load(path or default_path())


def run_window(opts: WindowOptions, say: Callable[[str], None] = print) -> int:
    """One window: plan what is left, run what fits the budget several at once, bundle the
    new records into ``opts.out``. 0, or 1 when a job failed."""
    from pubench import numerics as nm
    from pubench.runner import check_clean_tree
    from pubench.store import ResultStore
    from pubench.utils.io import check_writable

    queue = _queue(opts.queue)
    tier, kind = opts.tier or queue.tier, opts.device or queue.device
    budget = schedule.Budget(opts.started, opts.budget_s)
    store = ResultStore(paths.results_root())
    carry = opts.carry or paths.project_root() / travel.DEFAULT_FOLDER
    if not opts.dry_run:
        check_writable(store.root, "results ($PUBENCH_RESULTS)")
        check_writable(opts.out, "--out")
        check_clean_tree(store.root, opts.allow_dirty)
    env = travel.source_env(carry, paths.project_root())
    os.environ.update(env)  # the workers' records name the commit that travelled
    device = concurrency.probe(kind)
    if kind == "cuda" and device.free_bytes is None:
        if not opts.dry_run:
            raise UsageError(f"--device cuda: no CUDA device here ({'; '.join(device.notes)}); `--dry-run` plans "
                             "without one")
        device.name = queue.projected_on or device.name  # plan by the figures of the device the queue is for
    numerics = nm.resolve(device=kind)
    plan = plans.make(queue, tier, numerics, store)
    say(f"campaign: {queue.path.name} at tier '{tier}' on {device.name} ({kind}); budget {budget.total_s:.0f} s, "
        f"jobs end by {budget.total_s - budget.reserve_s:.0f} s (the last {budget.reserve_s:.0f} s stop them and "
        f"bundle); store {store.root}" + (f"; records name commit {env['PUBENCH_SOURCE_SHA'][:12]}"
                                         + (" (code differs)" if env["PUBENCH_SOURCE_DIRTY"] == "1" else "")
                                         if env else ""))
    for line in entry_lines(plan):
        say(line)
    for note in plan.notes:
        say(f"  left out: {note}")
    _data(plan, carry, opts.dry_run, say)
    choice, slowdown = _concurrency(opts, plan, device, budget, numerics.threads, say)
    if opts.dry_run:
        started = schedule.simulate(plan.pending, choice.n, budget.left(), slowdown)
        say(f"campaign: dry run: if the projections hold, this window starts {len(started)} of {len(plan.pending)} "
            f"pending job(s) ({_entries_of(plan, started)})")
        return 0
    outcome = schedule.run(plan.pending, choice.n, budget, str(store.root), slowdown, say)
    return _close(opts, plan, outcome, store, device, choice, slowdown, budget, say)


def _concurrency(opts: WindowOptions, plan, device, budget, threads: int, say) -> tuple:
    """How many jobs at once (:func:`pubench.campaign.concurrency.choose`; for ``auto``, then the
    count that does the most of the queue's first entries in the window) and each one's
    slowdown; said with their figures."""
    from pubench.preflight.packing import packing

    reach = concurrency.reachable(plan.pending, max(0.0, budget.left()), concurrency.cores_bound(threads))
    choice = concurrency.choose(opts.concurrency, device, reach, threads)
    pack = packing(device.kind, device.name)

    def slowdown_of(n: int) -> float:
        return opts.slowdown if opts.slowdown is not None else pack.slowdown(n)

    if opts.concurrency == "auto" and choice.n > 1:
        n, done = schedule.best_count(plan.pending, choice.n, budget.left(), slowdown_of)
        choice.lines.append(f"  window: {n} at once does the most of the first entries in the {budget.left():.0f} s "
                            f"left ({done / 60:.1f} min of the jobs' time alone, if the projections hold)"
                            + ("" if n == choice.n else f"; {choice.n} would slow each job past the window's end"))
        choice.n = n
    for line in choice.lines:
        say(line)
    say(f"  packing: each of {choice.n} job(s) at once takes {slowdown_of(choice.n):.2f}x its time alone "
        "(--packing-slowdown)" if opts.slowdown is not None else f"  packing: {pack.describe(choice.n)}")
    return choice, slowdown_of(choice.n)


def _data(plan, carry: Path, dry_run: bool, say) -> None:
    """Unpack what travelled for the data sets the pending jobs lack; leave out jobs whose data
    are still missing."""
    from pubench.runner import missing_data
    from pubench.registry.units import units

    lacking = missing_data([p.job for p in plan.pending])
    if lacking and not dry_run and carry.is_dir():
        travel.unpack(carry, paths.data_root(), set(lacking), say)
        lacking = missing_data([p.job for p in plan.pending])
    for name, why in lacking.items():
        say(f"  data missing: {name} ({why.split('. ')[0]}); its jobs are left out"
            + ("" if dry_run else f" (`pubench campaign pack` carries it in {carry.name}/)"))
    if lacking and not dry_run:
        plan.pending = [p for p in plan.pending
                        if not any(k == "dataset" and n in lacking for k, n in units(p.job.task, p.job.params))]


def entry_lines(plan, why: bool = True) -> list[str]:
    out = []
    for k, st in enumerate(plan.entries, 1):
        state = "complete" if st.done == st.jobs else f"{st.pending} to run"
        out.append(f"  [{k}] {st.entry.label}: {st.done} of {st.jobs} done, {state}"
                   + (f", {st.claimed} claimed elsewhere" if st.claimed else "")
                   + (f", {st.projected_s / 60:.1f} min alone" if st.pending else "")
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


def _close(opts: WindowOptions, plan, outcome, store, device, choice, slowdown: float, budget, say) -> int:
    """Bundle the new records and the summary; say what the window completed."""
    from collections import Counter

    from pubench.campaign import archive

    ok = [r for r in outcome.ran if r.status == "ok" and store.path(plan.pending[r.index].job).is_file()]
    after = plans.make(plan.queue, plan.tier, plan.numerics, store)
    counts = Counter(r.status for r in outcome.ran)
    summary = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "queue": plan.queue.path.name,
        "tier": plan.tier, "device": {"kind": device.kind, "name": device.name, "free_bytes": device.free_bytes},
        "budget_s": budget.total_s, "wall_s": round(time.time() - budget.started, 1),
        "concurrency": {"n": choice.n, "bounds": choice.bounds, "how": choice.lines}, "slowdown": slowdown,
        "stopped": outcome.stopped, "counts": dict(counts),
        "jobs": [{"id": plan.pending[r.index].job.id, "name": plan.pending[r.index].job.name,
                  "entry": plan.pending[r.index].entry + 1, "status": r.status, "wall_s": round(r.wall_s, 1),
                  "projected_s": plan.pending[r.index].projected_s, "basis": plan.pending[r.index].basis}
                 for r in outcome.ran],
        "not_started": len(outcome.not_started),
        "entries": [{"entry": k + 1, "spec": st.entry.spec, "only": list(st.entry.only), "jobs": st.jobs,
                     "done": st.done} for k, st in enumerate(after.entries)],
    }
    name = f"campaign-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')}-{_slug(device.name)}"
    files = archive.bundle([store.path(plan.pending[r.index].job) for r in ok], store.root, summary, opts.out, name)
    say(f"campaign: {counts['ok']} ok, {counts['failed']} failed, {counts['interrupted']} interrupted (recorded, "
        f"rerun next window), {counts['killed']} killed, {len(outcome.not_started)} not started"
        + (f"; {outcome.stopped}" if outcome.stopped else "") + f"; {time.time() - budget.started:.0f} s of "
        f"{budget.total_s:.0f}")
    for line in entry_lines(after, why=False):
        say(line)
    say(f"campaign: {len(ok)} new record(s) in {', '.join(str(f) for f in files)}; bring them into the store with "
        "`pubench campaign import ARCHIVE`")
    return 1 if counts["failed"] else 0


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


# ---- pack: what travels to a machine without the data or git ------------------------------
def pack(queue_path: Path | None, tier: str | None, folder: Path, datasets: list[str] | None = None,
         allow_dirty: bool = False, say: Callable[[str], None] = print) -> int:
    """Write into ``folder`` the data sets the queue's pending jobs read (queue order, while
    the working tree and the carried folders stay within the travel limit) and the source
    stamp. 0."""
    from pubench import numerics as nm
    from pubench.store import ResultStore
    from pubench.store.provenance import code_changes

    changes = code_changes()
    if changes and not allow_dirty:
        raise UsageError(f"uncommitted changes to code or specs ({', '.join(changes[:3])}): the records of the "
                         "campaign would name a commit that is not their code; commit first, or --allow-dirty (they "
                         "are then marked and `import` refuses them without --allow-dirty)")
    queue = _queue(queue_path)
    plan = plans.make(queue, tier or queue.tier, nm.resolve(device=queue.device), ResultStore(paths.results_root()))
    if datasets is None:
        from pubench.registry.units import units

        datasets = []
        for p in plan.pending:
            datasets += [n for k, n in units(p.job.task, p.job.params) if k == "dataset" and n not in datasets]
    root = paths.project_root()
    tracked = travel.tracked_bytes(root)
    wheels = sum(f.stat().st_size for f in (root / ".whl").glob("*.whl")) if (root / ".whl").is_dir() else 0
    room = None if tracked is None else travel.TRAVEL_LIMIT - tracked - wheels - 2**20
    say(f"campaign pack: into {folder}: {', '.join(datasets) or 'no data set'} (the queue's pending jobs read them, "
        f"in queue order)" + ("" if room is None else f"; room {room / 2**20:.1f} MiB (64 MiB less the tracked "
                                                      f"files' {tracked / 2**20:.1f} MiB, .whl/'s "
                                                      f"{wheels / 2**20:.1f} MiB and 1 MiB spare)"))
    manifest = travel.pack(datasets, folder, paths.data_root(), room, say)
    stamp = travel.stamp_source(folder, root)
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    say(f"campaign pack: {folder} holds {size / 2**20:.1f} MiB ({len(manifest['files'])} data file(s)) and the "
        f"source stamp of commit {str(stamp['git_sha'])[:12]}; carry it to the GPU machine (e.g. `carry: "
        f"[\"{folder.name}\", \".whl\"]`) and run `make gpu-paper` there")
    return 0


# ---- import: the records of an archive into the store -------------------------------------
def import_(archives: list[Path], allow_dirty: bool = False, dry_run: bool = False,
            say: Callable[[str], None] = print) -> int:
    """Check and write the records of ``archives`` into the store. 0, or 1 when one was refused."""
    import json

    from pubench.campaign import archive
    from pubench.store import ResultStore

    store = ResultStore(paths.results_root())
    got = archive.import_archives(archives, store, allow_dirty=allow_dirty, dry_run=dry_run)
    verb = "would write" if dry_run else "wrote"
    say(f"campaign import: {verb} {len(got.written)} record(s) into {store.root}"
        + (f" ({', '.join(f'{d}: {n}' for d, n in got.devices.most_common())})" if got.devices else "")
        + f"; {len(got.present)} already there with the same metrics; {len(got.rejected)} refused")
    for member, why in got.rejected[:20]:
        say(f"  refused: {member}: {why}")
    if len(got.rejected) > 20:
        say(f"  ... and {len(got.rejected) - 20} more refused")
    committed = (paths.project_root() / "results").resolve() == store.root.resolve()
    if committed and not dry_run:
        for summary in got.summaries:  # what the window measured: its packing, its jobs' walls
            stamp = re.sub(r"[^0-9T]", "", summary.get("date", ""))[:13] or "undated"
            path = paths.measurements_root() / f"campaign-{stamp}-{_slug(summary['device']['name'])}.json"
            path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
            say(f"  the window's summary: {path}")
    return 1 if got.rejected else 0
