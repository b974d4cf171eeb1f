"""``pubench verify``: rerun a sample of a table's stored jobs into a scratch store and compare, bit for bit."""

from __future__ import annotations

import sys

from pubench import paths
from pubench.cli._common import (
    DEFAULT_TIER,
    FMT,
    TIER_CHOICES,
    UsageError,
    bounded_int,
    ensure_process_env,
    positive_float,
    quiet_jobs_when_asked,
    spec,
)
from pubench.registry.spec import CUSTOM


def parser(sub) -> None:
    s = sub.add_parser(
        "verify", help="rerun a sample of a table's stored jobs into a scratch store and compare, bit for bit",
        formatter_class=FMT,
        description="Rerun a sample of the stored records of one table (each with its own recorded numerics) into "
                    "a scratch store, with the encoder cache off, and report each as identical, within the cell's "
                    "seed spread, or outside it. Exit status 1 when any rerun is outside, or not identical although "
                    "its record was made under the canonical numerics; stale and corrupt records fail too. A record "
                    "made on another CPU (or GPU) model is rerun and shown, not judged: bit for bit is promised on "
                    "the record's own machine model only.",
        epilog="examples:\n  pubench verify table2-punce --tier reduced --sample 4\n"
               "  pubench verify fig5-bcl --tier paper --sample 0     # every record\n"
               "  pubench verify table1-punce --only 'CIFAR*|*' --seeds-from 3 --sample 2   # seeds a run added\n"
               "  pubench verify table2-wconpu --tier custom --sample 1        # a --set variant's records")
    s.add_argument("id", help="table or figure id, e.g. table2-punce")
    s.add_argument("--tier", default=DEFAULT_TIER, choices=[*TIER_CHOICES, CUSTOM],
                   help=f"default: {DEFAULT_TIER}; custom: the variants (`run --set`) and added rows (`run --add-row`), "
                        "each rerun with its own config")
    s.add_argument("--sample", type=bounded_int("--sample", 0, 100000), default=4,
                   help="how many records to rerun (default 4; 0: all)")
    s.add_argument("--sample-seed", type=bounded_int("--sample-seed", 0, 2**31 - 1), default=0,
                   help="which sample (default 0)")
    s.add_argument("--only", action="append", metavar="'ROW|COL'",
                   help="sample only the records of cells matching this glob (repeatable), e.g. the cells a run "
                        "just added seeds to")
    s.add_argument("--seeds-from", type=bounded_int("--seeds-from", 0, 100000), default=0, metavar="K",
                   help="sample only records of seed index K and above (e.g. the seeds a pre-registered run added)")
    s.add_argument("--jobs", type=bounded_int("--jobs", 1, 64), default=1, help="local worker processes")
    s.add_argument("--sigmas", type=positive_float("--sigmas"), default=2.0,
                   help="'within spread' means |rerun - stored| <= sigmas x the cell's seed std (default 2)")
    s.add_argument("--no-progress", action="store_true",
                   help="no progress bars or progress lines (also none from inside the rerun jobs)")
    s.set_defaults(fn=cmd_verify)


@quiet_jobs_when_asked
def cmd_verify(args) -> int:
    from pubench import numerics
    from pubench.verify import render_verification, verify

    ensure_process_env(numerics.resolve(isa="avx2"))
    one = spec(args.id)
    if args.tier not in one.tiers and args.tier != CUSTOM:
        raise UsageError(f"unknown tier {args.tier!r}")
    from pubench.store import ResultStore

    if not ResultStore(paths.results_root()).scan(args.tier, one.id).records:
        raise UsageError(f"no records of {one.id} at tier {args.tier} in {paths.results_root()} to verify")
    result = verify(one, args.tier, sample=args.sample, n_jobs=args.jobs, sample_seed=args.sample_seed,
                    progress=not args.no_progress and sys.stderr.isatty(), sigmas=args.sigmas,
                    only=args.only, seeds_from=args.seeds_from)
    print(render_verification(result), end="")
    return 0 if result.passed else 1
