"""``pubench compare``: this result store against a baseline store, cell by cell (the nightly check)."""

from __future__ import annotations

from pathlib import Path

from pubench import paths
from pubench.cli._common import DEFAULT_TIER, FMT, TIER_CHOICES, UsageError, positive_float, specs


def parser(sub) -> None:
    s = sub.add_parser("compare", help="compare this result store with a baseline store, cell by cell "
                       "(the nightly regression check)", formatter_class=FMT,
                       epilog="example (what .ci/nightly does):\n"
                              "  PUBENCH_RESULTS=/tmp/nightly pubench run table1-punce --tier reduced --seeds 1\n"
                              "  PUBENCH_RESULTS=/tmp/nightly pubench compare --baseline results --tier reduced")
    s.add_argument("ids", nargs="*", help="table or figure ids (default: every one)")
    s.add_argument("--baseline", required=True, help="the result store to compare against (e.g. the committed results/)")
    s.add_argument("--tier", default=DEFAULT_TIER, choices=TIER_CHOICES, help=f"default: {DEFAULT_TIER}")
    s.add_argument("--sigmas", type=positive_float("--sigmas"), default=3.0,
                   help="tolerance in standard errors of the difference of the two means, from the pooled seed "
                        "std (default 3)")
    s.add_argument("--rel-tol", type=positive_float("--rel-tol"), default=0.0,
                   help="also flag a change larger than this fraction of the baseline mean (default 0: off)")
    s.add_argument("--abs-tol", type=positive_float("--abs-tol"), default=None,
                   help="minimum tolerance in metric units, for every metric (default: per metric, half a unit of "
                        "the last digit the spec prints it with, e.g. 0.005 for '.2f')")
    s.add_argument("--only-flagged", action="store_true", help="list only the cells outside tolerance")
    s.set_defaults(fn=cmd_compare)


def cmd_compare(args) -> int:
    from pubench.report.compare import compare_stores, render_diffs
    from pubench.store import ResultStore

    baseline = Path(args.baseline)
    if not baseline.is_dir():
        raise UsageError(f"baseline store {baseline} does not exist")
    diffs = compare_stores(specs(args.ids or None), args.tier, ResultStore(baseline),
                           ResultStore(paths.results_root()), args.sigmas, args.abs_tol, args.rel_tol)
    print(render_diffs(diffs, only_flagged=args.only_flagged), end="")
    if not diffs:
        raise UsageError("no cell has results in both stores")
    return 1 if any(d.flagged for d in diffs) else 0
