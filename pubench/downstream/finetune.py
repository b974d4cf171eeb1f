"""Downstream ``finetune``: the encoder + a new linear layer trained end to end with the
risks of ``linear_probe`` (encoder in train mode; optional ``augment`` of the training
images, default none), evaluated on the test split."""

from __future__ import annotations

from torch import nn

from pubench.downstream.base import DOWNSTREAM
from pubench.downstream.linear_probe import ProbeConfig, RiskClassifier
from pubench.pu.data import DownstreamData
from pubench.pu.objective import train_and_evaluate
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds


@DOWNSTREAM.register("finetune")
class FineTune(RiskClassifier):
    @classmethod
    def check(cls, cfg: ProbeConfig, where: str = "downstream") -> None:
        super().check(cfg, where)
        if cfg.standardize is not None:
            raise ConfigError(f"{where}.standardize is a linear_probe option")

    @classmethod
    def run(cls, cfg: ProbeConfig, encoder: nn.Module, data: DownstreamData, seed: int, ctx: JobContext):
        device = ctx.device
        targets, settings, info = cls.targets_and_risk(cfg, data)
        init_seed, order_seed, aug_seed = sub_seeds(seed, 3)
        head = seeded_head(encoder.out_dim, 1 if data.n_classes == 2 else data.n_classes, init_seed, device)
        for p in encoder.parameters():
            p.requires_grad_(True)
        model = nn.Sequential(encoder, head)
        metrics, hist = train_and_evaluate(model, cfg, targets, settings, data, order_seed, aug_seed, ctx,
                                           f"finetune ({cfg.risk})")
        info.update(train_rows=len(targets.rows), final_train_risk=hist[-1] if hist else None, augment=cfg.augment)
        return Result(metrics, info)
