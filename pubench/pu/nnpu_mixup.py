"""nnPU with MixUp, PU_METHODS ``nnpu_mixup``: the nnPU baseline of P3Mix (Li et al. 2022)
that 003 (Table 3, App. B.2) describes as "the nnPU approach with the mixup technique
(Zhang et al. 2018). It performs separate mixing of positive instances and unlabeled
ones." Each training batch is replaced by its MixUp with a partner of the same kind
(:func:`separate_mixup`: a labeled positive with a labeled positive, an unlabeled example
with an unlabeled example), so every mixed example keeps its PU label and the nnPU risk
and training step (Kiryo et al. 2017, :func:`pubench.pu.risks.nnpu_objective`) apply
unchanged. One coefficient ``lam ~ Beta(alpha, alpha)`` per batch, as in MixUp.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pubench.pu.base import PU_METHODS
from pubench.pu.end_to_end import RiskMethod
from pubench.utils.config import ConfigError
from pubench.utils.seeding import torch_generator

MIX_MODES = ("separate_positive_and_unlabeled",)


@dataclass(frozen=True)
class MixupConfig:
    mode: str           # separate_positive_and_unlabeled (003 App. B.2)
    alpha: float        # Beta(alpha, alpha) of the mixing coefficient


@dataclass(frozen=True)
class NNPUMixupConfig:
    name: str
    mixup: MixupConfig
    prior: float | None = None
    loss: str | None = None
    beta: float = 0.0
    gamma: float = 1.0


def separate_mixup(x: torch.Tensor, labeled: torch.Tensor, lam: float, gen: torch.Generator
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(lam x + (1 - lam) x[partner], partner)`` where ``partner`` is a random permutation
    within the labeled positives of the batch and one within its unlabeled examples (an
    example may be its own partner)."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    labeled = labeled.reshape(-1).bool()
    if labeled.shape[0] != x.shape[0]:
        raise ValueError(f"separate_mixup: {x.shape[0]} inputs, {labeled.shape[0]} labels")
    partner = torch.arange(x.shape[0])
    for group in (labeled.cpu(), ~labeled.cpu()):
        idx = torch.nonzero(group).squeeze(1)
        partner[idx] = idx[torch.randperm(len(idx), generator=gen)]
    partner = partner.to(x.device)
    return lam * x + (1.0 - lam) * x[partner], partner


@PU_METHODS.register("nnpu_mixup")
class NNPUMixup(RiskMethod):
    """nnPU trained on MixUp batches mixed within the positives and within the unlabeled."""

    config_cls = NNPUMixupConfig
    risk = "nnpu"
    test_config = {"loss": "sigmoid", "beta": 0.0, "gamma": 1.0,
                   "mixup": {"mode": "separate_positive_and_unlabeled", "alpha": 1.0}}

    @classmethod
    def check(cls, cfg: NNPUMixupConfig, where: str = "pu_method") -> None:
        super().check(cfg, where)
        if cfg.mixup.mode not in MIX_MODES:
            raise ConfigError(f"{where}.mixup.mode: {cfg.mixup.mode!r} is not one of {MIX_MODES}")
        if cfg.mixup.alpha <= 0:
            raise ConfigError(f"{where}.mixup.alpha must be > 0")

    @classmethod
    def input_mix(cls, cfg: NNPUMixupConfig, targets, seed: int, device):
        rng, gen = np.random.default_rng(seed), torch_generator(seed)

        def mix(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
            lam = float(rng.beta(cfg.mixup.alpha, cfg.mixup.alpha))
            return separate_mixup(x, targets.labeled[rows], lam, gen)[0]
        mix.checkpoint_state = {"mixup_lambda": rng, "mixup_pairs": gen}
        return mix

    @classmethod
    def evaluate(cls, cfg: NNPUMixupConfig, model, data, prior, ctx):
        metrics, info = super().evaluate(cfg, model, data, prior, ctx)
        return metrics, info | {"mixup": {"mode": cfg.mixup.mode, "alpha": cfg.mixup.alpha}}
