"""Run one table or figure (``pubench run``): expand its spec into (cell, seed) jobs, leave
out the jobs that are done, in flight elsewhere or name a unit not implemented yet, and hand
the rest to an executor. The command line only turns its flags into a :class:`RunRequest`
(:mod:`pubench.cli.run`).

Every step says what it does on stdout, as the command always has: the tier and numerics,
the tier's deviations, the cells not run and why, the jobs already done or claimed, and at
the end the counts and each distinct failure once. Returns the exit status: 0, 1 when a job
failed, 128 + the signal number when the run was interrupted.
"""

from __future__ import annotations

import math
import signal
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from pubench import numerics, paths
from pubench.coverage import data_missing
from pubench.errors import JobInterrupted, UsageError
from pubench.executors import EXECUTORS, ExecutorContext
from pubench.executors.cores import slots_folder
from pubench.jobs import PlanError, expand
from pubench.numerics import Numerics
from pubench.registry import get_spec
from pubench.registry.added_checks import check_added, config_problem
from pubench.registry.added_rows import block_of, budget_text, flow, inheritance, settings_run
from pubench.registry.overrides import overridden_deviations, parse_override
from pubench.registry.spec import CUSTOM
from pubench.registry.task_check import first_rejected_job, jobs_rejection, rejected_by_task
from pubench.registry.units import implemented, units
from pubench.report.compute import Parallelism, estimate, past_walls, render_estimate
from pubench.store import ResultStore
from pubench.store import provenance as store_provenance  # the module: tests stand in for its code_changes
from pubench.utils.io import check_writable
from pubench.utils.yamlio import problem_line


@dataclass
class RunRequest:
    """What to run and how (the flags of ``pubench run``)."""

    spec_id: str
    tier: str = "reduced"
    seeds: int | None = None            # default: the tier's
    only: list[str] | None = None       # "row|col" globs
    executor: str = "local"
    jobs: int = 1                       # local worker processes
    device: str = "auto"                # auto: the executor's default
    threads: int | None = None
    isa: str = "avx2"
    fast: bool = False                  # --fast-numerics: the opt-in fast profile (pubench.numerics)
    profile: str | None = "default"     # SLURM profile slurm/<profile>.yaml
    cluster: str = "slurm"
    dry_run: bool = False
    force: bool = False
    allow_dirty: bool = False
    checkpoint_every: int | None = None
    progress: bool = False              # a progress bar
    log_lines: bool = False             # progress lines, no bar (logs, CI): runner._log_line
    overrides: list[str] | None = None  # --set key.path=value: a variant of the cells, tier "custom"
    added: list | None = None           # --add-row / --overlay: rows added to the table (AddedRow), tier "custom"
    jobs_list: bool = False             # --dry-run: every job (and its config), not a summary


def executor_context(spec_id: str, tier: str, **fields: Any):
    """The :class:`~pubench.executors.base.ExecutorContext` of a run of ``spec_id`` at ``tier``
    over this project's folders (``fields``: the run's own settings)."""
    profile = fields.pop("profile", None)
    return ExecutorContext(results_root=paths.results_root(), logs_root=paths.logs_root(), spec_id=spec_id,
                           tier=tier, profile=paths.slurm_profiles_root() / f"{profile}.yaml" if profile else None,
                           **fields)


