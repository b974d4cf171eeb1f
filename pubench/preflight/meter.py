"""The step cap of ``pubench preflight``: what one capped job measures, and its projection.

:class:`Meter` is the :class:`pubench.train.context.StepCap` a preflight worker puts in
a job's context (``JobContext(cap=...)``). Every training loop of the job (a
*stage*: pre-training, a probe, a PU method's training, ...) then runs its first epoch
and its last, each for at most ``steps`` optimizer steps, and counts the batches of its
first epoch without running them; :func:`pubench.train.loop.predict` (feature
extraction, evaluation, per-epoch selection) computes its first chunk only and repeats
it. Everything else of the job runs as it is (data pipeline, model building, k-means,
the SVM grid search).

Projection of a stage with E epochs of B batches (the first epoch's count), steps
timed t_1 (the first: warm-up, cuDNN's choice, allocation) ... t_k:
``t_1 + median(t_2..t_k) x (E x B - 1) + E x per-epoch hooks``, the hooks' ``predict``
calls counted at their full length (one chunk's time x chunks). The job adds its time
outside any stage once, its ``predict`` calls counted at full length. FLOPs (PyTorch's
``FlopCounterMode``: matrix products and convolutions, forward and backward) are
counted on each stage's first step and each ``predict`` chunk and projected alike.

On the CPU each stage also records the process's resident memory when it begins and its
peak when it ends, and prints a line (:data:`STAGE_BEGINS`, :data:`STAGE_ENDS`) as it
begins and ends, so that the parent, when it stops a check for memory, can tell in which
stage (:func:`stopped_in`). A check over its memory budget outside the stages (evaluation)
computes 1/``eval_divisor`` of each ``predict`` chunk and counts it at the whole chunk.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from pubench.train.context import StepCap
from pubench.train.loop import EpochStats

#: the lines a stage prints as it begins and ends (the parent reads them back from the log)
STAGE_BEGINS, STAGE_ENDS = "pubench-preflight: stage begins: ", "pubench-preflight: stage ends: "


def resident() -> tuple[int | None, int | None]:
    """(resident set, its peak so far) of this process in bytes (None where /proc lacks them)."""
    out: dict[str, int] = {}
    try:
        for line in open("/proc/self/status").read().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line[:5]] = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return out.get("VmRSS"), out.get("VmHWM")


def stopped_in(log_lines: Iterable[str]) -> tuple[bool, str | None]:
    """From a stopped check's output: (whether any stage had begun, the stage running when
    it stopped: None before the first stage or between two)."""
    began, running = False, []
    for line in log_lines:  # a marker may follow output that ended without a newline
        if STAGE_BEGINS in line:
            began = True
            running.append(line.split(STAGE_BEGINS, 1)[1].strip())
        elif STAGE_ENDS in line and running:
            running.pop()
    return began, (running[-1] if running else None)


@dataclass
class Stage:
    """One training loop of the capped job."""

    desc: str
    epochs: int                        # epochs the stage would run
    batches_per_epoch: int | None = None  # counted in its first epoch
    step_s: list[float] = field(default_factory=list)
    step_flops: float | None = None    # FLOPs of its first step
    hooks_s: float = 0.0               # per epoch, outside the steps (first epoch; predict at full length)
    hooks_flops: float = 0.0           # per epoch: FLOPs of predict calls inside the epoch, at full length
    ran_s: float = 0.0                 # the capped stage's wall time
    resident_begin: int | None = None  # CPU: the process's resident memory as the stage began (bytes)
    peak_end: int | None = None        # CPU: the process's peak resident memory when it ended (bytes)

    @property
    def steps(self) -> int:
        return self.epochs * (self.batches_per_epoch or 0)

    def projected_s(self) -> float:
        if not self.step_s:
            return self.ran_s
        first = self.step_s[0]
        steady = statistics.median(self.step_s[1:]) if len(self.step_s) > 1 else first
        return first + steady * max(0, self.steps - 1) + self.hooks_s * self.epochs

    def projected_flops(self) -> float:
        return (self.step_flops or 0.0) * self.steps + self.hooks_flops * self.epochs


@dataclass
class _Calls:
    """``predict`` calls of one scope: their actual and their full-length time and FLOPs."""

    actual_s: float = 0.0
    full_s: float = 0.0
    full_flops: float = 0.0

    def add(self, seconds: float, chunks: float, flops: float) -> None:
        self.actual_s += seconds
        self.full_s += seconds * chunks
        self.full_flops += flops * chunks


def _sync(device: torch.device | None) -> None:
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def _counting(on: bool) -> Iterator[list[float]]:
    """FLOPs of the block (``out[0]``) when ``on``."""
    out = [0.0]
    if not on:
        yield out
        return
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        yield out
    out[0] = float(counter.get_total_flops())


class Meter(StepCap):
    """Runs each stage's first and last epoch for at most ``steps`` steps each and
    measures them (module docstring). ``flops``: count FLOPs too. ``clock``: seconds (default
    wall time; a CPU check passes the process's CPU time per thread, which other work on a
    busy machine does not inflate)."""

    def __init__(self, steps: int, flops: bool = True, clock: Callable[[], float] = time.perf_counter,
                 eval_divisor: int = 1):
        if steps < 1 or eval_divisor < 1:
            raise ValueError("steps and eval_divisor must be >= 1")
        self.max_steps, self.flops, self.clock = steps, flops, clock
        self.eval_divisor = eval_divisor  # a predict computes 1/eval_divisor of its chunk, counted at the whole
        self.stages: list[Stage] = []
        self.top = _Calls()               # predict calls outside any stage
        self._open: list[dict[str, Any]] = []  # the running stages (innermost last) and their epoch state
        self.device: torch.device | None = None

    # ---- StepCap
    def begin(self, trainer, epochs: int, device: torch.device) -> None:
        stage = Stage(trainer.desc, epochs)
        if device.type == "cpu":
            stage.resident_begin = resident()[0]
        self.stages.append(stage)
        self.device = device
        print(f"{STAGE_BEGINS}{trainer.desc}", flush=True)
        self._open.append({"stage": stage, "t0": self.clock(), "epoch": 0, "calls": _Calls()})

    def epochs(self, first: int, epochs: int) -> Iterable[int]:
        return [e for e in dict.fromkeys((first, epochs - 1)) if first <= e < epochs]

    def batches(self, batches: Iterable[Any]) -> Iterator[Any]:
        run = self._open[-1]
        run.update(steps_s=0.0, count_s=0.0)
        it = iter(batches)
        taken = 0
        for item in it:
            yield item
            taken += 1
            if taken >= self.max_steps:
                break
        t = self.clock()
        rest = sum(1 for _ in it) if run["epoch"] == 0 else 0
        run["count_s"] = self.clock() - t
        if run["epoch"] == 0:
            run["stage"].batches_per_epoch = taken + rest

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        run = self._open[-1]
        stage: Stage = run["stage"]
        first = not stage.step_s
        _sync(self.device)
        t0 = self.clock()
        with _counting(self.flops and first) as flops:
            yield
            _sync(self.device)
        dt = self.clock() - t0
        stage.step_s.append(dt)
        run["steps_s"] += dt
        if first and self.flops:
            stage.step_flops = flops[0]

    def epoch_end(self, stats: EpochStats) -> bool:  # noqa: ARG002 - the interface's
        run = self._open[-1]
        if run["epoch"] == 0:
            stage: Stage = run["stage"]
            wall = self.clock() - run["t0"]  # the stage's first epoch, its hooks included
            calls: _Calls = run["calls"]
            stage.hooks_s = max(0.0, wall - run["steps_s"] - run["count_s"] - calls.actual_s) + calls.full_s
            stage.hooks_flops = calls.full_flops
        run["epoch"] += 1
        return False

    def end(self, trainer) -> None:
        run = self._open.pop()
        stage: Stage = run["stage"]
        stage.ran_s = self.clock() - run["t0"]
        if stage.resident_begin is not None:
            stage.peak_end = resident()[1]
        print(f"{STAGE_ENDS}{trainer.desc}", flush=True)

    def predict(self, fn: Callable[[torch.Tensor], torch.Tensor], n: int, chunk: int) -> torch.Tensor:
        rows = min(n, chunk)
        part = max(1, rows // self.eval_divisor)
        idx = torch.arange(0, part)
        _sync(self.device)
        t0 = self.clock()
        with _counting(self.flops) as flops:
            out = fn(idx).float().cpu()
        _sync(self.device)
        chunks = math.ceil(n / chunk) * rows / part  # a part of a chunk stands for its share of the chunk
        scope = self._open[-1]["calls"] if self._open else self.top
        scope.add(self.clock() - t0, chunks, flops[0])
        reps = math.ceil(n / max(1, out.shape[0]))
        return out.repeat((reps,) + (1,) * (out.dim() - 1))[:n]

    # ---- the projection
    def figures(self, wall_s: float) -> dict[str, Any]:
        """What the capped job measured and its projection to the full job (seconds, FLOPs)."""
        in_stages = sum(s.ran_s for s in self.stages)  # stages do not nest: each is a whole trainer run
        outside = max(0.0, wall_s - in_stages - self.top.actual_s) + self.top.full_s
        job_s = sum(s.projected_s() for s in self.stages) + outside
        flops = sum(s.projected_flops() for s in self.stages) + self.top.full_flops
        return {
            "eval_divisor": self.eval_divisor,
            "stages": [{**asdict(s), "steps": s.steps, "projected_s": round(s.projected_s(), 3),
                        "projected_flops": s.projected_flops()} for s in self.stages],
            "outside_s": round(outside, 3),
            "eval_flops": self.top.full_flops,
            "wall_s": round(wall_s, 3),
            "job_s": round(job_s, 3),
            "job_flops": flops if self.flops else None,
            "steps_run": sum(len(s.step_s) for s in self.stages),
        }
