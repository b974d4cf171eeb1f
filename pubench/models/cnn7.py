"""``cnn7_003``: the "7-layer CNN" of paper 003 (puPL) for CIFAR and STL.

003, Sec. 9.1: "We use LeNet-5 ... for FMNIST experiments, and a 7-layer CNN (Chen et al.,
2020a; Li et al., 2022) for STL and CIFAR experiments." 003 prints no architecture; the
cited setup is vPU's (Chen et al. 2020a, code github.com/HC-Feynman/vpu), whose reference
code has one 7-weight-layer network per dataset (4 convolutions + 3 fully connected
layers), and they differ between CIFAR-10 and STL-10. Both are built here, chosen with
``variant``:

``variant="cifar"`` (default; vPU ``model_cifar.py``), 3x32x32 input::

    Conv2d(3, 96, 3)            - ReLU     32 -> 30   (no padding)
    Conv2d(96, 96, 3, stride 2) - ReLU     30 -> 14
    Conv2d(96, 192, 1)          - ReLU
    Conv2d(192, 10, 1)          - ReLU     flatten 10*14*14 = 1960
    Linear(1960, 1000) - ReLU - Linear(1000, 1000) - ReLU   -> features (out_dim 1000)
    [Linear(1000, k): the output layer, heads.linear_head(1000, k)]

    parameters 2,688 + 83,040 + 18,624 + 1,930 + 1,961,000 + 1,001,000 = 3,068,282
    (+ 1,001 for linear_head(1000, 1); + 2,002 for vPU's two logits)

``variant="stl"`` (vPU ``model_stl.py``), 3x96x96 input::

    Conv2d(3, 6, 3)   - ReLU - MaxPool2d(2)   96 -> 94 -> 47
    Conv2d(6, 6, 3)   - ReLU                  47 -> 45
    Conv2d(6, 16, 5)  - ReLU - MaxPool2d(2)   45 -> 41 -> 20
    Conv2d(16, 32, 5) - ReLU - MaxPool2d(2)   20 -> 16 -> 8, flatten 32*8*8 = 2048
    Linear(2048, 120) - ReLU - Linear(120, 84) - ReLU        -> features (out_dim 84)
    [Linear(84, k): the output layer]

    parameters 168 + 330 + 2,416 + 12,832 + 245,880 + 10,164 = 271,790
    (+ 85 for linear_head(84, 1))

Differences from the references: vPU's STL module also defines BatchNorm layers
(b1..b4) and dropout that its ``forward`` never uses -- left out; the vPU modules end in a
2-logit (log-)softmax layer, here the backbone stops at the last hidden layer and the
output layer is a head. No BN in either network (as in the references). Li et al. 2022
(P3Mix) say they follow vPU's networks; their code is not available to us, so the vPU
code is the reference. PyTorch's default initialisation.

Kwargs:
    variant: "cifar" | "stl" = "cifar"
    input_size: int = 32 (cifar) / 96 (stl)   side of the square input; sets the flatten width
    width: float = 1.0     multiplier of the conv channels (96/192 for cifar, 6/6/16/32 for stl;
                           the 10-channel 1x1 bottleneck of the cifar variant is kept); reduced tiers
    fc_width: int | None   width of the fully connected layers, default 1000 (cifar); for stl the
                           two widths are 120 and 84 (fc_width, if given, replaces 120)
"""

from __future__ import annotations

import torch
from torch import nn

from pubench.models.base import BACKBONES
from pubench.models._common import check_input, conv_out, scaled


class CNN7(nn.Module):
    def __init__(self, in_channels: int = 3, variant: str = "cifar", input_size: int | None = None,
                 width: float = 1.0, fc_width: int | None = None):
        super().__init__()
        if variant not in ("cifar", "stl"):
            raise ValueError(f"cnn7_003: variant must be 'cifar' or 'stl', got {variant!r}")
        self.variant = variant
        self.in_channels = in_channels
        relu = lambda: nn.ReLU(inplace=True)
        if variant == "cifar":
            s = self.input_size = 32 if input_size is None else input_size
            c1, c2 = scaled(96, width), scaled(192, width)
            self.features = nn.Sequential(
                nn.Conv2d(in_channels, c1, 3), relu(),
                nn.Conv2d(c1, c1, 3, stride=2), relu(),
                nn.Conv2d(c1, c2, 1), relu(),
                nn.Conv2d(c2, 10, 1), relu(),
            )
            s = conv_out(conv_out(s, 3), 3, 2)
            c = 10
            h1 = h2 = 1000 if fc_width is None else fc_width
        else:
            s = self.input_size = 96 if input_size is None else input_size
            a, b, d = scaled(6, width), scaled(16, width), scaled(32, width)
            self.features = nn.Sequential(
                nn.Conv2d(in_channels, a, 3), relu(), nn.MaxPool2d(2),
                nn.Conv2d(a, a, 3), relu(),
                nn.Conv2d(a, b, 5), relu(), nn.MaxPool2d(2),
                nn.Conv2d(b, d, 5), relu(), nn.MaxPool2d(2),
            )
            s = conv_out(conv_out(s, 3), 2, 2)
            s = conv_out(conv_out(conv_out(s, 3), 5), 2, 2)
            s = conv_out(conv_out(s, 5), 2, 2)
            c = d
            h1, h2 = (120 if fc_width is None else fc_width), 84
        if s < 1:
            raise ValueError(f"cnn7_003 ({variant}): input_size {self.input_size} is too small")
        self.flat_dim = c * s * s
        self.fc = nn.Sequential(nn.Linear(self.flat_dim, h1), relu(), nn.Linear(h1, h2), relu())
        self.out_dim = h2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_input(self, x, self.in_channels, self.input_size)
        return self.fc(self.features(x).flatten(1))


@BACKBONES.register("cnn7_003", test_config={"input": [3, 32, 32], "kwargs": {"width": 0.25, "fc_width": 32}})
def cnn7_003(in_channels: int, **kwargs) -> CNN7:
    """003's 7-layer CNN (vPU's networks): variant 'cifar' (out_dim 1000) or 'stl' (out_dim 84)."""
    return CNN7(in_channels, **kwargs)
