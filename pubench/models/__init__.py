"""Backbones (MLP, AllConv, ResNets, LeNet-5, 7-layer CNN, GIN, ...) and heads.

Backbones register in :data:`BACKBONES` (interface: :mod:`pubench.models.base`); every
module of this package is found by the registry."""

from pubench.models._common import build_backbone, count_parameters
from pubench.models.base import BACKBONES, Backbone
from pubench.models.heads import linear_head, projection_head

__all__ = ["BACKBONES", "Backbone", "build_backbone", "count_parameters", "linear_head", "projection_head"]
