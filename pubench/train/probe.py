"""Downstream classifiers on a pre-trained encoder (``DOWNSTREAM``): ``linear_probe`` and
``finetune``; ``pupl`` lives in :mod:`pubench.pu.pupl`.

Every downstream unit is a class with ``config_cls`` (a dataclass validated from the
``downstream`` params) and ``run(cfg, encoder, data, seed, device) -> (metrics, info)``
where ``data`` is a :class:`DownstreamData`. All evaluate on the test split.

``linear_probe``: the encoder is frozen and in eval mode (BatchNorm running statistics);
features of the training examples are computed once (or, with ``augment``, recomputed from
augmented views every batch, as DCL/HCL's linear evaluation does), z-scored with the
training features' per-dimension mean / std (``standardize``, default on: a fixed affine
map, so the classifier stays linear in the features, as MAE's BatchNorm-without-affine
probe; without it the non-negative, uncentred ReLU features of a CNN let the sigmoid-loss
uPU/nnPU risks saturate into the all-negative classifier), and a linear layer (1 output
for binary tasks, C for multi-class) is trained with the risk:

* ``pn``: cross-entropy (binary: logistic loss; on a PU split the unlabeled examples are
  negatives; on a PNU split the labeled examples only; on a ``none`` split the true labels);
* ``upu`` / ``nnpu`` (sigmoid loss by default, nnPU's ``beta``/``gamma`` step) or ``pvu``
  (cost-sensitive P vs U, ``2 pi R_P^+ + R_U^-``, logistic loss by default), with the class prior ``prior`` (default: the run's prior, i.e. ``data.prior`` or the
  Split's; the one used is recorded in ``info``).

``finetune``: encoder + a new linear layer trained end to end with the same risks (encoder
in train mode; optional ``augment`` of the training images, default none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from pubench.models.heads import linear_head
from pubench.train import DOWNSTREAM
from pubench.train._common import (
    RISKS,
    RiskSettings,
    check_loop_config,
    fit,
    generator,
    make_targets,
    predict,
    sub_seeds,
)
from pubench.train.augment import build_augment, to_float
from pubench.train.metrics import evaluate_scores
from pubench.train.optim import (
    build_optimizer,
    build_scheduler,
)
from pubench.utils.config import ConfigError


@dataclass
class DownstreamData:
    """What a downstream classifier sees. Training rows are the Split's training examples."""

    x_train: torch.Tensor       # uint8 (m, C, H, W)
    observed: torch.Tensor      # int64 (m,): PU 1/0, PNU 1/0/-1, none -1
    y_true: torch.Tensor        # int64 (m,): binarized (or class ids when multi-class)
    split_kind: str             # pu | pnu | none
    n_classes: int              # 2 for binary tasks
    prior: float | None         # the run's prior (data.prior, else the Split's)
    x_test: torch.Tensor        # uint8 (t, C, H, W)
    y_test: torch.Tensor        # int64 (t,)
    mean: list[float]
    std: list[float]
    pu_scheme: str | None = None  # PU split scheme (single_training_set | case_control); None if unknown / not PU


def _adam() -> dict:
    return {"name": "adam", "lr": 1e-3}


