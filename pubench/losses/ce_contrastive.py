"""The fine-tuning objective of the text track (001 Table 5): cross-entropy plus a
contrastive term.

001 Sec. 5.3 ('PNU few shot learning'), after Gunel et al. 2020 eq. (1)-(3)::

    L = lam * L_CE + (1 - lam) * L_CL

* L_CE: the mean cross-entropy of the classifier's logits over the *labeled* samples of
  the batch (unlabeled samples contribute only to L_CL, Sec. 5.3); ``logits`` ``(n, C)``,
  ``targets`` ``(n,)`` int: the labeled rows only;
* L_CL: a contrastive loss of :mod:`pubench.losses` on the batch's two views (SupCon,
  001 eq. 5, for Gunel et al.'s SCL; ``punce_pnu``, 001 eq. 10, for CE + puNCE), computed
  by the caller (it needs the views and its own label argument) and passed as a scalar;
* lam -> ``lam`` in [0, 1]. ``lam = 1`` is plain CE fine-tuning (then ``contrastive`` may be
  None: no second view is computed); ``lam = 0`` is the contrastive term alone.

Not a registered two-view loss (it needs the classifier's logits): the ``text_fewshot``
task names it ``train.objective: {name: ce | ce_plus_contrastive}``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

OBJECTIVES = ("ce", "ce_plus_contrastive")


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """L_CE = -(1/n) sum_i log softmax(logits_i)[y_i] (Gunel et al. eq. 1), over labeled rows."""
    if logits.dim() != 2 or targets.shape != (logits.shape[0],) or logits.shape[0] == 0:
        raise ValueError(f"cross_entropy: logits (n, C) with n >= 1 and targets (n,), got {tuple(logits.shape)} "
                         f"and {tuple(targets.shape)}")
    return F.cross_entropy(logits, targets)


def ce_plus_contrastive(logits: torch.Tensor, targets: torch.Tensor, contrastive: torch.Tensor | None,
                        lam: float) -> torch.Tensor:
    """L = lam * L_CE + (1 - lam) * L_CL (001 Sec. 5.3; Gunel et al. eq. 3)."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    ce = cross_entropy(logits, targets)
    if lam == 1.0:
        return ce
    if contrastive is None or contrastive.dim() != 0:
        raise ValueError("ce_plus_contrastive: lam < 1 needs the contrastive term as a scalar tensor")
    return lam * ce + (1.0 - lam) * contrastive
