"""Downstream ``vpu_probe``: a linear classifier on the frozen encoder's (standardized)
features trained with vPU's objective (Chen et al. 2020a: the variational loss
``L_var = log mean_x Phi(x) - mean_P log Phi(x)`` plus ``lam`` times the MixUp
regularizer), prior-free; 003 Sec. 9.3 / Figure 14's "vPU" logistic-regression baseline.

The objective and the decision rule are the PU method ``vpu``'s
(:func:`pubench.pu.vpu.vpu_objective`, :func:`~pubench.pu.vpu.vpu_scores`: positive iff
``Phi(x) / max Phi > 1/2``, the maximum over the training data sample), and so are the
batches (:class:`~pubench.pu.vpu.FullBatches`: labeled positives and data sample from
independent shuffled streams, same size) and the data sample (:func:`~pubench.pu.vpu.vpu_rows`:
every training example on a single training set, the unlabeled sample on a case-control
split). What differs from the PU method, because this is a probe trained like the other
rows of Figure 14 (our choices, 003 prints none): an epoch is one pass over the data sample
(``ceil(n_x / batch_size)`` iterations) instead of vPU's 30 iterations; the spec's
optimizer and schedule (no learning-rate halving, no fresh optimizer); the last epoch's
classifier (no validation hold-out); MixUp mixes the classifier's inputs, i.e. the
features (as ``nnpu_mixup_probe``), each data-sample feature with a permuted positive one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from pubench.downstream.base import DOWNSTREAM, Downstream
from pubench.pu.data import DownstreamData
from pubench.pu.vpu import paired_batches, vpu_objective, vpu_rows, vpu_scores
from pubench.train.classifier import encode, feature_standardizer, seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer
from pubench.train.metrics import evaluate_scores
from pubench.train.optim import (
    OptimizerConfig,
    ScheduleConfig,
    build_optimizer,
    build_scheduler,
    check_optimizer,
    check_schedule,
)
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator


@dataclass(frozen=True)
class VPUProbeConfig:
    name: str
    epochs: int
    batch_size: int                 # positives per batch = data-sample examples per batch
    lam: float                      # weight of the MixUp regularizer
    mix_alpha: float                # Beta(a, a) of the MixUp coefficient
    optimizer: OptimizerConfig = OptimizerConfig("adam", 1e-3)
    schedule: ScheduleConfig = ScheduleConfig()
    standardize: bool | None = None  # z-score the features (default true, as linear_probe)


@DOWNSTREAM.register("vpu_probe")
class VPUProbe(Downstream):
    config_cls = VPUProbeConfig
    test_config = {"epochs": 2, "batch_size": 16, "lam": 0.03, "mix_alpha": 0.3,
                   "optimizer": {"name": "adam", "lr": 0.01}}

    @classmethod
    def check(cls, cfg: VPUProbeConfig, where: str = "downstream") -> None:
        if cfg.mix_alpha <= 0 or cfg.lam < 0:
            raise ConfigError(f"{where}: mix_alpha must be > 0 and lam >= 0")
        if cfg.epochs < 0 or cfg.batch_size < 2:
            raise ConfigError(f"{where}: epochs must be >= 0 and batch_size >= 2 (vPU)")
        check_optimizer(cfg.optimizer, f"{where}.optimizer")
        check_schedule(cfg.schedule, f"{where}.schedule")

    @classmethod
    def run(cls, cfg: VPUProbeConfig, encoder: nn.Module, data: DownstreamData, seed: int, ctx: JobContext):
        device = ctx.device
        cls.check(cfg, "downstream")
        if data.split_kind != "pu" or data.n_classes != 2:
            raise ConfigError("downstream vpu_probe needs a binary PU split")
        init_seed, order_seed, mix_seed = sub_seeds(seed, 3)
        gen, mix_rng = torch_generator(order_seed), np.random.default_rng(mix_seed)
        rows = vpu_rows(data.observed, data.pu_scheme, 0.0, gen)
        train_p, train_x = rows["train_p"], rows["train_x"]
        if len(train_p) == 0 or len(train_x) < 2:
            raise ValueError("vpu_probe needs labeled positives and at least 2 examples in the data sample")
        encoder.eval()
        for p in encoder.parameters():
            p.requires_grad_(False)
        head = seeded_head(encoder.out_dim, 1, init_seed, device)
        feats = encode(encoder, data.x_train, data.mean, data.std, ctx)
        standardize = cfg.standardize is not False
        shift, scale = feature_standardizer(feats, standardize)
        feats = ((feats - shift) / scale).to(device)
        bs = cfg.batch_size
        iters = max(1, math.ceil(len(train_x) / bs))
        opt = build_optimizer(cfg.optimizer, head)
        sched = build_scheduler(cfg.schedule, opt, iters, cfg.epochs)

        def batches(epoch: int):
            return paired_batches(len(train_p), len(train_x), bs, iters, gen)

        def step(batch, epoch: int) -> Step:
            p_idx, x_idx = batch
            mu = float(mix_rng.beta(cfg.mix_alpha, cfg.mix_alpha))
            partner = torch.randperm(bs, generator=gen).to(device)
            loss, var_loss, reg = vpu_objective(head, feats[train_p[p_idx].to(device)],
                                                feats[train_x[x_idx].to(device)], mu, partner, cfg.lam)
            return Step(loss, extra={"var_loss": var_loss.detach(), "reg_loss": reg.detach()})

        history = Trainer([head], opt, sched, "vpu probe", state={"order": gen, "mixup": mix_rng}, ctx=ctx).run(
            cfg.epochs, batches, step)
        head.eval()
        with torch.no_grad():
            log_phi_sample = nn.functional.logsigmoid(head(feats[train_x.to(device)]).reshape(-1)).cpu()
            test_feats = ((encode(encoder, data.x_test, data.mean, data.std, ctx) - shift) / scale).to(device)
            log_phi_test = nn.functional.logsigmoid(head(test_feats).reshape(-1)).cpu()
        metrics = evaluate_scores(vpu_scores(log_phi_test, log_phi_sample), data.y_test, 2)
        single = data.pu_scheme == "single_training_set"
        info = {
            "risk": "variational (vPU) + MixUp", "lam": cfg.lam, "mix_alpha": cfg.mix_alpha,
            "iterations_per_epoch": iters, "steps": iters * cfg.epochs, "batch_size": bs,
            "data_sample": ("every training example (single training set; labeled positives included)" if single
                            else "the unlabeled sample (case-control)"),
            "n_train_positives": len(train_p), "n_train_data_sample": len(train_x),
            "positives_repeat_in_batch": len(train_p) < bs, "mixes": "standardized features of the frozen encoder",
            "model_selection": "the last epoch's classifier", "log_max_phi_data_sample": float(log_phi_sample.max()),
            "loss_per_epoch": [e.mean for e in history],
            "var_loss_per_epoch": [e.sums["var_loss"] / max(1, e.steps) for e in history],
            "reg_loss_per_epoch": [e.sums["reg_loss"] / max(1, e.steps) for e in history],
            "final_train_risk": history[-1].mean if history else None, "features": int(encoder.out_dim),
            "standardize": standardize, "prior_used": None, "prior_source": "not used (prior-free)",
        }
        return Result(metrics, info)
