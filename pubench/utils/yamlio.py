"""YAML through libyaml's C loader where PyYAML was built with it (10-20x faster than the
pure-Python ``yaml.safe_load``; the same safe constructors, so the same Python objects)."""

from __future__ import annotations

from typing import Any

import yaml

try:
    SafeLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    SafeLoader = yaml.SafeLoader


def safe_load(text: str) -> Any:
    """``yaml.safe_load(text)``, with the C loader when there is one."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader
