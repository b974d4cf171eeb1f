"""Downstream ``linear_probe``: a linear classifier on the frozen encoder's features,
trained with a risk (:mod:`pubench.pu.objective`) and evaluated on the test split.

The encoder is frozen and in eval mode (BatchNorm running statistics); features of the
training examples are computed once (or, with ``augment``, recomputed from augmented
views every batch, as DCL/HCL's linear evaluation does), z-scored with the training
features' per-dimension mean / std (``standardize``, default on: a fixed affine map, so
the classifier stays linear in the features, as MAE's BatchNorm-without-affine probe;
without it the non-negative, uncentred ReLU features of a CNN let the sigmoid-loss
uPU/nnPU risks saturate into the all-negative classifier), and a linear layer (1 output
for binary tasks, C for multi-class) is trained with the risk:

* ``pn``: cross-entropy (binary: logistic loss; on a PU split the unlabeled examples are
  negatives; on a PNU split the labeled examples only; on a ``none`` split the true labels);
* ``upu`` / ``nnpu`` (sigmoid loss by default, nnPU's ``beta``/``gamma`` step) or ``pvu``
  (cost-sensitive P vs U, ``2 pi R_P^+ + R_U^-``, logistic loss by default), with the class
  prior ``prior`` (default: the run's prior, i.e. ``data.prior`` or the Split's; the one
  used is recorded in ``info``).

:class:`RiskClassifier` (config, checks, targets and risk) is shared with ``finetune``
(:mod:`pubench.downstream.finetune`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pubench.downstream.base import DOWNSTREAM, Downstream
from pubench.pu.data import DownstreamData, evaluate_head
from pubench.pu.objective import RiskSettings, Targets, fit_head, make_targets, resolve_prior
from pubench.pu.risks import RISKS
from pubench.train.augment import build_augment
from pubench.train.classifier import encode, feature_standardizer, seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import check_loop_config
from pubench.train.optim import OptimizerConfig, ScheduleConfig
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator


@dataclass(frozen=True)
class ProbeConfig:
    name: str
    risk: str
    epochs: int
    batch_size: int
    optimizer: OptimizerConfig = OptimizerConfig("adam", 1e-3)
    schedule: ScheduleConfig = ScheduleConfig()
    prior: float | None = None     # default: the run's prior
    loss: str | None = None        # surrogate: logistic for pn, sigmoid for PU risks
    beta: float = 0.0              # nnPU (Kiryo et al. 2017)
    gamma: float = 1.0
    augment: dict | None = None    # training views (default: none)
    standardize: bool | None = None  # linear_probe: z-score the features (default true); finetune: not applicable


def check_probe(cfg: ProbeConfig, where: str) -> None:
    """The checks of a probe / fine-tuning config that types cannot say."""
    RISKS.lookup(cfg.risk, f"{where}.risk")
    check_loop_config(cfg, where)
    if cfg.risk != "nnpu" and (cfg.beta != 0.0 or cfg.gamma != 1.0):
        raise ConfigError(f"{where}: beta / gamma are nnPU options")
    if cfg.prior is not None and not 0.0 <= cfg.prior <= 1.0:
        raise ConfigError(f"{where}.prior must be in [0, 1]")


def risk_settings(cfg: ProbeConfig, data: DownstreamData, where: str) -> tuple[RiskSettings, dict]:
    """The risk a probe trains with (its prior resolved) and what ``info`` records of it."""
    prior, source = resolve_prior(cfg.prior, data.prior, cfg.risk != "pn", where)
    s = RiskSettings(cfg.risk, prior if cfg.risk != "pn" else None, cfg.loss, cfg.beta, cfg.gamma)
    info = {"risk": cfg.risk, "surrogate_loss": s.surrogate(), "prior_used": s.prior,
            "prior_source": source if cfg.risk != "pn" else "not used"}
    if cfg.risk == "nnpu":
        info.update(beta=cfg.beta, gamma=cfg.gamma)
    return s, info


class RiskClassifier(Downstream):
    """What ``linear_probe`` and ``finetune`` share: the config, its checks, the training
    targets and the risk (not registered itself)."""

    config_cls = ProbeConfig
    test_config = {"risk": "nnpu", "epochs": 2, "batch_size": 16, "optimizer": {"name": "adam", "lr": 0.01},
                   "beta": 0.01, "gamma": 0.5}

    @classmethod
    def check(cls, cfg: ProbeConfig, where: str = "downstream") -> None:
        check_probe(cfg, where)

    @classmethod
    def targets_and_risk(cls, cfg: ProbeConfig, data: DownstreamData) -> tuple[Targets, RiskSettings, dict]:
        """The checked config's training targets, risk settings and ``info``."""
        cls.check(cfg, "downstream")
        targets = make_targets(cfg.risk, data.split_kind, data.observed, data.y_true, data.n_classes)
        settings, info = risk_settings(cfg, data, "downstream")
        return targets, settings, info


@DOWNSTREAM.register("linear_probe")
class LinearProbe(RiskClassifier):
    @classmethod
    def feature_mix(cls, cfg: ProbeConfig, targets: Targets, seed: int, device):
        """``mix(features, rows)`` applied to every training batch of features, or None
        (``nnpu_mixup_probe`` mixes them)."""
        return None

    @classmethod
    def run(cls, cfg: ProbeConfig, encoder: nn.Module, data: DownstreamData, seed: int, ctx: JobContext):
        device = ctx.device
        targets, settings, info = cls.targets_and_risk(cfg, data)
        init_seed, order_seed, aug_seed = sub_seeds(seed, 3)
        encoder.eval()
        for p in encoder.parameters():
            p.requires_grad_(False)
        head = seeded_head(encoder.out_dim, 1 if data.n_classes == 2 else data.n_classes, init_seed, device)
        feats = encode(encoder, data.x_train, data.mean, data.std, ctx)
        standardize = cfg.standardize is not False
        shift, scale = feature_standardizer(feats, standardize)
        state = {}
        if cfg.augment is None:
            feats = ((feats - shift) / scale).to(device)

            def features(rows):
                return feats[rows.to(device)]
        else:
            aug, aug_gen = build_augment(cfg.augment, data.mean, data.std, "downstream.augment"), torch_generator(aug_seed)
            shift_d, scale_d = shift.to(device), scale.to(device)
            state = {"augment": aug_gen}

            @torch.no_grad()
            def features(rows):
                return (encoder(aug(data.x_train[rows].to(device), aug_gen)) - shift_d) / scale_d
        mix = cls.feature_mix(cfg, targets, sub_seeds(seed, 4)[3], device)
        if mix is not None:
            unmixed = features

            def features(rows):
                return mix(unmixed(rows), rows)
            state = {**state, **mix.checkpoint_state}
        hist = fit_head(head, features, cfg, targets, settings, order_seed, f"linear probe ({cfg.risk})", ctx, state)
        test_feats = (encode(encoder, data.x_test, data.mean, data.std, ctx) - shift) / scale
        metrics = evaluate_head(head, test_feats, data, device)
        info.update(train_rows=len(targets.rows), final_train_risk=hist[-1] if hist else None,
                    features=int(encoder.out_dim), augment=cfg.augment, standardize=standardize)
        return Result(metrics, info)
