"""Tasks: the entry points a spec names in ``experiment.task``.

A task is a function ``task(params: dict, seeds: dict[str, int]) -> dict`` registered with
``@TASKS.register(name)`` in its own module of this package (found automatically). It
validates its params, runs, and returns ``{"metrics": {name: float}, "info": {...}}``;
``info`` holds what a reader needs to trust the number (split counts, prior, ...).
A task may carry ``task.validate(params)``: the same config checks without running
anything; ``pubench coverage`` uses it to count only cells whose config a task accepts.
Tasks are the only bridge from the pipeline to the science packages.
"""

from pubench.utils.registry import Registry

TASKS = Registry("task", package=__name__)
