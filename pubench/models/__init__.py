"""Backbones (MLP, AllConv, ResNets, LeNet-5, 7-layer CNN, GIN, ...) and heads."""

from pubench.utils.registry import Registry

BACKBONES = Registry("backbone", package=__name__)

# Helpers (re-exports; the backbones themselves are found by BACKBONES.get(name)).
from pubench.models._common import build_backbone, count_parameters
from pubench.models.heads import linear_head, projection_head

__all__ = ["BACKBONES", "build_backbone", "count_parameters", "linear_head", "projection_head"]
