"""PUbN (Hsieh, Niu & Sugiyama 2019, "Classification from Positive, Unlabeled and Biased
Negative Data", ICML), PU_METHODS ``pubn``, in its PU-only form PUbN\\N (no biased
negatives, rho = 0), the form a PU benchmark can run; as its released code
(cyber-meow/PUbiasedN, ``pu_biased_n.py`` with ``partial_n``, ``rho: 0``) runs it,
reimplemented, not copied:

1. a first network estimates ``sigma(x) = p(y = +1 | x)`` by nnPU (Kiryo et al. 2017,
   :func:`pubench.pu.risks.nnpu_objective`; the code: logistic loss, beta 0, gamma 1),
   ``sigma = sigmoid(score)``;
2. ``eta`` = the ``(1 - pi) tau`` quantile of ``sigma`` over the unlabeled examples
   (:func:`pubench.pu.risks.pubn_threshold`; ``tau``: the code's ``u_per``, 0.9 in its
   CIFAR-10 PUbN\\N setting);
3. a second network is trained on :func:`pubench.pu.risks.pubn_risk` with the fixed
   ``sigma`` of each training example: negatives from the unlabeled examples with
   ``sigma <= eta`` (weighted ``1 - sigma``), the rest of the negative risk through the
   positives with ``sigma > eta`` (weighted ``(1 - sigma) / sigma``).

Prediction: positive iff the second network's score > 0. Both networks train for
``train.epochs`` with the train block's optimizer and schedule (the code: 200 epochs each,
AMSGrad). The second network starts from the same initial backbone weights as the first
(a copy of the task's fresh backbone; a new linear head each, seeded). Where the code
differs (written in the specs): it selects each network on a held-out validation set (a
least-squares loss for ``sigma``, the nnPU risk for the classifier) and draws 10
positives + 100 unlabeled per step; here the model after the last epoch and the shared
shuffled batches of the other risk-based methods.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from pubench.pu import risks as R
from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData, evaluate_network
from pubench.pu.objective import RiskSettings, make_targets, resolve_prior, train_network
from pubench.pu.risks import SURROGATES
from pubench.train.augment import build_augment, to_float
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, TrainConfig, batches, has_batchnorm, predict
from pubench.train.optim import build_optimizer, build_scheduler
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator


@dataclass(frozen=True)
class PUbNConfig:
    name: str
    tau: float              # fraction of U's expected negatives taken as negatives (the code's u_per; CIFAR-10: 0.9)
    loss: str               # surrogate of the PUbN risk (the code: logistic)
    sigma_loss: str         # surrogate of the nnPU sigma model (the code: logistic)
    beta: float             # nnPU beta of the sigma model (the code: nn_threshold 0)
    gamma: float            # nnPU gamma of the sigma model (the code: nn_rate 1)
    prior: float | None = None


@PU_METHODS.register("pubn")
class PUbN(PUMethod):
    """PUbN\\N: an nnPU estimate of p(y = +1 | x), then the PUbN risk (module docstring)."""

    config_cls = PUbNConfig
    test_config = {"tau": 0.9, "loss": "logistic", "sigma_loss": "logistic", "beta": 0.0, "gamma": 1.0}

    @classmethod
    def check(cls, cfg: PUbNConfig, where: str = "pu_method") -> None:
        for key in ("loss", "sigma_loss"):
            if getattr(cfg, key) not in SURROGATES:
                raise ConfigError(f"{where}.{key}: {getattr(cfg, key)!r} is not one of {sorted(SURROGATES)}")
        if not 0.0 < cfg.tau <= 1.0:
            raise ConfigError(f"{where}.tau must be in (0, 1]")
        if cfg.beta < 0 or cfg.gamma < 0:
            raise ConfigError(f"{where}: beta and gamma must be >= 0")
        if cfg.prior is not None and not 0.0 < cfg.prior < 1.0:
            raise ConfigError(f"{where}.prior must be in (0, 1)")

    @classmethod
    def run(cls, cfg: PUbNConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None):
        device = ctx.device
        prior, source = resolve_prior(cfg.prior, data.prior, True, "pu_method")
        sigma_head_seed, head_seed, order_seed, aug_seed, sigma_order_seed, sigma_aug_seed = sub_seeds(seed, 6)
        sigma_model = nn.Sequential(copy.deepcopy(backbone), seeded_head(backbone.out_dim, 1, sigma_head_seed)).to(device)
        model = nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, head_seed)).to(device)

        # 1. sigma(x) = p(y = +1 | x) by nnPU
        targets = make_targets("nnpu", "pu", data.observed, data.y_true, 2)
        settings = RiskSettings("nnpu", prior, cfg.sigma_loss, cfg.beta, cfg.gamma)
        sigma_hist = train_network(sigma_model, train, targets, settings, data, sigma_order_seed, sigma_aug_seed, ctx,
                                   "pubn sigma")
        sigma_model.eval()
        sigma = torch.sigmoid(predict(
            lambda k: sigma_model(to_float(data.x_train[k].to(device), data.mean, data.std)),
            data.x_train.shape[0], ctx).reshape(-1)).double()
        labeled_all = data.observed == 1
        if not bool((~labeled_all).any()):
            raise ValueError("pubn needs unlabeled examples")
        eta = R.pubn_threshold(sigma[~labeled_all], prior, cfg.tau)

        # 2. the PUbN risk with the fixed sigma
        n = data.x_train.shape[0]
        aug = build_augment(train.augment, data.mean, data.std, "train.augment") if train.augment else None
        gen, aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
        min_size = 2 if has_batchnorm(model) else 1

        def step(rows, epoch):
            xb = data.x_train[rows].to(device)
            x = aug(xb, aug_gen) if aug is not None else to_float(xb, data.mean, data.std)
            scores = model(x).reshape(-1)
            risk = R.pubn_risk(scores, labeled_all[rows].to(device), sigma[rows].to(device, scores.dtype), prior, eta,
                               cfg.loss)
            return Step(risk)

        opt = build_optimizer(train.optimizer, model)
        steps = max(1, len(batches(n, train.batch_size, torch_generator(0), min_size=min_size)))
        trainer = Trainer([model], opt, build_scheduler(train.schedule, opt, steps, train.epochs), "pubn", ctx=ctx)
        hist = trainer.run(train.epochs, lambda epoch: batches(n, train.batch_size, gen, min_size=min_size), step)
        metrics = evaluate_network(model, data, ctx)
        unl = sigma[~labeled_all]
        info = {
            "risk": "PUbN\\N (rho = 0): nnPU sigma, then the PUbN risk", "prior_used": prior, "prior_source": source,
            "tau": cfg.tau, "eta": eta, "loss": cfg.loss, "sigma_loss": cfg.sigma_loss, "beta": cfg.beta,
            "gamma": cfg.gamma, "unlabeled_taken_negative": float((unl <= eta).double().mean()),
            "sigma_final_train_risk": sigma_hist[-1] if sigma_hist else None,
            "final_train_risk": hist[-1].mean if hist else None, "model_selection": "the last epoch's models",
        }
        return Result(metrics, info)
