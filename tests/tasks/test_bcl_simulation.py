"""BCL's numerical experiment (002, App. B.1): sampler, estimators, task."""

import functools

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import kstest

from pubench.executors.worker import execute_job
from pubench.jobs.plan import Job
from pubench.sim import bcl_process as bp
from pubench.store.store import ResultStore
from pubench.tasks import TASKS
from pubench.tasks.bcl_simulation import DegenerateSimulation
from pubench.train.context import PLAIN


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


def _naive_mixture_cdf(u, alpha, tau_plus):
    """tau^- Phi_TN + tau^+ Phi_FN at Phi = u: the integrals of B.1's densities, term by term."""
    phi_tn = 2 * alpha * u + (1 - 2 * alpha) * u**2   # int_0^u [2a + (2 - 4a) v] dv
    phi_fn = 2 * (1 - alpha) * u + (2 * alpha - 1) * u**2  # int_0^u [2(1-a) + (4a - 2) v] dv
    return (1 - tau_plus) * phi_tn + tau_plus * phi_fn


def _naive_proposal_cdf(f, alpha, tau_plus):
    """Phi with mixture CDF f, by root finding (not the closed form under test)."""
    if f <= 0:
        return 0.0
    if f >= 1:
        return 1.0
    return brentq(lambda u: _naive_mixture_cdf(u, alpha, tau_plus) - f, 0.0, 1.0, xtol=1e-15, rtol=1e-15)


def _naive_estimators(x, is_tn, pos, alpha, tau_plus, beta):
    """Loop-by-loop eq. (27)-(30) with the weights of eq. (1)-(3), Phi recovered from eq. (18)."""
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
            mixture_cdf = sum(1 for j in range(N) if xs[j] <= xs[i]) / N  # eq. (1)/(18), inclusive
            cdf = _naive_proposal_cdf(mixture_cdf, alpha, tau_plus)
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


@pytest.mark.parametrize("alpha, tau_plus", [(0.5, 0.1), (0.7, 0.1), (1.0, 0.1), (0.9, 0.3), (0.8, 0.5), (1.0, 0.9)])
def test_proposal_cdf_inverts_the_mixture_cdf(alpha, tau_plus):
    u = np.linspace(0, 1, 101)
    f = _naive_mixture_cdf(u, alpha, tau_plus)
    assert f[0] == 0 and f[-1] == pytest.approx(1.0) and np.all(np.diff(f) > 0)
    np.testing.assert_allclose(bp.proposal_cdf(f, alpha, tau_plus), u, atol=1e-12)
    naive = [_naive_proposal_cdf(v, alpha, tau_plus) for v in f[1:-1]]
    np.testing.assert_allclose(bp.proposal_cdf(f[1:-1], alpha, tau_plus), naive, atol=1e-12)


@pytest.mark.parametrize("alpha", [0.8, 1.0])
def test_inverted_empirical_cdf_estimates_the_proposal_cdf(alpha):
    """Eq. (17) needs Phi, the proposal's CDF (here U(a, b), known); eq. (18) on the unlabeled
    sample estimates the mixture CDF instead. Inverted, it converges to Phi (Glivenko)."""
    cfg = _cfg(M=1, N=20000, alpha=alpha, gamma=0.0)
    obs = bp.simulate(cfg, np.random.default_rng(5))
    true_phi = (np.log(obs.x) * cfg.t + 0.5)  # x = exp(raw / t), raw ~ U(-0.5, 0.5) at gamma = 0
    mixture = bp.empirical_cdf(obs.x)
    assert np.abs(bp.proposal_cdf(mixture, alpha, cfg.tau_plus) - true_phi).max() < 0.02
    assert np.abs(mixture - true_phi).max() > 0.05  # fed straight in, eq. (17) would see the wrong CDF


