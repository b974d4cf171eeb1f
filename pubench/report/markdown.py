"""Markdown reports (tabulate): reported vs reproduced, paper-shaped, with claim checks."""

from __future__ import annotations

from tabulate import tabulate

from pubench.registry.spec import Spec
from pubench.report.added import HEADERS as ADDED_HEADERS
from pubench.report.added import LEGEND as ADDED_LEGEND
from pubench.report.added import added_rows_table
from pubench.report.agreement import HEADERS as AGREEMENT_HEADERS
from pubench.report.agreement import agreement
from pubench.report.pooled import POOLED_HEADERS, POOLED_LEGEND, pooled_rows
from pubench.report.checks import claim_checks, claim_fmt, column_checks, describe
from pubench.report.collect import TableResult, unregistered_line
from pubench.report.compute import describe as describe_compute
from pubench.report.evidence import (AGREEMENT_LEGEND, CLAIM_STATUS_LEGEND, REGIME_HEADERS, REGIME_LEGEND, claim_row, claim_title,
                                     regime_revisions, regime_rows, regime_whys)
from pubench.report.layout import (
    DASH,
    CURVES_HEADERS,
    DEGENERATE_LEGEND,
    blocks,
    SMOKE_TEXT,
    cell_marks,
    coinciding_text,
    curve_summary,
    degenerate_summary, one_class_whys,
    fmt,
    fmt_ours,
    fmt_reported,
    plot_alt,
    reported_table,
    tier_line,
)


def _cell(res: TableResult, row: str, col: str, metric: str) -> str:
    f = res.spec.metrics[metric].fmt
    s, r, d = res.get(row, col, metric), res.reported(row, col, metric), res.delta(row, col, metric)
    ours = DASH if s is None else fmt_ours(s.mean, s.std, s.n, f)
    ours = " ".join([ours, *cell_marks(res, row, col, metric)])
    if r is None:  # the paper registers no number for this cell at all
        return ours
    paper = fmt_reported(r, f)
    delta = "" if d is None else f" [{format(d, '+' + f)}]"
    return f"{ours} / {paper}{delta}"


def _header(spec: Spec, tier: str) -> list[str]:
    return [
        f"# {spec.id}: {spec.title} ({spec.paper}), tier `{tier}`"
        + (f" ({spec.variant_label})" if spec.variant is not None else ""), "",
        f"> {spec.caption}", "",
        f"- Source: {spec.source}",
        f"- Paper: {spec.reported_seeds if spec.reported_seeds is not None else 'unstated'} seed(s); "
        f"± means: {spec.pm or 'not stated'}",
        f"- Tier `{tier}`: {tier_line(spec, tier)}.",
    ]


def _setup(spec: Spec, tier: str) -> list[str]:
    """The tier's deviations and the spec's decisions: after the results and their checks."""
    from pubench.registry.changes import deviation_lines, deviations_lead

    deviations, lead = deviation_lines(spec, tier), deviations_lead(spec, tier)
    lines = []
    if deviations:
        lines += ["", f"## Deviations of tier `{tier}` from the paper", ""] + ([lead, ""] if lead else []) + \
            [f"- {d}" for d in deviations]
    if spec.decisions:
        lines += ["", "## Choices the paper leaves open, made here", ""] + [f"- {d}" for d in spec.decisions]
    return lines


