"""ResNets: ``resnet18_cifar`` (paper 001), ``resnet18``, ``resnet34``, ``resnet50``.

All four are He et al. (2016) ResNets, written here layer for layer as torchvision builds
them (same module names ``conv1, bn1, layer1..layer4``, same block structure -- ResNet-50
is torchvision's "v1.5" with the stride on the 3x3 convolution --, same initialisation:
Kaiming-normal fan_out convolutions, BN weight 1 / bias 0), minus the final ``fc``; the
output is the global-average-pooled feature vector. ``tests/models/test_backbones.py`` loads
torchvision's weights into these modules and checks identical outputs, so torchvision
checkpoints load with ``strict=False`` (only ``fc`` is unused). They are reimplemented
rather than wrapped only to allow the ``width`` multiplier of the reduced tiers
(torchvision hard-codes 64 base channels for basic blocks).

Stems:
    cifar_stem=True   Conv2d(C, 64, 3, stride 1, padding 1, bias=False) - BN - ReLU, no max-pool
                      (the CIFAR variant: SimCLR's CIFAR ResNet, 001 A.1.5, the DCL/HCL code
                      that 000 and 002 follow)
    cifar_stem=False  ImageNet stem: Conv2d(C, 64, 7, stride 2, padding 3, bias=False) - BN -
                      ReLU - MaxPool(3, 2, 1)
Both end in global average pooling (``AdaptiveAvgPool2d(1)``; on CUDA a mean, see
:class:`~pubench.models._common.GlobalAvgPool`), so any input size >= 1 pixel after the stem works
(MNIST 28, CIFAR 32, STL 96, 224).

``resnet18_cifar`` -- 001 (puNCE), App. A.1.5, printed ``ResNet18Contrastive``:
backbone = 3x3 stride-1 stem without max-pool, four stages of two BasicBlocks
(64, 128, 256, 512; 1x1 stride-2 downsample + BN at the first block of stages 2-4),
AdaptiveAvgPool2d(1); projector = Linear(512, 256, bias=False) - BatchNorm1d(256) - ReLU -
Linear(256, 128); online_head = Linear(512, 1); "Num of Params = 11333825":

    backbone      11,168,832   (torchvision resnet18 without fc: 11,176,512 - 7*7*3*64 + 3*3*3*64)
    projector        164,480   (512*256 + 2*256 + 256*128+128)
    online_head          513
    total         11,333,825   (exact)

``resnet18`` / ``resnet34`` / ``resnet50`` -- default ImageNet stem (004 Table I: ResNet-18 for
STL-10 96x96 and ResNet-50 for Alzheimer 224x224; 003: ResNet-34 on ImageNet-I);
``resnet50`` with ``cifar_stem: true`` is the SimCLR encoder of 000 (PUCL) and 002 (BCL) on
CIFAR-10/100 and STL-10, as in the DCL code (Chuang et al. 2020; torchvision resnet50 with
conv1 replaced by a 3x3 stride-1 conv, max-pool and fc removed), followed by DCL's head
``projection_head(2048, 512, 128, hidden_bias=False)``. Parameter counts (no fc):

    resnet18 (ImageNet stem) 11,176,512    resnet18_cifar / cifar_stem 11,168,832
    resnet34 (ImageNet stem) 21,284,672    resnet34 cifar_stem         21,276,992
    resnet50 (ImageNet stem) 23,508,032    resnet50 cifar_stem         23,500,352
(torchvision totals 11,689,512 / 21,797,672 / 25,557,032 minus fc 513,000 / 513,000 /
2,049,000; the CIFAR stem saves 7*7*3*64 - 3*3*3*64 = 7,680.)

Kwargs:
    cifar_stem: bool      (default True for resnet18_cifar, False for the others)
    width: float = 1.0    multiplier of the base width 64 (stages 64w, 128w, 256w, 512w;
                          out_dim 512w, or 2048w for ResNet-50); reduced tiers only
    zero_init_residual: bool = False   torchvision's option (last BN of each block = 0)
"""

from __future__ import annotations

import torch
from torch import nn

from pubench.models.base import BACKBONES
from pubench.models._common import GlobalAvgPool, scaled


def _conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


