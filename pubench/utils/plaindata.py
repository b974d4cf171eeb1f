"""Whether a value parsed from a user's YAML is plain data: what a config becomes (canonical
JSON, a job id, a record) must hold it unchanged.

YAML gives more than JSON can hold: dates (``2026-01-01`` unquoted), ``!!binary``, ``!!set``,
``.nan`` and ``.inf``, mapping keys that are numbers or null, and anchors, whose aliases can
make a value contain itself (``a: &x [*x]``) or repeat a subtree until it is billions of
values long (the "billion laughs"). Each of these once passed the loader and crashed a later
command with a traceback (or hung it); :func:`data_problem` names the first one, with its
place in the file, so the loader can refuse it in one line.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

#: deeper nesting than any spec needs (the deepest committed file has 12 levels)
MAX_DEPTH = 64
#: more values, aliases expanded, than any spec needs (the largest committed file has about 20,000):
#: commands that print or hash a config walk it whole (1,000,000 took `expand` a minute of CPU)
MAX_VALUES = 100_000


def data_problem(value: Any, where: str = "") -> tuple[str, str] | None:
    """``(dotted key, problem)`` of the first part of ``value`` that is not plain data (None,
    bools, integers, finite floats, text, lists, and mappings with text keys), that is nested
    deeper than :data:`MAX_DEPTH` or that contains itself; or of a value with more than
    :data:`MAX_VALUES` parts. None when ``value`` is plain data."""
    found = _problem(value, where, 0, set(), [MAX_VALUES])
    return None if found is None else (found[0] or "(top level)", found[1])


def _problem(value: Any, where: str, depth: int, open_ids: set[int], budget: list[int]) -> tuple[str, str] | None:
    budget[0] -= 1
    if budget[0] < 0:
        return where, (f"more than {MAX_VALUES:,} values once YAML aliases are expanded (an anchor "
                                        "repeated inside itself?)")
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (where, f"{value!r} is not a finite number")
    if isinstance(value, (dict, list)):
        if id(value) in open_ids:
            return where, "contains itself (a YAML alias inside its own anchor)"
        if depth >= MAX_DEPTH:
            return where, f"nested deeper than {MAX_DEPTH} levels"
        open_ids.add(id(value))
        try:
            if isinstance(value, list):
                items = ((f"{where}[{i}]", x) for i, x in enumerate(value))
            else:
                for k in value:
                    if not isinstance(k, str):
                        return where, f"the key {k!r} is a {_kind(k)}, not text (quote it)"
                items = ((f"{where}.{k}" if where else k, x) for k, x in value.items())
            for key, x in items:
                found = _problem(x, key, depth + 1, open_ids, budget)
                if found is not None:
                    return found
        finally:
            open_ids.discard(id(value))
        return None
    if isinstance(value, (datetime.date, datetime.datetime)):
        kind = "timestamp" if isinstance(value, datetime.datetime) else "date"
        return where, f"{value.isoformat()} is a {kind} to YAML, not text: quote it to mean the text"
    return where, f"{_described(value)} is not plain data (text, a number, a list or a mapping)"


def _kind(key: Any) -> str:
    if key is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number"}.get(type(key), type(key).__name__)


def _described(value: Any) -> str:
    if isinstance(value, bytes):
        return "binary data (!!binary)"
    if isinstance(value, (set, frozenset)):
        return "a set (!!set)"
    return f"a {type(value).__name__}"


def value_at(tree: Any, dotted: str, missing: Any = None) -> Any:
    """The value at the dotted path ``dotted`` of nested mappings (``pu_method.lr``); ``missing``
    when a part is absent or its parent is not a mapping."""
    from collections.abc import Mapping

    node = tree
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return missing
        node = node[part]
    return node
