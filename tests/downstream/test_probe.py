"""Downstream classifiers on synthetic, linearly separable data: linear probe (PN / uPU /
nnPU / multi-class), fine-tuning, end-to-end PU methods; metrics."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pubench.downstream import DOWNSTREAM
from pubench.downstream.linear_probe import ProbeConfig
from pubench.pu import PU_METHODS
from pubench.pu.data import DownstreamData
from pubench.pu.end_to_end import RiskMethod, RiskMethodConfig
from pubench.pu.objective import make_targets
from pubench.train.context import PLAIN
from pubench.train.metrics import binary_metrics, multiclass_metrics
from pubench.utils.config import ConfigError, build_config


pytestmark = pytest.mark.usefixtures("one_thread")


class FlatEncoder(nn.Module):
    """Flatten + a Linear initialised at the identity (trainable for fine-tuning)."""

    def __init__(self, d=16):
        super().__init__()
        self.lin = nn.Linear(d, d)
        with torch.no_grad():
            self.lin.weight.copy_(torch.eye(d))
            self.lin.bias.zero_()
        self.out_dim = d

    def forward(self, x):
        return self.lin(x.flatten(1))


def _images(y: torch.Tensor, n_classes: int, seed: int):
    """(n, 1, 4, 4) uint8: pixel k is bright for class k, everything else dark + noise."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(20, 60, (len(y), 16), generator=g)
    x[torch.arange(len(y)), y] += 150
    return x.view(-1, 1, 4, 4).to(torch.uint8)


def _data(split_kind="pu", n=400, n_classes=2, prior=None, frac_labeled=0.3, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, n_classes, (n,), generator=g)
    yt = torch.randint(0, n_classes, (200,), generator=g)
    if split_kind == "pu":
        observed = ((y == 1) & (torch.rand(n, generator=g) < frac_labeled)).long()
        unl = observed == 0
        prior = float((y[unl] == 1).float().mean()) if prior is None else prior
    elif split_kind == "pnu":
        observed = torch.where(torch.rand(n, generator=g) < 0.2, y, torch.full_like(y, -1))
    else:
        observed = torch.full_like(y, -1)
    return DownstreamData(x_train=_images(y, n_classes, seed + 1), observed=observed, y_true=y,
                          split_kind=split_kind, n_classes=n_classes, prior=prior,
                          x_test=_images(yt, n_classes, seed + 2), y_test=yt, mean=[0.2], std=[0.25])


def _run(name, data, **cfg):
    unit = DOWNSTREAM.get(name)
    base = {"name": name, "epochs": 30, "batch_size": 64, "optimizer": {"name": "adam", "lr": 0.05}}
    base.update(cfg)
    return unit.run(build_config(unit.config_cls, base, "downstream"), FlatEncoder(), data, seed=0, ctx=PLAIN)


def test_registered():
    assert {"linear_probe", "finetune", "pupl"} <= set(DOWNSTREAM.names())
    assert {"upu", "nnpu", "pn_naive", "pvu", "vpu"} <= set(PU_METHODS.names())


def test_probe_pn_fully_labeled_is_perfect():
    m, info = _run("linear_probe", _data("none"), risk="pn")
    assert m["acc"] > 99 and set(m) == {"acc", "precision", "recall", "f1", "auc", "ap"}
    assert info["prior_source"] == "not used"


@pytest.mark.parametrize("risk", ["nnpu", "upu"])
def test_probe_pu_risks_separate(risk):
    m, info = _run("linear_probe", _data("pu"), risk=risk)
    assert m["acc"] > (97 if risk == "nnpu" else 93) and m["auc"] > 99
    assert info["risk"] == risk and info["prior_source"] == "run" and info["surrogate_loss"] == "sigmoid"


