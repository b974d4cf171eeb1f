"""Command line: ``pubench list | show | expand | schema | coverage | prepare | run | status | report | site |
crossref | agreement | verify | compare``.

Each subcommand parses its arguments and calls library functions. Bad input exits with
status 2 and a one-line reason (a :class:`~pubench.errors.PubenchError`; anything else is
a bug and keeps its traceback); failed jobs make ``run`` exit with status 1; an
interrupted run exits with 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections import Counter
from pathlib import Path

from pubench import paths
from pubench.errors import PubenchError
from pubench.registry.spec import TIERS as TIER_CHOICES

EXECUTOR_CHOICES = ("local", "slurm")  # the registered executors (a test checks they match EXECUTORS)


class UsageError(PubenchError):
    """Bad input: printed as one line, exit status 2."""


def _spec(spec_id: str):
    from pubench.registry import get_spec

    return get_spec(spec_id)


def _specs(ids: list[str] | None):
    from pubench.registry import load_all

    if not ids:
        return load_all()
    return {i: _spec(i) for i in ids}  # only these files: a broken spec elsewhere does not block them


# ---- argument types -------------------------------------------------------------------
def _bounded_int(name: str, lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{name} must be in {lo}..{hi}, got {v}")
        return v

    return parse


def _positive_float(name: str):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not v >= 0 or v == float("inf"):
            raise argparse.ArgumentTypeError(f"{name} must be a finite number >= 0, got {text!r}")
        return v

    return parse


def _writable(folder: Path, what: str) -> None:
    """Fail with one line when ``folder`` cannot be created or written."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".tmp-probe-"):
            pass
    except OSError as e:
        raise UsageError(f"cannot write the {what} folder {folder}: {e.strerror or e}") from None


# ---- list / show -------------------------------------------------------------------
def cmd_list(args) -> int:
    from tabulate import tabulate

    specs = _specs(None)
    rows = [
        [s.id, s.kind, s.title, len(s.cells()), sum(c.mean is not None for c in s.reported), s.caption[:60]]
        for s in specs.values() if not args.paper or s.paper == args.paper
    ]
    print(tabulate(rows, headers=["id", "kind", "title", "cells", "reported numbers", "caption"]))
    return 0


def cmd_show(args) -> int:
    spec = _spec(args.id)
    if args.json:
        cells = [{"row": c.row, "col": c.col, "metric": c.metric, "mean": c.mean, "std": c.std, "note": c.note,
                  "mark": c.mark} for c in spec.reported]
        print(json.dumps({"id": spec.id, "paper": spec.paper, "caption": spec.caption, "rows": spec.rows,
                          "cols": spec.cols, "metrics": list(spec.metrics), "seeds": spec.reported_seeds,
                          "pm": spec.pm, "cells": cells}, indent=1))
        return 0
    from pubench.report import render_reported_markdown

    print(render_reported_markdown(spec), end="")
    return 0


def cmd_expand(args) -> int:
    from pubench.jobs import expand

    spec = _spec(args.id)
    num = _numerics(args, args.tier)
    plan = expand(spec, args.tier, 1, only=args.cell, numerics=num)
    cells = [{"row": j.row, "col": j.col, "task": j.task, "params": j.params, "seeds": j.seeds, "job_id": j.id}
             for j in plan.jobs]
    cells += [{"row": r, "col": c, "unavailable": why} for r, c, why in plan.unavailable]
    order = {cell: i for i, cell in enumerate(spec.cells())}
    cells.sort(key=lambda c: order[(c["row"], c["col"])])
    if args.json:
        print(json.dumps({"id": spec.id, "version": spec.version, "tier": args.tier, "numerics": num.to_dict(),
                          "cells": cells}, indent=1, ensure_ascii=False))
        return 0
    import yaml

    dumper = _review_dumper()
    print(f"# {spec.id} (version {spec.version}), tier {args.tier}: {len(plan.jobs)} cells to run, "
          f"{len(plan.unavailable)} not run; job ids of seed 0 with numerics {num.device}, {num.threads} thread(s), "
          f"{num.isa}, torch {num.torch}")
    for c in cells:
        if "unavailable" in c:
            print(f"\n## {c['row']}|{c['col']}: not run at this tier: {c['unavailable']}")
            continue
        print(f"\n## {c['row']}|{c['col']}  job {c['job_id']}  seeds {c['seeds']}")
        print(f"task: {c['task']}")
        print(yaml.dump({"params": c["params"]}, Dumper=dumper, sort_keys=True, allow_unicode=True,
                        width=110).rstrip())
    return 0


def _review_dumper():
    import yaml

    class Dumper(yaml.SafeDumper):
        """Block mappings, flow lists of scalars: one key per line, short lines."""

    def represent_list(dumper, data):
        flow = all(not isinstance(v, (list, dict)) for v in data)
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    Dumper.add_representer(list, represent_list)
    return Dumper


def cmd_schema(args) -> int:
    from pubench.registry.schema import spec_json_schema

    print(json.dumps(spec_json_schema(), indent=1, ensure_ascii=False))
    return 0


# ---- coverage / prepare --------------------------------------------------------------
def cmd_coverage(args) -> int:
    from pubench.coverage import coverage, figure_audit, render_coverage

    specs = _specs(args.ids or None)
    cov = coverage(specs, None if args.ids else figure_audit(specs))
    print(json.dumps(cov, indent=1) if args.json else render_coverage(cov), end="" if not args.json else "\n")
    return 0


def cmd_prepare(args) -> int:
    from pubench.data.prepare import prepare

    if args.source and not Path(args.source).is_dir():
        raise UsageError(f"--from {args.source}: no such folder")
    root = paths.data_root()
    if not args.check:
        _writable(root, "data ($PUBENCH_DATA)")
    return prepare(names=args.datasets or None, source=Path(args.source) if args.source else None,
                   root=root, check_only=args.check)


# ---- numerics and the process environment ---------------------------------------------
def _numerics(args, tier: str):
    """The numerics profile of a local run, from the command line (``--device auto``: cpu)."""
    from pubench import numerics

    device = getattr(args, "device", "auto")
    return numerics.resolve(device="cpu" if device == "auto" else device, threads=getattr(args, "threads", None),
                            isa=getattr(args, "numerics", "avx2"))


def _ensure_process_env(num) -> None:
    """The numerics variables are read when the libraries load, so restart once with them
    (and with the allocator settings, unless ``PUBENCH_NO_MALLOC_TUNING``) unless this
    process already has them; ``PUBENCH_NO_REEXEC`` forbids the restart."""
    from pubench import numerics

    want = numerics.process_env(num)
    if os.environ.get("PUBENCH_NO_MALLOC_TUNING"):
        want = {k: v for k, v in want.items() if k not in numerics.MALLOC_ENV}
    missing = {k: v for k, v in want.items() if os.environ.get(k) != v}
    if not missing:
        return
    pinned = numerics.env_missing(num)
    if os.environ.get("PUBENCH_NO_REEXEC"):
        if pinned:
            raise UsageError("this process lacks the numerics environment ("
                             + " ".join(f"{k}={v}" for k, v in sorted(pinned.items()))
                             + "); unset PUBENCH_NO_REEXEC or export these")
        return
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", "pubench", *sys.argv[1:]], {**os.environ, **missing})


def _check_clean_tree(args, store_root: Path) -> None:
    """Writing into the committed store needs committed code and specs (or --allow-dirty)."""
    from pubench.store.provenance import code_changes

    committed = (paths.project_root() / "results").resolve()
    if store_root.resolve() != committed:
        return
    changes = code_changes()
    if changes and not args.allow_dirty:
        raise UsageError(f"uncommitted changes to code or specs ({', '.join(changes[:3])}"
                         f"{' ...' if len(changes) > 3 else ''}) and the store is the committed one ({committed}): "
                         "commit first, write elsewhere with PUBENCH_RESULTS=..., or pass --allow-dirty "
                         "(records and reports are then marked)")


# ---- run -----------------------------------------------------------------------------
def _tier_description(spec, tier_name: str) -> str:
    tier = spec.tiers[tier_name]
    if tier_name == "paper":
        return "the paper's exact configuration" if not tier.deviations else \
            "the paper's configuration with listed deviations"
    return "a reduced configuration" if tier_name == "reduced" else "a seconds-long pipeline check"


def _context(args, spec_id: str, tier: str):
    from pubench.executors import ExecutorContext

    profile = getattr(args, "profile", None)
    return ExecutorContext(
        results_root=paths.results_root(), logs_root=paths.logs_root(), spec_id=spec_id, tier=tier,
        jobs=getattr(args, "jobs", 1), progress=not getattr(args, "no_progress", True) and sys.stderr.isatty(),
        force=getattr(args, "force", False),
        profile=paths.slurm_profiles_root() / f"{profile}.yaml" if profile else None,
        cluster=getattr(args, "cluster", "slurm"),
        checkpoint_every=getattr(args, "checkpoint_every", None))


def _quiet_jobs_when_asked(command):
    """``--no-progress`` also silences the epoch progress inside jobs: worker processes
    inherit ``PUBENCH_PROGRESS=0``."""

    @functools.wraps(command)
    def wrapped(args) -> int:
        if not getattr(args, "no_progress", False):
            return command(args)
        previous = os.environ.get("PUBENCH_PROGRESS")
        os.environ["PUBENCH_PROGRESS"] = "0"
        try:
            return command(args)
        finally:
            if previous is None:
                os.environ.pop("PUBENCH_PROGRESS", None)
            else:
                os.environ["PUBENCH_PROGRESS"] = previous

    return wrapped


