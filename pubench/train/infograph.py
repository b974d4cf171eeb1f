"""InfoGraph (Sun et al. 2020) with pluggable negative corrections (paper 000, Table 2).

Model, as InfoGraph's ``unsupervised/deepinfomax.py`` (and HCL's ``graph/deepinfomax.py``):
a GIN encoder (``pubench.models.gin``) gives node ("patch") representations ``M``
``(n, d)`` and graph summaries ``y`` ``(B, d)``, ``d = hidden * layers``; two
discriminator heads ``FF`` (three ``Linear-ReLU`` blocks plus a linear shortcut) map them
to ``l = FF_local(M)`` and ``g = FF_global(y)``. All ``Linear`` weights are
Xavier-uniform, biases zero (InfoGraph's ``init_emb``). No prior term (InfoGraph's
``--prior`` is off by default, HCL never sets it).

Local-global scoring (vectorized, no per-graph loop): ``S = l @ g.T`` ``(n, B)``; node ``i``
of graph ``b(i)`` is an anchor whose positive is its own graph,
``pos_i = S[i, b(i)]``, and whose candidates (negatives / unlabeled samples) are the
other ``B - 1`` graphs of the batch, ``neg_mask[i, j] = (j != b(i))``.

How the corrections enter (our decision; 000 does not say): the objective is the
pubench estimator named by ``loss.name`` in its logits form
(``pubench.losses.*_from_logits``) on ``pos = S[i, b(i)] / t`` and ``neg = S / t`` with
``neg_mask``, averaged over all nodes of the batch: ``info_nce`` (the plain InfoGraph
row), ``debiased`` (DEB), ``hard`` (Hard), ``ring`` (Ring), ``pu_corrected`` (PUCL),
``bayesian`` (BCL). So every row shares one NCE-type objective and rows differ only
in the negative estimator, with ``N = M^u = B - 1``. InfoGraph's own JSD objective is
available as ``loss.name = "infograph_jsd"`` (:func:`jsd_from_logits`), for comparison.

Training: Adam, ``epochs`` passes over the data set in batches of ``batch_size`` graphs,
batched by PyG's ``DataLoader``. As in the InfoGraph / HCL code, the data set is
shuffled once (seeded) and the same consecutive batches are used every epoch (the last,
smaller batch included), so batches are collated once; ``reshuffle=True`` draws a new
order every epoch instead. The frozen encoder's graph embeddings (the concatenated
sum-pooled layer outputs, BatchNorm in eval mode) are the features for the SVM.
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

import pubench.losses as L

LOG2 = math.log(2.0)

# logits forms of the pubench estimators, by the name of their two-view loss
LOGIT_FORMS: dict[str, Callable] = {
    "info_nce": L.info_nce_from_logits,
    "debiased": L.debiased_from_logits,
    "hard": L.hard_from_logits,
    "ring": L.ring_from_logits,
    "pu_corrected": L.pu_corrected_from_logits,
    "bayesian": L.bayesian_from_logits,
}
JSD = "infograph_jsd"


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

    def forward(self, data) -> tuple[torch.Tensor, torch.Tensor]:
        y, M = self.encoder(data.x, data.edge_index, data.batch, data.num_graphs)
        return self.local_d(M), self.global_d(y)


# ------------------------------------------------------------------ objective
def local_global_logits(l_enc: torch.Tensor, g_enc: torch.Tensor, batch: torch.Tensor):
    """``pos (n,)``, ``scores (n, B)`` and ``neg_mask (n, B)`` (True = another graph of the batch)."""
    scores = l_enc @ g_enc.t()
    pos = scores.gather(1, batch.view(-1, 1)).squeeze(1)
    neg_mask = torch.arange(g_enc.shape[0], device=batch.device).view(1, -1) != batch.view(-1, 1)
    return pos, scores, neg_mask


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
    """The hyperparameters of pubench loss ``name`` (its two-view signature minus views/reduction)."""
    params = inspect.signature(getattr(L, name)).parameters
    return set(params) - {"z1", "z2", "reduction"}


@dataclass(frozen=True)
class LocalGlobalObjective:
    """The InfoGraph local-global objective with estimator ``name`` and its hyperparameters."""

    name: str
    hyper: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_config(cls, loss: dict[str, Any]) -> "LocalGlobalObjective":
        if not isinstance(loss, dict) or "name" not in loss:
            raise ValueError(f"params.pretrain.loss: expected a mapping with 'name', got {loss!r}")
        name = loss["name"]
        hyper = {k: v for k, v in loss.items() if k != "name"}
        if name == JSD:
            expected = set()
        elif name in LOGIT_FORMS:
            expected = loss_hyperparameters(name)
        else:
            raise ValueError(
                f"params.pretrain.loss.name: {name!r} has no logits form; one of {sorted(LOGIT_FORMS) + [JSD]}"
            )
        if set(hyper) != expected:
            missing, unknown = sorted(expected - set(hyper)), sorted(set(hyper) - expected)
            raise ValueError(f"params.pretrain.loss ({name}): missing {missing}, unknown {unknown}")
        for k, v in hyper.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"params.pretrain.loss.{k}: expected a number, got {v!r}")
        obj = cls(name, {k: float(v) for k, v in hyper.items()})
        # validate the values once on a dummy batch (ranges are checked by the estimators)
        obj(torch.zeros(2), torch.zeros(2, 2), torch.tensor([[False, True], [True, False]]))
        return obj

    def __call__(self, pos: torch.Tensor, scores: torch.Tensor, neg_mask: torch.Tensor) -> torch.Tensor:
        if self.name == JSD:
            return jsd_from_logits(pos, scores, neg_mask=neg_mask)
        fn = LOGIT_FORMS[self.name]
        kwargs = dict(self.hyper)
        t = kwargs.get("temperature", 1.0)
        if "temperature" not in inspect.signature(fn).parameters:
            kwargs.pop("temperature", None)
        return fn(pos / t, scores / t, neg_mask=neg_mask, **kwargs)


# ------------------------------------------------------------------ training
def make_loader(graphs: list, batch_size: int, *, shuffle: bool, seed: int | None = None):
    """PyG ``DataLoader`` over ``graphs`` (shuffled with a seeded generator when asked)."""
    from torch_geometric.loader import DataLoader

    gen = None
    if shuffle:
        gen = torch.Generator()
        gen.manual_seed(int(seed or 0))
    return DataLoader(graphs, batch_size=batch_size, shuffle=shuffle, generator=gen)


def fixed_batches(graphs: list, batch_size: int, seed: int) -> list:
    """InfoGraph's batching: the data set is shuffled once (``dataset.shuffle()``) and then
    cut into the same consecutive batches every epoch. Collated once (PyG ``DataLoader``)."""
    gen = torch.Generator()
    gen.manual_seed(int(seed))
    order = torch.randperm(len(graphs), generator=gen).tolist()
    return list(make_loader([graphs[i] for i in order], batch_size, shuffle=False))


def pretrain(
    model: InfoGraph,
    graphs: list,
    objective: LocalGlobalObjective,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float = 0.0,
    seed: int = 0,
    reshuffle: bool = False,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Train ``model`` in place; returns the mean loss per epoch and timings.

    ``reshuffle=False`` (InfoGraph / HCL): one seeded shuffle, fixed batches every epoch.
    ``reshuffle=True``: a new seeded batch order every epoch.
    """
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    if reshuffle:
        loader = make_loader(graphs, batch_size, shuffle=True, seed=seed)
    else:
        loader = fixed_batches(graphs, batch_size, seed)
    losses, times = [], []
    for epoch in range(epochs):
        model.train()
        t0, total, count = time.perf_counter(), 0.0, 0
        for data in loader:
            opt.zero_grad(set_to_none=True)
            l_enc, g_enc = model(data)
            pos, scores, neg_mask = local_global_logits(l_enc, g_enc, data.batch)
            loss = objective(pos, scores, neg_mask)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"epoch {epoch + 1}: loss is {loss.item()}")
            loss.backward()
            opt.step()
            total += loss.item() * data.num_graphs
            count += data.num_graphs
        losses.append(total / max(count, 1))
        times.append(time.perf_counter() - t0)
        if log:
            log(f"epoch {epoch + 1}/{epochs} loss {losses[-1]:.4f} ({times[-1]:.2f}s)")
    return {"loss": losses, "epoch_s": times}


@torch.no_grad()
def embed(encoder: nn.Module, graphs: list, batch_size: int = 256) -> np.ndarray:
    """Frozen graph embeddings ``(len(graphs), d)`` in the order of ``graphs`` (eval mode)."""
    was = encoder.training
    encoder.eval()
    out = []
    for data in make_loader(graphs, batch_size, shuffle=False):
        y, _ = encoder(data.x, data.edge_index, data.batch, data.num_graphs)
        out.append(y)
    encoder.train(was)
    return torch.cat(out).double().numpy()
