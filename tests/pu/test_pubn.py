"""PUbN (Hsieh et al. 2019) without biased negatives: its risk and threshold against naive
loops, the special cases, and the two-network method on tiny data."""

from __future__ import annotations

import pytest
import torch

from pubench.pu import PU_METHODS, risks
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError, build_config
from tests.reference import naive_risks as naive
from tests.pu.test_vpu import RecordingEncoder, _data

pytestmark = pytest.mark.usefixtures("one_thread")
TOL = 1e-12
RELEASED = {"tau": 0.9, "loss": "logistic", "sigma_loss": "logistic", "beta": 0.0, "gamma": 1.0}


def _case(seed: int, n: int = 40):
    g = torch.Generator().manual_seed(seed)
    scores = 2 * torch.randn(n, generator=g, dtype=torch.float64)
    labeled = torch.rand(n, generator=g) < 0.3
    sigma = torch.rand(n, generator=g, dtype=torch.float64).clamp(0.01, 0.99)
    return scores, labeled, sigma


@pytest.mark.parametrize("loss", ["logistic", "sigmoid"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("prior,tau", [(0.4, 0.9), (0.2, 0.5), (0.6, 1.0)])
def test_pubn_risk_and_threshold_match_naive(loss, seed, prior, tau):
    s, lab, sigma = _case(seed)
    eta = risks.pubn_threshold(sigma[~lab], prior, tau)
    assert eta == pytest.approx(naive.quantile(sigma[~lab].tolist(), (1 - prior) * tau), abs=TOL)
    got = float(risks.pubn_risk(s, lab, sigma, prior, eta, loss))
    assert got == pytest.approx(naive.pubn(s.tolist(), lab.tolist(), sigma.tolist(), prior, eta, loss), abs=TOL)


def test_pubn_special_cases():
    s, lab, sigma = _case(0)
    # eta above every sigma: every unlabeled example is a weighted negative, positives carry no negative term
    everything = float(risks.pubn_risk(s, lab, sigma, 0.4, 1.0))
    p_part = 0.4 * float(torch.nn.functional.softplus(-s[lab]).mean())
    u_part = float((torch.nn.functional.softplus(s[~lab]) * (1 - sigma[~lab])).mean())
    assert everything == pytest.approx(p_part + u_part, abs=TOL)
    # sigma = 1 on the positives with eta below: their negative term vanishes; sigma = 0 on U: plain negatives
    sig = torch.where(lab, torch.ones_like(sigma), torch.zeros_like(sigma))
    pn_like = float(risks.pubn_risk(s, lab, sig, 0.4, 0.5))
    assert pn_like == pytest.approx(p_part + float(torch.nn.functional.softplus(s[~lab]).mean()), abs=TOL)
    # the threshold keeps a fraction (1 - pi) tau of U at or below it
    u = torch.linspace(0, 1, 101, dtype=torch.float64)
    eta = risks.pubn_threshold(u, 0.5, 0.9)
    assert eta == pytest.approx(0.45) and float((u <= eta + 1e-12).double().mean()) == pytest.approx(46 / 101)
    with pytest.raises(ValueError, match="sigma"):
        risks.pubn_risk(s, lab, sigma + 1.0, 0.4, 0.5)
    with pytest.raises(ValueError, match="tau"):
        risks.pubn_threshold(u, 0.5, 1.5)
    with pytest.raises(ValueError, match="non-empty"):
        risks.pubn_threshold(u[:0], 0.5, 0.9)


def _run(data, **cfg):
    unit = PU_METHODS.get("pubn")
    config = build_config(unit.config_cls, {"name": "pubn", **RELEASED, **cfg})
    train = build_config(TrainConfig, {"epochs": 4, "batch_size": 32, "optimizer": {"name": "adam", "lr": 0.01}})
    return unit.run(config, RecordingEncoder(), train, data, seed=0, ctx=PLAIN)


def test_pubn_learns_and_is_deterministic():
    data = _data(n=400)
    m, info = _run(data)
    assert m["auc"] > 98 and m["acc"] > 85, m
    assert info["prior_used"] == pytest.approx(data.prior)
    # about (1 - pi) tau of the unlabeled examples are taken as negatives
    assert info["unlabeled_taken_negative"] == pytest.approx((1 - data.prior) * 0.9, abs=0.02)
    again, _ = _run(data)
    assert again == m
    _, other = _run(data, tau=0.5)
    assert other["eta"] < info["eta"]


def test_config_checks():
    unit = PU_METHODS.get("pubn")
    with pytest.raises(ConfigError, match="tau"):
        build_config(unit.config_cls, {"name": "pubn"})
    for bad, match in (({"tau": 0.0}, "tau"), ({"loss": "hinge"}, "loss"), ({"sigma_loss": "x"}, "sigma_loss"),
                       ({"gamma": -1.0}, "gamma"), ({"prior": 1.0}, "prior")):
        with pytest.raises(ConfigError, match=match):
            unit.check(build_config(unit.config_cls, {"name": "pubn", **RELEASED, **bad}))
