"""Canonical JSON, config hashes and seeds derived from named parts."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: equal configs give equal strings.

    Floats that are integral are kept as floats (``1.0`` and ``1`` differ), which is
    what YAML gave us; key order never matters.
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def config_hash(obj: Any, length: int = 16) -> str:
    """Hex SHA-256 of the canonical JSON of ``obj``, truncated to ``length`` digits."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from named parts, e.g. ``derive_seed("data", "table1-punce", cfg, 0)``.

    Stable across processes and Python versions (no use of ``hash()``).
    """
    digest = hashlib.sha256(canonical_json(list(parts)).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
