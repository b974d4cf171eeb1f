"""Power figures of a claim's pair (pubench.report.power): the minimum detectable difference and the
seeds a paper's gap would need, against hand computations from t tables and against simulation."""

import math

import numpy as np
import pytest
from scipy.stats import ttest_ind, ttest_rel

from pubench.report.collect import CellStats
from pubench.report.power import (MAX_SEEDS, fmt_seeds, mdd_paired, mdd_welch, pair_power, seeds_needed_paired,
                                  seeds_needed_welch, welch_df)

# t quantiles from a printed table (3 decimals): t_{0.95, df} + t_{0.80, df}
T_SUM = {2: 2.920 + 1.061, 4: 2.132 + 0.941, 6: 1.943 + 0.906, 7: 1.895 + 0.896, 24: 1.711 + 0.857,
         26: 1.706 + 0.856}


def test_mdd_paired_by_hand():
    assert mdd_paired(1.0, 3) == pytest.approx(T_SUM[2] / math.sqrt(3), rel=1e-3)  # 2.298
    assert mdd_paired(2.0, 5) == pytest.approx(T_SUM[4] * 2.0 / math.sqrt(5), rel=1e-3)  # 2.749
    assert mdd_paired(0.0, 4) == 0.0
    assert mdd_paired(1.0, 1) is None


def test_mdd_welch_by_hand():
    # s_a = s_b = 1, 3 seeds each: se = sqrt(2/3), Welch df = (2/3)^2 / (2 * (1/3)^2 / 2) = 4
    assert welch_df(1.0, 1.0, 3, 3) == pytest.approx(4.0)
    assert mdd_welch(1.0, 1.0, 3, 3) == pytest.approx(T_SUM[4] * math.sqrt(2 / 3), rel=1e-3)  # 2.509
    assert mdd_welch(1.0, 1.0, 1, 3) is None
    assert mdd_welch(0.0, 0.0, 3, 3) == 0.0


def test_seeds_needed_by_hand():
    # paired, sd_d = 1, gap 1: n = 7 gives 2.849 / sqrt(7) = 1.077 > 1, n = 8 gives 2.791 / sqrt(8) = 0.987
    assert T_SUM[6] / math.sqrt(7) > 1 > T_SUM[7] / math.sqrt(8)
    assert seeds_needed_paired(1.0, 1.0) == 8
    # Welch, s_a = s_b = 1, gap 1, n per cell: df = 2 (n - 1); n = 13 (df 24): 2.568 * sqrt(2/13) = 1.007 > 1,
    # n = 14 (df 26): 2.562 * sqrt(2/14) = 0.968
    assert T_SUM[24] * math.sqrt(2 / 13) > 1 > T_SUM[26] * math.sqrt(2 / 14)
    assert seeds_needed_welch(1.0, 1.0, 1.0) == 14
    # the definition: the smallest n whose MDD reaches the gap
    for sd, gap in ((0.7, 0.3), (3.0, 2.0), (1.0, 0.05)):
        n = seeds_needed_paired(sd, gap)
        if n <= MAX_SEEDS:
            assert mdd_paired(sd, n) <= gap < mdd_paired(sd, n - 1) if n > 2 else mdd_paired(sd, n) <= gap


def test_seeds_needed_edges():
    assert seeds_needed_paired(1.0, 0.0) is None and seeds_needed_paired(1.0, -2.0) is None
    assert seeds_needed_paired(0.0, 0.1) == 2  # no spread: the smallest testable n
    assert seeds_needed_paired(10.0, 0.01) == MAX_SEEDS + 1
    assert fmt_seeds(MAX_SEEDS + 1) == ">1000" and fmt_seeds(8) == "8" and fmt_seeds(None) == "—"
    assert seeds_needed_welch(0.0, 0.0, 0.5) == 2


def _cell(values, split="s"):
    return CellStats(dict(enumerate(values)), {k: (split, k) for k in range(len(values))})


def test_pair_power_paired_and_welch():
    a, b = [81.0, 83.0, 82.5, 84.0], [80.0, 81.5, 80.0, 82.0]
    p = pair_power(_cell(a), _cell(b), paper_gap=0.5)
    d = [x - y for x, y in zip(a, b)]
    assert p.paired and p.n == 4 and p.sd == pytest.approx(float(np.std(d, ddof=1)))
    assert p.mdd == pytest.approx(mdd_paired(p.sd, 4)) and p.seeds_needed == seeds_needed_paired(p.sd, 0.5)
    assert p.underpowered == (0.5 < p.mdd)
    q = pair_power(_cell(a, "x"), _cell(b[:3], "y"), paper_gap=None)
    assert not q.paired and q.n == 3 and q.seeds_needed is None and not q.underpowered
    assert q.mdd == pytest.approx(mdd_welch(float(np.std(a, ddof=1)), float(np.std(b[:3], ddof=1)), 4, 3))
    assert pair_power(_cell([1.0]), _cell([2.0]), 1.0).mdd is None
    # a paper gap against the claim is never "underpowered"
    assert not pair_power(_cell(a), _cell(b), paper_gap=-5.0).underpowered
    assert "paper gap +0.50 needs" in p.text(".2f") and "(paired, 4 seeds)" in p.text(".2f")


@pytest.mark.parametrize("n", [3, 5, 10])
def test_mdd_gives_80_percent_power_on_normal_data(n):
    """Paired differences ~ N(MDD, 1): the one-sided paired t-test at 5% rejects in ~80% of draws."""
    rng = np.random.default_rng(n)
    delta = mdd_paired(1.0, n)
    reps = 20000
    b = rng.normal(size=(reps, n)) * 3.0  # the cells' own spread cancels in the pairs
    a = b + rng.normal(delta, 1.0, size=(reps, n))
    power = float((ttest_rel(a, b, axis=1, alternative="greater").pvalue < 0.05).mean())
    assert power == pytest.approx(0.80, abs=0.02)
    # and at half the MDD the test is far from 80%
    a_half = b + rng.normal(delta / 2, 1.0, size=(reps, n))
    assert float((ttest_rel(a_half, b, axis=1, alternative="greater").pvalue < 0.05).mean()) < 0.5


def test_welch_mdd_gives_80_percent_power_on_normal_data():
    rng = np.random.default_rng(7)
    na, nb, sa, sb = 5, 4, 1.0, 2.0
    delta = mdd_welch(sa, sb, na, nb)
    reps = 20000
    a = rng.normal(delta, sa, size=(reps, na))
    b = rng.normal(0.0, sb, size=(reps, nb))
    power = float((ttest_ind(a, b, axis=1, equal_var=False, alternative="greater").pvalue < 0.05).mean())
    assert power == pytest.approx(0.80, abs=0.03)
