"""Contrastive losses of the five papers (issue 4).

Two-view losses (registered in :data:`LOSSES`, interface :mod:`pubench.losses.base`) take
the unnormalized projections ``z1, z2`` ``(b, d)`` of two views of the same ``b``
samples, L2-normalize them, use every one of the ``2b`` views as an anchor (its other
view is the positive, the remaining ``N = 2b - 2`` views are negatives / unlabeled
samples) and return the mean loss over the ``2b`` anchors. Paper hyperparameters have no
defaults.

The estimators that also exist as logits forms declare them at registration
(``from_logits=``; :func:`pubench.losses.base.logits_form`): they take ``pos_logits
(n,)``, ``neg_logits (n, K)`` and an optional ``neg_mask (n, K)``, for memory-bank (CMC),
queue (MoCo) and graph (InfoGraph) negatives. See docs/losses.md.

Where the authors' released code computes a loss differently from its paper's equations,
that version is registered next to it with the suffix ``_official`` (``punce_official``,
``bayesian_official``, ``ring_official``); each module docstring says how they differ.

Every module of this package is found by the registry: a new loss is one file with one
``@LOSSES.register`` (no list to edit here). Import a loss function from its module
(``from pubench.losses.debiased import debiased``) or look it up by name.
"""

from pubench.losses.base import LOSSES, logits_form

__all__ = ["LOSSES", "logits_form"]
