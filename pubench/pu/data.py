"""What a classifier on images sees (:class:`DownstreamData`: a Split's training examples and
the test split) and its test metrics. Built by the image tasks
(:func:`pubench.tasks._image_common.prepare_data`), read by the PU methods of this package
and the downstream classifiers (:mod:`pubench.downstream`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

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
