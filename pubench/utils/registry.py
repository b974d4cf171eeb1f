"""Name registries for units (tasks, losses, datasets, backbones, PU methods).

A unit registers itself with a decorator in its own module::

    from pubench.losses import LOSSES

    @LOSSES.register("punce")
    def punce(...): ...

A registry created with ``package=`` imports every module of that package the first
time it is asked for a name, so adding a unit is one file and no list to edit.
Unknown names raise :class:`UnknownName`, with the closest registered name suggested.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from typing import Any, Callable, Iterator

from pubench.errors import PubenchError


class UnknownName(PubenchError, KeyError):
    """A name that no unit of this kind registered."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0])


class Registry:
    """Maps names to objects of one kind; refuses duplicates, suggests on typos."""

    def __init__(self, kind: str, package: str | None = None, check: Callable[[str, Any], None] | None = None):
        self.kind = kind
        self.package = package
        self.check = check  # raises when an object does not implement this kind's interface
        self._items: dict[str, Any] = {}
        self._discovered = package is None

    def register(self, name: str, obj: Any = None) -> Callable[[Any], Any] | Any:
        """Register ``obj`` under ``name``; usable as ``@registry.register(name)``."""

        def add(o: Any) -> Any:
            if name in self._items and self._items[name] is not o:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            if self.check is not None:
                self.check(name, o)
            self._items[name] = o
            return o

        return add if obj is None else add(obj)

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        pkg = importlib.import_module(self.package)
        for mod in pkgutil.iter_modules(pkg.__path__):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{self.package}.{mod.name}")

    def get(self, name: str) -> Any:
        self._discover()
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._items, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownName(f"unknown {self.kind} {name!r}{hint}") from None

    def __contains__(self, name: str) -> bool:
        self._discover()
        return name in self._items

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
