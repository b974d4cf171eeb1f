"""Helpers shared by the backbones (not a unit: the registry skips ``_`` modules)."""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn


def count_parameters(*modules: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters (BatchNorm running statistics are buffers, not counted).

    This is what the papers' printouts count (``sum(p.numel() for p in model.parameters())``).
    """
    return sum(
        p.numel() for m in modules for p in m.parameters() if p.requires_grad or not trainable_only
    )


def build_backbone(name: str, in_channels: int, seed: int | None = None, *,
                   factory: Callable[..., nn.Module] | None = None, **kwargs: Any) -> nn.Module:
    """``BACKBONES.get(name)(in_channels, **kwargs)``; with ``seed`` the initial weights are
    drawn from ``torch.manual_seed(seed)`` inside :func:`torch.random.fork_rng`, so they depend
    on ``seed`` only and the caller's global RNG state is left untouched. ``factory``: what
    builds it instead of the registered one (a job's data source may stand in for a
    pretrained encoder's weights: :meth:`pubench.data.source.DataSource.pretrained`)."""
    from pubench.models.base import BACKBONES

    factory = factory or BACKBONES.get(name)
    if seed is None:
        return factory(in_channels, **kwargs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return factory(in_channels, **kwargs)


def scaled(channels: int, width: float) -> int:
    """``channels * width`` rounded, at least 1 (for the reduced-tier width multipliers)."""
    if width <= 0:
        raise ValueError(f"width must be > 0, got {width}")
    return max(1, round(channels * width))


def conv_out(size: int, kernel: int, stride: int = 1, padding: int = 0) -> int:
    """Spatial size after a convolution or pooling (floor, as PyTorch computes it)."""
    return (size + 2 * padding - kernel) // stride + 1


def check_input(module: nn.Module, x: torch.Tensor, in_channels: int, input_size: int | None) -> None:
    """Clear error for inputs a fixed-size backbone was not built for."""
    if x.dim() != 4 or x.shape[1] != in_channels:
        raise ValueError(
            f"{type(module).__name__} expects float (n, {in_channels}, H, W) input, got {tuple(x.shape)}"
        )
    if input_size is not None and (x.shape[2] != input_size or x.shape[3] != input_size):
        raise ValueError(
            f"{type(module).__name__} was built for {input_size}x{input_size} inputs (its flatten "
            f"width depends on it), got {x.shape[2]}x{x.shape[3]}; pass input_size={x.shape[2]}"
        )


class GlobalAvgPool(nn.Module):
    """Global average pooling to ``(n, C, 1, 1)``: ``adaptive_avg_pool2d(x, 1)`` on the CPU
    (the op of every committed CPU result, kept bit for bit), a mean over H and W on CUDA,
    where adaptive_avg_pool2d's backward has no deterministic kernel and raises under
    ``torch.use_deterministic_algorithms(True)``, which CUDA jobs run with
    (:func:`pubench.numerics.apply`). No parameters: checkpoints of ``nn.AdaptiveAvgPool2d(1)``
    load unchanged."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.is_cuda:
            return x.mean(dim=(2, 3), keepdim=True)
        return F.adaptive_avg_pool2d(x, 1)
