"""Shared training prefixes: a run that stops early in a longer run continues another job's.

A pre-training with ``eval_at_epoch: E`` is epoch ``E`` of one ``epochs``-long run
(:mod:`pubench.frameworks.pretrain`): the columns of a learning curve (fig5-pupl: epochs 1, 2, 4,
8, 12 of one 12-epoch run) are prefixes of each other. Trained from epoch 0 each, a curve of
columns 1, 2, 4, 8, 12 costs 27 epochs; continued from each other, 12.

A run that declares a *prefix key* (the hash of everything its epochs depend on except the
epoch it stops at: config, seeds, code, numerics, as :func:`encoder_cache.encoder_key`)
stores, after its last epoch, what a checkpoint holds (:mod:`pubench.train.checkpoint`:
modules, optimizer, scheduler, registered generators and queues, the global random states,
the epochs' statistics). A later run of the same key loads the stored state when it stopped
at or before its own last epoch and continues from there. Restoring a checkpoint at an epoch
boundary continues bit for bit (tests/train/test_checkpoint.py), so its numbers are those of
a run from epoch 0 (tests/train/test_prefix_cache.py): like the encoder cache, it changes how
long a job takes, never its result; the job's record says where it started.

One file per key, replaced only by a later epoch: jobs in column order (1, 2, 4, ...) each
continue the previous one; a run that stops before the stored epoch trains from epoch 0.
Writes are atomic; a corrupt, foreign or unsafe entry is a miss (an unreadable one is deleted
with a one-line warning). Entries are read with ``torch.load(weights_only=True)``
(:func:`pubench.train.checkpoint.safe_load`): a crafted file never runs code. It shares the encoder cache's switch
and root (``PUBENCH_ENCODER_CACHE=0`` turns both off; ``<PUBENCH_CACHE>/prefixes``).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from pubench.train import encoder_cache
from pubench.utils.hashing import code_fingerprint

FORMAT = 1


def root() -> Path:
    return encoder_cache.cache_root().parent / "prefixes"


def _path(key: str) -> Path:
    return root() / f"{key}.pt"


def _read(key: str) -> dict[str, Any] | None:
    path = _path(key)
    if not path.exists():
        return None
    from pubench.train.checkpoint import CheckpointWarning, safe_load

    try:
        payload = safe_load(path)
    except Exception as exc:  # noqa: BLE001 - an unreadable or unsafe entry is a miss; a later store replaces it
        warnings.warn(f"discarding prefix-cache entry {path} (unreadable: {type(exc).__name__}); the run trains "
                      "from epoch 0", CheckpointWarning, stacklevel=2)
        path.unlink(missing_ok=True)
        return None
    ok = (isinstance(payload, dict) and payload.get("format") == FORMAT and payload.get("key") == key
          and payload.get("code") == code_fingerprint())
    return payload if ok else None


def load(key: str, max_epoch: int) -> dict[str, Any] | None:
    """The stored state of ``key`` (a checkpoint payload: ``epoch``, ``trainer``, ``rng``,
    ``history``) if its epoch is at most ``max_epoch``; None otherwise or when off."""
    if not encoder_cache.enabled():
        return None
    from pubench.train.checkpoint import progress_problem

    payload = _read(key)
    if payload is None or progress_problem(payload, 1, max_epoch) is not None:
        return None  # none, or one that stopped later than this run (or cannot be resumed)
    return payload


def store(key: str, epoch: int, trainer_state: dict[str, Any], rng: dict[str, Any], history: list) -> bool:
    """Store the state after ``epoch`` epochs unless a later (or the same) epoch is stored.
    Returns whether it wrote."""
    if not encoder_cache.enabled():
        return False
    held = _read(key)
    if held is not None and isinstance(held.get("epoch"), int) and held["epoch"] >= epoch:
        return False
    from pubench.train.checkpoint import atomic_save

    root().mkdir(parents=True, exist_ok=True)
    atomic_save({"format": FORMAT, "key": key, "code": code_fingerprint(), "epoch": epoch,
                 "trainer": trainer_state, "rng": rng, "history": history}, _path(key))
    return True
