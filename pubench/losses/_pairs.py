"""Shared pieces of the contrastive losses: views, similarity matrices, masks, reductions.

Two-view convention (issue 4): ``z1, z2`` are ``(b, d)`` projections of two augmented
views of the same ``b`` samples. They are stacked as ``z = cat([z1, z2])`` so view ``i``
(``0 <= i < 2b``) has partner ``a(i) = (i + b) mod 2b``. Every view is an anchor; for
anchor ``i`` the other ``N = 2b - 2`` views are its negatives (unlabeled samples).
Logits are cosine similarity divided by the temperature, so ``|logit| <= 1/t``.

The estimators themselves work on *logits forms*: ``pos_logits`` ``(n,)`` (anchor vs
its positive) and ``neg_logits`` ``(n, K)`` (anchor vs every candidate negative), with
an optional boolean ``neg_mask`` ``(n, K)`` marking valid candidates, so memory-bank,
queue and graph (node-vs-graph) variants reuse them. Computations that need ``exp``
are done in the log domain (log-sum-exp, or a per-anchor shift by a detached maximum),
so nothing overflows for any temperature and batch size.
"""

from __future__ import annotations

import functools
import math
import numbers

import torch
import torch.nn.functional as F

REDUCTIONS = ("mean", "sum", "none")


