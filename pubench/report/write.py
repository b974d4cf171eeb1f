"""Write ``reports/<tier>/<id>.md|.tex|.png`` (a variant run with ``--set``:
``reports/custom/<id>--<variant>.*``) and the index ``reports/README.md``."""

from __future__ import annotations

import functools
from pathlib import Path

from tabulate import tabulate

from pubench.registry.spec import CUSTOM, TIERS, Spec
from pubench.report.agreement import agreement
from pubench.report.checks import NOT_IN_REGIME, REGIME_UNKNOWN, UNDERPOWERED, claim_checks
from pubench.report.regime import RULE_REVISION
from pubench.report.collect import TableResult, collect, variants
from pubench.report.compute import fmt_hours
from pubench.report.evidence import regime_summary
from pubench.report.latex import render_latex
from pubench.report.layout import report_stem
from pubench.report.markdown import render_markdown
from pubench.report.plot import render_plot
from pubench.report.pooled import pooled_spreads
from pubench.report.stats import FAILS, HOLDS, HOLDS_NS, NOT_TESTABLE, TIE
from pubench.store.store import ResultStore
from pubench.utils.io import atomic_write, write_text_if_changed


def write_report(spec: Spec, tier: str, store: ResultStore, reports_root: Path,
                 standalone: bool = True, specs: dict[str, Spec] | None = None) -> tuple[TableResult, list[Path]]:
    """``<id>.md``, ``<id>.tex`` (a whole document unless ``standalone`` is false: then a
    snippet to ``\\input``) and, for a figure, ``<id>.png``, which both embed. ``specs``: the
    registry, when the caller has it (the pooled spreads read every spec)."""
    res = collect(spec, tier, store)
    res.pooled = pooled_spreads(res, store, specs=specs)
    folder, stem = Path(reports_root) / tier, report_stem(spec)
    plot = f"{stem}.png" if spec.kind == "figure" else None  # beside the .md and the .tex, which embed it
    paths = [
        write_text_if_changed(folder / f"{stem}.md", render_markdown(res, plot=plot)),
        write_text_if_changed(folder / f"{stem}.tex", render_latex(res, standalone=standalone, plot=plot)),
    ]
    if plot:
        paths.append(_plot(res, folder / plot))
    return res, paths


@functools.lru_cache(maxsize=1)
def _matplotlib_version() -> str:
    """Read once per process: importlib.metadata parses the package's METADATA on every call."""
    from importlib import metadata

    try:
        return metadata.version("matplotlib")
    except metadata.PackageNotFoundError:
        return "none"


def _plot(res: TableResult, path: Path) -> Path:
    """:func:`render_plot`, or the same PNG bytes from the cache when the plot's inputs (the
    spec, the tier, each cell's mean and std) and its code are those of an earlier call:
    matplotlib takes most of a report's time and draws the same bytes for the same inputs."""
    import json

    from pubench.registry import cache

    here = Path(__file__).resolve().parent
    mpl = _matplotlib_version()
    stats = sorted((k, s.mean, s.std) for k, s in res.stats.items())
    curves = sorted((k, sorted(c.by_seed.items())) for k, c in res.curves.items())
    key = cache.key_of(cache.files_fingerprint([here / "plot.py", here / "layout.py"], salt="plot"), mpl, res.tier,
                       json.dumps(res.spec.raw, sort_keys=True, default=str), repr(stats), repr(curves))
    png = cache.get("plots", key, bytes)
    if png is not None:
        if path.is_file() and path.read_bytes() == png:
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write(path, lambda f: f.write(png), binary=True)
    out = render_plot(res, path)
    cache.put("plots", key, out.read_bytes())
    return out


CLAIM_COLUMNS = {HOLDS: "holds", HOLDS_NS: "holds, n.s.", TIE: "tie", FAILS: "fails", UNDERPOWERED: "underpowered",
                 NOT_IN_REGIME: "not in regime", REGIME_UNKNOWN: "regime unknown",
                 NOT_TESTABLE: "not testable"}


