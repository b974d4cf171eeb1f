"""Downstream ``pupl``: positive-unlabeled pseudo-labeling (003, Sec. 7.1, Algorithm 2).

On the frozen encoder's embeddings ``f_i`` of the training examples (labeled positives P
and unlabeled U):

1. positive centre ``mu_P = mean_{i in P} f_i`` (eq. 47);
2. negative centre drawn k-means++-style from U with probability proportional to
   ``D(f_j)^2 = ||f_j - mu_P||^2`` (eq. 48-49), from the run's numpy/torch generator;
3. Lloyd iterations: assign every unlabeled example to its nearest centre (eq. 50),
   labeled positives keep label 1 (Algorithm 2's "if i in P" branch; ``fix_labeled``),
   recompute both centres as the means of their members; until no assignment changes
   (or ``max_iter``);
4. ``orientation`` names the positive cluster (below);
5. a linear classifier is trained on the pseudo-labels with cross-entropy (Sec. 7.1) and
   evaluated on the test split (features z-scored for it, ``standardize``, as in
   ``linear_probe``; the clustering uses the embeddings as they are).

The paper uses Faiss; 2-means is done here in torch (float64 distances), exactly.
Embeddings are the backbone output (the projector is discarded); ``normalize: true``
L2-normalizes them first, for the clustering and the classifier (the authors' released
code does; the paper does not say).

Orientation (which cluster is positive):

* ``algorithm2``: the cluster seeded at mu_P, as printed. Lloyd's iterations do not keep
  that identity: when the D^2 draw lands on a far positive (26 of 100 draws on well
  separated 32-dimensional blobs), the cluster seeded at mu_P first takes nearly every
  point, its centre moves to the overall mean, and the other cluster grows from its
  positive seed into the positive blob, leaving the mu_P cluster with the negatives and
  the few pinned labeled positives: every pseudo-label is inverted (15 of those 100 draws,
  tests/downstream/test_pupl.py).
* ``nearest_positive_mean``: after the same clustering, the positive cluster is the one
  whose final centre is nearest mu_P (the naming of the authors' released code when it runs
  sklearn k-means from random or k-means++ centres on L2-normalized features; its PU-seeded
  path, run_lp.py ``--algo PUkMeans``, seeds the negative centre at U's mean and names
  positive the cluster seeded at mu_P, as ``algorithm2``); with ``fix_labeled`` the labeled
  positives keep pseudo-label 1 whichever cluster they were pinned to.
* ``labeled_enrichment``: the positive cluster is the one where the labeled positives are
  over-represented: with ``a(x)`` the final centre nearest ``x`` (the pin ignored), the
  cluster ``c`` with the larger ``P(a = c | P) / P(a = c | U)``. Under SCAR the labeled
  positives fall like the unlabeled positives, so ``P(c | P) > P(c | U)`` iff
  ``P(c | +) > P(c | -)``: the cluster that holds a larger share of the positives than of
  the negatives, whichever way Lloyd's iterations went. Ours, not the paper's nor the
  code's. Why: on weak encoders 2-means can split the data into "every negative and half
  the positives" vs "the other half of the positives"; the first cluster, seeded at mu_P and
  holding the pinned labeled positives, keeps the centre nearest mu_P, so
  ``nearest_positive_mean`` names it positive and inverts the pseudo-labels; enrichment
  names the purer cluster there. It maximizes balanced accuracy, not accuracy: when the
  clustering is near chance and U's prior is far from 1/2 the more accurate naming can be
  the other one, and choosing it would need the prior (measured on the 555 reduced 003
  puPL jobs: docs/history.md "Open, puPL's orientation").

``orientation`` and ``normalize`` have no default: every spec states them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from pubench.downstream.base import DOWNSTREAM, Downstream
from pubench.pu.data import DownstreamData, evaluate_head
from pubench.pu.objective import RiskSettings, Targets, fit_head
from pubench.train.classifier import encode, feature_standardizer, seeded_head
from pubench.train.context import JobContext
from pubench.train.optim import OptimizerConfig, ScheduleConfig, check_optimizer, check_schedule
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds


def pu_two_means(feats: torch.Tensor, labeled: torch.Tensor, rng: np.random.Generator, max_iter: int = 300,
                 fix_labeled: bool = True) -> dict:
    """Algorithm 2's clustering. Returns ``{labels (n,) 0/1, centers (2, d), iterations, converged}``
    (``centers[1]`` positive, ``centers[0]`` negative)."""
    f = feats.to(torch.float64)
    labeled = labeled.bool()
    if not bool(labeled.any()):
        raise ValueError("puPL needs at least one labeled positive")
    unl = torch.nonzero(~labeled).squeeze(1)
    if unl.numel() == 0:
        raise ValueError("puPL needs unlabeled examples")
    mu_p = f[labeled].mean(0)
    d2 = ((f[unl] - mu_p) ** 2).sum(1).numpy()
    if d2.sum() > 0:
        j = int(rng.choice(len(unl), p=d2 / d2.sum()))
    else:
        j = int(rng.integers(len(unl)))
    centers = torch.stack([f[unl[j]], mu_p])
    assign = None
    it, converged = 0, False
    for it in range(1, max_iter + 1):
        dist = torch.cdist(f, centers) ** 2
        new = (dist[:, 1] < dist[:, 0]).long()  # ties -> negative
        if fix_labeled:
            new[labeled] = 1
        if assign is not None and torch.equal(new, assign):
            converged = True
            break
        assign = new
        for k in (0, 1):
            members = assign == k
            if bool(members.any()):
                centers[k] = f[members].mean(0)
    return {"labels": assign, "centers": centers, "iterations": it, "converged": converged}


ORIENTATIONS = ("algorithm2", "nearest_positive_mean", "labeled_enrichment")


def pseudo_labels(km: dict, feats: torch.Tensor, labeled: torch.Tensor, orientation: str,
                  fix_labeled: bool) -> tuple[torch.Tensor, bool]:
    """0/1 pseudo-labels of ``pu_two_means``'s clusters under ``orientation`` (module
    docstring), and whether the positive cluster is the one seeded at mu_P."""
    if orientation == "algorithm2":
        return km["labels"], True
    f, lab = feats.to(torch.float64), labeled.bool()
    if orientation == "nearest_positive_mean":
        d2 = ((km["centers"] - f[lab].mean(0)) ** 2).sum(1)
        seeded_is_positive = bool(d2[1] <= d2[0])  # ties -> the cluster seeded at mu_P
    elif orientation == "labeled_enrichment":
        dist = torch.cdist(f, km["centers"].to(torch.float64))
        in_seeded = (dist[:, 1] < dist[:, 0]).to(torch.float64)  # by distance alone (ties -> other), no pin
        share_p, share_u = float(in_seeded[lab].mean()), float(in_seeded[~lab].mean())
        # P(seeded | P) / P(seeded | U) >= P(other | P) / P(other | U), cross-multiplied (no 0 / 0)
        seeded_is_positive = share_p * (1.0 - share_u) >= (1.0 - share_p) * share_u
    else:
        raise ValueError(f"orientation {orientation!r} is not one of {ORIENTATIONS}")
    labels = km["labels"] if seeded_is_positive else 1 - km["labels"]
    if fix_labeled:
        labels = labels.clone()
        labels[labeled.bool()] = 1
    return labels, seeded_is_positive


@dataclass(frozen=True)
class PuplConfig:
    name: str
    epochs: int
    batch_size: int
    orientation: str              # algorithm2 | nearest_positive_mean | labeled_enrichment
    normalize: bool               # L2-normalize the embeddings (clustering and classifier)
    optimizer: OptimizerConfig = OptimizerConfig("adam", 1e-3)
    schedule: ScheduleConfig = ScheduleConfig()
    max_iter: int = 300
    fix_labeled: bool = True
    standardize: bool = True      # z-score the features for the classifier (as linear_probe); clustering uses them raw


@DOWNSTREAM.register("pupl")
class PuPL(Downstream):
    config_cls = PuplConfig
    test_config = {"epochs": 2, "batch_size": 16, "orientation": "nearest_positive_mean", "normalize": True,
                   "max_iter": 50}

    @classmethod
    def check(cls, cfg: PuplConfig, where: str = "downstream") -> None:
        if cfg.epochs < 0 or cfg.batch_size < 1 or cfg.max_iter < 1:
            raise ConfigError(f"{where}: epochs >= 0, batch_size >= 1 and max_iter >= 1 needed")
        if cfg.orientation not in ORIENTATIONS:
            raise ConfigError(f"{where}.orientation: {cfg.orientation!r} is not one of {', '.join(ORIENTATIONS)}")
        check_optimizer(cfg.optimizer, f"{where}.optimizer")
        check_schedule(cfg.schedule, f"{where}.schedule")

    @classmethod
    def run(cls, cfg: PuplConfig, encoder, data: DownstreamData, seed: int, ctx: JobContext):
        device = ctx.device
        cls.check(cfg, "downstream")
        if data.split_kind != "pu" or data.n_classes != 2:
            raise ConfigError("downstream pupl needs a binary PU split (data.split.kind: pu)")
        init_seed, order_seed, cluster_seed = sub_seeds(seed, 3)
        feats = encode(encoder, data.x_train, data.mean, data.std, ctx)
        if cfg.normalize:
            feats = F.normalize(feats, dim=1)
        labeled = data.observed == 1
        km = pu_two_means(feats, labeled, np.random.default_rng(cluster_seed), cfg.max_iter, cfg.fix_labeled)
        pseudo, seeded_is_positive = pseudo_labels(km, feats, labeled, cfg.orientation, cfg.fix_labeled)
        head = seeded_head(encoder.out_dim, 1, init_seed, device)
        shift, scale = feature_standardizer(feats, cfg.standardize)
        feats_d = ((feats - shift) / scale).to(device)
        targets = Targets("pn", torch.arange(len(pseudo)), target=pseudo)
        hist = fit_head(head, lambda rows: feats_d[rows.to(device)], cfg, targets, RiskSettings("pn"), order_seed,
                        "puPL classifier", ctx)
        test = encode(encoder, data.x_test, data.mean, data.std, ctx)
        if cfg.normalize:
            test = F.normalize(test, dim=1)
        metrics = evaluate_head(head, (test - shift) / scale, data, device)
        unl = ~labeled
        info = {
            "risk": "pn on pseudo-labels (cross-entropy)",
            "kmeans_iterations": km["iterations"],
            "kmeans_converged": km["converged"],
            "pseudo_positive_fraction_unlabeled": float(pseudo[unl].float().mean()),
            "pseudo_label_acc_unlabeled": 100.0 * float((pseudo[unl] == data.y_true[unl]).float().mean()),
            "final_train_risk": hist[-1] if hist else None,
            "normalize": cfg.normalize,
            "orientation": cfg.orientation,
            "positive_cluster_seeded_at_mu_p": seeded_is_positive,
        }
        return Result(metrics, info)
