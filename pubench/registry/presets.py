"""Presets: named param blocks a spec includes at any depth (``experiments/_presets/*.yaml``).

A mapping with the key ``preset`` (a name or a list of names) is replaced by the presets,
deep-merged in order, and then its own other keys on top::

    optimizer: {preset: lars_simclr, lr: 1.2}      ->  {name: lars, momentum: 0.9, weight_decay: 1.0e-6, lr: 1.2}

A ``null`` among the overrides deletes the key (it stays a ``null`` in the layer, so it
also deletes the key from earlier layers when a cell is resolved). Presets may use presets.
Each preset file maps names to blocks; names are unique across the files.
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any

from pubench.paths import experiments_root
from pubench.registry.spec import SpecError, deep_merge
from pubench.utils.yamlio import read_yaml

PRESET_KEY = "preset"


def presets_folder() -> Path:
    return experiments_root() / "_presets"


@functools.lru_cache(maxsize=4)
def _load(folder: str, stamp: tuple) -> dict[str, tuple[dict[str, Any], str]]:
    out: dict[str, tuple[dict[str, Any], str]] = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        for name, block in read_yaml(path).items():
            if not isinstance(block, dict):
                raise SpecError(str(path), str(name), "expected a mapping (the keys the preset sets)")
            if name in out:
                raise SpecError(str(path), str(name), f"preset defined twice (also in {out[name][1]})")
            out[name] = (block, str(path))
    return out


def presets() -> dict[str, tuple[dict[str, Any], str]]:
    """name -> (block, file) of every preset (empty when there is no ``_presets`` folder)."""
    folder = presets_folder()
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    return _load(str(folder), tuple((p.name, p.stat().st_mtime_ns) for p in files))


def expand_presets(node: Any, file: str, where: str, _stack: tuple[str, ...] = ()) -> Any:
    """``node`` with every ``{preset: ...}`` mapping replaced (recursively, at any depth)."""
    if isinstance(node, list):
        return [expand_presets(v, file, f"{where}[{i}]", _stack) for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return node
    own = {k: expand_presets(v, file, f"{where}.{k}", _stack) for k, v in node.items() if k != PRESET_KEY}
    if PRESET_KEY not in node:
        return own
    names = node[PRESET_KEY]
    names = [names] if isinstance(names, str) else names
    key = f"{where}.{PRESET_KEY}"
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise SpecError(file, key, f"expected a preset name or a list of names, got {node[PRESET_KEY]!r}")
    known = presets()
    merged: dict[str, Any] = {}
    for name in names:
        if name in _stack:
            raise SpecError(file, key, f"preset cycle: {' -> '.join((*_stack, name))}")
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (presets: {', '.join(sorted(known)) or 'none'})"
            raise SpecError(file, key, f"unknown preset {name!r}{hint}")
        block, block_file = known[name]
        merged = deep_merge(merged, expand_presets(block, block_file, name, (*_stack, name)), keep_nulls=True)
    return deep_merge(merged, own, keep_nulls=True)
