"""HTML pages of the static site (:mod:`pubench.report.site` writes them): what each page
shows, collected from a report; the templates (``report.html.j2``, ``spec.html.j2``,
``index.html.j2``, ``crossref.html.j2`` in ``pubench/report/templates/``, see
:mod:`pubench.report.templating`) lay it out.

Self-contained pages: inline CSS, no script, no font or stylesheet from elsewhere, links
relative to the page, so the site opens from disk, offline. Every text from a spec or a
record is escaped (jinja2's autoescaping). A cell shows our mean ± std (n), the paper's
number and the delta, coloured at the paper tier by the delta's sign (better / worse than
reported, in the metric's direction) and its significance (a one-sample t-test of our seeds
against the printed mean, :func:`pubench.report.stats.delta_test`). At the reduced tier, whose
numbers are on another scale than the paper's (the pages tell readers to read rankings there),
a cell is coloured by its ordering against the other rows of its block as the paper orders
them (:func:`rank_class`), not by its gap to the paper's number.
"""

from __future__ import annotations

import re

from html import escape
from typing import Any

from markupsafe import Markup

from pubench.registry.spec import PAPERS, ReportedCell, Spec
from pubench.report.added import HEADERS as ADDED_HEADERS
from pubench.report.added import LEGEND as ADDED_LEGEND
from pubench.report.added import added_rows_table
from pubench.report.agreement import HEADERS as AGREEMENT_HEADERS
from pubench.report.agreement import agreement
from pubench.report.checks import NOT_IN_REGIME, REGIME_UNKNOWN, UNDERPOWERED, claim_checks, claim_fmt, column_checks, describe
from pubench.report.collect import TableResult, unregistered_line
from pubench.report.compute import describe as describe_compute
from pubench.report.evidence import (AGREEMENT_LEGEND, CLAIM_STATUS_LEGEND, REGIME_HEADERS, REGIME_LEGEND, claim_row, claim_title,
                                     regime_revisions, regime_rows, regime_whys)
from pubench.report.layout import (
    CURVES_HEADERS,
    DASH,
    DEGENERATE_LEGEND,
    SMOKE_TEXT,
    blocks,
    cell_marks,
    coinciding_text,
    column_chunks,
    curve_summary,
    degenerate_summary, one_class_whys,
    fmt_ours,
    fmt_reported,
    plot_alt,
    reported_table,
    tier_line,
)
from pubench.report.regime import IN, OUT, POWER
from pubench.report.stats import (
    ALPHA,
    FAILS,
    HOLDS,
    HOLDS_NS,
    NOT_TESTABLE,
    SAME,
    TIE,
    delta_test,
    fmt_p,
)
from pubench.report.pooled import POOLED_HEADERS, POOLED_LEGEND, pooled_rows
from pubench.report.templating import html_env

OUTCOME_CLASS = {HOLDS: "o-holds", HOLDS_NS: "o-holds-ns", TIE: "o-tie", FAILS: "o-fails",
                 NOT_TESTABLE: "o-not-testable", NOT_IN_REGIME: "o-not-in-regime", UNDERPOWERED: "o-underpowered",
                 REGIME_UNKNOWN: "o-underpowered",
                 IN: "o-holds-ns", OUT: "o-not-in-regime", POWER: "o-underpowered"}


def e(text: object) -> str:
    return escape(str(text), quote=True)


def outcome_class(outcome: str) -> str:
    """The badge class of an outcome or verdict; an outcome with what it rests on after it (``not in
    regime (a finding: ...)``) takes its leading outcome's."""
    if outcome in OUTCOME_CLASS:
        return OUTCOME_CLASS[outcome]
    lead = max((k for k in OUTCOME_CLASS if outcome.startswith(k + " ")), key=len, default=None)
    return OUTCOME_CLASS[lead] if lead else "o-not-testable"


def render(template: str, **context: Any) -> str:
    """A whole page from ``template`` (context: ``title``, ``nav`` as (href, label) pairs relative
    to the page, ``footer`` (markup), and the page kind's own), without the project's issue
    numbers and commit hashes (:func:`plain_refs`)."""
    return plain_refs(html_env().get_template(template).render(**context))


