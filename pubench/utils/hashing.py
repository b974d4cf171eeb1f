"""Canonical JSON, config hashes and seeds derived from named parts."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: equal configs give equal strings.

    Floats that are integral are kept as floats (``1.0`` and ``1`` differ), which is
    what YAML gave us; key order never matters.
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def canonical_json_of_parts(encoded: Mapping[str, str]) -> str:
    """:func:`canonical_json` of a mapping, given the canonical JSON of each of its values: its
    keys sorted, each with its value's text, so a part that many mappings share (a cell's params,
    shared by its seeds) is encoded once."""
    return "{" + ",".join(f"{canonical_json(k)}:{encoded[k]}" for k in sorted(encoded)) + "}"


def text_hash(text: str, length: int = 16) -> str:
    """Hex SHA-256 of ``text``, truncated to ``length`` digits."""
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def config_hash(obj: Any, length: int = 16) -> str:
    """Hex SHA-256 of the canonical JSON of ``obj``, truncated to ``length`` digits."""
    return text_hash(canonical_json(obj), length)


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from named parts, e.g. ``derive_seed("data", "table1-punce", cfg, 0)``.

    Stable across processes and Python versions (no use of ``hash()``).
    """
    digest = hashlib.sha256(canonical_json(list(parts)).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 over the package's Python sources (path and bytes), in path order: what a
    cached encoder or a training checkpoint was made by (any code change misses)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]
