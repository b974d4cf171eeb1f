"""The two-view pre-training loop: loss decreases on a toy set, label arguments, scheduled
loss parameters, determinism, config errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pubench.frameworks import FRAMEWORKS
from pubench.frameworks.pretrain import LossCall, PretrainConfig, pretrain, schedule_value
from pubench.train.context import PLAIN
from pubench.train.optim import optimizer_config, schedule_config
from pubench.utils.config import ConfigError


pytestmark = pytest.mark.usefixtures("one_thread")



class TinyEncoder(nn.Module):
    def __init__(self, c=3, out_dim=16):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(c, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(32, out_dim))
        self.out_dim = out_dim

    def forward(self, x):
        return self.net(x)


def _toy(n=64, seed=0):
    """Smooth random colour patterns (3x3 upsampled to 12x12): crops keep their identity."""
    g = torch.Generator().manual_seed(seed)
    x = torch.nn.functional.interpolate(torch.rand(n, 3, 3, 3, generator=g), size=12, mode="bilinear")
    return (x * 255).to(torch.uint8), torch.arange(n) % 4


def _models(seed=0):
    torch.manual_seed(seed)
    enc = TinyEncoder()
    proj = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 8))
    return enc, proj


def _cfg(**kw):
    base = dict(framework={"name": "simclr"}, loss={"name": "info_nce", "temperature": 0.5}, epochs=8,
                batch_size=32, optimizer=optimizer_config({"name": "adam", "lr": 3e-3}),
                augment={"name": "simclr", "scale": [0.6, 1.0]})
    base.update(kw)
    return PretrainConfig(**base)


def test_simclr_moco_cmc_registered():
    assert {"simclr", "moco", "cmc"} <= set(FRAMEWORKS.names())


def test_loss_decreases_on_toy_data():
    x, _ = _toy()
    enc, proj = _models()
    cfg = _cfg(epochs=6, optimizer=optimizer_config({"name": "adam", "lr": 1e-2}),
               augment={"name": "simclr", "scale": [0.6, 1.0], "jitter_p": 0.0, "gray_p": 0.0})
    h = pretrain(enc, proj, x, None, cfg, normalization=([0.5] * 3, [0.25] * 3), prior=None, seed=1, ctx=PLAIN)
    assert h["epochs_run"] == 6 and h["steps"] == 12
    assert h["loss"][0] < 4.2  # ~ log(2b - 1) at initialization
    assert sum(h["loss"][-2:]) / 2 < h["loss"][0] - 0.4


def test_deterministic():
    x, _ = _toy()
    out = []
    for _ in range(2):
        enc, proj = _models(3)
        h = pretrain(enc, proj, x, None, _cfg(epochs=2), normalization=([0.5] * 3, [0.25] * 3), prior=None, seed=7, ctx=PLAIN)
        out.append((h["loss"], [p.detach().clone() for p in enc.parameters()]))
    assert out[0][0] == out[1][0]
    assert all(torch.equal(a, b) for a, b in zip(out[0][1], out[1][1]))


def test_label_using_losses_and_prior_fill():
    x, y = _toy(32)
    observed = (y == 0).long()
    for loss in ({"name": "punce", "temperature": 0.5}, {"name": "supcon_pu", "temperature": 0.5},
                 {"name": "supcon", "temperature": 0.5}):
        enc, proj = _models()
        h = pretrain(enc, proj, x, observed, _cfg(loss=loss, epochs=1, optimizer=optimizer_config({"name": "lars", "lr": 0.1,
                     "momentum": 0.9, "weight_decay": 1e-6}), schedule=schedule_config({"name": "cosine", "warmup_epochs": 0.5})),
                     normalization=([0.5] * 3, [0.25] * 3), prior=0.3, seed=0, ctx=PLAIN)
        assert len(h["loss"]) == 1
        if loss["name"] == "punce":
            assert h["prior_filled"] and h["loss_kwargs"]["prior"] == 0.3


def test_loss_call_passes_labels():
    seen = {}
    call = LossCall({"name": "punce", "temperature": 0.5, "prior": 0.2}, prior=0.9)
    orig = call.fn

    def spy(z1, z2, **kw):
        seen.update(kw)
        return orig(z1, z2, **kw)

    call.fn = spy
    z = torch.randn(4, 3)
    call(z, z + 0.1, torch.tensor([1, 0, 0, 1]), 0)
    assert seen["prior"] == 0.2 and seen["labeled"].tolist() == [True, False, False, True]
    assert not call.prior_filled


def test_schedules():
    alpha = [{"until_epoch": 300, "value": 0.5}, {"until_epoch": 400, "value": 0.7}]
    assert schedule_value(alpha, 0) == 0.5 and schedule_value(alpha, 299) == 0.5 and schedule_value(alpha, 300) == 0.7
    assert schedule_value(alpha, 500) == 0.7
    beta = {"kind": "linear", "start": 2.0, "per_epoch": -0.005, "update_every": 20}
    assert schedule_value(beta, 0) == 2.0 and schedule_value(beta, 19) == 2.0
    assert schedule_value(beta, 20) == pytest.approx(1.9) and schedule_value(beta, 399) == pytest.approx(0.1)
    call = LossCall({"name": "bayesian", "temperature": 0.5, "tau_plus": 0.1,
                     "alpha_schedule": alpha, "beta_schedule": beta}, prior=None)
    assert call.kwargs(310) == {"temperature": 0.5, "tau_plus": 0.1, "alpha": 0.7, "beta": pytest.approx(0.5)}


def test_bcl_schedule_runs_in_loop():
    x, _ = _toy(32)
    enc, proj = _models()
    loss = {"name": "bayesian", "temperature": 0.5, "tau_plus": 0.1,
            "alpha_schedule": [{"until_epoch": 1, "value": 0.5}, {"until_epoch": 2, "value": 0.7}],
            "beta_schedule": {"kind": "linear", "start": 2.0, "per_epoch": -0.5, "update_every": 1}}
    h = pretrain(enc, proj, x, None, _cfg(loss=loss, epochs=2), normalization=([0.5] * 3, [0.25] * 3), prior=None, seed=0, ctx=PLAIN)
    assert h["scheduled"] == {"alpha": [0.5, 0.7], "beta": [2.0, 1.5]}


def test_config_errors():
    with pytest.raises(ConfigError, match="takes no"):
        LossCall({"name": "info_nce", "temperature": 0.5, "tau_plus": 0.1}, None)
    with pytest.raises(ConfigError, match="needs"):
        LossCall({"name": "debiased", "temperature": 0.5}, None)
    with pytest.raises(ConfigError, match="unknown loss"):
        LossCall({"name": "infonce"}, None)
    with pytest.raises(ConfigError, match="either"):
        LossCall({"name": "bayesian", "temperature": 0.5, "tau_plus": 0.1, "alpha": 0.5, "beta": 1.0,
                  "alpha_schedule": [{"until_epoch": 1, "value": 0.5}]}, None)
    with pytest.raises(ConfigError, match="prior"):
        LossCall({"name": "punce", "temperature": 0.5}, None)
    x, _ = _toy(8)
    enc, proj = _models()
    with pytest.raises(ConfigError, match="framework"):
        pretrain(enc, proj, x, None, _cfg(framework={"name": "moco", "queue": 4096}),
                 normalization=([0.5] * 3, [0.25] * 3), prior=None, seed=0, ctx=PLAIN)


def test_zero_epochs_leaves_model_untouched():
    x, _ = _toy(8)
    enc, proj = _models()
    before = [p.detach().clone() for p in enc.parameters()]
    h = pretrain(enc, proj, x, None, _cfg(epochs=0), normalization=([0.5] * 3, [0.25] * 3), prior=None, seed=0, ctx=PLAIN)
    assert h["epochs_run"] == 0 and all(torch.equal(a, b) for a, b in zip(before, enc.parameters()))
