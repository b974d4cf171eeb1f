"""nnPU with MixUp (003 App. B.2: separate mixing of positives and unlabeled examples)."""

from __future__ import annotations

import pytest
import torch

from pubench.pu import PU_METHODS
from pubench.pu.nnpu_mixup import separate_mixup
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError, build_config
from tests.pu.test_vpu import RecordingEncoder, _data

pytestmark = pytest.mark.usefixtures("one_thread")

MIXUP = {"mode": "separate_positive_and_unlabeled", "alpha": 1.0}


@pytest.mark.parametrize("lam", [0.0, 0.37, 1.0])
def test_separate_mixup_pairs_within_each_kind(lam):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(20, 3, generator=g)
    labeled = torch.rand(20, generator=g) < 0.4
    mixed, partner = separate_mixup(x, labeled, lam, torch.Generator().manual_seed(1))
    for i in range(20):     # naive loop: the mix of each example with its partner, of its own kind
        assert bool(labeled[partner[i]]) == bool(labeled[i])
        assert torch.allclose(mixed[i], lam * x[i] + (1 - lam) * x[partner[i]])
    for group in (labeled, ~labeled):  # a permutation within each kind
        idx = torch.nonzero(group).squeeze(1)
        assert sorted(partner[idx].tolist()) == idx.tolist()
    if lam == 1.0:
        assert torch.equal(mixed, x)


def test_separate_mixup_checks():
    x = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="lam"):
        separate_mixup(x, torch.ones(4, dtype=torch.bool), 1.2, torch.Generator())
    with pytest.raises(ValueError, match="labels"):
        separate_mixup(x, torch.ones(3, dtype=torch.bool), 0.5, torch.Generator())


def _train(epochs: int = 8):
    return build_config(TrainConfig, {"epochs": epochs, "batch_size": 32, "optimizer": {"name": "adam", "lr": 0.01}})


def _run(data=None, seed=0, **cfg):
    unit = PU_METHODS.get("nnpu_mixup")
    config = build_config(unit.config_cls, {"name": "nnpu_mixup", "loss": "sigmoid", "mixup": MIXUP, **cfg})
    encoder = RecordingEncoder()
    metrics, info = unit.run(config, encoder, _train(), data or _data(n=400), seed=seed, ctx=PLAIN)
    return metrics, info, encoder


def test_nnpu_mixup_learns_trains_on_mixed_inputs_and_is_deterministic():
    data = _data(n=400)
    m, info, encoder = _run(data=data)
    assert m["auc"] > 98 and m["acc"] > 85, m
    assert info["risk"] == "nnpu" and info["mixup"] == MIXUP and info["prior_used"] == pytest.approx(data.prior)
    # the network saw mixed inputs: few rows of a batch are training images themselves (self-partnered)
    first = encoder.train_inputs[0]
    plain = (data.x_train.float() / 255 - 0.2) / 0.25
    unmixed = sum(any(torch.allclose(x, row) for row in plain) for x in first)
    assert unmixed < len(first) // 4
    again, _, _ = _run(data=data)
    assert again == m
    _, other, _ = _run(data=data, mixup={**MIXUP, "alpha": 0.2})
    assert other["final_train_risk"] != info["final_train_risk"]


def test_config_checks():
    unit = PU_METHODS.get("nnpu_mixup")
    with pytest.raises(ConfigError, match="mixup"):
        build_config(unit.config_cls, {"name": "nnpu_mixup"})
    for bad, match in (({"mixup": {**MIXUP, "mode": "mix_p_with_u"}}, "mode"),
                       ({"mixup": {**MIXUP, "alpha": 0.0}}, "alpha"), ({"loss": "hinge"}, "loss")):
        with pytest.raises(ConfigError, match=match):
            unit.check(build_config(unit.config_cls, {"name": "nnpu_mixup", "mixup": MIXUP, **bad}))
