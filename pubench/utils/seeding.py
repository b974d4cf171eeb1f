"""Explicit random generators; nothing here touches a global RNG implicitly."""

from __future__ import annotations

import random

import numpy as np


def numpy_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def torch_generator(seed: int):
    """A CPU ``torch.Generator`` seeded with ``seed``."""
    import torch

    g = torch.Generator()
    g.manual_seed(int(seed))
    return g


def sub_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent 63-bit seeds derived from ``seed`` (numpy SeedSequence)."""
    state = np.random.SeedSequence(int(seed) % (2**128)).generate_state(n, dtype=np.uint64)
    return [int(s) & ((1 << 63) - 1) for s in state]


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch global RNGs (for code we do not control, e.g. init)."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