def run(req: RunRequest) -> int:
    """Plan and run (or submit) the jobs of ``req``; the exit status."""
    spec = get_spec(req.spec_id)
    if req.tier not in spec.tiers:
        raise UsageError(f"unknown tier {req.tier!r}")
    if req.overrides and req.executor != "local":
        raise UsageError("--set runs a variant with --executor local only (a SLURM profile has no 'custom' tier yet)")
    if req.overrides and req.added:
        raise UsageError("--set and --add-row: one at a time (an added row sets its own keys in its YAML)")
    tier = CUSTOM if req.overrides or req.added else req.tier  # where the jobs are stored and claimed
    executor, context = _executor(req, spec.id, tier)
    view = None
    if req.added:
        check_added(spec, req.added)
        view = spec.with_added_rows(req.tier, tuple(req.added))
        plan = expand(view, CUSTOM, req.seeds, req.only, numerics=context.numerics)
    else:
        plan = expand(spec, req.tier, req.seeds, req.only, numerics=context.numerics, overrides=req.overrides)
    store = ResultStore(context.results_root)
    if not req.dry_run:
        why = executor.unavailable_reason()
        if why:
            raise UsageError(why)
        check_writable(store.folder(tier, spec.id), "results ($PUBENCH_RESULTS)")
        _check_clean_tree(req, store.root)
    _say_plan(spec, req.tier, plan, context.numerics, req.overrides)
    if view is not None:
        say_added(spec, view, req.tier, store, context.numerics, plan.jobs)
    if req.overrides:
        print(f"  custom variant: tier '{req.tier}' with --set {' --set '.join(req.overrides)}; stored under "
              f"{store.folder(tier, spec.id)} (job ids differ from every tier's)")
        for warning in override_warnings(spec, req.tier, req.overrides):
            print(f"  warning: {warning}")
    plan.jobs = drop_unimplemented(plan.jobs)
    rejected = config_rejection(spec, req, plan.jobs)
    if rejected and not req.dry_run:
        raise UsageError(f"{rejected} (nothing was run)")
    if rejected:
        print(f"  warning: {rejected}")
    todo = _pending(req, spec.id, plan.jobs, store, context)
    if not req.overrides and not req.added:
        todo = take_shared(spec, todo, store, dry_run=req.dry_run)
    lacking = missing_data(todo)
    if lacking and not req.dry_run and executor.runs_here:
        raise UsageError(missing_data_line(spec.id, todo, lacking, ran=False))
    if req.dry_run:
        if lacking:
            print(f"  warning: {missing_data_line(spec.id, todo, lacking)}")
        print(executor.plan(todo, every_job=req.jobs_list))
        print(_estimate(store, todo, executor.concurrency(todo), view))
        return 0
    if not todo:
        return 0
    return _submit(executor, req, spec.id, todo, store)


def missing_data(jobs: list) -> dict[str, str]:
    """Data set name -> what to place where, for every data set ``jobs`` read that is not under
    the data root ($PUBENCH_DATA) here (:func:`pubench.coverage.data_missing`; a data set no
    loader checks, e.g. a simulation's, counts as present)."""
    names, seen = set(), set()
    for j in jobs:
        if id(j.params) not in seen:  # the seeds of a cell share their params
            seen.add(id(j.params))
            names |= {n for k, n in units(j.task, j.params) if k == "dataset"}
    if not names:
        return {}
    out = {}
    for n in sorted(names):
        why = data_missing(n)
        if why and not why.startswith("no loader checks data"):
            out[n] = why
    return out


def missing_data_line(spec_id: str, jobs: list, lacking: dict[str, str], ran: bool = True) -> str:
    """One line: the jobs that need missing data (``ran=False``: and that nothing was run,
    said before the file names, which a long data root may shorten away), and per data set
    the files to place."""
    n = sum(any(k == "dataset" and name in lacking for k, name in units(j.task, j.params)) for j in jobs)
    parts = []
    for name, why in lacking.items():
        where = why.split("place ", 1)[1].split(". ", 1)[0] if "place " in why else why
        parts.append(f"{name}: place {where}")
    return (f"data missing for {n} job(s) of {spec_id}{'' if ran else ' (nothing was run)'}: " + "; ".join(parts)
            + "; `pubench prepare --check` lists what goes where, `pubench prepare --from DIR` copies it")


def config_rejection(spec, req: RunRequest, jobs: list) -> str | None:
    """The first cell config among ``jobs`` that its task rejects (its ``validate``, no data loaded),
    as one line: a spec's own cell at the spec file's line that sets the key
    (:mod:`pubench.registry.task_check`), a variant's (``--set``) naming the cell; None when the
    task accepts every one."""
    if req.added:
        problem = config_problem(spec.with_added_rows(req.tier, tuple(req.added)), jobs)
        return problem and str(problem)
    if req.overrides:
        rejected = variant_config_error(jobs)
        return rejected and f"--set: {rejected}"
    rejection = jobs_rejection(spec, req.tier, jobs)
    return None if rejection is None else problem_line(rejection)


