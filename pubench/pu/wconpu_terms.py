"""The equations of WConPU (paper 004, Yuan et al., "Weighted Contrastive Learning with Hard
Negative Mining for Positive and Unlabeled Learning"), one small function each; the
training procedure that combines them is :mod:`pubench.pu.wconpu`. Naive loop versions
are in ``tests/reference/naive_wconpu.py``.

Conventions: class 1 is positive; embeddings are rows; ``probs`` are the classifier's
softmax outputs ``z`` (n, 2). The contrastive pool of a batch of ``b`` anchors is
``A = B_q ∪ B_k ∪ Q`` laid out as columns ``[q_1..q_b, k_1..k_b, queue_1..queue_m]``
(Eq. 7).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

#: smallest DisSim used in the hard-negative weight 1/DisSim (Eq. 17): a key equal to the
#: query would otherwise get an infinite weight
DISSIM_FLOOR = 1e-6


def sat_update(tau: torch.Tensor, p_tilde: torch.Tensor, probs: torch.Tensor, lam: float
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 9-10 (self-adaptive threshold, FreeMatch): the global threshold
    ``tau_t = lam tau_{t-1} + (1 - lam) mean_i max(z_i)`` and the local class estimate
    ``p_t(c) = lam p_{t-1}(c) + (1 - lam) mean_i z_i(c)``. Returns ``(tau_t, p_t)``."""
    probs = probs.detach()
    return (lam * tau + (1.0 - lam) * probs.max(1).values.mean(),
            lam * p_tilde + (1.0 - lam) * probs.mean(0))


def sat_thresholds(tau: torch.Tensor, p_tilde: torch.Tensor) -> torch.Tensor:
    """Eq. 11: the per-class threshold ``tau_t(c) = p_t(c) / max_c p_t(c) * tau_t``, shape (2,)."""
    return p_tilde / p_tilde.max() * tau


def positive_peer_mask(labeled: torch.Tensor, pred: torch.Tensor, pool_pred: torch.Tensor,
                       pool_conf: torch.Tensor, pool_labeled_query: torch.Tensor,
                       thresholds: torch.Tensor) -> torch.Tensor:
    """Eq. 12: the positive peer sets of the ``b`` anchors over the pool (columns as in the
    module docstring), a bool (b, 2b + m) mask.

    ``labeled`` (b,): o_i; ``pred`` (b,): the anchors' predicted labels; ``pool_pred`` /
    ``pool_conf`` (2b + m,): each pool entry's predicted label y' and confidence max(z');
    ``pool_labeled_query`` (2b + m,): the entries of X'_L (query embeddings of labeled
    positives); ``thresholds`` (2,): tau_t(c) of Eq. 11.

    * labeled anchor: ``{k' : y' = 1, max z' >= tau_t(1)} ∪ X'_L``;
    * unlabeled anchor: ``{k' : y' = y_i, max z' >= tau_t(y')}``;
    * plus the anchor's own key view k_i (pool column b + i): the same example (our
      reading, see docs/tasks.md), so no peer set is empty;
    * never the anchor's own query q_i (A(x_i) = A \\ {q_i}).
    """
    b = labeled.shape[0]
    confident = pool_conf >= thresholds[pool_pred]                              # (2b+m,)
    pos_for_labeled = ((pool_pred == 1) & confident) | pool_labeled_query       # (2b+m,)
    pos_for_unlabeled = (pool_pred.unsqueeze(0) == pred.unsqueeze(1)) & confident.unsqueeze(0)
    mask = torch.where(labeled.bool().unsqueeze(1), pos_for_labeled.unsqueeze(0), pos_for_unlabeled)
    rows = torch.arange(b, device=mask.device)
    mask[rows, b + rows] = True
    mask[rows, rows] = False
    return mask


