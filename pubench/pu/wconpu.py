"""WConPU (paper 004, Yuan et al.), PU_METHODS ``wconpu``: a PU classifier trained jointly
with a MoCo-style contrastive module (Sec. 4, Algorithm 1). 004 publishes no code: this is
reimplemented from the paper; every equation is a function of
:mod:`pubench.pu.wconpu_terms`, every choice the paper leaves open is in the specs
``decisions`` and docs/tasks.md (WConPU).

Networks: the backbone (the task's) is shared by the query encoder ``g_q = normalize(
projector(backbone(.)))`` and the classifier ``f = linear(backbone(.))`` (2 logits); the key
encoder is a momentum copy of backbone + projector (Eq. 6). Each iteration (Algorithm 1):

1. a weak (query) and a strong (key) view of the mini-batch;
2. SAT thresholds (Eq. 9-11) from the classifier's softmax on the query views;
3. prototypes updated example by example with the classifier's predictions (Eq. 23), or,
   ``prototypes.update: recompute_epoch`` (Table V), re-computed after every epoch;
4. pseudo labels of the batch's unlabeled rows moved towards their nearest prototype
   (Eq. 21-22);
5. positive peer sets (Eq. 12) over the pool ``B_q ∪ B_k ∪ Q`` and hard negatives in the
   queue (Eq. 13-14, by nearest prototype or, Table IV, by predicted label);
6. one SGD step on ``L_class + gamma0 L_con + gamma1 L_dis`` (Eq. 28), then the key
   encoder's momentum update and the enqueue of the batch's keys with their predicted
   labels and confidences.

``tuning.grid`` lists gamma0 / gamma1 values; every combination is trained from the same
initial weights and the one with the best accuracy on the clean validation rows
(``params.data.validation``: a stratified fraction of the training rows with their true
labels, used for nothing else; they stay in the training set) is reported.
"""

from __future__ import annotations

import copy
import itertools
import time
from dataclasses import dataclass

import numpy as np
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

CON_LOSSES = ("weighted_hard_negative", "none")
MININGS = ("prototype", "pseudo_label", "none")
PSEUDO_UPDATES = ("prototype", "none")
PROTO_UPDATES = ("moving_average", "recompute_epoch")
DIST_LOSSES = ("dist_pu", "unlabeled_negative_ce")
GAMMAS = ("gamma0", "gamma1")


@dataclass(frozen=True)
class WConPUConfig:
    name: str
    momentum: float             # lambda of Eq. 6, 9, 10, 23 (004: 0.999)
    temperature: float          # rho of Eq. 17 (004: 0.07)
    queue: int                  # m (004: 8192; 4096 on Alzheimer)
    alpha: float                # pseudo-label moving average, Eq. 21 (004: 0.9)
    con_loss: dict              # {name: weighted_hard_negative | none}
    positives: dict             # {threshold: sat, init: 0.5}
    hard_negatives: dict        # {mining: prototype | pseudo_label | none, quantile: 0.25, weight: inverse_dissim}
    pseudo_labels: dict         # {init: prior, update: prototype | none}
    prototypes: dict            # {update: moving_average | recompute_epoch, init: zeros}
    dist_loss: dict             # {name: dist_pu | unlabeled_negative_ce}
    augment: dict               # {query: {augment}, key: {augment}}
    tuning: dict                # {grid: {gamma0: [...], gamma1: [...]}, select_on: validation | none, metric: acc}
    prior: float | None = None  # default: the run's prior (data.prior)


@dataclass(frozen=True)
class WConPUClassifierConfig:
    name: str                   # linear
    shared_encoder: bool        # true: f is a linear layer on the query encoder's backbone


def _choice(block: dict, key: str, allowed: tuple, where: str):
    v = block.get(key)
    if v not in allowed:
        raise ConfigError(f"{where}.{key}: {v!r} is not one of {allowed}")
    return v


def _keys(block, allowed: set, where: str) -> None:
    if not isinstance(block, dict):
        raise ConfigError(f"{where}: expected a mapping")
    extra = set(block) - allowed
    if extra:
        raise ConfigError(f"{where}: unknown keys {sorted(extra)}")


