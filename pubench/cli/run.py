"""``pubench run``: run (or submit) the jobs of one table or figure. The flags become a
:class:`pubench.runner.RunRequest`; :func:`pubench.runner.run` does the rest."""

from __future__ import annotations

import argparse
import sys

from pubench.cli._common import (
    DEFAULT_TIER,
    FMT,
    added_row_options,
    added_rows,
    baselines_option,
    TIER_CHOICES,
    bounded_int,
    ensure_process_env,
    local_numerics,
    numerics_options,
    quiet_jobs_when_asked,
)


def parser(sub) -> None:
    from pubench.registry.units import known

    s = sub.add_parser(
        "run", help="run (or submit) the jobs of one table or figure", formatter_class=FMT,
        description="Expand a spec into (cell, seed) jobs and run those not yet done. Finished jobs are never "
                    "rerun (unless --force); failed ones are retried. Safe to interrupt and rerun, and to start "
                    "twice: a job is claimed before it runs, and jobs hold machine-wide core slots.",
        epilog="examples:\n  pubench run fig5-bcl --tier paper --seeds 5\n"
               "  pubench run table1-punce --tier reduced --seeds 3 --jobs 2\n"
               "  pubench run table1-punce --tier paper --executor slurm --dry-run\n"
               "  pubench run table1-punce --tier paper --device cuda --dry-run --jobs-list\n"
               "  pubench run table1-punce --only '*|puNCE'\n"
               "  pubench run fig5-bcl --tier smoke --set data.M=100   # a variant, tier 'custom'\n"
               "  pubench run table2-punce --tier reduced --add-row 'uPU again=pu_method: {name: upu, loss: sigmoid}' "
               "--like 'MLP nnPU' --only '*|n_P=1k'   # your row beside the paper's")
    s.add_argument("id", help="table or figure id, e.g. table1-punce")
    s.add_argument("--tier", default=DEFAULT_TIER, choices=TIER_CHOICES,
                   help="paper: the paper's config; reduced: runs on a laptop CPU (default); smoke: seconds")
    s.add_argument("--seeds", type=bounded_int("--seeds", 1, 1000),
                   help="number of seeds (default: the tier's, from the spec, more where its more_seeds entries say "
                        "so); records of seeds beyond those the spec registers are listed apart by reports and read "
                        "by no claim or verdict until a more_seeds entry registers them")
    s.add_argument("--only", action="append", metavar="ROW|COL",
                   help="only cells matching this glob pattern (repeatable)")
    s.add_argument("--set", dest="overrides", action="append", metavar="KEY.PATH=VALUE",
                   help="run a variant: set this key of every selected cell's config at --tier (repeatable; the "
                        "value is YAML; KEY=~ deletes). The jobs go to the tier 'custom' (results/custom/<id>/) with "
                        "ids that differ from every tier's; `pubench expand ID --set ...` shows the configs")
    added_row_options(s)
    baselines_option(s)
    s.add_argument("--executor", default="local", choices=sorted(known("executor")),  # the registered executors
                   help="where the jobs run: local (this machine, default) or slurm (a job array through submitit)")
    s.add_argument("--jobs", type=bounded_int("--jobs", 1, 64), default=1,
                   help="local worker processes (default 1: in this process)")
    numerics_options(s)
    s.add_argument("--profile", default="default", help="SLURM profile slurm/<name>.yaml (default: default)")
    s.add_argument("--cluster", default="slurm", choices=["slurm", "local", "debug"],
                   help=argparse.SUPPRESS)  # submitit backends other than slurm, for tests
    s.add_argument("--dry-run", action="store_true",
                   help="print the job plan's summary (and the sbatch parameters) and an estimate of its GPU-hours "
                        "and wall time; run nothing")
    s.add_argument("--jobs-list", action="store_true",
                   help="with --dry-run: list every job (SLURM: with its config), not a summary")
    s.add_argument("--force", action="store_true", help="rerun jobs that are already done")
    s.add_argument("--allow-dirty", action="store_true",
                   help="write into the committed store from a tree with uncommitted code/spec changes "
                        "(records and reports are marked)")
    s.add_argument("--checkpoint-every", type=bounded_int("--checkpoint-every", 0, 100000), metavar="EPOCHS",
                   help="write a job's training checkpoint every EPOCHS epochs (default: the SLURM profile's "
                        "checkpoint_every_epochs, else 10; 0: only at the end of each training stage and on a stop "
                        "signal). Numbers and job ids do not depend on it")
    s.add_argument("--no-progress", action="store_true",
                   help="no progress bar, no per-job log lines and no epoch progress inside jobs")
    s.set_defaults(fn=cmd_run)


@quiet_jobs_when_asked
def cmd_run(args) -> int:
    from pubench.errors import UsageError
    from pubench.executors import EXECUTORS
    from pubench.runner import RunRequest, run

    if args.jobs_list and not args.dry_run:
        raise UsageError("--jobs-list goes with --dry-run (it lists the jobs a run would start)")
    if EXECUTORS.get(args.executor).runs_here and not args.dry_run:
        ensure_process_env(local_numerics(args))  # before anything loads torch or numpy
    terminal = sys.stderr.isatty()
    return run(RunRequest(
        spec_id=args.id, tier=args.tier, seeds=args.seeds, only=args.only, executor=args.executor, jobs=args.jobs,
        device=args.device, threads=args.threads, isa=args.numerics, fast=args.fast_numerics, profile=args.profile,
        cluster=args.cluster,
        dry_run=args.dry_run, force=args.force, allow_dirty=args.allow_dirty, checkpoint_every=args.checkpoint_every,
        progress=not args.no_progress and terminal, log_lines=not args.no_progress and not terminal,
        overrides=args.overrides, jobs_list=args.jobs_list, added=added_rows(args)))
