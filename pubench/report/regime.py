"""Regime checks: is a block of the table in the regime where its methods work?

A claim compares methods that modify one working base (a contrastive loss on an encoder that
learns, a PU risk on a classifier that predicts both classes). Where the base does not work
(an encoder barely above an untrained one, a classifier that calls almost nothing positive)
a "fails" is noise, not evidence against the paper. A spec's ``regime:`` blocks
(:class:`pubench.registry.spec.RegimeBlock`) say which rows must work; this module checks
each block per column, at every tier the same way, from the block's reference and
baseline rows and the seeds' spread only, never from the claims under test:

* ``trained``: the reference row beats ``baseline`` (e.g. an untrained encoder) by more
  than ``margin`` in the metric's direction: a one-sided t-test of "gain > margin" over
  seeds (paired by seed index on equal splits, Welch otherwise; :mod:`pubench.report.stats`)
  with p < 0.05. ``in regime`` when it holds, ``not in regime`` otherwise (the gain and p say
  by how much), ``not testable`` without 2 seeds in both cells.
* ``two_classes``: among the reference rows' seeds with binary metrics in the column, the
  share that is near-one-class (test recall or specificity under 5%,
  :mod:`pubench.report.oneclass`) is at most ``max_share``; ``not testable`` when no seed has
  binary metrics.

A derived column (the paper's Mean) follows its sources: not in regime when any source
is, in regime when all are, else not testable.

In a table whose methods are its columns (``methods_in: cols``) a block's ``rows`` are
method columns and its ``cols`` the settings (table rows) it is checked in; the verdicts
read the cells transposed.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from pubench.registry.spec import RegimeBlock
from pubench.report.collect import TableResult
from pubench.report.stats import ALPHA, _one_sided_p, fmt_p, paired_values

IN, OUT, UNTESTED = "in regime", "not in regime", "not testable"


@dataclass(frozen=True)
class RegimeVerdict:
    """The verdict of one block in one column at one tier, with its numbers: ``gain`` (mean
    reference minus baseline, > 0 better), ``p`` (one-sided, of gain > margin), ``n`` (paired
    seeds, or the smaller cell's seeds), ``paired``; or ``near`` of ``seeds`` near-one-class
    seeds (two_classes). ``reason`` says why a verdict is not testable."""

    block: RegimeBlock
    tier: str
    col: str
    verdict: str
    gain: float | None = None
    p: float | None = None
    n: int = 0
    paired: bool = False
    near: int | None = None
    seeds: int | None = None
    reason: str = ""

    @property
    def numbers(self) -> str:
        """What the verdict rests on, e.g. ``gain +12.31 > 10 (paired, 3 seeds, p=0.012)`` or
        ``2 of 3 seeds near-one-class (at most 0% allowed)``."""
        b = self.block
        if self.verdict == UNTESTED:
            return self.reason
        if b.check == "two_classes":
            return (f"{self.near} of {self.seeds} seed(s) of {', '.join(b.reference)} near-one-class "
                    f"(at most {b.max_share:.0%} allowed)")
        test = f"paired, {self.n} seeds" if self.paired else f"Welch, n={self.n}"
        sign = ">" if self.verdict == IN else "not >"
        return f"gain {self.gain:+.2f} {sign} {b.margin:g} ({test}, {fmt_p(self.p)})"

    @property
    def text(self) -> str:
        return f"{self.verdict}: {self.numbers}"


def _cell(res: TableResult, method: str, setting: str) -> tuple[str, str]:
    """The (row, col) of a block's method in one of its settings."""
    return (setting, method) if res.spec.methods_in == "cols" else (method, setting)


def _trained(res: TableResult, b: RegimeBlock, col: str) -> RegimeVerdict:
    m = res.spec.metrics[b.metric]
    ref, base = res.get(*_cell(res, b.reference[0], col), b.metric), res.get(*_cell(res, b.baseline, col), b.metric)
    if ref is None or base is None:
        missing = [r for r, s in ((b.reference[0], ref), (b.baseline, base)) if s is None]
        return RegimeVerdict(b, res.tier, col, UNTESTED, reason=f"no results for {', '.join(missing)}")
    a, c, paired = paired_values(ref, base)
    n = len(a) if paired else min(len(a), len(c))
    if n < 2:
        return RegimeVerdict(b, res.tier, col, UNTESTED, n=n, paired=paired,
                             reason="fewer than 2 seeds" + (" in common" if paired else " in a cell"))
    sign = 1.0 if m.higher_is_better else -1.0
    gain = sign * (statistics.fmean(a) - statistics.fmean(c))
    shifted = [x - sign * b.margin for x in a]  # H0: gain <= margin  <=>  (ref - margin) not better than base
    p = _one_sided_p(shifted, c, paired, m.higher_is_better, gain - b.margin)
    return RegimeVerdict(b, res.tier, col, IN if p < ALPHA and gain > b.margin else OUT, gain=gain, p=p, n=n,
                         paired=paired)


def _two_classes(res: TableResult, b: RegimeBlock, col: str) -> RegimeVerdict:
    seeds = near = 0
    for row in b.reference:
        cell = _cell(res, row, col)
        binary = res.binary.get(cell, set())
        seeds += len(binary)
        near += len(set(res.degenerate.get(cell, {})) & binary)
    if not seeds:
        why = "no results" if not any(_cell(res, r, col) in res.seeds_done for r in b.reference) \
            else "the records carry no binary metrics (acc, precision, recall)"
        return RegimeVerdict(b, res.tier, col, UNTESTED, reason=why)
    ok = near <= b.max_share * seeds + 1e-9
    return RegimeVerdict(b, res.tier, col, IN if ok else OUT, near=near, seeds=seeds, n=seeds)


def regime_verdicts(res: TableResult) -> list[RegimeVerdict]:
    """Every block of the spec in every one of its columns, at the result's tier."""
    out = []
    for b in res.spec.regime:
        check = _trained if b.check == "trained" else _two_classes
        out += [check(res, b, col) for col in b.cols]
    return out


class RegimeMap:
    """Which verdicts cover a cell: those of the blocks holding its row in its column (a
    derived column: in its source columns)."""

    def __init__(self, res: TableResult, verdicts: list[RegimeVerdict] | None = None):
        self.spec = res.spec
        self.verdicts = regime_verdicts(res) if verdicts is None else verdicts
        self._by = {(v.block.name, v.col): v for v in self.verdicts}

    def of(self, row: str, col: str) -> list[RegimeVerdict]:
        if self.spec.methods_in == "cols":  # the method is the column, the setting the row
            return [self._by[(b.name, row)] for b in self.spec.regime if col in b.rows if (b.name, row) in self._by]
        cols = self.spec.derived_cols.get(col, [col])
        return [self._by[(b.name, c)] for b in self.spec.regime if row in b.rows for c in cols
                if (b.name, c) in self._by]

    def out_of_regime(self, row: str, col: str) -> list[RegimeVerdict]:
        return [v for v in self.of(row, col) if v.verdict == OUT]


def unexplained_one_class(res: TableResult, regime_map: RegimeMap) -> dict[tuple[str, str], int]:
    """Near-one-class seeds per cell that neither a block out of regime (``regime_map``) nor a
    ``one_class_why`` entry of the tier accounts for (issue 36: at most 5% of a table's records)."""
    return {cell: len(seeds) for cell, seeds in res.degenerate.items()
            if not regime_map.out_of_regime(*cell) and not res.spec.one_class_reason(res.tier, *cell)}
