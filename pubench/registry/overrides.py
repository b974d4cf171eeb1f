"""``key.path=value`` overrides of a job's params (Hydra-style), for variants of a cell that
no committed spec holds: ``pubench run --set`` (a ``custom`` tier) and the cost/quality
measurements of ``benchmarks/regime.py``.

A value is read as YAML (``4`` is an int, ``[3, 32, 32]`` a list, ``null`` None, ``adam`` a
string); a path creates the mappings it names. ``a.b=~`` deletes ``a.b``.
"""

from __future__ import annotations

import copy
from typing import Any

from pubench.errors import PubenchError, shorten


class OverrideError(PubenchError, ValueError):
    """An override that is not ``key.path=value``, or that names a path through a non-mapping."""


def parse_override(text: str) -> tuple[list[str], Any, bool]:
    """``(path, value, delete)`` of ``"a.b=value"`` (``delete`` for ``a.b=~``)."""
    from pubench.utils.plaindata import data_problem
    from pubench.utils.yamlio import NotYamlValue, load_value

    key, sep, raw = text.partition("=")
    path = key.strip().split(".")
    if not sep or not key.strip() or any(not p for p in path):
        raise OverrideError(f"--set {shorten(text, 60)!r}: expected key.path=value (e.g. pretrain.epochs=20)")
    if raw.strip() == "~":
        return path, None, True
    try:
        value = load_value(raw) if raw.strip() else ""
    except NotYamlValue as e:
        raise OverrideError(f"--set {shorten(text, 60)!r}: {e}") from None
    if isinstance(value, str):  # YAML 1.1 reads 5e-5 as a string; a user means the number
        try:
            value = float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            pass
    problem = data_problem(value, ".".join(path))
    if problem is not None:
        key, why = problem
        where = "" if key == ".".join(path) else f"at {shorten(key, 60)!r}: "
        raise OverrideError(f"--set {shorten(text, 60)!r}: {where}{why}")
    return path, value, False


def apply_overrides(params: dict[str, Any], overrides: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """A copy of ``params`` with every override applied, in order."""
    out = copy.deepcopy(params)
    for text in overrides:
        path, value, delete = parse_override(text)
        node = out
        for i, key in enumerate(path[:-1]):
            nxt = node.get(key)
            if nxt is None:
                nxt = node[key] = {}
            if not isinstance(nxt, dict):
                raise OverrideError(f"--set {shorten(text, 60)!r}: {'.'.join(path[:i + 1])} is "
                                    f"{type(nxt).__name__}, not a mapping")
            node = nxt
        if delete:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value
    return out


def overridden_deviations(deviations: list[str], overrides: list[str] | tuple[str, ...]) -> list[str]:
    """A base tier's deviations as a variant reads them: one that names the last key of an
    override (``M`` of ``data.M=100``, as a word) is marked as overridden, since what it says of
    that key (``M = 40 anchors``) no longer holds."""
    import re

    out = []
    for text in deviations:
        hits = [o for o in overrides if re.search(rf"(?<![\w.]){re.escape(parse_override(o)[0][-1])}(?![\w])", text)]
        out.append(f"(overridden by {', '.join(f'`--set {o}`' for o in hits)}) {text}" if hits else text)
    return out
