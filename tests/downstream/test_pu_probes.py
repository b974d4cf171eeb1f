"""Downstream vPU and nnPU-with-MixUp probes (fig14-pupl): the shared vPU objective against
the naive formula, training on frozen features, mixing within kinds, determinism, checks."""

from __future__ import annotations

import math

import pytest
import torch

from pubench.downstream import nnpu_mixup_probe as mixup_mod
from pubench.downstream import DOWNSTREAM
from pubench.pu import nnpu_mixup
from pubench.pu.vpu import vpu_objective, vpu_scores
from pubench.utils.config import ConfigError, build_config
from tests.reference import naive_risks as naive
from tests.downstream.test_probe import _data, _run

pytestmark = pytest.mark.usefixtures("one_thread")

MIXUP = {"mode": "separate_positive_and_unlabeled", "alpha": 1.0}


# ---------------------------------------------------------------------------- vpu_objective
@pytest.mark.parametrize("mu, lam", [(0.3, 0.03), (1.0, 0.5), (0.0, 1.0)])
def test_vpu_objective_matches_naive(mu, lam):
    g = torch.Generator().manual_seed(3)
    w = torch.randn(5, generator=g)
    xp, xu = torch.randn(6, 5, generator=g), torch.randn(6, 5, generator=g)
    partner = torch.randperm(6, generator=g)

    def model(x):
        return x @ w

    loss, var, reg = vpu_objective(model, xp, xu, mu, partner, lam)
    log_phi = [[math.log(1 / (1 + math.exp(-float(sum(x[j] * w[j] for j in range(5)))))) for x in xs]
               for xs in (xp, xu)]
    mixed = [[mu * float(xu[i, j]) + (1 - mu) * float(xp[partner[i], j]) for j in range(5)] for i in range(6)]
    log_phi_mixed = [math.log(1 / (1 + math.exp(-sum(m[j] * float(w[j]) for j in range(5))))) for m in mixed]
    want_var = naive.vpu_variational(log_phi[1], log_phi[0])
    want_reg = naive.vpu_mixup_reg(log_phi_mixed, [math.exp(v) for v in log_phi[1]], mu)
    assert float(var) == pytest.approx(want_var, rel=1e-5)
    assert float(reg) == pytest.approx(want_reg, rel=1e-4, abs=1e-6)
    assert float(loss) == pytest.approx(want_var + lam * want_reg, rel=1e-5, abs=1e-6)


def test_vpu_objective_special_cases():
    xp = torch.zeros(4, 3)
    w = torch.ones(3)
    # mu = 0: every mixed input is a positive, its target Phi~ = 1 > Phi: the regularizer is (log Phi(x_p))^2
    loss, var, reg = vpu_objective(lambda x: x @ w, xp, torch.ones(4, 3), 0.0, torch.arange(4), 0.0)
    assert float(reg) == pytest.approx(math.log(2) ** 2, rel=1e-6)
    assert float(loss) == pytest.approx(float(var))  # lam = 0: the variational loss only
    # identical positives and data sample: L_var = log mean Phi - mean log Phi = 0
    _, var, _ = vpu_objective(lambda x: x @ w, xp, xp.clone(), 0.5, torch.arange(4), 1.0)
    assert float(var) == pytest.approx(0.0, abs=1e-7)


def test_vpu_scores_threshold_half_of_the_max():
    sample = torch.log(torch.tensor([0.2, 0.8, 0.4]))
    s = vpu_scores(torch.log(torch.tensor([0.39, 0.41, 0.8])), sample)
    assert (s > 0).tolist() == [False, True, True]


