"""Dist-PU (Zhao et al. 2022, "Dist-PU: Positive-Unlabeled Learning from a Label
Distribution Perspective", CVPR), PU_METHODS ``dist_pu``: a classifier trained to align
the distribution of its predicted labels with the class prior, in two stages as the
authors' released code (Ray-rui/Dist-PU-Positive-Unlabeled-Learning-from-a-Label-
Distribution-Perspective, ``train.py``) runs it; reimplemented, not copied.

Stage 1 ("warm-up", ``warmup_epochs`` epochs): minimise

    L_dis(s) + entropy_weight * H(s_U)

with ``s = sigmoid(g)``, ``L_dis`` the label-distribution loss
(:func:`pubench.pu.risks.label_distribution_loss`, 004 eq. 27) and ``H`` the mean binary
entropy on the unlabeled examples of the batch (:func:`pubench.pu.risks.binary_entropy`).

Stage 2 ("MixUp", the remaining ``train.epochs - warmup_epochs`` epochs, a fresh
optimizer with ``mixup_optimizer`` overriding the train block's): every training example
has a soft pseudo-label, initialised with the stage-1 model's predictions (eval mode) and
replaced by its latest training-mode prediction whenever it is in a batch; labeled
positives are read as 1. Each batch is mixed with a permutation of itself
(``x~ = lam x + (1 - lam) x[perm]``, ``lam ~ Beta(mix_alpha, mix_alpha)``), and

    L_dis(s) + w_e(t) H(s_U) + mixed_entropy_weight H(s~) + mixup_weight MixBCE(s~)

with ``w_e(t) = (1 - cos(pi/2 * t / E2)) * mixup_entropy_weight`` at 0-based stage-2 epoch
``t`` of ``E2`` and ``MixBCE`` :func:`pubench.pu.risks.mixup_bce` on the pseudo-labels of
the two mixed examples. The logits are clamped to ``[-logit_clamp, logit_clamp]`` where the
code does (stage 1: the entropy term only; stage 2: every term).

``loss_scale``: ``released_code`` uses ``L_dis / (2 pi)``, what the code computes (its
LabelDistributionLoss with one histogram bin and an L1 distance is exactly
``(1 - mean_P s) + |mean_U s - pi| / (2 pi)``), and the scale its term weights were tuned
at; ``eq27`` uses the paper's form. Prediction: positive iff ``s >= 1/2`` (the logit).
Model selection: the model after the last epoch. The code also prints the best test
accuracy over the epochs; that number selects on the test set and is never produced here.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, fields

import numpy as np
import torch
from torch import nn

from pubench.pu import risks as R
from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData, evaluate_network
from pubench.pu.objective import resolve_prior
from pubench.train.augment import build_augment, to_float
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, TrainConfig, batches, has_batchnorm, predict
from pubench.train.optim import OptimizerConfig, ScheduleConfig, build_optimizer, cosine_factor, optimizer_config
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator

LOSS_SCALES = ("released_code", "eq27")


@dataclass(frozen=True)
class DistPUConfig:
    name: str
    warmup_epochs: int              # stage 1; stage 2 = train.epochs - warmup_epochs (released: 60 + 60)
    entropy_weight: float           # stage 1 weight of H(s_U) (released --co-mu 2e-3)
    mixup_entropy_weight: float     # stage 2 final weight of H(s_U), cosine ramp from 0 (released --co-entropy 0.004)
    mix_alpha: float                # Beta(a, a) of the MixUp coefficient (released --alpha 6.0)
    mixed_entropy_weight: float     # weight of H(s~) of the mixed batch (released --co-mix-entropy 0.04)
    mixup_weight: float             # weight of the MixUp BCE (released --co-mixup 5.0)
    logit_clamp: float              # released: 10 (0: no clamp)
    loss_scale: str                 # released_code (L_dis / 2 pi) | eq27
    mixup_lr_floor: float           # stage 2 cosine ends at this fraction of its lr (released 0.7; needs schedule cosine)
    mixup_optimizer: dict           # stage 2 overrides of train.optimizer (released: lr 5e-5, weight_decay 1e-3; {}: none)
    prior: float | None = None


def mixup_entropy_ramp(epoch: int, epochs: int, weight: float) -> float:
    """Stage-2 weight of the entropy on U at 0-based stage-2 ``epoch`` of ``epochs``: the
    released code's ``(1 - cos(epoch / epochs * pi / 2)) * weight`` (0 at the first epoch)."""
    return (1.0 - math.cos(epoch / epochs * math.pi / 2)) * weight if epochs else 0.0


