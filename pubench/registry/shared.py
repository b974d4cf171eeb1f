"""Shared texts (``experiments/_shared.yaml``): a decision or note several specs make word for
word, written once.

A spec's ``decisions`` and ``reported.notes`` (in its notes file, :mod:`pubench.registry.notes`, or in
the spec) hold sentences, or ``{shared: NAME}`` for a text
of the shared file (name -> the sentence); so may ``reported.pm``. The loader puts the sentence
in its place, so the spec, and every report that prints it, read the same either way::

    decisions:
      - "Epochs: 30, our choice."          # this spec's own
      - {shared: pupl_puPL_variant}        # one sentence written in _shared.yaml

Write a text once there when two or more specs use it word for word; one that only one spec
uses belongs in that spec (a repeat inside one spec: a YAML anchor).
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


def shared_path() -> Path:
    return experiments_root() / "_shared.yaml"


@functools.lru_cache(maxsize=4)
def _load(path: str, stamp: int) -> dict[str, str]:
    data = read_yaml(Path(path))
    for name, text in data.items():
        if not isinstance(text, str) or not text.strip():
            raise SpecError(path, str(name), "expected the shared sentence (a non-empty string)")
    return {str(k): v for k, v in data.items()}


def shared_texts() -> dict[str, str]:
    """name -> sentence of every shared text (empty when there is no ``_shared.yaml``)."""
    path = shared_path()
    if not path.is_file():
        return {}
    return _load(str(path), path.stat().st_mtime_ns)


def expand_shared(item: Any, file: str, where: str) -> Any:
    """``item`` (a sentence, None, or a ``{shared: NAME}`` mapping or model) as its sentence."""
    if item is None or isinstance(item, str):
        return item
    name = item[SHARED_KEY] if isinstance(item, dict) else getattr(item, SHARED_KEY)
    known = shared_texts()
    if name not in known:
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f" (not in {shared_path().name})"
        raise SpecError(file, f"{where}.{SHARED_KEY}", f"unknown shared text {name!r}{hint}")
    return known[name]


def expand_shared_list(items: list[Any], file: str, where: str) -> list[str]:
    """A list of sentences and ``{shared: NAME}`` items as sentences."""
    return [expand_shared(x, file, f"{where}[{i}]") for i, x in enumerate(items)]