@_quiet_jobs_when_asked
def cmd_run(args) -> int:
    from pubench import numerics
    from pubench.executors import EXECUTORS
    from pubench.jobs import expand
    from pubench.store import ResultStore

    kind = EXECUTORS.get(args.executor)
    if kind.runs_here and not args.dry_run:
        _ensure_process_env(_numerics(args, args.tier))  # before anything loads torch or numpy
    spec = _spec(args.id)
    if args.tier not in spec.tiers:
        raise UsageError(f"unknown tier {args.tier!r}")
    context = _context(args, spec.id, args.tier)
    device = args.device if args.device != "auto" else kind.default_device(context)
    context.numerics = num = numerics.resolve(device=device, threads=args.threads, isa=args.numerics)
    executor = kind.from_context(context)
    plan = expand(spec, args.tier, args.seeds, args.only, numerics=num)
    store = ResultStore(context.results_root)
    if not args.dry_run:
        why = executor.unavailable_reason()
        if why:
            raise UsageError(why)
        _writable(store.folder(args.tier, spec.id), "results ($PUBENCH_RESULTS)")
        _check_clean_tree(args, store.root)
    print(f"pubench: {spec.id} at tier '{args.tier}' ({_tier_description(spec, args.tier)}), {plan.seeds} seed(s); "
          f"numerics: {_describe_numerics(num)}")
    for d in spec.tiers[args.tier].deviations:
        print(f"  deviation: {d}")
    for r, c, why in plan.unavailable:
        print(f"  not runnable at this tier: {r}|{c}: {why}")
    plan.jobs = _drop_unimplemented(plan.jobs)
    if not args.dry_run:
        store.clean_temps(args.tier, spec.id)
    scan = store.scan(args.tier, spec.id)
    if scan.corrupt and not args.dry_run:
        moved = store.quarantine([p for p, _ in scan.corrupt])
        for (p, why), dest in zip(scan.corrupt, moved):
            print(f"  corrupt record {p.name} ({why}): moved to {dest.parent}; its job runs again")
    done = set() if args.force else set(scan.done)
    todo = [j for j in plan.jobs if j.id not in done]
    n_done = len(plan.jobs) - len(todo)
    for name in EXECUTORS.names():  # in flight anywhere: claimed by a live runner, queued on a scheduler
        active = EXECUTORS.get(name).active_ids(context)
        busy = [j for j in todo if j.id in active]
        if busy and name == "local":
            holders = store.claims(args.tier, spec.id).live_holders()
            print(f"  {len(busy)} job(s) running in another runner (claimed): not started again")
            from pubench.store.claims import ClaimBook

            for j in busy[:3]:
                if j.id in holders:
                    print(f"    {j.row}|{j.col} seed {j.seed_index}: {ClaimBook.describe(holders[j.id])}")
            if len(busy) > 3:
                print(f"    ... and {len(busy) - 3} more")
        elif busy:
            print(f"  {len(busy)} job(s) queued or running under {name}: not started again")
        todo = [j for j in todo if j.id not in active]
    print(f"  {len(plan.jobs)} job(s): {n_done} already done, {len(todo)} to run")
    if args.dry_run:
        print(executor.plan(todo))
        print(_estimate(store, todo, args.jobs if executor.runs_here else None))
        return 0
    if not todo:
        return 0
    return _submit(executor, args, spec, todo, store)


def _submit(executor, args, spec, todo, store) -> int:
    from pubench.executors.cores import slots_folder
    from pubench.executors.worker import JobInterrupted

    if executor.runs_here and slots_folder() is not None:
        _writable(slots_folder(), "core slots ($PUBENCH_CORE_SLOTS)")
    if not executor.runs_here:
        _writable(paths.logs_root(), "logs ($PUBENCH_LOGS)")
    try:
        if executor.runs_here:
            sub = executor.submit(todo, desc=spec.id, on_done=None if args.no_progress or sys.stderr.isatty()
                                  else _log_line(len(todo)))
        else:
            sub = executor.submit(todo)
    except (JobInterrupted, KeyboardInterrupt) as e:
        signum = getattr(e, "signum", 2)
        import signal

        print(f"pubench: interrupted ({signal.Signals(signum).name}); finished jobs are saved, the ones in flight "
              "are recorded as interrupted (with a checkpoint when they were training); rerun to continue",
              file=sys.stderr)
        return 128 + signum
    if sub.counts is None:
        print(f"pubench: submitted {len(todo)} job(s) to {executor.name}; {sub.where}")
        print(f"  follow with `pubench status {spec.id} --tier {args.tier}`; collect with `pubench report {spec.id}`")
        return 0
    counts = sub.counts
    skipped = f", {counts['skipped']} skipped (done or claimed by another runner meanwhile)" if counts["skipped"] else ""
    print(f"pubench: {counts['ok']} ok, {counts['failed']} failed{skipped}")
    if counts["failed"]:
        _print_failures(store, args.tier, spec.id, todo)
    return 1 if counts["failed"] else 0


def _estimate(store, todo, parallel: int | None) -> str:
    """The run's time from past records of the same cells: this store's, then the committed one's."""
    from pubench.report.compute import estimate, past_walls, render_estimate
    from pubench.store import ResultStore

    committed = paths.project_root() / "results"
    stores = [store] + ([ResultStore(committed)] if committed.resolve() != store.root.resolve() else [])
    walls: dict = {}
    for st in stores:
        for tier_spec in {(j.tier, j.spec_id) for j in todo}:
            for key, seen in past_walls(st.scan(*tier_spec).records).items():
                walls.setdefault(key, []).extend(seen)
    return render_estimate(estimate(todo, walls), parallel)