@PU_METHODS.register("wconpu")
class WConPU(PUMethod):
    """Weighted contrastive learning with hard negative mining for PU learning (004)."""

    config_cls = WConPUConfig
    classifier_config = WConPUClassifierConfig
    uses_projector = True
    wall_clock_metrics = ("time",)
    wall_clock_info = ("epoch_seconds", "minutes_per_epoch")
    test_config = {
        "momentum": 0.9, "temperature": 0.1, "queue": 64, "alpha": 0.9,
        "con_loss": {"name": "weighted_hard_negative"}, "positives": {"threshold": "sat", "init": 0.5},
        "hard_negatives": {"mining": "prototype", "quantile": 0.25, "weight": "inverse_dissim"},
        "pseudo_labels": {"init": "prior", "update": "prototype"},
        "prototypes": {"update": "moving_average", "init": "zeros"}, "dist_loss": {"name": "dist_pu"},
        "augment": {"query": {"name": "simaugment"}, "key": {"name": "randaugment", "num_ops": 1, "magnitude": 5}},
        "tuning": {"grid": {"gamma0": [1.0], "gamma1": [0.1, 1.0]}, "select_on": "validation", "metric": "acc"},
    }

    @classmethod
    def check(cls, cfg: WConPUConfig, where: str = "pu_method") -> None:
        if not 0.0 <= cfg.momentum < 1.0 or not 0.0 <= cfg.alpha < 1.0:
            raise ConfigError(f"{where}: momentum and alpha must be in [0, 1)")
        if cfg.temperature <= 0 or cfg.queue < 1:
            raise ConfigError(f"{where}: temperature must be > 0 and queue >= 1")
        if cfg.prior is not None and not 0.0 < cfg.prior < 1.0:
            raise ConfigError(f"{where}.prior must be in (0, 1)")
        _keys(cfg.con_loss, {"name"}, f"{where}.con_loss")
        con = _choice(cfg.con_loss, "name", CON_LOSSES, f"{where}.con_loss")
        _keys(cfg.positives, {"threshold", "init"}, f"{where}.positives")
        _choice(cfg.positives, "threshold", ("sat",), f"{where}.positives")
        if not 0.0 < float(cfg.positives.get("init", -1)) <= 1.0:
            raise ConfigError(f"{where}.positives.init must be in (0, 1]")
        _keys(cfg.hard_negatives, {"mining", "quantile", "weight"}, f"{where}.hard_negatives")
        mining = _choice(cfg.hard_negatives, "mining", MININGS, f"{where}.hard_negatives")
        if mining != "none":
            if not 0.0 < float(cfg.hard_negatives.get("quantile", -1)) <= 1.0:
                raise ConfigError(f"{where}.hard_negatives.quantile must be in (0, 1]")
            _choice(cfg.hard_negatives, "weight", ("inverse_dissim",), f"{where}.hard_negatives")
        _keys(cfg.pseudo_labels, {"init", "update"}, f"{where}.pseudo_labels")
        _choice(cfg.pseudo_labels, "init", ("prior",), f"{where}.pseudo_labels")
        _choice(cfg.pseudo_labels, "update", PSEUDO_UPDATES, f"{where}.pseudo_labels")
        _keys(cfg.prototypes, {"update", "init"}, f"{where}.prototypes")
        _choice(cfg.prototypes, "update", PROTO_UPDATES, f"{where}.prototypes")
        _choice(cfg.prototypes, "init", ("zeros",), f"{where}.prototypes")
        _keys(cfg.dist_loss, {"name"}, f"{where}.dist_loss")
        _choice(cfg.dist_loss, "name", DIST_LOSSES, f"{where}.dist_loss")
        _keys(cfg.augment, {"query", "key"}, f"{where}.augment")
        for view in ("query", "key"):
            if view not in cfg.augment:
                raise ConfigError(f"{where}.augment.{view} is required")
            build_augment(cfg.augment[view], [0.0], [1.0], f"{where}.augment.{view}")
        _keys(cfg.tuning, {"grid", "select_on", "metric"}, f"{where}.tuning")
        grid = cfg.tuning.get("grid")
        _keys(grid, set(GAMMAS), f"{where}.tuning.grid")
        need = GAMMAS if con != "none" else ("gamma1",)
        if set(grid) != set(need):
            raise ConfigError(f"{where}.tuning.grid must list exactly {list(need)}"
                              + (" (no gamma0 without a contrastive loss)" if con == "none" else ""))
        for g in need:
            vals = grid[g]
            if not isinstance(vals, list) or not vals or any(float(v) < 0 for v in vals):
                raise ConfigError(f"{where}.tuning.grid.{g} must be a non-empty list of values >= 0")
        sel = _choice(cfg.tuning, "select_on", ("validation", "none"), f"{where}.tuning")
        _choice(cfg.tuning, "metric", ("acc",), f"{where}.tuning")
        if sel == "none" and any(len(grid[g]) > 1 for g in need):
            raise ConfigError(f"{where}.tuning: a grid of more than one point needs select_on: validation")

    @classmethod
    def classifier(cls, params, where):
        c = super().classifier(params, where)
        if c is None:
            raise ConfigError(f"{where}: wconpu needs model.classifier ({{name: linear, shared_encoder: true}})")
        if c.name != "linear" or c.shared_encoder is not True:
            raise ConfigError(f"{where}: wconpu implements the linear classifier on the shared encoder only")
        return c

    @classmethod
    def check_train(cls, cfg: WConPUConfig, train: TrainConfig, where: str = "params") -> None:
        cls.needs_own_views(train, cls.name, where)

    @classmethod
    def run(cls, cfg: WConPUConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None, projector: nn.Module | None = None):
        prior, source = resolve_prior(cfg.prior, data.prior, True, "pu_method")
        head_seed, order_seed, aug_seed, holdout_seed = sub_seeds(seed, 4)
        head = seeded_head(backbone.out_dim, 2, head_seed)
        initial = {"backbone": copy.deepcopy(backbone.state_dict()), "projector": copy.deepcopy(projector.state_dict()),
                   "head": copy.deepcopy(head.state_dict())}
        grid = cfg.tuning["grid"]
        names = [g for g in GAMMAS if g in grid]
        points = [dict(zip(names, map(float, vals))) for vals in itertools.product(*(grid[g] for g in names))]
        validate = cfg.tuning["select_on"] == "validation"
        val_rows = None
        if validate:
            frac = (data.validation or {}).get("fraction")
            if frac is None:
                raise ConfigError("wconpu tuning.select_on: validation needs params.data.validation.fraction")
            val_rows = clean_validation_rows(data.y_true, float(frac), np.random.default_rng(holdout_seed))
        runs = []
        for point in points:
            backbone.load_state_dict(initial["backbone"])
            projector.load_state_dict(initial["projector"])
            head.load_state_dict(initial["head"])
            gammas = {"gamma0": point.get("gamma0", 0.0), "gamma1": point["gamma1"]}
            out = _WConPUTraining(cfg, backbone, projector, head, train, data, prior, gammas, (order_seed, aug_seed),
                                  ctx).train()
            net = nn.Sequential(backbone, head).eval()
            val_acc = None
            if val_rows is not None:
                logits = _logits(net, data.x_train, val_rows, data, ctx)
                val_acc = 100.0 * float((logits.argmax(1) == data.y_true[val_rows]).float().mean())
            test_logits = _logits(net, data.x_test, torch.arange(data.x_test.shape[0]), data, ctx)
            metrics = evaluate_scores(test_logits[:, 1] - test_logits[:, 0], data.y_test, 2)
            metrics["time"] = out["minutes_per_epoch"]
            runs.append({"gammas": point, "val_acc": val_acc, "metrics": metrics, "history": out})
        best = max(range(len(runs)), key=lambda i: (runs[i]["val_acc"] if validate else 0.0, -i))
        chosen = runs[best]
        hist = chosen["history"]
        info = {
            "risk": "WConPU: L_class + gamma0 L_con + gamma1 L_dis (004 Eq. 28)",
            "prior_used": prior, "prior_source": source,
            "selected": chosen["gammas"], "selected_val_acc": chosen["val_acc"],
            "grid": [{"gammas": r["gammas"], "val_acc": r["val_acc"], "test_acc": r["metrics"]["acc"]} for r in runs],
            "validation_used": validate, "n_validation": int(len(val_rows)) if val_rows is not None else 0,
            "con_loss": cfg.con_loss["name"], "hard_negatives": cfg.hard_negatives.get("mining"),
            "pseudo_label_update": cfg.pseudo_labels["update"], "prototype_update": cfg.prototypes["update"],
            "dist_loss": cfg.dist_loss["name"], "queue": cfg.queue, "momentum": cfg.momentum,
            "temperature": cfg.temperature, "alpha": cfg.alpha,
            **{k: v for k, v in hist.items() if k != "minutes_per_epoch"},
            "minutes_per_epoch": hist["minutes_per_epoch"],
        }
        return Result(chosen["metrics"], info)


