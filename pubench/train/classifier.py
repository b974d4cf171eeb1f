"""What the classifiers on images share (downstream units and end-to-end PU methods) besides
the data they see (:class:`pubench.pu.data.DownstreamData`): frozen features, the feature
standardizer and the seeded linear head."""

from __future__ import annotations

import torch
from torch import nn

from pubench.models.heads import linear_head
from pubench.train.augment import to_float
from pubench.train.context import JobContext
from pubench.train.loop import predict


@torch.no_grad()
def encode(encoder: nn.Module, x: torch.Tensor, mean, std, ctx: JobContext, chunk: int = 512) -> torch.Tensor:
    """Features of uint8 images with the encoder in eval mode (on the CPU, float32), on the
    job's device."""
    encoder.eval()
    device = ctx.device
    return predict(lambda idx: encoder(to_float(x[idx].to(device), mean, std)), x.shape[0], ctx, chunk)


def feature_standardizer(feats: torch.Tensor, on: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(shift, scale) z-scoring each feature with the training features' mean / std
    (identity when ``on`` is false; constant features keep scale 1)."""
    if not on:
        return torch.zeros(feats.shape[1]), torch.ones(feats.shape[1])
    sd = feats.std(0)
    return feats.mean(0), torch.where(sd > 1e-8, sd, torch.ones_like(sd))


def seeded_head(in_dim: int, n_out: int, seed: int, device="cpu") -> nn.Module:
    """``linear_head(in_dim, n_out)`` initialised from ``seed`` (the global RNG is left alone)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return linear_head(in_dim, n_out).to(device)