_ITEM = r"(?:,? items? [\d.]+(?: and [\d.]+)?)?"
_ISSUE = rf"issues? \d+{_ITEM}"
_HASH = r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
#: (pattern, replacement), in order: the notes of specs cite the project's issues and commits ("in commit
#: 6a8e70f (issue 36's two_classes blocks ...)"), which a reader of the site cannot follow; the markdown
#: reports keep them for the maintainers
_REFS = [(re.compile(p), r) for p, r in (
    (rf"\s*\((?:{_ISSUE}(?:[,;] )?)+\)", ""),                        # (issue 36), (issue 36, item 6)
    (rf"\(\s*{_ISSUE},\s*(\d{{4}}-\d\d-\d\d)\)", r"(\1)"),            # (issue 50 item 7, 2026-11-29)
    (rf"[,;]\s*{_ISSUE}(?=\s*[:;)])", ""),                            # (written 2026-11-29, issue 50 item 7: ...
    (rf"\(\s*{_ISSUE}[,;:]\s*", "("),                                 # (issue 17; no numbers before ...
    (rf"\b{_ISSUE}(?:&#39;|')s\b", "the"),                            # issue 36's regime checks
    (rf"\s+(?:of|in|for|by) {_ISSUE}(?:\s*\(items? [\d.]+\))?", ""),  # the rule of issue 36; corrected for issue 36 (item 6)
    (rf"\s*,?\s*\bin commits? {_HASH}(?: and {_HASH})?\b", ""),       # in commit 6a8e70f
    (rf"\bcommits? {_HASH}\b", "a commit"),
    (rf"\b(commit),\s*{_HASH},", r"\1,"),                               # the first commit, e79c871, the only one
    (rf"\b(at|from|since) {_HASH} and {_HASH}\b", r"\1 two commits"),  # from clean trees at 3eebaa6 and d007ade
    (rf"\b(at|from|since|before|after) {_HASH}\b", r"\1 a commit"),
    (rf",\s*{_HASH}\)", ")"),                                          # (branch t3cifar, bde1262)
    (rf"\b{_ISSUE}\b", "an earlier review"),
)]


def plain_refs(html: str) -> str:
    """``html`` with the project's issue numbers and commit hashes rendered out (or, where a sentence
    needs them, as plain words: "a commit", "the")."""
    for pattern, replacement in _REFS:
        html = pattern.sub(replacement, html)
    return html


def render_body(template: str, **context: Any) -> str:
    """The ``body`` block of ``template`` alone (the page without its frame)."""
    return render(template, bare=True, **context)


def paper_name(spec: Spec) -> str:
    return PAPERS.get(spec.paper, spec.paper)


def reported_markup(cell: ReportedCell | None, spec_fmt: str, footnote: str = "") -> Markup:
    """A reported number as the paper prints it, a bold mark as ``<b>``, the rest escaped."""
    text = fmt_reported(cell, spec_fmt, footnote, bold=("\x01", "\x02"))
    return Markup(e(text).replace("\x01", "<b>").replace("\x02", "</b>"))


# ---- the paper-shaped table ---------------------------------------------------------------
def delta_class(res: TableResult, row: str, col: str, metric: str) -> tuple[str, str]:
    """(css class, tooltip) of a cell from the delta's sign and significance; ``d-check`` (not
    coloured) at a pipeline-check tier (smoke), whose numbers are not compared with the paper."""
    s, r = res.get(row, col, metric), res.reported(row, col, metric)
    if res.pipeline_check and s is not None:
        return "d-check", f"tier {res.tier}: a pipeline check, not compared with the paper"
    if s is None or r is None or r.mean is None:
        return "d-none", ""
    m = res.spec.metrics[metric]
    t = delta_test(s, r.mean, higher_is_better=m.higher_is_better, fmt=m.fmt)
    if t.direction == SAME:
        return "d-same", "our mean prints as the paper's"
    test = f"one-sample t-test of our {s.n} seeds against the printed mean: {fmt_p(t.p)}" if t.p is not None \
        else "1 seed: not tested"
    return f"d-{t.direction}{'-sig' if t.significant else ''}", f"{t.direction} than reported; {test}"


#: The tier whose cells are coloured by their ordering against the block's rows (rank_class), not by the gap.
RANKED_TIERS = ("reduced",)


