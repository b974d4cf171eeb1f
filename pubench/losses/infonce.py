"""InfoNCE / SimCLR NT-Xent: the biased contrastive loss (ssCL).

Paper: 001 eq. 4 (the "ssCL" of 003 eq. 22; L_staCL of 000; L_BIASED of 002 eq. 5).

    l_i = -log  exp(s_i,a(i)) / sum_{k != i} exp(s_ik),     s_ik = z_i . z_k / tau

Symbols -> arguments: tau -> ``temperature``; z_i -> rows of the L2-normalized
``cat([z1, z2])``; a(i) -> the other view of anchor i. In the logits form,
``pos_logits[i] = s_i,a(i)`` and ``neg_logits[i, :]`` are s_ik for the candidates.

Shapes: ``z1, z2`` ``(b, d)``; two-view loss is the mean over the 2b anchors (001
writes a sum; we divide by 2b as 001 eq. 9 does). Logits form: ``pos_logits (n,)``,
``neg_logits (n, K)``, ``neg_mask (n, K)`` bool; returns per-anchor losses
(``reduction="none"``), their mean (default) or sum. The denominator includes the
positive, as in 001 eq. 4 (k ranges over every view but the anchor). Computed with
log-sum-exp: no overflow for any temperature.
"""

from __future__ import annotations

import torch

from pubench.losses.base import LOSSES
from pubench.losses._pairs import (
    check_logits,
    check_reduction,
    check_temperature,
    check_views,
    masked_logsumexp,
    reduce,
    two_view_logits,
)


def info_nce_from_logits(
    pos_logits: torch.Tensor,
    neg_logits: torch.Tensor,
    *,
    neg_mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """InfoNCE per anchor: ``log(e^pos + sum_valid e^neg) - pos``.

    An anchor without any valid negative has loss 0 (``-log(e^pos / e^pos)``).
    """
    check_reduction(reduction)
    neg_mask, _ = check_logits(pos_logits, neg_logits, neg_mask)
    log_neg = masked_logsumexp(neg_logits, neg_mask)
    loss = torch.logaddexp(pos_logits, log_neg) - pos_logits
    return reduce(loss, reduction)


@LOSSES.register("info_nce", from_logits=info_nce_from_logits, test_config={"temperature": 0.5})
def info_nce(z1: torch.Tensor, z2: torch.Tensor, temperature: float, *, reduction: str = "mean"):
    """SimCLR NT-Xent over the 2b views (001 eq. 4); mean over anchors by default."""
    check_views(z1, z2)
    pos, neg = two_view_logits(z1, z2, check_temperature(temperature))
    return info_nce_from_logits(pos, neg, reduction=reduction)
