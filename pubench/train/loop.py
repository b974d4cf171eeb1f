"""The one training loop: contrastive pre-training (:mod:`pubench.frameworks.pretrain`), the
graph trainer (:mod:`pubench.frameworks.infograph`), the risk-trained classifiers (linear
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

A trainer runs in the job's context (``Trainer(..., ctx=...)``,
:class:`pubench.train.context.JobContext`; outside a job :data:`~pubench.train.context.PLAIN`):
its accelerator settings (precision, compile, the throughput table), its checkpoint session
and preflight's step cap. After each epoch the :class:`LoopCallback` objects run (always
:class:`Progress`: the epoch, loss and learning rate), then, when the context has a
session, the checkpoint of :mod:`pubench.train.checkpoint`: every stateful part of the run
must be the trainer's (modules, optimizer, scheduler) or registered in
``Trainer(state=...)`` (generators, hook state, queues), so that a resumed run continues
bit for bit. Neither draws random numbers.

With a step cap in its context (``pubench preflight``), a trainer runs only the epochs and
the few steps the :class:`~pubench.train.context.StepCap` allows (its first and last
epoch) and :func:`predict` computes one chunk; the cap measures them. Without one nothing
changes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import nn

from pubench.errors import JobInterrupted
from pubench.train import accel, checkpoint, prefix_cache
from pubench.train.context import JobContext
from pubench.train.augment import build_augment
from pubench.train.optim import OptimizerConfig, ScheduleConfig, check_optimizer, check_schedule
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
    """Runs epochs of optimizer steps over ``modules`` in the job's context ``ctx`` (see the
    module docstring). ``optimizer`` and ``scheduler`` are attributes so that a hook may
    replace them.

    ``state``: the other stateful parts of the run, by name, that a checkpoint must hold
    for a resumed run to continue bit for bit (:mod:`pubench.train.checkpoint`): random
    generators the batches or steps draw from, queues and memory banks (a framework's
    ``state_dict``), the dicts / lists the hooks fill. ``callbacks``: more
    :class:`LoopCallback` objects (a :class:`Progress` is always there). ``prefix_key``:
    the run is a prefix of a longer one (:mod:`pubench.train.prefix_cache`): it may continue
    from the state another run of that key stored, and stores its own; ``prefix_start`` is
    then the epoch it started from (0: from the beginning)."""

    def __init__(self, modules: Sequence[nn.Module], optimizer: torch.optim.Optimizer,
                 scheduler: Any = None, desc: str = "train", state: dict[str, Any] | None = None, *,
                 ctx: JobContext, callbacks: Sequence["LoopCallback"] = (), prefix_key: str | None = None):
        self.modules, self.optimizer, self.scheduler, self.desc = list(modules), optimizer, scheduler, desc
        self.ctx = ctx
        self.state = dict(state or {})
        self.callbacks = list(callbacks)
        self.prefix_key, self.prefix_start = prefix_key, 0

    def state_dict(self) -> dict[str, Any]:
        return {"modules": [m.state_dict() for m in self.modules], "optimizer": self.optimizer.state_dict(),
                "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
                "state": {k: checkpoint.object_state(v) for k, v in self.state.items()}}

    def misfit(self, saved: Any) -> str | None:
        """Why ``saved`` (a checkpoint's trainer state) is not this trainer's, checked before
        anything is loaded (None when it fits): other modules, tensors of other shapes, other
        registered state, an optimizer or scheduler state that is not a mapping."""
        if not isinstance(saved, dict) or not isinstance(saved.get("modules"), list) \
                or not isinstance(saved.get("state"), dict) or not isinstance(saved.get("optimizer"), dict) \
                or not isinstance(saved.get("scheduler"), dict if self.scheduler is not None else type(None)):
            return "it holds no trainer state of this shape"
        if len(saved["modules"]) != len(self.modules) or set(saved["state"]) != set(self.state) or any(
                not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values())
                or {k: tuple(v.shape) for k, v in sd.items()} != {k: tuple(v.shape) for k, v in m.state_dict().items()}
                for m, sd in zip(self.modules, saved["modules"])):
            return "it holds other modules or state"
        return None

    def load_state_dict(self, saved: dict[str, Any]) -> None:
        # check the shapes first: a failed load must not leave the modules half restored
        why = self.misfit(saved)
        if why is not None:
            raise ValueError(f"{self.desc}: {why}")
        for m, sd in zip(self.modules, saved["modules"]):
            m.load_state_dict(sd)
        self.optimizer.load_state_dict(saved["optimizer"])
        if self.scheduler is not None:
            self.scheduler.load_state_dict(saved["scheduler"])
        for k, v in self.state.items():
            checkpoint.load_object_state(v, saved["state"][k])

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
        session = self.ctx.session
        stage = session.next_stage(self.desc) if session is not None else None
        history: list[EpochStats] = []
        first = 0
        if session is not None:
            saved = session.load(stage, self.desc, epochs)
            if saved is not None and (why := self.misfit(saved["trainer"]) or _rng_misfit(saved["rng"])):
                session.discard(stage, why)  # nothing was loaded: starting over gives a clean run's numbers
                saved = None
            if saved is not None:
                try:
                    self.restore(saved)
                except Exception as exc:
                    session.path(stage).unlink(missing_ok=True)
                    raise RuntimeError(f"{self.desc}: the checkpoint {session.path(stage)} does not fit this run "
                                       f"({exc}); deleted: the next run starts this stage over") from exc
                history = [EpochStats(**h) for h in saved["history"]]
                first = saved["epoch"]
        if first == 0 and self.prefix_key is not None:
            shared = prefix_cache.load(self.prefix_key, epochs)
            if shared is not None and not (self.misfit(shared["trainer"]) or _rng_misfit(shared["rng"])):
                self.restore(shared)
                history = [EpochStats(**h) for h in shared["history"]]
                first = self.prefix_start = shared["epoch"]
        cap, settings = self.ctx.cap, self.ctx.accel
        device = accel.module_device(self.modules)
        fast = self.ctx.profile.fast  # the fast numerics profile: channels_last and compiled everywhere
        if fast:
            settings = dataclasses.replace(settings, compile=True)
        accel.prepare_modules(self.modules, device, settings.compile, channels_last=fast)
        # modules the steps run without training them (MoCo's key encoder): the same memory format
        accel.prepare_modules([v for v in self.state.values() if isinstance(v, nn.Module)], device, compile=fast,
                              channels_last=fast)
        examples, seconds = 0.0, 0.0
        callbacks = [Progress(self.desc, session.label if session is not None else ""), *self.ctx.callbacks,
                     *self.callbacks]
        for cb in callbacks:
            cb.begin(self, epochs, first)
        if session is not None:
            session.in_loop += 1
        if cap is not None:
            cap.begin(self, epochs - first, device)
        try:
            for epoch in range(first, epochs) if cap is None else cap.epochs(first, epochs):
                t0 = time.perf_counter()
                if start_epoch is not None:
                    start_epoch(epoch)
                for m in self.modules:
                    m.train()
                total, weight, steps, sums = 0.0, 0, 0, {}
                for batch in batches(epoch) if cap is None else cap.batches(batches(epoch)):
                    with contextlib.nullcontext() if cap is None else cap.step():
                        with accel.autocast(device, settings.precision):
                            s = step(batch, epoch)
                        out = self.optimize(s, epoch)
                    total += out.pop("value") * s.weight
                    weight += s.weight
                    steps += 1
                    for k, v in out.items():
                        sums[k] = sums.get(k, 0.0) + v
                stats = EpochStats(epoch, total / max(1, weight), sums, steps, time.perf_counter() - t0)
                history.append(stats)
                examples, seconds = examples + weight, seconds + stats.seconds
                if end_epoch is not None:
                    end_epoch(stats)
                for cb in callbacks:
                    cb.epoch_end(self, stats, epochs)
                if session is not None and session.wants_save(epoch + 1, epochs):
                    session.save(stage, self.desc, epochs, epoch + 1, self.state_dict(),
                                 [dataclasses.asdict(h) for h in history])
                    if session.stop_signal is not None:
                        raise JobInterrupted(session.stop_signal)
                if cap is not None and cap.epoch_end(stats):
                    break
            if self.prefix_key is not None and epochs > first and cap is None:
                prefix_cache.store(self.prefix_key, epochs, self.state_dict(), checkpoint.global_rng_state(),
                                   [dataclasses.asdict(h) for h in history])
        finally:
            if cap is not None:
                cap.end(self)
            if session is not None:
                session.in_loop -= 1
            if seconds > 0:
                accel.record_throughput(settings, self.desc, examples, seconds)
            for cb in callbacks:
                cb.end(self)
        return history

    def restore(self, saved: dict[str, Any]) -> None:
        """Load a checkpoint's trainer state and global random states (on the modules' device)."""
        self.load_state_dict(saved["trainer"])
        checkpoint.set_global_rng_state(saved["rng"])


def _rng_misfit(rng: Any) -> str | None:
    """Why ``rng`` is not what :func:`checkpoint.global_rng_state` saves (None when it is)."""
    if not isinstance(rng, dict) or not isinstance(rng.get("torch"), torch.Tensor) \
            or not isinstance(rng.get("numpy"), tuple) or not isinstance(rng.get("python"), tuple):
        return "it holds no random states of this shape"
    return None


# ------------------------------------------------------------------ callbacks
class LoopCallback:
    """Called by :meth:`Trainer.run`: ``begin`` before the first epoch to run (``first`` > 0
    on a resumed run), ``epoch_end`` after each epoch (after the ``end_epoch`` hook),
    ``end`` when the run stops (also on an error). Callbacks must draw no random numbers
    and change no state the numbers depend on."""

    def begin(self, trainer: Trainer, epochs: int, first: int) -> None:
        pass

    def epoch_end(self, trainer: Trainer, stats: EpochStats, epochs: int) -> None:
        pass

    def end(self, trainer: Trainer) -> None:
        pass


class Progress(LoopCallback):
    """Epoch progress with the loss and learning rate: a tqdm bar when stderr is a terminal;
    otherwise one line at most every ``PUBENCH_PROGRESS_SECONDS`` seconds (default 60), so
    a log file gets a line now and then per long job and nothing from a short one.
    ``PUBENCH_PROGRESS=0`` (``pubench run --no-progress``) turns both off."""

    def __init__(self, desc: str, label: str = ""):
        self.desc, self.label = desc, label
        self.bar = None
        self.enabled = os.environ.get("PUBENCH_PROGRESS", "1") != "0"
        self.every_s = float(os.environ.get("PUBENCH_PROGRESS_SECONDS", "60"))

    def begin(self, trainer: Trainer, epochs: int, first: int) -> None:
        self.t0 = self.last = time.monotonic()
        self.first = first
        if self.enabled and show_progress() and epochs > first:
            from tqdm import tqdm

            self.bar = tqdm(total=epochs, initial=first, desc=self.desc, leave=False, unit="epoch")

    def epoch_end(self, trainer: Trainer, stats: EpochStats, epochs: int) -> None:
        lr = trainer.optimizer.param_groups[0]["lr"]
        if self.bar is not None:
            self.bar.set_postfix({"loss": f"{stats.mean:.4g}", "lr": f"{lr:.4g}"}, refresh=False)
            self.bar.update()
            return
        now = time.monotonic()
        if not self.enabled or now - self.last < self.every_s or stats.epoch + 1 == epochs:
            return
        self.last = now
        done = stats.epoch + 1 - self.first
        eta = (now - self.t0) / done * (epochs - stats.epoch - 1)
        who = f"{self.label}: " if self.label else ""
        print(f"pubench: {who}{self.desc} epoch {stats.epoch + 1}/{epochs} loss {stats.mean:.4g} lr {lr:.4g} "
              f"({now - self.t0:.0f}s, about {eta:.0f}s left)", file=sys.stderr, flush=True)

    def end(self, trainer: Trainer) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


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


def predict(fn: Callable[[torch.Tensor], torch.Tensor], n: int, ctx: JobContext, chunk: int = 1024) -> torch.Tensor:
    """``fn(idx)`` over ``range(n)`` in chunks, concatenated on the CPU (with a step cap in
    ``ctx``: what the cap returns, one chunk's outputs repeated). The chunks run under
    ``torch.inference_mode`` (the same kernels as ``no_grad``, less bookkeeping); the result
    is an ordinary tensor (concatenated outside it), so a caller may train on it."""
    if ctx.cap is not None and n > 0:
        with torch.no_grad():
            return ctx.cap.predict(fn, n, chunk)
    with torch.inference_mode():
        outs = [fn(torch.arange(i, min(n, i + chunk))).float().cpu() for i in range(0, n, chunk)]
    return torch.cat(outs) if outs else torch.zeros(0)


# ------------------------------------------------------------------ progress
def show_progress() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


# ------------------------------------------------------------------ the train block of a spec
class LoopConfig(Protocol):
    """What a loop config gives the risk-trained classifiers (:mod:`pubench.pu.objective`):
    the budget and the optimization, typed (:class:`TrainConfig`, a downstream probe's
    config)."""

    @property
    def epochs(self) -> int: ...

    @property
    def batch_size(self) -> int: ...

    @property
    def optimizer(self) -> OptimizerConfig: ...

    @property
    def schedule(self) -> ScheduleConfig: ...


class NetworkLoopConfig(LoopConfig, Protocol):
    """A loop config that also gives the training views of a network trained on images
    (``augment``; None: the images as they are)."""

    @property
    def augment(self) -> dict | None: ...


@dataclass(frozen=True)
class TrainConfig:
    """A spec's ``train`` block (end-to-end PU methods): epochs, batch size, optimizer,
    per-step schedule and the optional augmentation of the training images. Built by
    :func:`pubench.utils.config.build_config`, which parses the optimizer and the schedule
    with it (their checks: :func:`check_loop_config`)."""

    epochs: int
    batch_size: int
    optimizer: OptimizerConfig
    schedule: ScheduleConfig = ScheduleConfig()
    augment: dict | None = None         # training views (default: none)
    precision: str | None = None        # fp32 (absent) or bf16 autocast: pubench.train.accel
    compile: bool | None = None         # torch.compile the trained modules (absent: off)


def check_loop_config(cfg, where: str) -> None:
    """Validate the fields every training loop config shares: epochs, batch_size, optimizer,
    schedule and the optional training-view augmentation."""
    if cfg.epochs < 0 or cfg.batch_size < 1:
        raise ConfigError(f"{where}: epochs must be >= 0 and batch_size >= 1")
    check_optimizer(cfg.optimizer, f"{where}.optimizer")
    check_schedule(cfg.schedule, f"{where}.schedule")
    if cfg.augment is not None:
        build_augment(cfg.augment, [0.0], [1.0], f"{where}.augment")
    accel.check_precision(getattr(cfg, "precision", None), f"{where}.precision")
    accel.check_compile(getattr(cfg, "compile", None), f"{where}.compile")