def variant_config_error(jobs: list) -> str | None:
    """The first config a task rejects among ``jobs`` (a variant's, ``--set``), as ``cell: error``,
    checked by the task's ``validate`` (no data loaded): a typo'd key fails here, not in every job."""
    rejected = first_rejected_job(jobs)
    return None if rejected is None else rejected_by_task(*rejected)


def say_added(spec, view, tier: str, store, numerics, jobs: list) -> None:
    """What each row added to ``spec`` (``view``: :meth:`Spec.with_added_rows`) inherits from its
    baseline at ``tier`` and what it sets, where its jobs are stored, and how many cells of the
    rows it is compared with (its block, in the settings and seeds of ``jobs``, the added rows'
    jobs) have records at ``tier``."""
    block: set[str] = set()
    for row in view.added:
        inherited, replaced = inheritance(view, tier, row)
        print(f"  added row '{row.name}': runs like '{row.like}' at tier '{tier}', with the budget the tier gives it "
              f"({budget_text(inherited, settings_run(view, tier, row))}), and sets {flow(row.sets) or 'nothing'}"
              + (f"; its {', '.join(replaced)} replaces {row.like}'s (the baseline's hyperparameters belong to its "
                 "unit)" if replaced else ""))
        block |= set(block_of(spec, row.like))
    print(f"  stored under {store.folder(CUSTOM, spec.id)} (each record's job.variant.row says what the row inherits "
          "and sets); `pubench report` sets the rows beside the paper's, tested against their block's")
    settings = sorted({j.row if spec.methods_in == "cols" else j.col for j in jobs})
    seeds = {j.seed_index for j in jobs}
    only = ["|".join(spec.cell_of(m, s)) for m in sorted(block) for s in settings]
    base = [j for j in expand(spec, tier, max(seeds) + 1, only, numerics=numerics).jobs
            if j.seed_index in seeds] if jobs else []
    print(baselines_line(spec, tier, store, base, seeds))


def baselines_line(spec, tier: str, store, base: list, seeds: set[int]) -> str:
    """Whether the jobs ``base`` of the rows an added row is compared with (its block, in the settings
    and seeds it runs) have their records: each job in this store, else in the baselines store
    (:func:`pubench.report.collect.baselines_store`: ``--baselines DIR``, default the committed
    store), where the report reads them; for the cells that lack some, the command that runs
    exactly those cells into this store."""
    from pubench.report.collect import baselines_store, store_label

    own = set(store.scan(tier, spec.id).done)
    other = baselines_store(store)
    theirs = set(other.scan(tier, spec.id).done) - own if other is not None else set()
    cells = {(j.row, j.col) for j in base}
    missing = sorted({(j.row, j.col) for j in base if j.id not in own and j.id not in theirs},
                     key=list(spec.cells()).index)
    where = [f"{n} in {label}" for label, n in ((f"this store ({store.root})", sum(j.id in own for j in base)),
                                                 (store_label(other.root) if other else "", sum(j.id in theirs
                                                                                                for j in base)))
             if n]
    found = f" (of their {len(base)} job(s): {', '.join(where)})" if where else ""
    if not missing:
        return (f"  baselines: all {len(cells)} cells of the rows compared with have their records at tier "
                f"'{tier}'{found}; the report compares against them")
    first, last = (min(seeds), max(seeds)) if seeds else (0, 0)
    which = f"seeds {first}-{last}" if last > first else f"seed {first}"
    return (f"  baselines: {len(cells) - len(missing)} of {len(cells)} cells of the rows compared with have their "
            f"records ({which}) at tier '{tier}'{found}; `pubench run {spec.id} --tier {tier} --seeds "
            f"{last + 1}" + "".join(f" --only '{p}'" for p in cell_patterns(spec, tier, missing))
            + "` runs the others into this store")


def cell_patterns(spec, tier: str, cells: list[tuple[str, str]]) -> list[str]:
    """``--only`` patterns that select exactly ``cells``: ``ROW|*`` (``*|COL`` where the methods are
    columns) for a method missing in every setting ``tier`` runs it in, else one ``ROW|COL`` per cell."""
    by_method: dict[str, list[tuple[str, str]]] = {}
    for r, c in cells:
        by_method.setdefault(c if spec.methods_in == "cols" else r, []).append((r, c))
    out = []
    for method, mine in by_method.items():
        every = [cell for cell in spec.cells() if (cell[1] if spec.methods_in == "cols" else cell[0]) == method
                 and spec.unavailable_reason(tier, *cell) is None]
        if set(mine) == set(every):
            out.append(f"*|{method}" if spec.methods_in == "cols" else f"{method}|*")
        else:
            out += [f"{r}|{c}" for r, c in mine]
    return out


