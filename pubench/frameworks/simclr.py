"""Framework ``simclr`` (Chen et al. 2020): two views through one encoder + projector, in
one forward pass (so BatchNorm sees the ``2b`` views of a batch of ``b`` images); every
other view of the batch is a negative (:mod:`pubench.frameworks.pretrain`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pubench.frameworks.base import FRAMEWORKS, Framework


@dataclass(frozen=True)
class SimCLRConfig:
    name: str = "simclr"


@FRAMEWORKS.register("simclr")
class SimCLR(Framework):
    """Two views through one encoder + projector (Chen et al. 2020)."""

    config_cls = SimCLRConfig
    test_config: dict = {}

    def modules(self) -> list[nn.Module]:
        return [self.encoder, self.projector]

    def projections(self, v1: torch.Tensor, v2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.projector(self.encoder(torch.cat([v1, v2])))
        return z[: v1.shape[0]], z[v1.shape[0]:]
