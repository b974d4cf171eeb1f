"""The units a spec names (task, dataset, backbone, loss, ...) and the check of their names.

A name a spec uses must be registered by the code, or listed in the catalogue of planned
units (``experiments/_planned.yaml``: units the code does not implement yet, with the
reason). Anything else is a typo and fails when the spec loads, with the closest
registered name suggested; only planned units are "not implemented yet" (``pubench
coverage`` lists them, ``pubench run`` skips their cells).

The names come from an index, not from importing the units (which imports torch): the
committed ``unit_index.json`` (names per kind and the fingerprint of the unit packages'
source it was made from; ``PUBENCH_REGEN_GOLDEN=1 pytest tests/registry/test_unit_index.py``
rewrites it, and that test checks it against the registries). When the source has changed
since (a new unit, any edit), the registries are imported once and the names cached under
that source's fingerprint (:mod:`pubench.registry.cache`); where torch cannot be imported at
all, the committed names are used. The units of installed packages (the ``pubench.units``
entry-point group, :mod:`pubench.utils.unit_packages`) are added to the index's names, cached
under the fingerprint of the entry points and their modules' source (:func:`package_units`);
the committed index holds pubench's own only.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import json
from pathlib import Path
from typing import Any, Iterator

import yaml

from pubench.paths import experiments_root
from pubench.registry import cache
from pubench.registry.spec import SpecError

#: param key -> (kind, "module:REGISTRY"): a key whose value names a unit (a string, or a
#: mapping with ``name``; the keys inside that mapping are the unit's hyperparameters).
UNIT_KEYS = {
    "dataset": ("dataset", "pubench.data:DATASETS"),
    "backbone": ("backbone", "pubench.models:BACKBONES"),
    "loss": ("loss", "pubench.losses:LOSSES"),
    "framework": ("framework", "pubench.frameworks:FRAMEWORKS"),
    "downstream": ("downstream", "pubench.downstream:DOWNSTREAM"),
    "pu_method": ("pu_method", "pubench.pu:PU_METHODS"),
}
TASK_REGISTRY = "pubench.tasks:TASKS"
#: Names checked wherever they appear, also inside a unit's mapping.
NESTED_KEYS = {
    "risk": ("risk", "pubench.pu.risks:RISKS"),
    "optimizer": ("optimizer", "pubench.train.optim:OPTIMIZERS"),
    "schedule": ("schedule", "pubench.train.optim:SCHEDULES"),
    "augment": ("augment", "pubench.train.augment:AUGMENTS"),
}
#: kind -> "module:REGISTRY" of every kind the index names (executors too: `pubench run
#: --executor` offers their names without importing them)
REGISTRIES = {"task": TASK_REGISTRY, **dict(UNIT_KEYS.values()), **dict(NESTED_KEYS.values()),
              "executor": "pubench.executors:EXECUTORS"}
KINDS = tuple(REGISTRIES)


def _name_of(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return value["name"]
    return None


def units(task: str, params: Any) -> Iterator[tuple[str, str]]:
    """(kind, name) of every unit a resolved cell config names (task, dataset, backbone,
    loss, framework, downstream, pu_method)."""
    yield "task", task

    def walk(node: Any) -> Iterator[tuple[str, str]]:
        if isinstance(node, dict):
            for k, v in node.items():
                name = _name_of(v) if k in UNIT_KEYS else None
                if name is not None:
                    yield UNIT_KEYS[k][0], name
                    continue  # keys inside a unit's mapping are its hyperparameters, not units
                yield from walk(v)
        elif isinstance(node, list):
            for v in node:
                yield from walk(v)

    yield from walk(params)


def named(node: Any, where: str) -> Iterator[tuple[str, str, str]]:
    """(kind, name, dotted key) of every unit and nested name in a spec fragment."""
    if isinstance(node, dict):
        for k, v in node.items():
            here = f"{where}.{k}"
            name = _name_of(v) if k in UNIT_KEYS or k in NESTED_KEYS else None
            if name is not None:
                yield (UNIT_KEYS.get(k) or NESTED_KEYS[k])[0], name, here
                if isinstance(v, dict):  # a unit's hyperparameters may name an optimizer, a risk, ...
                    for kk, vv in v.items():
                        yield from named({kk: vv}, here) if kk != "name" and kk not in UNIT_KEYS else ()
                continue
            yield from named(v, here)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from named(v, f"{where}[{i}]")


def _registry(path: str):
    module, attr = path.split(":")
    return getattr(importlib.import_module(module), attr)


INDEX_PATH = Path(__file__).resolve().with_name("unit_index.json")
#: the packages whose modules register units (their source is the index's fingerprint)
UNIT_PACKAGES = ("tasks", "data", "models", "losses", "train", "frameworks", "downstream", "pu", "executors")


def registered_names(kind: str) -> list[str]:
    """Names the code registers for ``kind``, by importing the registry (and its units, the
    installed unit packages' included)."""
    return _registry(REGISTRIES[kind]).names()


def own_names(kind: str) -> list[str]:
    """:func:`registered_names` of pubench itself (not of an installed unit package)."""
    from pubench.utils.unit_packages import origin

    reg = _registry(REGISTRIES[kind])
    return [n for n in reg.names() if origin(reg.kind, n) is None]


def source_fingerprint() -> str:
    """Fingerprint of the source of every module of the unit packages."""
    pkg = Path(__file__).resolve().parents[1]
    return cache.files_fingerprint([f for p in UNIT_PACKAGES for f in pkg.joinpath(p).rglob("*.py")], salt="units")


def build_index() -> dict[str, Any]:
    """The index of the code as it is (imports every unit): names per kind, and per registry
    kind the module that registers each name (so a job imports only its own units:
    :meth:`pubench.utils.registry.Registry.get`)."""
    modules: dict[str, dict[str, str]] = {}
    for kind in KINDS:
        reg = _registry(REGISTRIES[kind])
        modules[reg.kind] = {n: getattr(reg.get(n), "__module__", None) or "" for n in own_names(kind)}
    return {"fingerprint": source_fingerprint(), "names": {k: own_names(k) for k in KINDS},
            "modules": modules}


def committed_index() -> dict[str, Any] | None:
    try:
        data = json.loads(INDEX_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("names"), dict) else None


@functools.lru_cache(maxsize=1)
def _index() -> dict[str, list[str]]:
    fp = source_fingerprint()
    names = cache.get("units", fp, dict[str, list[str]])
    if names is not None:
        return names
    committed = committed_index()
    if committed is not None and committed.get("fingerprint") == fp:
        names = committed["names"]
    else:
        try:
            names = build_index()["names"]
        except ImportError:  # no torch (or another library of the units) here: the committed names
            if committed is None:
                raise
            return committed["names"]
    cache.put("units", fp, names)
    return names


@functools.lru_cache(maxsize=None)
def known(kind: str) -> frozenset[str]:
    """Names the code registers for ``kind`` (from the index: imports no unit), the installed unit
    packages' included (:func:`package_units`)."""
    return frozenset(_index().get(kind, ())) | frozenset(package_units().get(kind, ()))


@functools.lru_cache(maxsize=1)
def package_units() -> dict[str, list[str]]:
    """kind -> names the installed unit packages register (the ``pubench.units`` entry points),
    ``{}`` without any. Importing them imports the registries (torch): the names are cached under
    the fingerprint of the entry points and of their packages' source, so a call after the first
    reads one file; the list of entry points itself is cached by the folders of ``sys.path``."""
    points = _entry_points()
    if not points:
        return {}
    fp = cache.files_fingerprint(_package_files([module for _, module in points]),
                                 salt=json.dumps(points, sort_keys=True))
    names = cache.get("unit-packages", fp, dict)
    if names is not None:
        return names
    from pubench.utils.unit_packages import origin

    names = {}
    for kind in KINDS:
        reg = _registry(REGISTRIES[kind])
        found = sorted(n for n in reg.names() if origin(reg.kind, n) is not None)
        if found:
            names[kind] = found
    cache.put("unit-packages", fp, names)
    return names


def _entry_points() -> list[list[str]]:
    """``[[description, module], ...]`` of the installed ``pubench.units`` entry points, cached
    under the folders of ``sys.path`` and their modification times (installing a package
    changes its folder's)."""
    import os
    import sys

    stamp = []
    for folder in sys.path:
        try:
            stamp.append([folder, os.stat(folder or ".").st_mtime_ns])
        except OSError:
            continue
    key = cache.key_of("entry-points", json.dumps(stamp))
    hit = cache.get("entry-points", key, list)
    if hit is not None:
        return hit
    from pubench.utils.unit_packages import describe, entry_points

    points = [[describe(ep), ep.module] for ep in entry_points()]
    cache.put("entry-points", key, points)
    return points


def _package_files(modules: list[str]) -> list[Path]:
    """The source files of the top-level packages of ``modules``, found without importing them."""
    import importlib.util

    files: list[Path] = []
    for top in sorted({m.split(".")[0] for m in modules}):
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        if spec.submodule_search_locations:
            files += [f for loc in spec.submodule_search_locations for f in Path(loc).rglob("*.py")]
        elif spec.origin:
            files.append(Path(spec.origin))
    return files


def implemented() -> dict[str, set[str]]:
    """Registered names of every kind of unit ``units`` yields."""
    return {kind: set(known(kind)) for kind in ("task", *(k for k, _ in UNIT_KEYS.values()))}


def planned_path() -> Path:
    return experiments_root() / "_planned.yaml"


@functools.lru_cache(maxsize=4)
def _planned_cached(path: str, mtime: float) -> dict[str, dict[str, str]]:
    from pathlib import Path

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as e:
        raise SpecError(path, "(yaml)", " ".join(str(e).split())) from None
    if not isinstance(data, dict):
        raise SpecError(path, "(top level)", "expected a mapping kind -> {name: reason}")
    out: dict[str, dict[str, str]] = {}
    for kind, names in data.items():
        if kind not in KINDS:
            raise SpecError(path, kind, f"unknown kind (one of {', '.join(KINDS)})")
        if not isinstance(names, dict):
            raise SpecError(path, kind, "expected a mapping name -> reason")
        for name, why in names.items():
            if not isinstance(why, str) or not why.strip():
                raise SpecError(path, f"{kind}.{name}", "give the reason it is not implemented yet")
        out[kind] = {str(k): v for k, v in names.items()}
    return out


def planned() -> dict[str, dict[str, str]]:
    """kind -> {name: why it is not implemented yet} (empty when there is no catalogue)."""
    path = planned_path()
    if not path.exists():
        return {}
    return _planned_cached(str(path), path.stat().st_mtime)


def planned_reason(kind: str, name: str) -> str | None:
    return planned().get(kind, {}).get(name)


def check_names(raw: dict[str, Any], file: str) -> None:
    """Raise :class:`SpecError` for a name no unit registers and the catalogue does not plan."""
    layers = [("experiment", raw.get("experiment") or {})]
    layers += [(f"tiers.{t}", layer or {}) for t, layer in (raw.get("tiers") or {}).items()]
    plan = planned()
    for where, layer in layers:
        if where == "experiment" and isinstance(layer.get("task"), str):
            found = [("task", layer["task"], "experiment.task")]
        else:
            found = []
        found += list(named({k: v for k, v in layer.items() if k in ("params", "rows", "cols", "cells")}, where))
        for kind, name, key in found:
            if name in known(kind) or name in plan.get(kind, {}):
                continue
            close = difflib.get_close_matches(name, sorted(known(kind)), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SpecError(file, key, f"unknown {kind} {name!r}{hint} (registered: {', '.join(sorted(known(kind)))}; "
                                       "units not implemented yet belong in experiments/_planned.yaml)")
