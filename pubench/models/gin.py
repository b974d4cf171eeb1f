"""GIN encoder of InfoGraph (Sun et al. 2020; Xu et al. 2019), registered as backbone ``gin``.

Architecture as in InfoGraph's ``unsupervised/gin.py`` (the same file in HCL's
``graph/gin.py``): ``layers`` GIN layers (eps = 0, not learned), each
``h_i' = MLP(h_i + sum_{j -> i} h_j)`` with the MLP ``Linear(in, hidden) - ReLU -
Linear(hidden, hidden)``, followed by ReLU and then BatchNorm; every layer's node output
is sum-pooled over its graph and the ``layers`` readouts are concatenated, so the graph
embedding and the node ("patch") representation both have ``hidden * layers`` columns.

Implementation (pure PyTorch, no torch-scatter / torch-sparse; the same function as
torch-geometric's ``GINConv`` + ``global_add_pool``, up to float summation order):

* the neighbour sum is a product with the batch's sparse CSR adjacency
  ``A[i, j] = #edges j -> i`` (:class:`GraphBatch`), whose backward uses a precomputed
  ``A^T`` (:class:`_AdjacencyProduct`);
* with eps = 0 and fixed input features, the first layer's input ``x + A x`` is a
  constant of the batch and is computed once, in :func:`prepare_batch`;
* the graph embedding is one sum-pooling of the concatenated node representations
  (sum pooling is linear, so this equals concatenating the per-layer readouts).

Training loops that reuse the same batches every epoch (InfoGraph's fixed batches)
prepare them once and call :meth:`GINEncoder.encode`; ``forward`` prepares on the fly.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from pubench.models.base import BACKBONES


@dataclass(frozen=True)
class GraphBatch:
    """A batch of graphs in the form the GIN encoder consumes; build with :func:`prepare_batch`."""

    adj: torch.Tensor  # (n, n) sparse CSR, adj[i, j] = number of edges j -> i
    adj_t: torch.Tensor  # its transpose (CSR), for the backward pass
    first_input: torch.Tensor  # (n, in_dim) x + adj @ x: the first GIN layer's input (eps = 0)
    batch: torch.Tensor  # (n,) graph index of every node
    num_graphs: int

    @property
    def num_nodes(self) -> int:
        return int(self.batch.shape[0])


def _csr(rows: torch.Tensor, cols: torch.Tensor, n: int, dtype: torch.dtype) -> torch.Tensor:
    values = torch.ones(rows.shape[0], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "sparse CSR support is in beta"
        return torch.sparse_coo_tensor(torch.stack([rows, cols]), values, (n, n)).coalesce().to_sparse_csr()


def prepare_batch(x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor,
                  num_graphs: int | None = None) -> GraphBatch:
    """Adjacency (and its transpose) and the first layer's aggregated input of one batch.

    Messages flow along ``edge_index[0] -> edge_index[1]`` as in PyG; repeated edges
    count repeatedly (a sum aggregation).
    """
    n = int(x.shape[0])
    if not x.is_floating_point():
        x = x.float()
    src, dst = edge_index[0], edge_index[1]
    adj, adj_t = _csr(dst, src, n, x.dtype), _csr(src, dst, n, x.dtype)
    first_input = x + torch.sparse.mm(adj, x)
    size = int(batch.max()) + 1 if num_graphs is None else int(num_graphs)
    return GraphBatch(adj, adj_t, first_input, batch, size)


class _AdjacencyProduct(torch.autograd.Function):
    """``adj @ h`` with the backward ``adj^T @ grad`` on a precomputed ``adj^T``
    (autograd through a CSR product would transpose ``adj`` at every step)."""

    @staticmethod
    def forward(ctx, h, adj, adj_t):
        ctx.adj_t = adj_t
        return torch.sparse.mm(adj, h)

    @staticmethod
    def backward(ctx, grad):
        return torch.sparse.mm(ctx.adj_t, grad), None, None


class GINEncoder(nn.Module):
    """``forward(x, edge_index, batch) -> (graph_emb (B, hidden*layers), node_emb (n, hidden*layers))``."""

    def __init__(self, in_dim: int, hidden: int, layers: int):
        super().__init__()
        if in_dim < 1 or hidden < 1 or layers < 1:
            raise ValueError(f"need in_dim, hidden, layers >= 1, got {in_dim}, {hidden}, {layers}")
        self.in_dim, self.hidden, self.layers = in_dim, hidden, layers
        self.mlps = nn.ModuleList(
            nn.Sequential(nn.Linear(in_dim if i == 0 else hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
            for i in range(layers)
        )
        self.bns = nn.ModuleList(nn.BatchNorm1d(hidden) for _ in range(layers))

    @property
    def out_dim(self) -> int:
        return self.hidden * self.layers

    def encode(self, gb: GraphBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """``(graph_emb (B, out_dim), node_emb (n, out_dim))`` of a prepared batch."""
        h, xs = gb.first_input, []
        for k, (mlp, bn) in enumerate(zip(self.mlps, self.bns)):
            if k > 0:  # GIN aggregation with eps = 0: h_i + sum_{j -> i} h_j
                h = h + _AdjacencyProduct.apply(h, gb.adj, gb.adj_t)
            h = bn(F.relu(mlp(h)))
            xs.append(h)
        nodes = torch.cat(xs, dim=1)
        graphs = nodes.new_zeros(gb.num_graphs, nodes.shape[1]).index_add_(0, gb.batch, nodes)
        return graphs, nodes

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor, num_graphs: int | None = None):
        return self.encode(prepare_batch(x, edge_index, batch, num_graphs))


@BACKBONES.register("gin", test_config={"input": {"graph_features": 3}, "kwargs": {"hidden": 8, "layers": 2}})
def gin(in_dim: int, hidden: int, layers: int) -> GINEncoder:
    """InfoGraph's GIN encoder (InfoGraph/HCL defaults: hidden 32, 3 layers)."""
    return GINEncoder(in_dim, hidden, layers)
