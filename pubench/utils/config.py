"""Build typed config dataclasses from spec params: unknown, missing or mistyped keys fail."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar

from pubench.errors import PubenchError

T = TypeVar("T")


class ConfigError(PubenchError, ValueError):
    pass


def _check_type(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        for h in typing.get_args(hint):
            try:
                return _check_type(value, h, where)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: {value!r} does not match {hint}")
    if hint is type(None):
        if value is not None:
            raise ConfigError(f"{where}: expected null, got {value!r}")
        return None
    if dataclasses.is_dataclass(hint):
        return build_config(hint, value, where)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        args = typing.get_args(hint)
        inner = args[0] if args else Any
        items = [_check_type(v, inner, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(hint, type) and not isinstance(value, hint) or (hint in (int, float) and isinstance(value, bool)):
        raise ConfigError(f"{where}: expected {getattr(hint, '__name__', hint)}, got {value!r}")
    return value


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def build_config(cls: type[T], params: dict[str, Any], where: str = "params") -> T:
    """``cls(**params)`` with checks: every key known, every required key present, types right."""
    if not isinstance(params, dict):
        raise ConfigError(f"{where}: expected a mapping, got {params!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(params) - set(fields)
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} (known: {', '.join(sorted(fields))})")
    hints = _hints(cls)
    kwargs = {}
    for name, f in fields.items():
        if name not in params:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{where}: missing key {name!r}")
            continue
        kwargs[name] = _check_type(params[name], hints[name], f"{where}.{name}")
    return cls(**kwargs)
