"""Debiased contrastive loss (DCL, Chuang et al. 2020), the "DEB" / "dCL" baseline.

Papers: Chuang et al. (NeurIPS 2020) eq. for L_Debiased; restated in 002 eq. 30 and
003 Sec. 6.2 (eq. 40-42, whose symbols are lost in our text copy). For anchor i with
positive logit p_i = s_i,a(i) and N negatives with logits s_ij:

    Ng_i = max( (sum_j e^{s_ij} - tau_plus * N * e^{p_i}) / (1 - tau_plus),  N e^{-1/t} )
    l_i  = -log  e^{p_i} / (e^{p_i} + Ng_i)

Symbols -> arguments: tau^+ (class prior of the anchor's class among the negatives)
-> ``tau_plus`` in [0, 1); t -> ``temperature`` (only used by the floor N e^{-1/t},
the smallest value a sum of N cosine exponentials can take); M = 1 positive sample
(the other view) in the estimate of E[e^{s^+}], as in the SimCLR setting of the paper.
In a logits form N is the per-anchor number of valid candidates (``neg_mask``).

Shapes: two-view ``z1, z2`` ``(b, d)`` -> mean over the 2b anchors. Logits form:
``pos_logits (n,)``, ``neg_logits (n, K)``, optional ``neg_mask (n, K)``; returns
per-anchor losses with ``reduction="none"``, else mean (default) or sum.

Numerics: the corrected sum is evaluated as m + log(a e^{log S - m} - b N e^{p - m})
with m = max(log S, p) (detached), and the floor as log N - 1/t, so no exp overflows;
the clamp is a max in the log domain. ``debiased_nll`` is shared with HCL (``hard``)
and PUCL (``pu_corrected``), which differ only in S and the two coefficients.
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
    reduce,
    two_view_logits,
)


def debiased_nll(pos, log_sum, n_neg, *, scale, pos_weight, temperature):
    """Per-anchor ``log(e^pos + Ng) - pos`` with the clamped corrected negative sum.

    ``Ng = max(scale * exp(log_sum) - pos_weight * N * e^pos, N e^{-1/t})``; ``log_sum``
    is the log of the (possibly reweighted) negative sum, ``-inf`` when N = 0 (loss 0).
    """
    n = n_neg.to(pos.dtype)
    m = torch.maximum(log_sum, pos).detach()
    d = scale * torch.exp(log_sum - m) - pos_weight * n * torch.exp(pos - m)
    tiny = torch.finfo(d.dtype).tiny
    log_d = torch.where(d > 0, m + torch.log(d.clamp_min(tiny)), float("-inf"))
    log_floor = torch.log(n) - 1.0 / temperature
    log_ng = torch.where(log_d > log_floor, log_d, log_floor)
    return torch.logaddexp(pos, log_ng) - pos


def dcl_coefficients(tau_plus: float) -> dict[str, float]:
    """``scale`` and ``pos_weight`` of DCL's ``Ng = scale * sum neg - pos_weight * N * pos``."""
    tau_plus = check_unit("tau_plus", tau_plus, open_right=True)
    return {"scale": 1.0 / (1.0 - tau_plus), "pos_weight": tau_plus / (1.0 - tau_plus)}


def debiased_from_logits(
    pos_logits: torch.Tensor,
    neg_logits: torch.Tensor,
    *,
    tau_plus: float,
    temperature: float,
    neg_mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """DCL on a logits form (memory bank / queue / graph negatives)."""
    check_reduction(reduction)
    coef = dcl_coefficients(tau_plus)
    temperature = check_temperature(temperature)
    neg_mask, n_neg = check_logits(pos_logits, neg_logits, neg_mask)
    log_sum = masked_logsumexp(neg_logits, neg_mask)
    loss = debiased_nll(pos_logits, log_sum, n_neg, temperature=temperature, **coef)
    return reduce(loss, reduction)


@LOSSES.register("debiased", from_logits=debiased_from_logits, test_config={"temperature": 0.5, "tau_plus": 0.1})
def debiased(z1, z2, temperature: float, tau_plus: float, *, reduction: str = "mean"):
    """DCL over the 2b views: negatives = the N = 2b - 2 other views, positive = a(i)."""
    check_views(z1, z2)
    temperature = check_temperature(temperature)
    pos, neg = two_view_logits(z1, z2, temperature)
    return debiased_from_logits(pos, neg, tau_plus=tau_plus, temperature=temperature, reduction=reduction)
