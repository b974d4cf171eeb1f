"""Contrastive pre-training: two augmented views per image, any ``pubench.losses`` loss.

Framework ``simclr`` (Chen et al. 2020, :mod:`pubench.frameworks.simclr`; interface
:class:`pubench.frameworks.base.Framework`): a batch of ``b``
source images gives ``2b`` views (two independent draws of the augmentation); both go
through encoder + projector in one forward pass (so BatchNorm sees the ``2b`` views), and
the loss gets the projections ``z1, z2`` (``(b, d)`` each). Every other view is a negative.

Loss selection: ``loss: {name, **hyperparameters}``. The loss's signature is inspected:
``labeled=`` gets the batch's labeled-positive mask (``observed == 1``) and ``labels=`` the
observed labels (PU: 1 / 0; PNU: 1 / 0 / -1). A loss that takes ``prior`` and is not given
one gets the run's class prior (recorded in the history). Other hyperparameters have no
defaults (the loss raises if one is missing).

Scheduled hyperparameters (BCL, 002 App. B.2): a key ``<p>_schedule`` replaces ``<p>``;
the value used in epoch ``e`` (counted from 0) is

* a list ``[{until_epoch: E1, value: v1}, {until_epoch: E2, value: v2}, ...]``: the value
  of the first entry with ``e < until_epoch`` (the last entry's value after that);
* ``{kind: linear, start: s, per_epoch: d, update_every: k}``: ``s + d * (k * floor(e / k))``
  (``update_every`` defaults to 1).

Frameworks ``moco`` (:mod:`pubench.frameworks.moco`, key queue) and ``cmc``
(:mod:`pubench.frameworks.cmc`, memory bank) contrast against negatives that are not the other
views of the batch: the loss must declare a logits form (``from_logits``; the losses with a
label argument have none) and gets ``(pos_logits, neg_logits, neg_mask)`` from the
framework, with its hyperparameters (scheduled ones included) as in the two-view form.

``eval_at_epoch: E`` stops after ``E`` epochs of an ``epochs``-long run (the lr schedule
still spans ``epochs``): the checkpoint of epoch ``E`` of the full run, evaluated downstream.
Such a run continues from the latest earlier epoch of the same run another job stored
(``prefix_key``, :mod:`pubench.train.prefix_cache`), with the numbers of a run from epoch 0.

Batches: a fresh permutation per epoch; incomplete last batches are dropped (SimCLR),
unless the data set is smaller than one batch (then one batch of everything). The epochs
run through :class:`pubench.train.loop.Trainer`.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from pubench.frameworks.base import FRAMEWORKS, Framework
from pubench.losses import LOSSES, logits_form
from pubench.train import accel
from pubench.train.augment import build_augment
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, batches
from pubench.train.optim import (
    OptimizerConfig,
    ScheduleConfig,
    build_optimizer,
    build_scheduler,
    check_optimizer,
    check_schedule,
)
from pubench.utils.config import ConfigError
from pubench.utils.seeding import sub_seeds, torch_generator

LABEL_ARGS = ("labeled", "labels")
NOT_HYPER = ("z1", "z2", "reduction", *LABEL_ARGS)


@dataclass(frozen=True)
class PretrainConfig:
    framework: dict
    loss: dict
    epochs: int
    batch_size: int
    optimizer: OptimizerConfig
    schedule: ScheduleConfig = ScheduleConfig()
    augment: dict = field(default_factory=lambda: {"name": "simclr"})
    eval_at_epoch: int | None = None   # stop after this many epochs (schedule still spans `epochs`)
    precision: str | None = None       # fp32 (absent) or bf16 autocast: pubench.train.accel
    compile: bool | None = None        # torch.compile the trained modules (absent: off)


# ------------------------------------------------------------------ scheduled loss params
def schedule_value(spec: Any, epoch: int, where: str = "schedule") -> float:
    """The value of a ``<p>_schedule`` at ``epoch`` (see the module docstring)."""
    if isinstance(spec, list):
        if not spec:
            raise ConfigError(f"{where}: empty schedule")
        last = -math.inf
        for i, item in enumerate(spec):
            if not isinstance(item, dict) or set(item) != {"until_epoch", "value"}:
                raise ConfigError(f"{where}[{i}]: expected {{until_epoch, value}}, got {item!r}")
            if item["until_epoch"] <= last:
                raise ConfigError(f"{where}: until_epoch must increase")
            last = item["until_epoch"]
        for item in spec:
            if epoch < item["until_epoch"]:
                return float(item["value"])
        return float(spec[-1]["value"])
    if isinstance(spec, dict):
        if spec.get("kind") != "linear":
            raise ConfigError(f"{where}: kind must be 'linear' (or give a list of until_epoch steps)")
        extra = set(spec) - {"kind", "start", "per_epoch", "update_every"}
        if extra or not {"start", "per_epoch"} <= set(spec):
            raise ConfigError(f"{where}: linear schedule is {{kind, start, per_epoch, update_every}}")
        k = int(spec.get("update_every", 1))
        if k < 1:
            raise ConfigError(f"{where}.update_every must be >= 1")
        return float(spec["start"]) + float(spec["per_epoch"]) * (k * (epoch // k))
    raise ConfigError(f"{where}: expected a list of steps or a {{kind: linear}} mapping, got {spec!r}")


class LossCall:
    """A loss by name with its fixed, scheduled and label arguments resolved."""

    def __init__(self, cfg: dict, prior: float | None, where: str = "pretrain.loss"):
        self.fn = LOSSES.named(cfg, where)
        self.name = cfg["name"]
        sig = inspect.signature(self.fn).parameters
        self.label_arg = next((a for a in LABEL_ARGS if a in sig), None)
        hyper = {k for k in sig if k not in NOT_HYPER}
        self.fixed: dict[str, Any] = {}
        self.schedules: dict[str, Any] = {}
        for k, v in cfg.items():
            if k == "name":
                continue
            if k.endswith("_schedule"):
                p = k[: -len("_schedule")]
                if p not in hyper:
                    raise ConfigError(f"{where}.{k}: loss {self.name!r} has no parameter {p!r}")
                if p in cfg:
                    raise ConfigError(f"{where}: give either {p} or {k}, not both")
                schedule_value(v, 0, f"{where}.{k}")
                self.schedules[p] = v
            elif k in hyper:
                self.fixed[k] = v
            else:
                raise ConfigError(f"{where}: loss {self.name!r} takes no {k!r} (its parameters: {sorted(hyper)})")
        self.prior_filled = False
        if "prior" in hyper and "prior" not in self.fixed and "prior" not in self.schedules:
            if prior is None:
                raise ConfigError(f"{where}: loss {self.name!r} needs a prior and the split gives none")
            self.fixed["prior"] = float(prior)
            self.prior_filled = True
        required = {k for k, p in sig.items() if k not in NOT_HYPER and p.default is inspect.Parameter.empty}
        missing = required - set(self.fixed) - set(self.schedules)
        if missing:
            raise ConfigError(f"{where}: loss {self.name!r} needs {sorted(missing)}")

    def require_logits_form(self, framework: str, where: str = "pretrain.loss") -> None:
        """Fail unless the loss can run on a framework's logits (queue / memory bank)."""
        if logits_form(self.name) is None:
            raise ConfigError(f"{where}.name: framework {framework!r} needs a loss with a logits form; "
                              f"{self.name!r} has none")
        if self.label_arg is not None:
            raise ConfigError(f"{where}.name: framework {framework!r} gives no labels to its loss; "
                              f"{self.name!r} needs {self.label_arg}")

    def kwargs(self, epoch: int) -> dict[str, Any]:
        out = dict(self.fixed)
        for p, spec in self.schedules.items():
            out[p] = schedule_value(spec, epoch)
        return out

    def __call__(self, z1, z2, observed: torch.Tensor | None, epoch: int) -> torch.Tensor:
        kw = self.kwargs(epoch)
        if self.label_arg == "labeled":
            kw["labeled"] = (observed == 1) if observed is not None else torch.zeros(z1.shape[0], dtype=torch.bool)
        elif self.label_arg == "labels":
            if observed is None:
                raise ConfigError(f"loss {self.name!r} needs labels; the split has none")
            kw["labels"] = observed
        return self.fn(z1, z2, **kw)

    def on_logits(self, pos: torch.Tensor, neg: torch.Tensor, neg_mask: torch.Tensor | None,
                  epoch: int) -> torch.Tensor:
        """The loss's logits form (mean over the anchors) with the hyperparameters of ``epoch``."""
        fn = logits_form(self.name)
        takes = inspect.signature(fn).parameters
        kw = {k: v for k, v in self.kwargs(epoch).items() if k in takes}
        return fn(pos, neg, neg_mask=neg_mask, **kw)


