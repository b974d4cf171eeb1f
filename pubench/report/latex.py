"""LaTeX reports: a standalone document (``pdflatex <id>.tex`` compiles it) or a snippet to
``\\input`` into a paper.

Packages: booktabs and graphicx only (both in TeX Live's latex-base / latex-recommended
sets), plus geometry in the standalone document. Wide tables fit the text width in two
steps: a block whose estimated width exceeds the page is split into column chunks of about
equal size (each repeats the row labels), and every tabular is typeset into a box that is
scaled down to ``\\linewidth`` only when it is still wider (estimates are rough; the box is
exact). Each cell stacks our number over the paper's and the delta, which halves the width
of a column. Tables are not floats in the standalone document (a long report would exceed
LaTeX's float queue) and are ``table`` floats in the snippet.

The document leads with the result: a figure's plot, then the tables, then the regime,
claim and order checks and the coverage; the tier's deviations, the spec's decisions and the
notes on the reported numbers come last. It compiles clean in one pdflatex pass: no
``\\label`` or ``\\ref`` (tables are numbered by hand), so no "Rerun" warning; the snippet
keeps a ``\\label`` per table for the including document.
"""

from __future__ import annotations

import textwrap

from pubench.registry.changes import deviation_lines, deviations_lead
from pubench.registry.spec import PAPERS
from pubench.report.added import added_rows_table
from pubench.report.agreement import HEADERS as AGREEMENT_HEADERS
from pubench.report.agreement import agreement
from pubench.report.checks import claim_checks, claim_fmt, describe
from pubench.report.collect import TableResult, unregistered_line
from pubench.report.compute import describe as describe_compute
from pubench.report.evidence import (AGREEMENT_LEGEND, CLAIM_STATUS_LEGEND, REGIME_LEGEND, claim_row, regime_rows,
                                     regime_revisions, regime_whys)
from pubench.report.layout import (BOLD_MARK, DEGENERATE_LEGEND, SMOKE_TEXT, blocks, cell_marks, coinciding_text,
                                   column_chunks, degenerate_summary, one_class_whys, plot_alt, tier_line)
from pubench.report.templating import Tex
from pubench.report.tex_escape import escape_tex

# ---- cells and width estimates ------------------------------------------------------------
TEXT_WIDTH_PT = 483.7  # A4 with 2 cm margins: what the standalone document's tables aim for
_PT_PER_CHAR = {"small": 4.0, "scriptsize": 3.2}  # computer modern digits and lower case, roughly
_COL_SEP_PT = 12.0  # \tabcolsep on both sides


def _num(x: float, spec_fmt: str) -> str:
    """A number for math mode: ``1.2e-05`` as ``1.2\\times10^{-5}``."""
    text = format(x, spec_fmt)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    return f"{mantissa}\\times10^{{{int(exponent)}}}"


def _cell(res: TableResult, row: str, col: str, metric: str) -> tuple[str, int]:
    """The cell's LaTeX and its estimated width in points."""
    f = res.spec.metrics[metric].fmt
    s, r, d = res.get(row, col, metric), res.reported(row, col, metric), res.delta(row, col, metric)
    ours, ours_chars = "--", 2
    if s is not None:
        spread = "" if s.std is None else f" \\pm {_num(s.std, f)}"  # a single seed has no std
        ours = f"${_num(s.mean, f)}{spread}$ ({s.n})"
        ours_chars = len(format(s.mean, f)) + (len(format(s.std, f)) + 3 if s.std is not None else 0) + 4
    for mark in cell_marks(res, row, col, metric):
        ours, ours_chars = f"{ours} {escape_tex(mark)}", ours_chars + 1 + len(mark)  # beside the paper's (below)
    if r is None:  # the paper registers no number for this cell
        return ours, int(ours_chars * _PT_PER_CHAR["small"])
    paper = "--" if r.mean is None else format(r.mean, f)
    paper = f"${_num(r.mean, f)}$" if "e" in paper else paper
    if r.mark == BOLD_MARK and r.mean is not None:
        paper = f"\\textbf{{{format(r.mean, f)}}}"
    elif r.mark:
        paper = f"{paper} {escape_tex(r.mark)}"
    delta = "" if d is None else f"; ${_num(d, '+' + f)}$"
    below_chars = 2 + (len(format(r.mean, f)) if r.mean is not None else 2) + (len(format(d, "+" + f)) + 2 if d else 0)
    width = max(ours_chars * _PT_PER_CHAR["small"], below_chars * _PT_PER_CHAR["scriptsize"])
    return f"\\pbcell{{{ours}}}{{({paper}{delta})}}", int(width)


