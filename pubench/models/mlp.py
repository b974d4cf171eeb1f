"""``mlp_001``: the MNIST multi-layer perceptron of puNCE (paper 001, App. A.1.3).

Printed architecture (001, A.1.3, ``MLPContrastive``)::

    backbone:  Linear(784, 5000) - BatchNorm1d(5000) - ReLU
               Linear(5000, 5000) - BatchNorm1d(5000) - ReLU
               Linear(5000, 50)   - BatchNorm1d(50)   - ReLU
    projector: Linear(50, 300) - BatchNorm1d(300) - ReLU - Linear(300, 50)
    online_head: Linear(50, 1)
    "Num of Params = 29231151"

The printed total counts all three modules (every Linear has a bias, BN counts its affine
weight and bias; running statistics are buffers):

    backbone     784*5000+5000 + 2*5000 + 5000*5000+5000 + 2*5000 + 5000*50+50 + 2*50 = 29,200,150
    projector    50*300+300 + 2*300 + 300*50+50                                         =     30,950
    online_head  50+1                                                                   =         51
    total                                                                                 29,231,151  (exact)

This module is the ``backbone`` (out_dim 50, the representation the linear probe reads);
the projector is ``heads.projection_head(50, 300, 50)`` and the online head
``heads.linear_head(50, 1)``; ``tests/models/test_backbones.py`` checks the three add up to
the printed total.

Kwargs (the printed architecture is the default):
    input_size: int = 28   side of the square input; in_features = in_channels * input_size**2
    hidden: int = 5000     width of the two hidden layers (reduced tiers)
    out_dim: int = 50      representation width

Deviations: none in structure. Weight initialisation is PyTorch's default (the paper
does not say).
"""

from __future__ import annotations

import itertools

import torch
from torch import nn

from pubench.models.base import BACKBONES
from pubench.models._common import check_input


class MLP001(nn.Module):
    """Flatten -> [Linear - BatchNorm1d - ReLU] x 3 (784-5000-5000-50 by default)."""

    def __init__(self, in_channels: int = 1, input_size: int = 28, hidden: int = 5000, out_dim: int = 50):
        super().__init__()
        if hidden < 1 or out_dim < 1 or input_size < 1:
            raise ValueError("mlp_001: hidden, out_dim and input_size must be >= 1")
        self.in_channels, self.input_size = in_channels, input_size
        in_features = in_channels * input_size * input_size
        widths = [in_features, hidden, hidden, out_dim]
        layers: list[nn.Module] = []
        for a, b in itertools.pairwise(widths):
            layers += [nn.Linear(a, b), nn.BatchNorm1d(b), nn.ReLU(inplace=True)]
        self.backbone = nn.Sequential(*layers)
        self.out_dim = out_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_input(self, x, self.in_channels, self.input_size)
        return self.backbone(x.flatten(1))


@BACKBONES.register("mlp_001", test_config={"input": [1, 28, 28], "kwargs": {"hidden": 64}})
def mlp_001(in_channels: int, **kwargs) -> MLP001:
    """001's MNIST MLP (A.1.3): 784-5000-5000-50, each Linear followed by BN and ReLU."""
    return MLP001(in_channels, **kwargs)
