"""JOBS: expand a spec into seeded, content-addressed jobs."""

from pubench.jobs.plan import Job, Plan, derive_seeds, expand

__all__ = ["Job", "Plan", "derive_seeds", "expand"]
