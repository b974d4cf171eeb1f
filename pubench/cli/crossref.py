"""``pubench crossref``: one method on one data set as several papers report it, beside ours."""

from __future__ import annotations

import json

from pubench import paths
from pubench.cli._common import FMT, TIER_CHOICES, UsageError


def parser(sub) -> None:
    s = sub.add_parser("crossref", help="one method on one data set as several papers report it, beside ours",
                       formatter_class=FMT,
                       description="The cells of experiments/_crossref.yaml (a hand-reviewed mapping), each with the "
                                   "paper's number, ours (highest tier with results, or --tier) and how that paper ran "
                                   "it.",
                       epilog="examples:\n  pubench crossref\n  pubench crossref --method nnPU\n"
                              "  pubench crossref --check     # validate the mapping against the registry")
    s.add_argument("--method", help="only entries whose method contains this text (case-insensitive)")
    s.add_argument("--tier", choices=TIER_CHOICES, help="ours from this tier only (default: the highest with results)")
    s.add_argument("--json", action="store_true", help="machine-readable")
    s.add_argument("--check", action="store_true", help="only validate the mapping")
    s.set_defaults(fn=cmd_crossref)


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