# ------------------------------------------------------------------ frameworks
def framework_class(cfg: dict, where: str = "pretrain.framework") -> type[Framework]:
    return FRAMEWORKS.named(cfg, where)


def build_framework(cfg: dict, encoder, projector, where: str = "pretrain.framework"):
    cls = framework_class(cfg, where)
    return cls(encoder, projector, cls.config(cfg, where))


def build_models(cfg: dict, build_encoder, build_projector, in_channels: int, seeds: tuple[int, int],
                 mean, std, where: str = "pretrain.framework") -> tuple[nn.Module, nn.Module]:
    """Encoder and projector shaped by the framework (:meth:`Framework.build_encoder`)."""
    cls = framework_class(cfg, where)
    fcfg = cls.config(cfg, where)
    encoder = cls.build_encoder(fcfg, build_encoder, in_channels, seeds[0], mean, std)
    return encoder, cls.build_projector(fcfg, build_projector, encoder, seeds[1])


def check_pretrain_config(cfg: PretrainConfig, prior: float | None = None) -> LossCall:
    """Validate everything that does not need the model (fail before any work)."""
    if cfg.epochs < 0 or cfg.batch_size < 2:
        raise ConfigError("pretrain: epochs must be >= 0 and batch_size >= 2")
    if cfg.eval_at_epoch is not None and not 0 <= cfg.eval_at_epoch <= cfg.epochs:
        raise ConfigError(f"pretrain.eval_at_epoch must be in [0, epochs = {cfg.epochs}], got {cfg.eval_at_epoch}")
    check_optimizer(cfg.optimizer, "pretrain.optimizer")
    check_schedule(cfg.schedule, "pretrain.schedule")
    accel.check_precision(cfg.precision, "pretrain.precision")
    accel.check_compile(cfg.compile, "pretrain.compile")
    build_augment(cfg.augment, [0.0], [1.0], "pretrain.augment")
    if "name" not in cfg.framework or cfg.framework["name"] not in FRAMEWORKS:
        raise ConfigError(f"pretrain.framework: unknown framework {cfg.framework.get('name')!r} "
                          f"(implemented: {FRAMEWORKS.names()})")
    cls = framework_class(cfg.framework)
    cls.check_batch(cls.config(cfg.framework, "pretrain.framework"), cfg.batch_size, "pretrain.framework")
    loss = LossCall(cfg.loss, prior)
    if cls.negatives == "logits":
        loss.require_logits_form(cfg.framework["name"])
    return loss