def rank_class(res: TableResult, row: str, col: str, metric: str) -> tuple[str, str]:
    """(css class, tooltip) of a cell at a tier read for its rankings: of the other rows of its
    block (its row group in the column; in a table whose methods are its columns, the other method
    columns of its row) that both the paper and we have, the share our means order against this cell
    as the paper's numbers do. ``r-agree``: all, ``r-against``: none, ``r-mixed``: some; ``d-none``
    where no pair has both numbers."""
    spec = res.spec
    s, r = res.get(row, col, metric), res.reported(row, col, metric)
    if s is None or r is None or r.mean is None:
        return "d-none", ""
    if spec.methods_in == "cols":
        others = [(row, c) for c in spec.cols if c != col and c not in spec.derived_cols]
    else:
        group = spec.group_of_row(row)
        others = [(o, col) for o in (spec.row_groups[group] if group else spec.rows) if o != row]
    sign = 1.0 if spec.metrics[metric].higher_is_better else -1.0
    agree = n = 0
    for cell in others:
        so, ro = res.get(*cell, metric), res.reported(*cell, metric)
        if so is None or ro is None or ro.mean is None or ro.mean == r.mean or so.mean == s.mean:
            continue
        n += 1
        agree += (sign * (s.mean - so.mean) > 0) == (sign * (r.mean - ro.mean) > 0)
    if not n:
        return "d-none", ""
    cls = "r-agree" if agree == n else "r-against" if agree == 0 else "r-mixed"
    return cls, f"ordered as the paper against {agree} of {n} other row(s) of its block (tier {res.tier}: read rankings)"


def _cell(res: TableResult, row: str, col: str, metric: str) -> dict:
    f = res.spec.metrics[metric].fmt
    s, r, d = res.get(row, col, metric), res.reported(row, col, metric), res.delta(row, col, metric)
    cls, tip = (rank_class if res.tier in RANKED_TIERS else delta_class)(res, row, col, metric)
    ours = DASH if s is None else fmt_ours(s.mean, s.std, s.n, f)
    cell = {"cls": cls, "ours": " ".join([ours, *cell_marks(res, row, col, metric)]), "paper": None,
            "paper_label": "paper ", "delta": None, "star": ""}
    if r is not None:
        cell["paper"] = reported_markup(r, f) if r.mean is not None else DASH
        if d is not None:
            cell["delta"], cell["star"] = format(d, "+" + f), "*" if cls.endswith("-sig") else ""
        if r.note:
            tip = (tip + "; " if tip else "") + f"note: {r.note}"
    cell["tip"] = tip
    return cell


#: the widest table the site draws (a page's content is 1400 px at most, less its margins and a
#: scroll bar's width): wider blocks are split into column chunks, each repeating the row names
TABLE_PX = 1300.0
_NAME_PX_PER_CHAR, _CELL_PX_PER_CHAR, _CELL_MIN_PX, _PAD_PX = 7.6, 7.6, 108.0, 17.0  # 13.5 px text, 8em cells


def _cell_px(cell: dict) -> float:
    texts = [cell["ours"] or "", f"paper {cell['paper'] or ''}", f"Δ {cell['delta'] or ''}"]
    return max(_CELL_MIN_PX, _CELL_PX_PER_CHAR * max(len(str(t)) for t in texts)) + _PAD_PX


def result_tables(res: TableResult, width_px: float = TABLE_PX) -> list[dict]:
    """Per block: title, direction, and its tables: one, or several column chunks where the block
    is wider than ``width_px`` (estimated), each with its columns and lines (``{"group": name}``
    or ``{"name": row, "cells": [...]}``)."""
    out = []
    for b in blocks(res.spec):
        m = res.spec.metrics[b.metric]
        cells = {(name, c): _cell(res, name, c, b.metric) for kind, name in b.lines if kind == "row" for c in b.cols}
        names = [name for kind, name in b.lines if kind == "row"]
        widths = {c: max([_cell_px(cells[(n, c)]) for n in names] + [_PAD_PX + 7.0 * min(len(c), 16)])
                  for c in b.cols}
        label = _NAME_PX_PER_CHAR * max(map(len, names), default=4) + _PAD_PX
        chunks = []
        for part in column_chunks(b.cols, widths, label, width_px):
            lines = [{"group": name} if kind == "group" else {"name": name, "cells": [cells[(name, c)] for c in part]}
                     for kind, name in b.lines]
            chunks.append({"cols": part, "lines": lines})
        out.append({"title": b.title or m.label, "higher": m.higher_is_better, "cols": b.cols, "chunks": chunks})
    return out


# ---- claims and checks --------------------------------------------------------------------
CLAIM_HEADERS = ("claim", "checked", "ours", "test", "deciding pair", "Δ", "MDD", "paper gap", "seeds for paper gap",
                 "paper's numbers", "detail")


def claims_view(res: TableResult) -> dict:
    rows = []
    for c in claim_checks(res):
        r = claim_row(c, claim_fmt(c.claim, res.spec))
        rows.append({"text": claim_title(c), "checked": describe(c.claim, res.spec), "cls": outcome_class(c.status),
                     "status": r.status, "test": r.test, "pair": r.pair, "delta": r.delta, "mdd": r.mdd,
                     "paper_gap": r.paper_gap, "seeds": r.seeds, "paper": c.paper_status, "detail": r.detail})
    return {"legend": CLAIM_STATUS_LEGEND, "headers": CLAIM_HEADERS, "rows": rows}


