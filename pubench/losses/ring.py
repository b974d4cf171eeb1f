"""Ring: InfoNCE restricted to negatives in a similarity band, in two variants.

Paper: Wu, Mosse, Zhuang, Yamins, Goodman (ICLR 2021), "Conditional negative sampling
for contrastive learning of visual representations" -- the "Ring" competitor of 000
("samples negative ones conditionally in a ring around each positive one by
predefined percentiles"; "samples negatives within a certain range to get rid of the
negative pairs that are either too far or too close"). None of our five papers prints
the estimator or the percentiles.

``ring`` (percentile band over the negatives; our reading of that description):

    q_ij  = (1/N) #{k : s_ik <= s_ij}              (inclusive similarity percentile)
    R_i   = { j : lower <= q_ij <= upper }          (the ring)
    l_i   = -log  e^{p_i} / (e^{p_i} + sum_{j in R_i} e^{s_ij})

Symbols -> arguments: the lower / upper percentile of the ring -> ``lower``,
``upper`` (0 <= lower <= upper <= 1); s = cos / t -> ``temperature``. The percentile is
over the anchor's own N negatives and increases with similarity: q = 1 is the closest
(hardest) negative, q = 1/N the farthest. So ``upper < 1`` drops the closest
negatives (likely false negatives), ``lower > 0`` drops the easy far ones, and
[0, 1] keeps everything (= InfoNCE). The band is inclusive and ties share the
percentile (same empirical CDF as BCL's Phi_N); it is piecewise constant, hence not
differentiated. The positive is always in the denominator; the kept negatives are used
as they are, without rescaling by N / |R_i|. An anchor whose ring is empty has loss 0.
All 2b views are anchors (mean over 2b).

``ring_official`` (the authors' released code, mhw32/contrastive-ring-public):
``MoCoRing.get_loss`` (src/objectives/moco.py) and ``SimCLRRing.get_loss``
(src/objectives/simclr.py, only in the initial commit e79c871; a later commit removed
it), with the released configs' ``dynamic_inner = true``, ``self_negative = true``,
``neighbor_views = false``. It differs from ``ring`` in four ways:

* Candidate list. Each anchor's row of dot products is sorted, descending, over *all*
  its candidates: for MoCo the K queue keys; for SimCLR the 2b views of the batch,
  *including the anchor itself* (s_ii = 1/t, always rank 0) *and its positive*.
* Band by rank, not by percentile. With M candidates, ``thres_outer`` w_o and
  ``thres_inner`` w_i, the outer ball is the top ``int(w_o M)`` of the sorted list and
  the ring drops its top ``int(w_i int(w_o M))``; here: the kept ranks (0 = most
  similar) are [floor((1 - upper) M), floor((1 - lower) M)). The released configs (every
  annealing flag false, so constant): ``mocov2/moco_ring.json`` and ``nce/nce_ring.json``
  have thres_outer = thres_inner = 0.1, i.e. ``lower = 0.9, upper = 0.99``, reproduced
  exactly for every M (floor(floor(M/10)/10) = floor(M/100)); ``simclr/simclr_ring.json``
  has thres_outer = 0.5, thres_inner = 0.1, i.e. ``lower = 0.5, upper = 0.95`` (tested
  against the released arithmetic); a general (w_o, w_i) maps to lower = 1 - w_o,
  upper = 1 - w_i w_o up to the truncation of int(w_o M).
* The positive is prepended to the ring (``self_negative``): the partition is
  LSE(p, ring). For SimCLR the positive is also in the sorted list, so when its rank
  falls inside the band it is counted twice; the anchor itself is dropped only when
  floor((1 - upper) M) >= 1.
* SimCLR anchors: only the b first views (``outputs1``), not all 2b (mean over b).

Not reproduced: ``NCERing`` (the IR / CMC memory-bank objective) draws k - 1 of the ring
with replacement (``torch.randint``) instead of using the whole ring; the optional
threshold annealing (``thres_outer`` from 1.0 to 0.1, off in the released configs) would
be schedules on ``lower`` and ``upper`` (``lower_schedule``, ``upper_schedule``).

Shapes: two-view ``z1, z2`` ``(b, d)`` -> mean over the anchors (2b for ``ring``, b for
``ring_official``); logits forms ``pos_logits (n,)``, ``neg_logits (n, K)``,
``neg_mask (n, K)`` (bands over the valid candidates) -> per ``reduction``. Sort-based,
O(M log M) per anchor; the paper's band comes from two order statistics of one row sort
(``ring_mask``).
"""

from __future__ import annotations

import torch

from pubench.losses.base import LOSSES
from pubench.losses._pairs import (
    check_logits,
    check_reduction,
    check_temperature,
    check_unit,
    check_views,
    masked_logsumexp,
    partner_index,
    reduce,
    two_view_logits,
    view_logits,
)
from pubench.losses.infonce import info_nce_from_logits


def sort_rows(x: torch.Tensor) -> torch.Tensor:
    """Each row of ``x`` sorted ascending (values only). On CPU NumPy's vectorised sort is
    used: ``torch.sort`` along rows of ~128 takes ~25x longer there (measured, torch 2.14)."""
    if x.device.type == "cpu":
        import numpy as np

        return torch.from_numpy(np.sort(x.contiguous().numpy(), axis=1))
    return torch.sort(x, dim=1).values


