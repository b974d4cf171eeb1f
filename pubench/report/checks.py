"""Claim checks: does the reproduction tell the paper's story?

* Generic, per metric and column (within each row group): is the best row ours the same
  as the paper's, and how well do the row rankings agree (Kendall tau)?
* Spec claims (``claims:`` in the YAML): ``best_row`` (a row is best in each column),
  ``order`` (rows rank in the given order), ``greater`` (row a beats row b), ``best_col`` and
  ``col_order`` (the same along a row), ``curve_rises`` (a figure curve of a cell ends above its
  start: its last point against its first, per seed). A claim is the conjunction of the pairwise comparisons
  it makes; each is a one-sided t-test over seeds (:mod:`pubench.report.stats`), and the claim
  is as strong as its weakest link.
"""

from __future__ import annotations

from dataclasses import dataclass


from pubench.registry.spec import Claim
from pubench.report.collect import TableResult
from pubench.report.stats import (FAILS, HOLDS, HOLDS_NS, NOT_TESTABLE, TIE, WEAKNESS, PairTest, compare_cells,
                                  outcome_text, weakest)


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


_COUNTED = {HOLDS: "hold", HOLDS_NS: "hold (n.s.)", NOT_TESTABLE: "not testable", TIE: "tie", FAILS: "fail"}


@dataclass
class ClaimCheck:
    """A spec claim tested on our seeds: ``tests`` holds one :class:`PairTest` per pairwise
    comparison the claim makes whose two cells have results; the claim's outcome and p-value
    are those of its weakest link (:func:`pubench.report.stats.weakest`)."""

    claim: Claim
    tests: list[PairTest]
    paper_status: str  # what the reported means say: holds | tie | fails | n/a

    @property
    def weakest_link(self) -> PairTest | None:
        return weakest(self.tests) if self.tests else None

    @property
    def status(self) -> str:
        """holds | holds, not significant | tie | fails | not testable (also: no results)."""
        return self.weakest_link.outcome if self.tests else NOT_TESTABLE

    @property
    def outcome_text(self) -> str:
        return outcome_text(self.weakest_link) if self.tests else f"{NOT_TESTABLE} (no results)"

    @property
    def detail(self) -> str:
        """How many links, by outcome, and the ones that do not hold significantly (first few)."""
        if not self.tests:
            return "no pair of compared cells has results"
        counts = {o: sum(t.outcome == o for t in self.tests) for o in WEAKNESS}
        text = f"{len(self.tests)} pair(s): " + ", ".join(f"{k} {_COUNTED[o]}" for o, k in counts.items() if k)
        weak = sorted((t for t in self.tests if t.outcome != HOLDS), key=lambda t: -WEAKNESS[t.outcome])
        if len(self.tests) > 1 and weak:
            text += "; " + "; ".join(f"{t.where}: {t.better} vs {t.worse} {outcome_text(t)}" for t in weak[:4])
            text += f"; {len(weak) - 4} more" if len(weak) > 4 else ""
        return text


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
    if "columns" not in res.checks:  # every renderer of one result asks: test once
        res.checks["columns"] = _column_checks(res)
    return list(res.checks["columns"])


def _column_checks(res: TableResult) -> list[ColumnCheck]:
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
                from scipy.stats import kendalltau  # loaded when needed (issue 34)

                t = kendalltau([ours[x] for x in both], [paper[x] for x in both]).statistic
                tau = None if t != t else float(t)  # nan when a side is constant
            out.append(ColumnCheck(group, key, metric, _best(ours, m.higher_is_better),
                                   _best(paper, m.higher_is_better), tau, len(both)))
    return out


Cell = tuple[str, str]  # (row, col)


def _links(claim: Claim, group_rows) -> list[tuple[str, Cell, Cell]]:
    """Every pairwise comparison a claim makes, as (line, better cell, worse cell): per column,
    ``best_row`` pits its row against every other row of its row group and ``order`` / ``greater``
    each consecutive pair; per row, ``best_col`` pits its first column against the others and
    ``col_order`` compares consecutive columns, the later one better."""
    out = []
    if claim.kind in ("best_col", "col_order"):
        for row in claim.rows:
            pairs = ([(claim.cols[0], c) for c in claim.cols[1:]] if claim.kind == "best_col"
                     else [(b, a) for a, b in zip(claim.cols, claim.cols[1:])])
            out += [(row, (row, a), (row, b)) for a, b in pairs]
        return out
    for col in claim.cols:
        pairs = ([(claim.rows[0], r) for r in group_rows(claim.rows[0]) if r != claim.rows[0]]
                 if claim.kind == "best_row" else list(zip(claim.rows, claim.rows[1:])))
        out += [(col, (a, col), (b, col)) for a, b in pairs]
    return out


