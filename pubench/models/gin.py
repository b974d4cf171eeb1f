"""GIN encoder of InfoGraph (Sun et al. 2020; Xu et al. 2019), registered as backbone ``gin``.

Architecture as in InfoGraph's ``unsupervised/gin.py`` (the same file in HCL's
``graph/gin.py``): ``layers`` GINConv layers (eps = 0, not learned), each with the MLP
``Linear(in, hidden) - ReLU - Linear(hidden, hidden)``, followed by ReLU and then
BatchNorm; every layer's node output is sum-pooled over its graph and the ``layers``
readouts are concatenated, so the graph embedding and the node ("patch")
representation both have ``hidden * layers`` columns.

Uses torch-geometric's ``GINConv`` and ``global_add_pool``, which run on pure PyTorch
scatter operations (no torch-scatter / torch-sparse).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from pubench.models import BACKBONES


class GINEncoder(nn.Module):
    """``forward(x, edge_index, batch) -> (graph_emb (B, hidden*layers), node_emb (n, hidden*layers))``."""

    def __init__(self, in_dim: int, hidden: int, layers: int):
        super().__init__()
        from torch_geometric.nn import GINConv

        if in_dim < 1 or hidden < 1 or layers < 1:
            raise ValueError(f"need in_dim, hidden, layers >= 1, got {in_dim}, {hidden}, {layers}")
        self.in_dim, self.hidden, self.layers = in_dim, hidden, layers
        self.convs = nn.ModuleList()
        self.bns = nn.ModuleList()
        for i in range(layers):
            mlp = nn.Sequential(nn.Linear(in_dim if i == 0 else hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
            self.convs.append(GINConv(mlp))
            self.bns.append(nn.BatchNorm1d(hidden))

    @property
    def out_dim(self) -> int:
        return self.hidden * self.layers

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor, num_graphs: int | None = None):
        from torch_geometric.nn import global_add_pool

        xs = []
        for conv, bn in zip(self.convs, self.bns):
            x = bn(F.relu(conv(x, edge_index)))
            xs.append(x)
        size = int(batch.max()) + 1 if num_graphs is None else num_graphs
        graph = torch.cat([global_add_pool(h, batch, size=size) for h in xs], dim=1)
        return graph, torch.cat(xs, dim=1)


@BACKBONES.register("gin")
def gin(in_dim: int, hidden: int, layers: int) -> GINEncoder:
    """InfoGraph's GIN encoder (InfoGraph/HCL defaults: hidden 32, 3 layers)."""
    return GINEncoder(in_dim, hidden, layers)
