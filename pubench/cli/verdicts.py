"""``pubench verdicts``: per paper, its main claims, the best evidence at each tier and what settling
each open one would cost, generated from the store."""

from __future__ import annotations

from pathlib import Path

from pubench import paths
from pubench.cli._common import FMT, UsageError


def parser(sub) -> None:
    s = sub.add_parser("verdicts", help="per paper: its main claims, the evidence per tier, the cost of settling "
                                        "each open one",
                       formatter_class=FMT,
                       description="For each paper (or the ones named), the claims of its main tables "
                                   "(experiments/_verdicts.yaml): the qualified outcome at each tier with records, the "
                                   "deciding pair's difference, p and MDD, the verdict (holds / fails where "
                                   "significant at the highest tier tested, else open) and what settling an open "
                                   "claim would cost (seeds at the observed spread x the median wall time of its "
                                   "cells' records). Writes <reports>/verdicts/<paper>.md; --status FILE also writes "
                                   "the one-page summary (docs/status.md is that file).",
                       epilog="examples:\n  pubench verdicts\n  pubench verdicts punce --print\n"
                              "  pubench verdicts --status docs/status.md")
    s.add_argument("papers", nargs="*", help="paper ids (default: all five)")
    s.add_argument("--print", action="store_true", help="print the pages instead of writing them")
    s.add_argument("--status", metavar="FILE", help="also write the one-page summary of every paper to FILE")
    s.set_defaults(fn=cmd_verdicts)


def cmd_verdicts(args) -> int:
    from pubench.registry import load_all
    from pubench.report.verdicts import main_tables, paper_titles, render_pages
    from pubench.store import ResultStore
    from pubench.utils.io import atomic_write_text

    tables = main_tables(paths.experiments_root())
    unknown = [p for p in args.papers if p not in tables]
    if unknown:
        raise UsageError(f"unknown paper(s) {', '.join(unknown)} (one of {', '.join(tables)})")
    if args.status and args.papers:
        raise UsageError("--status summarizes every paper: name no paper with it")
    pages, status = render_pages(load_all(), ResultStore(paths.results_root(), memo=True), tables,
                                 args.papers or list(tables), paper_titles(paths.experiments_root()))
    if args.print:
        print("\n".join(pages.values()).rstrip("\n"))
        return 0
    folder = paths.reports_root() / "verdicts"
    for paper, text in pages.items():
        print(f"pubench: wrote {atomic_write_text(folder / f'{paper}.md', text)}")
    if args.status:
        print(f"pubench: wrote {atomic_write_text(Path(args.status), status)}")
    return 0
