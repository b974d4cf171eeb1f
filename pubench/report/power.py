"""Power of a claim's pairwise test: what difference our seeds can detect, and how many seeds
the paper's printed gap would need.

For one pair "A beats B" (:func:`pubench.report.stats.compare_cells`) the seeds' spread
gives the **minimum detectable difference** (MDD): the true difference a one-sided test at
level alpha = 0.05 detects with power 0.8, by the usual approximation

* paired (the cells ran on the same splits; n paired seeds, sd_d the sample std of the
  paired differences): ``MDD = (t_{1-alpha, n-1} + t_{power, n-1}) * sd_d / sqrt(n)``;
* unpaired (Welch; n_a, n_b seeds, sample stds s_a, s_b):
  ``MDD = (t_{1-alpha, df} + t_{power, df}) * sqrt(s_a^2 / n_a + s_b^2 / n_b)`` with the
  Welch-Satterthwaite df.

The **seeds needed** for the paper's gap g (the printed means' difference in the claimed
direction) is the smallest n >= 2 with MDD(n) <= g, the spread held at what we observed
(unpaired: n seeds in each cell), capped at :data:`MAX_SEEDS` (printed ``>1000``).

A pair is **underpowered** when the paper's gap is positive but below our MDD: our seeds
could not be expected to see the effect the paper prints, so a non-significant result
against the claim says little about it. The spread is itself estimated from few seeds, so
both figures are rough (with 3 seeds the sample std is within a factor of ~2 of the true
one only about 80% of the time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pubench.report.collect import CellStats, sample_std
from pubench.report.stats import ALPHA, paired_values, welch_df
from pubench.utils.student_t import t_ppf

POWER = 0.8
MAX_SEEDS = 1000


def _quantiles(df: float) -> float:
    return t_ppf(1.0 - ALPHA, df) + t_ppf(POWER, df)


def mdd_paired(sd_d: float, n: int) -> float | None:
    """Minimum detectable difference of a one-sided paired t-test over ``n`` pairs whose
    differences have sample std ``sd_d``; ``None`` with fewer than 2 pairs."""
    if n < 2:
        return None
    return float(_quantiles(n - 1) * sd_d / math.sqrt(n))


def mdd_welch(sd_a: float, sd_b: float, n_a: int, n_b: int) -> float | None:
    """Minimum detectable difference of a one-sided Welch test; ``None`` when a cell has fewer
    than 2 seeds."""
    if min(n_a, n_b) < 2:
        return None
    se = math.sqrt(sd_a ** 2 / n_a + sd_b ** 2 / n_b)
    return float(_quantiles(welch_df(sd_a, sd_b, n_a, n_b)) * se)


def _first(ok) -> int:
    """The smallest n in 2 ... MAX_SEEDS with ``ok(n)`` (``ok`` turns true once and stays so: the
    detectable difference only shrinks as seeds grow), ``MAX_SEEDS + 1`` when none: a bisection,
    ten quantiles instead of a thousand."""
    lo, hi = 2, MAX_SEEDS + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def seeds_needed_paired(sd_d: float, gap: float) -> int | None:
    """The smallest n (2 ... MAX_SEEDS) of paired seeds with ``mdd_paired(sd_d, n) <= gap``;
    ``MAX_SEEDS + 1`` when none; ``None`` when the gap is not positive."""
    if not gap > 0:
        return None
    return _first(lambda n: _quantiles(n - 1) * sd_d / math.sqrt(n) <= gap)


def seeds_needed_welch(sd_a: float, sd_b: float, gap: float) -> int | None:
    """The same for two independent cells of n seeds each, with the observed stds."""
    if not gap > 0:
        return None
    va, vb = sd_a ** 2, sd_b ** 2
    if va + vb == 0.0:
        return 2
    return _first(lambda n: _quantiles((va + vb) ** 2 * (n - 1) / (va ** 2 + vb ** 2)) * math.sqrt((va + vb) / n)
                  <= gap)


def fmt_seeds(n: int | None) -> str:
    if n is None:
        return "—"
    return f">{MAX_SEEDS}" if n > MAX_SEEDS else str(n)


@dataclass(frozen=True)
class PairPower:
    """The power figures of one pair "better beats worse": ``sd`` is the paired differences'
    sample std (paired) or the pooled std sqrt((s_a^2 + s_b^2) / 2) (Welch); ``mdd`` the
    minimum detectable difference with our seeds (None with fewer than 2); ``paper_gap`` the
    reported means' difference in the claimed direction (None when a cell has no printed
    number); ``seeds_needed`` for that gap (None when it is not positive or unknown)."""

    paired: bool
    n: int
    sd: float | None
    mdd: float | None
    paper_gap: float | None
    seeds_needed: int | None

    @property
    def underpowered(self) -> bool:
        """The paper's gap is in the claimed direction but smaller than what our seeds can detect."""
        return (self.paper_gap is not None and self.paper_gap > 0 and self.mdd is not None
                and self.paper_gap < self.mdd)

    def text(self, fmt: str) -> str:
        """``MDD 2.31 (paired, 3 seeds); paper gap +0.80 needs 26 seeds``."""
        if self.mdd is None:
            return "MDD: fewer than 2 seeds"
        how = f"paired, {self.n} seeds" if self.paired else f"Welch, n={self.n}"
        out = f"MDD {format(self.mdd, fmt)} ({how})"
        if self.paper_gap is None:
            return out + "; no paper gap"
        out += f"; paper gap {format(self.paper_gap, '+' + fmt)}"
        return out + (f" needs {fmt_seeds(self.seeds_needed)} seeds" if self.seeds_needed is not None
                      else " (not in the claimed direction)")


def pair_power(better: CellStats, worse: CellStats, paper_gap: float | None) -> PairPower:
    """The power figures of "``better`` beats ``worse``", paired exactly as the pair's test is
    (:func:`pubench.report.stats.paired_values`); ``paper_gap`` is signed in the claimed
    direction (> 0: the paper's numbers go the claimed way)."""
    a, b, paired = paired_values(better, worse)
    if paired:
        n = len(a)
        sd = sample_std([x - y for x, y in zip(a, b)]) if n > 1 else None
        mdd = None if sd is None else mdd_paired(sd, n)
        need = None if sd is None or paper_gap is None else seeds_needed_paired(sd, paper_gap)
        return PairPower(True, n, sd, mdd, paper_gap, need)
    n = min(len(a), len(b))
    if n < 2:
        return PairPower(False, n, None, None, paper_gap, None)
    sa, sb = sample_std(a), sample_std(b)
    mdd = mdd_welch(sa, sb, len(a), len(b))
    need = None if paper_gap is None else seeds_needed_welch(sa, sb, paper_gap)
    return PairPower(False, n, math.sqrt((sa ** 2 + sb ** 2) / 2), mdd, paper_gap, need)
