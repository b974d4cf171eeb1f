"""The jobs of a budget ladder's step (:mod:`pubench.registry.ladders`): exactly those
``pubench run --set`` plans for the same cell, seeds and overrides."""

from __future__ import annotations

from pubench.jobs.plan import Job, expand
from pubench.registry.ladders import Ladder, cell_pattern, step_overrides
from pubench.registry.spec import Spec


def step_jobs(spec: Spec, ladder: Ladder, row: str, factor: float, numerics=None) -> list[Job]:
    """The jobs of ``row``'s cell at ``factor``: those ``pubench run SPEC --tier TIER --only
    'ROW|COL' --seeds N [--set KEY=VALUE]`` plans (the same :func:`~pubench.jobs.plan.expand` call)."""
    overrides = step_overrides(spec, ladder, row, factor)
    return expand(spec, ladder.tier, ladder.seeds, [cell_pattern(row, ladder.col)], numerics=numerics,
                  overrides=overrides or None).jobs
