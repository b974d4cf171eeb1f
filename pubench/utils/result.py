"""What every unit that runs returns: a task for one job, a PU method, a downstream classifier."""

from __future__ import annotations

from typing import Any, NamedTuple


class Result(NamedTuple):
    """``metrics`` (name -> float: the numbers a table reports) and ``info`` (what a reader
    needs to trust them: the split, the prior used, the training curve, ...). A task's Result
    becomes the job's record (``pubench.executors.worker``); a PU method's or a downstream
    classifier's goes into its task's. A pair: ``metrics, info = unit.run(...)`` reads it."""

    metrics: dict[str, float]
    info: dict[str, Any]
