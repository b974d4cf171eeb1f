"""PULNS (Luo et al. 2021): the selector's rewards, returns and REINFORCE loss against naive
loops, their special cases, and the method on tiny data."""

from __future__ import annotations

import pytest
import torch

from pubench.pu import PU_METHODS
from pubench.pu.pulns import (balanced_bce, build_selector, pu_f1_criterion, pulns_intermediate_reward,
                              pulns_policy_loss, pulns_returns)
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError, build_config
from tests.reference import naive_pan_pulns as naive
from tests.pu.test_vpu import RecordingEncoder, _data

pytestmark = pytest.mark.usefixtures("one_thread")
TOL = 1e-10
CFG = {"selector": {"name": "mlp", "layers": 3, "hidden": 16}, "discount": 0.9, "terminal_weight": 1.0,
       "reward_clip": 1.0, "warmup_epochs": 2, "validation_fraction": 0.2, "selector_lr": 1.0e-3}


def _case(seed: int, n: int = 25):
    g = torch.Generator().manual_seed(seed)
    logits = 2 * torch.randn(n, generator=g, dtype=torch.float64)
    actions = (torch.rand(n, generator=g) < 0.5).double()
    sel = torch.randn(n, generator=g, dtype=torch.float64)
    return logits, actions, sel


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("clip", [0.5, 1.0, 10.0])
def test_intermediate_reward_matches_naive(seed, clip):
    g, a, _ = _case(seed)
    got = pulns_intermediate_reward(g, a, clip).tolist()
    assert got == pytest.approx([naive.pulns_intermediate_reward(z, int(x), clip) for z, x in zip(g.tolist(), a.tolist())],
                                abs=TOL)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("discount,weight,terminal", [(0.9, 1.0, 0.05), (0.0, 2.0, -0.1), (1.0, 0.0, 0.3), (0.5, 0.7, 0.0)])
def test_returns_and_policy_loss_match_naive(seed, discount, weight, terminal):
    g, a, sel = _case(seed)
    r = pulns_intermediate_reward(g, a, 1.0)
    v = pulns_returns(r, terminal, discount, weight)
    ref = naive.pulns_returns(r.tolist(), terminal, discount, weight)
    assert v.tolist() == pytest.approx(ref, abs=TOL)
    loss = float(pulns_policy_loss(sel, a, v))
    assert loss == pytest.approx(naive.pulns_policy_loss(sel.tolist(), [int(x) for x in a.tolist()], ref), abs=TOL)


@pytest.mark.parametrize("seed", range(4))
def test_classifier_loss_and_validation_criterion_match_naive(seed):
    g, a, sel = _case(seed)
    pos = a > 0.5
    neg = torch.rand(len(g), generator=torch.Generator().manual_seed(seed)) < 0.4
    assert float(balanced_bce(g, pos, neg & ~pos)) == pytest.approx(
        naive.balanced_bce(g.tolist(), pos.tolist(), (neg & ~pos).tolist()), abs=TOL)
    assert pu_f1_criterion(g, sel) == pytest.approx(naive.pu_f1_criterion(g.tolist(), sel.tolist()), abs=TOL)


def test_classifier_loss_and_criterion_special_cases():
    g = torch.tensor([1.0, -2.0, 0.5])
    none = torch.zeros(3, dtype=torch.bool)
    assert float(balanced_bce(g, none, none)) == 0.0
    everything = torch.ones(3, dtype=torch.bool)
    assert float(balanced_bce(g, everything, none)) == pytest.approx(float(torch.nn.functional.softplus(-g).mean()))
    # every positive found, as many predicted positive as the prior: 1 / pi
    assert pu_f1_criterion(torch.ones(4), torch.tensor([1.0, -1.0, -1.0, -1.0])) == pytest.approx(4.0)
    assert pu_f1_criterion(torch.ones(4), -torch.ones(4)) == 0.0
    with pytest.raises(ValueError, match="positives"):
        pu_f1_criterion(torch.ones(0), torch.ones(3))


