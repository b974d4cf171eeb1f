"""``pubench cancel``: cancel the SLURM submissions of one table or figure."""

from __future__ import annotations

from pubench import paths
from pubench.cli._common import FMT, TIER_CHOICES, UsageError, spec


def parser(sub) -> None:
    s = sub.add_parser(
        "cancel", help="cancel the SLURM submissions of one table or figure (scancel its arrays, release claims)",
        formatter_class=FMT,
        description="Read the submission manifests `pubench run --executor slurm` wrote ($PUBENCH_LOGS/<tier>/<id>/"
                    "manifest-*.json), scancel their job arrays, mark the manifests cancelled and release the claims "
                    "their jobs left. Finished records are kept; a job stopped while training is recorded as "
                    "interrupted with its checkpoint, and `pubench run` resubmits what is not done.",
        epilog="examples:\n  pubench cancel table1-punce --tier paper\n  pubench cancel fig5-bcl")
    s.add_argument("id", help="table or figure id, e.g. table1-punce")
    s.add_argument("--tier", action="append", choices=TIER_CHOICES,
                   help="only the submissions of this tier (repeatable; default: every tier)")
    s.set_defaults(fn=cmd_cancel)


def cmd_cancel(args) -> int:
    from pubench.executors.slurm import cancel_submissions

    one = spec(args.id)
    tiers = args.tier or list(one.tiers)
    done = {t: cancel_submissions(paths.logs_root(), paths.results_root(), t, one.id) for t in tiers}
    done = {t: d for t, d in done.items() if d["manifests"]}
    if not done:
        raise UsageError(f"no SLURM submission of {one.id} to cancel at tier(s) {', '.join(tiers)} (no live "
                         f"manifest under {', '.join(str(paths.logs_root() / t / one.id) for t in tiers)})")
    for tier, d in done.items():
        print(f"pubench: {one.id} ({tier}): scancel {' '.join(d['arrays'])} ({d['jobs']} job(s) in "
              f"{len(d['manifests'])} submission(s)); released {d['released']} claim(s)")
        if d["scancel_error"]:
            print(f"  scancel said: {d['scancel_error']}")
    print(f"  finished records are kept; `pubench run {one.id} --tier {next(iter(done))} --executor slurm` "
          "resubmits the jobs not done")
    return 0
