"""The MoCo-style pair of encoders WConPU and PiCO train: a query network (backbone,
projection head, classifier head) and a key encoder, a frozen copy of the query's backbone
and projection head that follows it by momentum, with the two views' augmentations."""

from __future__ import annotations

import copy
import itertools
from typing import Callable

from torch import nn

from pubench.pu.data import DownstreamData
from pubench.train.augment import build_augment


def query_key_encoders(backbone: nn.Module, projector: nn.Module, head: nn.Module, augment: dict,
                       data: DownstreamData, device) -> tuple[nn.ModuleDict, nn.Module, nn.Module, list, list,
                                                              Callable, Callable]:
    """``(query_net, key_backbone, key_projector, query_params, key_params, augment_query,
    augment_key)``; the modules moved to ``device``, the key encoder without gradients."""
    backbone.to(device), projector.to(device), head.to(device)
    query_net = nn.ModuleDict({"backbone": backbone, "projector": projector, "head": head})
    key_backbone, key_projector = copy.deepcopy(backbone), copy.deepcopy(projector)
    for p in itertools.chain(key_backbone.parameters(), key_projector.parameters()):
        p.requires_grad_(False)
    q_params = list(backbone.parameters()) + list(projector.parameters())
    k_params = list(key_backbone.parameters()) + list(key_projector.parameters())
    aug_q = build_augment(augment["query"], data.mean, data.std, "pu_method.augment.query")
    aug_k = build_augment(augment["key"], data.mean, data.std, "pu_method.augment.key")
    return query_net, key_backbone, key_projector, q_params, k_params, aug_q, aug_k
