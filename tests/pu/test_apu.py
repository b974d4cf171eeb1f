"""aPU (Hammoudeh & Lowd 2020): the PURR risk against a naive loop, its special cases (no
positive shift: nnPU), its training step, and the method on tiny data."""

from __future__ import annotations

import math

import pytest
import torch

from pubench.pu import PU_METHODS, risks
from pubench.pu.apu import purr_objective, purr_risk, purr_terms
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.train.optim import optimizer_config
from pubench.utils.config import ConfigError
from tests.reference import naive_pico_apu as naive
from tests.reference import naive_risks

pytestmark = pytest.mark.usefixtures("one_thread")
TOL = 1e-12


def _case(seed: int, n: int = 60, scale: float = 2.0):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(n, generator=g, dtype=torch.float64) * scale
    group = torch.randint(0, 3, (n,), generator=g)      # 0: P, 1: U_tr, 2: U_te
    return s, group == 0, group == 1, group == 2


@pytest.mark.parametrize("loss", ["sigmoid", "logistic"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("pi_tr,pi_te", [(0.4, 0.4), (0.2, 0.6), (0.7, 0.3)])
def test_purr_matches_naive(loss, seed, pi_tr, pi_te):
    s, p, utr, ute = _case(seed)
    t = purr_terms(s, p, utr, ute, pi_tr, pi_te, loss)
    risk, n_plus, n_minus, te_p = naive.purr(s.tolist(), p.tolist(), utr.tolist(), ute.tolist(), pi_tr, pi_te, loss)
    assert float(t["n_plus"]) == pytest.approx(n_plus, abs=TOL)
    assert float(t["n_minus"]) == pytest.approx(n_minus, abs=TOL)
    assert float(t["te_p_plus"]) == pytest.approx(te_p, abs=TOL)
    assert float(purr_risk(s, p, utr, ute, pi_tr, pi_te, loss)) == pytest.approx(risk, abs=TOL)


@pytest.mark.parametrize("loss", ["sigmoid", "logistic"])
@pytest.mark.parametrize("seed", range(6))
def test_without_shift_purr_is_nnpu(loss, seed):
    """U_tr = U_te = U, pi_tr = pi_te = pi: R_n^- is nnPU's negative part and, while
    R_n^+ >= 0, R_te-p^+ = pi R_P^+, so PURR is the nnPU risk."""
    s, p, _, _ = _case(seed)
    u = ~p
    t = purr_terms(s, p, u, u, 0.3, 0.3, loss)
    assert float(t["n_minus"]) == pytest.approx(naive_risks.negative_part(s.tolist(), p.tolist(), 0.3, loss), abs=TOL)
    if float(t["n_plus"]) >= 0:
        assert float(purr_risk(s, p, u, u, 0.3, 0.3, loss)) == pytest.approx(
            naive_risks.nnpu(s.tolist(), p.tolist(), 0.3, loss), abs=TOL)
        obj, _, branch = purr_objective(s, p, u, u, 0.3, 0.3, loss, 1.0)
        nn_obj, _, defeated = risks.nnpu_objective(s, p, 0.3, loss, 0.0, 1.0)
        assert float(obj) == pytest.approx(float(nn_obj), abs=TOL) and (branch == "n_minus") == defeated


def test_without_shift_sigmoid_ties_the_two_negative_terms():
    """With the symmetric sigmoid loss R_n^+ = (1 - pi) - R_n^- (no shift): PURR's extra
    check on R_n^+ keeps the negative part below 1 - pi."""
    s, p, _, _ = _case(0)
    u = ~p
    t = purr_terms(s, p, u, u, 0.35, 0.35, "sigmoid")
    assert float(t["n_plus"]) == pytest.approx(0.65 - float(t["n_minus"]), abs=TOL)


def test_the_defeat_steps_follow_the_code_order():
    # P scored very negative, U very positive: R_n^- (U as negatives) large, R_n^+ < 0
    s = torch.tensor([-6.0, -5.0, 4.0, 5.0, 6.0], dtype=torch.float64)
    p = torch.tensor([True, True, False, False, False])
    u = ~p
    t = purr_terms(s, p, u, u, 0.4, 0.4, "sigmoid")
    assert float(t["n_minus"]) > 0 and float(t["n_plus"]) < 0
    obj, risk, branch = purr_objective(s, p, u, u, 0.4, 0.4, "sigmoid", 0.5)
    assert branch == "n_plus" and float(obj) == pytest.approx(-0.5 * float(t["n_plus"]), abs=TOL)
    # P positive, U very negative: R_n^- < 0 comes first
    s2 = torch.tensor([6.0, 5.0, -6.0, -5.0, -7.0], dtype=torch.float64)
    obj, risk, branch = purr_objective(s2, p, u, u, 0.6, 0.6, "sigmoid", 1.0)
    t2 = purr_terms(s2, p, u, u, 0.6, 0.6, "sigmoid")
    assert float(t2["n_minus"]) < 0 and branch == "n_minus"
    assert float(obj) == pytest.approx(-float(t2["n_minus"]), abs=TOL)
    assert float(risk) == pytest.approx(float(purr_risk(s2, p, u, u, 0.6, 0.6)), abs=TOL)


def test_with_a_shift_the_test_positive_risk_uses_the_test_sample():
    """R_te-p^+ moves with U_te only; R_n^{+/-} with P and U_tr only."""
    s, p, utr, ute = _case(1)
    a = purr_terms(s, p, utr, ute, 0.3, 0.5)
    s2 = s.clone()
    s2[ute] += 3.0
    b = purr_terms(s2, p, utr, ute, 0.3, 0.5)
    assert float(a["n_plus"]) == float(b["n_plus"]) and float(a["n_minus"]) == float(b["n_minus"])
    assert float(b["te_p_plus"]) < float(a["te_p_plus"])


def test_empty_sets_and_argument_checks():
    s = torch.tensor([1.0, -1.0], dtype=torch.float64)
    none = torch.tensor([False, False])
    assert float(purr_risk(s, none, none, none, 0.3, 0.3)) == 0.0
    with pytest.raises(ValueError, match="priors"):
        purr_terms(s, none, none, none, 1.0, 0.3)
    with pytest.raises(ValueError, match="gamma"):
        purr_objective(s, none, none, none, 0.3, 0.3, gamma=-1.0)


@pytest.mark.parametrize("change, match", [
    ({"estimator": "apnu"}, "not implemented"), ({"estimator": "wuu"}, "two-step"),
    ({"estimator": "nnpu"}, "one of"), ({"loss": "hinge"}, "loss"), ({"gamma": -1.0}, "gamma"),
])
def test_config_checks(change, match):
    unit = PU_METHODS.get("apu")
    with pytest.raises(ConfigError, match=match):
        unit.config({"name": "apu", **unit.test_config, **change}, "pu_method")


def test_apu_learns_a_separable_problem():
    from tests.pu.test_wconpu import Tiny, tiny_data

    unit = PU_METHODS.get("apu")
    cfg = unit.config({"name": "apu", **unit.test_config}, "pu_method")
    torch.manual_seed(0)
    train = TrainConfig(epochs=10, batch_size=32, optimizer=optimizer_config({"name": "adam", "lr": 0.01}))
    metrics, info = unit.run(cfg, Tiny(), train, tiny_data(), 1, ctx=PLAIN)
    assert metrics["acc"] > 90.0 and metrics["auc"] > 95.0, metrics
    assert info["prior_used"] == 0.4 and sum(info["steps_by_branch"].values()) == 10 * math.ceil(240 / 32)
    assert math.isfinite(info["final_train_risk"])
