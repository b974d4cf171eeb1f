"""Shared decisions (``experiments/_decisions.yaml``): a decision several specs make, written once.

A spec's ``decisions`` list holds sentences, or ``{shared: NAME}`` for a decision of the shared
file (name -> the sentence); the loader puts the sentence in its place, so a spec's decisions,
and every report that prints them, read the same either way::

    decisions:
      - "Epochs: 30, our choice."          # this spec's own
      - {shared: pupl_puPL_variant}        # one sentence written in _decisions.yaml

Write a decision once there when two or more specs make it word for word; a decision one spec
makes belongs in that spec.
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any

from pubench.paths import experiments_root
from pubench.registry.spec import SpecError
from pubench.utils.yamlio import read_yaml

SHARED_KEY = "shared"


def decisions_path() -> Path:
    return experiments_root() / "_decisions.yaml"


@functools.lru_cache(maxsize=4)
def _load(path: str, stamp: int) -> dict[str, str]:
    data = read_yaml(Path(path)) or {}
    if not isinstance(data, dict):
        raise SpecError(path, "(file)", "expected a mapping: decision name -> sentence")
    for name, text in data.items():
        if not isinstance(text, str) or not text.strip():
            raise SpecError(path, str(name), "expected the decision's sentence (a non-empty string)")
    return {str(k): v for k, v in data.items()}


def shared_decisions() -> dict[str, str]:
    """name -> sentence of every shared decision (empty when there is no ``_decisions.yaml``)."""
    path = decisions_path()
    if not path.is_file():
        return {}
    return _load(str(path), path.stat().st_mtime_ns)


def expand_decisions(items: list[Any], file: str) -> list[str]:
    """A spec's ``decisions`` with every ``{shared: NAME}`` replaced by its sentence."""
    out: list[str] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            out.append(item)
            continue
        name = item[SHARED_KEY] if isinstance(item, dict) else getattr(item, SHARED_KEY)
        known = shared_decisions()
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (not in {decisions_path().name})"
            raise SpecError(file, f"decisions[{i}].{SHARED_KEY}", f"unknown shared decision {name!r}{hint}")
        out.append(known[name])
    return out
