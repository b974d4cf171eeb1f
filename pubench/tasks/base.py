"""The task interface: the entry point a spec names in ``experiment.task``.

A task is a class registered in :data:`TASKS` (one module of this package each, found
automatically) that subclasses :class:`Task`; every method is a classmethod:

* ``validate(params)``: every config check, without loading data or running anything
  (unknown / missing keys raise ``ConfigError``); ``pubench coverage`` counts only cells
  whose config a task accepts;
* ``run(params, seeds, ctx) -> Result(metrics, info)`` (:class:`pubench.utils.result.Result`,
  what PU methods and downstream classifiers return too: ``metrics`` {name: float},
  ``info`` {...}): validate, run one
  job from its ``seeds`` (``data``, ``init``) only, never touching the caller's global RNG,
  in the job's context ``ctx`` (:class:`pubench.train.context.JobContext`: numerics,
  accelerator settings, checkpoints, step cap, the data source; the worker makes it, the
  task reads its data through ``ctx.data`` and hands ``ctx`` to what it trains);
  ``info`` holds what a reader needs to trust the number, at least :attr:`Task.info_keys`;
* ``test_config``: small valid params for the contract tests (the name every kind of
  unit gives its test configuration)
  (``tests/project/test_contracts.py``; they provide generated data for its dataset).

Tasks are the only bridge from the pipeline to the science packages. This module imports
neither torch nor numpy (nor does :mod:`pubench.train.context`): the executors load the
registry before any job runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pubench.train.context import JobContext
from pubench.utils.registry import Registry, subclass_check
from pubench.utils.result import Result


class Task(ABC):
    info_keys: ClassVar[tuple[str, ...]] = ()
    name: ClassVar[str]  # set by the registration
    test_config: ClassVar[dict[str, Any]]

    @classmethod
    @abstractmethod
    def validate(cls, params: dict[str, Any]) -> Any:
        """The checked configs of ``params``; raises ``ConfigError`` (or ``SpecError``-like
        ``ValueError``) naming the key."""

    @classmethod
    @abstractmethod
    def run(cls, params: dict[str, Any], seeds: dict[str, int], ctx: JobContext) -> Result:
        """The :class:`~pubench.utils.result.Result` (metrics, info) of one job."""


TASKS = Registry("task", package="pubench.tasks", check=subclass_check("task", Task, ("test_config", "info_keys")))