def pretrain_step(framework: Framework, loss: LossCall, aug, x: torch.Tensor, observed: torch.Tensor | None,
                  aug_gen: torch.Generator, device: torch.device | str = "cpu"):
    """``step(idx, epoch) -> Step`` of pre-training: views of the images ``idx``, then the
    loss on the framework's projections (two-view form) or logits (logits form)."""

    def step(idx: torch.Tensor, epoch: int) -> Step:
        xb = x[idx].to(device)
        views = [accel.input_format(aug(xb, aug_gen)) for _ in range(framework.views_per_image)]
        if framework.negatives == "logits":
            pos, neg, mask = framework.logits(views, idx.to(device), loss.kwargs(epoch)["temperature"])
            return Step(loss.on_logits(pos, neg, mask, epoch), weight=len(idx), after_backward=framework.after_step)
        z1, z2 = framework.projections(*views)
        obs = observed[idx].to(device) if observed is not None else None
        return Step(loss(z1, z2, obs, epoch), weight=len(idx))

    return step


def pretrain(encoder: nn.Module, projector: nn.Module, x: torch.Tensor, observed: torch.Tensor | None,
             cfg: PretrainConfig, *, normalization: tuple[list[float], list[float]], prior: float | None, seed: int,
             ctx: JobContext, prefix_key: str | None = None) -> dict[str, Any]:
    """Train ``encoder`` + ``projector`` in place on uint8 images ``x`` (n, C, H, W), in the
    job's context ``ctx`` (its device; the stage's precision and compile from ``cfg``).

    ``observed``: per-image labels the loss may use (1 labeled positive, 0 / -1 as in the
    Split), or None. ``normalization``: the (mean, std) per channel the views are normalized
    with. ``seed`` drives data order and augmentations. ``prefix_key``: the run's key in the
    prefix cache (runs with ``eval_at_epoch``). Returns a history dict.
    """
    loss = check_pretrain_config(cfg, prior)
    framework = build_framework(cfg.framework, encoder, projector)
    aug = build_augment(cfg.augment, *normalization, "pretrain.augment")
    n = x.shape[0]
    if n < 2:
        raise ValueError("pre-training needs at least 2 images")
    bs = min(cfg.batch_size, n)
    steps_per_epoch = max(1, n // bs)
    params = [p for m in framework.modules() for p in m.parameters()]
    opt = build_optimizer(cfg.optimizer, params)
    sched = build_scheduler(cfg.schedule, opt, steps_per_epoch, cfg.epochs)
    order_seed, aug_seed, framework_seed = sub_seeds(seed, 3)
    order_gen, aug_gen = torch_generator(order_seed), torch_generator(aug_seed)
    framework.prepare(n, torch_generator(framework_seed))
    history: dict[str, Any] = {"loss": [], "steps": 0, "epochs_run": 0, "batch_size": bs,
                               "steps_per_epoch": steps_per_epoch, "loss_name": loss.name,
                               "loss_kwargs": loss.kwargs(0), "prior_filled": loss.prior_filled}
    if loss.schedules:
        history["scheduled"] = {p: [loss.kwargs(e)[p] for e in range(cfg.epochs)] for p in loss.schedules}

    device = ctx.device
    step = pretrain_step(framework, loss, aug, accel.data_on_device(x, device), observed, aug_gen, device)
    run_epochs = cfg.epochs if cfg.eval_at_epoch is None else cfg.eval_at_epoch
    state = {"order": order_gen, "augment": aug_gen, **{f"framework.{k}": v for k, v in framework.checkpoint_state().items()}}
    trainer = Trainer(framework.modules(), opt, sched, f"pretrain {loss.name}", state=state, prefix_key=prefix_key,
                      ctx=accel.stage(ctx, cfg.precision, cfg.compile, "pretrain"))
    epochs = trainer.run(run_epochs, lambda epoch: batches(n, bs, order_gen, drop_last=True, min_size=2), step)
    history["loss"] = [e.mean for e in epochs]
    history["steps"] = sum(e.steps for e in epochs)
    history["epochs_run"] = len(epochs)
    if prefix_key is not None:
        history["prefix_cache"] = {"key": prefix_key, "started_at_epoch": trainer.prefix_start}
    return history
