"""One-line messages for pydantic validation errors (specs and unit configs share them).

pydantic reports every problem with a location tuple; pubench prints one line: the first
problem (unknown keys first, then missing ones, then the rest), its dotted location and a
short phrase (``expected float, got str 'high'``, ``missing``, ``unknown key (allowed: ...)``).
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

#: Models of pubench's file formats: unknown keys are errors, no type coercion
#: (``"1.0"`` is not a float, ``yes`` is not a boolean; an int is a float).
STRICT = ConfigDict(extra="forbid", strict=True)

_EXPECTED = {
    "float_type": "float", "int_type": "int", "bool_type": "bool", "string_type": "str", "dict_type": "a mapping",
    "list_type": "a list", "model_type": "a mapping", "model_attributes_type": "a mapping", "tuple_type": "a list",
    "int_from_float": "int", "finite_number": "a finite number",
}
_PRIORITY = {"extra_forbidden": 0, "missing": 1}


def dotted(loc: tuple) -> str:
    """``("reported", "cells", 0, "mean")`` -> ``reported.cells[0].mean``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _unwrap(hint: Any) -> Any:
    """``X | None`` -> ``X`` (other unions are kept)."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]
    return hint


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def walk(root: Any, loc: tuple) -> tuple[Any, int]:
    """The type annotation at ``loc`` below ``root`` and how many loc parts it consumed
    (fewer than ``len(loc)`` when a union's member tag follows: the rest names no key)."""
    hint = root
    for i, part in enumerate(loc):
        hint = _unwrap(hint)
        if _is_union(hint):
            return hint, i
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            field = hint.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                return None, i
            hint = field.annotation
            continue
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is dict and len(args) == 2:
            hint = args[1]
        elif origin in (list, tuple) and args:
            hint = args[0]
        else:
            return None, i
    return _unwrap(hint), len(loc)


def _value(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def first_problem(err: ValidationError, root: type[BaseModel], style: str = "spec") -> tuple[str, str]:
    """(dotted key, problem) of the first error of ``err`` raised by model ``root``.

    ``style="spec"``: ``id: missing``, ``colour: unknown key (allowed: ...)``; models may
    refine these with class attributes ``missing_hints`` (field -> phrase),
    ``missing_at_parent`` (field -> phrase reported at the parent key) and ``extra_hint``.
    ``style="config"``: the phrases of unit configs: ``params.x: missing key 'lr'``,
    ``params.x: unknown key 'momentum' (known: ...)``.
    """
    def order(ie: tuple[int, dict]) -> tuple:
        i, e = ie  # unknown keys first (alphabetically), then missing ones, then the rest as reported
        extra = e["type"] == "extra_forbidden"
        return _PRIORITY.get(e["type"], 2), dotted(tuple(e["loc"])) if extra else "", i

    errors = sorted(enumerate(err.errors()), key=order)
    e = errors[0][1]
    loc, kind, given = tuple(e["loc"]), e["type"], e.get("input")
    hint, used = walk(root, loc)
    if used < len(loc) and _is_union(hint):  # a union: report it once, at the field
        return dotted(loc[:used]), f"{_value(given)} does not match {_union_text(hint)}"
    parent, _ = walk(root, loc[:-1])
    parent = parent if isinstance(parent, type) and issubclass(parent, BaseModel) else None
    name = loc[-1] if loc else ""
    if kind == "missing":
        if style == "config":
            return dotted(loc[:-1]), f"missing key {name!r}"
        at_parent = getattr(parent, "missing_at_parent", {}).get(name)
        if at_parent:
            return dotted(loc[:-1]), at_parent.format(name=name)
        return dotted(loc), getattr(parent, "missing_hints", {}).get(name, "missing")
    if kind == "extra_forbidden":
        known = ", ".join(sorted(parent.model_fields)) if parent else ""
        if style == "config":
            return dotted(loc[:-1]), f"unknown key {name!r} (known: {known})"
        return dotted(loc), getattr(parent, "extra_hint", "unknown key (allowed: {known})").format(known=known)
    if kind in _EXPECTED:
        got = f"{type(given).__name__} {_value(given)}" if style == "spec" else _value(given)
        return dotted(loc), f"expected {_EXPECTED[kind]}, got {got}"
    if kind == "literal_error":
        return dotted(loc), f"{_value(given)} is not one of {e['ctx']['expected']}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        bound = next(iter(e["ctx"].values()))
        return dotted(loc), f"must be {op} {bound}, got {_value(given)}"
    if kind == "too_short":
        return dotted(loc), "empty"
    if kind == "value_error":  # our validators: the message is the problem
        return dotted(loc), str(e["ctx"]["error"])
    return dotted(loc), f"{e['msg']} (got {_value(given)})"


def _union_text(hint: Any) -> str:
    return " | ".join(getattr(a, "__name__", str(a)) for a in typing.get_args(hint))
