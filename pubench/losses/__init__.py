"""Contrastive losses of the five papers (issue 4).

Two-view losses (registered in ``LOSSES`` under their function names) take the
unnormalized projections ``z1, z2`` ``(b, d)`` of two views of the same ``b`` samples,
L2-normalize them, use every one of the ``2b`` views as an anchor (its other view is
the positive, the remaining ``N = 2b - 2`` views are negatives / unlabeled samples) and
return the mean loss over the ``2b`` anchors. Paper hyperparameters have no defaults.

The estimators also exist as logits forms (``*_from_logits``) taking
``pos_logits (n,)``, ``neg_logits (n, K)`` and an optional ``neg_mask (n, K)``, for
memory-bank (CMC), queue (MoCo) and graph (InfoGraph) negatives. See docs/losses.md.

Where the authors' released code computes a loss differently from its paper's equations,
that version is registered next to it with the suffix ``_official`` (``punce_official``,
``bayesian_official``, ``ring_official``); each module docstring says how they differ.
"""

from pubench.utils.registry import Registry

LOSSES = Registry("loss")

from pubench.losses.bcl import (  # noqa: E402
    bayesian,
    bayesian_from_logits,
    bayesian_official,
    bayesian_official_from_logits,
)
from pubench.losses.debiased import debiased, debiased_from_logits  # noqa: E402
from pubench.losses.hard import hard, hard_from_logits  # noqa: E402
from pubench.losses.infonce import info_nce, info_nce_from_logits  # noqa: E402
from pubench.losses.pucl import pu_corrected, pu_corrected_from_logits  # noqa: E402
from pubench.losses.punce import punce, punce_official, punce_pnu  # noqa: E402
from pubench.losses.ring import ring, ring_from_logits, ring_official, ring_official_from_logits  # noqa: E402
from pubench.losses.supcon import mixed, supcon, supcon_pnu, supcon_pu  # noqa: E402

__all__ = [
    "LOSSES",
    "bayesian",
    "bayesian_from_logits",
    "bayesian_official",
    "bayesian_official_from_logits",
    "debiased",
    "debiased_from_logits",
    "hard",
    "hard_from_logits",
    "info_nce",
    "info_nce_from_logits",
    "mixed",
    "pu_corrected",
    "pu_corrected_from_logits",
    "punce",
    "punce_official",
    "punce_pnu",
    "ring",
    "ring_from_logits",
    "ring_official",
    "ring_official_from_logits",
    "supcon",
    "supcon_pnu",
    "supcon_pu",
]