@dataclass(frozen=True)
class ProbeConfig:
    name: str
    risk: str
    epochs: int
    batch_size: int
    optimizer: dict = field(default_factory=_adam)
    schedule: dict = field(default_factory=lambda: {"name": "constant"})
    prior: float | None = None     # default: the run's prior
    loss: str | None = None        # surrogate: logistic for pn, sigmoid for PU risks
    beta: float = 0.0              # nnPU (Kiryo et al. 2017)
    gamma: float = 1.0
    augment: dict | None = None    # training views (default: none)
    standardize: bool | None = None  # linear_probe: z-score the features (default true); finetune: not applicable
    mixup: dict | None = None      # not implemented (nnPU with MixUp)
    lam: float | None = None       # not implemented (vPU)
    mix_alpha: float | None = None  # not implemented (vPU)

    def check(self, where: str = "downstream") -> None:
        if self.risk == "vpu" or self.lam is not None or self.mix_alpha is not None:
            raise ConfigError(f"{where}: the variational PU risk (vpu; lam, mix_alpha) is not implemented")
        if self.mixup is not None:
            raise ConfigError(f"{where}.mixup: MixUp in the downstream risk is not implemented")
        if self.risk not in RISKS:
            raise ConfigError(f"{where}.risk: {self.risk!r} is not one of {RISKS}")
        check_loop_config(self, where)
        if self.name == "finetune" and self.standardize is not None:
            raise ConfigError(f"{where}.standardize is a linear_probe option")
        if self.risk != "nnpu" and (self.beta != 0.0 or self.gamma != 1.0):
            raise ConfigError(f"{where}: beta / gamma are nnPU options")
        if self.prior is not None and not 0.0 <= self.prior <= 1.0:
            raise ConfigError(f"{where}.prior must be in [0, 1]")


def resolve_prior(explicit: float | None, data_prior: float | None, needed: bool, where: str) -> tuple[float | None, str]:
    if explicit is not None:
        return float(explicit), "given"
    if data_prior is not None:
        return float(data_prior), "run"
    if needed:
        raise ConfigError(f"{where}: the risk needs a class prior and neither {where}.prior nor the split gives one")
    return None, "none"


def _risk_settings(cfg: ProbeConfig, data: DownstreamData, where: str) -> tuple[RiskSettings, dict]:
    prior, source = resolve_prior(cfg.prior, data.prior, cfg.risk != "pn", where)
    s = RiskSettings(cfg.risk, prior if cfg.risk != "pn" else None, cfg.loss, cfg.beta, cfg.gamma)
    info = {"risk": cfg.risk, "surrogate_loss": s.surrogate(), "prior_used": s.prior,
            "prior_source": source if cfg.risk != "pn" else "not used"}
    if cfg.risk == "nnpu":
        info.update(beta=cfg.beta, gamma=cfg.gamma)
    return s, info


@torch.no_grad()
def encode(encoder: nn.Module, x: torch.Tensor, mean, std, device, chunk: int = 512) -> torch.Tensor:
    """Features of uint8 images with the encoder in eval mode (on the CPU, float32)."""
    encoder.eval()
    return predict(lambda idx: encoder(to_float(x[idx].to(device), mean, std)), x.shape[0], chunk)


