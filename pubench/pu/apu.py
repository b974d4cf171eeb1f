"""aPU (Hammoudeh & Lowd 2020, "Learning from Positive and Unlabeled Data with Arbitrary
Positive Shift", NeurIPS), PU_METHODS ``apu``: its single-step estimator PURR (PU Risk
Reweighting), reimplemented from the paper; the released code (ZaydH/arbitrary_pu,
``src/apu/purr.py``, ``learner.py``, ``configs``) was read for the training step and the
hyperparameters.

aPU's setting: labeled positives from the training distribution ``p_tr-p``, an unlabeled
training sample ``U_tr`` (prior ``pi_tr``) and an unlabeled test sample ``U_te`` (prior
``pi_te``); only the negative class-conditional ``p_n`` is shared, the positives may shift
arbitrarily. With a surrogate ``l`` and ``R_S^{+/-} = E_S[l(g, +/-1)]``:

    R_n^{+/-}  = (1 - pi_te) / (1 - pi_tr) (R_{U_tr}^{+/-} - pi_tr R_P^{+/-})     [(1 - pi_te) E_n l(g, +/-1)]
    R_te-p^+   = R_{U_te}^+ - max(0, R_n^+)                                     [pi_te E_te-p l(g, +1)]
    PURR       = max(0, R_te-p^+) + max(0, R_n^-)

(:func:`purr_terms`, :func:`purr_risk`); the training step (:func:`purr_objective`) takes
``-gamma`` times the gradient of the first term found negative, in the order ``R_n^-``,
``R_n^+``, ``R_te-p^+`` (nnPU's "defeat" step on each), else the gradient of PURR.

Which aPU estimator 004 ran: 004 (and the PU benchmarks of its Table II) has no positive
shift (one labeled sample and one unlabeled sample of the same distribution, the test
split drawn like it), so ``U_tr = U_te = X_U`` and ``pi_tr = pi_te = pi``. Then PURR is
nnPU (Kiryo et al. 2017): ``R_te-p^+ = pi R_P^+`` while ``R_n^+ >= 0`` and ``R_n^- =
R_U^- - pi R_P^-``; the only difference is the extra non-negativity check on ``R_n^+``
(with the sigmoid loss ``R_n^+ = (1 - pi) - R_n^-``, i.e. ``R_n^-`` is also kept below
``1 - pi``). The two-step estimators (wUU, aPNU) need a first-step PU classifier sigma(x) =
p_tr(y = +1 | x) and a second training; without a shift their first step already solves
the problem. We run PURR: the estimator that needs no data 004 does not have and one
training run like every other compared method (004 Sec. 6.1), and the one the paper's
no-shift control (its code's ``cifar10_overlap`` setting: the same positive classes and
priors in train and test) reduces to the PU baseline it should. The choice is ours (open):
004 does not say which estimator its aPU row is.

Released code's settings used (``configs/nonoverlap/cifar10/cifar10_overlap.yaml``, PURR
block; ``learner.py``): sigmoid loss, gamma 1. Not used (004's protocol instead): Adam lr
1e-3, weight decay 1e-3, 200 epochs, and the model of the lowest validation loss on a
held-out sixth of the data. Prediction: positive iff the score > 0; the last epoch's model.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData, evaluate_network
from pubench.pu.objective import resolve_prior
from pubench.pu.risks import SURROGATES, surrogate
from pubench.train.augment import build_augment, to_float
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, TrainConfig, batches, has_batchnorm
from pubench.train.optim import build_optimizer, build_scheduler
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator

ESTIMATORS = ("purr",)
#: aPU's other estimators, named so that a spec asking for them fails with the reason
NOT_IMPLEMENTED = {"wuu": "two-step (a first-step PU classifier sigma, then the weighted UU risk)",
                   "apnu": "two-step (sigma, then the rho-mix of the PN and weighted NU risks)"}


def _mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over ``mask``; 0 when it is empty (the code's ``_get_mean_loss``)."""
    n = mask.sum().clamp(min=1).to(values.dtype)
    return (values * mask.to(values.dtype)).sum() / n


def purr_terms(scores: torch.Tensor, labeled: torch.Tensor, unlabeled_train: torch.Tensor,
               unlabeled_test: torch.Tensor, train_prior: float, test_prior: float, loss="sigmoid"
               ) -> dict[str, torch.Tensor]:
    """PURR's three risk terms (Hammoudeh & Lowd 2020, its recursive risk; module docstring):
    ``n_plus`` = R_n^+, ``n_minus`` = R_n^-, ``te_p_plus`` = R_te-p^+ = R_{U_te}^+ -
    max(0, R_n^+). ``labeled`` / ``unlabeled_train`` / ``unlabeled_test``: bool masks over
    the scores (the two unlabeled masks may be the same rows: no shift)."""
    if not (0.0 < train_prior < 1.0 and 0.0 < test_prior < 1.0):
        raise ValueError(f"priors must be in (0, 1), got {train_prior}, {test_prior}")
    ell = surrogate(loss)
    plus, minus = ell(scores, +1), ell(scores, -1)
    ratio = (1.0 - test_prior) / (1.0 - train_prior)
    n_plus = ratio * (_mean(plus, unlabeled_train) - train_prior * _mean(plus, labeled))
    n_minus = ratio * (_mean(minus, unlabeled_train) - train_prior * _mean(minus, labeled))
    te_p_plus = _mean(plus, unlabeled_test) - n_plus.clamp(min=0)
    return {"n_plus": n_plus, "n_minus": n_minus, "te_p_plus": te_p_plus}


