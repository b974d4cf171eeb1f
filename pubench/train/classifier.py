"""What the classifiers on images share (downstream units and end-to-end PU methods): the
data they see (:class:`DownstreamData`), frozen features, the feature standardizer, the
seeded linear head and the evaluation on the test split."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pubench.models.heads import linear_head
from pubench.train.augment import to_float
from pubench.train.context import JobContext
from pubench.train.loop import predict
from pubench.train.metrics import evaluate_scores


@dataclass
class DownstreamData:
    """What a classifier sees. Training rows are the Split's training examples."""

    x_train: torch.Tensor       # uint8 (m, C, H, W)
    observed: torch.Tensor      # int64 (m,): PU 1/0, PNU 1/0/-1, none -1
    y_true: torch.Tensor        # int64 (m,): binarized (or class ids when multi-class)
    split_kind: str             # pu | pnu | none
    n_classes: int              # 2 for binary tasks
    prior: float | None         # the run's prior (data.prior, else the Split's)
    x_test: torch.Tensor        # uint8 (t, C, H, W)
    y_test: torch.Tensor        # int64 (t,)
    mean: list[float]
    std: list[float]
    pu_scheme: str | None = None  # PU split scheme (single_training_set | case_control); None if unknown / not PU
    validation: dict | None = None  # params.data.validation (e.g. 004's clean 10%: {fraction, labels, use})


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


def evaluate_network(model: nn.Module, data: DownstreamData, ctx: JobContext) -> dict[str, float]:
    """Test metrics of a network from images to scores, in eval mode, on the job's device."""
    model.eval()
    device = ctx.device
    out = predict(lambda idx: model(to_float(data.x_test[idx].to(device), data.mean, data.std)), data.x_test.shape[0],
                  ctx)
    return evaluate_scores(out, data.y_test, data.n_classes)


def evaluate_head(head: nn.Module, test_features: torch.Tensor, data: DownstreamData, device) -> dict[str, float]:
    """Test metrics of a head on the test split's (already transformed) features."""
    head.eval()
    with torch.inference_mode():
        out = head(test_features.to(device)).cpu()
    return evaluate_scores(out, data.y_test, data.n_classes)
