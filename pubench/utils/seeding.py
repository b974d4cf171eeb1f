"""Explicit random generators; nothing here touches a global RNG implicitly."""

from __future__ import annotations

import numpy as np


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
