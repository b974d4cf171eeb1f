"""HTML pages of the static site (:mod:`pubench.report.site` writes them).

Self-contained pages: inline CSS, no script, no font or stylesheet from elsewhere, links
relative to the page, so the site opens from disk, offline. Every text from a spec or a
record is escaped. A cell shows our mean ± std (n), the paper's number and the delta,
coloured by the delta's sign (better / worse than reported, in the metric's direction) and
its significance (a one-sample t-test of our seeds against the printed mean,
:func:`pubench.report.stats.delta_test`).
"""

from __future__ import annotations

from html import escape

from pubench.registry.spec import PAPERS, Spec
from pubench.report.agreement import HEADERS as AGREEMENT_HEADERS
from pubench.report.agreement import agreement
from pubench.report.checks import NOT_IN_REGIME, UNDERPOWERED, claim_checks, claim_fmt, column_checks, describe
from pubench.report.collect import TableResult
from pubench.report.compute import describe as describe_compute
from pubench.report.evidence import (AGREEMENT_LEGEND, CLAIM_STATUS_LEGEND, REGIME_HEADERS, REGIME_LEGEND, claim_row,
                                     regime_rows, regime_whys)
from pubench.report.layout import (
    CURVES_HEADERS,
    DASH,
    DEGENERATE_LEGEND,
    blocks,
    cell_marks,
    curve_summary,
    degenerate_summary,
    fmt_ours,
    fmt_reported,
    reported_table,
)
from pubench.report.regime import IN, OUT
from pubench.report.stats import ALPHA, FAILS, HOLDS, HOLDS_NS, NOT_TESTABLE, SAME, TIE, delta_test, fmt_p

CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg-alt: #f6f8fa; --link: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); background: #fff; }
main { max-width: 1400px; margin: 0 auto; padding: 0 24px 48px; }
nav { background: #24292f; color: #fff; padding: 8px 24px; font-size: 14px; }
nav a { color: #fff; margin-right: 14px; }
a { color: var(--link); text-decoration: none; } a:hover { text-decoration: underline; }
h1 { font-size: 24px; margin: 20px 0 4px; } h3 { font-size: 16px; margin: 18px 0 6px; }
h2 { font-size: 19px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.caption { color: var(--muted); margin: 0 0 12px; font-style: italic; }
.muted, .legend { color: var(--muted); font-size: 13px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; font-size: 14px; }
dl.meta dt { color: var(--muted); } dl.meta dd { margin: 0; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13.5px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; vertical-align: top; }
th { background: var(--bg-alt); text-align: center; font-weight: 600; }
td.name, th.name { text-align: left; white-space: nowrap; }
tr.group td { background: var(--bg-alt); font-style: italic; font-weight: 600; }
table.paper td.cell { text-align: right; white-space: nowrap; min-width: 8em; }
td.cell .ours { display: block; font-weight: 600; font-variant-numeric: tabular-nums; }
td.cell .paper, td.cell .delta { display: block; font-size: 12px; font-variant-numeric: tabular-nums; }
td.cell .paper { color: var(--muted); }
td.num { white-space: nowrap; font-variant-numeric: tabular-nums; }
ul.toc { columns: 3 18em; font-size: 13.5px; }
.d-better-sig { background: #b7ebc4; } .d-better { background: #e6f6ea; }
.d-worse-sig { background: #ffc9c2; } .d-worse { background: #fff0ee; }
.d-same { background: #eef1f4; } .d-none { background: #fff; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12.5px; font-weight: 600;
         white-space: nowrap; border: 1px solid transparent; }
.o-holds { background: #1a7f37; color: #fff; } .o-holds-ns { background: #d2f4d9; color: #0f5323; }
.o-tie { background: #eaeef2; color: #24292f; } .o-fails { background: #cf222e; color: #fff; }
.o-not-testable { background: #fff; color: var(--muted); border-color: var(--line); }
.o-not-in-regime { background: #fff8c5; color: #7d4e00; border-color: #d4a72c; }
.o-underpowered { background: #ddf4ff; color: #0a3069; border-color: #54aeff; }
table.index td { font-size: 13.5px; } table.index td.tier { white-space: nowrap; }
.swatch { display: inline-block; width: 14px; height: 14px; border: 1px solid var(--line); vertical-align: -2px;
          margin: 0 3px 0 10px; }
img.plot { max-width: 100%; border: 1px solid var(--line); }
ul.tight { margin: 4px 0 10px; padding-left: 22px; } ul.tight li { margin: 2px 0; }
.warn { color: #9a6700; font-weight: 600; }
footer { color: var(--muted); font-size: 12px; margin-top: 40px; }
"""

OUTCOME_CLASS = {HOLDS: "o-holds", HOLDS_NS: "o-holds-ns", TIE: "o-tie", FAILS: "o-fails",
                 NOT_TESTABLE: "o-not-testable", NOT_IN_REGIME: "o-not-in-regime", UNDERPOWERED: "o-underpowered",
                 IN: "o-holds-ns", OUT: "o-not-in-regime"}


def e(text: object) -> str:
    return escape(str(text), quote=True)


def page(title: str, body: str, nav: list[tuple[str, str]], footer: str = "") -> str:
    """A whole HTML document; ``nav``: (href, label) links relative to the page."""
    links = "".join(f'<a href="{e(href)}">{e(label)}</a>' for href, label in nav)
    return (f'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<title>{e(title)}</title>\n<link rel="icon" href="data:,">\n<style>{CSS}</style>\n</head>\n<body>\n'
            f'<nav>{links}</nav>\n<main>\n{body}\n<footer>{footer}</footer>\n</main>\n</body>\n</html>\n')


def badge(outcome: str, text: str | None = None) -> str:
    return f'<span class="badge {OUTCOME_CLASS.get(outcome, "o-not-testable")}">{e(text or outcome)}</span>'


def items(values: list[str], escaped: bool = False) -> str:
    if not values:
        return ""
    return '<ul class="tight">' + "".join(f"<li>{v if escaped else e(v)}</li>" for v in values) + "</ul>"


def paper_name(spec: Spec) -> str:
    return PAPERS.get(spec.paper, spec.paper)


# ---- the paper-shaped table ---------------------------------------------------------------
def delta_class(res: TableResult, row: str, col: str, metric: str) -> tuple[str, str]:
    """(css class, tooltip) of a cell from the delta's sign and significance."""
    s, r = res.get(row, col, metric), res.reported(row, col, metric)
    if s is None or r is None or r.mean is None:
        return "d-none", ""
    m = res.spec.metrics[metric]
    t = delta_test(s, r.mean, higher_is_better=m.higher_is_better, fmt=m.fmt)
    if t.direction == SAME:
        return "d-same", "our mean prints as the paper's"
    test = f"one-sample t-test of our {s.n} seeds against the printed mean: {fmt_p(t.p)}" if t.p is not None \
        else "1 seed: not tested"
    return f"d-{t.direction}{'-sig' if t.significant else ''}", f"{t.direction} than reported; {test}"


def _cell(res: TableResult, row: str, col: str, metric: str) -> str:
    f = res.spec.metrics[metric].fmt
    s, r, d = res.get(row, col, metric), res.reported(row, col, metric), res.delta(row, col, metric)
    cls, tip = delta_class(res, row, col, metric)
    ours = DASH if s is None else fmt_ours(s.mean, s.std, s.n, f)
    ours = " ".join([ours, *cell_marks(res, row, col, metric)])
    parts = [f'<span class="ours">{e(ours)}</span>']
    if r is not None:
        paper = fmt_reported(r, f, bold=("<b>", "</b>")) if r.mean is not None else DASH
        paper = e(paper).replace("&lt;b&gt;", "<b>").replace("&lt;/b&gt;", "</b>")
        parts.append(f'<span class="paper">paper {paper}</span>')
        if d is not None:
            star = "*" if cls.endswith("-sig") else ""
            parts.append(f'<span class="delta">Δ {e(format(d, "+" + f))}{star}</span>')
        if r.note:
            tip = (tip + "; " if tip else "") + f"note: {r.note}"
    title = f' title="{e(tip)}"' if tip else ""
    return f'<td class="cell {cls}"{title}>{"".join(parts)}</td>'


def results_tables(res: TableResult) -> str:
    out = []
    for b in blocks(res.spec):
        m = res.spec.metrics[b.metric]
        title = b.title or m.label
        out.append(f"<h3>{e(title)} <span class=\"muted\">({'higher' if m.higher_is_better else 'lower'} "
                   f"is better)</span></h3>")
        head = "".join(f"<th>{e(c)}</th>" for c in b.cols)
        rows = []
        for kind, name in b.lines:
            if kind == "group":
                rows.append(f'<tr class="group"><td colspan="{len(b.cols) + 1}">{e(name)}</td></tr>')
            else:
                rows.append(f'<tr><td class="name">{e(name)}</td>'
                            + "".join(_cell(res, name, c, b.metric) for c in b.cols) + "</tr>")
        out.append(f'<div class="scroll"><table class="paper"><thead><tr><th class="name"></th>{head}</tr></thead>'
                   f'<tbody>{"".join(rows)}</tbody></table></div>')
    return "\n".join(out)


CELL_LEGEND = (
    "Each cell: our mean ± sample std (seeds), the paper's number, and Δ = ours − paper's, signed so that "
    "Δ > 0 is better than reported. Colour: "
    '<span class="swatch d-better-sig"></span>better, significant* '
    '<span class="swatch d-better"></span>better, not significant '
    '<span class="swatch d-same"></span>prints the same '
    '<span class="swatch d-worse"></span>worse, not significant '
    '<span class="swatch d-worse-sig"></span>worse, significant*. '
    f"* = a two-sided one-sample t-test of our seeds against the printed mean has p < {ALPHA:g} (the paper's ± is "
    "left out: what it means is often not stated); one seed is not tested. Hover a cell for its p-value.")


# ---- claims and checks --------------------------------------------------------------------
def claims_table(res: TableResult) -> str:
    claims = claim_checks(res)
    if not claims:
        return '<p class="muted">This spec states no claims.</p>'
    rows = []
    for c in claims:
        r = claim_row(c, claim_fmt(c.claim, res.spec))
        rows.append("<tr>" + "".join([
            f"<td>{e(c.claim.text)}</td>", f"<td>{e(describe(c.claim, res.spec))}</td>",
            f"<td>{badge(c.status, r.status)}</td>", f"<td>{e(r.test)}</td>", f"<td>{e(r.pair)}</td>",
            f'<td class="num">{e(r.delta)}</td>', f'<td class="num">{e(r.mdd)}</td>',
            f'<td class="num">{e(r.paper_gap)}</td>', f'<td class="num">{e(r.seeds)}</td>',
            f"<td>{e(c.paper_status)}</td>", f'<td class="muted">{e(r.detail)}</td>']) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("claim", "checked", "ours", "test", "deciding pair", "Δ", "MDD",
                                              "paper gap", "seeds for paper gap", "paper's numbers", "detail"))
    return (f'<p class="legend">{e(CLAIM_STATUS_LEGEND)}</p>'
            f'<div class="scroll"><table class="claims"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def regime_table(res: TableResult) -> str:
    """The regime verdict of each block per column ("" without ``regime:`` blocks)."""
    rows = regime_rows(res)
    if not rows:
        return ""
    body = "".join("<tr>" + "".join(f"<td>{badge(x, x)}</td>" if i == 3 else f"<td>{e(x)}</td>"
                                    for i, x in enumerate(row)) + "</tr>" for row in rows)
    head = "".join(f"<th>{e(h)}</th>" for h in REGIME_HEADERS)
    whys = items([f"Why, at tier {res.tier}: {w}" for w in regime_whys(res)])
    return (f'<h2 id="regime">Regime</h2><p class="legend">{e(REGIME_LEGEND)}</p>'
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{whys}')


def agreement_table(res: TableResult) -> str:
    a = agreement(res)
    out = [f'<h2 id="order">Order of the paper\'s pairs</h2><p class="legend">{e(AGREEMENT_LEGEND)}</p>',
           f"<p>{e(a.summary())}</p>"]
    if a.pairs:
        head = "".join(f"<th>{e(h)}</th>" for h in AGREEMENT_HEADERS)
        body = "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in row) + "</tr>" for row in a.rows())
        out.append(f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>')
    return "".join(out)


def column_table(res: TableResult) -> str:
    cols = column_checks(res)
    if not cols:
        return ""
    along = "row" if res.spec.methods_in == "cols" else "column"
    method = "column" if res.spec.methods_in == "cols" else "row"
    rows = []
    for c in cols:
        match = {True: "yes", False: "no", None: DASH}[c.best_match]
        tau = DASH if c.tau is None else f"{c.tau:+.2f} (n={c.n_rows})"
        label = " / ".join(x for x in (c.group, c.col, c.metric if len(res.spec.metrics) > 1 else None) if x)
        rows.append(f"<tr><td>{e(label)}</td><td>{e(c.best_ours or DASH)}</td><td>{e(c.best_paper or DASH)}</td>"
                    f"<td>{match}</td><td>{e(tau)}</td></tr>")
    return (f"<h3>Best {method} per {along}, and rank agreement (Kendall tau)</h3>"
            f'<div class="scroll"><table><thead><tr><th>{along}</th><th>best (ours)</th><th>best (paper)</th>'
            f'<th>same</th><th>Kendall tau</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


# ---- page bodies ----------------------------------------------------------------------------
def _spec_file(spec: Spec) -> str:
    """The spec's file relative to the project (``experiments/bcl/fig5-bcl.yaml``)."""
    from pathlib import Path

    from pubench.paths import experiments_root

    try:
        return str(Path(spec.path).resolve().relative_to(experiments_root().resolve().parent))
    except ValueError:
        return Path(spec.path).name or spec.id


def spec_meta(spec: Spec) -> str:
    seeds = spec.reported_seeds if spec.reported_seeds is not None else "unstated"
    return (f'<dl class="meta"><dt>paper</dt><dd>{e(paper_name(spec))}</dd><dt>source</dt><dd>{e(spec.source)}</dd>'
            f"<dt>paper's seeds</dt><dd>{e(seeds)}</dd><dt>± means</dt><dd>{e(spec.pm or 'not stated')}</dd>"
            f"<dt>spec</dt><dd>{e(_spec_file(spec))} (version {spec.version})</dd></dl>")


def coverage_list(res: TableResult) -> str:
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
    if one_class := degenerate_summary(res):
        lines.append(one_class)
    if res.corrupt:
        lines.append(f"{res.corrupt} corrupt record(s) were skipped")
    if res.numerics:
        lines.append("Numerics (device, threads per job, CPU code paths, torch): "
                     + "; ".join(f"{label}: {n} record(s)" for label, n in sorted(res.numerics.items())))
    out = items(lines)
    if res.dirty:
        out += (f'<p class="warn">{res.dirty} record(s) were written from a tree with uncommitted code or spec '
                "changes (--allow-dirty): they may not reproduce from any commit.</p>")
    return out


def compute_list(res: TableResult) -> str:
    lines = [f"Records aggregated here: {describe_compute(res.compute)}"]
    if res.compute_all.jobs != res.compute.jobs:
        lines.append(f"Every record of this tier in the store, stale and failed included: "
                     f"{describe_compute(res.compute_all)}")
    return items(lines)


def notes_list(spec: Spec) -> str:
    notes = list(spec.reported_notes)
    notes += [f"({c.row}, {c.col}{', ' + c.metric if len(spec.metrics) > 1 else ''}): {c.note}"
              for c in spec.reported if c.note]
    return items(notes)


def curves_table(res: TableResult) -> str:
    rows = curve_summary(res)
    if not rows:
        return '<p class="muted">no results</p>'
    head = "".join(f"<th>{e(h)}</th>" for h in CURVES_HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{e(v)}</td>" for v in r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def report_body(res: TableResult, plot: str | None, other_tiers: list[tuple[str, str]], spec_href: str) -> str:
    spec, tier = res.spec, res.tier
    t = spec.tiers[tier]
    if tier == "paper":
        tier_text = "the paper's configuration" + (", with the deviations below" if t.deviations else "")
    else:
        tier_text = "deviates from the paper as listed below"
    parts = [f"<h1>{e(spec.id)}: {e(spec.title)} <span class=\"muted\">tier {e(tier)}</span></h1>",
             f'<p class="caption">{e(spec.caption)}</p>', spec_meta(spec),
             f'<p>Tier <b>{e(tier)}</b>: {e(tier_text)}. '
             + " ".join(f'<a href="{e(href)}">{e(label)}</a>' for href, label in other_tiers)
             + f' <a href="{e(spec_href)}">reported table and spec</a></p>',
             '<h2 id="results">Reported and reproduced</h2>', f'<p class="legend">{CELL_LEGEND}</p>']
    if res.marks_degenerate:
        parts.append(f'<p class="legend">{e(DEGENERATE_LEGEND)}</p>')
    parts.append(results_tables(res))
    if spec.curves:
        parts += ['<h3>Curves <span class="muted">(first and last point; the plot draws them whole)</span></h3>',
                  curves_table(res)]
    if plot:
        parts += ['<h2 id="plot">Plot</h2>',
                  f'<img class="plot" src="{e(plot)}" alt="{e(spec.id)} ({e(tier)} tier): ours (solid) and the '
                  f'paper (dashed)">']
    parts += [regime_table(res), '<h2 id="claims">Claim checks</h2>',
              '<p class="legend">Each claim is a set of pairwise comparisons, each a one-sided t-test over seeds '
              "(paired by seed index when both cells ran on the same data splits, Welch's otherwise); a claim takes "
              "the outcome and p-value of its weakest pair. Δ: the deciding pair's mean difference, &gt; 0 in the "
              "claimed direction. paper's numbers: the claim on the printed means.</p>",
              claims_table(res), column_table(res), agreement_table(res)]
    if t.deviations:
        parts += ['<h2 id="deviations">Deviations of this tier from the paper</h2>', items(t.deviations)]
    if spec.decisions:
        parts += ['<h2 id="decisions">Choices the paper leaves open, made here</h2>', items(spec.decisions)]
    parts += ['<h2 id="coverage">Coverage</h2>', coverage_list(res),
              '<h2 id="compute">Compute</h2>', compute_list(res)]
    notes = notes_list(spec)
    if notes:
        parts += ['<h2 id="notes">Notes on the reported numbers</h2>', notes]
    return "\n".join(parts)


def reported_tables(spec: Spec) -> str:
    bl, notes = reported_table(spec)
    out = []
    for b in bl:
        m = spec.metrics[b.metric]
        out.append(f"<h3>{e(b.title or m.label)} <span class=\"muted\">"
                   f"({'higher' if m.higher_is_better else 'lower'} is better)</span></h3>")
        head = "".join(f"<th>{e(c)}</th>" for c in b.cols)
        rows = []
        for kind, name in b.lines:
            if kind == "group":
                rows.append(f'<tr class="group"><td colspan="{len(b.cols) + 1}">{e(name)}</td></tr>')
                continue
            cells = []
            for c in b.cols:
                cell = spec.reported_cell(name, c, b.metric)
                mark = f" ({notes[cell.note][0]})" if cell and cell.note else ""
                text = e(fmt_reported(cell, m.fmt, mark, bold=("<b>", "</b>")))
                cells.append(f'<td class="cell">{text.replace("&lt;b&gt;", "<b>").replace("&lt;/b&gt;", "</b>")}</td>')
            rows.append(f'<tr><td class="name">{e(name)}</td>{"".join(cells)}</tr>')
        out.append(f'<div class="scroll"><table class="paper"><thead><tr><th class="name"></th>{head}</tr></thead>'
                   f'<tbody>{"".join(rows)}</tbody></table></div>')
    if notes:
        out.append('<ol class="tight">' + "".join(f"<li>{e(n)}</li>" for _, n in sorted(notes.values())) + "</ol>")
    return "\n".join(out)


def spec_body(spec: Spec, reports: list[tuple[str, str]]) -> str:
    links = " ".join(f'<a href="{e(href)}">{e(label)}</a>' for href, label in reports) or \
        '<span class="muted">no results yet at any tier</span>'
    parts = [f"<h1>{e(spec.id)}: {e(spec.title)} <span class=\"muted\">as reported</span></h1>",
             f'<p class="caption">{e(spec.caption)}</p>', spec_meta(spec), f"<p>Reports: {links}</p>",
             "<h2>Reported numbers, laid out as the paper prints them</h2>", reported_tables(spec)]
    if spec.reported_notes:
        parts += ["<h3>Notes</h3>", items(spec.reported_notes)]
    if spec.claims:
        parts += ["<h2>Claims checked</h2>",
                  items([f"{c.text} ({describe(c, spec)})" for c in spec.claims])]
    if spec.decisions:
        parts += ["<h2>Choices the paper leaves open, made here</h2>", items(spec.decisions)]
    for name, tier in spec.tiers.items():
        if tier.deviations:
            parts += [f"<h2>Deviations of the {e(name)} tier</h2>", items(tier.deviations)]
    return "\n".join(parts)
