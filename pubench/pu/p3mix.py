"""P3Mix (Li et al. 2022, "Who Is Your Right Mixup Partner in Positive and Unlabeled
Learning", ICLR), PU_METHODS ``p3mix_c`` and ``p3mix_e``: PU learning read as learning
with noisy labels (labeled positives: 1, unlabeled examples: 0, the "pseudo-negatives"),
trained on MixUp batches whose partners are chosen heuristically.

Each step takes a batch of ``train.batch_size`` labeled positives and one of as many
unlabeled examples (an epoch: one pass over the unlabeled examples; the positives cycle
through fresh permutations), predicts ``p(x) = sigmoid(f(x))`` on them (no gradient) and
mixes every example with a partner (:func:`select_partners`):

* **heuristic mixup** (from 0-based epoch ``start_hmix`` on): an unlabeled example whose
  prediction is uncertain, ``1 - gamma < p(x) < gamma`` (a "marginal pseudo-negative",
  :func:`marginal_pseudo_negatives`), takes a random partner from the candidate pool: the
  ``top_k`` labeled positives of largest predictive entropy, the positives nearest the
  boundary (:func:`boundary_pool`, refreshed before each epoch with the model in eval
  mode); every other example takes a random example of the batch (drawn with
  replacement); before ``start_hmix``: a random permutation of the batch;
* ``x~ = lam x + (1 - lam) x_b``, ``y~ = lam y + (1 - lam) y_b`` with
  ``lam ~ Beta(alpha, alpha)`` taken as ``max(lam, 1 - lam)``; a pool partner has label 1.

The loss (:func:`p3mix_loss`) is the cross-entropy of the mixed batch's predictions with
the mixed labels, averaged over its positive part (weight ``positive_weight``) and its
unlabeled part (``unlabeled_weight``), plus ``entropy_weight`` times the mean predictive
entropy of the mixed batch; predictions are clamped to ``[1e-4, 1 - 1e-4]``.

* **P3Mix-C** (label correction): from ``start_hmix`` on, an unlabeled example with
  ``p(x) >= gamma`` is relabeled positive before mixing (:func:`corrected_labels`).
* **P3Mix-E** (early-learning regularization, Liu et al. 2020): a mean teacher (an
  exponential moving average of the network's parameters, updated after each epoch
  ``e >= ema_start`` with decay ``min(1 - 1 / (e - ema_start + 1), ema_decay)``) predicts
  ``t(x)`` on the un-mixed batch; the targets are mixed like the labels (a pool partner:
  1) and ``elr_weight * mean log(1 - <t~, p~>)`` is added (``<.,.>`` over the two classes).

The official code (changchunli/P3Mix) is not in the reference index; the details above
(the pool by entropy, the uncertainty band ``(1 - gamma, gamma)``, partners drawn at
random, ``lam = max(lam, 1 - lam)``, the weighted loss and the per-epoch teacher) follow
two public reimplementations in the index that agree on them; see the specs' decisions.
Model selection: the model after the last epoch (no validation set, no test peeking).
The network: the backbone + a linear layer with one logit (one reimplementation uses two
softmax outputs: the same function class); positive iff the logit > 0.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData, evaluate_network
from pubench.train.augment import build_augment, to_float
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, TrainConfig, has_batchnorm
from pubench.train.momentum import momentum_update_
from pubench.train.optim import build_optimizer, build_scheduler
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator

PROB_CLAMP = 1e-4


@dataclass(frozen=True)
class P3MixConfig:
    name: str
    alpha: float              # Beta(alpha, alpha) of the mixing coefficient
    gamma: float              # uncertainty band (1 - gamma, gamma); P3Mix-C's correction threshold
    top_k: int                # size of the candidate pool of boundary positives
    start_hmix: int           # 0-based epoch from which the heuristic mixup (and the correction) run
    positive_weight: float    # weight of the cross-entropy on the mixed positive part
    unlabeled_weight: float   # weight of the cross-entropy on the mixed unlabeled part
    entropy_weight: float     # weight of the mean predictive entropy of the mixed batch


@dataclass(frozen=True)
class P3MixEConfig:
    name: str
    alpha: float
    gamma: float              # uncertainty band (1 - gamma, gamma)
    top_k: int
    start_hmix: int
    positive_weight: float
    unlabeled_weight: float
    entropy_weight: float
    elr_weight: float         # weight of the early-learning regularization term
    ema_decay: float          # mean-teacher decay (upper bound of the per-epoch decay)
    ema_start: int            # 0-based epoch from which the teacher is updated


# ------------------------------------------------------------------ the pure parts
def binary_entropy_of_logits(logits: torch.Tensor) -> torch.Tensor:
    """Per-example entropy ``-(p log p + (1 - p) log(1 - p))`` of ``p = sigmoid(logits)``."""
    p = torch.sigmoid(logits)
    return -(p * nn.functional.logsigmoid(logits) + (1 - p) * nn.functional.logsigmoid(-logits))


def boundary_pool(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """Indices of the ``top_k`` examples of largest predictive entropy (P3Mix's candidate
    pool: the labeled positives nearest the boundary), most uncertain first; ties keep the
    lower index first. Fewer when there are fewer examples."""
    ent = binary_entropy_of_logits(logits.reshape(-1).float())
    order = torch.sort(-ent, stable=True).indices
    return order[:min(top_k, len(order))]


def marginal_pseudo_negatives(prob: torch.Tensor, labeled: torch.Tensor, gamma: float) -> torch.Tensor:
    """The unlabeled examples whose positive probability lies strictly inside
    ``(1 - gamma, gamma)`` (P3Mix's marginal pseudo-negative instances)."""
    prob = prob.reshape(-1)
    return ~labeled.reshape(-1).bool() & (prob > 1.0 - gamma) & (prob < gamma)


def corrected_labels(prob: torch.Tensor, labeled: torch.Tensor, gamma: float) -> torch.Tensor:
    """P3Mix-C's labels: 1 for a labeled positive and for an unlabeled example with
    ``prob >= gamma``, else 0 (float)."""
    labeled = labeled.reshape(-1).bool()
    return (labeled | (prob.reshape(-1) >= gamma)).float()


def select_partners(marginal: torch.Tensor, pool_size: int, gen: torch.Generator) -> torch.Tensor:
    """Heuristic mixup partners of a batch of ``n`` examples: an index into the batch
    followed by the pool (``[0, n)``: a batch example, ``n + j``: pool member ``j``). A
    ``marginal`` example takes a uniformly drawn pool member (a batch example when the pool
    is empty); every other example a uniformly drawn batch example (with replacement)."""
    marginal = marginal.reshape(-1).bool().cpu()
    n = marginal.shape[0]
    partner = torch.randint(0, n, (n,), generator=gen)
    from_pool = torch.randint(0, max(pool_size, 1), (n,), generator=gen)
    if pool_size > 0:
        partner = torch.where(marginal, n + from_pool, partner)
    return partner


def mixup_lambda(rng: np.random.Generator, alpha: float) -> float:
    """``lam ~ Beta(alpha, alpha)`` taken as ``max(lam, 1 - lam)`` (each mix stays nearer its
    first example)."""
    lam = float(rng.beta(alpha, alpha))
    return max(lam, 1.0 - lam)


def p3mix_loss(logits: torch.Tensor, targets: torch.Tensor, labeled: torch.Tensor, positive_weight: float,
               unlabeled_weight: float, entropy_weight: float, teacher: torch.Tensor | None = None,
               elr_weight: float = 0.0) -> torch.Tensor:
    """P3Mix's objective on a mixed batch (Li et al. 2022, Sec. 3; the ELR term: Liu et al.
    2020, eq. 6):

        w_P CE_P + w_U CE_U + w_H mean_i H(p~_i) [+ w_E mean_i log(1 - <t~_i, p~_i>)]

    with ``p~ = clamp(sigmoid(logits), 1e-4, 1 - 1e-4)`` as the two-class vector
    ``(1 - p~, p~)``, ``CE_P`` / ``CE_U`` the mean cross-entropy ``-<y~, log p~>`` over the
    rows whose first example is a labeled positive / unlabeled (``labeled``; a part without
    rows adds 0), ``targets`` the mixed labels ``y~`` (probability of positive) and
    ``teacher`` the mixed mean-teacher predictions ``t~`` (probability of positive)."""
    p = torch.sigmoid(logits.reshape(-1)).clamp(PROB_CLAMP, 1.0 - PROB_CLAMP)
    y = targets.reshape(-1).to(p.dtype)
    labeled = labeled.reshape(-1).bool()
    ce = -(y * p.log() + (1.0 - y) * (1.0 - p).log())
    zero = p.sum() * 0.0
    loss_p = ce[labeled].mean() if labeled.any() else zero
    loss_u = ce[~labeled].mean() if (~labeled).any() else zero
    entropy = -(p * p.log() + (1.0 - p) * (1.0 - p).log()).mean()
    loss = positive_weight * loss_p + unlabeled_weight * loss_u + entropy_weight * entropy
    if teacher is not None:
        t = teacher.reshape(-1).to(p.dtype)
        loss = loss + elr_weight * (1.0 - (t * p + (1.0 - t) * (1.0 - p))).log().mean()
    return loss


def ema_decay_at(epoch: int, ema_start: int, ema_decay: float) -> float:
    """Mean-teacher decay after 0-based epoch ``epoch >= ema_start``:
    ``min(1 - 1 / (epoch - ema_start + 1), ema_decay)`` (0 at ``ema_start``: a copy)."""
    return min(1.0 - 1.0 / (epoch - ema_start + 1), ema_decay)


@torch.no_grad()
def ema_update(teacher: nn.Module, student: nn.Module, decay: float) -> None:
    """``teacher <- decay teacher + (1 - decay) student`` over the parameters."""
    momentum_update_(list(teacher.parameters()), list(student.parameters()), decay)


def pu_batches(labeled_rows: torch.Tensor, unlabeled_rows: torch.Tensor, batch_size: int, gen: torch.Generator,
               min_size: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of (positive rows, unlabeled rows): the unlabeled rows in a fresh random
    order cut into batches of ``batch_size`` (a trailing one below ``min_size`` dropped),
    each with as many positives read from fresh random permutations of ``labeled_rows``
    laid end to end."""
    order = unlabeled_rows[torch.randperm(len(unlabeled_rows), generator=gen)]
    u_batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    u_batches = [b for b in u_batches if len(b) >= min_size]
    need = sum(len(b) for b in u_batches)
    stream, have = [], 0
    while have < need and len(labeled_rows):
        stream.append(labeled_rows[torch.randperm(len(labeled_rows), generator=gen)])
        have += len(labeled_rows)
    positives = torch.cat(stream) if stream else labeled_rows[:0]
    out, at = [], 0
    for b in u_batches:
        out.append((positives[at:at + len(b)], b))
        at += len(b)
    return out


# ------------------------------------------------------------------ the methods
class P3Mix(PUMethod):
    """P3Mix's training (module docstring); the variant adds its correction."""

    config_cls = P3MixConfig
    test_config: dict = {}
    variant = ""

    @classmethod
    def check(cls, cfg: P3MixConfig, where: str = "pu_method") -> None:
        if cfg.alpha <= 0:
            raise ConfigError(f"{where}.alpha must be > 0")
        if not 0.5 < cfg.gamma <= 1.0:
            raise ConfigError(f"{where}.gamma must be in (0.5, 1]: the band (1 - gamma, gamma) around 1/2")
        if cfg.top_k < 1 or cfg.start_hmix < 0:
            raise ConfigError(f"{where}: top_k must be >= 1 and start_hmix >= 0")
        for key in ("positive_weight", "unlabeled_weight", "entropy_weight"):
            if getattr(cfg, key) < 0:
                raise ConfigError(f"{where}.{key} must be >= 0")

    @classmethod
    def run(cls, cfg: P3MixConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None):
        fit = _P3MixTraining(cls, cfg, backbone, train, data, seed, ctx)
        fit.train()
        return Result(evaluate_network(fit.model, data, ctx), fit.info())

    # ---- what the variants change
    @classmethod
    def make_teacher(cls, cfg, model: nn.Module) -> nn.Module | None:
        return None

    @classmethod
    def labels(cls, cfg, prob: torch.Tensor, labeled: torch.Tensor, hmix: bool) -> torch.Tensor:
        return labeled.float()

    @classmethod
    def teacher_targets(cls, teacher, x, x_all, pool_size: int, partner, lam: float) -> torch.Tensor | None:
        return None

    @classmethod
    def loss(cls, cfg, logits, targets, labeled, teacher_targets):
        return p3mix_loss(logits, targets, labeled, cfg.positive_weight, cfg.unlabeled_weight, cfg.entropy_weight)

    @classmethod
    def after_epoch(cls, cfg, teacher, model, epoch: int) -> None:
        pass



class _P3MixTraining:
    """One run of a P3Mix variant (``method``: its labels, teacher and loss), in named steps:
    the candidate pool at each epoch's start (``refresh_pool``), the mixup ``step`` and the
    epoch's end; ``hist`` (and P3Mix-E's teacher) are the state a checkpoint holds, with the
    generators."""

    def __init__(self, method: type[P3Mix], cfg: P3MixConfig, backbone: nn.Module, train: TrainConfig,
                 data: DownstreamData, seed: int, ctx: JobContext):
        self.method, self.cfg, self.train_cfg, self.data, self.ctx = method, cfg, train, data, ctx
        self.device = device = ctx.device
        init_seed, order_seed, aug_seed, mix_seed = sub_seeds(seed, 4)
        self.model = nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, init_seed)).to(device)
        self.teacher = method.make_teacher(cfg, self.model)
        labeled_all = data.observed == 1
        self.labeled_rows = torch.nonzero(labeled_all).squeeze(1)
        self.unlabeled_rows = torch.nonzero(~labeled_all).squeeze(1)
        if len(self.labeled_rows) == 0 or len(self.unlabeled_rows) == 0:
            raise ConfigError(f"{cfg.name} needs labeled positives and unlabeled examples")
        self.aug = build_augment(train.augment, data.mean, data.std, "train.augment") if train.augment else None
        self.gen, self.aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
        self.pair_gen, self.mix_rng = torch_generator(mix_seed), np.random.default_rng(mix_seed)
        self.min_size = 2 if has_batchnorm(self.model) else 1
        # the candidate pool is a function of the model at the epoch's start: recomputed, never saved
        self.pool_rows = self.labeled_rows[:0]
        self.hist: dict[str, list] = {"loss": [], "marginal_fraction": [], "corrected_fraction": []}

    def train(self) -> None:
        train = self.train_cfg
        steps = max(1, len(self.epoch_batches(torch_generator(0))))
        opt = build_optimizer(train.optimizer, self.model)
        sched = build_scheduler(train.schedule, opt, steps, train.epochs)
        state = {"order": self.gen, "augment": self.aug_gen, "partners": self.pair_gen, "mixup": self.mix_rng,
                 "history": self.hist}
        if self.teacher is not None:
            state["teacher"] = self.teacher
        Trainer([self.model], opt, sched, self.cfg.name, state=state, ctx=self.ctx).run(
            train.epochs, lambda epoch: self.epoch_batches(self.gen), self.step, start_epoch=self.refresh_pool,
            end_epoch=self.end_epoch)

    def epoch_batches(self, gen: torch.Generator):
        return pu_batches(self.labeled_rows, self.unlabeled_rows, self.train_cfg.batch_size, gen, self.min_size)

    def inputs(self, rows):
        data = self.data
        xb = data.x_train[rows].to(self.device)
        return self.aug(xb, self.aug_gen) if self.aug is not None else to_float(xb, data.mean, data.std)

    @torch.no_grad()
    def refresh_pool(self, epoch: int) -> None:
        cfg, data, model, rows = self.cfg, self.data, self.model, self.labeled_rows
        if epoch < cfg.start_hmix:
            return
        model.eval()
        logits = torch.cat([model(to_float(data.x_train[rows[i:i + 1024]].to(self.device), data.mean,
                                          data.std)).reshape(-1).float().cpu()
                            for i in range(0, len(rows), 1024)])
        model.train()
        self.pool_rows = rows[boundary_pool(logits, cfg.top_k)]

    def step(self, batch, epoch):
        cfg, method, model, device = self.cfg, self.method, self.model, self.device
        p_rows, u_rows = batch
        rows = torch.cat([p_rows, u_rows])
        lab = torch.cat([torch.ones(len(p_rows), dtype=torch.bool), torch.zeros(len(u_rows), dtype=torch.bool)])
        x = self.inputs(rows)
        n = len(rows)
        with torch.no_grad():
            prob = torch.sigmoid(model(x).reshape(-1).float()).cpu()
        hmix = epoch >= cfg.start_hmix
        labels = method.labels(cfg, prob, lab, hmix)
        if hmix:
            marginal = marginal_pseudo_negatives(prob, lab, cfg.gamma)
            pool_rows = self.pool_rows
            partner = select_partners(marginal, len(pool_rows), self.pair_gen)
            x_all = torch.cat([x, self.inputs(pool_rows)]) if len(pool_rows) else x
            labels_all = torch.cat([labels, torch.ones(len(pool_rows))])
        else:
            marginal = torch.zeros(n, dtype=torch.bool)
            partner = torch.randperm(n, generator=self.pair_gen)
            x_all, labels_all, pool_rows = x, labels, rows[:0]
        lam = mixup_lambda(self.mix_rng, cfg.alpha)
        partner_dev = partner.to(device)
        logits = model(lam * x + (1.0 - lam) * x_all[partner_dev]).reshape(-1)
        targets = (lam * labels + (1.0 - lam) * labels_all[partner]).to(device)
        teacher_targets = method.teacher_targets(self.teacher, x, x_all, len(pool_rows), partner_dev, lam)
        loss = method.loss(cfg, logits, targets, lab.to(device), teacher_targets)
        corrected = float(((labels > 0) & ~lab).float().mean())
        return Step(loss, extra={"marginal": float(marginal.float().mean()), "corrected": corrected})

    def end_epoch(self, stats):
        hist = self.hist
        hist["loss"].append(stats.mean)
        hist["marginal_fraction"].append(stats.sums.get("marginal", 0.0) / max(1, stats.steps))
        hist["corrected_fraction"].append(stats.sums.get("corrected", 0.0) / max(1, stats.steps))
        self.method.after_epoch(self.cfg, self.teacher, self.model, stats.epoch)

    def info(self) -> dict:
        hist, variant = self.hist, self.method.variant
        return {"risk": f"P3Mix-{variant}: heuristic mixup, cross-entropy with U as negative + entropy",
                "prior_used": None, "prior_source": "not used", "variant": variant,
                "loss_per_epoch": hist["loss"], "marginal_fraction_per_epoch": hist["marginal_fraction"],
                "corrected_fraction_per_epoch": hist["corrected_fraction"],
                "final_train_loss": hist["loss"][-1] if hist["loss"] else None,
                "model_selection": "the last epoch's model"}

