"""LaTeX reports (jinja2 + booktabs), one table per metric / column group."""

from __future__ import annotations

import jinja2

from pubench.report.checks import claim_checks, describe
from pubench.report.collect import TableResult
from pubench.report.layout import BOLD_MARK, blocks
from pubench.report.stats import pair_text

_TEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
                "<": r"\textless{}", ">": r"\textgreater{}"}


def escape_tex(text: object) -> str:
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in str(text)).replace("±", r"$\pm$")


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("pubench", "report/templates"),
                             autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["e_tex"] = escape_tex
    return env


def _cell(res: TableResult, row: str, col: str, metric: str) -> str:
    f = res.spec.metrics[metric].fmt
    s, r, d = res.get(row, col, metric), res.reported(row, col, metric), res.delta(row, col, metric)
    ours = "--"
    if s is not None:
        spread = "" if s.std is None else f" \\pm {format(s.std, f)}"  # a single seed has no std
        ours = f"${format(s.mean, f)}{spread}$ ({s.n})"
    paper = "--" if r is None or r.mean is None else format(r.mean, f)
    if r is not None and r.mark == BOLD_MARK and r.mean is not None:
        paper = f"\\textbf{{{paper}}}"
    delta = "" if d is None else f"; ${format(d, '+' + f)}$"
    return f"{ours} {{\\scriptsize ({paper}{delta})}}"


def _claims(res: TableResult) -> list[str]:
    """One item per claim: what is checked, our outcome, the weakest pair with its mean
    difference, and the paper's numbers' verdict (already escaped)."""
    items = []
    for c in claim_checks(res):
        w, f = c.weakest_link, res.spec.metrics[c.claim.metric].fmt
        text = f"{escape_tex(describe(c.claim, res.spec))}: \\emph{{{escape_tex(c.outcome_text)}}}"
        if w is not None:
            text += f"; {escape_tex(pair_text(w))}, $\\Delta = {format(w.diff, '+' + f)}$"
        items.append(text + f"; paper's numbers: {escape_tex(c.paper_status)}.")
    return items


def render_latex(res: TableResult) -> str:
    out_blocks = []
    for b in blocks(res.spec):
        body = [(k, n, [] if k == "group" else [_cell(res, n, c, b.metric) for c in b.cols]) for k, n in b.lines]
        out_blocks.append({"title": b.title, "cols": b.cols, "body": body})
    return _env().get_template("table.tex.j2").render(
        spec=res.spec, tier=res.tier, caption=res.spec.caption, blocks=out_blocks, claims=_claims(res))