def render_markdown(res: TableResult, plot: str | None = "") -> str:
    """The report in markdown: the plot (a figure's ``<id>.png`` beside the file; ``plot`` names
    another file, None leaves it out), the tables, the regime, claims and order checks, coverage,
    then the tier's deviations, the spec's decisions and the notes on the reported numbers."""
    spec = res.spec
    lines = _header(spec, res.tier)
    if plot == "":
        plot = f"{spec.id}.png" if spec.kind == "figure" else None
    if plot:
        lines += ["", "## Plot", "", f"![{plot_alt(res)}]({plot})"]
        if note := coinciding_text(res):
            lines += ["", note]
    lines += [
        "", "## Reported and reproduced", "",
        "Cell: reproduced mean ± std (n seeds) / reported [Δ]. std is the sample std over seeds "
        "(none for a single seed); Δ = reproduced − reported, signed so that Δ > 0 is better than reported.",
    ]
    if res.pipeline_check:
        lines += ["", f"Tier `{res.tier}` is {SMOKE_TEXT}: read its cells as a check that every cell runs, not as "
                  "results."]
    if res.marks_degenerate:
        lines += ["", DEGENERATE_LEGEND]
    sig = spec.significance
    if sig:
        lines += ["", f"{sig['mark']}: {sig['text']} Ours: the mark when {sig['better']} beats the cell by a one-sided "
                  f"paired t-test over the seeds (paired by seed index, same data split) at {sig['level']:.0%} "
                  "confidence; the paper's marks follow its numbers."]
    for b in blocks(spec):
        m = spec.metrics[b.metric]
        title = b.title or m.label
        lines += ["", f"### {title} ({'higher' if m.higher_is_better else 'lower'} is better)", ""]
        body = []
        for kind, name in b.lines:
            if kind == "group":
                body.append([f"**{name}**"] + [""] * len(b.cols))
            else:
                body.append([name] + [_cell(res, name, c, b.metric) for c in b.cols])
        lines.append(tabulate(body, headers=[""] + b.cols, tablefmt="github", disable_numparse=True))
    added = added_rows_table(res)
    if added:
        lines += ["", "## Rows added to the paper's", "", ADDED_LEGEND, "", *([res.baselines, ""] if res.baselines else []),
                  tabulate(added, headers=ADDED_HEADERS, tablefmt="github", disable_numparse=True)]
    if spec.curves:
        curves = curve_summary(res)
        lines += ["", "### Curves (recorded per job; the plot draws them whole)", "",
                  "First and last point of each curve: x: mean ± std over seeds (n). The paper prints no number "
                  "of its curves."]
        lines += ["", tabulate(curves, headers=CURVES_HEADERS, tablefmt="github", disable_numparse=True)
                  if curves else "(no results)"]
    pooled = pooled_rows(res)
    if pooled:
        lines += ["", "## Spread across specs", "", POOLED_LEGEND, "",
                  tabulate(pooled, headers=POOLED_HEADERS, tablefmt="github", disable_numparse=True)]
    regime = _regime_md(res)
    lines += ([""] + regime if regime else []) + ["", _checks_md(res), "", _agreement_md(res), "", _status_md(res)]
    lines += _setup(spec, res.tier)
    notes = [c for c in spec.reported if c.note]
    if notes or spec.reported_notes:
        lines += ["", "## Notes on the reported numbers", ""]
        lines += [f"- {n}" for n in spec.reported_notes]
        lines += [f"- ({c.row}, {c.col}{', ' + c.metric if len(spec.metrics) > 1 else ''}): {c.note}" for c in notes]
    return "\n".join(lines) + "\n"


CLAIMS_LEGEND = (
    'Each claim is a set of pairwise comparisons "A beats B" in the direction of the metric, each a '
    "one-sided t-test over seeds: paired by seed index when both cells ran on the same data splits, "
    "Welch's otherwise. ours: `holds (p)` = in the claimed direction, significant at 5%; "
    "`holds, not significant (p)`; `tie` = the means print the same; `fails` = against it (p of the "
    "opposite direction); `not testable` = fewer than 2 seeds. A claim takes the outcome and p-value of "
    "its weakest pair (no multiplicity correction: every pair must hold). Δ = mean difference of the deciding "
    "pair, > 0 in the claimed direction. paper's numbers: the claim on the reported means."
)


def _regime_md(res: TableResult) -> list[str]:
    rows = regime_rows(res)
    if not rows:
        return []
    whys = [f"- Why, at tier `{res.tier}`: {w}" for w in regime_whys(res)] + [f"- {w}" for w in regime_revisions(res)]
    return ["## Regime", "", REGIME_LEGEND, "",
            tabulate(rows, headers=REGIME_HEADERS, tablefmt="github", disable_numparse=True)] + ([""] + whys if whys
                                                                                                 else [])


def _agreement_md(res: TableResult) -> str:
    a = agreement(res)
    lines = ["## Order of the paper's pairs", "", AGREEMENT_LEGEND, "", a.summary()]
    if a.pairs:
        lines += ["", tabulate(a.rows(), headers=AGREEMENT_HEADERS, tablefmt="github", disable_numparse=True)]
    return "\n".join(lines)


def _checks_md(res: TableResult) -> str:
    lines = ["## Claim checks"]
    claims = claim_checks(res)
    if claims:
        rows, prev = [], None
        for c in claims:  # a claim split into several checks prints its text once
            r, title = claim_row(c, claim_fmt(c.claim, res.spec)), claim_title(c)
            rows.append(['"' if title == prev else title, describe(c.claim, res.spec), r.status,
                         r.test, r.pair, r.delta, r.mdd, r.paper_gap, r.seeds, r.paper, r.detail])
            prev = title
        headers = ["claim", "checked", "ours", "test", "deciding pair", "Δ", "MDD", "paper gap", "seeds for paper gap",
                   "paper's numbers", "detail"]
        lines += ["", CLAIMS_LEGEND, "", CLAIM_STATUS_LEGEND, "",
                  tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)]
    cols = column_checks(res)
    if cols:
        rows = []
        for c in cols:
            match = {True: "yes", False: "no", None: DASH}[c.best_match]
            tau = DASH if c.tau is None else f"{c.tau:+.2f} (n={c.n_rows})"
            label = " / ".join(x for x in (c.group, c.col, c.metric if len(res.spec.metrics) > 1 else None) if x)
            rows.append([label, c.best_ours or DASH, c.best_paper or DASH, match, tau])
        along = "row" if res.spec.methods_in == "cols" else "column"
        method = "column" if res.spec.methods_in == "cols" else "row"
        lines += ["", f"Best {method} per {along} and rank agreement with the paper (Kendall tau over the {method}s "
                  "with both numbers):",
                  "", tabulate(rows, headers=[along, "best (ours)", "best (paper)", "same", "Kendall tau"],
                               tablefmt="github", disable_numparse=True)]
    return "\n".join(lines)


