"""Supervised-contrastive family: SupCon / sCL-PU, puCL, and the mixed loss mCL.

All three are  l_i = -sum_j W_ij log( e^{s_ij} / sum_{k != i} e^{s_ik} )  over the 2b
stacked views (s = cos / t, the denominator always runs over every view but the
anchor, positives included), with a row-stochastic attraction matrix W:

* ``supcon`` -- SupCon, 001 eq. 5 (Khosla et al. 2020; 003 eq. 23):
  W_ij = 1/|Q(i)| on Q(i) = {t != i : y_t = y_i}. Q(i) always contains a(i), the
  anchor's other view. With PU labels (1 labeled / 0 unlabeled) it is 003's sCL-PU
  (eq. 25): the unlabeled set is treated as a surrogate negative class, so unlabeled
  anchors attract every other unlabeled view.
* ``supcon_pu`` -- 001 eq. 11 (named SCL^PU there) = 003's puCL (eq. 29): labeled
  anchors i in P get W_ij = 1/(|P| - 1) on P \\ {i} (all other labeled views, incl.
  a(i)); unlabeled anchors get W = one-hot on a(i), i.e. InfoNCE (001 eq. 4).
  Naming trap: 001's "SCL" baseline (eq. 11, L_SCL^PU) is this puCL, not 003's
  sCL-PU (``supcon`` with PU labels).
* ``supcon_pnu`` -- the semi-supervised SCL of 001 Table 4 (Assran et al. 2020): with
  PNU labels (1 labeled positive / 0 labeled negative / -1 unlabeled), labeled anchors get
  W uniform on the other labeled views of their class; unlabeled anchors one-hot on a(i).
  With no labeled negative it is ``supcon_pu``; with everything labeled, ``supcon``.
* ``mixed`` -- 003's mCL (eq. 28): lam * sCL-PU + (1 - lam) * ssCL (InfoNCE). Since the
  loss is linear in W it is computed once with W = lam W_sCL-PU + (1 - lam) W_ssCL.

Symbols -> arguments: tau -> ``temperature``; y -> ``labels`` (int ``(b,)``, shared by
both views of a sample); s_i = 1 (labeled) -> ``labeled`` (bool ``(b,)``, both views of
a labeled sample are labeled, so |P| is even and >= 2 when non-empty); lambda ->
``lam`` in [0, 1]. Returns the mean over the 2b anchors (001 eq. 5 is a sum; 001 eq. 9
and 11 divide by 2b), or per-anchor losses with ``reduction="none"``.

Special cases (tested): no labeled sample -> supcon_pu = InfoNCE; all labeled ->
supcon_pu = SupCon with one class; mixed(lam=1) = supcon(labels=labeled),
mixed(lam=0) = info_nce. Numerics: log_softmax, stable for any temperature.
"""

from __future__ import annotations

import torch

from pubench.losses.base import LOSSES
from pubench.losses._pairs import (
    check_labeled,
    check_labels,
    check_reduction,
    check_temperature,
    check_unit,
    check_views,
    partner_mask,
    reduce,
    row_normalize,
    view_logits,
    weighted_view_nll,
)


def _not_self(n: int, device) -> torch.Tensor:
    return ~torch.eye(n, dtype=torch.bool, device=device)


def partner_weights(b: int, dtype, device) -> torch.Tensor:
    """W of InfoNCE: one-hot on a(i)."""
    return partner_mask(b, device).to(dtype)


def same_label_weights(labels2: torch.Tensor, dtype) -> torch.Tensor:
    """W of SupCon for the ``(2b,)`` view labels: uniform on Q(i) = {t != i : y_t = y_i}."""
    same = (labels2.unsqueeze(0) == labels2.unsqueeze(1)) & _not_self(labels2.numel(), labels2.device)
    return row_normalize(same, dtype)


def pucl_weights(labeled2: torch.Tensor, dtype) -> torch.Tensor:
    """W of puCL: labeled rows uniform on P \\ {i}; unlabeled rows one-hot on a(i)."""
    n = labeled2.numel()
    both = labeled2.unsqueeze(0) & labeled2.unsqueeze(1) & _not_self(n, labeled2.device)
    w_lab = row_normalize(both, dtype)
    w_unl = partner_weights(n // 2, dtype, labeled2.device)
    return torch.where(labeled2.unsqueeze(1), w_lab, w_unl)


@LOSSES.register("supcon", test_config={"temperature": 0.5})
def supcon(z1, z2, labels: torch.Tensor, temperature: float, *, reduction: str = "mean"):
    """SupCon (001 eq. 5); with 0/1 PU labels it is 003's sCL-PU."""
    b = check_views(z1, z2)
    check_reduction(reduction)
    labels = check_labels(labels, b, z1.device)
    sim = view_logits(z1, z2, check_temperature(temperature))
    loss = weighted_view_nll(sim, same_label_weights(labels.repeat(2), sim.dtype))
    return reduce(loss, reduction)


@LOSSES.register("supcon_pu", test_config={"temperature": 0.5})
def supcon_pu(z1, z2, labeled: torch.Tensor, temperature: float, *, reduction: str = "mean"):
    """puCL (001 eq. 11 / 003 eq. 29): labeled anchors attract all labeled views."""
    b = check_views(z1, z2)
    check_reduction(reduction)
    labeled = check_labeled(labeled, b, z1.device)
    sim = view_logits(z1, z2, check_temperature(temperature))
    loss = weighted_view_nll(sim, pucl_weights(labeled.repeat(2), sim.dtype))
    return reduce(loss, reduction)


def pnu_weights(labels2: torch.Tensor, dtype) -> torch.Tensor:
    """W of semi-supervised SCL: labeled rows uniform on their labeled class-mates, unlabeled
    rows one-hot on a(i)."""
    n = labels2.numel()
    labeled = labels2 >= 0
    same = (labels2.unsqueeze(0) == labels2.unsqueeze(1)) & labeled.unsqueeze(0) & _not_self(n, labels2.device)
    return torch.where(labeled.unsqueeze(1), row_normalize(same, dtype), partner_weights(n // 2, dtype, labels2.device))


@LOSSES.register("supcon_pnu", test_config={"temperature": 0.5})
def supcon_pnu(z1, z2, labels: torch.Tensor, temperature: float, *, reduction: str = "mean"):
    """Semi-supervised SCL on PNU labels (1 / 0 labeled, -1 unlabeled), 001 Table 4's SCL."""
    b = check_views(z1, z2)
    check_reduction(reduction)
    labels = check_labels(labels, b, z1.device)
    sim = view_logits(z1, z2, check_temperature(temperature))
    loss = weighted_view_nll(sim, pnu_weights(labels.repeat(2), sim.dtype))
    return reduce(loss, reduction)


@LOSSES.register("mixed", test_config={"temperature": 0.5, "lam": 0.3})
def mixed(z1, z2, labeled: torch.Tensor, temperature: float, lam: float, *, reduction: str = "mean"):
    """mCL (003 eq. 28): ``lam * sCL-PU + (1 - lam) * InfoNCE``."""
    b = check_views(z1, z2)
    check_reduction(reduction)
    lam = check_unit("lam", lam)
    labeled = check_labeled(labeled, b, z1.device)
    sim = view_logits(z1, z2, check_temperature(temperature))
    w_scl = same_label_weights(labeled.long().repeat(2), sim.dtype)
    w = lam * w_scl + (1.0 - lam) * partner_weights(b, sim.dtype, sim.device)
    return reduce(weighted_view_nll(sim, w), reduction)
