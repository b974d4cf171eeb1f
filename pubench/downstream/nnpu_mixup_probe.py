"""Downstream ``nnpu_mixup_probe``: ``linear_probe`` trained with the nnPU risk on MixUp
batches of the frozen encoder's features, mixed within the labeled positives and within
the unlabeled examples (003 App. B.2, "separate mixing of positive instances and unlabeled
ones"; the PU method ``nnpu_mixup`` does the same on images). One coefficient
``lam ~ Beta(alpha, alpha)`` per batch; the pairs and coefficients come from
:meth:`pubench.pu.nnpu_mixup.NNPUMixup.input_mix` (:func:`~pubench.pu.nnpu_mixup.separate_mixup`).

What is mixed are the classifier's inputs: the (standardized) features of the frozen
encoder (003 Sec. 9.3 trains "logistic regression baselines" on "frozen pretrained
embeddings"; it does not say whether MixUp mixes images or embeddings; for a linear model
on a frozen encoder the embeddings are its inputs, and mixing images would need the encoder
on every mixed batch). A mixed example keeps its kind (labeled / unlabeled) in the risk.
"""

from __future__ import annotations

from dataclasses import dataclass

from pubench.downstream.base import DOWNSTREAM
from pubench.downstream.linear_probe import LinearProbe, ProbeConfig
from pubench.pu.nnpu_mixup import MIX_MODES, MixupConfig, NNPUMixup
from pubench.train.context import JobContext
from pubench.utils.config import ConfigError
from pubench.utils.result import Result


@dataclass(frozen=True)
class MixupProbeConfig(ProbeConfig):
    mixup: MixupConfig | None = None   # required: {mode: separate_positive_and_unlabeled, alpha}


@DOWNSTREAM.register("nnpu_mixup_probe")
class NNPUMixupProbe(LinearProbe):
    config_cls = MixupProbeConfig
    test_config = {"risk": "nnpu", "epochs": 2, "batch_size": 16, "optimizer": {"name": "adam", "lr": 0.01},
                   "loss": "sigmoid", "mixup": {"mode": "separate_positive_and_unlabeled", "alpha": 1.0}}

    @classmethod
    def check(cls, cfg: MixupProbeConfig, where: str = "downstream") -> None:
        super().check(cfg, where)
        if cfg.risk != "nnpu":
            raise ConfigError(f"{where}.risk: nnpu_mixup_probe trains the nnPU risk, got {cfg.risk!r}")
        if cfg.mixup is None:
            raise ConfigError(f"{where}.mixup: give {{mode, alpha}} (mode one of {MIX_MODES})")
        if cfg.mixup.mode not in MIX_MODES:
            raise ConfigError(f"{where}.mixup.mode: {cfg.mixup.mode!r} is not one of {MIX_MODES}")
        if cfg.mixup.alpha <= 0:
            raise ConfigError(f"{where}.mixup.alpha must be > 0")

    @classmethod
    def feature_mix(cls, cfg: MixupProbeConfig, targets, seed: int, device):
        return NNPUMixup.input_mix(cfg, targets, seed, device)

    @classmethod
    def run(cls, cfg: MixupProbeConfig, encoder, data, seed: int, ctx: JobContext):
        metrics, info = super().run(cfg, encoder, data, seed, ctx)
        return Result(metrics, info | {"mixup": {"mode": cfg.mixup.mode, "alpha": cfg.mixup.alpha,
                                          "mixes": "standardized features of the frozen encoder"}})
