"""A content-addressed cache of pre-trained encoders.

Pre-training is deterministic on CPU given its config, its seeds and the code, so two
cells that pre-train identically (one encoder under two downstream classifiers: a linear
probe and fine-tuning, nnPU and puPL) can share it. The key hashes the data, model and
pre-training params, the seeds that reach pre-training and a fingerprint of the package
source and the job's numerics profile, so any code change misses.

A hit must leave the job exactly where a fresh pre-training would: an entry holds, besides
the encoder's weights and the pre-training history, the process-wide random states
(torch, NumPy, Python) and the encoder's train/eval mode as pre-training left them, and a
hit restores them, so a downstream stage that draws from a global generator draws the same
numbers after a hit as after a fresh run (``tests/train/test_encoder_cache.py`` checks hit
== cache off bit for bit for every spec that shares encoders). Entries are read with
``weights_only=True`` (nothing in a cache file runs code). Writes are atomic; a corrupt,
old-format or missing entry is a miss; a write that fails (disk full) warns and the job
goes on without caching. ``PUBENCH_ENCODER_CACHE=0`` turns it off; ``PUBENCH_CACHE`` moves
it (default ``<project>/.cache``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pubench.numerics import Numerics
from pubench.utils.hashing import code_fingerprint, config_hash


def cache_root() -> Path:
    from pubench.paths import project_root

    return Path(os.environ.get("PUBENCH_CACHE") or project_root() / ".cache") / "encoders"


def enabled() -> bool:
    return os.environ.get("PUBENCH_ENCODER_CACHE", "1") not in ("0", "false", "no")


def encoder_key(params: dict[str, Any], seeds: dict[str, Any], numerics: Numerics) -> str:
    """Config, seeds, code and the job's numerics profile (device, threads, CPU code paths,
    torch): an encoder trained under other numerics is a different encoder."""
    return config_hash({"params": params, "seeds": seeds, "code": code_fingerprint(),
                        "numerics": numerics.to_dict()}, length=24)


FORMAT = 2   # 2: random states and train mode after pre-training (format 1 entries miss)


def load(key: str) -> dict[str, Any] | None:
    """The entry of ``key`` (``encoder`` state dict, ``history``, ``rng`` states,
    ``training`` mode) or None."""
    path = cache_root() / f"{key}.pt"
    if not enabled() or not path.exists():
        return None
    from pubench.train.checkpoint import safe_load

    try:
        blob = safe_load(path)
    except Exception:  # noqa: BLE001 - an unreadable or unsafe entry is a miss; it gets rewritten
        return None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT or blob.get("key") != key:
        return None
    return blob


def save(key: str, encoder_state: dict, history: dict, rng: dict, training: bool) -> None:
    """Store an entry (``rng``: :func:`pubench.train.checkpoint.global_rng_state` right after
    pre-training). A failed write only costs the cache (a warning)."""
    if not enabled():
        return
    import warnings

    from pubench.errors import StorageError
    from pubench.train.checkpoint import CheckpointWarning, atomic_save

    try:
        atomic_save({"format": FORMAT, "key": key, "encoder": encoder_state, "history": history, "rng": rng,
                     "training": training}, cache_root() / f"{key}.pt")
    except StorageError as exc:
        warnings.warn(f"encoder cache not written ({exc}); the job goes on", CheckpointWarning, stacklevel=2)