def _index_row(res: TableResult, by_rule: dict | None = None) -> list:
    spec, tier, stem = res.spec, res.tier, report_stem(res.spec)
    counted = [c for c in claim_checks(res) if c.counted]
    statuses = [c.status for c in counted]
    if by_rule is not None and spec.variant is None and tier != CUSTOM:
        for c in counted:
            by_rule.setdefault(tier, {"current": [], "first": []})
            by_rule[tier]["current"].append(c.status)
            by_rule[tier]["first"].append(c.first_rule_status)
    title = spec.title + (f" (variant: {spec.variant_label})" if spec.variant is not None else "")
    return ([tier, f"[{stem}]({tier}/{stem}.md)", title, f"{res.cells_done}/{len(spec.cells())}", len(statuses)]
            + [statuses.count(o) for o in CLAIM_COLUMNS]
            + ["; ".join(regime_summary(res)) or "—", agreement(res).overall.text(),
               fmt_hours(res.compute_all.core_h) + (f" (+{fmt_hours(res.compute_all.gpu_h)} GPU-h)"
                                                    if res.compute_all.gpu_s else "")])


def write_index(specs: dict[str, Spec], store: ResultStore, reports_root: Path) -> Path:
    """One line per (tier, spec) that has a report file, with its claims counted by outcome."""
    rows, by_rule = [], {}
    for tier in (*TIERS, CUSTOM):
        for base_spec in specs.values():
            for spec in variants(base_spec, store) if tier == CUSTOM else [base_spec]:
                if (Path(reports_root) / tier / f"{report_stem(spec)}.md").exists():
                    rows.append(_index_row(collect(spec, tier, store), by_rule))
    rule_rows = [[tier, rule_name, len(statuses)] + [statuses.count(o) for o in CLAIM_COLUMNS]
                 for tier, rules in by_rule.items() for rule_name, statuses in
                 (("current (2026-12-07)", rules["current"]), ("as first registered", rules["first"]))]
    text = "\n".join([
        "# pubench reports", "",
        "Generated by `pubench report` from the result store (`results/`); do not edit by hand.",
        "Each report puts the paper's numbers, the reproduced numbers and their deltas side by side,",
        "and says which tier produced them (`paper`: the paper's config; `reduced`: a smaller config",
        "runnable on 2 CPU cores, deviations listed; `smoke`: seconds, a pipeline check only;",
        "`custom`: a variant run with `pubench run --set`, named by its base tier and overrides).",
        "Claims: how many of the spec's claims hold on our seeds at 5% (one-sided t-tests, a claim as",
        "strong as its weakest pair; see each report), hold without significance, tie, fail, or cannot",
        "be tested (fewer than 2 seeds, or no results); underpowered: fails only where the paper's gap is below what",
        "our seeds can detect; not in regime: a pair lies in a block whose reference rows do not work at this tier;",
        "regime unknown: a pair lies in a block whose regime is not established (short of power, or not testable)",
        "(see each report's Regime section; regime: per declared block, its columns in regime at this tier). Paper's",
        "order: of the paper's pairs of methods with both numbers, the share our means order the same way",
        "(`pubench agreement`). CPU core-h: wall time x threads per job over",
        "every record of the tier in the store (failed and stale ones included). The same reports as a site:",
        "`pubench site`.",
        "",
        tabulate(rows, headers=["tier", "report", "title", "cells with results", "claims", *CLAIM_COLUMNS.values(),
                                "regime", "paper's order kept", "CPU core-h"],
                 tablefmt="github", disable_numparse=True) if rows else "(no reports yet)", "",
        *(["## The regime rule's revision: claims before and after", "",
           "The " + RULE_REVISION + " (experiments/_verdicts.yaml, `rule_revisions`). The claims of the reports "
           "above, counted by outcome under each rule (the tiers' own reports; variants aside):", "",
           tabulate(rule_rows, headers=["tier", "regime rule", "claims", *CLAIM_COLUMNS.values()],
                    tablefmt="github", disable_numparse=True), ""] if rule_rows else []),
    ])
    return write_text_if_changed(Path(reports_root) / "README.md", text)