def dissim(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Eq. 13: ``DisSim(q_i, k_j) = 1/4 || q_i/||q_i|| - k_j/||k_j|| ||^2`` in [0, 1], (n, m)."""
    qn, kn = F.normalize(q, dim=1), F.normalize(k, dim=1)
    return ((2.0 - 2.0 * qn @ kn.T) / 4.0).clamp(0.0, 1.0)


def nearest_prototype(emb: torch.Tensor, prototypes: torch.Tensor) -> torch.Tensor:
    """``argmax_c emb^T mu_c`` (Eq. 14, 22); ties go to class 0 (zero prototypes)."""
    return (emb @ prototypes.T).argmax(1)


def hard_negative_mask(dis: torch.Tensor, query_label: torch.Tensor, key_label: torch.Tensor,
                       quantile: float) -> torch.Tensor:
    """Eq. 14: ``B_i^neg = {k_j in Q : y~_i != y~_j, DisSim(q_i, k_j) <= Q_1/4(x_i)}``.

    ``dis`` (b, m): DisSim of each query to each queue key; ``query_label`` (b,) /
    ``key_label`` (m,): their labels (WConPU: nearest prototype; Table IV's variant: the
    classifier's prediction); the quartile is taken per query over its m values
    (``torch.quantile``, linear interpolation). An empty queue gives an empty set."""
    if dis.shape[1] == 0:
        return torch.zeros_like(dis, dtype=torch.bool)
    cut = torch.quantile(dis, quantile, dim=1, keepdim=True)
    return (query_label.unsqueeze(1) != key_label.unsqueeze(0)) & (dis <= cut)


def weighted_contrastive_loss(q: torch.Tensor, pool: torch.Tensor, positives: torch.Tensor,
                              hard: torch.Tensor, hard_weight: torch.Tensor, temperature: float) -> torch.Tensor:
    """Eq. 15-18 over a batch: for anchor i,
    ``-1/|P_i| sum_{k+ in P_i} log( exp(q_i k+/rho) / (sum_{k' in A(x_i) \\ B_i^neg} exp(q_i k'/rho)
    + sum_{k_j in B_i^neg} w_ij exp(q_i k_j/rho)) )``, averaged over the b anchors (Eq. 18's
    1/n over the batch; an anchor with no positive peer contributes 0).

    ``q`` (b, d); ``pool`` (N, d) with ``pool[:b]`` = the queries themselves (column i is
    excluded from anchor i's denominator); ``positives`` / ``hard`` bool (b, N);
    ``hard_weight`` (b, N): w_ij = 1 / DisSim where ``hard`` (ignored elsewhere). With
    ``hard`` all false this is SupCon's loss with the given positive sets (Table III IV)."""
    b = q.shape[0]
    logits = q @ pool.T / temperature
    log_w = torch.where(hard, hard_weight.clamp_min(1e-30).log(), torch.zeros_like(logits))
    self_col = torch.zeros_like(positives)
    self_col[torch.arange(b), torch.arange(b)] = True
    denom = torch.logsumexp((logits + log_w).masked_fill(self_col, float("-inf")), dim=1, keepdim=True)
    log_prob = logits - denom
    n_pos = positives.sum(1)
    per_anchor = -(log_prob * positives).sum(1) / n_pos.clamp_min(1)
    return per_anchor.mean()


def hard_negative_weight(dis: torch.Tensor) -> torch.Tensor:
    """Eq. 17's ``w_j = 1 / DisSim(q_i, k_j)``, with DisSim floored at :data:`DISSIM_FLOOR`."""
    return 1.0 / dis.clamp_min(DISSIM_FLOOR)


def init_pseudo_labels(observed: torch.Tensor, prior: float) -> torch.Tensor:
    """Eq. 20: ``s_i = [0, 1]`` for labeled positives, ``[pi_N, pi_P]`` for unlabeled, (n, 2)."""
    s = torch.tensor([1.0 - prior, prior]).repeat(observed.shape[0], 1)
    s[observed == 1] = torch.tensor([0.0, 1.0])
    return s


def update_pseudo_labels(s: torch.Tensor, nearest: torch.Tensor, observed: torch.Tensor, alpha: float) -> torch.Tensor:
    """Eq. 21-22: ``s_i := alpha s_i + (1 - alpha) h_i`` with h_i the one-hot nearest
    prototype; labeled positives keep ``[0, 1]`` (Sec. 4.2: they 'will not update')."""
    h = F.one_hot(nearest, 2).to(s.dtype)
    return torch.where((observed == 1).unsqueeze(1), s, alpha * s + (1.0 - alpha) * h)


@torch.no_grad()
def update_prototypes(prototypes: torch.Tensor, q: torch.Tensor, pred: torch.Tensor, lam: float) -> torch.Tensor:
    """Eq. 23, example by example in batch order (Algorithm 1, line 9):
    ``mu_c := Normalize(lam mu_c + (1 - lam) q_i)`` with c the classifier's prediction for
    x_i. The update is sequential (each step renormalizes), hence the loop."""
    mu = prototypes.clone()
    for qi, c in zip(q.detach(), pred.tolist()):
        mu[c] = F.normalize(lam * mu[c] + (1.0 - lam) * qi, dim=0)
    return mu


def soft_cross_entropy(logits: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Eq. 19: ``L_class = 1/n sum_i sum_j -s_ij log z_ij`` with z = softmax(logits)."""
    return -(s * F.log_softmax(logits, dim=1)).sum(1).mean()


def label_distribution_loss(p1: torch.Tensor, observed: torch.Tensor, prior: float) -> torch.Tensor:
    """Eq. 27 (Dist-PU's L_dis) on a batch: ``2 pi_P |mean_{X_L} z_1 - 1| + |mean_{X_U} z_1 - pi_P|``
    with ``p1`` (n,) = z_{i,1}; a term whose set is absent from the batch is 0."""
    lab, unl = observed == 1, observed == 0
    zero = p1.sum() * 0.0
    t_p = (p1[lab].mean() - 1.0).abs() if bool(lab.any()) else zero
    t_u = (p1[unl].mean() - prior).abs() if bool(unl.any()) else zero
    return 2.0 * prior * t_p + t_u


def unlabeled_negative_ce(logits: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
    """Table III variant III's replacement of L_dis: cross-entropy with every unlabeled
    example taken as negative and every labeled one as positive (Sec. 6.3)."""
    return F.cross_entropy(logits, (observed == 1).long())


def wconpu_objective(l_class: torch.Tensor, l_con: torch.Tensor, l_dis: torch.Tensor,
                     gamma0: float, gamma1: float) -> torch.Tensor:
    """Eq. 28: ``L = L_class + gamma0 L_con + gamma1 L_dis``."""
    return l_class + gamma0 * l_con + gamma1 * l_dis