def mixup_optimizer(train: OptimizerConfig, overrides: dict) -> OptimizerConfig:
    """Stage 2's optimizer: ``train.optimizer`` with ``pu_method.mixup_optimizer``'s settings."""
    return optimizer_config({**asdict(train), **overrides})


def written(c: OptimizerConfig) -> dict:
    """``c`` as a spec writes it, its defaults left out: what a record's ``mixup_optimizer`` holds
    (the spec's ``train.optimizer`` with the overrides, as records have always read)."""
    return {f.name: getattr(c, f.name) for f in fields(c)
            if f.default is MISSING or getattr(c, f.name) != f.default}


def stage_scheduler(c: ScheduleConfig, optimizer, steps_per_epoch: int, epochs: int, floor: float):
    """Per-step scheduler of one stage: constant, or cosine (with the schedule's warm-up)
    from the optimizer's lr to ``floor`` times it over the stage."""
    if c.name == "constant":
        return None
    total = max(1, steps_per_epoch * epochs)
    warm = int(round(c.warmup_epochs * steps_per_epoch))
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: floor + (1.0 - floor) * cosine_factor(step, total, warm))


@PU_METHODS.register("dist_pu")
class DistPU(PUMethod):
    """Dist-PU (Zhao et al. 2022): label-distribution alignment + entropy minimization,
    then a MixUp stage on self-updated pseudo-labels (see the module docstring).

    Where this differs from the released code (written in the specs): the schedules step
    per iteration (the code: per epoch), the stage-1 cosine spans the warm-up (the code's
    ``T_max`` is ``--pu-epochs``, equal to ``--warm-up-epochs`` in its defaults); the
    network is the spec's backbone + a linear layer with one logit; a trailing batch of
    one example is dropped when the network has BatchNorm."""

    config_cls = DistPUConfig
    test_config = {"warmup_epochs": 1, "entropy_weight": 2e-3, "mixup_entropy_weight": 4e-3, "mix_alpha": 6.0,
                   "mixed_entropy_weight": 0.04, "mixup_weight": 5.0, "logit_clamp": 10.0,
                   "loss_scale": "released_code", "mixup_lr_floor": 0.0, "mixup_optimizer": {"lr": 5e-3}}

    @classmethod
    def check(cls, cfg: DistPUConfig, where: str = "pu_method") -> None:
        if cfg.warmup_epochs < 0:
            raise ConfigError(f"{where}.warmup_epochs must be >= 0")
        for key in ("entropy_weight", "mixup_entropy_weight", "mixed_entropy_weight", "mixup_weight", "logit_clamp"):
            if getattr(cfg, key) < 0:
                raise ConfigError(f"{where}.{key} must be >= 0")
        if cfg.mix_alpha <= 0:
            raise ConfigError(f"{where}.mix_alpha must be > 0")
        if cfg.loss_scale not in LOSS_SCALES:
            raise ConfigError(f"{where}.loss_scale: {cfg.loss_scale!r} is not one of {LOSS_SCALES}")
        if not 0.0 <= cfg.mixup_lr_floor < 1.0:
            raise ConfigError(f"{where}.mixup_lr_floor must be in [0, 1)")
        if "name" in cfg.mixup_optimizer:
            raise ConfigError(f"{where}.mixup_optimizer overrides settings of train.optimizer; it takes no name")
        if cfg.prior is not None and not 0.0 < cfg.prior < 1.0:
            raise ConfigError(f"{where}.prior must be in (0, 1)")

    @classmethod
    def check_train(cls, cfg: DistPUConfig, train: TrainConfig, where: str = "params") -> None:
        if cfg.warmup_epochs > train.epochs:
            raise ConfigError(f"{where}: pu_method.warmup_epochs ({cfg.warmup_epochs}) exceeds train.epochs "
                              f"({train.epochs}); the MixUp stage runs the remaining epochs")
        if cfg.mixup_lr_floor and train.schedule.name != "cosine":
            raise ConfigError(f"{where}: pu_method.mixup_lr_floor is a floor of the cosine schedule; "
                              "train.schedule must be cosine")

    @classmethod
    def run(cls, cfg: DistPUConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None):
        prior, source = resolve_prior(cfg.prior, data.prior, True, "pu_method")
        if not 0.0 < prior < 1.0:
            raise ConfigError(f"dist_pu needs a class prior in (0, 1), got {prior}")
        fit = _DistPUTraining(cfg, backbone, train, data, prior, seed, ctx)
        fit.warm_up()
        fit.mix_up()
        return Result(evaluate_network(fit.model, data, ctx), fit.info(source))