def regime_view(res: TableResult) -> dict | None:
    """The regime verdict of each block per column (None without ``regime:`` blocks)."""
    rows = regime_rows(res)
    if not rows:
        return None
    return {"legend": REGIME_LEGEND, "headers": REGIME_HEADERS,
            "rows": [{"block": b, "check": c, "col": col, "verdict": v, "cls": outcome_class(v), "numbers": n}
                     for b, c, col, v, n in rows],
            "whys": [f"Why, at tier {res.tier}: {w}" for w in regime_whys(res)] + regime_revisions(res)}


def agreement_view(res: TableResult) -> dict:
    a = agreement(res)
    return {"legend": AGREEMENT_LEGEND, "summary": a.summary(), "headers": AGREEMENT_HEADERS,
            "rows": a.rows() if a.pairs else []}


def columns_view(res: TableResult) -> dict | None:
    cols = column_checks(res)
    if not cols:
        return None
    rows = []
    for c in cols:
        match = {True: "yes", False: "no", None: DASH}[c.best_match]
        tau = DASH if c.tau is None else f"{c.tau:+.2f} (n={c.n_rows})"
        label = " / ".join(x for x in (c.group, c.col, c.metric if len(res.spec.metrics) > 1 else None) if x)
        rows.append([label, c.best_ours or DASH, c.best_paper or DASH, match, tau])
    return {"along": "row" if res.spec.methods_in == "cols" else "column",
            "method": "column" if res.spec.methods_in == "cols" else "row", "rows": rows}


# ---- page bodies ----------------------------------------------------------------------------
def _spec_file(spec: Spec) -> str:
    """The spec's file relative to the project (``experiments/bcl/fig5-bcl.yaml``)."""
    from pathlib import Path

    from pubench.paths import experiments_root

    try:
        return str(Path(spec.path).resolve().relative_to(experiments_root().resolve().parent))
    except ValueError:
        return Path(spec.path).name or spec.id


def spec_meta(spec: Spec) -> dict:
    return {"paper": paper_name(spec), "source": spec.source,
            "seeds": spec.reported_seeds if spec.reported_seeds is not None else "unstated",
            "pm": spec.pm or "not stated", "file": _spec_file(spec), "version": spec.version}


def coverage_lines(res: TableResult) -> list[str]:
    spec = res.spec
    lines = [f"Cells with results: {res.cells_done} of {len(spec.cells())} (seeds per cell: "
             f"{', '.join(map(str, sorted(set(res.seeds_done.values())))) or DASH})"]
    if res.failed:
        lines.append(f"Cells whose jobs failed ({len(res.failed)}): "
                     + "; ".join(f"{r}|{c}: {why}" for (r, c), why in sorted(res.failed.items())[:10]))
    reasons: dict[str, list[str]] = {}
    for r, c in spec.cells():
        why = spec.unavailable_reason(res.tier, r, c)
        if why:
            reasons.setdefault(why, []).append(f"{r}|{c}")
    lines += [f"Not runnable at this tier ({len(cells)} cells): {why}" for why, cells in reasons.items()]
    if res.stale:
        lines.append(f"{res.stale} older record(s) from a changed config were left out")
    if unregistered := unregistered_line(res):
        lines.append(unregistered)
    if one_class := degenerate_summary(res):
        lines.append(one_class)
        lines += [f"Why, at tier {res.tier}: {why}" for why in one_class_whys(res)]
    if res.corrupt:
        lines.append(f"{res.corrupt} corrupt record(s) were skipped")
    if res.fast_profile:
        lines.append(f"{res.fast_profile} record(s) of the opt-in fast numerics profile (channels_last, "
                     "torch.compile; other numbers) were left out: never compared with the canonical ones")
    if res.numerics:
        lines.append("Numerics (device, threads per job, CPU code paths, torch): "
                     + "; ".join(f"{label}: {n} record(s)" for label, n in sorted(res.numerics.items())))
    return lines


def compute_lines(res: TableResult) -> list[str]:
    lines = [f"Records aggregated here: {describe_compute(res.compute)}"]
    if res.compute_all.jobs != res.compute.jobs:
        lines.append(f"Every record of this tier in the store, stale and failed included: "
                     f"{describe_compute(res.compute_all)}")
    return lines


