"""Rank Pruning (Northcutt, Wu & Chuang 2017, "Learning with Confident Examples: Rank
Pruning for Robust Classification with Noisy Labels", UAI), PU_METHODS ``rank_pruning``,
in its PU-learning form (the labeled positives are clean: ``rho_0 = P(s=1|y=0) = 0``), as
the authors' released code (cgnorthcutt/rankpruning, ``RankPruning.fit`` with
``pulearning=True``) runs it; reimplemented, not copied. Prior-free.

1. ``g(x) = P(s = 1 | x)`` out of sample for every training example: ``cv_folds``
   stratified folds, a network trained on the others' observed labels ``s`` (labeled = 1,
   unlabeled = 0; logistic loss) predicts each fold;
2. confident-count noise rate (:func:`confident_noise_rate`, per fold, averaged over the
   folds): ``rho_1 = P(s=0|y=1) = |s=0, g >= LB| / (|s=0, g >= LB| + |s=1, g >= LB|)``,
   ``LB`` the mean ``g`` of the fold's labeled examples;
3. ``pi_0 = P(y=1|s=0) = rho_1 P(y=1) / P(s=0)`` with ``P(y=1) = P(s=1) / (1 - rho_1)``;
   the ``k_0 = floor(pi_0 |s=0|)`` unlabeled examples of largest ``g`` are pruned (at
   least ``MIN_KEPT`` kept; :func:`prune_mask`);
4. a fresh network is trained on the kept examples with the observed labels, the
   labeled ones weighted ``1 / (1 - rho_1)`` (:func:`weighted_logistic_risk`).

Prediction: positive iff the final network's score > 0 (``P(s=1|x) > 1/2`` of the
re-weighted fit, as the code's ``predict``). Every network (the folds' and the final one)
trains ``train.epochs`` with the train block, starting from a copy of the task's fresh
backbone with its own seeded head.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData, evaluate_network
from pubench.pu.objective import RiskSettings, Targets, train_network
from pubench.train.augment import build_augment, to_float
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, TrainConfig, batches, has_batchnorm, predict
from pubench.train.optim import build_optimizer, build_scheduler
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator

#: the released code never prunes a class below this many examples
MIN_KEPT = 10


@dataclass(frozen=True)
class RankPruningConfig:
    name: str
    cv_folds: int           # folds of the out-of-sample P(s=1|x) (released code: 3)


def confident_noise_rate(prob: torch.Tensor, observed: torch.Tensor) -> float:
    """``rho_1 = P(s=0|y=1)`` by confident counts (Northcutt et al. 2017, eq. for rho-hat
    conf): among the examples whose ``g`` is at least ``LB`` = the mean ``g`` of the
    labeled ones, the fraction that is unlabeled. NaN when no example reaches ``LB``
    (impossible with a labeled example)."""
    prob, s = prob.reshape(-1).double(), observed.reshape(-1).bool()
    if not bool(s.any()):
        raise ValueError("confident_noise_rate needs labeled examples")
    confident = prob >= prob[s].mean()
    n_unlabeled, n_labeled = int((confident & ~s).sum()), int((confident & s).sum())
    return min(max(n_unlabeled / (n_unlabeled + n_labeled), 0.0), 0.9999)


def inverse_noise_rate(observed: torch.Tensor, rho1: float) -> float:
    """``pi_0 = P(y=1|s=0)`` from ``rho_1`` with ``rho_0 = 0`` (PU): ``P(y=1) = P(s=1) / (1 - rho_1)``,
    ``pi_0 = rho_1 P(y=1) / P(s=0)``, clipped to [0, 0.9999]."""
    s = observed.reshape(-1).bool()
    ps1 = float(s.double().mean())
    if ps1 >= 1.0:
        raise ValueError("inverse_noise_rate needs unlabeled examples")
    py1 = ps1 / (1.0 - rho1)
    return min(max(rho1 * py1 / (1.0 - ps1), 0.0), 0.9999)


def prune_mask(prob: torch.Tensor, observed: torch.Tensor, pi0: float) -> torch.Tensor:
    """Examples kept: every labeled one (``pi_1 = 0``), and the unlabeled ones but the
    ``k_0 = floor(pi_0 |U|)`` of largest ``g`` (``k_0`` capped so that ``MIN_KEPT`` stay;
    ties at the cut are kept, as the code's strict comparison with the k-th largest)."""
    prob, s = prob.reshape(-1).double(), observed.reshape(-1).bool()
    n_u = int((~s).sum())
    k0 = max(min(math.floor(n_u * pi0), n_u - MIN_KEPT), 0)
    keep = torch.ones_like(s)
    if pi0 > 0 and n_u > MIN_KEPT and k0 > 0:
        kth_largest = prob[~s].sort(descending=True).values[k0]
        keep = s | (prob <= kth_largest)
    return keep


def weighted_logistic_risk(scores: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``mean_i w_i BCE(sigmoid(g_i), t_i)``: the re-weighted fit of Rank Pruning (the code
    passes ``sample_weight`` to its classifier)."""
    scores = scores.reshape(-1)
    targets, weights = targets.reshape(-1).to(scores.dtype), weights.reshape(-1).to(scores.dtype)
    if targets.shape != scores.shape or weights.shape != scores.shape:
        raise ValueError(f"weighted_logistic_risk: scores {tuple(scores.shape)}, targets {tuple(targets.shape)}, "
                         f"weights {tuple(weights.shape)}")
    return (weights * F.binary_cross_entropy_with_logits(scores, targets, reduction="none")).mean()


def stratified_folds(observed: torch.Tensor, k: int, gen: torch.Generator) -> list[torch.Tensor]:
    """``k`` disjoint row sets covering every row, each with about ``1/k`` of the labeled
    and of the unlabeled rows (shuffled, seeded)."""
    s = observed.reshape(-1).bool()
    folds: list[list[torch.Tensor]] = [[] for _ in range(k)]
    for group in (s, ~s):
        idx = torch.nonzero(group).squeeze(1)
        idx = idx[torch.randperm(len(idx), generator=gen)]
        for f, part in enumerate(torch.tensor_split(idx, k)):
            folds[f].append(part)
    return [torch.cat(parts).sort().values for parts in folds]


@PU_METHODS.register("rank_pruning")
class RankPruning(PUMethod):
    """Rank Pruning for PU learning (module docstring)."""

    config_cls = RankPruningConfig
    test_config = {"cv_folds": 2}

    @classmethod
    def check(cls, cfg: RankPruningConfig, where: str = "pu_method") -> None:
        if cfg.cv_folds < 2:
            raise ConfigError(f"{where}.cv_folds must be >= 2")

    @classmethod
    def run(cls, cfg: RankPruningConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None):
        device = ctx.device
        s = data.observed == 1
        if int(s.sum()) < cfg.cv_folds or int((~s).sum()) < cfg.cv_folds:
            raise ValueError(f"rank_pruning needs at least {cfg.cv_folds} labeled and unlabeled examples")
        fold_seed, head_seed, order_seed, aug_seed, final_order_seed, final_aug_seed = sub_seeds(seed, 6)
        initial = copy.deepcopy(backbone)
        folds = stratified_folds(data.observed, cfg.cv_folds, torch_generator(fold_seed))
        prob = torch.zeros(len(s), dtype=torch.float64)
        rates = []
        settings = RiskSettings("pn", None, "logistic")
        for f, (held, f_head, f_order, f_aug) in enumerate(zip(
                folds, sub_seeds(head_seed, cfg.cv_folds), sub_seeds(order_seed, cfg.cv_folds),
                sub_seeds(aug_seed, cfg.cv_folds))):
            rows = torch.cat([folds[j] for j in range(cfg.cv_folds) if j != f]).sort().values
            net = nn.Sequential(copy.deepcopy(initial), seeded_head(backbone.out_dim, 1, f_head)).to(device)
            targets = Targets("pn", rows, target=s[rows].long())
            train_network(net, train, targets, settings, data, f_order, f_aug, ctx, f"rank_pruning fold {f + 1}")
            net.eval()
            g = torch.sigmoid(predict(lambda k: net(to_float(data.x_train[held[k]].to(device), data.mean, data.std)),
                                      len(held), ctx).reshape(-1)).double()
            prob[held] = g
            rates.append(confident_noise_rate(g, s[held]))
        rho1 = float(sum(rates) / len(rates))
        pi0 = inverse_noise_rate(data.observed, rho1)
        keep = prune_mask(prob, data.observed, pi0)
        kept = torch.nonzero(keep).squeeze(1)
        weights = torch.where(s, torch.full_like(prob, 1.0 / (1.0 - rho1)), torch.ones_like(prob))

        model = nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, sub_seeds(head_seed, cfg.cv_folds + 1)[-1]))
        model = model.to(device)
        aug = build_augment(train.augment, data.mean, data.std, "train.augment") if train.augment else None
        gen, aug_gen = torch_generator(final_order_seed), torch_generator(final_aug_seed)
        min_size = 2 if has_batchnorm(model) else 1

        def step(pos, epoch):
            rows = kept[pos]
            xb = data.x_train[rows].to(device)
            x = aug(xb, aug_gen) if aug is not None else to_float(xb, data.mean, data.std)
            risk = weighted_logistic_risk(model(x), s[rows].to(device), weights[rows].to(device))
            return Step(risk)

        opt = build_optimizer(train.optimizer, model)
        steps = max(1, len(batches(len(kept), train.batch_size, torch_generator(0), min_size=min_size)))
        trainer = Trainer([model], opt, build_scheduler(train.schedule, opt, steps, train.epochs), "rank_pruning", ctx=ctx)
        hist = trainer.run(train.epochs, lambda epoch: batches(len(kept), train.batch_size, gen, min_size=min_size),
                           step)
        metrics = evaluate_network(model, data, ctx)
        info = {
            "risk": "Rank Pruning (PU): cross-validated P(s=1|x), confident-count rho_1, pruning, re-weighted fit",
            "prior_used": None, "prior_source": "not used (prior-free)", "cv_folds": cfg.cv_folds,
            "rho1_per_fold": rates, "rho1": rho1, "pi0": pi0, "implied_prior": float(s.double().mean()) / (1 - rho1),
            "n_pruned": int((~keep).sum()), "n_kept": int(keep.sum()),
            "final_train_risk": hist[-1].mean if hist else None, "model_selection": "the last epoch's models",
        }
        return Result(metrics, info)