def test_special_cases():
    g, a, sel = _case(0)
    # selecting a confident negative (logit << 0) is rewarded, selecting a confident positive punished
    assert pulns_intermediate_reward(torch.tensor([-5.0, 5.0]), torch.tensor([1.0, 1.0]), 1.0).tolist() == [1.0, -1.0]
    assert pulns_intermediate_reward(torch.tensor([-5.0, 5.0]), torch.tensor([0.0, 0.0]), 1.0).tolist() == [-1.0, 1.0]
    # discount 0: each return is its own reward plus the weighted terminal reward
    r = pulns_intermediate_reward(g, a, 1.0)
    assert torch.allclose(pulns_returns(r, 0.2, 0.0, 0.5), r + 0.1)
    # discount 1: undiscounted reward-to-go
    assert torch.allclose(pulns_returns(r, 0.0, 1.0, 1.0), r.flip(0).cumsum(0).flip(0))
    # REINFORCE gradient: d loss / d logit_i = -(1/n) v_i (a_i - sigmoid(logit_i))
    v = pulns_returns(r, 0.3, 0.9, 1.0)
    z = sel.clone().requires_grad_()
    pulns_policy_loss(z, a, v).backward()
    assert torch.allclose(z.grad, -(v * (a - torch.sigmoid(sel))) / len(sel), atol=1e-12)
    # zero returns: no learning signal
    assert float(pulns_policy_loss(sel, a, torch.zeros_like(sel))) == 0.0
    with pytest.raises(ValueError, match="discount"):
        pulns_returns(r, 0.0, 1.5, 1.0)
    with pytest.raises(ValueError, match="clip"):
        pulns_intermediate_reward(g, a, 0.0)
    with pytest.raises(ValueError, match="same length"):
        pulns_policy_loss(sel, a[:-1], v)


def test_selector_is_a_seeded_mlp():
    cfg = build_config(PU_METHODS.get("pulns").config_cls, {"name": "pulns", **CFG}).selector
    a, b = build_selector(cfg, 12, 3), build_selector(cfg, 12, 3)
    linears = [m for m in a if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 3 and linears[0].in_features == 12 and linears[-1].out_features == 1
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def _run(data, epochs=8, seed=0, **cfg):
    unit = PU_METHODS.get("pulns")
    config = build_config(unit.config_cls, {"name": "pulns", **CFG, **cfg})
    train = build_config(TrainConfig, {"epochs": epochs, "batch_size": 64, "optimizer": {"name": "adam", "lr": 0.01}})
    return unit.run(config, RecordingEncoder(), train, data, seed=seed, ctx=PLAIN)


def test_pulns_learns_and_is_deterministic():
    data = _data(n=400)
    m, info = _run(data)
    assert m["auc"] > 98 and m["acc"] > 90, m
    assert info["prior_used"] is None
    assert len(info["validation_criterion_per_epoch"]) == 8 and len(info["selected_fraction_per_episode"]) == 6
    assert all(0.0 < f < 1.0 for f in info["selected_fraction_per_episode"])
    again, again_info = _run(data)
    assert again == m and again_info == info
    _, other = _run(data, seed=1)
    assert other["selected_fraction_per_episode"] != info["selected_fraction_per_episode"]


def test_config_checks():
    unit = PU_METHODS.get("pulns")
    with pytest.raises(ConfigError, match="discount"):
        build_config(unit.config_cls, {"name": "pulns", **{k: v for k, v in CFG.items() if k != "discount"}})
    for bad, match in (({"discount": 1.5}, "discount"), ({"reward_clip": 0.0}, "reward_clip"),
                       ({"validation_fraction": 0.0}, "validation_fraction"), ({"warmup_epochs": -1}, "warmup"),
                       ({"selector": {"name": "lstm", "layers": 3, "hidden": 8}}, "selector")):
        with pytest.raises(ConfigError, match=match):
            unit.check(build_config(unit.config_cls, {"name": "pulns", **CFG, **bad}))