def _log_line(total: int):
    """One line per finished job when stderr is not a terminal (logs, CI)."""
    n = Counter()

    def on_done(job, status):
        n["i"] += 1
        print(f"  [{n['i']}/{total}] {status:7s} {job.name}", flush=True)

    return on_done


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
        try:
            yield json.loads(path.read_text()), path
        except (OSError, ValueError):
            continue


def _split_unimplemented(jobs):
    """``(runnable jobs, {(row, col): missing units})``: a job naming a planned unit the
    code lacks could only fail, so it is neither run nor counted as pending."""
    from pubench.registry.units import implemented, units

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


def _drop_unimplemented(jobs):
    keep, lacking = _split_unimplemented(jobs)
    for (r, c), missing in lacking.items():
        print(f"  not implemented yet, not run: {r}|{c}: {', '.join(missing)}")
    return keep


def _describe_numerics(num) -> str:
    canon = " (canonical)" if num.canonical and num.device == "cpu" else ""
    return f"{num.device}, {num.threads} thread(s)/job, {num.isa} code paths, torch {num.torch}{canon}"


# ---- status / report / verify -------------------------------------------------------
STATUS_KEYS = ["id", "tier", "seeds", "jobs", "done", "failed", "running", "submitted", "corrupt", "pending",
               "not_implemented_jobs", "unavailable_cells"]


def cmd_status(args) -> int:
    from tabulate import tabulate

    from pubench.executors import EXECUTORS
    from pubench.jobs import expand
    from pubench.report.collect import cell_seed_key
    from pubench.store import ResultStore

    store = ResultStore(paths.results_root())
    rows = []
    for sid, spec in _specs(args.ids or None).items():
        for tier in args.tier or spec.tiers:
            plan = expand(spec, tier, args.seeds)
            runnable, _ = _split_unimplemented(plan.jobs)
            scan = store.scan(tier, sid, fields=("job",))  # one pass, only the job of each record
            # done: a valid record of the cell's current config, whatever numerics profile made it
            have = {cell_seed_key(r["job"]) for r in scan.records}
            ids = {j.id for j in runnable}
            done_jobs = {j.id for j in runnable if j.cell_seed_key() in have}
            failed = len((ids & set(scan.failed)) - done_jobs)
            context = _context(args, sid, tier)
            claimed = store.claims(tier, sid).live_ids()
            queued = set().union(*(EXECUTORS.get(n).active_ids(context) for n in EXECUTORS.names() if n != "local"))
            running = len((ids & claimed) - done_jobs)
            active = len((ids & queued) - claimed - done_jobs)
            pending = len(ids) - len(done_jobs) - failed - running - active
            if args.ids or done_jobs or failed or active or running or scan.corrupt:
                rows.append([sid, tier, plan.seeds, len(ids), len(done_jobs), failed, running, active,
                             len(scan.corrupt), max(0, pending), len(plan.jobs) - len(ids), len(plan.unavailable)])
    if args.json:
        print(json.dumps([dict(zip(STATUS_KEYS, r)) for r in rows], indent=1))
    else:
        print(tabulate(rows, headers=[k.replace("_", " ") for k in STATUS_KEYS]) if rows else "no results yet")
    return 0


def cmd_report(args) -> int:
    from pubench.registry import SpecError, load_all
    from pubench.report import render_latex, render_markdown, write_index, write_report
    from pubench.report.collect import report_fields
    from pubench.store import ResultStore

    store = ResultStore(paths.results_root(), memo=True)  # each folder read once: report, index and site share it
    specs = _specs(args.ids or None)
    tiers = args.tier or list(TIER_CHOICES)
    _writable(paths.reports_root(), "reports ($PUBENCH_REPORTS)")
    written = 0
    for sid, spec in specs.items():
        for tier in tiers:
            scan = store.scan(tier, sid, fields=report_fields(spec))
            if not scan.done and not (args.ids and args.tier and scan.failed):
                continue
            if scan.corrupt:
                print(f"pubench: warning: {sid} ({tier}): skipped {len(scan.corrupt)} corrupt record(s), e.g. "
                      f"{scan.corrupt[0][0].name} ({scan.corrupt[0][1]}); `pubench run` moves them to quarantine "
                      "and reruns their jobs", file=sys.stderr)
            res, out = write_report(spec, tier, store, paths.reports_root(), standalone=args.standalone)
            written += 1
            if not args.quiet:
                print(render_latex(res, standalone=args.standalone) if args.format == "latex"
                      else render_markdown(res))
            print("pubench: wrote " + ", ".join(str(p) for p in out), file=sys.stderr)
    if not written:
        raise UsageError("no results for " + (", ".join(specs) if args.ids else "any table")
                         + f" at tier(s) {', '.join(tiers)}; run `pubench run <id>` first")
    try:
        all_specs = load_all()
        index = write_index(all_specs, store, paths.reports_root())
    except SpecError as e:  # an unrelated broken spec must not lose the reports just written
        print(f"pubench: index not updated: {e}", file=sys.stderr)
        return 0
    print(f"pubench: index {index}", file=sys.stderr)
    if args.html:
        print(f"pubench: site {_write_site(all_specs, store, paths.reports_root() / 'site')}", file=sys.stderr)
    return 0


