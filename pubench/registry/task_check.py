"""The task's own parameter check of a spec's cells, at the line of the spec file that sets the key.

A spec can be valid as a file (schema, unit names, layout) and still hold a cell its task
rejects: ``N`` written ``NN``, a row whose experiment entry is missing. The task's
``validate(params)`` (no data loaded) says so with a dotted key (``params.data: unknown key
'NN'``); :func:`first_rejection` runs it on every cell at every tier and turns the first
rejection into a :class:`SpecError` whose key is where the file sets (or should set) that
param: the highest layer of the cell's resolution that holds it (``experiment.params.data.NN``),
so ``pubench validate`` prints the line. ``pubench run`` runs the same check on the cells it is
about to run and refuses before any job (:mod:`pubench.runner`).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from pubench.registry.spec import Spec, SpecError, match_cell

_LOCATION = re.compile(r"^params((?:\.[^\s:.]+)*)(?::\s+(?:unknown|missing) key '([^']+)')?")


def rejected_path(message: str) -> list[str]:
    """The params path a task's ``ConfigError`` names: ``params.data: unknown key 'NN'`` ->
    ``["data", "NN"]``; ``params: missing key 'scores'`` -> ``["scores"]``; [] when it names none."""
    m = _LOCATION.match(message)
    if not m:
        return []
    return [p for p in m.group(1).split(".") if p] + ([m.group(2)] if m.group(2) else [])


def held_depth(node: Any, path: list[str]) -> int:
    """How many leading parts of ``path`` the mapping ``node`` holds."""
    for i, key in enumerate(path):
        if not isinstance(node, dict) or key not in node:
            return i
        node = node[key]
    return len(path)


def layers_of(spec: Spec, tier: str, row: str, col: str) -> list[tuple[str, dict[str, Any]]]:
    """``(dotted key, params)`` of every layer that applies to the cell, highest precedence first
    (the order :meth:`Spec.resolve` merges them in, reversed)."""
    t = spec.tiers[tier]
    out = []
    for where, layer, name in (("experiment", spec.experiment, row), (f"tiers.{tier}", t.layer, t.matched_as(row))):
        out.append((f"{where}.params", layer.get("params") or {}))
        out.append((f"{where}.rows.{name}", (layer.get("rows") or {}).get(name) or {}))
        out.append((f"{where}.cols.{col}", (layer.get("cols") or {}).get(col) or {}))
        out += [(f"{where}.cells.{p}", over) for p, over in (layer.get("cells") or {}).items()
                if match_cell(p, name, col)]
    return out[::-1]


def setting_key(spec: Spec, tier: str, row: str, col: str, path: list[str]) -> str:
    """The dotted key of the spec that sets ``path`` of the cell's params: the highest layer that
    holds all of it, else the one that holds most of it (a missing key: the mapping it belongs
    in), else the row's experiment entry (where a row's own keys go)."""
    best, depth = f"experiment.rows.{row}", 0
    for where, params in layers_of(spec, tier, row, col):
        held = held_depth(params, path)
        if held == len(path) and path:
            return ".".join([where, *path])
        if held > depth:
            best, depth = ".".join([where, *path[:held]]), held
    return best


def task_message(task: str, params: dict[str, Any]) -> str | None:
    """What task ``task``'s ``validate`` (no data loaded) says of ``params``, in one line, or None
    when it accepts them."""
    from pubench.tasks import TASKS

    try:
        TASKS.get(task).validate(params)
    except (ValueError, KeyError, TypeError) as e:  # ConfigError is a ValueError
        return " ".join(str(e).split())
    return None


def first_rejected_job(jobs: list) -> tuple[Any, str] | None:
    """The first of ``jobs`` (one per cell) whose params its task rejects, with the task's one-line
    message, or None."""
    seen = set()
    for job in jobs:
        if (job.row, job.col) not in seen:
            seen.add((job.row, job.col))
            message = task_message(job.task, job.params)
            if message is not None:
                return job, message
    return None


def rejected_by_task(job, message: str) -> str:
    """``the config of ROW|COL is rejected by task T: ...`` for a job :func:`first_rejected_job` found."""
    return f"the config of {job.row}|{job.col} is rejected by task {job.task}: {message[:300]}"


def task_rejection(spec: Spec, tier: str, row: str, col: str, params: dict[str, Any]) -> SpecError | None:
    """The task's rejection of one cell's resolved ``params`` as a :class:`SpecError` at the key
    that sets the param it names, or None when the task accepts them."""
    message = task_message(spec.experiment["task"], params)
    return None if message is None else _located(spec, tier, row, col, message)


def _located(spec: Spec, tier: str, row: str, col: str, message: str) -> SpecError:
    key = setting_key(spec, tier, row, col, rejected_path(message))
    return SpecError(spec.path, key, f"task {spec.experiment['task']} rejects cell {row}|{col} at tier {tier}: "
                                     f"{message[:300]}")


def first_rejection(spec: Spec, tiers: Iterable[str] | None = None) -> SpecError | None:
    """The first cell (tier by tier, in paper order) whose config its task rejects, or None. Cells
    the tier does not run and cells naming a unit that is only planned are left out."""
    from pubench.registry.units import implemented, units

    have = implemented()
    for tier in tiers or spec.tiers:
        for row, col in spec.cells():
            if spec.unavailable_reason(tier, row, col) is not None:
                continue
            params = spec.resolve(tier, row, col)["params"]
            if any(name not in have[kind] for kind, name in units(spec.experiment["task"], params)):
                continue
            rejection = task_rejection(spec, tier, row, col, params)
            if rejection is not None:
                return rejection
    return None


def jobs_rejection(spec: Spec, tier: str, jobs: list) -> SpecError | None:
    """:func:`task_rejection` of the first cell among ``jobs`` (of ``spec`` at its own ``tier``)
    that its task rejects: what ``pubench run`` checks before it starts any job."""
    rejected = first_rejected_job(jobs)
    return None if rejected is None else _located(spec, tier, rejected[0].row, rejected[0].col, rejected[1])