def override_warnings(spec, tier: str, overrides: list[str]) -> list[str]:
    """The overrides whose key no cell's config at ``tier`` has (a typo makes every job fail
    on its config; a new key may be meant): one sentence each."""
    configs = [spec.resolve(tier, r, c)["params"] for r, c in spec.cells()
               if spec.unavailable_reason(tier, r, c) is None]
    out = []
    for text in overrides:
        path, _, _ = parse_override(text)
        if not any(_has_path(p, path) for p in configs):
            out.append(f"--set {text}: no cell's config at tier '{tier}' has {'.'.join(path)!r} (a new key; "
                       "`pubench expand ID --tier T` shows the configs)")
    return out


def _has_path(node, path: list[str]) -> bool:
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _executor(req: RunRequest, spec_id: str, tier: str | None = None):
    """The executor of the run, and its context (with the numerics of the run's jobs)."""
    kind = EXECUTORS.get(req.executor)
    context = executor_context(spec_id, tier or req.tier, jobs=req.jobs, progress=req.progress, force=req.force,
                               profile=req.profile, cluster=req.cluster, checkpoint_every=req.checkpoint_every,
                               profile_tier=req.tier)
    device = req.device if req.device != "auto" else kind.default_device(context)
    context.numerics = numerics.resolve(device=device, threads=req.threads, isa=req.isa, fast=req.fast)
    return kind.from_context(context), context


def _check_clean_tree(req: RunRequest, store_root: Path) -> None:
    check_clean_tree(store_root, req.allow_dirty)


def check_clean_tree(store_root: Path, allow_dirty: bool) -> None:
    """Writing into the committed store needs committed code and specs (or --allow-dirty)."""
    committed = (paths.project_root() / "results").resolve()
    if store_root.resolve() != committed:
        return
    changes = store_provenance.code_changes()
    if changes and not allow_dirty:
        raise UsageError(f"uncommitted changes to code or specs ({', '.join(changes[:3])}"
                         f"{' ...' if len(changes) > 3 else ''}) and the store is the committed one ({committed}): "
                         "commit first, write elsewhere with PUBENCH_RESULTS=..., or pass --allow-dirty "
                         "(records and reports are then marked)")


def _say_plan(spec, tier: str, plan, num, overrides: list[str] | None = None) -> None:
    more = "".join(f" ({m['seeds']} in {m['cells']}, decided {m['date']})" for m in
                   (spec.tiers[tier].more_seeds if tier in spec.tiers and len({j.seed_index for j in plan.jobs}) >
                    plan.seeds else ()))
    print(f"pubench: {spec.id} at tier '{tier}' ({tier_description(spec, tier)}), {plan.seeds} seed(s){more}; "
          f"numerics: {describe_numerics(num)}")
    from pubench.registry.changes import tier_changes

    changed = len(tier_changes(spec, tier)) if tier in spec.tiers else 0
    if changed:
        base = spec.variant[0] if spec.variant else tier
        print(f"  config changes against the paper tier: {changed} line(s), shown by `pubench expand {spec.id} --tier "
              f"{base} --diff`" + (" with the variant's options" if spec.variant else ""))
    for d in overridden_deviations(spec.tiers[tier].deviations, overrides or []):
        print(f"  deviation: {d}")
    for r, c, why in plan.unavailable:
        print(f"  not runnable at this tier: {r}|{c}: {why}")


def tier_description(spec, tier_name: str) -> str:
    tier = spec.tiers[tier_name]
    if tier_name == "paper":
        return "the paper's exact configuration" if not tier.deviations else \
            "the paper's configuration with listed deviations"
    return "a reduced configuration" if tier_name == "reduced" else "a seconds-long pipeline check"


