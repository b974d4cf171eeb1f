"""pubench.utils.student_t and the scipy-free tests of pubench.report.stats give scipy's numbers
(the report path no longer imports scipy: issue 54)."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import stdtr, stdtrit

from pubench.report.stats import kendall_tau, one_sample_p
from pubench.utils.student_t import t_ppf, t_sf


def test_tail_matches_scipy_over_the_range_reports_use():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        df = float(rng.choice([rng.integers(1, 40), rng.uniform(1, 3000), rng.uniform(0.5, 60)]))
        t = float(rng.normal(0, 4))
        want = float(stdtr(df, -t))
        assert t_sf(t, df) == pytest.approx(want, rel=1e-9, abs=1e-300)
    assert t_sf(math.inf, 3) == 0.0 and t_sf(-math.inf, 3) == 1.0 and t_sf(0.0, 7) == pytest.approx(0.5)


@pytest.mark.parametrize("q", [0.95, 0.8, 0.999, 0.6, 0.3])
def test_quantile_matches_scipy(q):
    for df in [*range(1, 200), *np.linspace(1.2, 5000, 200), 0.7]:
        assert t_ppf(q, float(df)) == pytest.approx(float(stdtrit(float(df), q)), rel=1e-10)


def test_kendall_tau_and_one_sample_p_match_scipy():
    rng = np.random.default_rng(1)
    for n in range(3, 14):
        for _ in range(40):
            x = rng.integers(0, 5, n).astype(float).tolist()  # ties, as rounded means have
            y = rng.normal(size=n).round(1).tolist()
            want = stats.kendalltau(x, y).statistic
            got = kendall_tau(x, y)
            assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want, rel=1e-12, abs=1e-15)
            values = rng.normal(50, 3, n).tolist()
            assert one_sample_p(values, 50.5) == pytest.approx(stats.ttest_1samp(values, 50.5).pvalue, rel=1e-9)
    assert math.isnan(kendall_tau([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))


def test_the_report_path_imports_no_scipy():
    import subprocess
    import sys

    code = ("import sys; from pubench.report import checks, power, regime, stats, verdicts, pooled; "
            "print(any(m == 'scipy' or m.startswith('scipy.') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() \
        == "False"