def note_lines(spec: Spec) -> list[str]:
    notes = list(spec.reported_notes)
    notes += [f"({c.row}, {c.col}{', ' + c.metric if len(spec.metrics) > 1 else ''}): {c.note}"
              for c in spec.reported if c.note]
    return notes


def report_context(res: TableResult, plot: str | None, other_tiers: list[tuple[str, str]], spec_href: str) -> dict:
    """What ``report.html.j2`` shows of one report (``plot``: the PNG's file name beside the page),
    in its order: the plot and the tables, the regime, claim and order checks, coverage and
    compute, then (collapsed) the tier's deviations and the spec's decisions, and the notes."""
    from pubench.registry.changes import deviation_lines, deviations_lead

    spec, tier = res.spec, res.tier
    return {
        "spec": spec, "tier": tier, "meta": spec_meta(spec), "tier_text": tier_line(spec, tier),
        "other_tiers": other_tiers, "spec_href": spec_href, "alpha": f"{ALPHA:g}",
        "ranked": tier in RANKED_TIERS,
        "pipeline_check": SMOKE_TEXT if res.pipeline_check else None,
        "degenerate_legend": DEGENERATE_LEGEND if res.marks_degenerate else None,
        "tables": result_tables(res),
        "curves": {"headers": CURVES_HEADERS, "rows": curve_summary(res)} if spec.curves else None,
        "plot": {"src": plot, "alt": plot_alt(res), "coinciding": coinciding_text(res)} if plot else None,
        "pooled": {"legend": POOLED_LEGEND, "headers": POOLED_HEADERS, "rows": pooled_rows(res)} if res.pooled else None,
        "added": {"legend": ADDED_LEGEND, "headers": ADDED_HEADERS, "rows": added_rows_table(res),
                  "baselines": res.baselines} if spec.added else None,
        "regime": regime_view(res), "claims": claims_view(res), "columns": columns_view(res),
        "agreement": agreement_view(res), "deviations": deviation_lines(spec, tier),
        "deviations_lead": deviations_lead(spec, tier), "decisions": spec.decisions,
        "coverage": {"lines": coverage_lines(res), "dirty": res.dirty}, "compute": compute_lines(res),
        "notes": note_lines(spec),
    }


def report_body(res: TableResult, plot: str | None, other_tiers: list[tuple[str, str]], spec_href: str) -> str:
    """The report page's body (without the site's frame)."""
    return render_body("report.html.j2", **report_context(res, plot, other_tiers, spec_href))


def report_page(res: TableResult, plot: str | None, other_tiers: list[tuple[str, str]], spec_href: str,
                nav: list[tuple[str, str]], footer: Markup) -> str:
    tier = f"{res.tier}: {res.spec.variant_label}" if res.spec.variant is not None else res.tier
    return render("report.html.j2", title=f"{res.spec.id} ({tier}): {res.spec.title}", nav=nav, footer=footer,
                  **report_context(res, plot, other_tiers, spec_href))


def reported_view(spec: Spec) -> dict:
    """The reported table as the paper prints it: blocks of rows of marked-up cells, and the footnotes."""
    bl, notes = reported_table(spec)
    tables = []
    for b in bl:
        m = spec.metrics[b.metric]
        lines = []
        for kind, name in b.lines:
            if kind == "group":
                lines.append({"group": name})
                continue
            cells = []
            for c in b.cols:
                cell = spec.reported_cell(name, c, b.metric)
                mark = f" ({notes[cell.note][0]})" if cell and cell.note else ""
                cells.append(reported_markup(cell, m.fmt, mark))
            lines.append({"name": name, "cells": cells})
        tables.append({"title": b.title or m.label, "higher": m.higher_is_better, "cols": b.cols, "lines": lines})
    return {"tables": tables, "footnotes": [n for _, n in sorted(notes.values())]}


def spec_context(spec: Spec, reports: list[tuple[str, str]]) -> dict:
    """What ``spec.html.j2`` shows: the reported table, claims, decisions, each tier's deviations."""
    from pubench.registry.changes import deviation_lines, deviations_lead

    return {"spec": spec, "meta": spec_meta(spec), "reports": reports, "reported": reported_view(spec),
            "claims": [f"{c.text} ({describe(c, spec)})" for c in spec.claims],
            "tier_deviations": [(name, deviations_lead(spec, name), lines) for name in spec.tiers
                                if (lines := deviation_lines(spec, name))]}


def spec_body(spec: Spec, reports: list[tuple[str, str]]) -> str:
    return render_body("spec.html.j2", **spec_context(spec, reports))