def purr_risk(scores, labeled, unlabeled_train, unlabeled_test, train_prior: float, test_prior: float,
              loss="sigmoid") -> torch.Tensor:
    """The non-negative PURR risk ``max(0, R_te-p^+) + max(0, R_n^-)``."""
    t = purr_terms(scores, labeled, unlabeled_train, unlabeled_test, train_prior, test_prior, loss)
    return t["te_p_plus"].clamp(min=0) + t["n_minus"].clamp(min=0)


def purr_objective(scores, labeled, unlabeled_train, unlabeled_test, train_prior: float, test_prior: float,
                   loss="sigmoid", gamma: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, str]:
    """One PURR training step: ``(objective, risk, branch)``. ``objective`` is
    ``-gamma R`` for the first term ``R`` of ``R_n^-``, ``R_n^+``, ``R_te-p^+`` that is
    negative (``branch`` names it), else the PURR risk (``branch`` ``risk``); ``risk`` is
    the detached PURR risk."""
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    t = purr_terms(scores, labeled, unlabeled_train, unlabeled_test, train_prior, test_prior, loss)
    risk = t["te_p_plus"].clamp(min=0) + t["n_minus"].clamp(min=0)
    for name in ("n_minus", "n_plus", "te_p_plus"):
        if bool(t[name].detach() < 0):
            return -gamma * t[name], risk.detach(), name
    return risk, risk.detach(), "risk"


@dataclass(frozen=True)
class APUConfig:
    name: str
    estimator: str              # purr (the no-shift reading: module docstring)
    loss: str                   # surrogate (the released code: sigmoid)
    gamma: float                # defeat-step rate (the code's PURR setting: 1)
    prior: float | None = None  # pi_tr = pi_te (no shift); default: the run's prior


@PU_METHODS.register("apu")
class APU(PUMethod):
    """aPU's PURR estimator with the unlabeled training sample as the test-unlabeled sample
    and one prior (no positive shift; module docstring)."""

    config_cls = APUConfig
    test_config = {"estimator": "purr", "loss": "sigmoid", "gamma": 1.0}

    @classmethod
    def check(cls, cfg: APUConfig, where: str = "pu_method") -> None:
        if cfg.estimator in NOT_IMPLEMENTED:
            raise ConfigError(f"{where}.estimator: {cfg.estimator} is not implemented "
                              f"({NOT_IMPLEMENTED[cfg.estimator]}); one of {ESTIMATORS}")
        if cfg.estimator not in ESTIMATORS:
            raise ConfigError(f"{where}.estimator: {cfg.estimator!r} is not one of {ESTIMATORS}")
        if cfg.loss not in SURROGATES:
            raise ConfigError(f"{where}.loss: {cfg.loss!r} is not one of {sorted(SURROGATES)}")
        if cfg.gamma < 0:
            raise ConfigError(f"{where}.gamma must be >= 0")
        if cfg.prior is not None and not 0.0 < cfg.prior < 1.0:
            raise ConfigError(f"{where}.prior must be in (0, 1)")

    @classmethod
    def run(cls, cfg: APUConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None):
        device = ctx.device
        prior, source = resolve_prior(cfg.prior, data.prior, True, "pu_method")
        if not 0.0 < prior < 1.0:
            raise ConfigError(f"apu needs a class prior in (0, 1), got {prior}")
        head_seed, order_seed, aug_seed = sub_seeds(seed, 3)
        model = nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, head_seed)).to(device)
        labeled_all = data.observed == 1
        n = data.x_train.shape[0]
        aug = build_augment(train.augment, data.mean, data.std, "train.augment") if train.augment else None
        gen, aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
        min_size = 2 if has_batchnorm(model) else 1
        branches = {"n_minus": 0, "n_plus": 0, "te_p_plus": 0, "risk": 0}

        def step(rows, epoch):
            xb = data.x_train[rows].to(device)
            x = aug(xb, aug_gen) if aug is not None else to_float(xb, data.mean, data.std)
            scores = model(x).reshape(-1)
            lab = labeled_all[rows].to(device)
            obj, risk, branch = purr_objective(scores, lab, ~lab, ~lab, prior, prior, cfg.loss, cfg.gamma)
            branches[branch] += 1
            return Step(obj, value=risk, weight=len(rows))

        opt = build_optimizer(train.optimizer, model)
        steps = max(1, len(batches(n, train.batch_size, torch_generator(0), min_size=min_size)))
        trainer = Trainer([model], opt, build_scheduler(train.schedule, opt, steps, train.epochs), "apu",
                          state={"order": gen, "augment": aug_gen, "branches": branches}, ctx=ctx)
        hist = trainer.run(train.epochs, lambda epoch: batches(n, train.batch_size, gen, min_size=min_size), step)
        metrics = evaluate_network(model, data, ctx)
        info = {
            "risk": "aPU PURR (Hammoudeh & Lowd 2020) without positive shift: U_tr = U_te = X_U, pi_tr = pi_te",
            "prior_used": prior, "prior_source": source, "estimator": cfg.estimator, "loss": cfg.loss,
            "gamma": cfg.gamma, "steps_by_branch": dict(branches),
            "final_train_risk": hist[-1].mean if hist else None, "model_selection": "the last epoch's model",
        }
        return Result(metrics, info)