def feature_standardizer(feats: torch.Tensor, on: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(shift, scale) z-scoring each feature with the training features' mean / std
    (identity when ``on`` is false; constant features keep scale 1)."""
    if not on:
        return torch.zeros(feats.shape[1]), torch.ones(feats.shape[1])
    sd = feats.std(0)
    return feats.mean(0), torch.where(sd > 1e-8, sd, torch.ones_like(sd))


def _seeded_head(encoder: nn.Module, n_classes: int, seed: int, device) -> nn.Module:
    """The linear head on the encoder's features (one logit for binary tasks), initialised from ``seed``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return linear_head(encoder.out_dim, 1 if n_classes == 2 else n_classes).to(device)


@DOWNSTREAM.register("linear_probe")
class LinearProbe:
    config_cls = ProbeConfig

    @staticmethod
    def run(cfg: ProbeConfig, encoder: nn.Module, data: DownstreamData, seed: int, device="cpu"):
        cfg.check()
        targets = make_targets(cfg.risk, data.split_kind, data.observed, data.y_true, data.n_classes)
        settings, info = _risk_settings(cfg, data, "downstream")
        init_seed, order_seed, aug_seed = sub_seeds(seed, 3)
        encoder.eval()
        for p in encoder.parameters():
            p.requires_grad_(False)
        head = _seeded_head(encoder, data.n_classes, init_seed, device)
        feats = encode(encoder, data.x_train, data.mean, data.std, device)
        standardize = cfg.standardize is not False
        shift, scale = feature_standardizer(feats, standardize)
        if cfg.augment is None:
            feats = ((feats - shift) / scale).to(device)

            def forward(rows):
                return head(feats[rows.to(device)])
        else:
            aug, aug_gen = build_augment(cfg.augment, data.mean, data.std, "downstream.augment"), generator(aug_seed)
            shift_d, scale_d = shift.to(device), scale.to(device)

            def forward(rows):
                with torch.no_grad():
                    f = (encoder(aug(data.x_train[rows].to(device), aug_gen)) - shift_d) / scale_d
                return head(f)
        opt = build_optimizer(cfg.optimizer, head)
        steps = max(1, -(-len(targets.rows) // cfg.batch_size))
        sched = build_scheduler(cfg.schedule, opt, steps, cfg.epochs)
        hist = fit(forward, [head], opt, sched, targets, settings, cfg.epochs, cfg.batch_size,
                   generator(order_seed), f"linear probe ({cfg.risk})")
        test_feats = (encode(encoder, data.x_test, data.mean, data.std, device) - shift) / scale
        head.eval()
        with torch.no_grad():
            out = head(test_feats.to(device)).cpu()
        metrics = evaluate_scores(out, data.y_test, data.n_classes)
        info.update(train_rows=len(targets.rows), final_train_risk=hist[-1] if hist else None,
                    features=int(encoder.out_dim), augment=cfg.augment, standardize=standardize)
        return metrics, info


@DOWNSTREAM.register("finetune")
class FineTune:
    config_cls = ProbeConfig

    @staticmethod
    def run(cfg: ProbeConfig, encoder: nn.Module, data: DownstreamData, seed: int, device="cpu"):
        cfg.check()
        targets = make_targets(cfg.risk, data.split_kind, data.observed, data.y_true, data.n_classes)
        settings, info = _risk_settings(cfg, data, "downstream")
        init_seed, order_seed, aug_seed = sub_seeds(seed, 3)
        head = _seeded_head(encoder, data.n_classes, init_seed, device)
        for p in encoder.parameters():
            p.requires_grad_(True)
        model = nn.Sequential(encoder, head)
        metrics, hist = train_and_evaluate(model, cfg.optimizer, cfg.schedule, cfg.augment, targets, settings,
                                           cfg.epochs, cfg.batch_size, data, order_seed, aug_seed, device,
                                           f"finetune ({cfg.risk})")
        info.update(train_rows=len(targets.rows), final_train_risk=hist[-1] if hist else None, augment=cfg.augment)
        return metrics, info


def train_and_evaluate(model: nn.Module, optimizer: dict, schedule: dict, augment: dict | None, targets,
                       settings: RiskSettings, epochs: int, batch_size: int, data: DownstreamData,
                       order_seed: int, aug_seed: int, device, desc: str) -> tuple[dict[str, float], list[float]]:
    """Train a whole network (images -> score) with a risk, then evaluate it on the test split.
    Shared by ``finetune`` and the end-to-end PU methods."""
    aug = build_augment(augment, data.mean, data.std, "augment") if augment is not None else None
    aug_gen = generator(aug_seed)

    def forward(rows):
        xb = data.x_train[rows].to(device)
        return model(aug(xb, aug_gen) if aug is not None else to_float(xb, data.mean, data.std))

    opt = build_optimizer(optimizer, model)
    steps = max(1, -(-len(targets.rows) // batch_size))
    sched = build_scheduler(schedule, opt, steps, epochs)
    hist = fit(forward, [model], opt, sched, targets, settings, epochs, batch_size, generator(order_seed), desc)
    model.eval()
    out = predict(lambda idx: model(to_float(data.x_test[idx].to(device), data.mean, data.std)), data.x_test.shape[0])
    return evaluate_scores(out, data.y_test, data.n_classes), hist


def downstream_unit(name: str) -> Any:
    try:
        return DOWNSTREAM.get(name)
    except KeyError as exc:
        raise ConfigError(f"downstream.name: {exc}") from None
