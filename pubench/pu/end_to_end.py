"""Risk-based PU classifiers trained end to end (``PU_METHODS``): a backbone + a linear
layer (one output, the score) trained from scratch with a risk of :mod:`pubench.pu.risks`.

=============  ================================================================  ===========
name           risk                                                              surrogate
=============  ================================================================  ===========
``pn_naive``   PN with every unlabeled example taken as negative (001's "PN")     logistic
``pvu``        ``pi R_P^+ + R_U^-`` (001's cost-sensitive "PvU", spec decision)   sigmoid
``upu``        du Plessis et al. 2014: ``pi R_P^+ + R_U^- - pi R_P^-``            sigmoid
``nnpu``       Kiryo et al. 2017, with its ``beta`` / ``gamma`` training step      sigmoid
=============  ================================================================  ===========

``vpu``        Chen et al. 2020a, variational PU with MixUp regularization (below)

``loss`` overrides the surrogate (``sigmoid`` | ``logistic``). ``prior`` defaults to the
run's prior (``data.prior``, else the Split's: the positive fraction of the unlabeled set).
Each unit is a class with ``config_cls`` and ``run(cfg, model, train, data, seed, device)``
where ``model`` is the backbone (built by the task, ``out_dim`` features) and ``train`` the
task's ``train`` block (epochs, batch_size, optimizer, schedule, augment).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pubench.models.heads import linear_head
from pubench.pu import PU_METHODS
from pubench.pu.risks import SURROGATES
from pubench.train._common import (
    RiskSettings,
    batches,
    generator,
    make_targets,
    predict,
    progress,
    set_postfix,
    sub_seeds,
)
from pubench.train.augment import build_augment, to_float
from pubench.train.metrics import evaluate_scores
from pubench.train.optim import build_optimizer, build_scheduler
from pubench.train.probe import DownstreamData, resolve_prior, train_and_evaluate
from pubench.utils.config import ConfigError


@dataclass(frozen=True)
class RiskMethodConfig:
    name: str
    prior: float | None = None
    loss: str | None = None
    beta: float = 0.0        # nnpu only
    gamma: float = 1.0       # nnpu only


class RiskMethod:
    config_cls = RiskMethodConfig
    risk = "pn"

    @classmethod
    def check(cls, cfg: RiskMethodConfig, where: str = "pu_method") -> None:
        if cfg.loss is not None and cfg.loss not in SURROGATES:
            raise ConfigError(f"{where}.loss: {cfg.loss!r} is not one of {sorted(SURROGATES)}")
        if cls.risk != "nnpu" and (cfg.beta != 0.0 or cfg.gamma != 1.0):
            raise ConfigError(f"{where}: beta / gamma are nnPU options")
        if cls.risk == "pn" and cfg.prior is not None:
            raise ConfigError(f"{where}: {cfg.name} takes no prior")
        if cfg.prior is not None and not 0.0 <= cfg.prior <= 1.0:
            raise ConfigError(f"{where}.prior must be in [0, 1]")
        if cfg.beta < 0 or cfg.gamma < 0:
            raise ConfigError(f"{where}: beta and gamma must be >= 0")

    @classmethod
    def run(cls, cfg: RiskMethodConfig, backbone: nn.Module, train, data: DownstreamData, seed: int, device="cpu"):
        cls.check(cfg)
        if data.split_kind != "pu" or data.n_classes != 2:
            raise ConfigError(f"pu_method {cfg.name} needs a binary PU split (data.split.kind: pu)")
        prior, source = resolve_prior(cfg.prior, data.prior, cls.risk != "pn", "pu_method")
        settings = RiskSettings(cls.risk, prior if cls.risk != "pn" else None, cfg.loss, cfg.beta, cfg.gamma)
        targets = make_targets(cls.risk, "pu", data.observed, data.y_true, 2)
        init_seed, order_seed, aug_seed = sub_seeds(seed, 3)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(init_seed)
            head = linear_head(backbone.out_dim, 1)
        model = nn.Sequential(backbone, head).to(device)
        metrics, hist = train_and_evaluate(model, train.optimizer, train.schedule, train.augment, targets, settings,
                                           train.epochs, train.batch_size, data, order_seed, aug_seed, device,
                                           f"{cfg.name}")
        info = {"risk": cls.risk, "surrogate_loss": settings.surrogate(), "prior_used": settings.prior,
                "prior_source": source if cls.risk != "pn" else "not used",
                "final_train_risk": hist[-1] if hist else None}
        if cls.risk == "nnpu":
            info.update(beta=cfg.beta, gamma=cfg.gamma)
        return metrics, info


@PU_METHODS.register("pn_naive")
class PNNaive(RiskMethod):
    risk = "pn"


@PU_METHODS.register("pvu")
class PvU(RiskMethod):
    risk = "pvu"


@PU_METHODS.register("upu")
class UPU(RiskMethod):
    risk = "upu"


@PU_METHODS.register("nnpu")
class NNPU(RiskMethod):
    risk = "nnpu"


# ------------------------------------------------------------------ vPU
@dataclass(frozen=True)
class VPUConfig:
    name: str
    mix_alpha: float = 0.3   # Beta(alpha, alpha) of the MixUp coefficient (vPU's released default)
    lam: float = 0.03        # weight of the MixUp regularizer (vPU's released default)


@PU_METHODS.register("vpu")
class VPU:
    """Variational PU learning (Chen et al. 2020a, "A Variational Approach for Learning from
    Positive and Unlabeled Data"), prior-free. With ``log phi = logsigmoid(g)``:

        L_var = log( mean_U phi(x) ) - mean_P log phi(x)
        L_reg = mean_i ( log(mu t_i + (1 - mu) t_j(i)) - log phi(mu x_i + (1 - mu) x_j(i)) )^2,  mu ~ Beta(a, a)
        L = L_var + lam * L_reg

    over the batch of P and U inputs with targets ``t = 1`` (P) and ``t = phi(x)`` (U, not
    differentiated: our choice) and a random partner ``j(i)`` in the same batch, as in the
    authors' released code: each step takes a batch of unlabeled examples and as many
    labeled positives (cycling through P); an epoch is one pass over U. Prediction (also as their code):
    positive iff ``phi(x) / max_U phi > 1/2``, the maximum over the unlabeled training
    examples; the reported score is ``log phi(x) - log max_U phi - log(1/2)``.
    """

    config_cls = VPUConfig

    @classmethod
    def check(cls, cfg: VPUConfig, where: str = "pu_method") -> None:
        if cfg.mix_alpha <= 0 or cfg.lam < 0:
            raise ConfigError(f"{where}: mix_alpha must be > 0 and lam >= 0")

    @classmethod
    def run(cls, cfg: VPUConfig, backbone: nn.Module, train, data: DownstreamData, seed: int, device="cpu"):
        cls.check(cfg)
        if data.split_kind != "pu" or data.n_classes != 2:
            raise ConfigError("pu_method vpu needs a binary PU split (data.split.kind: pu)")
        init_seed, order_seed, aug_seed, mix_seed = sub_seeds(seed, 4)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(init_seed)
            head = linear_head(backbone.out_dim, 1)
        model = nn.Sequential(backbone, head).to(device)
        pos = torch.nonzero(data.observed == 1).squeeze(1)
        unl = torch.nonzero(data.observed == 0).squeeze(1)
        if len(pos) == 0 or len(unl) < 2:
            raise ValueError("vPU needs labeled positives and at least 2 unlabeled examples")
        aug = build_augment(train.augment, data.mean, data.std, "train.augment") if train.augment else None
        gen, aug_gen, rng = generator(order_seed), generator(aug_seed), np.random.default_rng(mix_seed)

        def inputs(rows):
            xb = data.x_train[rows].to(device)
            return aug(xb, aug_gen) if aug is not None else to_float(xb, data.mean, data.std)

        bs = min(train.batch_size, len(unl))
        opt = build_optimizer(train.optimizer, model)
        sched = build_scheduler(train.schedule, opt, max(1, -(-len(unl) // bs)), train.epochs)
        p_order, p_at = torch.randperm(len(pos), generator=gen), 0

        def next_positives(k):
            nonlocal p_order, p_at
            out = []
            while k > 0:
                if p_at >= len(p_order):
                    p_order, p_at = torch.randperm(len(pos), generator=gen), 0
                take = p_order[p_at:p_at + k]
                out.append(take)
                p_at += len(take)
                k -= len(take)
            return pos[torch.cat(out)]

        history = []
        bar = progress(range(train.epochs), "vpu", total=train.epochs)
        for _ in bar:
            model.train()
            total, count = 0.0, 0
            for ub in batches(len(unl), bs, gen, min_size=2):
                u_rows = unl[ub]
                p_rows = next_positives(len(u_rows))
                xu, xp = inputs(u_rows), inputs(p_rows)
                log_phi = F.logsigmoid(model(torch.cat([xp, xu])).reshape(-1))
                lp, lu = log_phi[: len(xp)], log_phi[len(xp):]
                var_loss = torch.logsumexp(lu, 0) - math.log(len(lu)) - lp.mean()
                # MixUp over the whole P + U batch with a random partner (the authors' code):
                # targets 1 for P, phi(x) for U (not differentiated), mixed with the same mu
                mu = float(rng.beta(cfg.mix_alpha, cfg.mix_alpha))
                xb = torch.cat([xp, xu])
                tgt = torch.cat([torch.ones_like(lp), lu.detach().exp()])
                perm = torch.randperm(len(xb), generator=gen).to(device)
                x_mix = mu * xb + (1 - mu) * xb[perm]
                target = (mu * tgt + (1 - mu) * tgt[perm]).log()
                reg = ((target - F.logsigmoid(model(x_mix).reshape(-1))) ** 2).mean()
                loss = var_loss + cfg.lam * reg
                if not torch.isfinite(loss):
                    raise FloatingPointError("vPU: non-finite loss")
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
                total += float(loss.detach()) * len(u_rows)
                count += len(u_rows)
            history.append(total / max(1, count))
            set_postfix(bar, loss=history[-1])
        model.eval()
        log_phi_u = F.logsigmoid(predict(lambda idx: model(to_float(data.x_train[unl[idx]].to(device), data.mean,
                                                                         data.std)), len(unl)).reshape(-1))
        log_max = float(log_phi_u.max())
        log_phi_t = F.logsigmoid(predict(lambda idx: model(to_float(data.x_test[idx].to(device), data.mean,
                                                                      data.std)), data.x_test.shape[0]).reshape(-1))
        scores = log_phi_t - log_max - math.log(0.5)
        metrics = evaluate_scores(scores, data.y_test, 2)
        info = {"risk": "variational (vPU) + MixUp", "mix_alpha": cfg.mix_alpha, "lam": cfg.lam,
                "log_max_phi_unlabeled": log_max, "final_train_loss": history[-1] if history else None,
                "prior_used": None, "prior_source": "not used (prior-free)"}
        return metrics, info
