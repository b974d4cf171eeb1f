"""Claim checks: does the reproduction tell the paper's story?

* Generic, per metric and column (within each row group): is the best row ours the same
  as the paper's, and how well do the row rankings agree (Kendall tau)?
* Spec claims (``claims:`` in the YAML): ``best_row`` (a row is best in each column),
  ``order`` (rows rank in the given order), ``greater`` (row a beats row b).
"""

from __future__ import annotations

from dataclasses import dataclass

from scipy.stats import kendalltau

from pubench.registry.spec import Claim
from pubench.report.collect import TableResult


@dataclass
class ColumnCheck:
    """One comparison line: a column (methods in rows) or a row (``methods_in: cols``)."""

    group: str | None
    col: str
    metric: str
    best_ours: str | None
    best_paper: str | None
    tau: float | None
    n_rows: int

    @property
    def best_match(self) -> bool | None:
        if self.best_ours is None or self.best_paper is None:
            return None
        return self.best_ours == self.best_paper


@dataclass
class ClaimCheck:
    claim: Claim
    status: str  # holds | fails | n/a
    detail: str
    paper_status: str  # what the reported numbers say: holds | fails | n/a


def _row_sets(res: TableResult) -> list[tuple[str | None, list[str]]]:
    spec = res.spec
    if spec.row_groups:
        return list(spec.row_groups.items())
    return [(None, spec.rows)]


def _best(values: dict[str, float], higher: bool) -> str | None:
    if len(values) < 2:
        return None
    return (max if higher else min)(values, key=values.get)


def _comparisons(res: TableResult):
    """(group, fixed key, candidates, getter) for every line along which methods compete:
    each column within a row group (methods in rows, the default) or each row (``methods_in: cols``)."""
    spec = res.spec
    if spec.methods_in == "cols":
        cols = [c for c in spec.cols if c not in spec.derived_cols]
        for row in spec.rows:
            yield None, row, cols, lambda c, m, row=row: (res.get(row, c, m), res.reported(row, c, m))
        return
    for group, rows in _row_sets(res):
        for col in spec.cols:
            yield group, col, rows, lambda r, m, col=col: (res.get(r, col, m), res.reported(r, col, m))


def column_checks(res: TableResult) -> list[ColumnCheck]:
    """Per comparison line: the best method ours vs the paper's, and Kendall tau between them."""
    out = []
    for metric, m in res.spec.metrics.items():
        for group, key, cands, get in _comparisons(res):
            pairs = {x: get(x, metric) for x in cands}
            ours = {x: s.mean for x, (s, _) in pairs.items() if s is not None}
            paper = {x: r.mean for x, (_, r) in pairs.items() if r is not None and r.mean is not None}
            if not ours and not paper:
                continue
            both = [x for x in cands if x in ours and x in paper]
            tau = None
            if len(both) >= 3:
                t = kendalltau([ours[x] for x in both], [paper[x] for x in both]).statistic
                tau = None if t != t else float(t)  # nan when a side is constant
            out.append(ColumnCheck(group, key, metric, _best(ours, m.higher_is_better),
                                   _best(paper, m.higher_is_better), tau, len(both)))
    return out


def _better(a: float, b: float, higher: bool) -> bool:
    return a > b if higher else a < b


def _evaluate_cols(claim: Claim, get, higher: bool) -> tuple[str, list[str]]:
    """Column claims, per row: ``best_col`` (the first col beats the others) and
    ``col_order`` (values improve strictly along the listed cols)."""
    failures, checked = [], 0
    for row in claim.rows:
        vals = {c: v for c in claim.cols if (v := get(row, c)) is not None}
        if len(vals) < 2 or (claim.kind == "col_order" and len(vals) < len(claim.cols)):
            continue
        checked += 1
        if claim.kind == "best_col":
            first = claim.cols[0]
            if first not in vals:
                checked -= 1
                continue
            beaten = [c for c, v in vals.items() if c != first and not _better(vals[first], v, higher)]
            if beaten:
                failures.append(f"{row}: {first} not better than {', '.join(beaten)}")
        else:
            for a, b in zip(claim.cols, claim.cols[1:]):
                if not _better(vals[b], vals[a], higher):
                    failures.append(f"{row}: {b} not better than {a}")
    if checked == 0:
        return "n/a", ["no row has the values needed"]
    return ("fails" if failures else "holds"), failures or [f"holds in {checked} row(s)"]


def _evaluate(claim: Claim, get, higher: bool, group_rows) -> tuple[str, list[str]]:
    """Apply one claim to values from ``get(row, col) -> float | None``."""
    if claim.kind in ("best_col", "col_order"):
        return _evaluate_cols(claim, get, higher)
    failures, checked = [], 0
    for col in claim.cols:
        if claim.kind == "best_row":
            row = claim.rows[0]
            others = {r: get(r, col) for r in group_rows(row) if r != row}
            others = {r: v for r, v in others.items() if v is not None}
            mine = get(row, col)
            if mine is None or not others:
                continue
            checked += 1
            beaten = [r for r, v in others.items() if not _better(mine, v, higher)]
            if beaten:
                failures.append(f"{col}: not better than {', '.join(beaten)}")
        else:  # order / greater: each consecutive pair strictly in order
            vals = [get(r, col) for r in claim.rows]
            if any(v is None for v in vals):
                continue
            checked += 1
            for (ra, va), (rb, vb) in zip(zip(claim.rows, vals), zip(claim.rows[1:], vals[1:])):
                if not _better(va, vb, higher):
                    failures.append(f"{col}: {ra} not better than {rb}")
    if checked == 0:
        return "n/a", ["no column has the values needed"]
    return ("fails" if failures else "holds"), failures or [f"holds in {checked} column(s)"]


def describe(claim: Claim, spec) -> str:
    """What a claim compares, compactly: ``A > B`` means A is better than B (``<`` when lower
    is better); names the columns (rows) a row (column) claim is limited to."""
    better = " > " if spec.metrics[claim.metric].higher_is_better else " < "
    if claim.kind in ("best_col", "col_order"):
        what = (f"{claim.cols[0]} best of {', '.join(claim.cols)}" if claim.kind == "best_col"
                else better.join(reversed(claim.cols)))
        return what + (f" in {', '.join(claim.rows)}" if set(claim.rows) != set(spec.rows) else ", per row")
    what = f"{claim.rows[0]} best of its rows" if claim.kind == "best_row" else better.join(claim.rows)
    return what + (f" in {', '.join(claim.cols)}" if set(claim.cols) != set(spec.cols) else "")


def claim_checks(res: TableResult) -> list[ClaimCheck]:
    spec = res.spec

    def group_rows(row: str) -> list[str]:
        g = spec.group_of_row(row)
        return spec.row_groups[g] if g else spec.rows

    out = []
    for claim in spec.claims:
        higher = spec.metrics[claim.metric].higher_is_better

        def ours(r, c, m=claim.metric):
            s = res.get(r, c, m)
            return None if s is None else s.mean

        def paper(r, c, m=claim.metric):
            x = res.reported(r, c, m)
            return None if x is None else x.mean

        status, detail = _evaluate(claim, ours, higher, group_rows)
        paper_status, _ = _evaluate(claim, paper, higher, group_rows)
        out.append(ClaimCheck(claim, status, "; ".join(detail), paper_status))
    return out
