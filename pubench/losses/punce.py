"""puNCE: prior-weighted positive-unlabeled contrastive loss, its PNU extension, and the
weighting of the authors' code.

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
* Eq. 10 gives an unlabeled anchor's own view a(i) only pi/|P(i)| + (1 - pi)/|N(i)|,
  which shrinks as labels grow (eq. 8 keeps at least 1 - pi on it): with a batch of 256
  and labeled fractions 1% / 5% / 10% (pi = 0.4) about 0.28 / 0.07 / 0.04, at 001's batch
  of 2048 and 10% about 0.005. The rest of the weight attracts the unlabeled anchor to
  every labeled view of both classes (pi to P, 1 - pi to N), so the more labels, the less
  instance discrimination and the stronger the pull of U towards both classes at once:
  the reduced table4-punce accuracy falling with the labeled fraction is what the printed
  equation does, not a defect of this implementation (tested against a naive loop).
* 001 calls pi both the class prior p(y = +1) (Assumption 1) and p(y = 1 | s = 0)
  (Sec. 3); the loss only uses the number, as the weight of an unlabeled anchor's
  "positive" copy. The spec decides which estimate to pass.
* Reductions (derived from the equations, tested): no labeled sample -> InfoNCE (any
  prior); every sample labeled -> SupCon with one class; prior = 0 -> puCL
  (``supcon_pu``, 001 eq. 11: eq. 7 is shared and eq. 8 with pi = 0 is InfoNCE);
  prior = 1 -> unlabeled anchors attract P u {a(i)} uniformly. ``punce_pnu`` with no
  labeled negative equals ``punce``; with every sample labeled it equals ``supcon``.

Authors' code (``punce_official``): ``PUinfoNCELoss`` in losses.py of
anishacharya/Contrastive-Positive-Unlabled-PU-Learning (``loss: puNCE`` in ``get_loss``;
pi is the config key ``prior``, annotated "puNCE uses \\pi = p(y=1)" in
config_pretrain.yaml) keeps eq. 7 for labeled anchors but weights an unlabeled anchor's
terms differently from eq. 8:

    i in U:  l_i = -[ log q_i,a(i) + pi/|P| sum_{j in P} log q_ij ] / (1 + pi)        (code)

i.e. 1/(1 + pi) on a(i) and pi/((1 + pi)|P|) on each labeled view, where eq. 8 puts
1 - pi + pi/(|P| + 1) on a(i) and pi/(|P| + 1) on each labeled view. Both rows sum to 1,
so the code is eq. 8 with the batch-dependent prior pi' = pi (|P| + 1) / ((1 + pi)|P|),
about pi / (1 + pi): pi = 0.5 acts as pi' = 1/3, and pi' <= (1 + 1/|P|)/2 for any pi. In
001 Sec. 3's reading of eq. 8 (an unlabeled sample duplicated into a positive copy of
weight pi and a negative copy of weight 1 - pi), the code weighs the copies pi and 1
(normalized by 1 + pi), and its positive copy attracts P without a(i).
Earlier revisions of the file call this weighting "puNCE-I" next to two commented-out
others ("puNCE-II": ((2 pi - 1) P-term + a(i)-term) / (2 pi); "puNCE-III": pi^2 in place
of pi); the latest adds "puNCE_soft" and "puNCE_PP" and comments on this one "does not
work really well ~ works well treating pi as hyper-param". With no labeled view in the
batch the code returns InfoNCE (``SelfSupConLoss``; in the latest revision that branch
calls ``self.sscl``, which ``__init__`` no longer sets, so it would raise), as
``punce_official`` does. Not reproduced: the code exponentiates cos/t without a max shift
and scores a pair whose softmax probability underflows to 0 as loss 0 (its
``similarity_mtx != 0`` mask); here log_softmax is exact. The code has no PNU loss, so
``punce_pnu`` has no official variant.

Special cases of ``punce_official`` (tested): no labeled sample -> InfoNCE; every sample
labeled -> SupCon with one class; prior = 0 -> ``supcon_pu``; any prior = ``punce`` with
pi' above. Unlike eq. 8 it is not linear in the prior.

Shapes: ``z1, z2`` ``(b, d)``; returns the mean over the 2b anchors (eq. 9), or
per-anchor losses with ``reduction="none"``. Numerics: log_softmax (stable).
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
from pubench.losses.supcon import partner_weights, pucl_weights, same_label_weights


def _soft_class_weights(members2: torch.Tensor, b: int, dtype) -> torch.Tensor:
    """Unlabeled-row weights uniform on ``members u {a(i)}`` (|members| + 1 entries)."""
    return row_normalize(members2.unsqueeze(0) | partner_mask(b, members2.device), dtype)


@LOSSES.register("punce", test_config={"prior": 0.4, "temperature": 0.5})
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


@LOSSES.register("punce_official", test_config={"prior": 0.4, "temperature": 0.5})
def punce_official(z1, z2, labeled: torch.Tensor, prior: float, temperature: float, *, reduction: str = "mean"):
    """puNCE as the authors' ``PUinfoNCELoss`` computes it: eq. 7 for labeled anchors; an
    unlabeled anchor weights a(i) by 1/(1 + pi) and each labeled view by pi/((1 + pi)|P|)."""
    b = check_views(z1, z2)
    check_reduction(reduction)
    prior = check_unit("prior", prior)
    lab2 = check_labeled(labeled, b, z1.device).repeat(2)
    sim = view_logits(z1, z2, check_temperature(temperature))
    # the labeled term exists only when the batch has a labeled view (else InfoNCE)
    p_weight = prior * lab2.any().to(sim.dtype)
    towards_labeled = row_normalize(lab2.unsqueeze(0).expand(2 * b, -1), sim.dtype)
    w_unl = (partner_weights(b, sim.dtype, sim.device) + p_weight * towards_labeled) / (1.0 + p_weight)
    w = torch.where(lab2.unsqueeze(1), pucl_weights(lab2, sim.dtype), w_unl)
    return reduce(weighted_view_nll(sim, w), reduction)


@LOSSES.register("punce_pnu", test_config={"prior": 0.4, "temperature": 0.5})
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
