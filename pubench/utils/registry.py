"""Name registries for units (tasks, losses, datasets, backbones, PU methods).

A unit registers itself with a decorator in its own module::

    from pubench.losses import LOSSES

    @LOSSES.register("punce")
    def punce(...): ...

A registry created with ``package=`` imports every module of that package the first
time it is asked for a name, so adding a unit is one file and no list to edit; then the
modules installed packages name in the ``pubench.units`` entry-point group
(:mod:`pubench.utils.unit_packages`), so a unit may live in the user's own package.
Unknown names raise :class:`UnknownName`, with the closest registered name suggested.

``check=`` refuses, at registration, an object that does not implement the kind's
interface (each kind's ``base.py`` says what it is); ``register(name, **declared)`` sets
the declared attributes on the unit first (a loss's logits form, a backbone's test
config), so everything about a unit is said where it is registered. Registration also
sets the unit's ``name`` (a class's or a function's: a unit never repeats its own name; an
instance, e.g. a data set, must already carry it).
:class:`Unit` is the base of the unit kinds that are classes with a config dataclass
(frameworks, downstream classifiers, PU methods); :func:`subclass_check` builds their
registration check.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import inspect
import pkgutil
from abc import ABC
from typing import Any, Callable, ClassVar, Iterator

from pubench.errors import PubenchError
from pubench.utils import unit_packages
from pubench.utils.config import ConfigError


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

    def register(self, name: str, obj: Any = None, **declared: Any) -> Callable[[Any], Any] | Any:
        """Register ``obj`` under ``name``; usable as ``@registry.register(name)``.
        ``declared`` attributes are set on ``obj`` before the interface check."""

        def add(o: Any) -> Any:
            if name in self._items and self._items[name] is not o:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            named = isinstance(o, type) or inspect.isfunction(o)  # an instance carries its own name
            if named and vars(o).get("name", name) != name:
                raise ValueError(f"{self.kind} {name!r} is already registered as {vars(o)['name']!r}")
            for attr, value in declared.items():
                setattr(o, attr, value)
            if self.check is not None:
                self.check(name, o)
            if named:
                o.name = name
            self._items[name] = o
            unit_packages.note_origin(self.kind, name)
            return o

        return add if obj is None else add(obj)

    @contextlib.contextmanager
    def registered(self, name: str, obj: Any) -> Iterator[Any]:
        """``obj`` registered under ``name`` inside the ``with`` block only (tests)."""
        self._discover()
        self.register(name, obj)
        try:
            yield obj
        finally:
            self._items.pop(name, None)

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        pkg = importlib.import_module(self.package)
        for mod in pkgutil.iter_modules(pkg.__path__):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{self.package}.{mod.name}")
        unit_packages.load()

    def _import_registering(self, name: str) -> None:
        """Import only the module the unit index (``pubench/registry/unit_index.json``) says
        registers ``name``: a job's process then loads its own units, not every unit of the
        package (issue 34). A stale or missing hint is harmless: :meth:`get` then imports the
        whole package."""
        module = _module_hints().get(self.kind, {}).get(name)
        if module and module.startswith(f"{self.package}."):
            try:
                importlib.import_module(module)
            except ImportError:
                pass

    def named(self, cfg: Any, where: str) -> Any:
        """The unit a spec block names (``{name: ..., <its options>}``); ``ConfigError``
        naming ``where`` when ``cfg`` is no mapping with a ``name`` or the name is unknown."""
        if not isinstance(cfg, dict) or "name" not in cfg:
            raise ConfigError(f"{where}: expected a mapping with 'name', got {cfg!r}")
        return self.lookup(cfg["name"], f"{where}.name")

    def lookup(self, name: str, where: str) -> Any:
        """The unit registered as ``name``, which a config gives at ``where``; ``ConfigError``
        naming ``where`` (with the closest name) when there is none."""
        try:
            return self.get(name)
        except UnknownName as exc:
            raise ConfigError(f"{where}: {exc}") from None

    def get(self, name: str) -> Any:
        if not self._discovered and name not in self._items:
            self._import_registering(name)
        if name not in self._items:
            unit_packages.load()  # a unit of the user's own package, before every unit of pubench's
        if name not in self._items:
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


_HINTS: list[dict[str, dict[str, str]]] = []


def _module_hints() -> dict[str, dict[str, str]]:
    if not _HINTS:
        import json
        from pathlib import Path

        try:
            data = json.loads((Path(__file__).resolve().parents[1] / "registry" / "unit_index.json").read_text())
            _HINTS.append(data.get("modules") or {})
        except (OSError, ValueError, AttributeError):
            _HINTS.append({})
    return _HINTS[0]


class Unit(ABC):
    """A unit that is a class: ``name`` (set by its registration), ``config_cls`` (a
    dataclass of its hyperparameters, built with :func:`pubench.utils.config.build_config`:
    unknown, missing or mistyped keys fail), ``check`` (the checks types cannot say,
    raising ``ConfigError``) and ``test_config`` (a small valid config for the contract
    tests, ``tests/project/test_contracts.py``; ``name`` is added by the test). Every method is
    a classmethod: units hold no state between runs."""

    name: ClassVar[str]
    config_cls: ClassVar[type]
    test_config: ClassVar[dict[str, Any]]

    @classmethod
    def config(cls, params: dict[str, Any], where: str) -> Any:
        """The checked config of ``params`` (the spec block naming this unit)."""
        from pubench.utils.config import build_config

        cfg = build_config(cls.config_cls, params, where)
        cls.check(cfg, where)
        return cfg

    @classmethod
    def check(cls, cfg: Any, where: str) -> None:
        """Checks beyond the config's types; raise ``ConfigError`` naming ``where``."""


def subclass_check(kind: str, base: type, attrs: tuple[str, ...] = ()) -> Callable[[str, Any], None]:
    """A registration check: ``obj`` is a concrete subclass of ``base`` with ``attrs``."""

    def check(name: str, obj: Any) -> None:
        if not (isinstance(obj, type) and issubclass(obj, base)):
            raise TypeError(f"{kind} {name!r} must subclass {base.__module__}.{base.__qualname__}")
        if inspect.isabstract(obj):
            raise TypeError(f"{kind} {name!r} does not implement {', '.join(sorted(obj.__abstractmethods__))}")
        for attr in attrs:
            if not hasattr(obj, attr):
                raise TypeError(f"{kind} {name!r} lacks class attribute {attr!r}")

    return check