def _conv1x1(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = _conv3x3(cin, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)

    def last_bn(self) -> nn.BatchNorm2d:
        return self.bn2


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = _conv1x1(cin, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv3x3(planes, planes, stride)  # stride on the 3x3 ("ResNet v1.5")
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)

    def last_bn(self) -> nn.BatchNorm2d:
        return self.bn3


class ResNet(nn.Module):
    """ResNet trunk + global average pool; forward (n, C, H, W) -> (n, out_dim)."""

    def __init__(self, block: type[BasicBlock | Bottleneck], blocks: list[int], in_channels: int = 3,
                 cifar_stem: bool = False, width: float = 1.0, zero_init_residual: bool = False):
        super().__init__()
        self.in_channels = in_channels
        self.cifar_stem = bool(cifar_stem)
        base = scaled(64, width)
        if self.cifar_stem:
            self.conv1 = nn.Conv2d(in_channels, base, 3, stride=1, padding=1, bias=False)
            self.maxpool = nn.Identity()
        else:
            self.conv1 = nn.Conv2d(in_channels, base, 7, stride=2, padding=3, bias=False)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self._cin = base
        self.layer1 = self._make_layer(block, base, blocks[0], 1)
        self.layer2 = self._make_layer(block, 2 * base, blocks[1], 2)
        self.layer3 = self._make_layer(block, 4 * base, blocks[2], 2)
        self.layer4 = self._make_layer(block, 8 * base, blocks[3], 2)
        self.avgpool = GlobalAvgPool()  # deterministic on CUDA too
        self.out_dim = 8 * base * block.expansion
        del self._cin
        for m in self.modules():  # torchvision's initialisation
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, (BasicBlock, Bottleneck)):
                    nn.init.zeros_(m.last_bn().weight)

    def _make_layer(self, block, planes: int, n: int, stride: int) -> nn.Sequential:
        downsample = None
        if stride != 1 or self._cin != planes * block.expansion:
            downsample = nn.Sequential(_conv1x1(self._cin, planes * block.expansion, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self._cin, planes, stride, downsample)]
        self._cin = planes * block.expansion
        layers += [block(self._cin, planes) for _ in range(1, n)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"ResNet expects float (n, {self.in_channels}, H, W) input, got {tuple(x.shape)}")
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return torch.flatten(self.avgpool(x), 1)


@BACKBONES.register("resnet18_cifar", test_config={"input": [3, 32, 32], "kwargs": {"width": 0.25}})
def resnet18_cifar(in_channels: int, cifar_stem: bool = True, **kwargs) -> ResNet:
    """001's ResNet-18 (A.1.5): 3x3 stride-1 stem, no max-pool; out_dim 512."""
    return ResNet(BasicBlock, [2, 2, 2, 2], in_channels, cifar_stem=cifar_stem, **kwargs)


@BACKBONES.register("resnet18", test_config={"input": [3, 96, 96], "kwargs": {"width": 0.25}})
def resnet18(in_channels: int, cifar_stem: bool = False, **kwargs) -> ResNet:
    """ResNet-18, ImageNet stem by default (004: STL-10); out_dim 512."""
    return ResNet(BasicBlock, [2, 2, 2, 2], in_channels, cifar_stem=cifar_stem, **kwargs)


@BACKBONES.register("resnet34", test_config={"input": [3, 32, 32], "kwargs": {"width": 0.125, "cifar_stem": True}})
def resnet34(in_channels: int, cifar_stem: bool = False, **kwargs) -> ResNet:
    """ResNet-34, ImageNet stem by default; out_dim 512."""
    return ResNet(BasicBlock, [3, 4, 6, 3], in_channels, cifar_stem=cifar_stem, **kwargs)


@BACKBONES.register("resnet50", test_config={"input": [3, 32, 32], "kwargs": {"width": 0.125, "cifar_stem": True}})
def resnet50(in_channels: int, cifar_stem: bool = False, **kwargs) -> ResNet:
    """ResNet-50 (bottleneck, v1.5), ImageNet stem by default; cifar_stem=True for 000/002; out_dim 2048."""
    return ResNet(Bottleneck, [3, 4, 6, 3], in_channels, cifar_stem=cifar_stem, **kwargs)
