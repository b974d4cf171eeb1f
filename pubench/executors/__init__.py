"""EXECUTORS: run jobs locally (default) or submit them to SLURM through submitit."""

from pubench.executors.local import LocalExecutor
from pubench.executors.slurm import SlurmExecutor, active_job_ids, load_profile
from pubench.executors.worker import execute_job

__all__ = ["LocalExecutor", "SlurmExecutor", "active_job_ids", "execute_job", "load_profile"]
