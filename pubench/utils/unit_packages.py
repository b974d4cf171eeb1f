"""Units from the user's own installed packages: the ``pubench.units`` entry-point group.

A package outside ``pubench/`` registers losses, PU methods, backbones, downstream classifiers
(any kind) by naming, in its metadata, a module whose import registers them with the usual
decorators (``@LOSSES.register("my_loss", ...)``)::

    # pyproject.toml of the user's package
    [project.entry-points."pubench.units"]
    my_units = "my_package.units"

Every registry loads these modules when it imports its own package's units (and when asked for
a name it does not hold), so the units join the same registries, the same contract tests
(``tests/project/test_contracts.py`` loops over every registered name) and the same spec checks
as pubench's own. The registries record which names came from which package
(:func:`origin`), so the committed unit index (``pubench/registry/unit_index.json``) stays
pubench's own. A module that fails to import, or registers a name pubench already has, stops
with one line naming the entry point.
"""

from __future__ import annotations

from typing import Any

from pubench.errors import PubenchError

GROUP = "pubench.units"

_state: dict[str, Any] = {"loaded": False, "loading": None}
_origins: dict[tuple[str, str], str] = {}  # (kind, name) -> "entry point = module (distribution)"


class UnitPackageError(PubenchError):
    """An entry point of ``pubench.units`` that cannot be loaded."""


def entry_points() -> list:
    """The installed entry points of :data:`GROUP`, sorted by name."""
    from importlib import metadata

    return sorted(metadata.entry_points(group=GROUP), key=lambda ep: (ep.name, ep.value))


def describe(ep) -> str:
    dist = getattr(ep, "dist", None)
    return f"{ep.name} = {ep.value}" + (f" ({dist.name} {dist.version})" if dist is not None else "")


def load() -> None:
    """Import every module the entry points name (once per process); a value ``module:function``
    imports the module and calls the function."""
    if _state["loaded"]:
        return
    _state["loaded"] = True
    for ep in entry_points():
        _state["loading"] = describe(ep)
        try:
            obj = ep.load()
            if ep.attr and callable(obj):
                obj()
        except Exception as e:  # noqa: BLE001 - any failure of the user's module is one line naming it
            raise UnitPackageError(f"the unit package entry point {describe(ep)} (group {GROUP!r}) failed to load: "
                                   f"{type(e).__name__}: {' '.join(str(e).split())[:300]}") from e
        finally:
            _state["loading"] = None


def loading() -> str | None:
    """The entry point being loaded now (registrations made meanwhile are its units), or None."""
    return _state["loading"]


def note_origin(kind: str, name: str) -> None:
    """Record that the entry point being loaded registered ``name`` of ``kind``, unless the code
    registering it is pubench's own (a module of pubench the user's module imports meanwhile)."""
    if _state["loading"] is None:
        return
    import sys

    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in ("pubench.utils.registry", __name__):
        frame = frame.f_back
    caller = frame.f_globals.get("__name__", "") if frame is not None else ""
    if caller != "pubench" and not caller.startswith("pubench."):
        _origins[(kind, name)] = _state["loading"]


def origin(kind: str, name: str) -> str | None:
    """The entry point that registered ``name`` of ``kind`` (None: a unit of pubench itself)."""
    return _origins.get((kind, name))