def _write_site(specs, store, out: Path) -> Path:
    from pubench.coverage import figure_audit
    from pubench.report.crossref import load_crossref
    from pubench.report.site import write_site

    _writable(out.parent, "site")
    return write_site(specs, store, out, load_crossref(specs), figure_audit(specs))


def cmd_site(args) -> int:
    from pubench.registry import load_all
    from pubench.store import ResultStore

    out = Path(args.out) if args.out else paths.reports_root() / "site"
    index = _write_site(load_all(), ResultStore(paths.results_root(), memo=True), out)
    print(f"pubench: wrote the site; open {index.resolve().as_uri()}")
    return 0


def cmd_crossref(args) -> int:
    from pubench.registry import load_all
    from pubench.report.crossref import crossref, crossref_path, load_crossref, render_crossref
    from pubench.store import ResultStore

    specs = load_all()
    entries = load_crossref(specs)
    if not entries:
        raise UsageError(f"no cross-paper entries in {crossref_path()}")
    if args.method:
        entries = [x for x in entries if args.method.lower() in x.method.lower()]
        if not entries:
            raise UsageError(f"no cross-paper entry for a method matching {args.method!r}")
    if args.check:
        print(f"pubench: {len(entries)} cross-paper entries, every spec, row, column and metric found")
        return 0
    view = crossref(entries, specs, ResultStore(paths.results_root(), memo=True), args.tier)
    if args.json:
        print(json.dumps([{"method": x.method, "dataset": x.dataset, "setting": x.setting, "note": x.note,
                           "cells": [{"paper": v.paper, "spec": v.cell.spec_id, "row": v.cell.row, "col": v.cell.col,
                                      "metric": v.cell.metric, "setting": v.cell.setting,
                                      "reported": None if v.reported is None else v.reported.mean,
                                      "reported_std": None if v.reported is None else v.reported.std,
                                      "ours": None if v.ours is None else v.ours.mean,
                                      "ours_std": None if v.ours is None else v.ours.std,
                                      "ours_n": None if v.ours is None else v.ours.n, "tier": v.tier,
                                      "delta": v.delta} for v in values]} for x, values in view], indent=1))
    else:
        print(render_crossref(view), end="")
    return 0


def cmd_agreement(args) -> int:
    from pubench.report.agreement import agreements_json, render_agreements, table_agreements
    from pubench.store import ResultStore

    tiers = [args.tier] if args.tier else list(TIER_CHOICES)
    ags = table_agreements(_specs(args.ids or None), ResultStore(paths.results_root()), tiers)
    if not ags:
        raise UsageError("no results for " + (", ".join(args.ids) if args.ids else "any table")
                         + f" at tier(s) {', '.join(tiers)}; run `pubench run <id>` first")
    print(json.dumps(agreements_json(ags), indent=1) if args.json else render_agreements(ags).rstrip("\n"))
    return 0


