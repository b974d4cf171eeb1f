"""LARS against You et al. 2017's update on toy tensors; schedules; optimizer builder."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from pubench.train import optim
from pubench.utils.config import ConfigError


def _reference_lars(w, grads, lr, m, wd, eta, adapt=True):
    """Algorithm 1 of You et al. 2017, written out with plain float64 tensors."""
    w = w.clone().double()
    v = torch.zeros_like(w)
    for g in grads:
        g = g.double()
        if adapt:
            wn, gn = w.norm().item(), g.norm().item()
            local = eta * wn / (gn + wd * wn) if wn > 0 and gn > 0 else 1.0
            v = m * v + lr * local * (g + wd * w)
        else:
            v = m * v + lr * g
        w = w - v
    return w


def test_lars_matches_formula():
    gen = torch.Generator().manual_seed(0)
    w0 = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    grads = [torch.randn(5, 3, generator=gen, dtype=torch.float64) for _ in range(4)]
    p = nn.Parameter(w0.clone())
    opt = optim.LARS([p], lr=0.7, momentum=0.9, weight_decay=0.01, trust_coefficient=0.02)
    for g in grads:
        p.grad = g.clone()
        opt.step()
    ref = _reference_lars(w0, grads, 0.7, 0.9, 0.01, 0.02)
    assert torch.allclose(p.detach(), ref, atol=1e-12, rtol=0)


def test_lars_first_step_value():
    # ||w|| = 5, ||g|| = 1, wd = 0, eta = 0.001, lr = 1: w <- w - 0.005 g
    p = nn.Parameter(torch.tensor([[3.0, 4.0]], dtype=torch.float64))
    opt = optim.LARS([p], lr=1.0, momentum=0.9, weight_decay=0.0, trust_coefficient=1e-3)
    p.grad = torch.tensor([[0.6, 0.8]], dtype=torch.float64)
    opt.step()
    assert torch.allclose(p.detach(), torch.tensor([[3.0 - 0.003, 4.0 - 0.004]], dtype=torch.float64))


def test_lars_excludes_bias_and_bn():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    groups = optim.lars_param_groups(model, 1e-4)
    adapted = {id(p) for p in groups[0]["params"]}
    assert adapted == {id(model[0].weight)}
    assert groups[1]["lars_adapt"] is False and groups[1]["weight_decay"] == 0.0
    opt = optim.build_optimizer(optim.optimizer_config({"name": "lars", "lr": 0.5, "momentum": 0.9, "weight_decay": 1e-4}), model)
    b0 = model[0].bias.detach().clone()
    g = torch.ones_like(b0)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    opt.step()
    assert torch.allclose(model[0].bias.detach(), b0 - 0.5 * g)  # plain SGD step, no decay


def test_lars_zero_weight_falls_back_to_plain_step():
    p = nn.Parameter(torch.zeros(2, 2))
    opt = optim.LARS([p], lr=0.1, momentum=0.0, weight_decay=0.0)
    p.grad = torch.ones(2, 2)
    opt.step()
    assert torch.allclose(p.detach(), -0.1 * torch.ones(2, 2))


def test_cosine_warmup_values():
    total, warm = 100, 10
    f = [optim.cosine_factor(s, total, warm) for s in range(total)]
    assert f[0] == pytest.approx(0.1)
    assert f[9] == pytest.approx(1.0)
    assert f[10] == pytest.approx(1.0)
    assert f[10 + 45] == pytest.approx(0.5)
    assert f[99] == pytest.approx(0.5 * (1 + math.cos(math.pi * 89 / 90)))
    assert all(a >= b for a, b in zip(f[10:], f[11:]))
    # no warm-up: starts at the base lr
    assert optim.cosine_factor(0, 50, 0) == 1.0


def test_scheduler_drives_lr():
    p = nn.Parameter(torch.zeros(1))
    opt = optim.build_optimizer(optim.optimizer_config({"name": "sgd", "lr": 1.0, "momentum": 0.0}), [p])
    sched = optim.build_scheduler(optim.schedule_config({"name": "cosine", "warmup_epochs": 1}), opt, steps_per_epoch=4, epochs=3)
    lrs = []
    for _ in range(12):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert lrs[4] == pytest.approx(1.0)
    assert lrs[-1] == pytest.approx(0.5 * (1 + math.cos(math.pi * 7 / 8)))
    const = optim.build_scheduler(optim.schedule_config({"name": "constant"}), opt, 4, 3)
    assert const.get_last_lr()[0] == pytest.approx(1.0)


def test_optimizer_builder_validates():
    m = nn.Linear(2, 1)
    assert isinstance(optim.build_optimizer(optim.optimizer_config({"name": "adam", "lr": 1e-3}), m), torch.optim.Adam)
    assert isinstance(optim.build_optimizer(optim.optimizer_config({"name": "sgd", "lr": 1e-2, "momentum": 0.9}), m), torch.optim.SGD)
    with pytest.raises(ConfigError, match="momentum"):
        optim.build_optimizer(optim.optimizer_config({"name": "lars", "lr": 0.1}), m)
    with pytest.raises(ConfigError, match="momentum"):
        optim.build_optimizer(optim.optimizer_config({"name": "adam", "lr": 0.1, "momentum": 0.9}), m)
    with pytest.raises(ConfigError, match="unknown key"):
        optim.build_optimizer(optim.optimizer_config({"name": "adam", "lr": 0.1, "mom": 0.9}), m)
    with pytest.raises(ConfigError, match=r"optimizer\.name: unknown optimizer 'rmsprop'"):
        optim.build_optimizer(optim.optimizer_config({"name": "rmsprop", "lr": 0.1}), m)
    with pytest.raises(ConfigError, match="did you mean 'adam'"):
        optim.optimizer_config({"name": "adan", "lr": 0.1}, "optimizer")
    with pytest.raises(ConfigError, match=r"schedule\.name: unknown schedule 'step'"):
        optim.schedule_config({"name": "step"})
    with pytest.raises(ConfigError, match="cosine"):
        optim.schedule_config({"name": "constant", "warmup_epochs": 2})