class _DistPUTraining:
    """One Dist-PU run, in named steps: stage 1 (``warm_up``: label distribution + entropy
    on U), then stage 2 (``mix_up``: MixUp on self-updated pseudo-labels); ``hist`` and the
    pseudo-labels are the state a checkpoint holds."""

    def __init__(self, cfg: DistPUConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData,
                 prior: float, seed: int, ctx: JobContext):
        self.cfg, self.train_cfg, self.data, self.prior, self.ctx = cfg, train, data, prior, ctx
        self.device = device = ctx.device
        init_seed, order_seed, aug_seed, mix_seed = sub_seeds(seed, 4)
        self.model = nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, init_seed)).to(device)
        self.labeled_all = data.observed == 1
        self.n = data.x_train.shape[0]
        self.aug = build_augment(train.augment, data.mean, data.std, "train.augment") if train.augment else None
        self.gen, self.aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
        self.mix_rng = np.random.default_rng(mix_seed)
        self.min_size = 2 if has_batchnorm(self.model) else 1
        self.steps = max(1, len(batches(self.n, train.batch_size, torch_generator(0), min_size=self.min_size)))
        self.scale = 1.0 / (2.0 * prior) if cfg.loss_scale == "released_code" else 1.0
        self.clamp = cfg.logit_clamp or math.inf
        self.mix_epochs = train.epochs - cfg.warmup_epochs
        self.hist: dict[str, list] = {"loss": [], "dist_loss": [], "mixup_loss": [], "lr": []}
        self.state = {"order": self.gen, "augment": self.aug_gen, "mixup": self.mix_rng, "history": self.hist}
        # read through a dict: the checkpoint restores the pseudo-labels updated so far in place
        self.soft: dict[str, torch.Tensor] = {}

    def inputs(self, rows):
        data = self.data
        xb = data.x_train[rows].to(self.device)
        return self.aug(xb, self.aug_gen) if self.aug is not None else to_float(xb, data.mean, data.std)

    def distribution(self, logits, lab):
        return self.scale * R.label_distribution_loss(torch.sigmoid(logits), lab, self.prior)

    def epoch_batches(self, epoch):
        return batches(self.n, self.train_cfg.batch_size, self.gen, min_size=self.min_size)

    def end_epoch(self, stats):
        hist = self.hist
        hist["loss"].append(stats.mean)
        hist["dist_loss"].append(stats.sums.get("dist_loss", 0.0) / max(1, stats.steps))
        hist["mixup_loss"].append(stats.sums["mixup"] / max(1, stats.steps) if "mixup" in stats.sums else None)

    def start_epoch(self, trainer):
        return lambda epoch: self.hist["lr"].append(trainer.optimizer.param_groups[0]["lr"])

    # ---- stage 1: label distribution + entropy on U
    def warm_up(self) -> None:
        cfg, train = self.cfg, self.train_cfg
        opt = build_optimizer(train.optimizer, self.model)
        stage = Trainer([self.model], opt, stage_scheduler(train.schedule, opt, self.steps, cfg.warmup_epochs, 0.0),
                        "dist_pu warm-up", state=self.state, ctx=self.ctx)
        stage.run(cfg.warmup_epochs, self.epoch_batches, self.warmup_step, start_epoch=self.start_epoch(stage),
                  end_epoch=self.end_epoch)

    def warmup_step(self, rows, epoch):
        lab = self.labeled_all[rows].to(self.device)
        z = self.model(self.inputs(rows)).reshape(-1)
        dist = self.distribution(z, lab)
        ent = R.binary_entropy(z.clamp(-self.clamp, self.clamp)[~lab])
        return Step(dist + self.cfg.entropy_weight * ent, extra={"dist_loss": dist.detach(), "entropy": ent.detach()})

    # ---- stage 2: MixUp on self-updated pseudo-labels
    def mix_up(self) -> None:
        cfg, train, data, model = self.cfg, self.train_cfg, self.data, self.model
        model.eval()
        self.soft["pseudo"] = torch.sigmoid(predict(lambda k: model(to_float(data.x_train[k].to(self.device),
                                                                             data.mean, data.std)), self.n,
                                                      self.ctx).reshape(-1))
        opt = build_optimizer(mixup_optimizer(train.optimizer, cfg.mixup_optimizer), model)
        stage = Trainer([model], opt, stage_scheduler(train.schedule, opt, self.steps, self.mix_epochs,
                                                      cfg.mixup_lr_floor),
                        "dist_pu mixup", state={**self.state, "pseudo_labels": self.soft}, ctx=self.ctx)
        stage.run(self.mix_epochs, self.epoch_batches, self.mixup_step, start_epoch=self.start_epoch(stage),
                  end_epoch=self.end_epoch)

    def mixup_step(self, rows, epoch):
        cfg, model, clamp = self.cfg, self.model, self.clamp
        lab = self.labeled_all[rows].to(self.device)
        x = self.inputs(rows)
        pseudo = self.soft["pseudo"]
        targets = torch.where(lab, torch.ones_like(lab, dtype=pseudo.dtype), pseudo[rows].to(self.device))
        lam = float(self.mix_rng.beta(cfg.mix_alpha, cfg.mix_alpha))
        perm = torch.randperm(len(rows), generator=self.gen).to(self.device)
        z_mix = model(lam * x + (1.0 - lam) * x[perm]).reshape(-1).clamp(-clamp, clamp)
        z = model(x).reshape(-1).clamp(-clamp, clamp)
        dist = self.distribution(z, lab)
        mix = R.mixup_bce(z_mix, targets, targets[perm], lam)
        loss = (dist + mixup_entropy_ramp(epoch, self.mix_epochs, cfg.mixup_entropy_weight) * R.binary_entropy(z[~lab])
                + cfg.mixed_entropy_weight * R.binary_entropy(z_mix) + cfg.mixup_weight * mix)
        pseudo[rows] = torch.sigmoid(z.detach()).cpu()
        return Step(loss, extra={"dist_loss": dist.detach(), "mixup": mix.detach()})

    def info(self, source: str) -> dict:
        cfg, hist = self.cfg, self.hist
        return {
            "risk": "Dist-PU: label distribution alignment + entropy minimization, then MixUp",
            "prior_used": self.prior, "prior_source": source, "loss_scale": cfg.loss_scale,
            "warmup_epochs": cfg.warmup_epochs, "mixup_epochs": self.mix_epochs,
            "mixup_optimizer": written(mixup_optimizer(self.train_cfg.optimizer, cfg.mixup_optimizer)),
            "lr_per_epoch": hist["lr"],
            "loss_per_epoch": hist["loss"], "dist_loss_per_epoch": hist["dist_loss"],
            "mixup_loss_per_epoch": hist["mixup_loss"],
            "final_train_loss": hist["loss"][-1] if hist["loss"] else None,
            "model_selection": "the last epoch's model",
        }
