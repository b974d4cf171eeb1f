"""PUCL: contrastive loss with positive-unlabeled negative-sampling correction.

Paper: 000 (Wang et al., "Contrastive Learning with Negative Sampling Correction"),
eq. 7-8 (empirical L_DeCL), built on Lemma 1 / eq. 3 (single-training-set + SCAR):

    mu_hat_i = max{ (1 - alpha c)/(1 - alpha) * (1/M^u) sum_{u} h(x, x_u)
                    - alpha (1 - c)/(1 - alpha) * (1/M^+) sum_{+} h(x, x_+),  e^{-1/t} }   (8)
    l_i      = -log  h(x, x^+) / (h(x, x^+) + N mu_hat_i)                                (7)

Symbols -> arguments: alpha (class prior Pr(y = 1)) -> ``alpha`` in [0, 1); c (label
frequency Pr(s = 1 | y = 1)) -> ``c`` in [0, 1]; t -> ``temperature``;
h(x, x') = exp(cos(x, x') / t). Decisions (the paper leaves them implicit):

* M^u = N: the unlabeled sample {x_u} is the anchor's N = 2b - 2 other views (the paper
  sets M^u = N in every experiment), so N * (1/M^u) sum_u h = sum_u h. In the logits
  form M^u = N = the anchor's number of valid candidates.
* M^+ = 1: the positive sample is the anchor's other view a(i), the same term that is
  the numerator (SimCLR gives no other positive of x).
* Temperature: 000 writes h = e^{f(x)^T f(x')} for unit-norm f, i.e. t = 1, and floors
  mu_hat at e^{-1}, "the theoretical minimum of mu_x". We use h = e^{s/t} as in every
  experiment (SimCLR/CMC/MoCo use a temperature), so the minimum, hence the floor, is
  e^{-1/t}.

Relation to DCL: N mu_hat = max(A sum_u h - B N h^+, N e^{-1/t}) with
A = (1 - alpha c)/(1 - alpha), B = alpha (1 - c)/(1 - alpha) and A - B = 1, which is DCL's
max((sum - tau+ N h^+)/(1 - tau+), N e^{-1/t}) with tau+ = alpha (1 - c)/(1 - alpha c)
(A = 1/(1 - tau+), B = tau+/(1 - tau+)). So PUCL is DCL with that tau_plus; c = 1
gives InfoNCE (apart from the floor), c = 0 gives DCL with tau_plus = alpha.

Paper notes: eq. 5-6 (Theorem 1) are garbled in our text copy; eq. 8 is unambiguous.
000 calls alpha "the positive prior in unlabeled data" in its ablation but defines it
as Pr(y = 1) over the full population (eq. 1); we follow eq. 1-3.

Shapes: two-view ``z1, z2`` ``(b, d)`` -> mean over the 2b anchors; logits form
``pos_logits (n,)``, ``neg_logits (n, K)``, ``neg_mask (n, K)`` -> per ``reduction``.
Numerics: shared log-domain clamp ``debiased_nll`` (see ``debiased``).
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
from pubench.losses.debiased import debiased_nll


def pucl_coefficients(alpha: float, c: float) -> tuple[float, float]:
    """(A, B) of eq. 8: ``mu = A * mean_u h - B * mean_+ h``."""
    alpha = check_unit("alpha", alpha, open_right=True)
    c = check_unit("c", c)
    return (1.0 - alpha * c) / (1.0 - alpha), alpha * (1.0 - c) / (1.0 - alpha)


def pu_corrected_from_logits(
    pos_logits: torch.Tensor,
    neg_logits: torch.Tensor,
    *,
    alpha: float,
    c: float,
    temperature: float,
    neg_mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """PUCL on a logits form: candidates = the M^u unlabeled samples, M^+ = 1 positive."""
    check_reduction(reduction)
    scale, pos_weight = pucl_coefficients(alpha, c)
    temperature = check_temperature(temperature)
    neg_mask, n_neg = check_logits(pos_logits, neg_logits, neg_mask)
    log_sum = masked_logsumexp(neg_logits, neg_mask)
    loss = debiased_nll(
        pos_logits, log_sum, n_neg, scale=scale, pos_weight=pos_weight, temperature=temperature
    )
    return reduce(loss, reduction)


@LOSSES.register("pu_corrected", from_logits=pu_corrected_from_logits,
                 test_config={"temperature": 0.5, "alpha": 0.1, "c": 0.1})
def pu_corrected(z1, z2, temperature: float, alpha: float, c: float, *, reduction: str = "mean"):
    """PUCL over the 2b views (000 eq. 7-8); M^u = the N = 2b - 2 other views, M^+ = a(i)."""
    check_views(z1, z2)
    temperature = check_temperature(temperature)
    pos, neg = two_view_logits(z1, z2, temperature)
    return pu_corrected_from_logits(
        pos, neg, alpha=alpha, c=c, temperature=temperature, reduction=reduction
    )
