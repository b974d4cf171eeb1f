"""Is "A beats B" supported by the seeds? One pairwise comparison of a claim, with a t-test.

Every claim of a spec is a conjunction of pairwise comparisons "cell A is better than cell B"
in the metric's direction (:mod:`pubench.report.checks` builds them); this module tests one.

* **Pairing.** Seeds of one seed index run on the same data split when the two cells share
  ``params.data`` (the data seed comes from the spec, ``params.data`` and the seed index, not
  from the method). When the two cells ran on the same split at every seed index they have
  in common, the comparison is paired over those indices (``scipy.stats.ttest_rel``; seeds
  present in only one cell are left out). Otherwise (e.g. ``n_P=1k`` vs ``n_P=10k``, which
  draw different splits) the seeds are independent and the test is Welch's unequal-variance
  t-test over all seeds of each cell (``scipy.stats.ttest_ind_from_stats``).
* **One-sided.** The claim names a direction, so H0 is "A is not better than B" and the
  p-value is the one-sided one of the claimed direction; a failed comparison reports the
  one-sided p-value of the opposite direction (``1 - p``). At 5% this equals a two-sided
  test at 10% read in the claimed direction.
* **Outcomes**, in this order: ``not testable`` when fewer than 2 paired seeds (or, unpaired,
  a cell with fewer than 2 seeds); ``tie`` when the two means print the same at the metric's
  ``format`` (all-zero paired differences included: a difference the table cannot show is
  not one it claims); ``holds`` when the mean difference is in the claimed direction and
  p < ``ALPHA``; ``holds, not significant`` when in the claimed direction and p >= ``ALPHA``;
  ``fails`` when against it.
* Differences with no spread (every paired difference equal, or two constant cells) are
  deterministic: p = 0 in the direction of the difference, 1 against it.
"""

from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass

from pubench.report.collect import CellStats, sample_std
from pubench.utils.student_t import t_sf