def _header(col: str, width_pt: float) -> tuple[str, float]:
    """A column name, broken over lines at spaces when it is wider than its cells."""
    chars = max(8, int(width_pt / _PT_PER_CHAR["small"]))
    lines = textwrap.wrap(col, chars, break_long_words=False) or [col]
    text = escape_tex(lines[0]) if len(lines) == 1 else \
        "\\pbhead{" + r"\\".join(escape_tex(x) for x in lines) + "}"
    return text, max(len(x) for x in lines) * _PT_PER_CHAR["small"]


def _tabulars(res: TableResult, block, target_pt: float) -> list[dict]:
    """The block's column chunks, each a tabular for the template: ``heads`` (one per column) and
    ``lines`` (``{"group": name}`` or ``{"name": row, "cells": [...]}``), all LaTeX already."""
    cells = {(name, c): _cell(res, name, c, block.metric) for kind, name in block.lines if kind == "row"
             for c in block.cols}
    widths, heads = {}, {}
    for c in block.cols:
        cell_w = max((cells[(name, c)][1] for kind, name in block.lines if kind == "row"), default=20)
        heads[c], head_w = _header(c, cell_w)
        widths[c] = max(cell_w, head_w)
    # group lines span the whole table: only row names set the label column
    label_pt = max(len(name) for kind, name in block.lines if kind == "row") * _PT_PER_CHAR["small"] + _COL_SEP_PT
    out = []
    for part in column_chunks(block.cols, widths, label_pt, target_pt, _COL_SEP_PT):
        lines = [{"group": name} if kind == "group" else
                 {"name": name, "cells": [Tex(cells[(name, c)][0]) for c in part]} for kind, name in block.lines]
        out.append({"ncols": len(part), "heads": [Tex(heads[c]) for c in part], "lines": lines})
    return out


def _claims(res: TableResult) -> list[dict]:
    """One entry per claim: what is checked, our outcome, the plain test of the deciding pair with
    its mean difference (``delta``, for math mode), the power figures, and the paper's numbers' verdict."""
    items = []
    for c in claim_checks(res):
        r = claim_row(c, claim_fmt(c.claim, res.spec))
        items.append({"checked": describe(c.claim, res.spec), "status": r.status, "tested": c.decisive_link is not None,
                      "test": r.test, "pair": r.pair, "delta": Tex(r.delta), "mdd": r.mdd, "paper_gap": r.paper_gap,
                      "seeds": r.seeds, "paper": c.paper_status})
    return items


def _regime(res: TableResult) -> dict | None:
    rows = [dict(zip(("block", "check", "col", "verdict", "numbers"), row)) for row in regime_rows(res)]
    whys = regime_whys(res) + regime_revisions(res)
    return {"legend": REGIME_LEGEND, "rows": rows, "whys": whys} if rows or whys else None


def _agreement(res: TableResult) -> dict:
    a = agreement(res)
    return {"legend": AGREEMENT_LEGEND, "summary": a.summary(), "headers": AGREEMENT_HEADERS,
            "rows": a.rows() if a.pairs else []}


CELL_LEGEND = ("Cell: reproduced mean $\\pm$ std (n seeds; no std for one seed), below it (reported; "
               "$\\Delta$ = reproduced $-$ reported, $> 0$ better than reported).")


def _coverage(res: TableResult) -> list[Tex]:
    spec = res.spec
    lines = [f"Cells with results: {res.cells_done} of {len(spec.cells())}",
             "Compute of the records aggregated here: " + escape_tex(describe_compute(res.compute))]
    if res.compute_all.jobs != res.compute.jobs:
        lines.append("Every record of this tier in the store, stale and failed included: "
                     + escape_tex(describe_compute(res.compute_all)))
    if res.failed:
        lines.append(f"Cells whose jobs failed: {len(res.failed)}")
    if res.stale:
        lines.append(f"{res.stale} older record(s) from a changed config were left out")
    if unregistered := unregistered_line(res):
        lines.append(escape_tex(unregistered))
    if one_class := degenerate_summary(res):
        lines.append(escape_tex(one_class))
        lines += [escape_tex(f"Why, at tier {res.tier}: {why}") for why in one_class_whys(res)]
    if res.dirty:
        lines.append(f"\\textbf{{{res.dirty} record(s) were written from a tree with uncommitted code or spec "
                     "changes}")
    return [Tex(line) for line in lines]


