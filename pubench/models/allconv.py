"""``allconv_001`` and ``cnn13``: the all-convolutional CIFAR network of nnPU.

``allconv_001`` -- paper 001 (puNCE), App. A.1.4, printed as ``AllConv``::

    backbone_cnn: Conv2d(3, 96, 3, s1, p1)    - BN - ReLU
                  Conv2d(96, 96, 3, s1, p1)   - BN - ReLU
                  Conv2d(96, 96, 3, s2, p1)   - BN - ReLU
                  Conv2d(96, 192, 3, s1, p1)  - BN - ReLU
                  Conv2d(192, 192, 3, s1, p1) - BN - ReLU
                  Conv2d(192, 192, 3, s2, p1) - BN - ReLU
                  Conv2d(192, 192, 3, s1, p1) - BN - ReLU
                  Conv2d(192, 192, 1)         - BN - ReLU
                  Conv2d(192, 10, 1)          - BN - ReLU
    backbone_lin: Linear(640, 1000) - ReLU - Linear(1000, 1000) - ReLU
    projector:    Linear(1000, 1000) - BatchNorm1d(1000) - ReLU - Linear(1000, 1000)
    online_head:  Linear(1000, 1)
    "Num of Params = 5019255"

(all convolutions with bias; 640 = 10 channels x 8 x 8 for a 32x32 input). Count:

    convolutions (weights + biases)  1,369,738
    BatchNorm2d affine                   2,516
    backbone_lin  640*1000+1000 + 1000*1000+1000 = 1,642,000
    backbone (this module)           3,014,254
    projector  1000*1000+1000 + 2*1000 + 1000*1000+1000 = 2,004,000
    online_head                          1,001
    total                            5,019,255  (exact)

This module is ``backbone_cnn`` + ``backbone_lin`` (out_dim 1000); the projector is
``heads.projection_head(1000, 1000, 1000)`` and the online head ``heads.linear_head(1000, 1)``.

``cnn13`` -- the "13-layer CNN" that paper 004 (WConPU, Table I) uses for CIFAR-10 and SVHN
without printing it, read (in table2-wconpu's decisions) as the
CIFAR-10 model of nnPU (Kiryo et al. 2017, Sec. 4 / App.):
``(32*32*3)-[C(3*3,96,1)]*2-C(3*3,96,2)-[C(3*3,192,1)]*2-C(3*3,192,2)-C(3*3,192,1)-C(1*1,192,1)
-C(1*1,10,1)-1000-1000-1`` (layer string quoted from memory of the nnPU paper; not stored
here), with BatchNorm after every convolution as in the public PyTorch port of that network
(Dist-PU's ``CNN``, also in PU-Bench), which we checked. That is layer for layer the network
001 prints above (001's AllConv *is* nnPU's CIFAR network with BN), so both names build the
same module: 3,014,254 backbone parameters, + 1,001 for the final
``1000-1`` layer (``heads.linear_head(1000, 1)``) = 3,015,255. The public PyTorch port of
nnPU's network used by Dist-PU (``CNN`` with ``b1``..``b9`` BatchNorm2d after each conv, no BN
on the fully connected layers) has the same layers and count; it initialises weights with
Kaiming-normal and zero biases, we keep PyTorch's default initialisation (neither 004 nor
Kiryo et al. state one) -- a documented difference in initialisation only.

Kwargs (the printed architecture is the default):
    input_size: int = 32    side of the square input (the flatten width is 10 * ceil(s/4)**2:
                            640 at 32, 5760 at STL's 96)
    width: float = 1.0      multiplier of the conv channels 96 / 192 (the 10-channel 1x1
                            bottleneck is kept); reduced tiers only
    fc_width: int = 1000    width of the two fully connected layers (= out_dim)
"""

from __future__ import annotations

import torch
from torch import nn

from pubench.models.base import BACKBONES
from pubench.models._common import check_input, conv_out, scaled

# (out_channels, kernel, stride) of the nine convolutions; padding = kernel // 2
_CONVS = [(96, 3, 1), (96, 3, 1), (96, 3, 2), (192, 3, 1), (192, 3, 1), (192, 3, 2),
          (192, 3, 1), (192, 1, 1), (10, 1, 1)]


class AllConv(nn.Module):
    """nnPU's all-convolutional CIFAR network with BN (001 A.1.4), minus its output layer."""

    def __init__(self, in_channels: int = 3, input_size: int = 32, width: float = 1.0, fc_width: int = 1000):
        super().__init__()
        if fc_width < 1 or input_size < 1:
            raise ValueError("allconv: fc_width and input_size must be >= 1")
        self.in_channels, self.input_size = in_channels, input_size
        layers: list[nn.Module] = []
        c, s = in_channels, input_size
        for i, (out, k, stride) in enumerate(_CONVS):
            out = out if i == len(_CONVS) - 1 else scaled(out, width)
            layers += [nn.Conv2d(c, out, k, stride=stride, padding=k // 2), nn.BatchNorm2d(out),
                       nn.ReLU(inplace=True)]
            c, s = out, conv_out(s, k, stride, k // 2)
        self.backbone_cnn = nn.Sequential(*layers)
        self.flat_dim = c * s * s
        self.backbone_lin = nn.Sequential(
            nn.Linear(self.flat_dim, fc_width), nn.ReLU(inplace=True),
            nn.Linear(fc_width, fc_width), nn.ReLU(inplace=True),
        )
        self.out_dim = fc_width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_input(self, x, self.in_channels, self.input_size)
        return self.backbone_lin(self.backbone_cnn(x).flatten(1))


@BACKBONES.register("allconv_001", test_config={"input": [3, 32, 32], "kwargs": {"width": 0.25, "fc_width": 32}})
def allconv_001(in_channels: int, **kwargs) -> AllConv:
    """001's All Convolution network (A.1.4), backbone_cnn + backbone_lin, out_dim 1000."""
    return AllConv(in_channels, **kwargs)


@BACKBONES.register("cnn13", test_config={"input": [3, 32, 32], "kwargs": {"width": 0.25, "fc_width": 32}})
def cnn13(in_channels: int, **kwargs) -> AllConv:
    """nnPU's 13-layer CIFAR-10 CNN (Kiryo et al. 2017) as used by 004; same network as allconv_001."""
    return AllConv(in_channels, **kwargs)
