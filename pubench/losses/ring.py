"""Ring: InfoNCE restricted to negatives in a similarity-percentile band.

Paper: Wu, Mosse, Zhuang, Yamins, Goodman (ICLR 2021), "Conditional negative sampling
for contrastive learning of visual representations" -- the "Ring" competitor of 000
("samples negative ones conditionally in a ring around each positive one by
predefined percentiles"; "samples negatives within a certain range to get rid of the
negative pairs that are either too far or too close"). None of our five papers prints
the estimator, so the band is defined here:

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
differentiated.

Decisions: the positive is always in the denominator; the kept negatives are used
as they are, without rescaling by N / |R_i| (Ring's estimator keeps the NCE form with
the conditional negatives). Wu et al. also anneal the ring during training; a
schedule of (lower, upper) is the training loop's job. An anchor whose ring is empty
has loss 0.

Shapes: two-view ``z1, z2`` ``(b, d)`` -> mean over the 2b anchors; logits form
``pos_logits (n,)``, ``neg_logits (n, K)``, ``neg_mask (n, K)`` (percentiles over the
valid candidates) -> per ``reduction``. One sort per anchor, O(N log N) (see ``ring_mask``).
"""

from __future__ import annotations

import torch

from pubench.losses import LOSSES
from pubench.losses._pairs import (
    check_logits,
    check_reduction,
    check_temperature,
    check_unit,
    check_views,
    two_view_logits,
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
    lower, upper = check_unit("lower", lower), check_unit("upper", upper)
    if lower > upper:
        raise ValueError(f"need lower <= upper, got [{lower}, {upper}]")
    neg_mask, _ = check_logits(pos_logits, neg_logits, neg_mask)
    band = ring_mask(neg_logits, neg_mask, lower, upper)
    return info_nce_from_logits(pos_logits, neg_logits, neg_mask=band, reduction=reduction)


@LOSSES.register("ring")
def ring(z1, z2, temperature: float, lower: float, upper: float, *, reduction: str = "mean"):
    """Ring over the 2b views: percentile band over the N = 2b - 2 other views."""
    check_views(z1, z2)
    pos, neg = two_view_logits(z1, z2, check_temperature(temperature))
    return ring_from_logits(pos, neg, lower=lower, upper=upper, reduction=reduction)
