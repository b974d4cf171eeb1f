"""PiCO (Wang et al. 2022, "PiCO: Contrastive Label Disambiguation for Partial Label
Learning", ICLR), PU_METHODS ``pico``, as paper 004 runs it on PU data (Sec. 6.1: 'we
incorporate L_dis into PiCO to make it adaptable to PU conditions'). Reimplemented from
the paper (its updates are named here by their formulas, not by equation numbers, which
we could not check against the ICLR text here); the released code (hbzju/PiCO, ``train.py``, ``model.py``,
``utils/utils_loss.py``) was read for the hyperparameters and the order of the updates.

PU data as partial labels: a labeled positive has the candidate set {1}, an unlabeled
example {0, 1}. Networks as in PiCO: the backbone (the task's) is shared by the classifier
``f = linear(backbone(.))`` (2 logits) and the query encoder ``g = normalize(projector(
backbone(.)))``; the key encoder is a momentum copy of backbone + projector (MoCo). Each
iteration, on a weak (query) and a strong (key) view of the mini-batch:

1. pseudo labels ``argmax_{j in Y_i} f_j(x)`` (:func:`candidate_pseudo_labels`): 1 for a
   labeled positive, the classifier's prediction for an unlabeled example;
2. the prototype prediction ``argmax_{j in Y_i} q_i^T mu_j`` with the prototypes before
   this batch (:func:`prototype_pseudo_labels`), then the prototypes moved towards the
   batch's queries by their pseudo labels (PiCO's prototype update ``mu_c := Normalize(gamma mu_c + (1 - gamma) q_i)``, example by example:
   :func:`pubench.pu.wconpu_terms.update_prototypes`);
3. from ``prototype_start_epoch`` on: the pseudo targets ``s_i := phi s_i + (1 - phi)
   onehot(prototype prediction)`` (PiCO's pseudo-target update; :func:`pubench.pu.wconpu_terms.
   update_pseudo_labels`, labeled positives stay [0, 1]) with ``phi`` decayed linearly over
   the epochs (:func:`pseudo_target_momentum`), and the contrastive loss with positives =
   the pool entries of the same pseudo label (PiCO's contrastive loss and positive set, SupCon over ``[q, k, queue]``:
   :func:`pubench.pu.wconpu_terms.weighted_contrastive_loss` without hard negatives);
   before it (warm-up): MoCo's loss, the own key against the queue (:func:`moco_loss`);
4. one step on ``L_cls + w_cont L_cont + w_dis L_dis`` (:func:`pico_objective`):
   ``L_cls`` the cross-entropy with the pseudo targets (PiCO's classification loss, 004 Eq. 19),
   ``L_dis`` 004's Eq. 27 (:func:`pubench.pu.wconpu_terms.label_distribution_loss`); then
   the key encoder's momentum update and the enqueue of the keys with their pseudo labels.

Pseudo targets start uniform over the candidate set (PiCO: [1/2, 1/2] for an unlabeled
example). Prediction: positive iff ``z_1 - z_0 > 0``; the last epoch's model (004's
protocol; the code also logs the best test accuracy over epochs, never used here).

Where the released code differs from the paper (docs/tasks.md, PiCO): it normalises the
prototypes once per batch (the paper: after every example), applies each epoch's ``phi``
one epoch late (set after the epoch; epoch 0 uses 0.99), and starts from a queue of random
vectors with random non-integer labels; here the paper's per-example normalisation, the
current epoch's ``phi`` and an empty queue (as WConPU).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pubench.pu import wconpu_terms as W
from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData
from pubench.pu.objective import resolve_prior
from pubench.pu.query_key import query_key_encoders
from pubench.train.augment import build_augment, to_float
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, TrainConfig, batches, predict
from pubench.train.metrics import evaluate_scores
from pubench.train.momentum import momentum_update_
from pubench.train.optim import build_optimizer, build_scheduler
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator

DIST_LOSSES = ("dist_pu", "none")


# ------------------------------------------------------------------ terms
def candidate_mask(observed: torch.Tensor) -> torch.Tensor:
    """PU data as partial labels, (n, 2) float: ``[0, 1]`` for a labeled positive (candidate
    set {1}), ``[1, 1]`` for an unlabeled example (candidates {0, 1})."""
    mask = torch.ones(observed.shape[0], 2)
    mask[observed == 1, 0] = 0.0
    return mask.to(observed.device)


def candidate_pseudo_labels(probs: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
    """``argmax_{j in Y_i} z_ij`` (PiCO Sec. 3.2: the classifier's prediction within the
    candidate set; the labels of the contrastive positives and of the prototype update).
    A labeled positive's only candidate is 1, also when its z_i1 underflows to 0 (where the
    code's ``argmax(z * Y)`` would tie and return 0)."""
    return torch.where(observed == 1, torch.ones_like(observed), probs.argmax(1))


