"""Backbones (MLP, AllConv, ResNets, LeNet-5, 7-layer CNN, GIN, ...) and heads."""

from pubench.utils.registry import Registry

BACKBONES = Registry("backbone", package=__name__)
