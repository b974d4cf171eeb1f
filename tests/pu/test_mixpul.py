"""MixPUL (Wei et al. 2020): the supervised MixUp loss and the interpolation consistency
against naive loops, the negative mining and supervised set, the ramp-up, and training."""

from __future__ import annotations

import math

import pytest
import torch

from pubench.pu import PU_METHODS
from pubench.pu.mixpul import (consistency_weight_at, ict_target, interpolation_consistency, mine_random_negatives,
                               mixup_cross_entropy, sigmoid_rampup, supervised_set)
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError, build_config
from tests.reference import naive_mixup_pu as naive
from tests.pu.test_vpu import RecordingEncoder, _data

pytestmark = pytest.mark.usefixtures("one_thread")

CFG = {"negatives_per_positive": 15.0, "max_negative_fraction": 0.4, "pretrain_epochs": 2, "sup_alpha": 1.0,
       "unsup_alpha": 2.0, "consistency_weight": 1.0, "consistency_rampup_start": 1, "consistency_rampup_end": 1,
       "consistency_target": "mixed_teacher_logits", "ema_decay": 0.999}


@pytest.mark.parametrize("seed", range(3))
def test_mixup_cross_entropy_matches_the_naive_loop(seed):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(9, generator=g, dtype=torch.float64) * 2
    a = (torch.rand(9, generator=g) < 0.5).double()
    b = (torch.rand(9, generator=g) < 0.5).double()
    lam = float(torch.rand(1, generator=g))
    assert float(mixup_cross_entropy(z, a, b, lam)) == pytest.approx(
        naive.mixup_cross_entropy(z.tolist(), a.tolist(), b.tolist(), lam), rel=1e-10)
    # special cases: lam 1 is the BCE with y_a; equal labels make lam irrelevant
    assert float(mixup_cross_entropy(z, a, b, 1.0)) == pytest.approx(float(mixup_cross_entropy(z, a, a, 0.3)))