def _paper_status(links, reported, higher: bool, fmt: str) -> str:
    """The claim on the reported means alone: fails if a link goes the other way, tie if one
    prints equal, holds if all go the claimed way, n/a if no link has both numbers."""
    diffs = [(a, b) for a, b in ((reported(x), reported(y)) for _, x, y in links) if a is not None and b is not None]
    if not diffs:
        return "n/a"
    if any((a < b if higher else a > b) and format(a, fmt) != format(b, fmt) for a, b in diffs):
        return "fails"
    return "tie" if any(format(a, fmt) == format(b, fmt) for a, b in diffs) else "holds"


def claim_fmt(claim: Claim, spec) -> str:
    """The format of the numbers a claim compares: its curve's, else its metric's."""
    return spec.curve(claim.curve).fmt if claim.curve else spec.metrics[claim.metric].fmt


def describe(claim: Claim, spec) -> str:
    """What a claim compares, compactly: ``A > B`` means A is better than B (``<`` when lower
    is better); names the columns (rows) a row (column) claim is limited to."""
    if claim.kind == "curve_rises":
        where = "" if set(claim.cols) == set(spec.curve(claim.curve).cols) else f" in {', '.join(claim.cols)}"
        return f"{claim.curve}: last point > first point of {', '.join(claim.rows)}{where}"
    better = " > " if spec.metrics[claim.metric].higher_is_better else " < "
    if claim.kind in ("best_col", "col_order"):
        what = (f"{claim.cols[0]} best of {', '.join(claim.cols)}" if claim.kind == "best_col"
                else better.join(reversed(claim.cols)))
        return what + (f" in {', '.join(claim.rows)}" if set(claim.rows) != set(spec.rows) else ", per row")
    what = f"{claim.rows[0]} best of its rows" if claim.kind == "best_row" else better.join(claim.rows)
    return what + (f" in {', '.join(claim.cols)}" if set(claim.cols) != set(spec.cols) else "")


def claim_checks(res: TableResult) -> list[ClaimCheck]:
    if "claims" not in res.checks:  # every renderer of one result asks: test once
        res.checks["claims"] = _claim_checks(res)
    return list(res.checks["claims"])


def _claim_checks(res: TableResult) -> list[ClaimCheck]:
    spec = res.spec

    def group_rows(row: str) -> list[str]:
        g = spec.group_of_row(row)
        return spec.row_groups[g] if g else spec.rows

    out = []
    for claim in spec.claims:
        if claim.kind == "curve_rises":
            out.append(_curve_check(res, claim))
            continue
        m = spec.metrics[claim.metric]
        links = _links(claim, group_rows)
        is_col_claim = claim.kind in ("best_col", "col_order")
        tests = []
        for where, x, y in links:
            sx, sy = res.get(*x, claim.metric), res.get(*y, claim.metric)
            if sx is not None and sy is not None:
                names = (x[1], y[1]) if is_col_claim else (x[0], y[0])
                tests.append(compare_cells(sx, sy, higher_is_better=m.higher_is_better, fmt=m.fmt,
                                           labels=(*names, where)))

        def reported(cell, metric=claim.metric):
            r = res.reported(*cell, metric)
            return None if r is None else r.mean

        out.append(ClaimCheck(claim, tests, _paper_status(links, reported, m.higher_is_better, m.fmt)))
    return out


def _curve_check(res: TableResult, claim: Claim) -> ClaimCheck:
    """``curve_rises``: in each (row, col), the curve's last point beats its first, paired by
    seed (the two points of one run). The paper's curves print no numbers: ``n/a``."""
    fmt = res.spec.curve(claim.curve).fmt
    tests = []
    for row in claim.rows:
        for col in claim.cols:
            series = res.curve(claim.curve, row, col)
            first, last = (series.end(False), series.end(True)) if series else (None, None)
            if first is not None and last is not None:
                tests.append(compare_cells(last, first, higher_is_better=True, fmt=fmt,
                                           labels=("last", "first", f"{row} at {col}")))
    return ClaimCheck(claim, tests, "n/a")