def test_bcl_beats_dcl_and_biased_for_a_perfect_encoder():
    """alpha = 1 (the audit's case): with Phi recovered, BCL's weights are right and its MSE
    is the lowest; fed the mixture CDF, theta_BCL had about twice DCL's MSE."""
    cfg = _cfg(M=1000, alpha=1.0)
    obs = bp.simulate(cfg, np.random.default_rng(11))
    target = bp.theta_sup(obs)
    bcl = bp.mse(bp.theta_bcl(obs, 1.0, cfg.tau_plus, 0.0), target)
    assert bcl < bp.mse(bp.theta_dcl(obs, cfg.tau_plus), target) < bp.mse(bp.theta_biased(obs), target)


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
    task = functools.partial(TASKS.get("bcl_simulation").run, ctx=PLAIN)
    params = {"data": dict(M=100, N=32, K=10, alpha=0.9, gamma=0.1, t=0.5, tau_plus=0.1),
              "estimator": {"name": "bcl", "beta": 0.0}}
    out = task(params, {"data": 1, "init": 2})
    assert out == task(params, {"data": 1, "init": 99})  # only the data seed matters
    assert out.metrics["mse"] > 0 and out.info["anchors_used"] == 100
    with pytest.raises(ValueError, match="unknown key 'lr'"):
        task({**params, "estimator": {"name": "bcl", "lr": 1}}, {"data": 1, "init": 2})
    with pytest.raises(ValueError, match="alpha must lie"):
        task({**params, "data": {**params["data"], "alpha": 0.3}}, {"data": 1, "init": 2})
    with pytest.raises(ValueError, match="not one of"):
        task({**params, "estimator": {"name": "hcl"}}, {"data": 1, "init": 2})


@pytest.mark.parametrize("name", ["biased", "dcl", "bcl"])
@pytest.mark.parametrize("gamma, what", [(0.1, "exp\\(x/t\\) under/overflowed"), (0.0, "squared error")])
def test_tiny_temperature_fails_instead_of_storing_an_underflowed_mse(name, gamma, what):
    """t = 0.001 (issue 10): exp(x/t) leaves float64 (gamma = 0.1), or the scores stay finite
    but their squared errors do not (gamma = 0); MSE 0.0 or nan must not become a result."""
    params = {"data": dict(M=40, N=64, K=10, alpha=0.9, gamma=gamma, t=0.001, tau_plus=0.1),
              "estimator": {"name": name, "beta": 0.0}}
    with pytest.raises(DegenerateSimulation, match=f"{what}.*raise params.data.t"):
        TASKS.get("bcl_simulation").run(params, {"data": 1, "init": 2}, ctx=PLAIN)


def test_degenerate_simulation_becomes_a_failure_record(tmp_path):
    params = {"data": dict(M=40, N=64, K=10, alpha=0.9, gamma=0.1, t=0.001, tau_plus=0.1),
              "estimator": {"name": "bcl", "beta": 0.0}}
    job = Job("fig5-bcl", 2, "smoke", "BCL", "alpha=0.9", 0, "bcl_simulation", params, {"data": 1, "init": 2})
    assert execute_job(job, tmp_path) == "failed"
    store = ResultStore(tmp_path)
    assert not store.records("smoke", "fig5-bcl")
    (rec,) = store.records("smoke", "fig5-bcl", failed=True)
    assert rec["error"]["type"] == "DegenerateSimulation" and "params.data.t" in rec["error"]["message"]


# ------------------------------------------------------------------ Fig. 4 and Fig. 8
@pytest.mark.parametrize("alpha", [0.5, 0.8, 1.0])
def test_accept_reject_from_a_normal_proposal(alpha):
    """With phi = N(0, 1) (Fig. 3), phi_TN has CDF 2a Phi + (1-2a) Phi^2 and phi_FN
    2(1-a) Phi + (2a-1) Phi^2 in Phi = the normal CDF (eq. 13-14)."""
    from scipy.stats import norm

    rng = np.random.default_rng(2)
    tn, _ = bp.accept_reject_normal(0.0, 1.0, np.ones((1, 20000), bool), alpha, rng)
    fn, _ = bp.accept_reject_normal(0.0, 1.0, np.zeros((1, 20000), bool), alpha, rng)
    assert kstest(tn[0], lambda x: 2 * alpha * norm.cdf(x) + (1 - 2 * alpha) * norm.cdf(x) ** 2).pvalue > 1e-3
    assert kstest(fn[0], lambda x: 2 * (1 - alpha) * norm.cdf(x) + (2 * alpha - 1) * norm.cdf(x) ** 2).pvalue > 1e-3


