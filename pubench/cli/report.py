"""``pubench report | site``: render reported vs reproduced tables, and the static HTML site."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pubench import paths
from pubench.cli._common import FMT, TIER_CHOICES, UsageError, baselines_option, specs
from pubench.registry.spec import CUSTOM
from pubench.utils.io import check_writable


def report_parser(sub) -> None:
    s = sub.add_parser("report", help="render reported vs reproduced tables to reports/<tier>/<id>.md|.tex|.png",
                       formatter_class=FMT,
                       epilog="examples:\n  pubench report\n  pubench report fig5-bcl --tier paper\n"
                              "  pubench report table1-bcl --format latex")
    s.add_argument("ids", nargs="*", help="ids (default: every table with results)")
    s.add_argument("--tier", action="append", choices=(*TIER_CHOICES, CUSTOM),
                   help="only this tier (repeatable; default: every tier with results); custom: one report per "
                        "variant run with `pubench run --set`, reports/custom/<id>--<base tier>_<overrides>.md")
    s.add_argument("--format", default="md", choices=["md", "latex"],
                   help="what --print prints: md (default) or latex (both files are always written)")
    tex = s.add_mutually_exclusive_group()
    tex.add_argument("--standalone", dest="standalone", action="store_true", default=True,
                     help="the .tex is a whole document: `pdflatex <id>.tex` compiles it (default)")
    tex.add_argument("--snippet", dest="standalone", action="store_false",
                     help="the .tex is a snippet to \\input (needs booktabs and graphicx)")
    s.add_argument("--html", action="store_true", help="also write the static site (reports/site/index.html)")
    s.add_argument("--print", dest="print_report", action="store_true",
                   help="also print each report (markdown, or LaTeX with --format latex) on stdout; by default "
                        "`report` writes the files and prints only their paths (on stderr)")
    s.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)  # the default now; kept for old scripts
    baselines_option(s)
    s.set_defaults(fn=cmd_report)


def site_parser(sub) -> None:
    s = sub.add_parser("site", help="write a static HTML site of every table and figure (opens offline)",
                       formatter_class=FMT,
                       description="Write index.html (every table and figure: tiers, cells with results, claims, "
                                   "compute), one page per report (paper-shaped table with reported / ours / delta, "
                                   "claim checks, plot, deviations, decisions), one per spec (the reported table) and "
                                   "the cross-paper page, from the result store. No server, no network.",
                       epilog="examples:\n  pubench site\n  PUBENCH_RESULTS=/tmp/mine pubench site --out /tmp/mine-site")
    s.add_argument("--out", help="output folder (default: $PUBENCH_REPORTS/site, i.e. reports/site); replaced whole")
    baselines_option(s)
    s.set_defaults(fn=cmd_site)


def cmd_report(args) -> int:
    from pubench.registry import SpecError, load_all
    from pubench.report import write_index
    from pubench.report.collect import variants
    from pubench.store import ResultStore

    store = ResultStore(paths.results_root(), memo=True)  # each folder read once: report, index and site share it
    chosen = specs(args.ids or None)
    try:  # the registry, parsed once: the pooled spreads of every report and the index read it
        all_specs = chosen if not args.ids else load_all()
    except SpecError as e:  # an unrelated broken spec must not block the reports asked for
        all_specs, broken = None, e
    tiers = args.tier or [*TIER_CHOICES, CUSTOM]
    check_apart()
    check_writable(paths.reports_root(), "reports ($PUBENCH_REPORTS)")
    written = sum(_report(args, view, tier, store, chosen if all_specs is None else all_specs) for spec in chosen.values() for tier in tiers
                  for view in (variants(spec, store) if tier == CUSTOM else [spec]))
    if not written:
        raise UsageError("no results for " + (", ".join(chosen) if args.ids else "any table")
                         + f" at tier(s) {', '.join(tiers)}; {run_first_hint(list(chosen) if args.ids else [], tiers)}")
    if all_specs is None:  # the reports just written stay
        print(f"pubench: index not updated: {broken}", file=sys.stderr)
        return 0
    index = write_index(all_specs, store, paths.reports_root())
    print(f"pubench: index {index}", file=sys.stderr)
    if args.html:
        print(f"pubench: site {write_site(all_specs, store, paths.reports_root() / 'site')}", file=sys.stderr)
    return 0


def check_apart() -> None:
    """The reports of a store of one's own never overwrite the committed reports/ (tracked files,
    the index of the committed store): with $PUBENCH_RESULTS elsewhere, $PUBENCH_REPORTS must be too."""
    committed = paths.project_root() / "reports"
    if paths.results_root().resolve() != paths.committed_results().resolve() and \
            paths.reports_root().resolve() == committed.resolve():
        raise UsageError(f"the result store is {paths.results_root()} ($PUBENCH_RESULTS), not the committed one, "
                         f"and its reports would overwrite the committed {committed}: point $PUBENCH_REPORTS at a "
                         "folder of yours as well")


def _report(args, spec, tier: str, store, all_specs=None) -> bool:
    """Write (and print, with --print) the report of ``spec`` at ``tier``; False when there is nothing to report."""
    from pubench.report import render_latex, render_markdown, write_report
    from pubench.report.collect import scan_of

    scan = scan_of(spec, tier, store)
    if not scan.done and not (args.ids and args.tier and scan.failed):
        return False
    if scan.corrupt:
        print(f"pubench: warning: {spec.id} ({tier}): skipped {len(scan.corrupt)} corrupt record(s), e.g. "
              f"{scan.corrupt[0][0].name} ({scan.corrupt[0][1]}); `pubench run` moves them to quarantine "
              "and reruns their jobs", file=sys.stderr)
    res, out = write_report(spec, tier, store, paths.reports_root(), standalone=args.standalone, specs=all_specs)
    if args.print_report and not args.quiet:
        print(render_latex(res, standalone=args.standalone) if args.format == "latex" else render_markdown(res))
    print("pubench: wrote " + ", ".join(str(p) for p in out), file=sys.stderr)
    return True


def run_first_hint(ids: list[str], tiers: list[str]) -> str:
    """What to run first, naming the real id and tier (the first asked for; else a table that
    runs in a minute here)."""
    sid = ids[0] if ids else "fig5-bcl"
    if tiers == [CUSTOM]:
        return f"run a variant first: `pubench run {sid} --set key.path=value`"
    tier = tiers[0] if len(tiers) < len(TIER_CHOICES) else ("paper" if sid == "fig5-bcl" and not ids else "reduced")
    return f"run `pubench run {sid} --tier {tier}` first"


def write_site(specs, store, out: Path) -> Path:
    from pubench.coverage import figure_audit
    from pubench.report.crossref import load_crossref
    from pubench.report.site import write_site as write

    check_writable(out.parent, "site")
    return write(specs, store, out, load_crossref(specs), figure_audit(specs))


def cmd_site(args) -> int:
    from pubench.registry import load_all
    from pubench.store import ResultStore

    out = Path(args.out) if args.out else paths.reports_root() / "site"
    index = write_site(load_all(), ResultStore(paths.results_root(), memo=True), out)
    print(f"pubench: wrote the site; open {index.resolve().as_uri()}")
    return 0