def prototype_pseudo_labels(q: torch.Tensor, prototypes: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
    """``argmax_{j in Y_i} q_i^T mu_j`` (the one-hot target of PiCO's pseudo-target update; the code: argmax of
    ``softmax(q mu^T) * Y``): 1 for a labeled positive, the nearest prototype for an
    unlabeled example (ties to class 0, as zero prototypes at the start)."""
    nearest = W.nearest_prototype(q, prototypes)
    return torch.where(observed == 1, torch.ones_like(nearest), nearest)


def pseudo_target_momentum(epoch: int, epochs: int, start: float, end: float) -> float:
    """``phi`` of PiCO's pseudo-target update ``s := phi s + (1 - phi) z`` in ``epoch`` (0-based) of ``epochs``: linear from ``start`` to
    ``end`` (the released code's ``conf_ema_range`` 0.95, 0.8)."""
    return start + (end - start) * epoch / epochs


def positive_pool_mask(labels: torch.Tensor, pool_labels: torch.Tensor) -> torch.Tensor:
    """PiCO's positive set ``P(x_i) = {k' in A(x_i) : y'_k = y'_i}`` over the pool
    ``[q_1..q_b, k_1..k_b, queue]``, (b, 2b + m) bool; never the anchor's own query (column
    i), always its own key (column b + i: the same pseudo label)."""
    b = labels.shape[0]
    mask = labels.unsqueeze(1) == pool_labels.unsqueeze(0)
    mask[torch.arange(b, device=mask.device), torch.arange(b, device=mask.device)] = False
    return mask


def moco_loss(q: torch.Tensor, k: torch.Tensor, queue: torch.Tensor, temperature: float) -> torch.Tensor:
    """MoCo's InfoNCE (PiCO's warm-up before ``prototype_start_epoch``; the code's
    ``SupConLoss`` without a mask): ``-1/b sum_i log( exp(q_i k_i / T) / (exp(q_i k_i / T) +
    sum_j exp(q_i queue_j / T)) )``."""
    pos = (q * k).sum(1, keepdim=True)
    logits = torch.cat([pos, q @ queue.T], dim=1) / temperature
    return (torch.logsumexp(logits, dim=1) - logits[:, 0]).mean()


def pico_objective(l_cls: torch.Tensor, l_cont: torch.Tensor, l_dis: torch.Tensor, cont_weight: float,
                   dis_weight: float) -> torch.Tensor:
    """PiCO's ``L_cls + lambda L_cont`` (Sec. 3.3) plus 004's ``L_dis`` with its weight."""
    return l_cls + cont_weight * l_cont + dis_weight * l_dis


# ------------------------------------------------------------------ the method
@dataclass(frozen=True)
class PiCOConfig:
    name: str
    momentum: float                 # key encoder (the code's moco_m: 0.999)
    prototype_momentum: float       # gamma of the prototype update (proto_m: 0.99)
    temperature: float              # of L_cont (0.07)
    queue: int                      # (moco_queue: 8192)
    contrastive_weight: float       # lambda (loss_weight: 0.5)
    pseudo_target_momentum: list    # [start, end] of phi (conf_ema_range: 0.95, 0.8)
    prototype_start_epoch: int      # warm-up epochs before disambiguation (prot_start: 1 on CIFAR)
    dist_loss: dict                 # {name: dist_pu | none, weight: w} (004: L_dis added; weight not printed)
    augment: dict                   # {query: {augment}, key: {augment}}
    prior: float | None = None      # default: the run's prior (data.prior)


@PU_METHODS.register("pico")
class PiCO(PUMethod):
    """PiCO with 004's label distribution loss (module docstring)."""

    config_cls = PiCOConfig
    uses_projector = True
    test_config = {
        "momentum": 0.9, "prototype_momentum": 0.9, "temperature": 0.1, "queue": 64, "contrastive_weight": 0.5,
        "pseudo_target_momentum": [0.95, 0.8], "prototype_start_epoch": 1,
        "dist_loss": {"name": "dist_pu", "weight": 1.0},
        "augment": {"query": {"name": "crop", "scale": [0.7, 1.0]}, "key": {"name": "crop", "scale": [0.5, 1.0]}},
    }

    @classmethod
    def check(cls, cfg: PiCOConfig, where: str = "pu_method") -> None:
        for key in ("momentum", "prototype_momentum"):
            if not 0.0 <= getattr(cfg, key) < 1.0:
                raise ConfigError(f"{where}.{key} must be in [0, 1)")
        if cfg.temperature <= 0 or cfg.queue < 1 or cfg.contrastive_weight < 0:
            raise ConfigError(f"{where}: temperature must be > 0, queue >= 1, contrastive_weight >= 0")
        phi = cfg.pseudo_target_momentum
        if not isinstance(phi, list) or len(phi) != 2 or not all(0.0 <= float(v) <= 1.0 for v in phi):
            raise ConfigError(f"{where}.pseudo_target_momentum must be [start, end] in [0, 1]")
        if cfg.prototype_start_epoch < 0:
            raise ConfigError(f"{where}.prototype_start_epoch must be >= 0")
        if not isinstance(cfg.dist_loss, dict) or set(cfg.dist_loss) != {"name", "weight"}:
            raise ConfigError(f"{where}.dist_loss must be {{name: dist_pu | none, weight: w}}")
        if cfg.dist_loss["name"] not in DIST_LOSSES:
            raise ConfigError(f"{where}.dist_loss.name: {cfg.dist_loss['name']!r} is not one of {DIST_LOSSES}")
        if float(cfg.dist_loss["weight"]) < 0:
            raise ConfigError(f"{where}.dist_loss.weight must be >= 0")
        if cfg.prior is not None and not 0.0 < cfg.prior < 1.0:
            raise ConfigError(f"{where}.prior must be in (0, 1)")
        if not isinstance(cfg.augment, dict) or set(cfg.augment) != {"query", "key"}:
            raise ConfigError(f"{where}.augment must give exactly query and key")
        for view in ("query", "key"):
            build_augment(cfg.augment[view], [0.0], [1.0], f"{where}.augment.{view}")

    @classmethod
    def check_train(cls, cfg: PiCOConfig, train: TrainConfig, where: str = "params") -> None:
        cls.needs_own_views(train, cls.name, where)

    @classmethod
    def run(cls, cfg: PiCOConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None, projector: nn.Module | None = None):
        device = ctx.device
        use_dis = cfg.dist_loss["name"] == "dist_pu"
        prior, source = resolve_prior(cfg.prior, data.prior, use_dis, "pu_method")
        head_seed, order_seed, aug_seed = sub_seeds(seed, 3)
        head = seeded_head(backbone.out_dim, 2, head_seed)
        hist = _PiCOTraining(cfg, backbone, projector, head, train, data, prior if use_dis else None, order_seed,
                             aug_seed, ctx).train()
        net = nn.Sequential(backbone, head).eval()
        logits = predict(lambda k: net(to_float(data.x_test[k].to(device), data.mean, data.std)), data.x_test.shape[0],
                         ctx)
        metrics = evaluate_scores(logits[:, 1] - logits[:, 0], data.y_test, 2)
        info = {
            "risk": "PiCO: L_cls + lambda L_cont (+ w L_dis of 004 Eq. 27)",
            "prior_used": prior if use_dis else None, "prior_source": source if use_dis else "not used",
            "dist_loss": cfg.dist_loss["name"], "dist_weight": float(cfg.dist_loss["weight"]),
            "contrastive_weight": cfg.contrastive_weight, "queue": cfg.queue, "momentum": cfg.momentum,
            "prototype_momentum": cfg.prototype_momentum, "temperature": cfg.temperature,
            "prototype_start_epoch": cfg.prototype_start_epoch, "model_selection": "the last epoch's model",
            **hist,
        }
        return Result(metrics, info)


class _PiCOTraining:
    """One PiCO run (004's L_dis added), in named steps: the query and key views' ``step``
    (classifier, prototypes, the contrastive term against the key queue, the label
    distribution term), the key encoder's momentum update and the queue after it
    (``after_step``) and the epoch's record (``end_epoch``); ``state`` (prototypes,
    pseudo-labels, the queue) and ``hist`` are what a checkpoint holds, with the key encoder
    and the generators."""

    def __init__(self, cfg: PiCOConfig, backbone: nn.Module, projector: nn.Module, head: nn.Module,
                 train: TrainConfig, data: DownstreamData, prior: float | None, order_seed: int, aug_seed: int,
                 ctx: JobContext):
        self.cfg, self.train_cfg, self.data, self.prior, self.ctx = cfg, train, data, prior, ctx
        self.device = device = ctx.device
        self.backbone, self.projector, self.head = backbone, projector, head
        (self.query_net, self.key_backbone, self.key_projector, self.q_params, self.k_params, self.aug_q,
         self.aug_k) = query_key_encoders(backbone, projector, head, cfg.augment, data, device)
        self.gen, self.aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
        self.n = data.x_train.shape[0]
        self.observed = data.observed.clone()
        emb_dim = projector.out_dim
        self.state = {
            "protos": torch.zeros(2, emb_dim, device=device),
            "s": W.init_pseudo_labels(self.observed, 0.5),     # uniform over the candidate set
            "queue_k": torch.zeros(0, emb_dim, device=device),
            "queue_label": torch.zeros(0, dtype=torch.long, device=device),
        }
        self.bs = min(train.batch_size, self.n)
        self.hist: dict[str, list] = {"loss": [], "l_cls": [], "l_cont": [], "l_dis": [], "phi": [],
                                      "pseudo_label_acc": []}
        self.start, self.end = (float(v) for v in cfg.pseudo_target_momentum)
        self.dis_weight = float(cfg.dist_loss["weight"])

    def train(self) -> dict:
        """Trains the query network in place; returns what ``info`` records of the run."""
        train, hist = self.train_cfg, self.hist
        n_steps = len(self.epoch_batches(torch_generator(0)))
        opt = build_optimizer(train.optimizer, self.query_net)
        sched = build_scheduler(train.schedule, opt, n_steps, train.epochs)
        trainer = Trainer([self.query_net], opt, sched, "pico",
                          state={"order": self.gen, "augment": self.aug_gen, "key_backbone": self.key_backbone,
                                 "key_projector": self.key_projector, "pico": self.state, "history": hist},
                          ctx=self.ctx)
        trainer.run(train.epochs, lambda epoch: self.epoch_batches(self.gen), self.step, end_epoch=self.end_epoch)
        self.key_backbone.cpu(), self.key_projector.cpu()
        hist["final_train_loss"] = hist["loss"][-1] if hist["loss"] else None
        return hist

    def epoch_batches(self, gen: torch.Generator):
        return batches(self.n, self.bs, gen, drop_last=True, min_size=2)

    def step(self, idx: torch.Tensor, epoch: int) -> Step:
        cfg, state, device = self.cfg, self.state, self.device
        x = self.data.x_train[idx].to(device)
        o = self.observed[idx].to(device)
        feats = self.backbone(self.aug_q(x, self.aug_gen))
        logits = self.head(feats)
        q = F.normalize(self.projector(feats), dim=1)
        labels = candidate_pseudo_labels(logits.softmax(1).detach(), o)
        proto_labels = prototype_pseudo_labels(q.detach(), state["protos"], o)
        state["protos"] = W.update_prototypes(state["protos"], q, labels, cfg.prototype_momentum)
        with torch.no_grad():
            k = F.normalize(self.key_projector(self.key_backbone(self.aug_k(x, self.aug_gen))), dim=1)
        disambiguate = epoch >= cfg.prototype_start_epoch
        if disambiguate:
            phi = pseudo_target_momentum(epoch, self.train_cfg.epochs, self.start, self.end)
            state["s"][idx] = W.update_pseudo_labels(state["s"][idx], proto_labels.cpu(), o.cpu(), phi)
            pool = torch.cat([q, k, state["queue_k"]])
            positives = positive_pool_mask(labels, torch.cat([labels, labels, state["queue_label"]]))
            no_hard = torch.zeros_like(positives)
            l_cont = W.weighted_contrastive_loss(q, pool, positives, no_hard, torch.ones(positives.shape, device=device),
                                                 cfg.temperature)
        else:
            l_cont = moco_loss(q, k, state["queue_k"], cfg.temperature)
        l_cls = W.soft_cross_entropy(logits, state["s"][idx].to(device))
        if self.prior is not None:
            l_dis = W.label_distribution_loss(logits.softmax(1)[:, 1], o, self.prior)
        else:
            l_dis = logits.sum() * 0.0
        loss = pico_objective(l_cls, l_cont, l_dis, cfg.contrastive_weight, self.dis_weight)
        return Step(loss, weight=len(idx), after_backward=lambda: self.after_step(k, labels),
                    extra={"l_cls": l_cls.detach(), "l_cont": l_cont.detach(), "l_dis": l_dis.detach()})

    def after_step(self, k: torch.Tensor, labels: torch.Tensor) -> dict:
        """The key encoder follows the query's by momentum; the batch's keys join the queue."""
        cfg, state = self.cfg, self.state
        momentum_update_(self.k_params, self.q_params, cfg.momentum)
        state["queue_k"] = torch.cat([k, state["queue_k"]])[:cfg.queue]
        state["queue_label"] = torch.cat([labels, state["queue_label"]])[:cfg.queue]
        return {}

    def end_epoch(self, stats) -> None:
        cfg, hist, observed = self.cfg, self.hist, self.observed
        steps = max(1, stats.steps)
        hist["loss"].append(stats.mean)
        for key in ("l_cls", "l_cont", "l_dis"):
            hist[key].append(float(stats.sums.get(key, 0.0)) / steps)
        epoch = len(hist["phi"])
        hist["phi"].append(pseudo_target_momentum(epoch, self.train_cfg.epochs, self.start, self.end)
                           if epoch >= cfg.prototype_start_epoch else None)
        unl = observed == 0
        hist["pseudo_label_acc"].append(100.0 * float((self.state["s"][unl].argmax(1) == self.data.y_true[unl])
                                                      .float().mean()) if bool(unl.any()) else None)