def test_ranks_above_is_the_mann_whitney_auc():
    a, b = np.array([3.0, 1.0, 2.0]), np.array([0.5, 2.0])
    naive = sum((x > y) + 0.5 * (x == y) for x in a for y in b) / (a.size * b.size)
    assert bp.ranks_above(a, b) == pytest.approx(naive)
    assert bp.ranks_above(b, a) == pytest.approx(1 - naive)


SCORE_PARAMS = {"data": {"M": 1, "N": 4000, "alpha": 1.0, "t": 2.0, "tau_plus": 0.5,
                         "proposal": {"name": "normal", "mean": 0.0, "std": 1.0}},
                "scores": "fn", "density": {"grid": {"start": 0.0, "stop": 5.0, "points": 101}, "bandwidth": "scott"}}


def test_score_density_task_fig4():
    """The FN and TN jobs of a column read the same sample (data seed); at alpha = 1 the FN
    scores rank above the TN ones with probability 5/6 (max vs min of two proposal draws);
    the density integrates to ~1 on the grid."""
    task = functools.partial(TASKS.get("bcl_score_density").run, ctx=PLAIN)
    fn = task(SCORE_PARAMS, {"data": 3, "init": 1})
    tn = task({**SCORE_PARAMS, "scores": "tn"}, {"data": 3, "init": 9})
    assert fn == task(SCORE_PARAMS, {"data": 3, "init": 2})  # only the data seed matters
    assert fn.metrics["auc"] + tn.metrics["auc"] == pytest.approx(100.0)
    assert fn.metrics["auc"] == pytest.approx(100 * 5 / 6, abs=2.0)
    assert fn.metrics["mean"] > tn.metrics["mean"]
    assert fn.info["n_scores"] + tn.info["n_scores"] == 4000
    x, y = np.array(fn.info["density"]["x"]), np.array(fn.info["density"]["y"])
    assert len(x) == 101 and x[0] == 0.0 and x[-1] == 5.0
    assert np.trapezoid(y, x) == pytest.approx(1.0, abs=0.02)
    with pytest.raises(ValueError, match="not one of"):
        task({**SCORE_PARAMS, "scores": "both"}, {"data": 1, "init": 1})
    with pytest.raises(ValueError, match="alpha must lie"):
        task({**SCORE_PARAMS, "data": {**SCORE_PARAMS["data"], "alpha": 0.4}}, {"data": 1, "init": 1})
    with pytest.raises(ValueError, match="proposal.name"):
        task({**SCORE_PARAMS, "data": {**SCORE_PARAMS["data"], "proposal": {"name": "uniform", "mean": 0.0,
                                                                            "std": 1.0}}}, {"data": 1, "init": 1})


def test_score_density_at_alpha_one_half_does_not_separate_the_classes():
    """alpha = 1/2: phi_TN = phi_FN = phi, so each class ranks above the other half the time."""
    out = TASKS.get("bcl_score_density").run({**SCORE_PARAMS, "data": {**SCORE_PARAMS["data"], "alpha": 0.5,
                                                                      "N": 20000}}, {"data": 5, "init": 1}, ctx=PLAIN)
    assert out.metrics["auc"] == pytest.approx(50.0, abs=1.5)


def test_sup_estimator_and_bias_metrics_fig8():
    """theta_SUP as an estimator has MSE and bias 0; the others' bias = mean estimate - mean theta_SUP."""
    task = functools.partial(TASKS.get("bcl_simulation").run, ctx=PLAIN)
    data = dict(M=200, N=64, K=10, alpha=0.9, gamma=0.1, t=0.5, tau_plus=0.1)
    sup = task({"data": data, "estimator": {"name": "sup"}}, {"data": 4, "init": 0}).metrics
    assert sup["mse"] == 0.0 and sup["bias"] == 0.0 and sup["mean_estimate"] == sup["mean_theta_sup"]
    biased = task({"data": data, "estimator": {"name": "biased"}}, {"data": 4, "init": 0}).metrics
    assert biased["mean_theta_sup"] == sup["mean_theta_sup"]  # the same observations
    assert biased["bias"] == pytest.approx(biased["mean_estimate"] - sup["mean_estimate"])
    assert biased["abs_bias"] == abs(biased["bias"]) and biased["bias"] > 0  # FNs score higher at alpha 0.9