def _status_md(res: TableResult) -> str:
    spec = res.spec
    total = len(spec.cells())
    unavailable = [(r, c, spec.unavailable_reason(res.tier, r, c)) for r, c in spec.cells()]
    unavailable = [u for u in unavailable if u[2]]
    lines = ["## Coverage", "", f"- Cells with results: {res.cells_done} of {total}"
             f" (seeds per cell: {sorted(set(res.seeds_done.values())) or '—'})"]
    if res.failed:
        lines.append(f"- Cells whose jobs failed ({len(res.failed)}): "
                     + "; ".join(f"{r}|{c}: {e}" for (r, c), e in sorted(res.failed.items())[:10]))
    if unavailable:
        reasons: dict[str, list[str]] = {}
        for r, c, why in unavailable:
            reasons.setdefault(why, []).append(f"{r}|{c}")
        for why, cells in reasons.items():
            lines.append(f"- Not runnable at this tier ({len(cells)} cells): {why}")
    if res.stale:
        lines.append(f"- {res.stale} older record(s) from a changed config were left out")
    if unregistered := unregistered_line(res):
        lines.append(f"- {unregistered}")
    if one_class := degenerate_summary(res):
        lines.append(f"- {one_class}")
        lines += [f"  - Why, at tier `{res.tier}`: {why}" for why in one_class_whys(res)]
    if res.corrupt:
        lines.append(f"- {res.corrupt} corrupt record(s) were skipped (`pubench run` quarantines and reruns them)")
    if res.fast_profile:
        lines.append(f"- {res.fast_profile} record(s) of the opt-in fast numerics profile (`--fast-numerics`: "
                     "channels_last, torch.compile; other numbers) were left out: no table, claim or comparison "
                     "puts them beside the canonical ones")
    if res.numerics:
        lines.append("- Numerics (device, threads per job, CPU code paths, torch): "
                     + "; ".join(f"{label}: {n} record(s)" for label, n in sorted(res.numerics.items())))
    lines.append(f"- Compute of the records aggregated here: {describe_compute(res.compute)}")
    if res.compute_all.jobs != res.compute.jobs:
        lines.append(f"- Every record of this tier in the store, stale and failed included: "
                     f"{describe_compute(res.compute_all)}")
    if res.dirty:
        lines.append(f"- **{res.dirty} record(s) were written from a tree with uncommitted code or spec changes** "
                     "(`--allow-dirty`): they may not reproduce from any commit")
    return "\n".join(lines)


def render_reported_markdown(spec: Spec) -> str:
    """The reported table alone, laid out as the paper prints it (``pubench show``)."""
    bl, notes = reported_table(spec)
    lines = [f"{spec.id}: {spec.title} ({spec.paper})", spec.caption,
             f"Paper seeds: {spec.reported_seeds if spec.reported_seeds is not None else 'unstated'}; "
             f"± means: {spec.pm or 'not stated'}"]
    for b in bl:
        m = spec.metrics[b.metric]
        body = []
        for kind, name in b.lines:
            if kind == "group":
                body.append([f"[{name}]"] + [""] * len(b.cols))
                continue
            row = [name]
            for c in b.cols:
                cell = spec.reported_cell(name, c, b.metric)
                mark = f" ({notes[cell.note][0]})" if cell and cell.note else ""
                row.append(fmt_reported(cell, m.fmt, mark))
            body.append(row)
        lines += ["", f"{b.title or m.label} ({'↑' if m.higher_is_better else '↓'})",
                  tabulate(body, headers=[""] + b.cols, tablefmt="simple", disable_numparse=True)]
    if notes or spec.reported_notes:
        lines.append("")
        lines += [f"* {n}" for n in spec.reported_notes]
        lines += [f"({i}) {n}" for i, n in notes.values()]
    return "\n".join(lines) + "\n"


__all__ = ["render_markdown", "render_reported_markdown", "fmt"]