# ---------------------------------------------------------------------------- vpu_probe
@pytest.mark.parametrize("scheme", ["single_training_set", "case_control"])
def test_vpu_probe_separates_and_is_prior_free(scheme):
    data = _data("pu")
    data.pu_scheme = scheme
    m, info = _run("vpu_probe", data, lam=0.03, mix_alpha=0.3, epochs=20)
    assert m["auc"] > 99 and m["acc"] > 80  # the half-of-max threshold is coarser than the ranking
    assert info["prior_used"] is None and info["model_selection"] == "the last epoch's classifier"
    n_lab = int((data.observed == 1).sum())
    assert info["n_train_positives"] == n_lab
    assert info["n_train_data_sample"] == (400 if scheme == "single_training_set" else 400 - n_lab)
    assert info["iterations_per_epoch"] == -(-info["n_train_data_sample"] // 64)
    assert len(info["loss_per_epoch"]) == 20


def test_vpu_probe_lam_zero_is_the_variational_loss_and_deterministic():
    data = _data("pu")
    data.pu_scheme = "single_training_set"
    a, ia = _run("vpu_probe", data, lam=0.0, mix_alpha=0.3, epochs=3)
    b, ib = _run("vpu_probe", data, lam=0.0, mix_alpha=0.3, epochs=3)
    assert a == b and ia == ib
    assert ia["loss_per_epoch"] == pytest.approx(ia["var_loss_per_epoch"], rel=1e-6)
    c, ic = _run("vpu_probe", data, lam=0.5, mix_alpha=0.3, epochs=3)
    assert ic["loss_per_epoch"] != pytest.approx(ia["loss_per_epoch"])


def test_vpu_probe_checks():
    data = _data("pu")
    data.pu_scheme = "single_training_set"
    with pytest.raises(ConfigError, match="mix_alpha"):
        _run("vpu_probe", data, lam=0.03, mix_alpha=0.0)
    with pytest.raises(ConfigError, match="batch_size"):
        _run("vpu_probe", data, lam=0.03, mix_alpha=0.3, batch_size=1)
    with pytest.raises(ConfigError, match="unknown key"):
        _run("vpu_probe", data, lam=0.03, mix_alpha=0.3, risk="nnpu")
    with pytest.raises(ConfigError, match="binary PU"):
        _run("vpu_probe", _data("pnu"), lam=0.03, mix_alpha=0.3)


# ---------------------------------------------------------------------------- nnpu_mixup_probe
def test_nnpu_mixup_probe_mixes_features_within_each_kind(monkeypatch):
    calls = []
    real = nnpu_mixup.separate_mixup

    def spy(x, labeled, lam, gen):
        mixed, partner = real(x, labeled, lam, gen)
        calls.append((x.detach().clone(), labeled.clone(), lam, partner.clone(), mixed.detach().clone()))
        return mixed, partner

    monkeypatch.setattr(nnpu_mixup, "separate_mixup", spy)
    data = _data("pu")
    m, info = _run("nnpu_mixup_probe", data, risk="nnpu", loss="sigmoid", mixup=MIXUP, epochs=20)
    assert m["auc"] > 99 and m["acc"] > 90
    assert info["mixup"]["alpha"] == 1.0 and info["risk"] == "nnpu"
    assert len(calls) == 20 * -(-400 // 64)
    lams = {round(c[2], 12) for c in calls}
    assert len(lams) > 10  # one lam ~ Beta(1, 1) per batch
    for x, labeled, lam, partner, mixed in calls[:5]:
        assert x.shape[1] == 16  # the features of the frozen encoder, not images
        assert bool((labeled[partner] == labeled).all())
        assert torch.allclose(mixed, lam * x + (1 - lam) * x[partner])
    observed_batches = torch.cat([c[1] for c in calls[:7]])
    assert int(observed_batches.sum()) == int((data.observed == 1).sum())  # epoch 1 covers every row once


def test_nnpu_mixup_probe_differs_from_plain_and_is_deterministic():
    data = _data("pu")
    plain, ip = _run("linear_probe", data, risk="nnpu", loss="sigmoid", epochs=3)
    a, ia = _run("nnpu_mixup_probe", data, risk="nnpu", loss="sigmoid", mixup=MIXUP, epochs=3)
    b, ib = _run("nnpu_mixup_probe", data, risk="nnpu", loss="sigmoid", mixup=MIXUP, epochs=3)
    assert a == b and ia == ib
    assert ia["final_train_risk"] != pytest.approx(ip["final_train_risk"])


def test_nnpu_mixup_probe_checks():
    data = _data("pu")
    with pytest.raises(ConfigError, match="mixup"):
        _run("nnpu_mixup_probe", data, risk="nnpu")
    with pytest.raises(ConfigError, match="nnPU risk"):
        _run("nnpu_mixup_probe", data, risk="upu", mixup=MIXUP)
    with pytest.raises(ConfigError, match="mode"):
        _run("nnpu_mixup_probe", data, risk="nnpu", mixup={"mode": "all", "alpha": 1.0})
    with pytest.raises(ConfigError, match="alpha"):
        _run("nnpu_mixup_probe", data, risk="nnpu", mixup={"mode": MIXUP["mode"]})
    unit = DOWNSTREAM.get("linear_probe")
    with pytest.raises(ConfigError, match="unknown key"):
        build_config(unit.config_cls, {"name": "linear_probe", "risk": "nnpu", "epochs": 1, "batch_size": 2,
                                       "mixup": MIXUP}, "downstream")
    assert mixup_mod.NNPUMixupProbe.feature_mix is not DOWNSTREAM.get("linear_probe").feature_mix
