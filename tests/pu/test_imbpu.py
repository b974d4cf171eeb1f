"""ImbPU (Su et al. 2021): the re-balanced nnPU objective against a naive loop, its special
cases, and the method on tiny data."""

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


def _case(seed: int, n: int = 40, frac: float = 0.3, scale: float = 2.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g, dtype=torch.float64) * scale, torch.rand(n, generator=g) < frac


@pytest.mark.parametrize("loss", ["sigmoid", "logistic"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("prior,target", [(0.1, 0.5), (0.25, 0.5), (0.6, 0.5), (0.3, 0.2)])
def test_imbalanced_nnpu_matches_naive(loss, seed, prior, target):
    s, lab = _case(seed)
    _, risk, _ = risks.imbalanced_nnpu_objective(s, lab, prior, target, loss)
    assert float(risk) == pytest.approx(naive.imbalanced_nnpu(s.tolist(), lab.tolist(), prior, target, loss), abs=TOL)


@pytest.mark.parametrize("seed", range(4))
def test_target_prior_equal_to_prior_is_nnpu(seed):
    s, lab = _case(seed)
    for beta in (0.0, 10.0):
        imb = risks.imbalanced_nnpu_objective(s, lab, 0.3, 0.3, "sigmoid", beta, 0.7)
        plain = risks.nnpu_objective(s, lab, 0.3, "sigmoid", beta, 0.7)
        assert float(imb[0]) == pytest.approx(float(plain[0]), abs=TOL)
        assert float(imb[1]) == pytest.approx(float(plain[1]), abs=TOL) and imb[2] == plain[2]


def test_defeat_step_on_the_reweighted_negative_part():
    # U scored very negative, P positive: the negative part is below 0
    s = torch.tensor([3.0, 2.5, -4.0, -5.0, -6.0], dtype=torch.float64)
    lab = torch.tensor([True, True, False, False, False])
    prior, target, gamma = 0.6, 0.5, 0.7
    neg = naive.negative_part(s.tolist(), lab.tolist(), prior)
    assert neg < 0
    obj, risk, defeated = risks.imbalanced_nnpu_objective(s, lab, prior, target, "sigmoid", 0.0, gamma)
    assert defeated
    assert float(obj) == pytest.approx(-gamma * (1 - target) / (1 - prior) * neg, abs=TOL)
    assert float(risk) == pytest.approx(naive.imbalanced_nnpu(s.tolist(), lab.tolist(), prior, target), abs=TOL)
    _, _, defeated = risks.imbalanced_nnpu_objective(s, lab, prior, target, "sigmoid", beta=10.0)
    assert not defeated


def test_argument_checks():
    s, lab = _case(0)
    with pytest.raises(ValueError, match="prior < 1"):
        risks.imbalanced_nnpu_objective(s, lab, 1.0, 0.5)
    with pytest.raises(ValueError, match="prior"):
        risks.imbalanced_nnpu_objective(s, lab, 0.3, 1.5)
    with pytest.raises(ValueError, match="beta"):
        risks.imbalanced_nnpu_objective(s, lab, 0.3, 0.5, beta=-1.0)


def _run(name: str, data, **cfg):
    unit = PU_METHODS.get(name)
    config = build_config(unit.config_cls, {"name": name, "loss": "sigmoid", **cfg})
    train = build_config(TrainConfig, {"epochs": 4, "batch_size": 32, "optimizer": {"name": "adam", "lr": 0.01}})
    return unit.run(config, RecordingEncoder(), train, data, seed=0, ctx=PLAIN)


def test_imbpu_learns_and_recovers_nnpu_at_the_true_prior():
    data = _data(n=400)
    m, info = _run("imbpu", data, target_prior=0.5)
    assert m["auc"] > 98 and m["acc"] > 85, m
    assert info["target_prior"] == 0.5 and info["risk"] == "nnpu"
    again, _ = _run("imbpu", data, target_prior=0.5)
    assert again == m
    # pi' = pi: the nnPU run, step for step
    same, same_info = _run("imbpu", data, target_prior=data.prior)
    nnpu, nnpu_info = _run("nnpu", data)
    assert same == nnpu and same_info["final_train_risk"] == pytest.approx(nnpu_info["final_train_risk"], abs=1e-9)


def test_config_checks():
    unit = PU_METHODS.get("imbpu")
    with pytest.raises(ConfigError, match="target_prior"):
        build_config(unit.config_cls, {"name": "imbpu"})
    with pytest.raises(ConfigError, match="target_prior"):
        unit.check(build_config(unit.config_cls, {"name": "imbpu", "target_prior": 1.0}))
