"""InfoGraph (Sun et al. 2020) with pluggable negative corrections (paper 000, Table 2).

Model, as InfoGraph's ``unsupervised/deepinfomax.py`` (and HCL's ``graph/deepinfomax.py``):
a GIN encoder (``pubench.models.gin``) gives node ("patch") representations ``M``
``(n, d)`` and graph summaries ``y`` ``(B, d)``, ``d = hidden * layers``; two
discriminator heads ``FF`` (three ``Linear-ReLU`` blocks plus a linear shortcut) map them
to ``l = FF_local(M)`` and ``g = FF_global(y)``. All ``Linear`` weights are
Xavier-uniform, biases zero (InfoGraph's ``init_emb``). No prior term (InfoGraph's
``--prior`` is off by default, HCL never sets it).

Local-global scores (``score``), ``(n, B)``, node ``i`` against every graph ``j`` of the batch:

* ``"dot"``: InfoGraph's discriminator score ``l_i . g_j`` as it is (unbounded);
* ``"cosine"``: ``cos(l_i, g_j)``, the dot product of the L2-normalised rows, in [-1, 1].

Logits are the scores divided by the loss's ``temperature`` t (t = 1 for losses without
one, e.g. ``measure: JSD``). Node ``i`` of graph ``b(i)`` is an anchor whose positive
is its own graph, ``pos_i = logits[i, b(i)]``, and whose candidates (negatives /
unlabeled samples) are the other ``B - 1`` graphs, ``neg_mask[i, j] = (j != b(i))``.

Objectives: ``measure: JSD`` is InfoGraph's own JSD estimator (:func:`jsd_from_logits`,
InfoGraph's ``--measure JSD``); ``loss: {name, ...}`` is a registered loss in the logits
form it declares (``from_logits=`` at its registration, :func:`pubench.losses.logits_form`;
any loss that declares one is accepted) averaged over all nodes of the batch:
``info_nce`` (no correction), ``debiased`` (DEB), ``hard`` (Hard), ``ring`` (Ring),
``pu_corrected`` (PUCL), ``bayesian`` (BCL), ... with ``N = M^u = B - 1``. With
``score="cosine"`` the similarities the estimators exponentiate are
``h = exp(cos / t)`` in ``[e^{-1/t}, e^{1/t}]``, the range 000's eq. 8 (and DCL / HCL)
assume, so their floor ``N e^{-1/t}`` is the true minimum of the negative sum.

Floor diagnostic: the corrected estimators (DEB, Hard, PUCL) clamp the negative term at
``N e^{-1/t}``; an anchor whose clamp binds sends no gradient to its negatives. After
each step :func:`train_step` counts the anchors whose candidate logits got exactly zero
gradient (the clamp binds; for Ring, an empty band) and :func:`pretrain` reports their
fraction per epoch (``floor_fraction``), weighted by nodes.

Training: Adam, ``epochs`` passes over the data set in batches of ``batch_size`` graphs,
through :class:`pubench.train.loop.Trainer`.
As in the InfoGraph / HCL code, the data set is shuffled once (seeded) and the same
consecutive batches are used every epoch (the last, smaller batch included); each batch
is therefore prepared once (:func:`prepare_batches`: collation, sparse adjacency, the GIN
first-layer input, the own-graph index and the negative mask). The frozen encoder's
graph embeddings (the concatenated sum-pooled layer outputs, BatchNorm in eval mode) are
the features for the SVM.
"""

from __future__ import annotations

import inspect
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pubench.losses import LOSSES, logits_form
from pubench.losses.base import hyperparameters, with_logits_form
from pubench.models.gin import GraphBatch, prepare_batch
from pubench.train.context import PLAIN, JobContext
from pubench.train.loop import EpochStats, Step, Trainer
from pubench.utils.config import ConfigError

LOG2 = math.log(2.0)

JSD = "infograph_jsd"  # the objective's name when the spec says measure: JSD
MEASURE = "JSD"
SCORES = ("dot", "cosine")


