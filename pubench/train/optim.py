"""Optimizers and learning-rate schedules by config.

* :class:`LARS`: layer-wise adaptive rate scaling, You, Gitman & Ginsburg 2017
  ("Large Batch Training of Convolutional Networks", Algorithm 1). For every parameter
  tensor ``w`` with gradient ``g``, weight decay ``beta``, trust coefficient ``eta``,
  momentum ``m`` and global learning rate ``gamma_t``::

      local_lr = eta * ||w|| / (||g|| + beta * ||w||)
      v <- m * v + gamma_t * local_lr * (g + beta * w)
      w <- w - v

  (``local_lr = 1`` when ``||w||`` or ``||g||`` is 0.) As in SimCLR, biases and
  BatchNorm parameters (every tensor with ``ndim <= 1``) are excluded from both the
  adaptation and the weight decay: for them ``v <- m v + gamma_t g``. SimCLR's
  TensorFlow LARS divides by ``||g + beta w||`` instead of ``||g|| + beta ||w||``; with
  the papers' ``beta = 1e-6`` the two differ by far less than float32 noise. No
  maintained LARS ships with torch; the small ones on PyPI (``torchlars``, the LARS of
  ``pytorch-optimizer``) implement other variants (MAE's) and would add a dependency for
  40 lines, so this one is written here and tested against the formula.
* Schedules, stepped once per optimizer step: ``constant`` and ``cosine`` (SimCLR:
  linear warm-up from ``gamma/W`` to ``gamma`` over ``W = warmup_epochs * steps_per_epoch``
  steps, then ``gamma * 0.5 * (1 + cos(pi * k / (T - W)))`` for the ``k``-th step after
  warm-up, ``T`` the total number of steps) and ``linear`` (the same warm-up, then
  ``gamma * (1 - k / (T - W))``, down to 0 after the last step: the fine-tuning schedule
  of Gunel et al. 2020 / RoBERTa, ``get_linear_schedule_with_warmup`` in transformers).
* :func:`build_optimizer` from an :class:`OptimizerConfig` (``{name: lars | sgd | adam | adamw,
  lr, momentum, weight_decay, ...}``), parsed once with the config that holds it (a typed
  field, then :func:`check_optimizer`; :func:`optimizer_config` for a block that stands
  alone); momentum is required for ``lars``/``sgd`` and refused for Adam.

Optimizers and schedules are registries (:data:`OPTIMIZERS`, :data:`SCHEDULES`): a new one
is a registered function, ``OPTIMIZERS.register(name, uses=(...))`` over ``(params, cfg)
-> torch.optim.Optimizer`` (``uses``: the :class:`OptimizerConfig` options it reads beyond
``lr`` and ``weight_decay``), ``SCHEDULES.register(name, warmup=...)`` over ``(step,
total_steps, warmup_steps) -> multiplier of the base lr``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from pubench.utils.config import ConfigError, build_config
from pubench.utils.registry import Registry


class LARS(torch.optim.Optimizer):
    """LARS (You et al. 2017). Param groups may set ``lars_adapt: False`` (and
    ``weight_decay: 0``) for tensors excluded from the adaptation; :func:`lars_param_groups`
    builds the SimCLR grouping (exclude ``ndim <= 1``)."""

    def __init__(self, params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0,
                 trust_coefficient: float = 1e-3, eps: float = 0.0):
        if lr < 0 or momentum < 0 or weight_decay < 0 or trust_coefficient <= 0:
            raise ValueError("LARS: lr, momentum, weight_decay must be >= 0 and trust_coefficient > 0")
        defaults = dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                        trust_coefficient=trust_coefficient, eps=eps, lars_adapt=True)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, m, wd = group["lr"], group["momentum"], group["weight_decay"]
            eta, eps, adapt = group["trust_coefficient"], group["eps"], group["lars_adapt"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if adapt:
                    w_norm = torch.linalg.vector_norm(p)
                    g_norm = torch.linalg.vector_norm(g)
                    local = eta * w_norm / (g_norm + wd * w_norm + eps)
                    local = torch.where((w_norm > 0) & (g_norm > 0), local, torch.ones_like(local))
                    update = (g + wd * p) * local
                else:
                    update = g + wd * p if wd else g
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                buf = state["momentum_buffer"]
                buf.mul_(m).add_(update, alpha=lr)
                p.sub_(buf)
        return loss


def split_decay_params(model: nn.Module | list[nn.Parameter]) -> tuple[list, list]:
    """(weights with ndim > 1, biases and normalization parameters with ndim <= 1)."""
    params = model.parameters() if isinstance(model, nn.Module) else model
    adapt, rest = [], []
    for p in params:
        if p.requires_grad:
            (adapt if p.ndim > 1 else rest).append(p)
    return adapt, rest


def lars_param_groups(model, weight_decay: float) -> list[dict]:
    adapt, rest = split_decay_params(model)
    groups = [{"params": adapt, "weight_decay": weight_decay, "lars_adapt": True}]
    if rest:
        groups.append({"params": rest, "weight_decay": 0.0, "lars_adapt": False})
    return groups


@dataclass(frozen=True)
class OptimizerConfig:
    name: str
    lr: float
    weight_decay: float = 0.0
    momentum: float | None = None
    trust_coefficient: float | None = None  # lars only (absent: 0.001, You et al. 2017, SimCLR)
    nesterov: bool = False              # sgd only
    betas: list[float] | None = None    # adam / adamw


#: name -> ``(params, OptimizerConfig) -> torch.optim.Optimizer``; ``uses``: the options it reads
OPTIMIZERS = Registry("optimizer")


@OPTIMIZERS.register("lars", uses=("momentum", "trust_coefficient"))
def _lars(params: list, c: OptimizerConfig) -> torch.optim.Optimizer:
    trust = 1e-3 if c.trust_coefficient is None else c.trust_coefficient
    return LARS(lars_param_groups(params, c.weight_decay), lr=c.lr, momentum=c.momentum,
                weight_decay=c.weight_decay, trust_coefficient=trust)


@OPTIMIZERS.register("sgd", uses=("momentum", "nesterov"))
def _sgd(params: list, c: OptimizerConfig) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay, nesterov=c.nesterov)


@OPTIMIZERS.register("adam", uses=("betas",))
def _adam(params: list, c: OptimizerConfig) -> torch.optim.Optimizer:
    return torch.optim.Adam(params, lr=c.lr, betas=tuple(c.betas) if c.betas else (0.9, 0.999),
                            weight_decay=c.weight_decay)


@OPTIMIZERS.register("adamw", uses=("betas",))
def _adamw(params: list, c: OptimizerConfig) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=c.lr, betas=tuple(c.betas) if c.betas else (0.9, 0.999),
                             weight_decay=c.weight_decay)


def check_optimizer(c: OptimizerConfig, where: str = "optimizer") -> OptimizerConfig:
    """The checks of an optimizer config that its types cannot say; returns ``c``."""
    uses = OPTIMIZERS.lookup(c.name, f"{where}.name").uses
    if "momentum" in uses and c.momentum is None:
        raise ConfigError(f"{where}: {c.name} needs 'momentum'")
    if "momentum" not in uses and c.momentum is not None:
        raise ConfigError(f"{where}: {c.name} takes no 'momentum' (use betas)")
    if "trust_coefficient" not in uses and c.trust_coefficient is not None:
        raise ConfigError(f"{where}: trust_coefficient is a LARS option")
    if c.lr <= 0 or c.weight_decay < 0:
        raise ConfigError(f"{where}: lr must be > 0 and weight_decay >= 0")
    return c


def optimizer_config(cfg: dict, where: str = "optimizer") -> OptimizerConfig:
    """Parse and check an optimizer block that stands alone (a config with a typed
    ``optimizer: OptimizerConfig`` field is parsed with it, then :func:`check_optimizer`)."""
    return check_optimizer(build_config(OptimizerConfig, cfg, where), where)


def build_optimizer(c: OptimizerConfig, model: nn.Module | list) -> torch.optim.Optimizer:
    params = list(model.parameters()) if isinstance(model, nn.Module) else list(model)
    return OPTIMIZERS.get(c.name)([p for p in params if p.requires_grad], c)


# ------------------------------------------------------------------ schedules
@dataclass(frozen=True)
class ScheduleConfig:
    name: str = "constant"
    warmup_epochs: float = 0.0    # cosine and linear


#: name -> ``(step, total_steps, warmup_steps) -> multiplier of the base lr``; ``warmup``:
#: whether it takes ``warmup_epochs``
SCHEDULES = Registry("schedule")


@SCHEDULES.register("constant", warmup=False)
def constant_factor(step: int, total_steps: int, warmup_steps: int) -> float:
    """Multiplier of the base lr at every step: 1."""
    return 1.0


def check_schedule(c: ScheduleConfig, where: str = "schedule") -> ScheduleConfig:
    """The checks of a schedule config that its types cannot say; returns ``c``."""
    if not SCHEDULES.lookup(c.name, f"{where}.name").warmup and c.warmup_epochs:
        raise ConfigError(f"{where}: warmup_epochs needs name: "
                          + " or ".join(n for n in SCHEDULES.names() if SCHEDULES.get(n).warmup))
    if c.warmup_epochs < 0:
        raise ConfigError(f"{where}.warmup_epochs must be >= 0")
    return c


def schedule_config(cfg: dict | None, where: str = "schedule") -> ScheduleConfig:
    """Parse and check a schedule block that stands alone (absent: constant)."""
    return check_schedule(build_config(ScheduleConfig, cfg or {}, where), where)


@SCHEDULES.register("cosine", warmup=True)
def cosine_factor(step: int, total_steps: int, warmup_steps: int) -> float:
    """Multiplier of the base lr at (0-based) ``step``: linear warm-up, then cosine to 0."""
    if warmup_steps > 0 and step < warmup_steps:
        return (step + 1) / warmup_steps
    decay = max(1, total_steps - warmup_steps)
    k = min(step - warmup_steps, decay)
    return 0.5 * (1.0 + math.cos(math.pi * k / decay))


@SCHEDULES.register("linear", warmup=True)
def linear_factor(step: int, total_steps: int, warmup_steps: int) -> float:
    """Multiplier of the base lr at (0-based) ``step``: linear warm-up, then linear decay to 0."""
    if warmup_steps > 0 and step < warmup_steps:
        return (step + 1) / warmup_steps
    decay = max(1, total_steps - warmup_steps)
    return max(0.0, 1.0 - (step - warmup_steps) / decay)


def build_scheduler(c: ScheduleConfig, optimizer, steps_per_epoch: int, epochs: int):
    total = max(1, steps_per_epoch * epochs)
    warm = int(round(c.warmup_epochs * steps_per_epoch))
    factor = SCHEDULES.get(c.name)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: factor(step, total, warm))
