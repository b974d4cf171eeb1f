"""YAML through libyaml's C loader where PyYAML was built with it (10-20x faster than the
pure-Python ``yaml.safe_load``; the same safe constructors, so the same Python objects), and
the reading of the registry's YAML files (:func:`read_yaml`: any problem is a
:class:`~pubench.errors.SpecError` naming the file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pubench.errors import SpecError

try:
    SafeLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    SafeLoader = yaml.SafeLoader


def safe_load(text: str) -> Any:
    """``yaml.safe_load(text)``, with the C loader when there is one."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; :class:`SpecError` when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(str(path), "(encoding)", f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise SpecError(str(path), "(file)", e.strerror or str(e)) from None


def parse_mapping(text: str, path: Path) -> dict[str, Any]:
    """``text`` (the content of ``path``) as a YAML mapping; :class:`SpecError` otherwise."""
    try:
        data = safe_load(text)
    except yaml.YAMLError as e:
        raise SpecError(str(path), "(yaml)", str(e).replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise SpecError(str(path), "(top level)", "expected a mapping")
    return data


def read_yaml(path: Path) -> dict[str, Any]:
    """The YAML mapping in ``path``; :class:`SpecError` naming the file when it is none."""
    return parse_mapping(read_text(path), path)
