"""PULNS (Luo, Zhao, Chen, Qiao, Du, Zhang, Wu, Cai, He, Rajmohan & Lin 2021, "PULNS:
Positive-Unlabeled Learning with Effective Negative Sample Selector", AAAI), PU_METHODS
``pulns``: a selector (an MLP policy) picks negatives out of the unlabeled examples, a
classifier is trained on the labeled positives against the picked negatives, and the
selector is trained by REINFORCE with the classifier's validation performance as reward.

The selection is a Markov decision process over the unlabeled examples of an episode:

* state ``s_i = [h_i, c_N, c_P]``: the classifier's features ``h_i`` of example ``i``
  (backbone output, detached), the mean features of the negatives selected so far in the
  episode ``c_N`` (at the start: the mean over the first batch's unlabeled examples) and
  of the labeled positives ``c_P`` (of the batch);
* action ``a_i ~ Bernoulli(pi_theta(s_i))``, 1: take ``i`` as a negative;
* intermediate reward (:func:`pulns_intermediate_reward`) ``r_i = clip((1 - 2 a_i) g_i,
  -r_max, r_max)`` with ``g_i`` the classifier's logit: ``log((1 - p) / p)`` for a selected
  example, ``log(p / (1 - p))`` for a rejected one (``p = sigmoid(g)``);
* terminal reward ``z - b``: the classifier's validation performance ``z`` after the
  episode against the baseline ``b`` (the previous episode's ``z``);
* return (:func:`pulns_returns`) ``v_i = sum_{t >= i} beta^(t - i) r_t + alpha (z - b)``;
* selector loss (:func:`pulns_policy_loss`) ``-(1/n) sum_i v_i log pi_theta(a_i | s_i)``
  (REINFORCE).

The paper is not among this project's papers and no official code was found (the reference
index holds two third-party reimplementations, read, not copied): the MDP above is our
reading of them, written down in docs/tasks.md and the spec; what we chose:

* an episode is one epoch over the training batches; the examples of a batch are decided
  together (their state holds ``c_N`` as it stood at the start of the batch: one forward
  pass per batch instead of one per example); the selector is updated once per episode,
  at the end of the epoch, with its own Adam (``selector_lr``);
* ``z`` = Lee & Liu (2003)'s PU criterion ``recall^2 / Pr(f(x) = 1)`` (=
  ``precision * recall / pi``; :func:`pu_f1_criterion`) of the classifier on a PU hold-out
  (``validation_fraction`` of the labeled positives and of the unlabeled examples): no
  clean negatives exist in a PU problem. A ranking metric (the P-vs-U AUC) does not see
  the threshold and would not penalise taking positives as negatives;
* ``warmup_epochs`` first train the classifier on P vs all of U (unlabeled as negative),
  then the episodes begin;
* the classifier's loss (:func:`balanced_bce`): binary cross-entropy, labeled positives 1
  and the selected examples 0 (all of U in the warm-up), each class's part a mean of its
  own. With equal class weights the P-vs-U posterior is ``p_P / (p_P + p_U) = 1 / (1 + pi)
  > 1/2`` on the positives (SCAR), so the intermediate reward favours picking negatives;
  with the plain (count-weighted) BCE every unlabeled logit is negative after the warm-up
  and the policy learns to pick every unlabeled example (seen on the toy data of
  tests/pu/test_pulns.py). The last epoch's classifier predicts (positive iff logit > 0).
  Prior-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData, evaluate_network
from pubench.pu.vpu import vpu_rows
from pubench.train import accel
from pubench.train.augment import build_augment, to_float
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import EpochStats, Step, Trainer, TrainConfig, batches, has_batchnorm, predict
from pubench.train.optim import build_optimizer, build_scheduler
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator


def pulns_intermediate_reward(classifier_logits: torch.Tensor, actions: torch.Tensor, clip: float) -> torch.Tensor:
    """``clip((1 - 2 a) g, -clip, clip)``: ``log((1 - p) / p)`` for a selected example (``a = 1``),
    ``log(p / (1 - p))`` for a rejected one, ``p = sigmoid(g)`` the classifier's positive
    probability."""
    if classifier_logits.shape != actions.shape:
        raise ValueError("pulns_intermediate_reward: logits and actions need the same shape")
    if clip <= 0:
        raise ValueError(f"pulns_intermediate_reward: clip must be > 0, got {clip}")
    return ((1.0 - 2.0 * actions.to(classifier_logits.dtype)) * classifier_logits).clamp(-clip, clip)


def pulns_returns(rewards: torch.Tensor, terminal: float, discount: float, terminal_weight: float) -> torch.Tensor:
    """``v_i = sum_{t >= i} discount^(t - i) r_t + terminal_weight * terminal`` for the
    rewards (n,) of one episode, in the order they were taken."""
    if not 0.0 <= discount <= 1.0:
        raise ValueError(f"pulns_returns: discount must be in [0, 1], got {discount}")
    values = rewards.detach().reshape(-1).double().cpu().tolist()
    out, future = [0.0] * len(values), 0.0
    for i in range(len(values) - 1, -1, -1):
        future = values[i] + discount * future
        out[i] = future + terminal_weight * terminal
    return torch.tensor(out, dtype=torch.float64).to(rewards.dtype).to(rewards.device)


def balanced_bce(logits: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
    """``mean_{positive} softplus(-g) + mean_{negative} softplus(g)``: binary cross-entropy with
    each class's part averaged on its own (an empty part is 0)."""
    pos, neg = logits[positive], logits[negative]
    out = logits.sum() * 0.0
    if pos.numel():
        out = out + F.softplus(-pos).mean()
    if neg.numel():
        out = out + F.softplus(neg).mean()
    return out