# ------------------------------------------------------------------ model
class FF(nn.Module):
    """InfoGraph's discriminator head: 3 x (Linear, ReLU) plus a linear shortcut."""

    def __init__(self, dim: int):
        super().__init__()
        self.block = nn.Sequential(
            nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU()
        )
        self.linear_shortcut = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x) + self.linear_shortcut(x)


class InfoGraph(nn.Module):
    """Encoder + local / global discriminator heads; ``forward(batch) -> (l (n, d), g (B, d))``."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        d = encoder.out_dim
        self.local_d = FF(d)
        self.global_d = FF(d)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, gb: GraphBatch) -> tuple[torch.Tensor, torch.Tensor]:
        y, M = self.encoder.encode(gb)
        return self.local_d(M), self.global_d(y)


# ------------------------------------------------------------------ objective
def own_graph_mask(batch: torch.Tensor, num_graphs: int) -> torch.Tensor:
    """Bool ``(n, B)``, True where graph ``j`` is another graph than node ``i``'s own (a candidate)."""
    return torch.arange(num_graphs, device=batch.device).view(1, -1) != batch.view(-1, 1)


def local_global_scores(l_enc: torch.Tensor, g_enc: torch.Tensor, score: str, temperature: float = 1.0):
    """``(n, B)`` logits ``score(l_i, g_j) / temperature``, ``score`` = ``"dot"`` or ``"cosine"``.

    The ``1 / t`` and the normalisation are applied to the factors, not the ``(n, B)`` product.
    """
    if score == "cosine":
        l_enc, g_enc = F.normalize(l_enc, dim=1), F.normalize(g_enc, dim=1)
    elif score != "dot":
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    if temperature != 1.0:
        g_enc = g_enc / temperature
    return l_enc @ g_enc.t()


def positive_logits(logits: torch.Tensor, batch: torch.Tensor) -> torch.Tensor:
    """``(n,)`` logit of every node against its own graph."""
    return logits.gather(1, batch.view(-1, 1)).squeeze(1)


def jsd_from_logits(pos_logits: torch.Tensor, neg_logits: torch.Tensor, *, neg_mask: torch.Tensor | None = None):
    """InfoGraph's JSD local-global loss (``measure='JSD'``, Sun et al. 2020 eq. 4-5):

        E_pos = mean_i [log 2 - softplus(-pos_i)]
        E_neg = mean_{(i, j) valid} [softplus(neg_ij) - log 2]
        loss  = E_neg - E_pos

    (InfoGraph's ``local_global_loss_`` with its 0/1 masks: masked entries contribute
    ``0`` to its sums and the sums are divided by the numbers of valid pairs.)
    """
    if neg_mask is None:
        neg_mask = torch.ones_like(neg_logits, dtype=torch.bool)
    e_pos = (LOG2 - F.softplus(-pos_logits)).mean()
    e_neg = (F.softplus(neg_logits) - LOG2).masked_fill(~neg_mask, 0.0).sum() / neg_mask.sum().clamp_min(1)
    return e_neg - e_pos


def loss_hyperparameters(name: str) -> set[str]:
    """The hyperparameters of registered loss ``name`` (its two-view signature minus views/reduction)."""
    return set(hyperparameters(LOSSES.get(name)))


