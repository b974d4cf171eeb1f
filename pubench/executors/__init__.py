"""EXECUTORS: run jobs locally (default) or submit them to SLURM through submitit.

Executors implement :class:`pubench.executors.base.Executor` and register themselves in
:data:`EXECUTORS` (one module each; this package is scanned on first use).
"""

from pubench.executors.base import EXECUTORS, Executor, ExecutorContext, Submission
from pubench.executors.local import LocalExecutor
from pubench.executors.slurm import SlurmExecutor, active_job_ids, load_profile
from pubench.executors.worker import execute_job

__all__ = ["EXECUTORS", "Executor", "ExecutorContext", "LocalExecutor", "SlurmExecutor", "Submission",
           "active_job_ids", "execute_job", "load_profile"]
