"""Classifiers trained with a risk of :mod:`pubench.pu.risks` (``pn``, ``upu``, ``nnpu``,
``pvu``): the targets a split gives each risk, the step objective, and the training of a
head or a whole network through :class:`pubench.train.loop.Trainer`, from the loop config
passed whole (:class:`pubench.train.loop.LoopConfig`: a row's ``train`` block, a probe's
config; its optimizer and schedule parsed once, with it). Used by the downstream units
(linear probe, fine-tuning, puPL's classifier) and the end-to-end risk-based PU methods."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from pubench.pu import risks as R
from pubench.pu.data import DownstreamData, evaluate_network
from pubench.pu.risks import RISKS
from pubench.train import accel
from pubench.train.augment import build_augment, to_float
from pubench.train.context import JobContext
from pubench.train.loop import LoopConfig, NetworkLoopConfig, Step, Trainer, batches, has_batchnorm
from pubench.train.optim import build_optimizer, build_scheduler
from pubench.utils.config import ConfigError
from pubench.utils.seeding import torch_generator

@dataclass
class Targets:
    """What a classifier is trained on: ``rows`` (indices of the training examples used),
    and per used row either ``labeled`` (bool, PU risks) or ``target`` (int, PN / CE)."""

    risk: str
    rows: torch.Tensor
    target: torch.Tensor | None = None
    labeled: torch.Tensor | None = None
    n_classes: int = 2


def make_targets(risk: str, split_kind: str, observed: torch.Tensor, y_true: torch.Tensor,
                 n_classes: int) -> Targets:
    """Training targets for ``risk`` on a split of kind ``split_kind``.

    * kind ``none`` (fully labeled evaluation): ``pn`` on the true labels (cross-entropy over
      the classes, or binary cross-entropy on the binarized labels);
    * kind ``pu``: ``pn`` takes the observed labels (unlabeled = negative: the naive
      classifier); ``upu`` / ``nnpu`` / ``pvu`` take labeled positives vs unlabeled;
    * kind ``pnu``: ``pn`` on the labeled examples only (both classes).
    """
    RISKS.lookup(risk, "risk")
    n = observed.shape[0]
    if n_classes != 2 and risk != "pn":
        raise ConfigError(f"risk {risk!r} needs a binary task (data.labels); multi-class evaluation uses pn")
    if split_kind == "none":
        if risk != "pn":
            raise ConfigError(f"risk {risk!r} needs a PU split; a split of kind none is fully labeled (use pn)")
        return Targets(risk, torch.arange(n), target=y_true.clone(), n_classes=n_classes)
    if split_kind == "pu":
        if risk == "pn":
            return Targets(risk, torch.arange(n), target=(observed == 1).long())
        return Targets(risk, torch.arange(n), labeled=observed == 1)
    if split_kind == "pnu":
        if risk != "pn":
            raise ConfigError(f"risk {risk!r} is a PU risk; on a PNU split use pn (labeled examples)")
        rows = torch.nonzero(observed >= 0).squeeze(1)
        return Targets(risk, rows, target=observed[rows].clone())
    raise ConfigError(f"unknown split kind {split_kind!r}")


@dataclass(frozen=True)
class RiskSettings:
    risk: str
    prior: float | None = None
    loss: str | None = None      # surrogate: default logistic (= cross-entropy) for pn and pvu, sigmoid for upu/nnpu
    beta: float = 0.0
    gamma: float = 1.0
    target_prior: float | None = None   # nnpu only: ImbPU's re-balanced prior (None: plain nnPU)

    def surrogate(self) -> str:
        # pvu with the symmetric sigmoid loss is uPU + pi (pubench.pu.risks): cross-entropy keeps it distinct
        return self.loss or ("logistic" if self.risk in ("pn", "pvu") else "sigmoid")


def resolve_prior(explicit: float | None, data_prior: float | None, needed: bool, where: str) -> tuple[float | None, str]:
    """(prior, where it came from): the config's, else the run's; an error when a risk needs one."""
    if explicit is not None:
        return float(explicit), "given"
    if data_prior is not None:
        return float(data_prior), "run"
    if needed:
        raise ConfigError(f"{where}: the risk needs a class prior and neither {where}.prior nor the split gives one")
    return None, "none"


def risk_step(out: torch.Tensor, t: Targets, pos: torch.Tensor, s: RiskSettings):
    """(objective to backprop, reported risk value) for the batch ``pos`` (positions in ``t.rows``)."""
    if t.risk == "pn":
        y = t.target[pos].to(out.device)
        if t.n_classes == 2:
            if s.surrogate() == "logistic":
                obj = nn.functional.binary_cross_entropy_with_logits(out.reshape(-1), y.float())
            else:
                obj = R.pn_risk(out.reshape(-1), y, s.surrogate())
        else:
            obj = nn.functional.cross_entropy(out, y)
        return obj, obj.detach()
    lab = t.labeled[pos].to(out.device)
    if s.prior is None:
        raise ConfigError(f"risk {t.risk} needs a class prior")
    scores = out.reshape(-1)
    if t.risk == "nnpu" and s.target_prior is not None:
        obj, value, _ = R.imbalanced_nnpu_objective(scores, lab, s.prior, s.target_prior, s.surrogate(), s.beta,
                                                    s.gamma)
        return obj, value
    if t.risk == "nnpu":
        obj, value, _ = R.nnpu_objective(scores, lab, s.prior, s.surrogate(), s.beta, s.gamma)
        return obj, value
    fn = R.upu_risk if t.risk == "upu" else R.pvu_risk
    obj = fn(scores, lab, s.prior, s.surrogate())
    return obj, obj.detach()


def fit(forward: Callable[[torch.Tensor], torch.Tensor], module: nn.Module, train: LoopConfig, targets: Targets,
        settings: RiskSettings, order_seed: int, desc: str, ctx: JobContext, state: dict | None = None) -> list[float]:
    """Train ``module`` for ``train.epochs`` over ``targets.rows`` in shuffled mini-batches (its
    optimizer and per-step schedule from ``train``), in the job's context ``ctx``;
    ``forward(rows)`` returns the outputs for those training examples. Returns the mean
    reported risk per epoch. ``state``: what ``forward`` draws from (e.g. an augmentation's
    generator), for checkpoints."""
    gen = torch_generator(order_seed)
    min_size = 2 if has_batchnorm(module) else 1
    opt = build_optimizer(train.optimizer, module)
    sched = build_scheduler(train.schedule, opt, max(1, -(-len(targets.rows) // train.batch_size)), train.epochs)

    def step(pos: torch.Tensor, epoch: int) -> Step:
        obj, value = risk_step(forward(targets.rows[pos]), targets, pos, settings)
        return Step(obj, value=value, weight=len(pos))

    history = Trainer([module], opt, sched, desc, state={"order": gen, **(state or {})}, ctx=ctx).run(
        train.epochs, lambda epoch: batches(len(targets.rows), train.batch_size, gen, min_size=min_size), step)
    return [e.mean for e in history]


def fit_head(head: nn.Module, features: Callable[[torch.Tensor], torch.Tensor], train: LoopConfig,
             targets: Targets, settings: RiskSettings, order_seed: int, desc: str, ctx: JobContext,
             state: dict | None = None) -> list[float]:
    """Train ``head`` on ``features(rows)`` (fixed or recomputed per batch) with a risk."""
    return fit(lambda rows: head(features(rows)), head, train, targets, settings, order_seed, desc, ctx, state)


def train_network(model: nn.Module, train: NetworkLoopConfig, targets: Targets, settings: RiskSettings,
                  data: DownstreamData, order_seed: int, aug_seed: int, ctx: JobContext, desc: str,
                  mix: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None) -> list[float]:
    """Train a whole network (images -> score) with a risk, on the training views of
    ``train.augment`` (None: the images as they are); returns the mean risk per epoch.
    ``mix(x, rows)``, when given, transforms each training batch of (augmented, normalized)
    inputs before the forward pass (nnPU with MixUp); its random generators, if any, in its
    ``checkpoint_state`` attribute (name -> generator), for checkpoints."""
    aug = build_augment(train.augment, data.mean, data.std, "augment") if train.augment is not None else None
    aug_gen = torch_generator(aug_seed)
    device = ctx.device
    x_train = accel.data_on_device(data.x_train, device)

    def forward(rows):
        xb = x_train[rows].to(device)
        x = aug(xb, aug_gen) if aug is not None else to_float(xb, data.mean, data.std)
        return model(accel.input_format(x if mix is None else mix(x, rows)))

    return fit(forward, model, train, targets, settings, order_seed, desc, ctx,
               state={"augment": aug_gen, **getattr(mix, "checkpoint_state", {})})


def train_and_evaluate(model: nn.Module, train: NetworkLoopConfig, targets: Targets, settings: RiskSettings,
                       data: DownstreamData, order_seed: int, aug_seed: int, ctx: JobContext, desc: str,
                       mix: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None
                       ) -> tuple[dict[str, float], list[float]]:
    """:func:`train_network`, then the test metrics of the network (score > 0: positive).
    Shared by ``finetune`` and the end-to-end risk-based PU methods."""
    hist = train_network(model, train, targets, settings, data, order_seed, aug_seed, ctx, desc, mix)
    return evaluate_network(model, data, ctx), hist
