"""Build typed config dataclasses from spec params: unknown, missing or mistyped keys fail.

Units keep their plain dataclasses; :func:`build_config` validates params with a strict
pydantic model generated from the dataclass (same fields, types and defaults; unknown
keys forbidden, no coercion: ``"1e-3"`` is not a float, ``yes`` not a bool, an int is a
float) and returns an instance of the dataclass. Errors are one line with a dotted
location: ``params.pretrain.optimizer: unknown key 'momentun' (known: ...)``.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError, create_model

from pubench.errors import PubenchError
from pubench.utils.validation import STRICT, first_problem

T = TypeVar("T")


class ConfigError(PubenchError, ValueError):
    pass


def _annotation(hint: Any) -> Any:
    """The pydantic annotation of a dataclass field type (nested dataclasses -> models,
    tuples -> lists: YAML has no tuples)."""
    if dataclasses.is_dataclass(hint):
        return _model(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_annotation(a) for a in args)]
    if origin in (list, tuple):
        return list[_annotation(args[0])] if args else list
    return hint


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    """The field types of a dataclass. Memoized: resolving the string annotations (``from
    __future__ import annotations``) compiles each one, and `pubench coverage` builds about
    17,000 configs on a cold cache (a third of its first call's time went here)."""
    return typing.get_type_hints(cls)


@functools.lru_cache(maxsize=None)
def _model(cls: type) -> type[BaseModel]:
    hints = _hints(cls)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = Field(default_factory=f.default_factory)
        else:
            default = ...
        fields[f.name] = (_annotation(hints[f.name]), default)
    model = create_model(cls.__name__, __config__=STRICT, **fields)
    model.__dataclass__ = cls
    return model


def _convert(hint: Any, value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _instance(type(value).__dataclass__, value)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return value
    if origin in (list, tuple) and isinstance(value, list):
        items = [_convert(args[0] if args else Any, v) for v in value]
        return tuple(items) if origin is tuple else items
    return value


def _instance(cls: type, model: BaseModel) -> Any:
    hints = _hints(cls)
    return cls(**{name: _convert(hints[name], getattr(model, name)) for name in model.model_fields_set})


def build_config(cls: type[T], params: dict[str, Any], where: str = "params") -> T:
    """``cls(**params)`` with checks: every key known, every required key present, types right."""
    if not isinstance(params, dict):
        raise ConfigError(f"{where}: expected a mapping, got {params!r}")
    model = _model(cls)
    try:
        validated = model.model_validate(params)
    except ValidationError as e:
        key, problem = first_problem(e, model, style="config")
        raise ConfigError(f"{where}.{key}: {problem}" if key else f"{where}: {problem}") from None
    return _instance(cls, validated)
