"""The checks ``pubench run`` makes on rows added to a table (:mod:`pubench.registry.added_rows`)
before any job, shared with ``pubench expand`` and ``pubench validate``: names new and unique, the
``--like`` row a method of the table, every unit the row's keys name registered by an installed
package (a typo or a package of one's own not installed is one line naming the closest registered
name and the ``pubench.units`` entry point), and every added cell's config accepted by its task.
A problem of a row from an overlay file names the file's line (:class:`OverlayError`)."""

from __future__ import annotations

from typing import Any

from pubench.errors import UsageError, shorten
from pubench.registry.added_rows import AddedRow, OverlayError

#: how a unit of one's own becomes known: the entry point of its package (docs/contributing.md)
ENTRY_POINT_HINT = ('a unit of your own comes from a package installed in this environment whose pyproject.toml '
                    'names its module under [project.entry-points."pubench.units"] (`pip install -e DIR`; '
                    'docs/contributing.md, "Your method in a table")')


def row_error(row: AddedRow, key: str, problem: str) -> Exception:
    """A problem of ``row`` at ``key`` (relative to the row: ``like``, ``set.pu_method.name``, "" for
    the row itself) as the error ``run`` raises: for ``--add-row``, one line naming the row (or the
    ``--like`` option); for an overlay file's row, :class:`OverlayError` at the line of the key."""
    if row.source:
        return OverlayError(row.source, f"rows.{row.name}" + (f".{key}" if key else ""), problem)
    if key == "like":
        return UsageError(f"--like {problem}")
    return UsageError(f"--add-row {shorten(row.name, 60)!r}: " + (f"{key.removeprefix('set.')}: " if
                                                                   key.startswith("set.") else "") + problem)


def unit_problem(row: AddedRow) -> tuple[str, str] | None:
    """``(key, problem)`` of the first unit the row's own keys name that no installed package
    registers (a typo, or a package of one's own not installed here), with the closest registered
    name and how a unit of one's own is registered; a planned unit says it is not implemented yet."""
    import difflib

    from pubench.registry.units import known, named, planned_reason

    for kind, name, key in named(row.sets, "set"):
        if name in known(kind):
            continue
        key = f"{key}.name" if isinstance(_at(row.sets, key), dict) else key
        why = planned_reason(kind, name)
        if why is not None:
            return key, f"{kind} {name!r} is not implemented yet ({why}; experiments/_planned.yaml)"
        names = sorted(known(kind))
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f" (registered: {shorten(', '.join(names), 300)})."
        return key, f"unknown {kind} {name!r}{hint} No installed package registers {name!r}: {ENTRY_POINT_HINT}"
    return None


def _at(node: Any, dotted: str) -> Any:
    for part in dotted.split(".")[1:]:  # past the leading "set"
        node = node.get(part) if isinstance(node, dict) else None
    return node


def check_added(spec, rows: list[AddedRow]) -> None:
    """Names new and unique, each ``like`` a method of the table (a row, or a column where its
    methods are columns), every unit the rows' keys name registered (:func:`unit_problem`): the
    error of :func:`row_error` otherwise (``run`` and ``expand`` refuse before any job)."""
    methods = spec.cols if spec.methods_in == "cols" else spec.rows
    axis = "column" if spec.methods_in == "cols" else "row"
    seen: set[str] = set()
    for r in rows:
        if r.name in spec.rows or r.name in spec.cols or r.name in seen:
            raise row_error(r, "", f"{spec.id} already has a row or column of that name")
        seen.add(r.name)
        if "|" in r.name or "*" in r.name:
            raise row_error(r, "", "a name without '|' or '*' (they select cells)")
        if r.like not in methods or r.like in spec.derived_cols:
            import difflib

            close = difflib.get_close_matches(r.like, methods, n=1)
            raise row_error(r, "like", f"{r.like!r} is not a {axis} of {spec.id}"
                            + (f"; did you mean {close[0]!r}?" if close else f" ({axis}s: {', '.join(methods)})"))
        problem = unit_problem(r)
        if problem is not None:
            raise row_error(r, *problem)


def config_problem(view, jobs: list) -> Exception | None:
    """The first added cell among ``jobs`` (of ``view``: :meth:`Spec.with_added_rows`) whose config
    its task rejects (its ``validate``, no data loaded), as :func:`row_error` at the key of the row
    that sets the param it names (the row itself where the param is inherited), else None."""
    from pubench.registry.task_check import first_rejected_job, held_depth, rejected_by_task, rejected_path

    rejected = first_rejected_job(jobs)
    if rejected is None:
        return None
    j, message = rejected
    row = view.added_row(j.row, j.col)
    problem = rejected_by_task(j, message)
    if row is None or not row.source:
        return UsageError(f"--add-row: {problem}")
    path = rejected_path(message)
    held = held_depth(row.sets, path)
    return row_error(row, ".".join(["set", *path[:held]]) if held else "", problem)