BASE_TEST_CONFIG = {"alpha": 1.0, "gamma": 0.6, "top_k": 4, "start_hmix": 1, "positive_weight": 1.0,
                    "unlabeled_weight": 1.0, "entropy_weight": 0.1}


@PU_METHODS.register("p3mix_c")
class P3MixC(P3Mix):
    """P3Mix-C: heuristic mixup + label correction of the confident unlabeled examples."""

    variant = "C"
    test_config = dict(BASE_TEST_CONFIG)

    @classmethod
    def labels(cls, cfg, prob, labeled, hmix):
        return corrected_labels(prob, labeled, cfg.gamma) if hmix else labeled.float()


@PU_METHODS.register("p3mix_e")
class P3MixE(P3Mix):
    """P3Mix-E: heuristic mixup + early-learning regularization towards a mean teacher."""

    config_cls = P3MixEConfig
    variant = "E"
    test_config = {**BASE_TEST_CONFIG, "elr_weight": 3.0, "ema_decay": 0.999, "ema_start": 0}

    @classmethod
    def check(cls, cfg: P3MixEConfig, where: str = "pu_method") -> None:
        super().check(cfg, where)
        if cfg.elr_weight < 0:
            raise ConfigError(f"{where}.elr_weight must be >= 0")
        if not 0.0 <= cfg.ema_decay <= 1.0:
            raise ConfigError(f"{where}.ema_decay must be in [0, 1]")
        if cfg.ema_start < 0:
            raise ConfigError(f"{where}.ema_start must be >= 0")

    @classmethod
    def make_teacher(cls, cfg, model):
        teacher = copy.deepcopy(model)
        for p in teacher.parameters():
            p.requires_grad_(False)
        return teacher

    @classmethod
    def teacher_targets(cls, teacher, x, x_all, pool_size, partner, lam):
        # the teacher runs in train mode (batch statistics) as the reimplementations do
        teacher.train()
        with torch.no_grad():
            t = torch.sigmoid(teacher(x).reshape(-1).float())
        t_all = torch.cat([t, torch.ones(pool_size, device=t.device)])
        return lam * t + (1.0 - lam) * t_all[partner]

    @classmethod
    def loss(cls, cfg, logits, targets, labeled, teacher_targets):
        return p3mix_loss(logits, targets, labeled, cfg.positive_weight, cfg.unlabeled_weight, cfg.entropy_weight,
                          teacher_targets, cfg.elr_weight)

    @classmethod
    def after_epoch(cls, cfg, teacher, model, epoch):
        if epoch >= cfg.ema_start:
            ema_update(teacher, model, ema_decay_at(epoch, cfg.ema_start, cfg.ema_decay))
