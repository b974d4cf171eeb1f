"""``pubench agreement``: how often our means order the paper's pairs of methods as the paper does."""

from __future__ import annotations

import json

from pubench import paths
from pubench.cli._common import FMT, TIER_CHOICES, UsageError, specs


def parser(sub) -> None:
    s = sub.add_parser("agreement", help="how often our means order the paper's pairs of methods as the paper does",
                       formatter_class=FMT,
                       description="Per table and tier: of the paper's pairs of methods (two rows of one row group in "
                                   "one column, per metric; two columns of a row where methods are columns) with both "
                                   "numbers printed and ours present, the share our means order as the paper, split by "
                                   "the paper's gap (< 1, 1-2, >= 2 in the metric's units) and by whether our test of "
                                   "the pair is significant (p < 0.05); then every table pooled per tier.",
                       epilog="examples:\n  pubench agreement\n  pubench agreement table2-punce --tier reduced\n"
                              "  pubench agreement --json")
    s.add_argument("ids", nargs="*", help="tables or figures (default: all)")
    s.add_argument("--tier", choices=TIER_CHOICES, help="only this tier (default: every tier with results)")
    s.add_argument("--json", action="store_true", help="machine-readable")
    s.set_defaults(fn=cmd_agreement)


def cmd_agreement(args) -> int:
    from pubench.cli.report import run_first_hint
    from pubench.report.agreement import agreements_json, render_agreements, table_agreements
    from pubench.store import ResultStore

    tiers = [args.tier] if args.tier else list(TIER_CHOICES)
    ags = table_agreements(specs(args.ids or None), ResultStore(paths.results_root()), tiers)
    if not ags:
        raise UsageError("no results for " + (", ".join(args.ids) if args.ids else "any table")
                         + f" at tier(s) {', '.join(tiers)}; {run_first_hint(args.ids, tiers)}")
    print(json.dumps(agreements_json(ags), indent=1) if args.json else render_agreements(ags).rstrip("\n"))
    return 0