def _agreement_parser(sub, fmt) -> None:
    s = sub.add_parser("agreement", help="how often our means order the paper's pairs of methods as the paper does",
                       formatter_class=fmt,
                       description="Per table and tier: of the paper's pairs of methods (two rows of one row group in "
                                   "one column, per metric; two columns of a row where methods are columns) with both "
                                   "numbers printed and ours present, the share our means order as the paper, split by "
                                   "the paper's gap (< 1, 1-2, >= 2 in the metric's units) and by whether our test of "
                                   "the pair is significant (p < 0.05); then every table pooled per tier.",
                       epilog="examples:\n  pubench agreement\n  pubench agreement table2-punce --tier reduced\n"
                              "  pubench agreement --json")
    s.add_argument("ids", nargs="*", help="tables or figures (default: all)")
    s.add_argument("--tier", choices=TIER_CHOICES, help="only this tier (default: every tier with results)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_agreement)


@_quiet_jobs_when_asked
def cmd_verify(args) -> int:
    from pubench import numerics
    from pubench.verify import render_verification, verify

    _ensure_process_env(numerics.resolve(isa="avx2"))
    spec = _spec(args.id)
    if args.tier not in spec.tiers:
        raise UsageError(f"unknown tier {args.tier!r}")
    from pubench.store import ResultStore

    if not ResultStore(paths.results_root()).scan(args.tier, spec.id).records:
        raise UsageError(f"no records of {spec.id} at tier {args.tier} in {paths.results_root()} to verify")
    result = verify(spec, args.tier, sample=args.sample, n_jobs=args.jobs, sample_seed=args.sample_seed,
                    progress=not args.no_progress and sys.stderr.isatty(), sigmas=args.sigmas)
    print(render_verification(result), end="")
    return 0 if result.passed else 1


def cmd_compare(args) -> int:
    from pubench.report.compare import compare_stores, render_diffs
    from pubench.store import ResultStore

    baseline = Path(args.baseline)
    if not baseline.is_dir():
        raise UsageError(f"baseline store {baseline} does not exist")
    diffs = compare_stores(_specs(args.ids or None), args.tier, ResultStore(baseline),
                           ResultStore(paths.results_root()), args.sigmas, args.abs_tol, args.rel_tol)
    print(render_diffs(diffs, only_flagged=args.only_flagged), end="")
    if not diffs:
        raise UsageError("no cell has results in both stores")
    return 1 if any(d.flagged for d in diffs) else 0


# ---- parser --------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line (and the hint where help is), exit 2."""

    def error(self, message: str):  # noqa: D401 - argparse's signature
        from pubench.errors import shorten

        self.exit(2, f"{self.prog}: error: {shorten(' '.join(message.split()), 600)} (see `{self.prog} --help`)\n")


def _numerics_options(s: argparse.ArgumentParser) -> None:
    s.add_argument("--threads", type=_bounded_int("--threads", 1, 256),
                   help="torch threads per job (default 1, the canonical setting: give parallelism with --jobs). "
                        "Another count changes the numbers, so it makes other job ids")
    s.add_argument("--numerics", default="avx2", choices=["avx2", "native"],
                   help="avx2 (default, canonical): pin every numeric library to its AVX2 code path, so a job "
                        "reproduces bit for bit on any x86-64 CPU with AVX2; native: let them pick (faster on "
                        "AVX-512, not reproducible across machines; other job ids)")
    s.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                   help="auto (default): cpu, or cuda for a SLURM profile that asks for GPUs")


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = _Parser(
        prog="pubench", formatter_class=fmt,
        description="Rerun the tables of five PU / debiased contrastive learning papers and compare with "
                    "the reported numbers.",
        epilog="examples:\n  pubench list\n  pubench show table2-punce\n  pubench run fig5-bcl --seeds 5\n"
               "  pubench report fig5-bcl\n  pubench site\n  pubench verify table2-punce --tier reduced --sample 4\n"
               "  pubench coverage\n\nenvironment: PUBENCH_DATA (data root, default ./data), PUBENCH_RESULTS, "
               "PUBENCH_REPORTS,\n  PUBENCH_LOGS, PUBENCH_EXPERIMENTS, PUBENCH_HOME, PUBENCH_SLURM_PROFILES, "
               "PUBENCH_CACHE,\n  PUBENCH_ENCODER_CACHE=0, PUBENCH_CORE_SLOTS, PUBENCH_NO_REEXEC, PUBENCH_DEBUG; "
               "see the README (Environment)",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="command")

    s = sub.add_parser("list", help="every table and figure in the registry", formatter_class=fmt,
                       epilog="example:\n  pubench list --paper punce")
    s.add_argument("--paper", choices=["pucl", "punce", "bcl", "pupl", "wconpu"])
    s.set_defaults(fn=cmd_list)

    s = sub.add_parser("show", help="a table's reported numbers, laid out as the paper prints them",
                       formatter_class=fmt, epilog="examples:\n  pubench show table1-bcl\n  pubench show table1-bcl --json")
    s.add_argument("id", help="table or figure id, e.g. table2-punce")
    s.add_argument("--json", action="store_true", help="machine-readable reported cells")
    s.set_defaults(fn=cmd_show)

    s = sub.add_parser(
        "expand", help="each cell's resolved config at a tier (presets, PU data sets and priors filled in) and the "
                       "job id of seed 0, for review", formatter_class=fmt,
        epilog="examples:\n  pubench expand table1-punce --tier reduced\n"
               "  pubench expand table2-pupl --tier paper --cell 'puCL*|CIFAR-I' --json")
    s.add_argument("id")
    s.add_argument("--tier", default="paper", choices=TIER_CHOICES, help="default: paper")
    s.add_argument("--cell", action="append", metavar="ROW|COL", help="only cells matching this glob (repeatable)")
    s.add_argument("--json", action="store_true", help="machine-readable")
    _numerics_options(s)
    s.set_defaults(fn=cmd_expand)

    s = sub.add_parser("schema", help="the JSON Schema of a spec file (for editors; experiments/spec.schema.json)",
                       formatter_class=fmt, epilog="example:\n  pubench schema > experiments/spec.schema.json")
    s.set_defaults(fn=cmd_schema)

    s = sub.add_parser("coverage", help="what can run: cells, reported numbers, runnable cells per tier, "
                       "missing methods and datasets", formatter_class=fmt,
                       epilog="examples:\n  pubench coverage\n  pubench coverage table1-punce --json")
    s.add_argument("ids", nargs="*", help="restrict to these ids")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_coverage)

    s = sub.add_parser("prepare", help="make datasets available offline under $PUBENCH_DATA (default ./data) "
                       "and check them", formatter_class=fmt,
                       epilog="examples:\n  pubench prepare --from ../shared/data\n  pubench prepare --check")
    s.add_argument("datasets", nargs="*", help="dataset names (default: all)")
    s.add_argument("--from", dest="source", help="folder holding local copies (e.g. ../shared/data)")
    s.add_argument("--check", action="store_true", help="only check what is present")
    s.set_defaults(fn=cmd_prepare)

    s = sub.add_parser(
        "run", help="run (or submit) the jobs of one table or figure", formatter_class=fmt,
        description="Expand a spec into (cell, seed) jobs and run those not yet done. Finished jobs are never "
                    "rerun (unless --force); failed ones are retried. Safe to interrupt and rerun, and to start "
                    "twice: a job is claimed before it runs, and jobs hold machine-wide core slots.",
        epilog="examples:\n  pubench run fig5-bcl --tier paper --seeds 5\n"
               "  pubench run table1-punce --tier reduced --seeds 3 --jobs 2\n"
               "  pubench run table1-punce --tier paper --executor slurm --dry-run\n"
               "  pubench run table1-punce --only 'puNCE|*'")
    s.add_argument("id")
    s.add_argument("--tier", default="reduced", choices=TIER_CHOICES,
                   help="paper: the paper's config; reduced: runs on a laptop CPU (default); smoke: seconds")
    s.add_argument("--seeds", type=_bounded_int("--seeds", 1, 1000),
                   help="number of seeds (default: the tier's, from the spec)")
    s.add_argument("--only", action="append", metavar="ROW|COL",
                   help="only cells matching this glob pattern (repeatable)")
    s.add_argument("--executor", default="local", choices=EXECUTOR_CHOICES,
                   help="where the jobs run: local (this machine, default) or slurm (a job array through submitit)")
    s.add_argument("--jobs", type=_bounded_int("--jobs", 1, 64), default=1,
                   help="local worker processes (default 1: in this process)")
    _numerics_options(s)
    s.add_argument("--profile", default="default", help="SLURM profile slurm/<name>.yaml (default: default)")
    s.add_argument("--cluster", default="slurm", choices=["slurm", "local", "debug"],
                   help=argparse.SUPPRESS)  # submitit backends other than slurm, for tests
    s.add_argument("--dry-run", action="store_true", help="print the job plan (and sbatch parameters); run nothing")
    s.add_argument("--force", action="store_true", help="rerun jobs that are already done")
    s.add_argument("--allow-dirty", action="store_true",
                   help="write into the committed store from a tree with uncommitted code/spec changes "
                        "(records and reports are marked)")
    s.add_argument("--checkpoint-every", type=_bounded_int("--checkpoint-every", 0, 100000), metavar="EPOCHS",
                   help="write a job's training checkpoint every EPOCHS epochs (default: the SLURM profile's "
                        "checkpoint_every_epochs, else 10; 0: only at the end of each training stage and on a stop "
                        "signal). Numbers and job ids do not depend on it")
    s.add_argument("--no-progress", action="store_true",
                   help="no progress bar, no per-job log lines and no epoch progress inside jobs")
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("status", help="done / failed / running / submitted / pending jobs per table and tier",
                       formatter_class=fmt, epilog="examples:\n  pubench status\n  pubench status fig5-bcl --tier paper")
    s.add_argument("ids", nargs="*")
    s.add_argument("--tier", action="append", choices=TIER_CHOICES)
    s.add_argument("--seeds", type=_bounded_int("--seeds", 1, 1000), help="seeds to count as planned (default: the tier's)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_status)

    s = sub.add_parser("report", help="render reported vs reproduced tables to reports/<tier>/<id>.md|.tex|.png",
                       formatter_class=fmt,
                       epilog="examples:\n  pubench report\n  pubench report fig5-bcl --tier paper\n"
                              "  pubench report table1-bcl --format latex")
    s.add_argument("ids", nargs="*", help="ids (default: every table with results)")
    s.add_argument("--tier", action="append", choices=TIER_CHOICES)
    s.add_argument("--format", default="md", choices=["md", "latex"], help="what to print (both are written)")
    tex = s.add_mutually_exclusive_group()
    tex.add_argument("--standalone", dest="standalone", action="store_true", default=True,
                     help="the .tex is a whole document: `pdflatex <id>.tex` compiles it (default)")
    tex.add_argument("--snippet", dest="standalone", action="store_false",
                     help="the .tex is a snippet to \\input (needs booktabs and graphicx)")
    s.add_argument("--html", action="store_true", help="also write the static site (reports/site/index.html)")
    s.add_argument("--quiet", action="store_true", help="write the files, print nothing")
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("site", help="write a static HTML site of every table and figure (opens offline)",
                       formatter_class=fmt,
                       description="Write index.html (every table and figure: tiers, cells with results, claims, "
                                   "compute), one page per report (paper-shaped table with reported / ours / delta, "
                                   "claim checks, plot, deviations, decisions), one per spec (the reported table) and "
                                   "the cross-paper page, from the result store. No server, no network.",
                       epilog="examples:\n  pubench site\n  PUBENCH_RESULTS=/tmp/mine pubench site --out /tmp/mine-site")
    s.add_argument("--out", help="output folder (default: $PUBENCH_REPORTS/site, i.e. reports/site); replaced whole")
    s.set_defaults(fn=cmd_site)

    s = sub.add_parser("crossref", help="one method on one data set as several papers report it, beside ours",
                       formatter_class=fmt,
                       description="The cells of experiments/_crossref.yaml (a hand-reviewed mapping), each with the "
                                   "paper's number, ours (highest tier with results, or --tier) and how that paper ran "
                                   "it.",
                       epilog="examples:\n  pubench crossref\n  pubench crossref --method nnPU\n"
                              "  pubench crossref --check     # validate the mapping against the registry")
    s.add_argument("--method", help="only entries whose method contains this text (case-insensitive)")
    s.add_argument("--tier", choices=TIER_CHOICES, help="ours from this tier only (default: the highest with results)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--check", action="store_true", help="only validate the mapping")
    s.set_defaults(fn=cmd_crossref)

    _agreement_parser(sub, fmt)

    s = sub.add_parser(
        "verify", help="rerun a sample of a table's stored jobs into a scratch store and compare, bit for bit",
        formatter_class=fmt,
        description="Rerun a sample of the stored records of one table (each with its own recorded numerics) into "
                    "a scratch store, with the encoder cache off, and report each as identical, within the cell's "
                    "seed spread, or outside it. Exit status 1 when any rerun is outside, or not identical although "
                    "its record was made under the canonical numerics; stale and corrupt records fail too.",
        epilog="examples:\n  pubench verify table2-punce --tier reduced --sample 4\n"
               "  pubench verify fig5-bcl --tier paper --sample 0     # every record")
    s.add_argument("id")
    s.add_argument("--tier", default="reduced", choices=TIER_CHOICES)
    s.add_argument("--sample", type=_bounded_int("--sample", 0, 100000), default=4,
                   help="how many records to rerun (default 4; 0: all)")
    s.add_argument("--sample-seed", type=_bounded_int("--sample-seed", 0, 2**31 - 1), default=0,
                   help="which sample (default 0)")
    s.add_argument("--jobs", type=_bounded_int("--jobs", 1, 64), default=1, help="local worker processes")
    s.add_argument("--sigmas", type=_positive_float("--sigmas"), default=2.0,
                   help="'within spread' means |rerun - stored| <= sigmas x the cell's seed std (default 2)")
    s.add_argument("--no-progress", action="store_true",
                   help="no progress bars or progress lines (also none from inside the rerun jobs)")
    s.set_defaults(fn=cmd_verify)

    s = sub.add_parser("compare", help="compare this result store with a baseline store, cell by cell "
                       "(the nightly regression check)", formatter_class=fmt,
                       epilog="example (what .ci/nightly does):\n"
                              "  PUBENCH_RESULTS=/tmp/nightly pubench run table1-punce --tier reduced --seeds 1\n"
                              "  PUBENCH_RESULTS=/tmp/nightly pubench compare --baseline results --tier reduced")
    s.add_argument("ids", nargs="*")
    s.add_argument("--baseline", required=True, help="the result store to compare against (e.g. the committed results/)")
    s.add_argument("--tier", default="reduced", choices=TIER_CHOICES)
    s.add_argument("--sigmas", type=_positive_float("--sigmas"), default=3.0,
                   help="tolerance in standard errors of the difference of the two means, from the pooled seed "
                        "std (default 3)")
    s.add_argument("--rel-tol", type=_positive_float("--rel-tol"), default=0.0,
                   help="also flag a change larger than this fraction of the baseline mean (default 0: off)")
    s.add_argument("--abs-tol", type=_positive_float("--abs-tol"), default=None,
                   help="minimum tolerance in metric units, for every metric (default: per metric, half a unit of "
                        "the last digit the spec prints it with, e.g. 0.005 for '.2f')")
    s.add_argument("--only-flagged", action="store_true", help="list only the cells outside tolerance")
    s.set_defaults(fn=cmd_compare)
    return p


def main(argv: list[str] | None = None) -> int:
    import signal

    from pubench.errors import JobInterrupted

    from pubench.errors import StorageError, install_warning_format

    install_warning_format()
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except PubenchError as e:
        if os.environ.get("PUBENCH_DEBUG"):
            raise
        hint = "; finished work is kept: make room (or fix the folder) and run again" \
            if isinstance(e, StorageError) else ""
        print(f"pubench: error: {_one_line(e)}{hint}", file=sys.stderr)
        return e.exit_code
    except (KeyboardInterrupt, JobInterrupted) as e:  # verify, prepare, ...: `run` says more in _submit
        signum = getattr(e, "signum", 2)
        print(f"pubench: interrupted ({signal.Signals(signum).name}); finished jobs are saved, rerun to continue",
              file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:  # `pubench list | head`
        sys.stderr.close()
        return 0


def _one_line(e: BaseException) -> str:
    from pubench.errors import shorten

    return shorten(" ".join(str(e).split()) or type(e).__name__, 600)


if __name__ == "__main__":
    raise SystemExit(main())
