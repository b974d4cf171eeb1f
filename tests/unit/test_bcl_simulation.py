"""BCL's numerical experiment (002, App. B.1): sampler, estimators, task."""

import numpy as np
import pytest
from scipy.stats import kstest

from pubench.sim import bcl_process as bp
from pubench.tasks import TASKS


def _cfg(**kw):
    base = dict(M=200, N=64, K=10, alpha=0.9, gamma=0.1, t=0.5, tau_plus=0.1)
    return bp.ProcessConfig(**{**base, **kw})


@pytest.mark.parametrize("alpha", [0.6, 0.9, 1.0])
def test_accept_reject_draws_phi_tn_and_phi_fn(alpha):
    """On U(0, 1), phi_TN has CDF 2a u + (1-2a) u^2 and phi_FN 2(1-a) u + (2a-1) u^2 (eq. 13-14)."""
    rng = np.random.default_rng(0)
    a, b = np.zeros(1), np.ones(1)
    tn, _ = bp.accept_reject(a, b, 20000, np.ones((1, 20000), bool), alpha, rng)
    fn, _ = bp.accept_reject(a, b, 20000, np.zeros((1, 20000), bool), alpha, rng)
    assert kstest(tn[0], lambda u: 2 * alpha * u + (1 - 2 * alpha) * u**2).pvalue > 1e-3
    assert kstest(fn[0], lambda u: 2 * (1 - alpha) * u + (2 * alpha - 1) * u**2).pvalue > 1e-3


def test_proposal_interval_slides_within_bounds():
    rng = np.random.default_rng(1)
    a, b = bp.proposal_intervals(_cfg(gamma=0.0, M=50), rng)
    assert np.all(a == -0.5) and np.all(b == 0.5)
    a, b = bp.proposal_intervals(_cfg(gamma=1.0, M=5000), rng)
    assert np.all(b - a == pytest.approx(1.0)) and a.min() >= -4.0 and b.max() <= 4.0
    assert a.min() < -3.4 and b.max() > 3.4  # gamma = 1 reaches (almost) the bounds +-1/t^2


def _naive_estimators(x, is_tn, pos, alpha, tau_plus, beta):
    """Loop-by-loop eq. (27)-(30) with the weights of eq. (1)-(3)."""
    M, N = x.shape
    out = {"sup": [], "biased": [], "dcl": [], "bcl": []}
    tm = 1 - tau_plus
    for m in range(M):
        xs = x[m]
        out["sup"].append(sum(xs[i] for i in range(N) if is_tn[m, i]) / sum(is_tn[m]))
        out["biased"].append(sum(xs) / N)
        out["dcl"].append((sum(xs) - N * tau_plus * sum(pos[m]) / len(pos[m])) / (N * tm))
        p, q = [], []
        for i in range(N):
            cdf = sum(1 for j in range(N) if xs[j] <= xs[i]) / N  # eq. (1), inclusive
            num = alpha * tm + (1 - 2 * alpha) * cdf * tm
            den = alpha * tm + (1 - alpha) * tau_plus + (1 - 2 * alpha) * cdf * (tm - tau_plus)
            p.append(num / den)  # eq. (2)
            q.append(p[-1] * xs[i] ** beta)
        z = sum(q) / N
        out["bcl"].append(sum(q[i] / z * xs[i] for i in range(N)) / N)  # eq. (3), (28)
    return {k: np.array(v) for k, v in out.items()}


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_estimators_match_naive_loops(beta):
    cfg = _cfg(M=12, N=17)
    obs = bp.simulate(cfg, np.random.default_rng(3))
    obs.x[0, 3] = obs.x[0, 5]  # a tie, to exercise the inclusive CDF
    ref = _naive_estimators(obs.x, obs.is_tn, obs.pos, cfg.alpha, cfg.tau_plus, beta)
    np.testing.assert_allclose(bp.theta_sup(obs), ref["sup"], rtol=1e-12)
    np.testing.assert_allclose(bp.theta_biased(obs), ref["biased"], rtol=1e-12)
    np.testing.assert_allclose(bp.theta_dcl(obs, cfg.tau_plus), ref["dcl"], rtol=1e-12)
    np.testing.assert_allclose(bp.theta_bcl(obs, cfg.alpha, cfg.tau_plus, beta), ref["bcl"], rtol=1e-10)


def test_uninformative_encoder_makes_bcl_biased():
    """alpha = 1/2: p(TN|x) = tau^- for every x (Sec. 3.3), so theta_BCL = theta_BIASED."""
    obs = bp.simulate(_cfg(alpha=0.5), np.random.default_rng(4))
    np.testing.assert_allclose(bp.theta_bcl(obs, 0.5, 0.1, 0.0), bp.theta_biased(obs), rtol=1e-12)


def test_simulation_is_deterministic_and_labels_follow_tau_plus():
    a = bp.simulate(_cfg(M=300), np.random.default_rng(7))
    b = bp.simulate(_cfg(M=300), np.random.default_rng(7))
    np.testing.assert_array_equal(a.x, b.x)
    assert abs((1 - a.is_tn.mean()) - 0.1) < 0.01


def test_task_runs_and_validates():
    task = TASKS.get("bcl_simulation")
    params = {"data": dict(M=100, N=32, K=10, alpha=0.9, gamma=0.1, t=0.5, tau_plus=0.1),
              "estimator": {"name": "bcl", "beta": 0.0}}
    out = task(params, {"data": 1, "init": 2})
    assert out == task(params, {"data": 1, "init": 99})  # only the data seed matters
    assert out["metrics"]["mse"] > 0 and out["info"]["anchors_used"] == 100
    with pytest.raises(ValueError, match="unknown key 'lr'"):
        task({**params, "estimator": {"name": "bcl", "lr": 1}}, {"data": 1, "init": 2})
    with pytest.raises(ValueError, match="alpha must lie"):
        task({**params, "data": {**params["data"], "alpha": 0.3}}, {"data": 1, "init": 2})
    with pytest.raises(ValueError, match="not one of"):
        task({**params, "estimator": {"name": "hcl"}}, {"data": 1, "init": 2})