def _tables(res: TableResult, target_pt: float) -> list[dict]:
    spec, tier = res.spec, res.tier
    out = []
    for i, b in enumerate(blocks(spec), start=1):
        m = spec.metrics[b.metric]
        direction = f" {'Higher' if m.higher_is_better else 'Lower'} is better. Tier: \\texttt{{{tier}}}."
        title = escape_tex(spec.caption) + (f" ({escape_tex(b.title)})" if b.title else "") + direction
        # the document prints the caption once, above: each table names its block only
        heading = escape_tex((b.title or m.label).rstrip(".")) + "." + direction
        out.append({"number": i, "title": Tex(title), "heading": Tex(heading), "label": f"tab:{spec.id}-{tier}-{i}",
                    "tabulars": _tabulars(res, b, target_pt)})
    return out


def latex_context(res: TableResult, plot: str | None = "") -> dict:
    """What the LaTeX templates lay out (``report.tex.j2``, ``snippet.tex.j2``): plain text is
    escaped by the template, :class:`~pubench.report.templating.Tex` values are LaTeX already.
    ``plot``: the figure's PNG beside the ``.tex`` (default ``<id>.png`` for a figure; None: none)."""
    spec, tier = res.spec, res.tier
    notes = list(spec.reported_notes) + [f"({c.row}, {c.col}): {c.note}" for c in spec.reported if c.note]
    if plot == "":
        plot = f"{spec.id}.png" if spec.kind == "figure" else None
    return {
        "spec": spec, "tier": tier, "paper_name": PAPERS.get(spec.paper, spec.paper),
        "comment": Tex(f"{spec.id}: {spec.title} ({spec.paper}), tier {tier}. Generated by `pubench report`; "
                       "do not edit."),
        "cell_legend": Tex(CELL_LEGEND), "cell_legend_comment": Tex(CELL_LEGEND.replace("$", "")),
        "seeds": spec.reported_seeds if spec.reported_seeds is not None else "unstated",
        "pm": spec.pm or "not stated", "tier_line": tier_line(spec, tier), "deviations": deviation_lines(spec, tier),
        "deviations_lead": deviations_lead(spec, tier),
        "decisions": spec.decisions, "pipeline_check": SMOKE_TEXT if res.pipeline_check else None,
        "plot": plot, "plot_alt": plot_alt(res) if plot else None, "coinciding": coinciding_text(res) if plot else None,
        "degenerate_legend": DEGENERATE_LEGEND if res.marks_degenerate else None,
        "tables": _tables(res, TEXT_WIDTH_PT), "regime": _regime(res), "claims": _claims(res),
        "added": [*([res.baselines.replace("`", "")] if res.baselines and spec.added else []),
                  *(f"{r[0]}, {r[1]}: {r[2]}, rank {r[3]}; vs {r[4]}: {r[5]}, {r[6]}; regime: {r[7]}"
                    for r in added_rows_table(res))],
        "claim_status_legend": CLAIM_STATUS_LEGEND, "agreement": _agreement(res),
        "coverage": _coverage(res), "notes": notes,
    }


def render_latex(res: TableResult, standalone: bool = True, plot: str | None = "") -> str:
    """The report as LaTeX: a whole document (``standalone``, template ``report.tex.j2``) that
    compiles in one pdflatex pass, or a snippet that needs ``\\usepackage{booktabs,graphicx}`` in
    the including document (``snippet.tex.j2``). A figure includes its plot, ``plot`` (default
    ``<id>.png``, looked for beside the document; a box says so where it is missing)."""
    from pubench.report.templating import render_tex

    return render_tex("report.tex.j2" if standalone else "snippet.tex.j2", **latex_context(res, plot))
