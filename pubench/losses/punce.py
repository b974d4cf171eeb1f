"""puNCE: prior-weighted positive-unlabeled contrastive loss, and its PNU extension.

Paper: 001 (Acharya et al., "Positive Unlabeled Contrastive Learning") eq. 7-9 (= 003
eq. 37-39) and eq. 10 (PNU). Over the 2b stacked views, s = cos / t,
log q_ij = log( e^{s_ij} / sum_{k != i} e^{s_ik} ), P / U = labeled / unlabeled views:

    i in P:  l_i = -1/(|P| - 1) sum_{j in P \\ {i}} log q_ij                              (7)
    i in U:  l_i = -[ pi/(|P| + 1) sum_{j in P u {a(i)}} log q_ij + (1 - pi) log q_i,a(i) ]  (8)
    L = (1/2b) sum_i l_i                                                                (9)

PNU (eq. 10), labels 1 (P) / 0 (N) / -1 (U), P(i) = P u {a(i)}, N(i) = N u {a(i)}:

    i in P u N:  l_i = -1/|Q(i)| sum_{j in Q(i)} log q_ij,  Q(i) = labeled views t != i, y_t = y_i
    i in U:      l_i = -[ pi/|P(i)| sum_{j in P(i)} log q_ij + (1 - pi)/|N(i)| sum_{j in N(i)} log q_ij ]

Symbols -> arguments: pi -> ``prior`` in [0, 1]; tau -> ``temperature``; s_i -> ``labeled``
(bool ``(b,)``; both views of a labeled sample are labeled, so |P| is even and, when
non-empty, >= 2: eq. 7 is always defined); y -> ``labels`` (int ``(b,)`` in {1, 0, -1}).

Decisions and paper notes:

* Printed eq. 10 repeats its (1 - pi)/|N(i)| term twice. Taken literally the unlabeled
  anchor's weights would sum to pi + 2(1 - pi) != 1 and eq. 10 would not reduce to
  eq. 8 when no negative is labeled; the evident intent (one negative term) is
  implemented. Eq. 8 and 10 also print z_i^t in some denominators (typo for z_i).
* Q(i) in eq. 10 is over labeled views only (y_t is unknown for unlabeled t).
* 001 calls pi both the class prior p(y = +1) (Assumption 1) and p(y = 1 | s = 0)
  (Sec. 3); the loss only uses the number, as the weight of an unlabeled anchor's
  "positive" copy. The spec decides which estimate to pass.
* Reductions (derived from the equations, tested): no labeled sample -> InfoNCE (any
  prior); every sample labeled -> SupCon with one class; prior = 0 -> puCL
  (``supcon_pu``, 001 eq. 11: eq. 7 is shared and eq. 8 with pi = 0 is InfoNCE);
  prior = 1 -> unlabeled anchors attract P u {a(i)} uniformly. ``punce_pnu`` with no
  labeled negative equals ``punce``; with every sample labeled it equals ``supcon``.

Shapes: ``z1, z2`` ``(b, d)``; returns the mean over the 2b anchors (eq. 9), or
per-anchor losses with ``reduction="none"``. Numerics: log_softmax (stable).
"""

from __future__ import annotations

import torch

from pubench.losses import LOSSES
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
from pubench.losses.supcon import partner_weights, pucl_weights, same_label_weights


def _soft_class_weights(members2: torch.Tensor, b: int, dtype) -> torch.Tensor:
    """Unlabeled-row weights uniform on ``members u {a(i)}`` (|members| + 1 entries)."""
    return row_normalize(members2.unsqueeze(0) | partner_mask(b, members2.device), dtype)


@LOSSES.register("punce")
def punce(z1, z2, labeled: torch.Tensor, prior: float, temperature: float, *, reduction: str = "mean"):
    """puNCE (001 eq. 7-9): unlabeled anchors are positive w.p. ``prior``."""
    b = check_views(z1, z2)
    check_reduction(reduction)
    prior = check_unit("prior", prior)
    lab2 = check_labeled(labeled, b, z1.device).repeat(2)
    sim = view_logits(z1, z2, check_temperature(temperature))
    w_unl = prior * _soft_class_weights(lab2, b, sim.dtype) + (1.0 - prior) * partner_weights(
        b, sim.dtype, sim.device
    )
    w = torch.where(lab2.unsqueeze(1), pucl_weights(lab2, sim.dtype), w_unl)
    return reduce(weighted_view_nll(sim, w), reduction)


@LOSSES.register("punce_pnu")
def punce_pnu(z1, z2, labels: torch.Tensor, prior: float, temperature: float, *, reduction: str = "mean"):
    """puNCE in the PNU setting (001 eq. 10, single negative term); labels 1 / 0 / -1."""
    b = check_views(z1, z2)
    check_reduction(reduction)
    prior = check_unit("prior", prior)
    labels = check_labels(labels, b, z1.device)
    if not bool(((labels == 1) | (labels == 0) | (labels == -1)).all()):
        raise ValueError("punce_pnu labels must be 1 (positive), 0 (negative) or -1 (unlabeled)")
    y2 = labels.repeat(2)
    sim = view_logits(z1, z2, check_temperature(temperature))
    # labeled rows: SupCon restricted to labeled views (give unlabeled views distinct labels)
    y_sup = torch.where(y2 >= 0, y2, -1 - torch.arange(2 * b, device=y2.device))
    w_lab = same_label_weights(y_sup, sim.dtype)
    w_unl = prior * _soft_class_weights(y2 == 1, b, sim.dtype) + (1.0 - prior) * _soft_class_weights(
        y2 == 0, b, sim.dtype
    )
    w = torch.where((y2 >= 0).unsqueeze(1), w_lab, w_unl)
    return reduce(weighted_view_nll(sim, w), reduction)
