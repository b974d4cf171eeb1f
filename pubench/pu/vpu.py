"""vPU: variational PU learning (Chen et al. 2020a, "A Variational Approach for Learning
from Positive and Unlabeled Data", NeurIPS 2020), PU_METHODS ``vpu``: prior-free, with
MixUp regularization, trained as the authors' released code (HC-Feynman/vpu, ``vpu.py``)
does; every training choice is in the spec. The loss terms are
:func:`pubench.pu.risks.vpu_variational_loss`, :func:`~pubench.pu.risks.vpu_mixup` and
:func:`~pubench.pu.risks.vpu_mixup_regularizer`; the epochs run through
:class:`pubench.train.loop.Trainer`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pubench.pu import risks as R
from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData
from pubench.train.augment import build_augment, to_float
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import EpochStats, Step, Trainer, TrainConfig, predict
from pubench.train.metrics import evaluate_scores
from pubench.train.optim import build_optimizer, build_scheduler
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator


@dataclass(frozen=True)
class VPUConfig:
    name: str
    mix_alpha: float                    # Beta(a, a) of the MixUp coefficient (released code: 0.3)
    lam: float                          # weight of the MixUp regularizer (released: 0.03 CIFAR-10, 0.3 F-MNIST / STL-10)
    iterations_per_epoch: int           # released: 30 (--val-iterations)
    lr_halving_every: int               # released: 20 (lr halved before 0-based epochs 19, 39, ...); 0: never
    restart_optimizer_at_halving: bool  # released: true (a new Adam is built at each halving)
    model_selection: str                # released: validation_loss; last_epoch: the model after the last epoch
    validation_fraction: float          # released: 0.1 of the training data held out; 0 with last_epoch


SELECTIONS = ("validation_loss", "last_epoch")


def halving_factor(epoch: int, every: int) -> float:
    """Learning-rate multiplier at (0-based) ``epoch``. vPU's code halves the rate at the
    start of every epoch with ``epoch % every == every - 1``: epochs 0..18 run at the base
    rate, 19..38 at half, 39..58 at a quarter (``every = 20``). ``every = 0``: never."""
    return 1.0 if every == 0 else 0.5 ** ((epoch + 1) // every)


class FullBatches:
    """Index batches of exactly ``size`` from successive random permutations of ``range(n)``:
    a shuffled DataLoader with ``drop_last`` that is restarted when exhausted (vPU draws P and
    U batches this way, independently). When ``n < size`` (a reduced tier's few labeled
    positives) permutations are concatenated, so a batch repeats examples."""

    def __init__(self, n: int, size: int, gen: torch.Generator):
        if n < 1 or size < 1:
            raise ValueError(f"FullBatches needs n >= 1 and size >= 1, got n={n}, size={size}")
        self.n, self.size, self.gen = n, size, gen
        self.perm, self.at = torch.randperm(n, generator=gen), 0

    def next(self) -> torch.Tensor:
        if self.n >= self.size:
            if self.at + self.size > self.n:
                self.perm, self.at = torch.randperm(self.n, generator=self.gen), 0
            out = self.perm[self.at:self.at + self.size]
            self.at += self.size
            return out
        reps = -(-self.size // self.n)
        return torch.cat([torch.randperm(self.n, generator=self.gen) for _ in range(reps)])[:self.size]


def paired_batches(n_p: int, n_x: int, size: int, iters: int, gen: torch.Generator):
    """``iters`` pairs (positive rows, data-sample rows) of ``size`` each, drawn from two
    independent shuffled streams restarted at each call (vPU's epoch)."""
    p_stream, x_stream = FullBatches(n_p, size, gen), FullBatches(n_x, size, gen)
    for _ in range(iters):
        yield p_stream.next(), x_stream.next()


def vpu_rows(observed: torch.Tensor, scheme: str, fraction: float, gen: torch.Generator) -> dict:
    """Training-example rows vPU uses, as train / validation parts.

    ``p``: labeled positives. ``x``: the sample of the data distribution p(x) in the
    variational loss and the normalization ``max_x Phi``: with a single training set every
    training example (labeled positives included: the whole set is the draw from p(x); vPU's
    code does the same, its x loader is the whole training split), with a case-control split
    the unlabeled sample (X_U ~ p(x); the labeled positives are a separate draw). A
    validation PU set holds out ``fraction`` of the labeled positives and of the unlabeled
    rows (seeded, at least one of each), as vPU's code holds out 10% of the training data;
    ``fraction = 0``: no validation set. In a case-control split an image can be both a
    labeled positive and in the unlabeled sample (``counts.n_overlap``), so a held-out row
    may share its image with a training row.
    """
    if scheme not in ("single_training_set", "case_control"):
        raise ConfigError(f"vPU needs the PU split scheme (single_training_set | case_control), got {scheme!r}")
    pos = torch.nonzero(observed == 1).squeeze(1)
    unl = torch.nonzero(observed == 0).squeeze(1)

    def hold(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if fraction == 0:
            return rows, rows[:0]
        if len(rows) < 2:
            raise ValueError(f"vPU validation hold-out needs >= 2 rows of each kind, got {len(rows)}")
        k = min(len(rows) - 1, max(1, math.floor(fraction * len(rows) + 0.5)))
        perm = torch.randperm(len(rows), generator=gen)
        return rows[perm[k:]].sort().values, rows[perm[:k]].sort().values

    train_p, val_p = hold(pos)
    train_u, val_u = hold(unl)
    if scheme == "single_training_set":
        train_x, val_x = torch.cat([train_p, train_u]).sort().values, torch.cat([val_p, val_u]).sort().values
    else:
        train_x, val_x = train_u, val_u
    return {"train_p": train_p, "train_x": train_x, "val_p": val_p, "val_x": val_x}


def vpu_objective(model: Callable[[torch.Tensor], torch.Tensor], xp: torch.Tensor, xu: torch.Tensor, mu: float,
                  partner: torch.Tensor, lam: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """vPU's training objective on one batch (Chen et al. 2020a: L_var + lam * the MixUp
    regularizer; as the released code): ``(loss, L_var, regularizer)``. ``model`` maps inputs
    to one logit, ``log Phi = logsigmoid``; positives and data sample go through it in one
    call (one BatchNorm batch, as the code); each ``xu[i]`` is mixed with ``xp[partner[i]]``
    with coefficient ``mu`` (the caller draws ``mu ~ Beta(a, a)`` and the permutation).
    Shared by the PU method ``vpu`` and the downstream ``vpu_probe``."""
    bs = xp.shape[0]
    out = F.logsigmoid(model(torch.cat([xp, xu])).reshape(-1))
    log_phi_p, log_phi_u = out[:bs], out[bs:]
    var_loss = R.vpu_variational_loss(log_phi_u, log_phi_p)
    x_mix, target = R.vpu_mixup(xu, xp[partner], log_phi_u.exp(), mu)
    reg = R.vpu_mixup_regularizer(F.logsigmoid(model(x_mix).reshape(-1)), target)
    return var_loss + lam * reg, var_loss, reg


def vpu_scores(log_phi_eval: torch.Tensor, log_phi_sample: torch.Tensor) -> torch.Tensor:
    """vPU's decision scores (released code): positive iff ``Phi(x) / max Phi > 1/2``, the
    maximum over the training data sample; the score is ``log Phi(x) - log max Phi - log(1/2)``
    (> 0: positive)."""
    return log_phi_eval.reshape(-1) - float(log_phi_sample.max()) - math.log(0.5)


@PU_METHODS.register("vpu")
class VPU(PUMethod):
    """Variational PU learning (Chen et al. 2020a), prior-free, trained as the authors'
    released code (HC-Feynman/vpu, ``vpu.py``) does; reimplemented, not copied.

    Each iteration draws a batch of labeled positives ``x_p`` and a batch of the data sample
    ``x_u`` (same size, independent shuffled streams restarted every epoch), computes
    ``L_var = log mean_u Phi(x_u) - mean_p log Phi(x_p)`` with ``log Phi = logsigmoid(g)``,
    then one MixUp coefficient ``mu ~ Beta(mix_alpha, mix_alpha)``, pairs every ``x_u[i]``
    with a randomly permuted positive and adds ``lam * mean (log(mu Phi(x_u) + 1 - mu) -
    log Phi(mu x_u + (1 - mu) x_p))^2``; the target is not detached (as in the code). An
    "epoch" is ``iterations_per_epoch`` iterations (30 in the code); the learning rate is
    halved every ``lr_halving_every`` epochs with a fresh optimizer (the code rebuilds Adam,
    betas (0.5, 0.99), which the spec's optimizer block states). With ``model_selection:
    validation_loss`` the variational loss on the held-out validation PU set is computed
    after each epoch (eval mode) and the model with the lowest one is kept (ties: the
    earlier epoch); ``last_epoch`` keeps the last (004's protocol). Prediction, as the code:
    positive iff ``Phi(x) / max_x Phi > 1/2``, the maximum over the training data sample;
    the score is ``log Phi(x) - log max_x Phi - log(1/2)``.

    Where this differs from the code (each written in the specs): the validation positives
    are part of the column's n_P (the code draws n_P / 9 more); a split with fewer labeled
    positives (or data rows) than the batch size repeats them within a batch (the code's
    ``drop_last`` loader would yield no batch); the network is the spec's backbone + a
    linear layer with one logit (the code: 2-way log-softmax networks per dataset).
    """

    config_cls = VPUConfig
    test_config = {"mix_alpha": 0.3, "lam": 0.1, "iterations_per_epoch": 3, "lr_halving_every": 1,
                   "restart_optimizer_at_halving": True, "model_selection": "validation_loss",
                   "validation_fraction": 0.2}

    @classmethod
    def check(cls, cfg: VPUConfig, where: str = "pu_method") -> None:
        if cfg.mix_alpha <= 0 or cfg.lam < 0:
            raise ConfigError(f"{where}: mix_alpha must be > 0 and lam >= 0")
        if cfg.iterations_per_epoch < 1:
            raise ConfigError(f"{where}.iterations_per_epoch must be >= 1")
        if cfg.lr_halving_every < 0:
            raise ConfigError(f"{where}.lr_halving_every must be >= 1, or 0 for never")
        if cfg.restart_optimizer_at_halving and cfg.lr_halving_every == 0:
            raise ConfigError(f"{where}.restart_optimizer_at_halving needs lr_halving_every >= 1")
        if cfg.model_selection not in SELECTIONS:
            raise ConfigError(f"{where}.model_selection: {cfg.model_selection!r} is not one of {SELECTIONS}")
        if cfg.model_selection == "validation_loss" and not 0.0 < cfg.validation_fraction < 1.0:
            raise ConfigError(f"{where}.validation_fraction must be in (0, 1) to select on the validation loss")
        if cfg.model_selection == "last_epoch" and cfg.validation_fraction != 0.0:
            raise ConfigError(f"{where}.validation_fraction must be 0 with model_selection last_epoch")

    @classmethod
    def check_train(cls, cfg: VPUConfig, train: TrainConfig, where: str = "params") -> None:
        if cfg.lr_halving_every and train.schedule.name != "constant":
            raise ConfigError(f"{where}: pu_method.lr_halving_every is vPU's schedule; train.schedule must be constant")
        if train.batch_size < 2:
            raise ConfigError(f"{where}.train.batch_size must be >= 2 for vPU")

    @classmethod
    def run(cls, cfg: VPUConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None):
        fit = _VPUTraining(cfg, backbone, train, data, seed, ctx)
        fit.train()
        return fit.result()


class _VPUTraining:
    """One vPU run, in named steps: the halving schedule (``start_epoch``), paired batches of
    positives and the data sample, the variational + MixUp ``step``, the validation loss and
    model selection (``end_epoch``), then the scores and ``info`` (``result``)."""

    def __init__(self, cfg: VPUConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
                 ctx: JobContext):
        self.cfg, self.train_cfg, self.data, self.ctx = cfg, train, data, ctx
        self.device = device = ctx.device
        init_seed, order_seed, aug_seed, mix_seed, holdout_seed = sub_seeds(seed, 5)
        self.model = nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, init_seed)).to(device)
        self.rows = vpu_rows(data.observed, data.pu_scheme, cfg.validation_fraction, torch_generator(holdout_seed))
        self.train_p, self.train_x = self.rows["train_p"], self.rows["train_x"]
        if len(self.train_p) == 0 or len(self.train_x) < 2:
            raise ValueError("vPU needs labeled positives and at least 2 examples in the data sample")
        self.aug = build_augment(train.augment, data.mean, data.std, "train.augment") if train.augment else None
        self.gen, self.aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
        self.mix_rng = np.random.default_rng(mix_seed)
        self.bs, self.iters = train.batch_size, cfg.iterations_per_epoch
        opt = build_optimizer(train.optimizer, self.model)
        self.base_lrs = [g["lr"] for g in opt.param_groups]
        sched = (build_scheduler(train.schedule, opt, self.iters, train.epochs)
                 if train.schedule.name != "constant" else None)
        self.validate = cfg.model_selection == "validation_loss"
        self.hist: dict[str, list] = {"loss": [], "var_loss": [], "reg_loss": [], "lr": [], "val_loss": []}
        self.best = {"val": math.inf, "epoch": None, "state": None}
        self.trainer = Trainer([self.model], opt, sched, "vpu", state={
            "order": self.gen, "augment": self.aug_gen, "mixup": self.mix_rng, "history": self.hist, "best": self.best}, ctx=ctx)

    def train(self) -> None:
        self.trainer.run(self.train_cfg.epochs, self.batches, self.step, start_epoch=self.start_epoch,
                         end_epoch=self.end_epoch)

    def inputs(self, idx):
        data = self.data
        xb = data.x_train[idx].to(self.device)
        return self.aug(xb, self.aug_gen) if self.aug is not None else to_float(xb, data.mean, data.std)

    def log_phi(self, x_uint8: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        data = self.data
        return F.logsigmoid(predict(lambda k: self.model(to_float(x_uint8[idx[k]].to(self.device), data.mean,
                                                                  data.std)), len(idx), self.ctx).reshape(-1))

    def val_loss(self) -> float:
        x = self.data.x_train
        return float(R.vpu_variational_loss(self.log_phi(x, self.rows["val_x"]), self.log_phi(x, self.rows["val_p"])))

    def start_epoch(self, epoch: int) -> None:
        cfg, train, trainer = self.cfg, self.train_cfg, self.trainer
        factor = halving_factor(epoch, cfg.lr_halving_every)
        if epoch > 0 and factor != halving_factor(epoch - 1, cfg.lr_halving_every):
            if cfg.restart_optimizer_at_halving:
                trainer.optimizer = build_optimizer(replace(train.optimizer, lr=train.optimizer.lr * factor), self.model)
            else:
                for g, lr in zip(trainer.optimizer.param_groups, self.base_lrs):
                    g["lr"] = lr * factor
        self.hist["lr"].append(trainer.optimizer.param_groups[0]["lr"])

    def batches(self, epoch: int):
        return paired_batches(len(self.train_p), len(self.train_x), self.bs, self.iters, self.gen)

    def step(self, batch, epoch: int) -> Step:
        p_idx, x_idx = batch
        xp, xu = self.inputs(self.train_p[p_idx]), self.inputs(self.train_x[x_idx])
        mu = float(self.mix_rng.beta(self.cfg.mix_alpha, self.cfg.mix_alpha))
        partner = torch.randperm(self.bs, generator=self.gen).to(self.device)
        loss, var_loss, reg = vpu_objective(self.model, xp, xu, mu, partner, self.cfg.lam)
        return Step(loss, extra={"var_loss": var_loss.detach(), "reg_loss": reg.detach()})

    def end_epoch(self, stats: EpochStats) -> None:
        hist, best, model = self.hist, self.best, self.model
        hist["loss"].append(stats.mean)
        for key in ("var_loss", "reg_loss"):
            hist[key].append(stats.sums[key] / self.iters)
        model.eval()
        if self.validate:
            v = self.val_loss()
            hist["val_loss"].append(v)
            if v < best["val"]:
                best.update(val=v, epoch=stats.epoch, state={k: t.detach().clone() for k, t in model.state_dict().items()})

    def result(self) -> Result:
        """The selected model's test metrics (vPU's scores) and what ``info`` records of the run."""
        cfg, train, data, hist, best, model = self.cfg, self.train_cfg, self.data, self.hist, self.best, self.model
        validate, rows, bs, iters = self.validate, self.rows, self.bs, self.iters
        train_p, train_x = self.train_p, self.train_x
        model.eval()
        if best["state"] is not None:
            model.load_state_dict(best["state"])
        selected = best["epoch"] if validate else (train.epochs - 1 if train.epochs else None)
        log_phi_sample = self.log_phi(data.x_train, train_x)
        log_max = float(log_phi_sample.max())
        scores = vpu_scores(self.log_phi(data.x_test, torch.arange(data.x_test.shape[0])), log_phi_sample)
        metrics = evaluate_scores(scores, data.y_test, 2)
        single = data.pu_scheme == "single_training_set"
        opt = self.trainer.optimizer
        info = {
            "risk": "variational (vPU) + MixUp", "mix_alpha": cfg.mix_alpha, "lam": cfg.lam,
            "iterations_per_epoch": iters, "steps": iters * train.epochs, "batch_size": bs,
            "lr_halving_every": cfg.lr_halving_every, "restart_optimizer_at_halving": cfg.restart_optimizer_at_halving,
            "lr_per_epoch": hist["lr"], "optimizer": {"name": train.optimizer.name,
                                                      "betas": list(opt.param_groups[0].get("betas", ())) or None},
            "data_sample": ("every training example (single training set; labeled positives included)" if single
                            else "the unlabeled sample (case-control)"),
            "n_train_positives": len(train_p), "n_train_data_sample": len(train_x),
            "n_val_positives": len(rows["val_p"]), "n_val_data_sample": len(rows["val_x"]),
            "positives_repeat_in_batch": len(train_p) < bs, "data_sample_repeats_in_batch": len(train_x) < bs,
            "model_selection": ("lowest validation variational loss" if validate
                                else "the last epoch's model (no validation set)"),
            "selected_epoch": selected, "val_loss_per_epoch": hist["val_loss"] or None,
            "val_loss_selected": self.val_loss() if validate and best["state"] is not None else None,
            "loss_per_epoch": hist["loss"], "var_loss_per_epoch": hist["var_loss"], "reg_loss_per_epoch": hist["reg_loss"],
            "log_max_phi_data_sample": log_max, "final_train_loss": hist["loss"][-1] if hist["loss"] else None,
            "prior_used": None, "prior_source": "not used (prior-free)",
        }
        return Result(metrics, info)
