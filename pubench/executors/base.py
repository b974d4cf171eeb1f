"""The executor interface: where a run's jobs go.

An executor is a class registered in :data:`EXECUTORS` (one module of this package each,
found automatically; the registration names it) that subclasses :class:`Executor`:

* ``from_context(context)``: build one for a run (:class:`ExecutorContext`);
* ``runs_here``: whether jobs run in this process tree (the CLI then sets the numerics
  environment before anything loads torch) or somewhere else (a cluster);
* ``default_device(context)``: the device jobs get when ``--device auto``;
* ``active_ids(context)``: job ids this executor has queued or running (for ``status`` and
  so that ``run`` never submits them twice); ``describe_active(context, jobs)``: the lines
  ``run`` prints about those of its jobs it leaves to them;
* ``unavailable_reason()``: why jobs cannot go to this executor from this machine (None
  when they can); ``run`` refuses before anything is written or submitted, ``--dry-run``
  still prints the plan;
* ``plan(jobs, every_job=True)``: what ``--dry-run`` prints: every job, or
  (``every_job=False``) a summary (:func:`job_summary`) and what the executor adds;
* ``concurrency(jobs)``: how many of ``jobs`` run at once, how many of them share one
  device, and how, in words (None: unknown); ``--dry-run``'s wall time;
* ``submit(jobs, on_done=None)``: run or submit, returning a :class:`Submission`;
  ``on_done(job, status)`` is called as each job finishes, where jobs finish in this process
  tree (an executor that hands them elsewhere never calls it);
* ``wait()``: block until what ``submit`` handed elsewhere has finished (a no-op for
  executors that run jobs here; tests use it);
* ``test_config``: the :class:`ExecutorContext` fields the contract tests
  (``tests/project/test_contracts.py``) set to run this executor on a machine without its
  service (e.g. submitit's in-process ``debug`` cluster for SLURM).

Every executor runs jobs through :func:`pubench.executors.worker.execute_job`, which
claims a job before it runs and writes its record into the store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

from pubench.jobs.plan import Job
from pubench.utils.registry import Registry


@dataclass
class ExecutorContext:
    """What an executor needs to know about the run (from the CLI or a caller)."""

    results_root: Path
    logs_root: Path
    spec_id: str
    tier: str
    jobs: int = 1                    # local worker processes
    progress: bool = False
    force: bool = False              # rerun jobs that are done
    profile: Path | None = None      # SLURM profile file
    cluster: str = "slurm"           # submitit backend (tests use local / debug)
    numerics: Any = None             # pubench.numerics.Numerics of the run's jobs
    checkpoint_every: int | None = None  # epochs between training checkpoints (None: the executor's default)
    profile_tier: str | None = None  # the tier whose SLURM resources the jobs take (rows added: their base tier)


@dataclass
class Submission:
    """What ``submit`` did: ``counts`` of ok / failed / skipped when the jobs ran here,
    ``None`` when they were handed to a scheduler (``where`` then says where to look, and
    ``manifest`` is the file that lists them)."""

    counts: Counter | None
    where: str = ""
    manifest: Path | None = None


class Executor(ABC):
    name: ClassVar[str]  # set by the registration
    runs_here: ClassVar[bool]
    test_config: ClassVar[dict[str, Any]] = {}

    @classmethod
    @abstractmethod
    def from_context(cls, context: ExecutorContext) -> "Executor":
        ...

    @classmethod
    def default_device(cls, context: ExecutorContext) -> str:
        return "cpu"

    @classmethod
    def active_ids(cls, context: ExecutorContext) -> set[str]:
        return set()

    @classmethod
    def describe_active(cls, context: ExecutorContext, jobs: list[Job]) -> list[str]:
        """What ``run`` says about ``jobs``, which this executor already has in flight."""
        return [f"  {len(jobs)} job(s) queued or running under {cls.name}: not started again"]

    def unavailable_reason(self) -> str | None:
        return None

    def plan(self, jobs: list[Job], every_job: bool = True) -> str:
        return "\n".join(f"  {j.id}  {j.name}" for j in jobs) if every_job else job_summary(jobs)

    def concurrency(self, jobs: list[Job]) -> tuple[int, int, str] | None:
        return None

    @abstractmethod
    def submit(self, jobs: list[Job], on_done: Callable[[Job, str], None] | None = None) -> Submission:
        ...

    def wait(self) -> None:
        """Block until the jobs of the last ``submit`` have finished."""


#: a summary shows this many jobs as examples
EXAMPLE_JOBS = 3


def job_summary(jobs: list[Job], config: bool = False) -> str:
    """A plan in a few lines: how many jobs in how many cells and seeds, the first
    :data:`EXAMPLE_JOBS` (``config``: the first one's config too), and how to list them all."""
    import json

    cells = {(j.spec_id, j.row, j.col) for j in jobs}
    seeds = sorted({j.seed_index for j in jobs})
    span = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}" if seeds else "no seed"
    lines = [f"  job plan: {len(jobs)} job(s), {len(cells)} cell(s), {span}"]
    for i, j in enumerate(jobs[:EXAMPLE_JOBS]):
        lines.append(f"    {j.id}  {j.name}")
        if config and i == 0:
            lines.append(f"        {json.dumps(j.params, sort_keys=True)}")
    if len(jobs) > EXAMPLE_JOBS:
        lines.append(f"    ... and {len(jobs) - EXAMPLE_JOBS} more (`--jobs-list` lists every job"
                     + (" and its config)" if config else ")"))
    return "\n".join(lines)


def _check_executor(name: str, obj: Any) -> None:
    if not (isinstance(obj, type) and issubclass(obj, Executor)):
        raise TypeError(f"executor {name!r} must subclass pubench.executors.base.Executor")
    for attr in ("runs_here",):
        if not hasattr(obj, attr):
            raise TypeError(f"executor {name!r} lacks class attribute {attr!r}")


EXECUTORS = Registry("executor", package="pubench.executors", check=_check_executor)