def ring_mask(neg_logits: torch.Tensor, neg_mask: torch.Tensor, lower: float, upper: float) -> torch.Tensor:
    """Bool ``(n, K)``: valid candidates whose inclusive percentile lies in [lower, upper].

    From two order statistics per anchor instead of every candidate's percentile: with
    ``c_ij = #{k valid : s_ik <= s_ij}`` and the anchor's sorted valid logits
    ``v_(1) <= ... <= v_(N)``, ``c_ij >= L <=> s_ij >= v_(L)`` and
    ``c_ij <= U <=> s_ij < v_(U+1)``, where ``L`` (``U``) is the smallest (largest) count
    ``c`` with ``lower <= c / N`` (``c / N <= upper``), ``c / N`` computed in the logits'
    dtype as :func:`empirical_cdf` computes ``q``. So ties, and the band, are exactly those
    of ``lower <= empirical_cdf <= upper``. Not differentiated (piecewise constant).
    """
    with torch.no_grad():
        x = neg_logits.detach().masked_fill(~neg_mask, float("inf"))
        k = x.shape[1]
        n_neg = neg_mask.sum(dim=1, keepdim=True)
        counts = torch.arange(1, k + 1, device=x.device, dtype=x.dtype)
        q = counts / n_neg.clamp_min(1).to(x.dtype)  # (n, K): the percentile of count c = 1..K
        below = (q < lower).sum(dim=1, keepdim=True)  # L - 1
        within = (q <= upper).sum(dim=1, keepdim=True)  # U
        v = sort_rows(x)
        v_low = v.gather(1, below.clamp_max(k - 1))
        v_high = torch.where(within < n_neg, v.gather(1, within.clamp_max(k - 1)), float("inf"))
        return neg_mask & (x >= v_low) & (x < v_high)


def _check_band(lower: float, upper: float) -> tuple[float, float]:
    lower, upper = check_unit("lower", lower), check_unit("upper", upper)
    if lower > upper:
        raise ValueError(f"need lower <= upper, got [{lower}, {upper}]")
    return lower, upper


def ring_from_logits(
    pos_logits: torch.Tensor,
    neg_logits: torch.Tensor,
    *,
    lower: float,
    upper: float,
    neg_mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """Ring on a logits form: InfoNCE over the candidates inside each anchor's band."""
    check_reduction(reduction)
    lower, upper = _check_band(lower, upper)
    neg_mask, _ = check_logits(pos_logits, neg_logits, neg_mask)
    band = ring_mask(neg_logits, neg_mask, lower, upper)
    return info_nce_from_logits(pos_logits, neg_logits, neg_mask=band, reduction=reduction)


@LOSSES.register("ring", from_logits=ring_from_logits, test_config={"temperature": 0.5, "lower": 0.2, "upper": 0.8})
def ring(z1, z2, temperature: float, lower: float, upper: float, *, reduction: str = "mean"):
    """Ring over the 2b views: percentile band over the N = 2b - 2 other views."""
    check_views(z1, z2)
    pos, neg = two_view_logits(z1, z2, check_temperature(temperature))
    return ring_from_logits(pos, neg, lower=lower, upper=upper, reduction=reduction)


# ---------------------------------------------------------------- the released code's Ring
# floor((1 - q) M) is computed as floor((1 - q) M + 1e-9): 1 - 0.9 = 0.09999999999999998 in
# binary, which would otherwise lose one candidate whenever M / 10 is an integer.
_RANK_EPS = 1e-9


def official_rank_bounds(n_candidates: torch.Tensor, lower: float, upper: float):
    """Kept ranks [first, stop) of each sorted row (0 = most similar), ``(n,)`` each."""
    m = n_candidates.to(torch.float64)
    first = torch.floor((1.0 - upper) * m + _RANK_EPS).long()
    stop = torch.floor((1.0 - lower) * m + _RANK_EPS).long()
    return first, stop


def ring_official_from_logits(
    pos_logits: torch.Tensor,
    neg_logits: torch.Tensor,
    *,
    lower: float,
    upper: float,
    neg_mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """Ring of the released code on a logits form (``MoCoRing``): ``-p + LSE(p, ring)``.

    ``neg_logits`` holds each anchor's whole candidate list (for MoCo the queue); the
    ring is the sorted list's ranks [floor((1 - upper) M), floor((1 - lower) M)) among
    its ``M`` valid candidates.
    """
    check_reduction(reduction)
    lower, upper = _check_band(lower, upper)
    neg_mask, n_valid = check_logits(pos_logits, neg_logits, neg_mask)
    ranked, _ = neg_logits.masked_fill(~neg_mask, float("-inf")).sort(dim=1, descending=True)
    first, stop = official_rank_bounds(n_valid, lower, upper)
    rank = torch.arange(neg_logits.shape[1], device=neg_logits.device).unsqueeze(0)
    in_ring = (rank >= first.unsqueeze(1)) & (rank < stop.unsqueeze(1))
    loss = torch.logaddexp(pos_logits, masked_logsumexp(ranked, in_ring)) - pos_logits
    return reduce(loss, reduction)


@LOSSES.register("ring_official", from_logits=ring_official_from_logits,
                 test_config={"temperature": 0.5, "lower": 0.5, "upper": 0.95})
def ring_official(z1, z2, temperature: float, lower: float, upper: float, *, reduction: str = "mean"):
    """Ring of the released ``SimCLRRing``: b anchors (the views in ``z1``), each ranking all 2b
    views (itself and its positive included)."""
    b = check_views(z1, z2)
    rows = view_logits(z1, z2, check_temperature(temperature))[:b]
    pos = rows.gather(1, partner_index(b, rows.device)[:b].unsqueeze(1)).squeeze(1)
    return ring_official_from_logits(pos, rows, lower=lower, upper=upper, reduction=reduction)