def clean_validation_rows(y_true: torch.Tensor, fraction: float, rng: np.random.Generator) -> torch.Tensor:
    """Sorted training rows of the clean validation set (004 Sec. 6.1: '10% of the training
    examples'): ``round(fraction * n)`` rows (at least 1), stratified by the true label with
    the per-class counts split by largest remainder, drawn with ``rng``."""
    if not 0.0 < fraction < 1.0:
        raise ConfigError(f"params.data.validation.fraction must be in (0, 1), got {fraction}")
    y = y_true.numpy()
    total = max(1, int(np.floor(fraction * len(y) + 0.5)))
    classes = np.unique(y)
    quota = np.array([fraction * (y == c).sum() for c in classes])
    counts = np.floor(quota).astype(int)
    for i in np.argsort(-(quota - counts), kind="stable")[:total - counts.sum()]:
        counts[i] += 1
    rows = [rng.choice(np.nonzero(y == c)[0], k, replace=False) for c, k in zip(classes, counts)]
    return torch.from_numpy(np.sort(np.concatenate(rows))).long()


def _logits(net: nn.Module, x: torch.Tensor, rows: torch.Tensor, data: DownstreamData, ctx: JobContext) -> torch.Tensor:
    device = ctx.device
    return predict(lambda k: net(to_float(x[rows[k]].to(device), data.mean, data.std)), len(rows), ctx)