def _t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (:mod:`pubench.utils.student_t`:
    scipy's numbers without importing scipy, issue 54)."""
    return t_sf(t, df)


def _paired_p(a: list[float], b: list[float], alternative: str) -> float:
    """``scipy.stats.ttest_rel(a, b, alternative=...)``'s p-value."""
    d = [x - y for x, y in zip(a, b)]
    n = len(d)
    t = statistics.fmean(d) / (sample_std(d) / math.sqrt(n))
    return _t_sf(t if alternative == "greater" else -t, n - 1)


def welch_df(sd_a: float, sd_b: float, n_a: int, n_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom (n_a + n_b - 2 when both spreads are 0)."""
    va, vb = sd_a ** 2 / n_a, sd_b ** 2 / n_b
    if va + vb == 0.0:
        return float(n_a + n_b - 2)
    return (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))



def _welch_p(a: list[float], b: list[float], alternative: str) -> float:
    """``scipy.stats.ttest_ind_from_stats(..., equal_var=False, alternative=...)``'s p-value."""
    sd_a, sd_b = sample_std(a), sample_std(b)
    t = (statistics.fmean(a) - statistics.fmean(b)) / math.sqrt(sd_a ** 2 / len(a) + sd_b ** 2 / len(b))
    return _t_sf(t if alternative == "greater" else -t, welch_df(sd_a, sd_b, len(a), len(b)))


def one_sample_p(values: list[float], mu: float) -> float:
    """``scipy.stats.ttest_1samp(values, mu).pvalue`` (two-sided), without importing scipy.stats
    (1.9 s, issue 54): the same t statistic and Student-t tail."""
    n = len(values)
    t = (statistics.fmean(values) - mu) / (sample_std(values) / math.sqrt(n))
    return min(1.0, 2.0 * _t_sf(abs(t), n - 1))


def kendall_tau(x: list[float], y: list[float]) -> float:
    """Kendall's tau-b of two equally long sequences, as ``scipy.stats.kendalltau`` computes it
    (ties counted per variable; nan when either is constant), without importing scipy.stats."""
    n = len(x)
    con_minus_dis = xtie = ytie = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            xtie += dx == 0
            ytie += dy == 0
            if dx and dy:
                con_minus_dis += 1 if (dx > 0) == (dy > 0) else -1
    tot = n * (n - 1) // 2
    if xtie == tot or ytie == tot:
        return float("nan")
    tau = con_minus_dis / math.sqrt(tot - xtie) / math.sqrt(tot - ytie)
    return min(1.0, max(-1.0, tau))


ALPHA = 0.05
HOLDS, HOLDS_NS, TIE, FAILS, NOT_TESTABLE = "holds", "holds, not significant", "tie", "fails", "not testable"
# How little an outcome supports the claim; a conjunction is as weak as its weakest link.
WEAKNESS = {HOLDS: 0, HOLDS_NS: 1, NOT_TESTABLE: 2, TIE: 3, FAILS: 4}


@dataclass(frozen=True)
class PairTest:
    """One comparison "``better`` beats ``worse``" of a claim, both cells in line ``where``
    (the column of a row claim, the row of a column claim)."""

    better: str
    worse: str
    where: str
    outcome: str
    diff: float  # mean difference better - worse, signed so that > 0 is the claimed direction
    p: float | None  # one-sided p-value of the claimed direction; None when not tested
    n: int  # paired seeds, or (unpaired) the smaller cell's seed count
    paired: bool

    @property
    def p_opposite(self) -> float | None:
        return None if self.p is None else 1.0 - self.p

    @property
    def opposite_significant(self) -> bool:
        return self.p_opposite is not None and self.p_opposite < ALPHA


def _constant(xs: list[float]) -> bool:
    return max(xs) - min(xs) <= 1e-12 * max(abs(x) for x in xs)


def _one_sided_p(a: list[float], b: list[float], paired: bool, higher: bool, diff: float) -> float:
    """One-sided p-value of "a better than b" (greater when higher is better, else less)."""
    alternative = "greater" if higher else "less"
    if paired:
        if _constant([x - y for x, y in zip(a, b)]):
            return 0.0 if diff > 0 else 1.0
        with warnings.catch_warnings(action="ignore", category=RuntimeWarning):  # nearly equal values
            return _paired_p(a, b, alternative)
    if _constant(a) and _constant(b):
        return 0.0 if diff > 0 else 1.0
    return _welch_p(a, b, alternative)


def paired_values(a: CellStats, b: CellStats) -> tuple[list[float], list[float], bool]:
    """The values a comparison of two cells uses: those of the seed indices present in both,
    in index order, and ``True``, when the cells ran on the same split at each of them; else
    every value of each cell and ``False`` (independent samples)."""
    common = sorted(set(a.by_seed) & set(b.by_seed))
    if common and all(a.splits[k] == b.splits[k] for k in common):
        return [a.by_seed[k] for k in common], [b.by_seed[k] for k in common], True
    return list(a.values), list(b.values), False


def compare_cells(better: CellStats, worse: CellStats, *, higher_is_better: bool, fmt: str,
                  labels: tuple[str, str, str]) -> PairTest:
    """Test "``better`` beats ``worse``"; ``labels`` = (better, worse, where) names for display."""
    a, b, paired = paired_values(better, worse)
    n = len(a) if paired else min(len(a), len(b))
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    diff = (mean_a - mean_b) if higher_is_better else (mean_b - mean_a)
    p = None
    if n < 2:
        outcome = NOT_TESTABLE
    elif format(mean_a, fmt) == format(mean_b, fmt):
        outcome = TIE
    else:
        p = _one_sided_p(a, b, paired, higher_is_better, diff)
        outcome = FAILS if diff < 0 else HOLDS if p < ALPHA else HOLDS_NS
    return PairTest(*labels, outcome, diff, p, n, paired)


def weakest(tests: list[PairTest]) -> PairTest:
    """The link that supports the claim least: worst outcome first, then the largest p-value of
    the claimed direction. Its outcome and p-value are the conjunction's (intersection-union:
    every link must hold at 5%, so no multiplicity correction is needed)."""
    return max(tests, key=lambda t: (WEAKNESS[t.outcome], -1.0 if t.p is None else t.p))


def fmt_p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.2g}"


def outcome_text(t: PairTest) -> str:
    """``holds (p=0.003)``, ``holds, not significant (p=0.21)``, ``tie``, ``not testable``,
    ``fails, opposite significant (p=0.002)`` or ``fails, opposite not significant (p=0.34)``
    (for a failure, p is the one-sided p-value of the opposite direction)."""
    if t.outcome in (HOLDS, HOLDS_NS):
        return f"{t.outcome} ({fmt_p(t.p)})"
    if t.outcome == FAILS:
        return f"fails, opposite {'' if t.opposite_significant else 'not '}significant ({fmt_p(t.p_opposite)})"
    return t.outcome


def pair_text(t: PairTest) -> str:
    """``A vs B in x (paired, 5 seeds)``."""
    test = f"paired, {t.n} seed{'s' if t.n != 1 else ''}" if t.paired else f"Welch, n={t.n}"
    return f"{t.better} vs {t.worse} in {t.where} ({test})"


# ---- a reproduced cell against the paper's printed number ------------------------------
BETTER, WORSE, SAME = "better", "worse", "same"


@dataclass(frozen=True)
class DeltaTest:
    """Our cell against the reported mean: ``direction`` is ``better`` / ``worse`` (in the
    metric's direction) or ``same`` (the two means print the same), ``p`` the two-sided
    p-value of a one-sample t-test of our seeds against the printed mean (None with fewer than
    2 seeds), ``significant`` whether p < ``ALPHA``."""

    direction: str
    p: float | None

    @property
    def significant(self) -> bool:
        return self.p is not None and self.p < ALPHA and self.direction != SAME


def delta_test(ours: CellStats, reported_mean: float, *, higher_is_better: bool, fmt: str) -> DeltaTest:
    """Is our mean distinguishable from the printed one? The paper's number is taken as a
    constant: its ± is left out, because what it means (std, standard error, interval) is
    often not stated, so a significant delta says our seeds rule out the printed mean, not
    that the paper's runs would. Seeds without spread are deterministic (p = 0 when the
    means differ)."""
    diff = ours.mean - reported_mean
    if format(ours.mean, fmt) == format(reported_mean, fmt):
        return DeltaTest(SAME, None)
    direction = BETTER if (diff > 0) == higher_is_better else WORSE
    if ours.n < 2:
        return DeltaTest(direction, None)
    values = list(ours.values)
    if _constant(values):
        return DeltaTest(direction, 0.0)
    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        return DeltaTest(direction, one_sample_p(values, reported_mean))


def significance_mark(res, row: str, col: str, metric: str) -> str:
    """Our version of the paper's significance mark (``reported.significance``) for one cell:
    the mark when the spec's ``better`` row beats ``row`` in this column and metric by a
    one-sided paired t-test at the spec's level (:func:`compare_cells`; seeds paired by
    index on the same data split, as the paper pairs its trials), else ``""``. No mark on
    the ``better`` row itself, when either cell lacks results, or when the two cells did not
    run on the same splits (no pairing: the paper's test cannot be reproduced)."""
    sig = res.spec.significance
    if not sig or row == sig["better"]:
        return ""
    ref, other = res.get(sig["better"], col, metric), res.get(row, col, metric)
    if ref is None or other is None:
        return ""
    m = res.spec.metrics[metric]
    t = compare_cells(ref, other, higher_is_better=m.higher_is_better, fmt=m.fmt, labels=(sig["better"], row, col))
    p_max = 1.0 - float(sig["level"])
    return sig["mark"] if t.paired and t.p is not None and t.diff > 0 and t.p < p_max else ""