class PositiveEncoder(nn.Module):
    """128 non-negative, strongly correlated, uncentred features (like pooled ReLU features)."""

    def __init__(self):
        super().__init__()
        self.w = torch.rand(16, 128, generator=torch.Generator().manual_seed(0)) * 0.1
        self.out_dim = 128

    def forward(self, x):
        return torch.relu(1.0 + x.flatten(1) @ self.w)


def test_probe_standardizes_uncentred_features():
    # the sigmoid-loss nnPU risk saturates into "all negative" on raw uncentred features
    unit = DOWNSTREAM.get("linear_probe")
    base = {"name": "linear_probe", "risk": "nnpu", "epochs": 20, "batch_size": 64}
    m, info = unit.run(build_config(unit.config_cls, base), PositiveEncoder(), _data("pu"), seed=0, ctx=PLAIN)
    assert info["standardize"] and m["acc"] > 97
    raw, info = unit.run(build_config(unit.config_cls, dict(base, standardize=False)), PositiveEncoder(),
                         _data("pu"), seed=0, ctx=PLAIN)
    assert not info["standardize"] and raw["acc"] < 70
    with pytest.raises(ConfigError, match="linear_probe option"):
        _run("finetune", _data("pu"), risk="nnpu", standardize=False)


def test_probe_prior_override_and_missing():
    _, info = _run("linear_probe", _data("pu"), risk="nnpu", prior=0.3, epochs=1)
    assert info["prior_used"] == 0.3 and info["prior_source"] == "given"
    d = _data("pu")
    d.prior = None
    with pytest.raises(ConfigError, match="prior"):
        _run("linear_probe", d, risk="upu", epochs=1)


def test_probe_multiclass_cross_entropy():
    m, _ = _run("linear_probe", _data("none", n_classes=4), risk="pn")
    assert set(m) == {"acc"} and m["acc"] > 99
    with pytest.raises(ConfigError, match="binary"):
        _run("linear_probe", _data("none", n_classes=4), risk="nnpu")


def test_probe_pnu_uses_labeled_rows():
    d = _data("pnu")
    t = make_targets("pn", "pnu", d.observed, d.y_true, 2)
    assert len(t.rows) == int((d.observed >= 0).sum()) and bool((t.target == d.y_true[t.rows]).all())
    m, info = _run("linear_probe", d, risk="pn")
    assert m["acc"] > 97 and info["train_rows"] == len(t.rows)


def test_probe_with_augmented_views():
    m, _ = _run("linear_probe", _data("none"), risk="pn", epochs=10,
                augment={"name": "crop", "scale": [0.9, 1.0], "ratio": [1.0, 1.0], "flip": 0.0})
    assert m["acc"] > 80


def test_finetune_trains_encoder():
    d = _data("pu")
    unit = DOWNSTREAM.get("finetune")
    enc = FlatEncoder()
    w0 = enc.lin.weight.detach().clone()
    cfg = build_config(unit.config_cls, {"name": "finetune", "risk": "nnpu", "epochs": 20, "batch_size": 64,
                                         "optimizer": {"name": "adam", "lr": 0.01}})
    m, _ = unit.run(cfg, enc, d, seed=0, ctx=PLAIN)
    assert m["acc"] > 95 and not torch.equal(w0, enc.lin.weight)


# the plain risk methods (methods built on RiskMethod with their own config, e.g. pusb, imbpu,
# nnpu_mixup, have their own tests)
RISK_METHODS = [n for n in PU_METHODS.names()
                if issubclass(PU_METHODS.get(n), RiskMethod) and PU_METHODS.get(n).config_cls is RiskMethodConfig]


def test_the_papers_risk_methods_are_registered():
    assert {"upu", "nnpu", "pvu", "pn_naive"} <= set(RISK_METHODS)