# ---------------------------------------------------------------- argument checks
def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_temperature(temperature: float) -> float:
    if not (_is_number(temperature) and temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    return float(temperature)


def check_real(name: str, value: float) -> float:
    if not (_is_number(value) and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_unit(name: str, value: float, *, open_right: bool = False) -> float:
    """``value`` in [0, 1] (or [0, 1) when ``open_right``)."""
    ok = _is_number(value) and 0.0 <= value <= 1.0
    if ok and open_right and value >= 1.0:
        ok = False
    if not ok:
        interval = "[0, 1)" if open_right else "[0, 1]"
        raise ValueError(f"{name} must be a number in {interval}, got {value!r}")
    return float(value)


def check_reduction(reduction: str) -> str:
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return reduction


def check_views(z1: torch.Tensor, z2: torch.Tensor) -> int:
    """Validate the two views; return ``b``."""
    if z1.dim() != 2 or z1.shape != z2.shape:
        raise ValueError(f"z1, z2 must both be (b, d); got {tuple(z1.shape)} and {tuple(z2.shape)}")
    if not z1.is_floating_point() or z1.dtype != z2.dtype:
        raise ValueError("z1, z2 must be floating tensors of the same dtype")
    if z1.shape[0] < 2:
        raise ValueError("need b >= 2 samples (anchors need at least one negative)")
    return z1.shape[0]


def check_labeled(labeled: torch.Tensor, b: int, device: torch.device) -> torch.Tensor:
    """Bool ``(b,)`` tensor of PU labels (True = labeled positive)."""
    labeled = torch.as_tensor(labeled, device=device)
    if labeled.shape != (b,):
        raise ValueError(f"labeled must have shape ({b},), got {tuple(labeled.shape)}")
    if labeled.dtype != torch.bool:
        if labeled.is_floating_point() or not bool(((labeled == 0) | (labeled == 1)).all()):
            raise ValueError("labeled must be a bool tensor (or integers in {0, 1})")
        labeled = labeled.bool()
    return labeled


def check_labels(labels: torch.Tensor, b: int, device: torch.device) -> torch.Tensor:
    """Integer ``(b,)`` label tensor."""
    labels = torch.as_tensor(labels, device=device)
    if labels.shape != (b,):
        raise ValueError(f"labels must have shape ({b},), got {tuple(labels.shape)}")
    if labels.is_floating_point() or labels.is_complex():
        raise ValueError("labels must be an integer (or bool) tensor")
    return labels.long()


def check_logits(pos_logits, neg_logits, neg_mask):
    """Validate a logits form; return ``(neg_mask, n_neg)`` with ``n_neg`` ``(n,)`` counts."""
    if pos_logits.dim() != 1 or neg_logits.dim() != 2 or neg_logits.shape[0] != pos_logits.shape[0]:
        raise ValueError(
            f"pos_logits must be (n,) and neg_logits (n, K); got {tuple(pos_logits.shape)}, "
            f"{tuple(neg_logits.shape)}"
        )
    if neg_mask is None:
        neg_mask = torch.ones_like(neg_logits, dtype=torch.bool)
    elif neg_mask.shape != neg_logits.shape or neg_mask.dtype != torch.bool:
        raise ValueError("neg_mask must be a bool tensor with the shape of neg_logits")
    return neg_mask, neg_mask.sum(dim=1)


def reduce(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# ---------------------------------------------------------------- two-view geometry
def view_logits(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """``(2b, 2b)`` matrix of cos(z_i, z_k) / t over the stacked, L2-normalized views."""
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
    return z @ z.t() / temperature


def partner_index(b: int, device=None) -> torch.Tensor:
    """``a(i)`` for the ``2b`` stacked views."""
    return (torch.arange(2 * b, device=device) + b) % (2 * b)


def partner_mask(b: int, device=None) -> torch.Tensor:
    """Bool ``(2b, 2b)``, True at (i, a(i))."""
    n = 2 * b
    return torch.arange(n, device=device).unsqueeze(0) == partner_index(b, device).unsqueeze(1)


def negative_index(b: int, device=None) -> torch.Tensor:
    """``(2b, 2b - 2)`` column indices of each anchor's negatives (all k not in {i, a(i)}).

    Cached per (b, device): a training loop asks for the same batch size every step.
    The returned tensor is shared; do not modify it in place.
    """
    return _negative_index(b, torch.device("cpu") if device is None else torch.device(device))


@functools.lru_cache(maxsize=16)
def _negative_index(b: int, device: torch.device) -> torch.Tensor:
    n = 2 * b
    with torch.inference_mode(False):  # a cached inference tensor could not be saved for backward
        k = torch.arange(n, device=device).expand(n, n)
        i = torch.arange(n, device=device).unsqueeze(1)
        keep = (k != i) & (k != (i + b) % n)
        return k[keep].view(n, n - 2)


def two_view_logits(z1: torch.Tensor, z2: torch.Tensor, temperature: float):
    """Logits form of the two-view batch: ``pos (2b,)`` and ``neg (2b, 2b - 2)``."""
    b = z1.shape[0]
    sim = view_logits(z1, z2, temperature)
    pos = sim.gather(1, partner_index(b, sim.device).unsqueeze(1)).squeeze(1)
    neg = sim.gather(1, negative_index(b, sim.device))
    return pos, neg


def weighted_view_nll(sim: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Per-anchor ``-sum_j W_ij log( e^{s_ij} / sum_{k != i} e^{s_ik} )``.

    ``sim`` ``(2b, 2b)`` logits, ``weights`` ``(2b, 2b)`` with a zero diagonal: the
    shared form of InfoNCE, SupCon, puCL and puNCE, which differ only in ``W``.
    """
    eye = torch.eye(sim.shape[0], dtype=torch.bool, device=sim.device)
    log_prob = sim.masked_fill(eye, float("-inf")).log_softmax(dim=1)
    return -(weights * log_prob.masked_fill(eye, 0.0)).sum(dim=1)


def row_normalize(mask: torch.Tensor, dtype) -> torch.Tensor:
    """``mask / mask.sum(1)`` as ``dtype`` (rows of an all-False mask stay zero)."""
    m = mask.to(dtype)
    return m / m.sum(dim=1, keepdim=True).clamp_min(1.0)


# ---------------------------------------------------------------- masked numerics
def masked_logsumexp(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp over ``mask``; ``-inf`` for empty rows, with finite gradients."""
    empty = ~mask.any(dim=1, keepdim=True)
    x = x.masked_fill(~mask, float("-inf"))
    if not bool(empty.any()):  # skips two full-size passes (forward and backward) in the common case
        return torch.logsumexp(x, dim=1)
    x = x.masked_fill(empty, 0.0)
    return torch.logsumexp(x, dim=1).masked_fill(empty.squeeze(1), float("-inf"))


def empirical_cdf(neg_logits: torch.Tensor, neg_mask: torch.Tensor) -> torch.Tensor:
    """Inclusive empirical CDF of each valid candidate within its anchor's row.

    ``Phi[i, j] = #{k valid : s_ik <= s_ij} / N_i`` (ties count, so ``Phi >= 1/N_i``).
    Sort + ``searchsorted(right=True)``: O(K log K) per anchor, no (n, K, K) tensor.
    Invalid entries get 0. Piecewise constant in the logits, hence computed without grad.
    """
    with torch.no_grad():
        x = neg_logits.detach().masked_fill(~neg_mask, float("inf"))
        sorted_x, _ = torch.sort(x, dim=1)
        counts = torch.searchsorted(sorted_x.contiguous(), x.contiguous(), right=True)
        n_neg = neg_mask.sum(dim=1, keepdim=True).clamp_min(1)
        return (counts.to(neg_logits.dtype) / n_neg.to(neg_logits.dtype)).masked_fill(~neg_mask, 0.0)
