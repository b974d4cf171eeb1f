"""The one training loop: contrastive pre-training (:mod:`pubench.train.pretrain`), the
graph trainer (:mod:`pubench.train.infograph`), the risk-trained classifiers (linear
probe, fine-tuning, end-to-end PU methods: :mod:`pubench.pu.objective`) and vPU
(:mod:`pubench.pu.vpu`) all run through :class:`Trainer`.

A trainer supplies two callbacks and, optionally, two hooks:

* ``batches(epoch)``: the epoch's batches, any objects, iterated lazily (random draws
  happen in iteration order, interleaved with the steps);
* ``step(batch, epoch) -> Step``: the forward pass and the objective;
* ``start_epoch(epoch)``: before the epoch's batches are drawn (e.g. vPU's learning-rate
  halving, which may replace :attr:`Trainer.optimizer`);
* ``end_epoch(stats)``: after the epoch (e.g. validation, model selection).

Per epoch the loop puts every module in train mode; per step it checks that the
objective is finite, clears the gradients, back-propagates, steps the optimizer and the
scheduler (schedules are per step), then calls ``Step.after_backward`` (which may read
gradients). The epoch's :class:`EpochStats` hold the mean of the steps' reported values
weighted by ``Step.weight`` (e.g. the batch size) and the sums of their ``extra`` values.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from pubench.train.augment import build_augment
from pubench.train.optim import optimizer_config, schedule_config
from pubench.utils.config import ConfigError


@dataclass
class Step:
    """What one step computed: ``loss`` is back-propagated; ``value`` is reported (default:
    the loss; nnPU reports its risk, not its surrogate); ``extra`` values are summed over the
    epoch as they are; ``after_backward()`` returns more of them once gradients exist."""

    loss: torch.Tensor
    value: torch.Tensor | float | None = None
    weight: float = 1
    extra: dict[str, Any] = field(default_factory=dict)
    after_backward: Callable[[], dict[str, float]] | None = None


@dataclass
class EpochStats:
    epoch: int                  # 0-based
    mean: float                 # sum(value * weight) / sum(weight) over the steps (0 without steps)
    sums: dict[str, float]      # per extra key, the sum over the steps
    steps: int
    seconds: float


class Trainer:
    """Runs epochs of optimizer steps over ``modules`` (see the module docstring).
    ``optimizer`` and ``scheduler`` are attributes so that a hook may replace them."""

    def __init__(self, modules: Sequence[nn.Module], optimizer: torch.optim.Optimizer,
                 scheduler: Any = None, desc: str = "train"):
        self.modules, self.optimizer, self.scheduler, self.desc = list(modules), optimizer, scheduler, desc

    def optimize(self, step: Step, epoch: int) -> dict[str, float]:
        """One optimizer step on ``step.loss``; returns the step's reported values."""
        if not torch.isfinite(step.loss):
            raise FloatingPointError(f"{self.desc}: the loss is {float(step.loss)} at epoch {epoch + 1}")
        self.optimizer.zero_grad(set_to_none=True)
        step.loss.backward()
        self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()
        value = step.loss.detach() if step.value is None else step.value
        out = {"value": float(value), **{k: float(v) for k, v in step.extra.items()}}
        if step.after_backward is not None:
            out.update(step.after_backward())
        return out

    def run(self, epochs: int, batches: Callable[[int], Iterable[Any]], step: Callable[[Any, int], Step], *,
            start_epoch: Callable[[int], None] | None = None,
            end_epoch: Callable[[EpochStats], None] | None = None) -> list[EpochStats]:
        history: list[EpochStats] = []
        bar = progress(range(epochs), self.desc, total=epochs)
        for epoch in bar:
            t0 = time.perf_counter()
            if start_epoch is not None:
                start_epoch(epoch)
            for m in self.modules:
                m.train()
            total, weight, steps, sums = 0.0, 0, 0, {}
            for batch in batches(epoch):
                s = step(batch, epoch)
                out = self.optimize(s, epoch)
                total += out.pop("value") * s.weight
                weight += s.weight
                steps += 1
                for k, v in out.items():
                    sums[k] = sums.get(k, 0.0) + v
            stats = EpochStats(epoch, total / max(1, weight), sums, steps, time.perf_counter() - t0)
            history.append(stats)
            set_postfix(bar, loss=stats.mean, lr=self.optimizer.param_groups[0]["lr"])
            if end_epoch is not None:
                end_epoch(stats)
        return history


# ------------------------------------------------------------------ batching
def batches(n: int, batch_size: int, gen: torch.Generator, drop_last: bool = False, min_size: int = 1):
    """Index batches of a fresh random permutation of ``range(n)``.

    ``drop_last``: drop an incomplete last batch (kept when it is the only one).
    A trailing batch smaller than ``min_size`` is dropped (BatchNorm needs 2 rows).
    """
    perm = torch.randperm(n, generator=gen)
    out = [perm[i:i + batch_size] for i in range(0, n, batch_size)]
    if len(out) > 1 and (drop_last and len(out[-1]) < batch_size or len(out[-1]) < min_size):
        out = out[:-1]
    return [b for b in out if len(b) >= min_size]


def has_batchnorm(module: nn.Module) -> bool:
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in module.modules())


@torch.no_grad()
def predict(fn: Callable[[torch.Tensor], torch.Tensor], n: int, chunk: int = 1024) -> torch.Tensor:
    """``fn(idx)`` over ``range(n)`` in chunks, concatenated on the CPU."""
    outs = [fn(torch.arange(i, min(n, i + chunk))).float().cpu() for i in range(0, n, chunk)]
    return torch.cat(outs) if outs else torch.zeros(0)


# ------------------------------------------------------------------ progress
def show_progress() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress(iterable, desc: str, total: int | None = None):
    """A tqdm bar over epochs when stderr is a terminal, the bare iterable otherwise."""
    if not show_progress():
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, total=total, leave=False, unit="epoch")


def set_postfix(bar, **kv) -> None:
    if hasattr(bar, "set_postfix"):
        bar.set_postfix({k: f"{v:.4g}" for k, v in kv.items()}, refresh=False)


# ------------------------------------------------------------------ the train block of a spec
@dataclass(frozen=True)
class TrainConfig:
    """A spec's ``train`` block (end-to-end PU methods): epochs, batch size, optimizer,
    per-step schedule and the optional augmentation of the training images."""

    epochs: int
    batch_size: int
    optimizer: dict
    schedule: dict = field(default_factory=lambda: {"name": "constant"})
    augment: dict | None = None         # training views (default: none)


def check_loop_config(cfg, where: str) -> None:
    """Validate the fields every training loop config shares: epochs, batch_size, optimizer,
    schedule and the optional training-view augmentation."""
    if cfg.epochs < 0 or cfg.batch_size < 1:
        raise ConfigError(f"{where}: epochs must be >= 0 and batch_size >= 1")
    optimizer_config(cfg.optimizer, f"{where}.optimizer")
    schedule_config(cfg.schedule, f"{where}.schedule")
    if cfg.augment is not None:
        build_augment(cfg.augment, [0.0], [1.0], f"{where}.augment")
