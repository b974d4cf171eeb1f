"""Tasks: the entry points a spec names in ``experiment.task`` (interface:
:class:`pubench.tasks.base.Task`, registered in :data:`TASKS`; every module of this
package is found automatically). Tasks are the only bridge from the pipeline to the
science packages."""

from pubench.tasks.base import TASKS, Task

__all__ = ["TASKS", "Task"]
