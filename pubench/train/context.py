"""What a job runs with besides its config and seeds: one :class:`JobContext`, made by the
worker that runs the job (:func:`pubench.executors.worker.execute_job`; ``pubench
preflight``'s :mod:`pubench.preflight.worker`) and passed down as an argument: to the task
(``Task.run(params, seeds, ctx)``), from it to the PU method, the downstream classifier or
the pre-training, and from those to every :class:`pubench.train.loop.Trainer` and
:func:`pubench.train.loop.predict`. Nothing reads it from anywhere else.

* ``numerics``: the job's profile (:class:`pubench.numerics.Numerics`: device, threads);
  ``None`` outside a job: the canonical CPU profile;
* ``accel``: the accelerator settings of the running stage (:class:`Settings`: precision,
  ``torch.compile``) and the job's throughput table (:mod:`pubench.train.accel`);
* ``session``: the job's checkpoints (:class:`pubench.train.checkpoint.Session`; ``None``:
  none are written or read);
* ``cap``: the step cap of ``pubench preflight`` (:class:`StepCap`; ``None``: every epoch
  and step runs);
* ``data``: where the data sets come from (:class:`pubench.data.source.DataSource`: the
  files under the data root, or preflight's stand-ins);
* ``callbacks``: loop callbacks every trainer of the job runs after its progress line and
  before its own (:class:`pubench.train.loop.LoopCallback`: observers that draw no random
  numbers, e.g. the GPU check's stop request at the first epoch boundary).

:data:`PLAIN` is the context outside a job (library use, tests): canonical CPU numerics,
fp32, nothing recorded, no checkpoints, no cap, the real data. No signature of the training
path defaults ``ctx`` to it (a forgotten argument would run silently without checkpoints or
step cap): a caller outside a job passes it.

A context's fields are never rebound (a stage with other accelerator settings is a new
context: :func:`pubench.train.accel.stage`), but three of the objects it holds are written
to while the job runs, by design: ``accel.throughput`` (the job's throughput table: every
trainer adds its examples / s, shared by the job's stages, read into the record at the
end), ``session`` (the checkpoint session: the stages it has numbered, the checkpoints
saved and loaded, a stop request waiting for the next epoch boundary) and ``cap`` (the step
cap measures what it lets run: ``pubench preflight``'s meter). Everything else is read only.

This module imports neither torch nor numpy, nor anything heavy (the task registry imports
it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pubench.data.source import REAL, DataSource

if TYPE_CHECKING:
    import torch

    from pubench.numerics import Numerics
    from pubench.train.checkpoint import Session


@dataclass(frozen=True)
class Settings:
    """How a stage's trainers use the device: ``precision`` (``fp32`` or ``bf16`` autocast)
    and ``compile``; ``throughput``: the job's table every trainer adds its examples / s
    to (its ``desc``; repeated ones numbered), shared by the job's stages; ``None``:
    nothing is recorded."""

    precision: str = "fp32"
    compile: bool = False
    throughput: dict[str, dict[str, Any]] | None = None


class StepCap:
    """What ``pubench preflight`` puts in a job's context (:class:`pubench.preflight.meter.Meter`
    measures them): every :class:`pubench.train.loop.Trainer` of the job calls these, in
    this order, instead of running its epochs in full:

    * ``begin(trainer, epochs, device)`` once, with the epochs the stage would run;
    * ``epochs(first, epochs)``: the epochs of ``range(first, epochs)`` to run (the
      epoch-dependent phases of a stage, e.g. a method's later selection, run too);
    * ``batches(iterable)`` per epoch: the batches to run (at most the steps left);
    * ``step()`` a context around each step's forward, objective and optimizer step;
    * ``epoch_end(stats) -> bool`` after each epoch (its hooks and callbacks): True stops;
    * ``end(trainer)`` when the stage stops (also on an error);

    and :func:`pubench.train.loop.predict` returns ``predict(fn, n, chunk)`` (the tensor it
    would return, of the right shape). No checkpoint or prefix-cache state is written meanwhile."""

    def begin(self, trainer: Any, epochs: int, device: torch.device) -> None:
        raise NotImplementedError

    def epochs(self, first: int, epochs: int) -> Iterable[int]:
        raise NotImplementedError

    def batches(self, batches: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError

    def step(self):
        raise NotImplementedError

    def epoch_end(self, stats: Any) -> bool:
        raise NotImplementedError

    def end(self, trainer: Any) -> None:
        raise NotImplementedError

    def predict(self, fn: Callable[[torch.Tensor], torch.Tensor], n: int, chunk: int) -> torch.Tensor:
        raise NotImplementedError


@dataclass(frozen=True)
class JobContext:
    """See the module docstring."""

    numerics: Numerics | None = None
    accel: Settings = Settings()
    session: Session | None = None
    cap: StepCap | None = None
    data: DataSource = REAL
    callbacks: tuple = ()

    @property
    def profile(self) -> Numerics:
        """The job's numerics profile (outside a job: the canonical CPU one)."""
        from pubench.numerics import resolve

        return self.numerics if self.numerics is not None else resolve()

    @property
    def device(self) -> torch.device:
        """The torch device the job runs on."""
        import torch

        return torch.device(self.numerics.device if self.numerics is not None else "cpu")

    def replace(self, **changes: Any) -> JobContext:
        return dataclasses.replace(self, **changes)


#: the context outside a job (module docstring)
PLAIN = JobContext()