def describe_numerics(num) -> str:
    canon = " (canonical)" if num.canonical and num.device == "cpu" else ""
    fast = ", fast profile (channels_last, torch.compile)" if num.fast else ""
    return f"{num.device}, {num.threads} thread(s)/job, {num.isa} code paths, torch {num.torch}{fast}{canon}"


def _pending(req: RunRequest, spec_id: str, jobs: list, store, context) -> list:
    """The jobs to run: neither done (unless --force) nor in flight under any executor; a
    corrupt record is quarantined (its job runs again)."""
    tier = context.tier
    if not req.dry_run:
        store.clean_temps(tier, spec_id)
    scan = store.scan(tier, spec_id)
    if scan.corrupt and not req.dry_run:
        moved = store.quarantine([p for p, _ in scan.corrupt])
        for (p, why), dest in zip(scan.corrupt, moved):
            print(f"  corrupt record {p.name} ({why}): moved to {dest.parent}; its job runs again")
    done = set() if req.force else set(scan.done)
    todo = [j for j in jobs if j.id not in done]
    n_done = len(jobs) - len(todo)
    for name in EXECUTORS.names():  # in flight anywhere: claimed by a live runner, queued on a scheduler
        kind = EXECUTORS.get(name)
        active = kind.active_ids(context)
        busy = [j for j in todo if j.id in active]
        if busy:
            print("\n".join(kind.describe_active(context, busy)))
        todo = [j for j in todo if j.id not in active]
    print(f"  {len(jobs)} job(s): {n_done} already done, {len(todo)} to run")
    return todo


def take_shared(spec, todo: list, store, dry_run: bool = False) -> list:
    """The jobs left to run once the cells that are another spec's cell (``experiment.seeds_from``)
    take that cell's finished records: a job whose computation (task, params, seeds, numerics:
    all a task sees) equals a stored job of the other spec gets that job's metrics and info as
    its own record, with ``info.shared_from`` naming it, and does not run. One experiment in two
    tables then shows one set of numbers and is computed once; ``pubench verify`` reruns such a
    record from scratch like any other (and samples them first)."""
    source_cell = {j.id: shared[1:] for j in todo if (shared := spec.shared_cell(j.row, j.col))}
    if not source_cell:
        return todo
    shared = [j for j in todo if j.id in source_cell]
    other_id = spec.seed_spec
    tier, n = shared[0].tier, max(j.seed_index for j in shared) + 1
    try:
        source = expand(get_spec(other_id), tier, n, sorted({"|".join(c) for c in source_cell.values()}),
                        numerics=Numerics.from_dict(shared[0].numerics)).jobs
    except PlanError:  # the other spec has no such tier or cells: nothing to take
        source = []
    done = set(store.scan(tier, other_id).done) if source else set()
    by_cell = {(j.row, j.col, j.seed_index): j for j in source if j.id in done}
    taken = {}
    for job in shared:
        src = by_cell.get((*source_cell[job.id], job.seed_index))
        if src is not None and (src.task, src.params_json, src.seeds, src.numerics) == \
                (job.task, job.params_json, job.seeds, job.numerics) and (rec := store.read(src)) is not None:
            taken[job.id] = (job, src, rec)
    if not taken:
        return todo
    if dry_run:
        print(f"  {len(taken)} job(s) would take the records of the same computation in {other_id} (experiment."
              "seeds_from)")
    else:
        for job, src, rec in taken.values():
            # the record's own timing is the copy's (nothing was computed here); the computation's is the source's
            info = dict(rec.get("info") or {}) | {"shared_from": {
                "spec": src.spec_id, "job": src.id, "name": src.name, "provenance": rec.get("provenance"),
                "timing": rec.get("timing")}}
            now = datetime.now(timezone.utc).isoformat(timespec="seconds")
            store.write_ok(job, rec["metrics"], info, {"start": now, "end": now, "wall_s": 0.0}, rec.get("machine"))
        print(f"  {len(taken)} job(s) took the records of the same computation in {other_id} (experiment.seeds_from:"
              f" task, params, seeds and numerics equal; info.shared_from names each)")
    return [j for j in todo if j.id not in taken]


