"""``pubench coverage``: what can run (cells, reported numbers, runnable cells per tier, what is missing)."""

from __future__ import annotations

import json

from pubench.cli._common import FMT, specs


def parser(sub) -> None:
    s = sub.add_parser("coverage", help="what can run: cells, reported numbers, runnable cells per tier, "
                       "missing methods and datasets", formatter_class=FMT,
                       epilog="examples:\n  pubench coverage\n  pubench coverage table1-punce --json")
    s.add_argument("ids", nargs="*", help="restrict to these ids")
    s.add_argument("--json", action="store_true", help="machine-readable")
    s.set_defaults(fn=cmd_coverage)


def cmd_coverage(args) -> int:
    from pubench.coverage import coverage, figure_audit, render_coverage

    chosen = specs(args.ids or None)
    cov = coverage(chosen, None if args.ids else figure_audit(chosen))
    print(json.dumps(cov, indent=1) if args.json else render_coverage(cov), end="" if not args.json else "\n")
    return 0
