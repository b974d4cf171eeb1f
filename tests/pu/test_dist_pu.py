"""Dist-PU (Zhao et al. 2022): its label-distribution loss, entropy and MixUp terms against
naive loops, the released code's scaling, and the two-stage training on tiny data."""

from __future__ import annotations

import math

import pytest
import torch

from pubench.pu import PU_METHODS, risks
from pubench.pu.dist_pu import mixup_entropy_ramp, mixup_optimizer, written
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError, build_config
from tests.reference import naive_risks as naive
from tests.pu.test_vpu import RecordingEncoder, _data

pytestmark = pytest.mark.usefixtures("one_thread")

RELEASED = {"warmup_epochs": 3, "entropy_weight": 2e-3, "mixup_entropy_weight": 4e-3, "mix_alpha": 6.0,
            "mixed_entropy_weight": 0.04, "mixup_weight": 5.0, "logit_clamp": 10.0, "loss_scale": "released_code",
            "mixup_lr_floor": 0.7, "mixup_optimizer": {"lr": 5e-3, "weight_decay": 1e-3}}


def _probs(seed: int, n: int = 30, frac: float = 0.3):
    g = torch.Generator().manual_seed(seed)
    prob = torch.sigmoid(3 * torch.randn(n, generator=g, dtype=torch.float64))
    labeled = torch.rand(n, generator=g) < frac
    labeled[0], labeled[1] = True, False
    return prob, labeled


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("prior", [0.1, 0.4, 0.7])
def test_label_distribution_loss_matches_naive_and_released_code(seed, prior):
    prob, labeled = _probs(seed)
    got = float(risks.label_distribution_loss(prob, labeled, prior))
    assert got == pytest.approx(naive.label_distribution(prob.tolist(), labeled.tolist(), prior), abs=1e-12)
    # the released code's one-bin histogram loss is eq. 27 divided by 2 pi
    released = naive.label_distribution_released(prob.tolist(), labeled.tolist(), prior)
    assert got / (2 * prior) == pytest.approx(released, abs=1e-12)


def test_label_distribution_loss_special_cases():
    labeled = torch.tensor([True, True, False, False, False, False])
    # positives predicted 1 and a U mean equal to the prior: no loss
    perfect = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    assert float(risks.label_distribution_loss(perfect, labeled, 0.25)) == 0.0
    # all-negative predictions: 2 pi on P plus pi on U
    zeros = torch.zeros(6, dtype=torch.float64)
    assert float(risks.label_distribution_loss(zeros, labeled, 0.25)) == pytest.approx(0.5 + 0.25)
    # an empty set contributes 0
    assert float(risks.label_distribution_loss(zeros, torch.zeros(6, dtype=torch.bool), 0.25)) == pytest.approx(0.25)
    assert float(risks.label_distribution_loss(zeros, torch.ones(6, dtype=torch.bool), 0.25)) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="probabilities"):
        risks.label_distribution_loss(torch.tensor([2.0, 0.5]), torch.tensor([True, False]), 0.3)
    with pytest.raises(ValueError, match="prior"):
        risks.label_distribution_loss(perfect, labeled, 1.5)