@dataclass(frozen=True)
class LocalGlobalObjective:
    """The InfoGraph local-global objective: score, estimator ``name`` and its hyperparameters."""

    name: str
    score: str
    hyper: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_config(cls, *, score: str, loss: dict[str, Any] | None = None,
                    measure: str | None = None) -> "LocalGlobalObjective":
        """``measure: JSD`` (InfoGraph's own objective) or ``loss: {name, <hyperparameters>}``
        (a pubench estimator in its logits form), exactly one of them, on ``score``."""
        if score not in SCORES:
            raise ConfigError(f"params.pretrain.score: expected one of {SCORES}, got {score!r}")
        if (loss is None) == (measure is None):
            raise ConfigError("params.pretrain: give exactly one of 'measure' (InfoGraph's JSD) and 'loss'")
        if measure is not None:
            if measure != MEASURE:
                raise ConfigError(f"params.pretrain.measure: only {MEASURE!r} is implemented, got {measure!r}")
            return cls(JSD, score)
        if not isinstance(loss, dict) or "name" not in loss:
            raise ConfigError(f"params.pretrain.loss: expected a mapping with 'name', got {loss!r}")
        name = loss["name"]
        hyper = {k: v for k, v in loss.items() if k != "name"}
        if name not in LOSSES or logits_form(name) is None:
            raise ConfigError(f"params.pretrain.loss.name: {name!r} declares no logits form; one of {with_logits_form()}")
        expected = loss_hyperparameters(name)
        if set(hyper) != expected:
            missing, unknown = sorted(expected - set(hyper)), sorted(set(hyper) - expected)
            raise ConfigError(f"params.pretrain.loss ({name}): missing {missing}, unknown {unknown}")
        for k, v in hyper.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(f"params.pretrain.loss.{k}: expected a number, got {v!r}")
        obj = cls(name, score, {k: float(v) for k, v in hyper.items()})
        # validate the values once on a dummy batch (ranges are checked by the estimators)
        try:
            obj.loss(torch.zeros(2), torch.zeros(2, 2), torch.tensor([[False, True], [True, False]]))
        except ValueError as exc:
            raise ConfigError(f"params.pretrain.loss ({name}): {exc}") from exc
        return obj

    @property
    def temperature(self) -> float:
        return self.hyper.get("temperature", 1.0)

    def logits(self, l_enc: torch.Tensor, g_enc: torch.Tensor) -> torch.Tensor:
        """``(n, B)`` local-global logits ``score(l_i, g_j) / t``."""
        return local_global_scores(l_enc, g_enc, self.score, self.temperature)

    def loss(self, pos: torch.Tensor, logits: torch.Tensor, neg_mask: torch.Tensor) -> torch.Tensor:
        """Mean loss over the anchors, from logits (already divided by the temperature)."""
        if self.name == JSD:
            return jsd_from_logits(pos, logits, neg_mask=neg_mask)
        fn = logits_form(self.name)
        kwargs = dict(self.hyper)
        if "temperature" not in inspect.signature(fn).parameters:
            kwargs.pop("temperature", None)
        return fn(pos, logits, neg_mask=neg_mask, **kwargs)

    def __call__(self, l_enc: torch.Tensor, g_enc: torch.Tensor, batch: torch.Tensor,
                 neg_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The loss of one batch from the discriminator outputs ``l (n, d)``, ``g (B, d)``."""
        logits = self.logits(l_enc, g_enc)
        if neg_mask is None:
            neg_mask = own_graph_mask(batch, g_enc.shape[0])
        return self.loss(positive_logits(logits, batch), logits, neg_mask)


# ------------------------------------------------------------------ training
@dataclass(frozen=True)
class PreparedBatch:
    """One fixed training batch: the encoder's input and the local-global structure."""

    graphs: GraphBatch
    neg_mask: torch.Tensor  # (n, B) bool, True = candidate (another graph of the batch)

    @property
    def num_nodes(self) -> int:
        return self.graphs.num_nodes


def batch_order(n: int, seed: int) -> list[int]:
    """InfoGraph's one-time shuffle of the data set (``dataset.shuffle()``), seeded."""
    gen = torch.Generator()
    gen.manual_seed(int(seed))
    return torch.randperm(n, generator=gen).tolist()


def prepare_batches(graphs: list, batch_size: int, seed: int) -> list[PreparedBatch]:
    """InfoGraph's batching: the data set is shuffled once and cut into the same consecutive
    batches every epoch (last, smaller batch kept); each batch is collated and prepared once."""
    from torch_geometric.data import Batch

    order = batch_order(len(graphs), seed)
    out = []
    for start in range(0, len(order), batch_size):
        data = Batch.from_data_list([graphs[i] for i in order[start:start + batch_size]])
        gb = prepare_batch(data.x, data.edge_index, data.batch, data.num_graphs)
        out.append(PreparedBatch(gb, own_graph_mask(gb.batch, gb.num_graphs)))
    return out


def starved_anchors(logits_grad: torch.Tensor, neg_mask: torch.Tensor) -> torch.Tensor:
    """Bool ``(n,)``: anchors none of whose candidates got a non-zero gradient: the
    estimator's floor binds for them, or, for Ring, their band is empty (for objectives
    without a floor, e.g. InfoGraph's JSD on raw scores, only gradient underflow counts)."""
    return ~((logits_grad != 0) & neg_mask).any(dim=1)


def objective_step(model: InfoGraph, pb: PreparedBatch, objective: LocalGlobalObjective) -> Step:
    """The loss of one batch, weighted by its graphs; after the backward pass it counts the
    anchors whose candidates got no gradient (``starved``: the estimator's floor binds, or
    Ring's band is empty)."""
    l_enc, g_enc = model(pb.graphs)
    logits = objective.logits(l_enc, g_enc)
    logits.retain_grad()
    loss = objective.loss(positive_logits(logits, pb.graphs.batch), logits, pb.neg_mask)
    return Step(loss, weight=pb.graphs.num_graphs,
                after_backward=lambda: {"starved": int(starved_anchors(logits.grad, pb.neg_mask).sum())})


def train_step(model: InfoGraph, pb: PreparedBatch, objective: LocalGlobalObjective,
               opt: torch.optim.Optimizer) -> tuple[float, int]:
    """One Adam step on one batch; returns the loss and the number of starved anchors."""
    out = Trainer([model], opt, desc="infograph", ctx=PLAIN).optimize(objective_step(model, pb, objective), 0)
    return out["value"], int(out["starved"])


def pretrain(
    model: InfoGraph,
    graphs: list,
    objective: LocalGlobalObjective,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    seed: int,
    ctx: JobContext,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Train ``model`` in place (fixed batches, one seeded shuffle) in the job's context
    ``ctx``; returns per epoch the mean loss (weighted by graphs), the floor fraction
    (weighted by nodes) and the time."""
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    t0 = time.perf_counter()
    batches = prepare_batches(graphs, batch_size, seed) if epochs > 0 else []
    prepare_s = time.perf_counter() - t0
    nodes = sum(pb.num_nodes for pb in batches)

    def end_epoch(e: EpochStats) -> None:
        if log:
            log(f"epoch {e.epoch + 1}/{epochs} loss {e.mean:.4f} floor {e.sums['starved'] / nodes:.3f} "
                f"({e.seconds:.2f}s)")

    history = Trainer([model], opt, desc="infograph", ctx=ctx).run(
        epochs, lambda epoch: batches, lambda pb, epoch: objective_step(model, pb, objective), end_epoch=end_epoch)
    return {"loss": [e.mean for e in history], "floor_fraction": [e.sums["starved"] / nodes for e in history],
            "epoch_s": [e.seconds for e in history], "prepare_s": prepare_s}


@torch.inference_mode()
def embed(encoder: nn.Module, graphs: list, batch_size: int = 256) -> np.ndarray:
    """Frozen graph embeddings ``(len(graphs), d)`` in the order of ``graphs`` (eval mode)."""
    from torch_geometric.data import Batch

    was = encoder.training
    encoder.eval()
    out = []
    for start in range(0, len(graphs), batch_size):
        data = Batch.from_data_list(graphs[start:start + batch_size])
        y, _ = encoder(data.x, data.edge_index, data.batch, data.num_graphs)
        out.append(y)
    encoder.train(was)
    return torch.cat(out).double().numpy()