@pytest.mark.parametrize("mode", ["mixed_teacher_logits", "mixed_teacher_probabilities"])
@pytest.mark.parametrize("seed", range(3))
def test_ict_target_and_consistency_match_the_naive_loop(mode, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(7, generator=g, dtype=torch.float64) * 3
    perm = torch.randperm(7, generator=g)
    lam = float(torch.rand(1, generator=g))
    m = ict_target(t, perm, lam, mode)
    assert m.tolist() == pytest.approx(naive.ict_target(t.tolist(), perm.tolist(), lam, mode), rel=1e-12)
    z = torch.randn(7, generator=g, dtype=torch.float64)
    assert float(interpolation_consistency(z, m)) == pytest.approx(
        naive.interpolation_consistency(z.tolist(), m.tolist()), rel=1e-10)


def test_ict_special_cases():
    t = torch.tensor([-2.0, 0.5, 3.0], dtype=torch.float64)
    perm = torch.tensor([2, 0, 1])
    for mode in ("mixed_teacher_logits", "mixed_teacher_probabilities"):
        assert torch.allclose(ict_target(t, perm, 1.0, mode), torch.sigmoid(t))        # lam 1: no mixing
        assert torch.allclose(ict_target(t, torch.arange(3), 0.3, mode), torch.sigmoid(t))  # self-partners
    # the two targets differ off those cases (mixing logits is not mixing probabilities)
    assert not torch.allclose(ict_target(t, perm, 0.5, "mixed_teacher_logits"),
                              ict_target(t, perm, 0.5, "mixed_teacher_probabilities"))
    # predictions equal to the target: no consistency loss, and no gradient into the target
    z = torch.tensor([0.1, -0.4, 2.0], dtype=torch.float64, requires_grad=True)
    target = torch.sigmoid(z).detach().requires_grad_(True)
    loss = interpolation_consistency(z, target)
    assert float(loss.detach()) == 0.0
    loss.backward()
    assert target.grad is None
    with pytest.raises(ValueError, match="consistency target"):
        ict_target(t, perm, 0.5, "nope")


def test_random_negatives_and_the_balanced_supervised_set():
    unlabeled = torch.arange(10, 110)
    neg = mine_random_negatives(unlabeled, 4, 15.0, 0.4, torch.Generator().manual_seed(0))
    assert len(neg) == 40 and len(set(neg.tolist())) == 40 and set(neg.tolist()) <= set(unlabeled.tolist())
    assert len(mine_random_negatives(unlabeled, 2, 15.0, 0.4, torch.Generator().manual_seed(0))) == 30
    pos = torch.arange(0, 4)
    rows, labels = supervised_set(pos, neg)
    assert rows[:40].tolist() == pos.repeat(10).tolist() and rows[40:].tolist() == neg.tolist()
    assert labels.tolist() == [1.0] * 40 + [0.0] * 40
    rows, labels = supervised_set(pos, neg[:3])           # fewer negatives than positives: one copy
    assert rows.tolist() == pos.tolist() + neg[:3].tolist()


def test_consistency_ramp_up():
    assert sigmoid_rampup(0, 0) == 1.0
    assert sigmoid_rampup(0, 10) == pytest.approx(math.exp(-5))
    assert sigmoid_rampup(5, 10) == pytest.approx(math.exp(-5 * 0.25))
    assert sigmoid_rampup(20, 10) == 1.0
    cfg = build_config(PU_METHODS.get("mixpul").config_cls, {"name": "mixpul", **CFG})
    assert consistency_weight_at(0, 3, 10, cfg) == 0.0     # the released defaults: off in the first epoch
    assert consistency_weight_at(1, 0, 10, cfg) == 1.0     # then at full weight
    ramp = build_config(type(cfg), {"name": "mixpul", **CFG, "consistency_rampup_end": 3,
                                    "consistency_weight": 2.0})
    assert consistency_weight_at(2, 5, 10, ramp) == pytest.approx(2.0 * sigmoid_rampup(1.5, 2))


def _run(data=None, epochs=6, **cfg):
    unit = PU_METHODS.get("mixpul")
    config = build_config(unit.config_cls, {"name": "mixpul", **CFG, **cfg})
    train = build_config(TrainConfig, {"epochs": epochs, "batch_size": 32, "optimizer": {"name": "adam", "lr": 0.01}})
    encoder = RecordingEncoder()
    metrics, info = unit.run(config, encoder, train, data or _data(n=400), seed=0, ctx=PLAIN)
    return metrics, info, encoder


def test_mixpul_learns_and_is_deterministic():
    data = _data(n=400)
    m, info, _ = _run(data=data)
    assert m["acc"] > 80 and m["auc"] > 90, m
    assert info["prior_used"] is None and info["model_selection"] == "the last epoch's model"
    n_pos = int((data.observed == 1).sum())
    n_unl = int((data.observed == 0).sum())
    assert info["reliable_negatives"] == min(15 * n_pos, int(0.4 * n_unl))
    assert info["pretrain_epochs"] == 2 and info["consistency_epochs"] == 4
    # no consistency in the pre-training stage
    assert info["consistency_per_epoch"][:2] == [0.0, 0.0] and info["consistency_per_epoch"][2] > 0
    m2, info2, _ = _run(data=data)
    assert m == m2 and info["loss_per_epoch"] == info2["loss_per_epoch"]


def test_consistency_weight_and_target_change_training():
    losses = [_run(epochs=4, **cfg)[1]["loss_per_epoch"] for cfg in
              ({}, {"consistency_weight": 0.0}, {"consistency_target": "mixed_teacher_probabilities"})]
    assert losses[0][:3] == losses[1][:3] == losses[2][:3]    # the same until the consistency counts
    assert losses[0][3] != losses[1][3] and losses[0][3] != losses[2][3]


def test_config_checks():
    unit = PU_METHODS.get("mixpul")
    for bad, key in [({"sup_alpha": 0.0}, "alpha"), ({"consistency_target": "x"}, "consistency_target"),
                     ({"consistency_rampup_start": 3, "consistency_rampup_end": 1}, "rampup"),
                     ({"max_negative_fraction": 1.5}, "max_negative_fraction"), ({"ema_decay": 2.0}, "ema_decay")]:
        with pytest.raises(ConfigError, match=key):
            unit.check(build_config(unit.config_cls, {"name": "mixpul", **CFG, **bad}))
    cfg = build_config(unit.config_cls, {"name": "mixpul", **CFG, "pretrain_epochs": 9})
    with pytest.raises(ConfigError, match="pretrain_epochs"):
        unit.check_train(cfg, build_config(TrainConfig, {"epochs": 5, "batch_size": 8,
                                                         "optimizer": {"name": "adam", "lr": 0.01}}), "params")


def test_table3_pupl_mixpul_cells():
    from pubench.registry import get_spec

    s = get_spec("table3-pupl")
    unit = PU_METHODS.get("mixpul")
    p = s.resolve("paper", "MixPUL (1)", "F-MNIST-II")["params"]
    cfg = unit.config(p["pu_method"], "pu_method")
    unit.check(cfg)
    train = build_config(TrainConfig, p["train"])
    unit.check_train(cfg, train, "params")
    assert (cfg.pretrain_epochs, train.epochs) == (90, 140) and cfg.consistency_target == "mixed_teacher_logits"
    for col, epochs, pretrain in (("F-MNIST-I", 20, 13), ("CIFAR-I", 8, 5)):
        r = s.resolve("reduced", "MixPUL (1)", col)["params"]
        assert (r["train"]["epochs"], r["pu_method"]["pretrain_epochs"]) == (epochs, pretrain)
    r = s.resolve("smoke", "MixPUL (1)", "F-MNIST-I")["params"]
    unit.check_train(unit.config(r["pu_method"], "pu_method"), build_config(TrainConfig, r["train"]), "params")
