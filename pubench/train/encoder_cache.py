"""A content-addressed cache of pre-trained encoders.

Pre-training is deterministic on CPU given its config, its seeds and the code, so two
cells that pre-train identically (one encoder under two downstream classifiers: a linear
probe and fine-tuning, nnPU and puPL) can share it. The key hashes the data, model and
pre-training params, the seeds that reach pre-training and a fingerprint of the package
source and the job's numerics profile, so any code change misses. Writes are atomic; a corrupt or missing entry is a
miss. ``PUBENCH_ENCODER_CACHE=0`` turns it off; ``PUBENCH_CACHE`` moves it
(default ``<project>/.cache``).
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
from pathlib import Path
from typing import Any

import torch

import pubench
from pubench.utils.hashing import config_hash


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 over the package's Python sources (path and bytes), in path order."""
    root = Path(pubench.__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    from pubench.paths import project_root

    return Path(os.environ.get("PUBENCH_CACHE") or project_root() / ".cache") / "encoders"


def enabled() -> bool:
    return os.environ.get("PUBENCH_ENCODER_CACHE", "1") not in ("0", "false", "no")


def encoder_key(params: dict[str, Any], seeds: dict[str, Any]) -> str:
    """Config, seeds, code and the running job's numerics profile (device, threads, CPU
    code paths, torch): an encoder trained under other numerics is a different encoder."""
    from pubench import numerics

    return config_hash({"params": params, "seeds": seeds, "code": code_fingerprint(),
                        "numerics": numerics.current().to_dict()}, length=24)


def load(key: str) -> tuple[dict, dict] | None:
    """(encoder state dict, pre-training history) or None."""
    path = cache_root() / f"{key}.pt"
    if not enabled() or not path.exists():
        return None
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        return blob["encoder"], blob["history"]
    except Exception:  # noqa: BLE001 - an unreadable entry is a miss; it gets rewritten
        return None


def save(key: str, encoder_state: dict, history: dict) -> None:
    if not enabled():
        return
    from pubench.utils.io import TMP_PREFIX

    folder = cache_root()
    folder.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save({"encoder": encoder_state, "history": history}, buf)
    tmp = folder / f"{TMP_PREFIX}{key}-{os.getpid()}"
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, folder / f"{key}.pt")