def pu_f1_criterion(positive_scores: torch.Tensor, unlabeled_scores: torch.Tensor) -> float:
    """Lee & Liu (2003)'s PU model-selection criterion ``recall^2 / Pr(f(x) = 1)``, which is
    ``precision * recall / pi`` (proportional to F1's numerator): recall on held-out labeled
    positives, ``Pr(f(x) = 1)`` on held-out unlabeled examples (a sample of p(x)); positive
    iff score > 0; 0 when nothing is predicted positive."""
    if positive_scores.numel() == 0 or unlabeled_scores.numel() == 0:
        raise ValueError("pu_f1_criterion needs labeled positives and unlabeled examples")
    recall = float((positive_scores > 0).double().mean())
    rate = float((unlabeled_scores > 0).double().mean())
    return recall * recall / rate if rate > 0 else 0.0


def pulns_policy_loss(selector_logits: torch.Tensor, actions: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """REINFORCE: ``-(1/n) sum_i v_i log pi(a_i | s_i)`` with ``pi(1 | s) = sigmoid(selector
    logit)``; the returns are constants."""
    logits = selector_logits.reshape(-1)
    a = actions.reshape(-1).to(logits.dtype)
    if not logits.shape == a.shape == returns.reshape(-1).shape:
        raise ValueError("pulns_policy_loss: logits, actions and returns need the same length")
    log_pi = torch.where(a > 0.5, F.logsigmoid(logits), F.logsigmoid(-logits))
    return -(returns.reshape(-1).detach().to(logits.dtype) * log_pi).mean()


@dataclass(frozen=True)
class SelectorConfig:
    name: str           # mlp (003 App. B.2: "a 3-layer MLP selector")
    layers: int         # linear layers
    hidden: int         # width of the hidden layers


@dataclass(frozen=True)
class PULNSConfig:
    name: str
    selector: SelectorConfig
    discount: float             # beta of the intermediate rewards
    terminal_weight: float      # alpha of the terminal reward
    reward_clip: float          # |r_i| <= reward_clip
    warmup_epochs: int          # classifier on P vs U before the first episode
    validation_fraction: float  # PU hold-out of the terminal reward
    selector_lr: float          # Adam learning rate of the selector


def build_selector(cfg: SelectorConfig, in_dim: int, seed: int) -> nn.Module:
    """The policy network: ``cfg.layers`` linear layers with ReLU between, one logit out,
    initialised from ``seed``."""
    widths = [in_dim] + [cfg.hidden] * (cfg.layers - 1) + [1]
    layers: list[nn.Module] = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for i in range(cfg.layers):
            layers.append(nn.Linear(widths[i], widths[i + 1]))
            if i < cfg.layers - 1:
                layers.append(nn.ReLU())
    return nn.Sequential(*layers)


@PU_METHODS.register("pulns")
class PULNS(PUMethod):
    """Negative-sample selector trained by REINFORCE (module docstring)."""

    config_cls = PULNSConfig
    test_config = {"selector": {"name": "mlp", "layers": 3, "hidden": 16}, "discount": 0.9, "terminal_weight": 1.0,
                   "reward_clip": 1.0, "warmup_epochs": 0, "validation_fraction": 0.2, "selector_lr": 1.0e-3}

    @classmethod
    def check(cls, cfg: PULNSConfig, where: str = "pu_method") -> None:
        if cfg.selector.name != "mlp":
            raise ConfigError(f"{where}.selector.name: {cfg.selector.name!r} is not one of ['mlp']")
        if cfg.selector.layers < 1 or cfg.selector.hidden < 1:
            raise ConfigError(f"{where}.selector: layers and hidden must be >= 1")
        if not 0.0 <= cfg.discount <= 1.0:
            raise ConfigError(f"{where}.discount must be in [0, 1]")
        if cfg.terminal_weight < 0 or cfg.reward_clip <= 0 or cfg.selector_lr <= 0:
            raise ConfigError(f"{where}: terminal_weight must be >= 0, reward_clip and selector_lr > 0")
        if cfg.warmup_epochs < 0:
            raise ConfigError(f"{where}.warmup_epochs must be >= 0")
        if not 0.0 < cfg.validation_fraction < 1.0:
            raise ConfigError(f"{where}.validation_fraction must be in (0, 1)")

    @classmethod
    def run(cls, cfg: PULNSConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None):
        fit = _PULNSTraining(cfg, backbone, train, data, seed, ctx)
        hist = fit.train()
        return Result(evaluate_network(fit.model, data, ctx), fit.info(hist))


class _PULNSTraining:
    """One PULNS run, in named steps: the classifier's ``step`` (warm-up BCE, then the
    selector's sampled negatives), the validation criterion and the selector's REINFORCE
    update at each epoch's end (``end_epoch``); ``episode`` and ``baseline`` are the state a
    checkpoint holds."""

    def __init__(self, cfg: PULNSConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
                 ctx: JobContext):
        self.cfg, self.backbone, self.train_cfg, self.data, self.ctx = cfg, backbone, train, data, ctx
        self.device = device = ctx.device
        head_seed, selector_seed, order_seed, aug_seed, action_seed, holdout_seed = sub_seeds(seed, 6)
        self.head = seeded_head(backbone.out_dim, 1, head_seed)
        self.model = nn.Sequential(backbone, self.head).to(device)
        self.selector = build_selector(cfg.selector, 3 * backbone.out_dim, selector_seed).to(device)
        rows = vpu_rows(data.observed, data.pu_scheme, cfg.validation_fraction, torch_generator(holdout_seed))
        # vpu_rows' data sample holds the labeled positives too in a single training set: keep U only
        self.train_rows = torch.cat([rows["train_p"], rows["train_x"][data.observed[rows["train_x"]] == 0]]).sort().values
        self.val_rows = torch.cat([rows["val_p"], rows["val_x"][data.observed[rows["val_x"]] == 0]])
        self.val_labeled = data.observed[self.val_rows] == 1
        self.labeled_all = data.observed == 1
        self.aug = build_augment(train.augment, data.mean, data.std, "train.augment") if train.augment else None
        self.gen, self.aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
        self.action_gen = torch_generator(action_seed)
        self.x_train = accel.data_on_device(data.x_train, device)
        self.min_size = 2 if has_batchnorm(self.model) else 1
        # one episode's trajectory (cleared at each epoch's end) and the reward baseline
        self.episode: dict = {"features": [], "c_neg": [], "c_pos": [], "actions": [], "rewards": [],
                              "neg_sum": None, "neg_count": 0, "pos_mean": None, "start_mean": None}
        self.baseline: dict = {"z": None, "history": [], "selected_fraction": []}
        self.selector_opt = torch.optim.Adam(self.selector.parameters(), lr=cfg.selector_lr)

    def train(self) -> list[EpochStats]:
        train, n = self.train_cfg, len(self.train_rows)
        opt = build_optimizer(train.optimizer, self.model)
        steps = max(1, len(batches(n, train.batch_size, torch_generator(0), min_size=self.min_size)))
        trainer = Trainer([self.model, self.selector], opt, build_scheduler(train.schedule, opt, steps, train.epochs),
                          "pulns", state={"order": self.gen, "augment": self.aug_gen, "actions": self.action_gen,
                                          "episode": self.episode, "baseline": self.baseline,
                                          "selector_optimizer": self.selector_opt}, ctx=self.ctx)
        return trainer.run(train.epochs, lambda epoch: batches(n, train.batch_size, self.gen, min_size=self.min_size),
                           self.step, end_epoch=self.end_epoch)

    def forward(self, idx):
        data = self.data
        xb = self.x_train[idx].to(self.device)
        x = accel.input_format(self.aug(xb, self.aug_gen) if self.aug is not None
                               else to_float(xb, data.mean, data.std))
        feats = self.backbone(x)
        return feats, self.head(feats).reshape(-1)

    def step(self, pos, epoch):
        idx = self.train_rows[pos]
        lab = self.labeled_all[idx].to(self.device)
        feats, logits = self.forward(idx)
        if epoch < self.cfg.warmup_epochs:
            return Step(balanced_bce(logits, lab, ~lab), weight=len(idx))
        take = self.select_negatives(feats.detach(), logits, lab)
        return Step(balanced_bce(logits, lab, take), weight=int((lab | take).sum()),
                    extra={"selected": float(take.sum()), "unlabeled": float((~lab).sum())})

    def select_negatives(self, h: torch.Tensor, logits: torch.Tensor, lab: torch.Tensor) -> torch.Tensor:
        """The selector's sampled negatives among the batch's unlabeled examples (a mask), and
        the episode's trajectory (states, actions, intermediate rewards) and centroids."""
        episode, device = self.episode, self.device
        unl = ~lab
        if bool(lab.any()):
            episode["pos_mean"] = h[lab].mean(0)
        if episode["start_mean"] is None:
            episode["start_mean"] = h[unl].mean(0) if bool(unl.any()) else h.mean(0)
        c_neg = episode["neg_sum"] / episode["neg_count"] if episode["neg_count"] else episode["start_mean"]
        c_pos = episode["pos_mean"] if episode["pos_mean"] is not None else h.mean(0)
        take = torch.zeros_like(lab)
        if bool(unl.any()):
            h_u = h[unl]
            with torch.no_grad():
                probs = torch.sigmoid(self.selector(_states(h_u, c_neg, c_pos)).reshape(-1))
            actions = torch.bernoulli(probs.double().cpu(), generator=self.action_gen).to(device)
            take[unl] = actions > 0.5
            episode["features"].append(h_u.cpu())
            episode["c_neg"].append(c_neg.cpu())
            episode["c_pos"].append(c_pos.cpu())
            episode["actions"].append(actions.cpu())
            episode["rewards"].append(pulns_intermediate_reward(logits.detach()[unl].double(), actions,
                                                                self.cfg.reward_clip).cpu())
            if bool((actions > 0.5).any()):
                sel = h_u[actions > 0.5].sum(0)
                episode["neg_sum"] = sel if episode["neg_sum"] is None else episode["neg_sum"] + sel
                episode["neg_count"] += int((actions > 0.5).sum())
        return take

    def validation_score(self) -> float:
        data, val_rows = self.data, self.val_rows
        self.model.eval()
        scores = predict(lambda k: self.model(accel.input_format(to_float(self.x_train[val_rows[k]].to(self.device),
                                                                          data.mean, data.std))),
                         len(val_rows), self.ctx).reshape(-1)
        return pu_f1_criterion(scores[self.val_labeled], scores[~self.val_labeled])

    def end_epoch(self, stats: EpochStats) -> None:
        episode, baseline = self.episode, self.baseline
        z = self.validation_score()
        if stats.epoch >= self.cfg.warmup_epochs and episode["actions"]:
            self.update_selector(0.0 if baseline["z"] is None else z - baseline["z"])
            baseline["selected_fraction"].append(stats.sums.get("selected", 0.0)
                                                 / max(1.0, stats.sums.get("unlabeled", 0.0)))
        baseline["z"] = z
        baseline["history"].append(z)
        for key in ("features", "c_neg", "c_pos", "actions", "rewards"):
            episode[key].clear()
        episode.update(neg_sum=None, neg_count=0, pos_mean=None, start_mean=None)

    def update_selector(self, terminal: float) -> None:
        """One REINFORCE step of the selector on the episode, with the terminal reward ``terminal``."""
        cfg, episode, device, selector = self.cfg, self.episode, self.device, self.selector
        rewards = torch.cat(episode["rewards"])
        returns = pulns_returns(rewards, terminal, cfg.discount, cfg.terminal_weight)
        selector.train()
        self.selector_opt.zero_grad(set_to_none=True)
        total, at = len(rewards), 0
        for feats_u, c_neg, c_pos, acts in zip(episode["features"], episode["c_neg"], episode["c_pos"],
                                               episode["actions"]):
            k = len(acts)
            logits_sel = selector(_states(feats_u.to(device), c_neg.to(device), c_pos.to(device))).reshape(-1)
            # the episode's mean loss, accumulated batch by batch
            (pulns_policy_loss(logits_sel, acts.to(device), returns[at:at + k].to(device)) * (k / total)).backward()
            at += k
        self.selector_opt.step()

    def info(self, hist: list[EpochStats]) -> dict:
        cfg, selector = self.cfg, self.selector
        return {
            "risk": "PULNS: BCE on P vs selector-chosen negatives, selector by REINFORCE (prior-free)",
            "prior_used": None, "prior_source": "none",
            "selector": {"layers": cfg.selector.layers, "hidden": cfg.selector.hidden, "in_dim": 3 * self.backbone.out_dim},
            "validation_criterion_per_epoch": list(self.baseline["history"]),
            "selected_fraction_per_episode": list(self.baseline["selected_fraction"]),
            "n_validation": len(self.val_rows), "final_train_loss": hist[-1].mean if hist else None,
            # the selector's end state in one number (a resumed run must reproduce it too)
            "selector_weight_norm": float(torch.sqrt(sum((q.detach().double() ** 2).sum() for q in selector.parameters()))),
            "model_selection": "the last epoch's classifier",
        }


def _states(h_u: torch.Tensor, c_neg: torch.Tensor, c_pos: torch.Tensor) -> torch.Tensor:
    """The selector's states ``[h_i, c_N, c_P]`` of a batch's unlabeled examples."""
    k = h_u.shape[0]
    return torch.cat([h_u, c_neg.reshape(1, -1).expand(k, -1), c_pos.reshape(1, -1).expand(k, -1)], dim=1)