@pytest.mark.parametrize("name", RISK_METHODS)
def test_end_to_end_pu_methods(name):
    from pubench.train.loop import TrainConfig

    unit = PU_METHODS.get(name)
    cfg = build_config(unit.config_cls, {"name": name})
    train = build_config(TrainConfig, {"epochs": 20, "batch_size": 64, "optimizer": {"name": "adam", "lr": 0.02}})
    m, info = unit.run(cfg, FlatEncoder(), train, _data("pu"), seed=0, ctx=PLAIN)
    if unit.risk == "pn":  # biased: recall suffers, the ranking does not
        assert m["auc"] > 95, m
        assert info["prior_source"] == "not used"
    else:  # pvu (cost-sensitive P vs U, logistic loss) is biased towards negative but learns (pn_naive: ~57%)
        assert m["acc"] > (85 if unit.risk == "pvu" else 90), m
        assert info["prior_source"] == "run"
        assert info["surrogate_loss"] == ("logistic" if unit.risk == "pvu" else "sigmoid")
    bad = {"name": name, "beta": 1.0} if unit.risk != "nnpu" else {"name": name, "loss": "hinge"}
    with pytest.raises(ConfigError):  # the caller checks before it runs the method
        unit.check_run(build_config(unit.config_cls, bad), train, _data("pu"))


def test_vpu_end_to_end():
    # the training procedure itself is tested in test_vpu.py
    from pubench.train.loop import TrainConfig

    unit = PU_METHODS.get("vpu")
    train = build_config(TrainConfig, {"epochs": 10, "batch_size": 64,
                                       "optimizer": {"name": "adam", "lr": 0.01, "betas": [0.5, 0.99]}})
    cfg = build_config(unit.config_cls, {"name": "vpu", "mix_alpha": 0.3, "lam": 0.03, "iterations_per_epoch": 5,
                                         "lr_halving_every": 5, "restart_optimizer_at_halving": True,
                                         "model_selection": "validation_loss", "validation_fraction": 0.1})
    data = _data("pu")
    data.pu_scheme = "single_training_set"
    m, info = unit.run(cfg, FlatEncoder(), train, data, seed=0, ctx=PLAIN)
    assert m["auc"] > 98 and m["acc"] > 75, m  # phi / max phi > 1/2 is a conservative threshold
    assert info["prior_used"] is None
    again, _ = unit.run(cfg, FlatEncoder(), train, data, seed=0, ctx=PLAIN)
    assert again == m


def test_deterministic_probe():
    a, _ = _run("linear_probe", _data("pu"), risk="nnpu", epochs=5)
    b, _ = _run("linear_probe", _data("pu"), risk="nnpu", epochs=5)
    assert a == b


def test_probe_config_errors():
    with pytest.raises(ConfigError, match="risk"):
        _run("linear_probe", _data("pu"), risk="hinge")
    with pytest.raises(ConfigError, match="nnPU"):
        _run("linear_probe", _data("pu"), risk="upu", beta=0.5)
    with pytest.raises(ConfigError, match="unknown key"):
        build_config(ProbeConfig, {"name": "linear_probe", "risk": "pn", "epochs": 1, "batch_size": 2, "lr": 1})


def test_metrics():
    s = torch.tensor([2.0, 1.0, -1.0, -2.0, 0.5, -0.5])
    y = torch.tensor([1, 1, 0, 0, 0, 1])
    m = binary_metrics(s, y)
    assert m["acc"] == pytest.approx(100 * 4 / 6)
    assert m["precision"] == pytest.approx(100 * 2 / 3) and m["recall"] == pytest.approx(100 * 2 / 3)
    assert m["auc"] == pytest.approx(100 * 8 / 9)
    none = binary_metrics(-torch.ones(4), torch.tensor([1, 0, 1, 0]))
    assert none["precision"] == 0 and none["recall"] == 0 and none["f1"] == 0
    with pytest.raises(ValueError, match="one class"):
        binary_metrics(s, torch.ones(6, dtype=torch.long))
    assert multiclass_metrics(torch.eye(3), torch.tensor([0, 1, 1]))["acc"] == pytest.approx(200 / 3)
