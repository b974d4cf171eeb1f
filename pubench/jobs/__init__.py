"""JOBS: expand a spec into seeded, content-addressed jobs."""

from pubench.jobs.plan import MAX_SEEDS, Job, Plan, PlanError, derive_seeds, expand

__all__ = ["MAX_SEEDS", "Job", "Plan", "PlanError", "derive_seeds", "expand"]
