"""``lenet5``: the LeNet-5 of paper 003 (puPL) for Fashion-MNIST.

003, Sec. 9.1: "We use LeNet-5 (LeCun et al., 1998) for FMNIST experiments", closely
following the setups of Chen et al. 2020a (vPU) and Li et al. 2022 (P3Mix). 003 prints no
architecture. We build the network of the vPU reference code for Fashion-MNIST (the cited
setup; model ``NetworkPhi`` of ``model_fashionmnist.py`` in github.com/HC-Feynman/vpu),
the usual ReLU / max-pool modernisation of LeNet-5::

    Conv2d(1, 6, 5, padding=2)  - MaxPool2d(2) - ReLU      28x28 -> 14x14
    Conv2d(6, 16, 5)            - MaxPool2d(2) - ReLU      14x14 -> 5x5
    Conv2d(16, 120, 5)          - ReLU                      5x5  -> 1x1
    flatten 120 - Linear(120, 84) - BatchNorm1d(84) - ReLU  -> features (out_dim 84)
    [output layer Linear(84, k): heads.linear_head(84, k), not part of the backbone]

Parameters: 156 + 2,416 + 48,120 + 10,164 + 168 = 61,024 (backbone); + 85 for a
``linear_head(84, 1)``; + 170 for vPU's two-logit output ``linear_head(84, 2)``.

Differences from the reference: the vPU module also defines ``bn_conv1`` (BatchNorm2d(6))
and ``bn_conv2`` (BatchNorm2d(16)) but never calls them in ``forward``; we leave them out
(44 parameters that receive no gradient). Max-pool before ReLU as in the reference (the two
commute). Differences from LeCun et al. 1998: ReLU instead of scaled tanh, max-pooling
instead of trainable sub-sampling, full C3 connectivity, BN on F6, no RBF output layer --
the form in which PU papers use "LeNet-5". PyTorch's default initialisation.

Kwargs:
    input_size: int = 28   side of the square input (>= 28); the flatten width is
                           120 * r**2 with r = (floor(s/2) - 4) // 2 - 4 (1 at 28, 2 at 32)
"""

from __future__ import annotations

import torch
from torch import nn

from pubench.models.base import BACKBONES
from pubench.models._common import check_input, conv_out


class LeNet5(nn.Module):
    def __init__(self, in_channels: int = 1, input_size: int = 28):
        super().__init__()
        self.in_channels, self.input_size = in_channels, input_size
        s = conv_out(conv_out(input_size, 5, 1, 2), 2, 2)
        s = conv_out(conv_out(s, 5), 2, 2)
        s = conv_out(s, 5)
        if s < 1:
            raise ValueError(f"lenet5: input_size {input_size} is too small (needs >= 28)")
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5, padding=2), nn.MaxPool2d(2), nn.ReLU(inplace=True),
            nn.Conv2d(6, 16, 5), nn.MaxPool2d(2), nn.ReLU(inplace=True),
            nn.Conv2d(16, 120, 5), nn.ReLU(inplace=True),
        )
        self.flat_dim = 120 * s * s
        self.fc = nn.Sequential(nn.Linear(self.flat_dim, 84), nn.BatchNorm1d(84), nn.ReLU(inplace=True))
        self.out_dim = 84

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_input(self, x, self.in_channels, self.input_size)
        return self.fc(self.features(x).flatten(1))


@BACKBONES.register("lenet5", test_config={"input": [1, 28, 28], "kwargs": {}})
def lenet5(in_channels: int, **kwargs) -> LeNet5:
    """LeNet-5 as in the vPU Fashion-MNIST code (003's FMNIST backbone); out_dim 84."""
    return LeNet5(in_channels, **kwargs)