class _WConPUTraining:
    """One WConPU training run (Algorithm 1) with fixed gamma0 / gamma1, in named steps: the
    query view's ``step`` (classifier, self-adaptive thresholds, prototypes, pseudo-labels,
    the label distribution term), its ``contrastive`` term against the key queue (peers,
    mined hard negatives), the key encoder's momentum update and the queue after it
    (``after_step``) and the epoch's record (``end_epoch``). What a checkpoint must hold
    besides the query network: the key network, ``state`` (the queue, prototypes,
    thresholds and pseudo labels), ``hist`` and the generators. Trains the modules in place."""

    def __init__(self, cfg: WConPUConfig, backbone: nn.Module, projector: nn.Module, head: nn.Module,
                 train: TrainConfig, data: DownstreamData, prior: float, gammas: dict, seeds: tuple[int, int],
                 ctx: JobContext):
        """``seeds``: the data order's and the augmentations' (the same for every gamma point)."""
        self.cfg, self.train_cfg, self.data, self.prior, self.ctx = cfg, train, data, prior, ctx
        self.gammas, self.con = gammas, cfg.con_loss["name"] != "none"
        order_seed, aug_seed = seeds
        self.device = device = ctx.device
        self.backbone, self.projector, self.head = backbone, projector, head
        (self.query_net, self.key_backbone, self.key_projector, self.q_params, self.k_params, self.aug_q,
         self.aug_k) = query_key_encoders(backbone, projector, head, cfg.augment, data, device)
        self.gen, self.aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
        self.lam, self.n = cfg.momentum, data.x_train.shape[0]
        self.observed = data.observed.clone()
        emb_dim = projector.out_dim
        self.state = {
            "tau": torch.tensor(float(cfg.positives["init"])),
            "p_tilde": torch.full((2,), float(cfg.positives["init"])),
            "protos": torch.zeros(2, emb_dim, device=device),
            "s": W.init_pseudo_labels(self.observed, prior),
            "queue_k": torch.zeros(0, emb_dim, device=device),
            "queue_pred": torch.zeros(0, dtype=torch.long, device=device),
            "queue_conf": torch.zeros(0, device=device),
        }
        self.mining = cfg.hard_negatives.get("mining", "none")
        self.bs = min(train.batch_size, self.n)
        self.hist: dict[str, list] = {"loss": [], "l_class": [], "l_con": [], "l_dis": [], "n_hard_per_anchor": [],
                                      "n_peers_per_anchor": [], "pseudo_label_acc": [], "pseudo_label_mean_max": [],
                                      "tau": [], "epoch_seconds": []}
        self.t0 = 0.0   # the running epoch's start (wall clock)

    def train(self) -> dict:
        """Trains the query network in place; returns what ``info`` records of the run."""
        train, hist = self.train_cfg, self.hist
        opt = build_optimizer(train.optimizer, self.query_net)
        sched = build_scheduler(train.schedule, opt, len(self.epoch_batches(torch_generator(0))), train.epochs)
        trainer = Trainer([self.query_net], opt, sched, "wconpu",
                          state={"order": self.gen, "augment": self.aug_gen, "key_backbone": self.key_backbone,
                                 "key_projector": self.key_projector, "wconpu": self.state, "history": hist},
                          ctx=self.ctx)
        trainer.run(train.epochs, lambda epoch: self.epoch_batches(self.gen), self.step, start_epoch=self.start_epoch,
                    end_epoch=self.end_epoch)
        self.key_backbone.cpu(), self.key_projector.cpu()
        secs = hist["epoch_seconds"]
        hist["minutes_per_epoch"] = (sum(secs) / len(secs) / 60.0) if secs else 0.0
        hist["final_train_loss"] = hist["loss"][-1] if hist["loss"] else None
        return hist

    def epoch_batches(self, gen: torch.Generator):
        return batches(self.n, self.bs, gen, drop_last=True, min_size=2)

    def step(self, idx: torch.Tensor, epoch: int) -> Step:
        cfg, state, device, lam = self.cfg, self.state, self.device, self.lam
        x = self.data.x_train[idx].to(device)
        o = self.observed[idx].to(device)
        feats = self.backbone(self.aug_q(x, self.aug_gen))
        logits = self.head(feats)
        q = F.normalize(self.projector(feats), dim=1)
        probs = logits.softmax(1).detach()
        conf, pred = probs.max(1)
        state["tau"], state["p_tilde"] = W.sat_update(state["tau"], state["p_tilde"], probs.cpu(), lam)
        thresholds = W.sat_thresholds(state["tau"], state["p_tilde"]).to(device)
        if cfg.prototypes["update"] == "moving_average":
            state["protos"] = W.update_prototypes(state["protos"], q, pred, lam)
        nearest = W.nearest_prototype(q.detach(), state["protos"])
        if cfg.pseudo_labels["update"] == "prototype":
            state["s"][idx] = W.update_pseudo_labels(state["s"][idx], nearest.cpu(), o.cpu(), cfg.alpha)
        l_class = W.soft_cross_entropy(logits, state["s"][idx].to(device))
        if cfg.dist_loss["name"] == "dist_pu":
            l_dis = W.label_distribution_loss(logits.softmax(1)[:, 1], o, self.prior)
        else:
            l_dis = W.unlabeled_negative_ce(logits, o)
        if self.con:
            l_con, extra, after = self.contrastive(x, q, o, conf, pred, nearest, thresholds)
        else:
            l_con, extra, after = logits.sum() * 0.0, {}, None
        loss = W.wconpu_objective(l_class, l_con, l_dis, self.gammas["gamma0"], self.gammas["gamma1"])
        return Step(loss, weight=len(idx), after_backward=after,
                    extra={"l_class": l_class.detach(), "l_con": l_con.detach(), "l_dis": l_dis.detach(), **extra})

    def contrastive(self, x, q, o, conf, pred, nearest, thresholds):
        """``(L_con, reported values, after_backward)`` of the batch: the queries against their
        keys and the queue, with peers and (optionally) mined hard negatives."""
        cfg, state, device, mining = self.cfg, self.state, self.device, self.mining
        with torch.no_grad():
            k = F.normalize(self.key_projector(self.key_backbone(self.aug_k(x, self.aug_gen))), dim=1)
        b = q.shape[0]
        qk, qp, qc = state["queue_k"], state["queue_pred"], state["queue_conf"]
        pool = torch.cat([q, k, qk])
        pool_pred = torch.cat([pred, pred, qp])
        pool_conf = torch.cat([conf, conf, qc])
        pool_lab_query = torch.cat([o == 1, torch.zeros(b + len(qk), dtype=torch.bool, device=device)])
        positives = W.positive_peer_mask(o, pred, pool_pred, pool_conf, pool_lab_query, thresholds)
        hard = torch.zeros_like(positives)
        weight = torch.ones(positives.shape, device=device)
        if mining != "none" and len(qk):
            dis = W.dissim(q.detach(), qk)
            if mining == "prototype":
                q_lab, k_lab = nearest, W.nearest_prototype(qk, state["protos"])
            else:
                q_lab, k_lab = pred, qp
            hard[:, 2 * b:] = W.hard_negative_mask(dis, q_lab, k_lab, float(cfg.hard_negatives["quantile"]))
            weight[:, 2 * b:] = W.hard_negative_weight(dis)
        l_con = W.weighted_contrastive_loss(q, pool, positives, hard, weight, cfg.temperature)
        extra = {"n_hard": hard.sum(1).float().mean().detach(), "n_peers": positives.sum(1).float().mean().detach()}
        return l_con, extra, lambda: self.after_step(k, pred, conf)

    def after_step(self, k: torch.Tensor, pred: torch.Tensor, conf: torch.Tensor) -> dict:
        """The key encoder follows the query's by momentum; the batch's keys join the queue."""
        cfg, state = self.cfg, self.state
        momentum_update_(self.k_params, self.q_params, self.lam)
        state["queue_k"] = torch.cat([k, state["queue_k"]])[:cfg.queue]
        state["queue_pred"] = torch.cat([pred, state["queue_pred"]])[:cfg.queue]
        state["queue_conf"] = torch.cat([conf, state["queue_conf"]])[:cfg.queue]
        return {}

    def start_epoch(self, epoch: int) -> None:
        self.t0 = time.perf_counter()

    @torch.no_grad()
    def recompute_prototypes(self) -> None:
        data, device, n = self.data, self.device, self.n
        self.query_net.eval()
        rows = torch.arange(n)
        feats = predict(lambda kk: self.backbone(to_float(data.x_train[rows[kk]].to(device), data.mean, data.std)), n,
                        self.ctx)
        emb = F.normalize(self.projector(feats.to(device)), dim=1)
        pred = self.head(feats.to(device)).argmax(1)
        for c in (0, 1):
            if bool((pred == c).any()):
                self.state["protos"][c] = F.normalize(emb[pred == c].mean(0), dim=0)

    def end_epoch(self, stats) -> None:
        hist, state = self.hist, self.state
        if self.cfg.prototypes["update"] == "recompute_epoch":
            self.recompute_prototypes()
        hist["epoch_seconds"].append(time.perf_counter() - self.t0)
        steps = max(1, stats.steps)
        hist["loss"].append(stats.mean)
        for key in ("l_class", "l_con", "l_dis"):
            hist[key].append(stats.sums.get(key, 0.0) / steps)
        hist["n_hard_per_anchor"].append(stats.sums.get("n_hard", 0.0) / steps)
        hist["n_peers_per_anchor"].append(stats.sums.get("n_peers", 0.0) / steps)
        unl = self.observed == 0
        hist["pseudo_label_acc"].append(100.0 * float((state["s"][unl].argmax(1) == self.data.y_true[unl])
                                                      .float().mean()) if bool(unl.any()) else None)
        # Fig. 5(b): (1/n) sum_i max(s_i) over the n training rows (labeled positives' s_i stay one-hot)
        hist["pseudo_label_mean_max"].append(float(state["s"].max(1).values.mean()))
        hist["tau"].append(float(state["tau"]))