def _submit(executor, req: RunRequest, spec_id: str, todo: list, store) -> int:
    if executor.runs_here and slots_folder() is not None:
        check_writable(slots_folder(), "core slots ($PUBENCH_CORE_SLOTS)")
    if not executor.runs_here:
        check_writable(paths.logs_root(), "logs ($PUBENCH_LOGS)")
    try:
        sub = executor.submit(todo, on_done=_log_line(len(todo)) if req.log_lines else None)
    except (JobInterrupted, KeyboardInterrupt) as e:
        signum = getattr(e, "signum", 2)
        print(f"pubench: interrupted ({signal.Signals(signum).name}); finished jobs are saved, the ones in flight "
              "are recorded as interrupted (with a checkpoint when they were training); rerun to continue",
              file=sys.stderr)
        return 128 + signum
    if sub.counts is None:
        print(f"pubench: submitted {len(todo)} job(s) to {executor.name}; {sub.where}")
        print(f"  follow with `pubench status {spec_id} --tier {req.tier}`; collect with `pubench report {spec_id}`")
        return 0
    counts = sub.counts
    skipped = f", {counts['skipped']} skipped (done or claimed by another runner meanwhile)" if counts["skipped"] else ""
    print(f"pubench: {counts['ok']} ok, {counts['failed']} failed{skipped}")
    if counts["failed"]:
        _print_failures(store, todo[0].tier, spec_id, todo)
    return 1 if counts["failed"] else 0


def _estimate(store, todo, concurrency: tuple[int, int, str] | None, view=None) -> str:
    """The run's time from past records of the same cells: this store's, then the committed one's
    (and the baselines store's); for jobs without any, from ``pubench preflight``'s figures: this
    machine's cache; for a row added with ``--add-row`` (``view``: :meth:`Spec.with_added_rows`),
    the records of the cell of the row it runs like (its budget, with the method of its own); else
    the figures committed under ``benchmarks/results/`` (:mod:`pubench.preflight.committed`).
    ``concurrency``: the executor's jobs at once, jobs per device and how, in words (the wall time;
    packed jobs are slowed by :mod:`pubench.preflight.packing`'s ratio)."""
    from pubench.preflight.committed import project  # here: the preflight package costs every `status` 30 ms
    from pubench.preflight.packing import packing
    from pubench.preflight.report import cached

    roots = [store.root, paths.committed_results(), paths.baselines_root()]
    stores = [ResultStore(r) for i, r in enumerate(roots)
              if r.is_dir() and r.resolve() not in {x.resolve() for x in roots[:i]}]
    folders = {(j.tier, j.spec_id) for j in todo}
    like = _like_cells(view, todo) if view is not None and view.added else {}
    folders |= {(view.variant[0], view.id)} if like else set()
    walls: dict = {}
    for st in stores:
        for tier_spec in folders:
            for key, seen in past_walls(st.scan(*tier_spec).records).items():
                walls.setdefault(key, []).extend(seen)

    def preflight(job):
        if (entry := cached(job)) is not None:
            return entry
        if (cell := like.get((job.row, job.col))) is not None and walls.get(cell[0]):
            return {"job_s": statistics.median(w for _, w in walls[cell[0]]),
                    "like": f"{view.added_row(job.row, job.col).like} at tier {view.variant[0]}"}
        return None if (p := project(job)) is None else p.as_entry()

    par = None
    if concurrency is not None:
        at_once, per_device, how = concurrency
        device = (todo[0].numerics.get("device") if todo else None) or "cpu"
        pack = packing(device)
        slowdown = pack.slowdown(per_device) if per_device > 1 else 1.0
        par = Parallelism(at_once, per_device, slowdown, how + (f"; packing {pack.describe(per_device)}"
                                                               if per_device > 1 else ""))
    if like:
        measure = ("the records of the rows they run like would estimate them: the baselines line above gives the "
                   "command that runs the cells that lack them")
    elif todo:
        job = todo[0]
        variant = job.variant or {}
        tier = variant.get("base_tier") or job.tier
        overrides = "".join(f" --set {o}" for o in variant.get("set") or ())
        measure = (f"`pubench preflight {job.spec_id} --tier {tier}{overrides} --device "
                   f"{job.numerics.get('device') or 'cpu'}` measures them")
    else:
        measure = None
    text = render_estimate(estimate(todo, walls, preflight=preflight), par, measure)
    paper_on_cpu = [j for j in todo if j.tier == "paper" and (j.numerics.get("device") or "cpu") == "cpu"]
    if paper_on_cpu and "cannot estimate" not in text:
        text += (f"\n  estimate: this is on the CPU; the paper tier is meant for GPUs, which change it: `pubench run "
                 f"{paper_on_cpu[0].spec_id} --tier paper --device cuda --dry-run` (with --executor slurm and a "
                 "profile that asks for GPUs) estimates it on one from the GPU figures (docs/gpu.md)")
    return text


