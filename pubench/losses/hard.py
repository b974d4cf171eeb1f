"""Hard-negative contrastive loss (HCL, Robinson et al. 2021), the "Hard" baseline.

Papers: Robinson et al. (ICLR 2021), the debiased hard-negative objective; its
importance weights are restated in 002 eq. 31. With x_j = exp(s_ij) for the N
negatives of anchor i and x^+ = exp(p_i) for its positive:

    w_j  = x_j^beta / ( (1/N) sum_k x_k^beta )                     (002 eq. 31)
    Ng_i = max( (sum_j w_j x_j - tau_plus * N * x^+) / (1 - tau_plus),  N e^{-1/t} )
    l_i  = -log  x^+ / (x^+ + Ng_i)

Symbols -> arguments: beta (concentration of the von Mises-Fisher tilt) -> ``beta``;
tau^+ -> ``tau_plus`` in [0, 1); t -> ``temperature`` (floor only). beta = 0 gives
w_j = 1, i.e. DCL (``debiased``). The weights are a function of the negatives and are
differentiated through (nothing is detached; to our knowledge the authors' code does
the same).

Shapes: as ``debiased``; the two-view form returns the mean over the 2b anchors, the
logits form per-anchor losses / mean / sum per ``reduction``.

Numerics: x^beta and x^{beta+1} overflow float32 for beta > ~5.2 at t = 0.07
(e^{(beta+1)/t}). We never form them: sum_j w_j x_j = N exp(LSE((beta+1) s) - LSE(beta s)),
then the shared log-domain clamp of ``debiased_nll``.
"""

from __future__ import annotations

import torch

from pubench.losses.base import LOSSES
from pubench.losses._pairs import (
    check_logits,
    check_real,
    check_reduction,
    check_temperature,
    check_views,
    masked_logsumexp,
    reduce,
    two_view_logits,
)
from pubench.losses.debiased import dcl_coefficients, debiased_nll


def log_tilted_sum(neg_logits, neg_mask, n_neg, log_weights, beta: float):
    """``log sum_j w_j x_j`` with ``w_j = v_j x_j^beta / mean_k(v_k x_k^beta)``.

    ``log_weights`` is ``log v_j`` (``None`` for v = 1; ``-inf`` allowed). Returns
    ``-inf`` for anchors without candidates or with an all-zero normalizer.
    """
    base = beta * neg_logits if log_weights is None else beta * neg_logits + log_weights
    top = masked_logsumexp(base + neg_logits, neg_mask)
    bottom = masked_logsumexp(base, neg_mask)
    n = n_neg.to(neg_logits.dtype)
    ok = torch.isfinite(bottom)
    safe_bottom = torch.where(ok, bottom, torch.zeros_like(bottom))
    return torch.where(ok, torch.log(n.clamp_min(1.0)) + top - safe_bottom, float("-inf"))


def hard_from_logits(
    pos_logits: torch.Tensor,
    neg_logits: torch.Tensor,
    *,
    tau_plus: float,
    beta: float,
    temperature: float,
    neg_mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """HCL on a logits form (memory bank / queue / graph negatives)."""
    check_reduction(reduction)
    beta = check_real("beta", beta)
    coef = dcl_coefficients(tau_plus)
    temperature = check_temperature(temperature)
    neg_mask, n_neg = check_logits(pos_logits, neg_logits, neg_mask)
    log_sum = log_tilted_sum(neg_logits, neg_mask, n_neg, None, beta)
    loss = debiased_nll(pos_logits, log_sum, n_neg, temperature=temperature, **coef)
    return reduce(loss, reduction)


@LOSSES.register("hard", from_logits=hard_from_logits, test_config={"temperature": 0.5, "tau_plus": 0.1, "beta": 1.0})
def hard(z1, z2, temperature: float, tau_plus: float, beta: float, *, reduction: str = "mean"):
    """HCL over the 2b views: negatives = the N = 2b - 2 other views, positive = a(i)."""
    check_views(z1, z2)
    temperature = check_temperature(temperature)
    pos, neg = two_view_logits(z1, z2, temperature)
    return hard_from_logits(
        pos, neg, tau_plus=tau_plus, beta=beta, temperature=temperature, reduction=reduction
    )
