"""Explicit random generators; nothing here touches a global RNG implicitly."""

from __future__ import annotations

import random

import numpy as np


def numpy_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def torch_generator(seed: int):
    import torch

    g = torch.Generator()
    g.manual_seed(seed)
    return g


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