def _like_cells(view, jobs: list) -> dict[tuple[str, str], tuple[tuple, str]]:
    """(row, col) of each added cell among ``jobs`` -> (the past-walls key of the cell it runs like
    at the base tier, that cell as ``row|col``)."""
    from pubench.report.compute import cell_key

    cells = {(j.row, j.col): view.baseline_cell(j.row, j.col) for j in jobs if view.added_row(j.row, j.col)}
    if not cells:
        return {}
    base = expand(get_spec(view.id), view.variant[0], 1, sorted({"|".join(c) for c in cells.values()}),
                  numerics=Numerics.from_dict(jobs[0].numerics)).jobs
    keys = {(j.row, j.col): cell_key(j.to_dict()) for j in base}
    return {cell: (keys[like], "|".join(like)) for cell, like in cells.items() if like in keys}


def _log_line(total: int) -> Callable:
    """Progress lines when stderr is not a terminal (logs, CI, ``make demo``): one per finished
    job for up to :data:`LOG_EVERY_JOB` jobs; for more, one per twentieth of the run (and one
    for every job that did not end ok), each with the counts so far."""
    n = Counter()
    every = 1 if total <= LOG_EVERY_JOB else math.ceil(total / 20)

    def on_done(job, status):
        n["i"] += 1
        n[status] += 1
        if every == 1:
            print(f"  [{n['i']}/{total}] {status:7s} {job.name}", flush=True)
        elif status != "ok" or n["i"] % every == 0 or n["i"] == total:
            print(f"  [{n['i']}/{total}] {status:7s} {job.name}  ({n['ok']} ok, {n['failed']} failed so far)",
                  flush=True)

    return on_done


#: runs of up to this many jobs log every job; longer ones a line per twentieth
LOG_EVERY_JOB = 40


def _print_failures(store, tier: str, spec_id: str, jobs) -> None:
    """Each distinct failure reason once, with how many jobs it hit and one record path."""
    ids = {j.id for j in jobs}
    reasons: dict[str, list[Path]] = {}
    for rec, path in _failure_records(store, tier, spec_id):
        if rec["job"]["id"] in ids:
            line = f"{rec['error']['type']}: {rec['error']['message']}".strip().splitlines()[0][:300]
            reasons.setdefault(line, []).append(path)
    for line, hit in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        print(f"  failed ({len(hit)} job{'s' if len(hit) > 1 else ''}): {line}")
        print(f"      e.g. {hit[0]}")
    if reasons:
        print("  (failure records keep the traceback; the next run retries these jobs)")


def _failure_records(store, tier: str, spec_id: str):
    scan = store.scan(tier, spec_id)
    for path in scan.failed.values():
        rec, _ = store.read_file(path, failed=True)
        if rec is not None:
            yield rec, path


def split_unimplemented(jobs):
    """``(runnable jobs, {(row, col): missing units})``: a job naming a planned unit the
    code lacks could only fail, so it is neither run nor counted as pending."""
    have, keep, lacking, seen = implemented(), [], {}, {}
    for j in jobs:
        if id(j.params) not in seen:  # the seeds of a cell share their params: walk them once
            seen[id(j.params)] = sorted({f"{k}:{n}" for k, n in units(j.task, j.params) if n not in have[k]})
        missing = seen[id(j.params)]
        if missing:
            lacking.setdefault((j.row, j.col), missing)
        else:
            keep.append(j)
    return keep, lacking


def drop_unimplemented(jobs):
    """The jobs :func:`split_unimplemented` keeps, saying which cells it leaves out."""
    keep, lacking = split_unimplemented(jobs)
    for (r, c), missing in lacking.items():
        print(f"  not implemented yet, not run: {r}|{c}: {', '.join(missing)}")
    return keep
