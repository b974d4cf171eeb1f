"""Command line: ``pubench list | show | coverage | prepare | run | status | report``.

Each subcommand parses its arguments and calls library functions. Bad input exits with
status 2 and a one-line reason; failed jobs make ``run`` exit with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from pubench import paths

MALLOC_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "100000000000"}


class UsageError(Exception):
    """Bad input: printed as one line, exit status 2."""


def _spec(spec_id: str):
    from pubench.registry import get_spec

    return get_spec(spec_id)


def _specs(ids: list[str] | None):
    from pubench.registry import load_all

    if not ids:
        return load_all()
    return {i: _spec(i) for i in ids}  # only these files: a broken spec elsewhere does not block them


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


# ---- coverage / prepare --------------------------------------------------------------
def cmd_coverage(args) -> int:
    from pubench.coverage import coverage, render_coverage

    cov = coverage(_specs(args.ids or None))
    print(json.dumps(cov, indent=1) if args.json else render_coverage(cov), end="" if not args.json else "\n")
    return 0


def cmd_prepare(args) -> int:
    from pubench.data.prepare import prepare

    return prepare(names=args.datasets or None, source=Path(args.source) if args.source else None,
                   root=paths.data_root(), check_only=args.check)


# ---- run -----------------------------------------------------------------------------
def _reexec_with_malloc_env() -> None:
    """glibc's default allocator makes CPU training 2-10x slower here; glibc reads these
    variables only at start-up, so restart once with them set."""
    if os.environ.get("PUBENCH_NO_MALLOC_TUNING") or all(k in os.environ for k in MALLOC_ENV):
        return
    env = {**os.environ, **MALLOC_ENV}
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", "pubench", *sys.argv[1:]], env)


def cmd_run(args) -> int:
    from pubench.executors.slurm import active_job_ids
    from pubench.jobs import expand
    from pubench.store import ResultStore

    spec = _spec(args.id)
    if args.tier not in spec.tiers:
        raise UsageError(f"unknown tier {args.tier!r}")
    if args.executor == "local" and not args.dry_run:
        _reexec_with_malloc_env()
    plan = expand(spec, args.tier, args.seeds, args.only)
    tier = spec.tiers[args.tier]
    what = ("the paper's exact configuration" if args.tier == "paper" and not tier.deviations
            else "the paper's configuration with listed deviations" if args.tier == "paper"
            else "a reduced configuration" if args.tier == "reduced" else "a seconds-long pipeline check")
    print(f"pubench: {spec.id} at tier '{args.tier}' ({what}), {plan.seeds} seed(s)")
    for d in tier.deviations:
        print(f"  deviation: {d}")
    for r, c, why in plan.unavailable:
        print(f"  not runnable at this tier: {r}|{c}: {why}")
    plan.jobs = _drop_unimplemented(plan.jobs)
    store = ResultStore(paths.results_root())
    store.clean_temps(args.tier, spec.id)
    done = set() if args.force else store.done_ids(args.tier, spec.id)
    todo = [j for j in plan.jobs if j.id not in done]
    n_done = len(plan.jobs) - len(todo)
    if args.executor == "slurm" and not args.force:
        active = active_job_ids(paths.logs_root(), args.tier, spec.id)
        busy = [j for j in todo if j.id in active]
        if busy:
            print(f"  {len(busy)} job(s) still queued or running on SLURM: not submitted again")
        todo = [j for j in todo if j.id not in active]
    print(f"  {len(plan.jobs)} job(s): {n_done} already done, {len(todo)} to run")
    if args.executor == "slurm":
        return _run_slurm(args, spec, todo, store)
    if args.dry_run:
        for j in todo:
            print(f"  {j.id}  {j.name}")
        return 0
    if not todo:
        return 0
    from pubench.executors import LocalExecutor

    counts = LocalExecutor(store.root, n_jobs=args.jobs, progress=not args.no_progress,
                           threads=args.threads).run(todo, desc=spec.id)
    print(f"pubench: {counts['ok']} ok, {counts['failed']} failed"
          + (f" (failure records in {store.folder(args.tier, spec.id)}; rerun to retry)" if counts["failed"] else ""))
    return 1 if counts["failed"] else 0


def _split_unimplemented(jobs):
    """``(runnable jobs, {(row, col): missing units})``: a job naming a unit the code lacks
    could only fail, so it is neither run nor counted as pending."""
    from pubench.coverage import implemented, units

    have, keep, lacking = implemented(), [], {}
    for j in jobs:
        missing = sorted({f"{k}:{n}" for k, n in units(j.task, j.params) if n not in have[k]})
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


def _run_slurm(args, spec, todo, store) -> int:
    from pubench.executors import SlurmExecutor, load_profile

    profile = paths.slurm_profiles_root() / f"{args.profile}.yaml"
    params = {"name": f"pubench-{spec.id}", **load_profile(profile, args.tier), **spec.tiers[args.tier].slurm}
    ex = SlurmExecutor(store.root, paths.logs_root(), params, cluster=args.cluster)
    if args.dry_run:
        for j in todo:
            print(f"  {j.id}  {j.name}")
            print(f"      {json.dumps(j.params, sort_keys=True)}")
        print(ex.dry_run(todo, spec.id, args.tier))
        return 0
    if not todo:
        return 0
    manifest = ex.submit(todo, spec.id, args.tier)
    print(f"pubench: submitted {len(todo)} job(s); manifest {manifest}")
    print(f"  follow with `pubench status {spec.id} --tier {args.tier}`; collect with `pubench report {spec.id}`")
    return 0


# ---- status / report -----------------------------------------------------------------
def cmd_status(args) -> int:
    from tabulate import tabulate

    from pubench.executors.slurm import active_job_ids
    from pubench.jobs import expand
    from pubench.store import ResultStore

    store = ResultStore(paths.results_root())
    rows = []
    for sid, spec in _specs(args.ids or None).items():
        for tier in args.tier or spec.tiers:
            plan = expand(spec, tier, args.seeds)
            runnable, _ = _split_unimplemented(plan.jobs)
            ids = {j.id for j in runnable}
            done_ids = store.done_ids(tier, sid)
            done = len(ids & done_ids)
            failed = len((ids & store.failed_ids(tier, sid)) - done_ids)
            active = len(ids & set(active_job_ids(paths.logs_root(), tier, sid)) - done_ids)
            if args.ids or done or failed or active:
                rows.append([sid, tier, plan.seeds, len(ids), done, failed, active,
                             len(ids) - done - failed - active, len(plan.jobs) - len(ids), len(plan.unavailable)])
    keys = ["id", "tier", "seeds", "jobs", "done", "failed", "submitted", "pending", "not_implemented_jobs",
            "unavailable_cells"]
    if args.json:
        print(json.dumps([dict(zip(keys, r)) for r in rows], indent=1))
    else:
        print(tabulate(rows, headers=[k.replace("_", " ") for k in keys]) if rows else "no results yet")
    return 0


def cmd_report(args) -> int:
    from pubench.registry import SpecError, load_all
    from pubench.report import render_latex, render_markdown, write_index, write_report
    from pubench.store import ResultStore

    store = ResultStore(paths.results_root())
    specs = _specs(args.ids or None)
    tiers = args.tier or ["paper", "reduced", "smoke"]
    written = 0
    for sid, spec in specs.items():
        for tier in tiers:
            if not args.ids and not store.done_ids(tier, sid):
                continue
            if not store.done_ids(tier, sid) and not store.failed_ids(tier, sid) and not args.tier:
                continue
            res, out = write_report(spec, tier, store, paths.reports_root())
            written += 1
            if not args.quiet:
                print(render_latex(res) if args.format == "latex" else render_markdown(res))
            print("pubench: wrote " + ", ".join(str(p) for p in out), file=sys.stderr)
    try:
        index = write_index(load_all(), store, paths.reports_root())
    except SpecError as e:  # an unrelated broken spec must not lose the reports just written
        print(f"pubench: index not updated: {e}", file=sys.stderr)
        index = None
    if not written:
        print("pubench: no results for " + (", ".join(specs) if args.ids else "any table")
              + f" at tier(s) {', '.join(tiers)}; run `pubench run <id>` first", file=sys.stderr)
        return 1 if args.ids else 0
    print(f"pubench: index {index}", file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    from pubench.report.compare import compare_stores, render_diffs
    from pubench.store import ResultStore

    baseline = Path(args.baseline)
    if not baseline.is_dir():
        raise UsageError(f"baseline store {baseline} does not exist")
    diffs = compare_stores(_specs(args.ids or None), args.tier, ResultStore(baseline),
                           ResultStore(paths.results_root()), args.sigmas, args.abs_tol)
    print(render_diffs(diffs, only_flagged=args.only_flagged), end="")
    if not diffs:
        print("pubench: no cell has results in both stores", file=sys.stderr)
        return 1
    return 1 if any(d.flagged for d in diffs) else 0


# ---- parser --------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(
        prog="pubench", formatter_class=fmt,
        description="Rerun the tables of five PU / debiased contrastive learning papers and compare with "
                    "the reported numbers.",
        epilog="examples:\n  pubench list\n  pubench show table2-punce\n  pubench run fig5-bcl --seeds 5\n"
               "  pubench report fig5-bcl\n  pubench coverage",
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
                    "rerun (unless --force); failed ones are retried. Safe to interrupt and rerun.",
        epilog="examples:\n  pubench run fig5-bcl --tier paper --seeds 5\n"
               "  pubench run table1-punce --tier reduced --seeds 3 --jobs 2\n"
               "  pubench run table1-punce --tier paper --executor slurm --dry-run\n"
               "  pubench run table1-punce --only 'puNCE|*'")
    s.add_argument("id")
    s.add_argument("--tier", default="reduced", choices=["paper", "reduced", "smoke"],
                   help="paper: the paper's config; reduced: runs on a laptop CPU (default); smoke: seconds")
    s.add_argument("--seeds", type=int, help="number of seeds (default: the tier's, from the spec)")
    s.add_argument("--only", action="append", metavar="ROW|COL",
                   help="only cells matching this glob pattern (repeatable)")
    s.add_argument("--executor", default="local", choices=["local", "slurm"])
    s.add_argument("--jobs", type=int, default=1, help="local worker processes (default 1: in this process)")
    s.add_argument("--threads", type=int, help="torch threads per job (default: cores / jobs); use 1 when "
                   "other heavy processes share the machine: OpenMP threads waiting on a busy core are 10x slower")
    s.add_argument("--profile", default="default", help="SLURM profile slurm/<name>.yaml (default: default)")
    s.add_argument("--cluster", default="slurm", choices=["slurm", "local", "debug"],
                   help=argparse.SUPPRESS)  # submitit backends other than slurm, for tests
    s.add_argument("--dry-run", action="store_true", help="print the job plan (and sbatch parameters); run nothing")
    s.add_argument("--force", action="store_true", help="rerun jobs that are already done")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("status", help="done / failed / submitted / pending jobs per table and tier",
                       formatter_class=fmt, epilog="examples:\n  pubench status\n  pubench status fig5-bcl --tier paper")
    s.add_argument("ids", nargs="*")
    s.add_argument("--tier", action="append", choices=["paper", "reduced", "smoke"])
    s.add_argument("--seeds", type=int, help="seeds to count as planned (default: the tier's)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_status)

    s = sub.add_parser("report", help="render reported vs reproduced tables to reports/<tier>/<id>.md|.tex|.png",
                       formatter_class=fmt,
                       epilog="examples:\n  pubench report\n  pubench report fig5-bcl --tier paper\n"
                              "  pubench report table1-bcl --format latex")
    s.add_argument("ids", nargs="*", help="ids (default: every table with results)")
    s.add_argument("--tier", action="append", choices=["paper", "reduced", "smoke"])
    s.add_argument("--format", default="md", choices=["md", "latex"], help="what to print (both are written)")
    s.add_argument("--quiet", action="store_true", help="write the files, print nothing")
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("compare", help="compare this result store with a baseline store, cell by cell "
                       "(the nightly regression check)", formatter_class=fmt,
                       epilog="example (what .ci/nightly does):\n"
                              "  PUBENCH_RESULTS=/tmp/nightly pubench run table1-punce --tier reduced --seeds 1\n"
                              "  PUBENCH_RESULTS=/tmp/nightly pubench compare --baseline results --tier reduced")
    s.add_argument("ids", nargs="*")
    s.add_argument("--baseline", required=True, help="the result store to compare against (e.g. the committed results/)")
    s.add_argument("--tier", default="reduced", choices=["paper", "reduced", "smoke"])
    s.add_argument("--sigmas", type=float, default=3.0, help="tolerance in pooled seed stds (default 3)")
    s.add_argument("--abs-tol", type=float, default=0.5, help="minimum tolerance in metric units (default 0.5)")
    s.add_argument("--only-flagged", action="store_true")
    s.set_defaults(fn=cmd_compare)
    return p


def main(argv: list[str] | None = None) -> int:
    from pubench.executors.slurm import ProfileError
    from pubench.registry import SpecError, UnknownSpec
    from pubench.utils.registry import UnknownName

    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (UsageError, SpecError, UnknownSpec, UnknownName, ProfileError, ValueError, FileNotFoundError) as e:
        if os.environ.get("PUBENCH_DEBUG"):
            raise
        print(f"pubench: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pubench: interrupted; finished jobs are saved, rerun to continue", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