@pytest.mark.parametrize("seed", [0, 1])
def test_binary_entropy_matches_naive(seed):
    z = 4 * torch.randn(25, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    got = float(risks.binary_entropy(z))
    assert got == pytest.approx(naive.binary_entropy(torch.sigmoid(z).tolist()), abs=1e-12)


def test_binary_entropy_special_cases():
    assert float(risks.binary_entropy(torch.zeros(3))) == pytest.approx(math.log(2))
    assert float(risks.binary_entropy(torch.tensor([60.0, -60.0]))) == pytest.approx(0.0, abs=1e-20)
    assert float(risks.binary_entropy(torch.zeros(0))) == 0.0
    # symmetric in the sign of the logit, finite gradient at saturation
    z = torch.tensor([3.0, -3.0, 80.0], requires_grad=True)
    risks.binary_entropy(z).backward()
    assert torch.isfinite(z.grad).all() and z.grad[0] == pytest.approx(-z.grad[1])


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
def test_mixup_bce_matches_naive(lam):
    g = torch.Generator().manual_seed(3)
    z = 2 * torch.randn(12, generator=g, dtype=torch.float64)
    a, b = torch.rand(12, generator=g, dtype=torch.float64), (torch.rand(12, generator=g) < 0.5).double()
    got = float(risks.mixup_bce(z, a, b, lam))
    assert got == pytest.approx(naive.mixup_bce(torch.sigmoid(z).tolist(), a.tolist(), b.tolist(), lam), abs=1e-12)


def test_mixup_bce_special_cases():
    z = torch.tensor([0.5, -1.0, 2.0])
    t = torch.tensor([1.0, 0.0, 1.0])
    plain = torch.nn.functional.binary_cross_entropy_with_logits(z, t)
    assert float(risks.mixup_bce(z, t, 1 - t, 1.0)) == pytest.approx(float(plain))
    assert float(risks.mixup_bce(z, 1 - t, t, 0.0)) == pytest.approx(float(plain))
    with pytest.raises(ValueError, match="lam"):
        risks.mixup_bce(z, t, t, 1.5)
    with pytest.raises(ValueError, match="mixup_bce"):
        risks.mixup_bce(z, t[:2], t, 0.5)


def test_mixup_entropy_ramp_is_the_released_cosine_ramp():
    assert mixup_entropy_ramp(0, 60, 0.004) == 0.0
    assert mixup_entropy_ramp(30, 60, 0.004) == pytest.approx((1 - math.cos(math.pi / 4)) * 0.004)
    assert mixup_entropy_ramp(59, 60, 0.004) < 0.004


def _train(epochs: int = 6, batch_size: int = 32, lr: float = 0.01, schedule: str = "cosine"):
    return build_config(TrainConfig, {"epochs": epochs, "batch_size": batch_size, "optimizer": {"name": "adam", "lr": lr},
                                      "schedule": {"name": schedule}})


def _run(data=None, train=None, seed=0, **cfg):
    unit = PU_METHODS.get("dist_pu")
    config = build_config(unit.config_cls, {"name": "dist_pu", **RELEASED, **cfg})
    return unit.run(config, RecordingEncoder(), train or _train(), data or _data(n=400), seed=seed, ctx=PLAIN)


def test_dist_pu_learns_and_is_deterministic():
    data = _data(n=400)
    m, info = _run(data=data)
    assert m["auc"] > 98 and m["acc"] > 85, m
    assert info["warmup_epochs"] == 3 and info["mixup_epochs"] == 3 and len(info["loss_per_epoch"]) == 6
    assert info["prior_used"] == pytest.approx(data.prior) and info["prior_source"] == "run"
    assert info["mixup_loss_per_epoch"][:3] == [None] * 3 and all(v is not None for v in info["mixup_loss_per_epoch"][3:])
    # stage 2 restarts from its own optimizer settings; the cosine of stage 2 stays above the floor
    assert info["lr_per_epoch"][0] == pytest.approx(0.01) and info["lr_per_epoch"][3] == pytest.approx(5e-3)
    assert min(info["lr_per_epoch"][3:]) >= 0.7 * 5e-3
    again, _ = _run(data=data)
    assert again == m
    case_control, _ = _run(data=_data(n=400, scheme="case_control"))
    assert case_control["auc"] > 98


def test_dist_pu_without_mixup_stage_and_the_paper_scale():
    m, info = _run(warmup_epochs=6)
    assert info["mixup_epochs"] == 0 and m["auc"] > 95
    _, paper = _run(loss_scale="eq27")
    _, scaled = _run()
    # the released code's L_dis is eq. 27 / (2 pi): larger than eq. 27 for pi < 1/2 (here pi ~ 0.41)
    assert scaled["prior_used"] < 0.5
    assert 0 < paper["dist_loss_per_epoch"][0] < scaled["dist_loss_per_epoch"][0]


def test_config_checks():
    unit = PU_METHODS.get("dist_pu")
    with pytest.raises(ConfigError, match="missing"):
        build_config(unit.config_cls, {"name": "dist_pu", "warmup_epochs": 3})
    for bad, match in (({"loss_scale": "histogram"}, "loss_scale"), ({"mix_alpha": 0.0}, "mix_alpha"),
                       ({"mixup_weight": -1.0}, "mixup_weight"), ({"mixup_lr_floor": 1.0}, "mixup_lr_floor"),
                       ({"mixup_optimizer": {"name": "sgd"}}, "no name"), ({"prior": 1.0}, "prior")):
        with pytest.raises(ConfigError, match=match):
            unit.check(build_config(unit.config_cls, {"name": "dist_pu", **RELEASED, **bad}))
    cfg = build_config(unit.config_cls, {"name": "dist_pu", **RELEASED})
    with pytest.raises(ConfigError, match="exceeds"):
        unit.check_train(cfg, _train(epochs=2))
    with pytest.raises(ConfigError, match="cosine"):
        unit.check_train(cfg, _train(schedule="constant"))


def test_the_recorded_mixup_optimizer_reads_as_the_spec_writes_it():
    """A record's ``info.pu_method.mixup_optimizer`` is the spec's ``train.optimizer`` with the
    stage-2 overrides, as records have always held it (the optimizer is parsed once, with the
    train block: the record is written from the parsed config), for every Dist-PU cell of every
    spec and tier."""
    from pubench.jobs import expand
    from pubench.registry.loader import load_all

    cells = 0
    for spec in load_all().values():
        for tier in spec.tiers:
            for job in expand(spec, tier, 1).jobs:
                if job.params.get("pu_method", {}).get("name") != "dist_pu":
                    continue
                given, overrides = job.params["train"]["optimizer"], job.params["pu_method"]["mixup_optimizer"]
                parsed = build_config(TrainConfig, job.params["train"], "params.train").optimizer
                assert written(mixup_optimizer(parsed, overrides)) == dict(given, **overrides), job.name
                cells += 1
    assert cells > 0
