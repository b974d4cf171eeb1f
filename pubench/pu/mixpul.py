"""MixPUL (Wei et al. 2020, "MixPUL: Consistency-based Augmentation for Positive and
Unlabeled Learning", arXiv:2004.09388), PU_METHODS ``mixpul``: supervised MixUp on the
labeled positives and negatives mined from the unlabeled set, plus interpolation
consistency (ICT, Verma et al. 2019) between unlabeled examples with a mean teacher.

1. **Reliable negatives** (:func:`mine_random_negatives`): ``min(negatives_per_positive
   |P|, max_negative_fraction |U|)`` unlabeled examples drawn at random, labeled 0; the
   labeled positives are repeated ``max(1, floor(|N| / |P|))`` times (label 1) so that the
   supervised set ``T`` is about balanced (:func:`supervised_set`).
2. **Pre-training** (``pretrain_epochs`` epochs): MixUp cross-entropy on batches of ``T``
   (:func:`mixup_cross_entropy`): ``lam BCE(f(x~), y) + (1 - lam) BCE(f(x~), y[perm])``,
   ``x~ = lam x + (1 - lam) x[perm]``, ``lam ~ Beta(sup_alpha, sup_alpha)``.
3. **Consistency training** (the remaining ``train.epochs - pretrain_epochs`` epochs; an
   epoch = one pass over the unlabeled set in batches of ``train.batch_size``, each with
   a batch of ``T`` cycling through fresh permutations): the MixUp cross-entropy on the
   ``T`` batch plus ``w(t)`` times the interpolation consistency
   (:func:`interpolation_consistency`) ``mean_i (sigmoid(f(u~_i)) - m_i)^2`` on the
   unlabeled batch mixed with a permutation of itself, ``lam_u ~ Beta(unsup_alpha,
   unsup_alpha)``, where ``m`` mixes the mean teacher's outputs on the un-mixed batch
   (:func:`ict_target`: its logits, ``sigmoid(lam_u t + (1 - lam_u) t[perm])``, as the
   released code and ICT's code do; or its probabilities). ``w(t) = 0`` before 0-based
   stage epoch ``consistency_rampup_start``, then ``consistency_weight`` times the
   sigmoid ramp-up ``exp(-5 (1 - r)^2)`` with ``r`` the fraction of
   ``consistency_rampup_end - consistency_rampup_start`` epochs elapsed (1 when that
   length is 0). The teacher (a copy of the pre-trained network) follows the network
   after every step with decay ``min(1 - 1 / (s + 1), ema_decay)`` at stage step ``s``
   (1-based).

With two softmax outputs, the released code's squared error between the two-class
probability vectors divided by the number of classes equals the squared error of the
positive probability used here. The margin (pairwise ranking) loss the paper mentions
enters the released script with weight 0: not implemented. Prediction: positive iff the
logit > 0; model selection: the last epoch's model (the script prints the test accuracy
of every epoch and keeps the last epoch's outputs); no class prior is used.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData, evaluate_network
from pubench.pu.p3mix import ema_update, pu_batches
from pubench.train.augment import build_augment, to_float
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, TrainConfig, batches, has_batchnorm
from pubench.train.optim import build_optimizer, build_scheduler
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator

CONSISTENCY_TARGETS = ("mixed_teacher_logits", "mixed_teacher_probabilities")


@dataclass(frozen=True)
class MixPULConfig:
    name: str
    negatives_per_positive: float   # reliable negatives: at most this many per labeled positive
    max_negative_fraction: float    # ... and at most this fraction of the unlabeled set
    pretrain_epochs: int            # supervised MixUp only; the consistency stage runs the rest of train.epochs
    sup_alpha: float                # Beta(a, a) of the supervised MixUp
    unsup_alpha: float              # Beta(a, a) of the unlabeled (ICT) MixUp
    consistency_weight: float       # final weight of the interpolation consistency
    consistency_rampup_start: int   # 0-based consistency-stage epoch from which it counts
    consistency_rampup_end: int     # ... reaching its full weight here (sigmoid ramp-up)
    consistency_target: str         # mixed_teacher_logits | mixed_teacher_probabilities
    ema_decay: float                # mean-teacher decay (upper bound)


# ------------------------------------------------------------------ the pure parts
def mine_random_negatives(unlabeled_rows: torch.Tensor, n_positive: int, negatives_per_positive: float,
                          max_fraction: float, gen: torch.Generator) -> torch.Tensor:
    """``min(floor(negatives_per_positive n_positive), floor(max_fraction |U|))`` unlabeled
    rows drawn without replacement (the released code's ``rand`` reliable-negative mining)."""
    n = min(int(negatives_per_positive * n_positive), int(max_fraction * len(unlabeled_rows)))
    return unlabeled_rows[torch.randperm(len(unlabeled_rows), generator=gen)[:max(n, 0)]]


def supervised_set(positive_rows: torch.Tensor, negative_rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(rows, labels) of ``T``: the positives repeated ``max(1, floor(|N| / |P|))`` times
    (label 1), then the negatives (label 0)."""
    copies = max(1, len(negative_rows) // max(1, len(positive_rows)))
    rows = torch.cat([positive_rows.repeat(copies), negative_rows])
    labels = torch.cat([torch.ones(len(positive_rows) * copies), torch.zeros(len(negative_rows))])
    return rows, labels


def mixup_cross_entropy(logits: torch.Tensor, y_a: torch.Tensor, y_b: torch.Tensor, lam: float) -> torch.Tensor:
    """``lam mean BCE(logits, y_a) + (1 - lam) mean BCE(logits, y_b)``: MixUp's loss
    (Zhang et al. 2018, as MixPUL's supervised consistency) on the logits of mixed inputs."""
    z = logits.reshape(-1)
    bce = nn.functional.binary_cross_entropy_with_logits
    return lam * bce(z, y_a.to(z.dtype)) + (1.0 - lam) * bce(z, y_b.to(z.dtype))


def ict_target(teacher_logits: torch.Tensor, perm: torch.Tensor, lam: float, mode: str) -> torch.Tensor:
    """The interpolation consistency target (ICT, Verma et al. 2019, eq. 2) of
    ``lam u + (1 - lam) u[perm]``: the teacher's outputs mixed, as logits
    (``sigmoid(lam t + (1 - lam) t[perm])``) or as probabilities."""
    t = teacher_logits.reshape(-1)
    if mode == "mixed_teacher_logits":
        return torch.sigmoid(lam * t + (1.0 - lam) * t[perm])
    if mode == "mixed_teacher_probabilities":
        p = torch.sigmoid(t)
        return lam * p + (1.0 - lam) * p[perm]
    raise ValueError(f"consistency target {mode!r} is not one of {CONSISTENCY_TARGETS}")


def interpolation_consistency(mixed_logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``mean_i (sigmoid(z_i) - m_i)^2``: ICT's squared-error consistency (the two-class
    softmax MSE divided by the number of classes equals it)."""
    return (torch.sigmoid(mixed_logits.reshape(-1)) - target.reshape(-1).detach()).pow(2).mean()


def sigmoid_rampup(current: float, length: float) -> float:
    """``exp(-5 (1 - r)^2)``, ``r = clip(current / length, 0, 1)`` (Laine & Aila 2017); 1
    when ``length`` is 0."""
    if length == 0:
        return 1.0
    r = min(max(current / length, 0.0), 1.0)
    return float(math.exp(-5.0 * (1.0 - r) ** 2))


def consistency_weight_at(epoch: int, step: int, steps: int, cfg: MixPULConfig) -> float:
    """``w(t)`` at 0-based consistency-stage ``epoch`` and ``step`` of ``steps``."""
    if epoch < cfg.consistency_rampup_start:
        return 0.0
    at = epoch - cfg.consistency_rampup_start + step / max(1, steps)
    return cfg.consistency_weight * sigmoid_rampup(at, cfg.consistency_rampup_end - cfg.consistency_rampup_start)


@PU_METHODS.register("mixpul")
class MixPUL(PUMethod):
    """MixPUL: mined negatives, supervised MixUp, then ICT consistency with a mean teacher."""

    config_cls = MixPULConfig
    test_config = {"negatives_per_positive": 2.0, "max_negative_fraction": 0.4, "pretrain_epochs": 1,
                   "sup_alpha": 1.0, "unsup_alpha": 2.0, "consistency_weight": 1.0, "consistency_rampup_start": 0,
                   "consistency_rampup_end": 1, "consistency_target": "mixed_teacher_logits", "ema_decay": 0.999}

    @classmethod
    def check(cls, cfg: MixPULConfig, where: str = "pu_method") -> None:
        if cfg.negatives_per_positive <= 0 or not 0.0 < cfg.max_negative_fraction <= 1.0:
            raise ConfigError(f"{where}: negatives_per_positive must be > 0 and max_negative_fraction in (0, 1]")
        if cfg.pretrain_epochs < 0:
            raise ConfigError(f"{where}.pretrain_epochs must be >= 0")
        if cfg.sup_alpha <= 0 or cfg.unsup_alpha <= 0:
            raise ConfigError(f"{where}: sup_alpha and unsup_alpha must be > 0")
        if cfg.consistency_weight < 0:
            raise ConfigError(f"{where}.consistency_weight must be >= 0")
        if not 0 <= cfg.consistency_rampup_start <= cfg.consistency_rampup_end:
            raise ConfigError(f"{where}: need 0 <= consistency_rampup_start <= consistency_rampup_end")
        if cfg.consistency_target not in CONSISTENCY_TARGETS:
            raise ConfigError(f"{where}.consistency_target: {cfg.consistency_target!r} is not one of "
                              f"{CONSISTENCY_TARGETS}")
        if not 0.0 <= cfg.ema_decay <= 1.0:
            raise ConfigError(f"{where}.ema_decay must be in [0, 1]")

    @classmethod
    def check_train(cls, cfg: MixPULConfig, train: TrainConfig, where: str = "params") -> None:
        if cfg.pretrain_epochs > train.epochs:
            raise ConfigError(f"{where}: pu_method.pretrain_epochs ({cfg.pretrain_epochs}) exceeds train.epochs "
                              f"({train.epochs}); the consistency stage runs the remaining epochs")

    @classmethod
    def run(cls, cfg: MixPULConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None):
        fit = _MixPULTraining(cfg, backbone, train, data, seed, ctx)
        fit.pretrain()
        fit.consistency()
        return Result(evaluate_network(fit.model, data, ctx), fit.info())


class _MixPULTraining:
    """One MixPUL run, in named steps: stage 1 (``pretrain``: supervised MixUp on T, the
    labeled positives and the mined negatives), then stage 2 (``consistency``: the same plus
    interpolation consistency on U with a mean teacher); ``hist``, the teacher and its step
    ``counter`` are the state a checkpoint holds, with the generators."""

    def __init__(self, cfg: MixPULConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
                 ctx: JobContext):
        self.cfg, self.train_cfg, self.data, self.ctx = cfg, train, data, ctx
        self.device = device = ctx.device
        init_seed, order_seed, aug_seed, mix_seed, mine_seed = sub_seeds(seed, 5)
        self.model = nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, init_seed)).to(device)
        labeled_all = data.observed == 1
        positive_rows = torch.nonzero(labeled_all).squeeze(1)
        self.unlabeled_rows = torch.nonzero(~labeled_all).squeeze(1)
        if len(positive_rows) == 0 or len(self.unlabeled_rows) == 0:
            raise ConfigError("mixpul needs labeled positives and unlabeled examples")
        self.negatives = mine_random_negatives(self.unlabeled_rows, len(positive_rows), cfg.negatives_per_positive,
                                               cfg.max_negative_fraction, torch_generator(mine_seed))
        self.t_rows, self.t_labels = supervised_set(positive_rows, self.negatives)
        self.t_positions = torch.arange(len(self.t_rows))
        self.aug = build_augment(train.augment, data.mean, data.std, "train.augment") if train.augment else None
        self.gen, self.aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
        self.perm_gen, self.mix_rng = torch_generator(mix_seed), np.random.default_rng(mix_seed)
        self.min_size = 2 if has_batchnorm(self.model) else 1
        self.hist: dict[str, list] = {"loss": [], "consistency": []}
        self.opt = build_optimizer(train.optimizer, self.model)
        self.state = {"order": self.gen, "augment": self.aug_gen, "permutations": self.perm_gen, "mixup": self.mix_rng,
                      "history": self.hist}
        self.epochs2 = train.epochs - cfg.pretrain_epochs
        self.counter = {"steps": 0, "in_epoch": 0}
        self.teacher: nn.Module | None = None   # stage 2's mean teacher
        self.steps2 = 0                         # stage 2's steps per epoch

    def inputs(self, rows):
        data = self.data
        xb = data.x_train[rows].to(self.device)
        return self.aug(xb, self.aug_gen) if self.aug is not None else to_float(xb, data.mean, data.std)

    def supervised(self, pos):   # pos: positions in T
        cfg, device = self.cfg, self.device
        x, y = self.inputs(self.t_rows[pos]), self.t_labels[pos].to(device)
        lam = float(self.mix_rng.beta(cfg.sup_alpha, cfg.sup_alpha))
        perm = torch.randperm(len(pos), generator=self.perm_gen).to(device)
        return mixup_cross_entropy(self.model(lam * x + (1.0 - lam) * x[perm]), y, y[perm], lam)

    def end_epoch(self, stats):
        self.hist["loss"].append(stats.mean)
        self.hist["consistency"].append(stats.sums.get("consistency", 0.0) / max(1, stats.steps))

    # ---- stage 1: supervised MixUp on T
    def pretrain(self) -> None:
        cfg, train, opt, n = self.cfg, self.train_cfg, self.opt, len(self.t_rows)
        steps = max(1, len(batches(n, train.batch_size, torch_generator(0), min_size=self.min_size)))
        Trainer([self.model], opt, build_scheduler(train.schedule, opt, steps, cfg.pretrain_epochs),
                "mixpul pre-training", state=self.state, ctx=self.ctx).run(
            cfg.pretrain_epochs, lambda epoch: batches(n, train.batch_size, self.gen, min_size=self.min_size),
            lambda pos, epoch: Step(self.supervised(self.t_positions[pos])), end_epoch=self.end_epoch)

    # ---- stage 2: + interpolation consistency on U with a mean teacher
    def consistency(self) -> None:
        train, opt = self.train_cfg, self.opt
        self.teacher = copy.deepcopy(self.model)
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        self.steps2 = max(1, len(self.epoch_batches(torch_generator(0))))
        Trainer([self.model], opt, build_scheduler(train.schedule, opt, self.steps2, self.epochs2), "mixpul consistency",
                state={**self.state, "teacher": self.teacher, "counter": self.counter}, ctx=self.ctx).run(
            self.epochs2, lambda epoch: self.epoch_batches(self.gen), self.consistency_step,
            start_epoch=self.start_epoch, end_epoch=self.end_epoch)

    def epoch_batches(self, gen: torch.Generator):
        return pu_batches(self.t_positions, self.unlabeled_rows, self.train_cfg.batch_size, gen, self.min_size)

    def start_epoch(self, epoch):
        self.counter["in_epoch"] = 0

    def consistency_step(self, batch, epoch):
        cfg, model, teacher, counter = self.cfg, self.model, self.teacher, self.counter
        t_pos, u_rows = batch
        sup = self.supervised(t_pos)
        u = self.inputs(u_rows)
        teacher.train()     # as the released code: the teacher runs in train mode
        with torch.no_grad():
            t_logits = teacher(u).reshape(-1)
        lam = float(self.mix_rng.beta(cfg.unsup_alpha, cfg.unsup_alpha))
        perm = torch.randperm(len(u_rows), generator=self.perm_gen).to(self.device)
        cons = interpolation_consistency(model(lam * u + (1.0 - lam) * u[perm]),
                                         ict_target(t_logits, perm, lam, cfg.consistency_target))
        weight = consistency_weight_at(epoch, counter["in_epoch"], self.steps2, cfg)
        counter["in_epoch"] += 1
        return Step(sup + weight * cons, extra={"consistency": cons.detach()}, after_backward=self.follow)

    def follow(self) -> dict:
        """After each stage-2 step: the teacher's EMA of the student."""
        self.counter["steps"] += 1
        ema_update(self.teacher, self.model, min(1.0 - 1.0 / (self.counter["steps"] + 1), self.cfg.ema_decay))
        return {}

    def info(self) -> dict:
        hist = self.hist
        return {"risk": "MixPUL: supervised MixUp on P + mined negatives, interpolation consistency on U",
                "prior_used": None, "prior_source": "not used", "reliable_negatives": len(self.negatives),
                "supervised_positives": len(self.t_rows) - len(self.negatives),
                "pretrain_epochs": self.cfg.pretrain_epochs, "consistency_epochs": self.epochs2,
                "loss_per_epoch": hist["loss"], "consistency_per_epoch": hist["consistency"],
                "final_train_loss": hist["loss"][-1] if hist["loss"] else None,
                "model_selection": "the last epoch's model"}
