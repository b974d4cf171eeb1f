"""Naive loop versions of the PU risks, written from the equations (plain Python floats).

du Plessis et al. (2014, 2015), unbiased PU risk:
    R_uPU(g) = pi E_P[l(g(x), +1)] + E_U[l(g(x), -1)] - pi E_P[l(g(x), -1)]
Kiryo et al. (2017), non-negative PU risk:
    R_nnPU(g) = pi E_P[l(g(x), +1)] + max(0, E_U[l(g(x), -1)] - pi E_P[l(g(x), -1)])
PN risk: (1/n) sum_i l(g(x_i), y_i).
Cost-sensitive P-vs-U risk (du Plessis et al. 2014; 001's PvU):
    R_PvU(g) = 2 pi E_P[l(g(x), +1)] + E_U[l(g(x), -1)]
vPU (Chen et al. 2020a), with log Phi given per example:
    L_var = log((1/n_x) sum_x Phi(x)) - (1/n_P) sum_P log Phi(x)
    L_reg = (1/n) sum_i (log(mu Phi(x_u,i) + 1 - mu) - log Phi(x~_i))^2

ImbalancednnPU (Su et al. 2021), re-balanced to the prior pi':
    pi' E_P[l(g, +1)] + max(0, (1 - pi') / (1 - pi) (E_U[l(g, -1)] - pi E_P[l(g, -1)]))
PUbN without biased negatives (Hsieh et al. 2019), sigma_i = p(y = +1 | x_i) fixed:
    pi E_P[l(g, +1) + 1(sigma > eta) l(g, -1) (1 - sigma) / sigma] + E_U[1(sigma <= eta) l(g, -1) (1 - sigma)]
    eta = the (1 - pi) tau quantile of sigma over U (linear interpolation)
PUSB (Kato et al. 2019): theta_pi = the value at 0-based position floor(n (1 - pi)) of the
sorted scores (the last one when that is n).
Rank Pruning (Northcutt et al. 2017), PU form, from g_i = P(s=1|x_i) and s_i:
    LB = mean of g over s = 1; rho_1 = #{s=0, g >= LB} / #{g >= LB}
    P(y=1) = P(s=1) / (1 - rho_1); pi_0 = rho_1 P(y=1) / P(s=0)
    prune the floor(pi_0 |U|) unlabeled examples of largest g; weighted BCE
    (1/n) sum_i w_i BCE(sigmoid(g_i), s_i)
Dist-PU (Zhao et al. 2022; 004 eq. 27), from probabilities s:
    L_dis = 2 pi |(1/n_P) sum_P s - 1| + |(1/n_U) sum_U s - pi|
and its released code's form: a one-bin histogram (bin centres 0 and 1, triangular
weights) of P and of U compared by a mean L1 distance with the targets (0, 1) and
(1 - pi, pi), the U part weighted 1 / (2 pi).
Binary entropy: (1/n) sum_i -(s_i log s_i + (1 - s_i) log(1 - s_i)).
MixUp BCE: lam (1/n) sum_i BCE(s_i, a_i) + (1 - lam) (1/n) sum_i BCE(s_i, b_i).

``scores`` and ``labeled`` are sequences; the expectations are sample means over the
labeled (P) and unlabeled (U) samples, 0 for an empty set.
"""

from __future__ import annotations

import math


def sigmoid_loss(z: float, y: int) -> float:
    return 1.0 / (1.0 + math.exp(y * z))


def logistic_loss(z: float, y: int) -> float:
    return math.log(1.0 + math.exp(-y * z))


LOSSES = {"sigmoid": sigmoid_loss, "logistic": logistic_loss}


def _expect(values: list[float]) -> float:
    total = 0.0
    for v in values:
        total += v
    return total / len(values) if values else 0.0


def _parts(scores, labeled):
    s = [float(v) for v in scores]
    lab = [bool(v) for v in labeled]
    p = [s[i] for i in range(len(s)) if lab[i]]
    u = [s[i] for i in range(len(s)) if not lab[i]]
    return p, u


def upu(scores, labeled, prior: float, loss: str = "sigmoid") -> float:
    ell = LOSSES[loss]
    p, u = _parts(scores, labeled)
    r_p_plus = _expect([ell(z, +1) for z in p])
    r_u_minus = _expect([ell(z, -1) for z in u])
    r_p_minus = _expect([ell(z, -1) for z in p])
    return prior * r_p_plus + r_u_minus - prior * r_p_minus


def nnpu(scores, labeled, prior: float, loss: str = "sigmoid") -> float:
    ell = LOSSES[loss]
    p, u = _parts(scores, labeled)
    r_p_plus = _expect([ell(z, +1) for z in p])
    r_u_minus = _expect([ell(z, -1) for z in u])
    r_p_minus = _expect([ell(z, -1) for z in p])
    return prior * r_p_plus + max(0.0, r_u_minus - prior * r_p_minus)


def negative_part(scores, labeled, prior: float, loss: str = "sigmoid") -> float:
    """E_U[l(g, -1)] - pi E_P[l(g, -1)]."""
    ell = LOSSES[loss]
    p, u = _parts(scores, labeled)
    return _expect([ell(z, -1) for z in u]) - prior * _expect([ell(z, -1) for z in p])


def pvu(scores, labeled, prior: float, loss: str = "logistic") -> float:
    ell = LOSSES[loss]
    p, u = _parts(scores, labeled)
    return 2.0 * prior * _expect([ell(z, +1) for z in p]) + _expect([ell(z, -1) for z in u])


def vpu_variational(log_phi_x, log_phi_p) -> float:
    phi_sum = 0.0
    for v in log_phi_x:
        phi_sum += math.exp(float(v))
    log_p_sum = 0.0
    for v in log_phi_p:
        log_p_sum += float(v)
    return math.log(phi_sum / len(log_phi_x)) - log_p_sum / len(log_phi_p)


def vpu_mixup_reg(log_phi_mixed, phi_u, mu: float) -> float:
    total = 0.0
    for lm, pu in zip(log_phi_mixed, phi_u):
        target = mu * float(pu) + (1.0 - mu) * 1.0
        total += (math.log(target) - float(lm)) ** 2
    return total / len(log_phi_mixed)


def pn(scores, targets, loss: str = "logistic") -> float:
    ell = LOSSES[loss]
    terms = [ell(float(z), +1 if int(t) == 1 else -1) for z, t in zip(scores, targets)]
    return _expect(terms)


def label_distribution(probs, labeled, prior: float) -> float:
    p, u = _parts(probs, labeled)
    term_p = abs(_expect(p) - 1.0) if p else 0.0
    term_u = abs(_expect(u) - prior) if u else 0.0
    return 2.0 * prior * term_p + term_u


def _one_bin_histogram(values) -> list[float]:
    """Mass of each value spread over the bin centres 0 and 1 by triangular weights
    ``max(0, 1 - |v - t|)``, averaged over the values."""
    hist = [0.0, 0.0]
    for v in values:
        for k, t in enumerate((0.0, 1.0)):
            hist[k] += max(0.0, 1.0 - abs(v - t))
    return [h / len(values) for h in hist]


def label_distribution_released(probs, labeled, prior: float) -> float:
    p, u = _parts(probs, labeled)
    loss = 0.0
    if p:
        hp = _one_bin_histogram(p)
        loss += (abs(hp[0] - 0.0) + abs(hp[1] - 1.0)) / 2
    if u:
        hu = _one_bin_histogram(u)
        loss += (abs(hu[0] - (1.0 - prior)) + abs(hu[1] - prior)) / 2 / (2.0 * prior)
    return loss


def binary_entropy(probs) -> float:
    total = 0.0
    for s in probs:
        total += -(s * math.log(s) + (1.0 - s) * math.log(1.0 - s))
    return total / len(probs) if len(probs) else 0.0


def bce(s: float, t: float) -> float:
    return -(t * math.log(s) + (1.0 - t) * math.log(1.0 - s))


def mixup_bce(probs, target_a, target_b, lam: float) -> float:
    a = _expect([bce(s, t) for s, t in zip(probs, target_a)])
    b = _expect([bce(s, t) for s, t in zip(probs, target_b)])
    return lam * a + (1.0 - lam) * b


def imbalanced_nnpu(scores, labeled, prior: float, target_prior: float, loss: str = "sigmoid") -> float:
    ell = LOSSES[loss]
    p, u = _parts(scores, labeled)
    positive = target_prior * _expect([ell(z, +1) for z in p])
    negative = _expect([ell(z, -1) for z in u]) - prior * _expect([ell(z, -1) for z in p])
    return positive + max(0.0, (1.0 - target_prior) / (1.0 - prior) * negative)


def pubn(scores, labeled, sigma, prior: float, eta: float, loss: str = "logistic") -> float:
    ell = LOSSES[loss]
    pos, unl = [], []
    for z, lab, sg in zip(scores, labeled, sigma):
        if lab:
            term = ell(z, +1)
            if sg > eta:
                term += ell(z, -1) * (1.0 - sg) / sg
            pos.append(term)
        else:
            unl.append(ell(z, -1) * (1.0 - sg) if sg <= eta else 0.0)
    return prior * _expect(pos) + _expect(unl)


def quantile(values, q: float) -> float:
    """Linear interpolation between the order statistics at position q (n - 1)."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def rank_pruning_rho1(prob, observed) -> float:
    lab = [g for g, o in zip(prob, observed) if o]
    lb = sum(lab) / len(lab)
    unl_conf = sum(1 for g, o in zip(prob, observed) if not o and g >= lb)
    lab_conf = sum(1 for g, o in zip(prob, observed) if o and g >= lb)
    return unl_conf / (unl_conf + lab_conf)


def rank_pruning_pi0(observed, rho1: float) -> float:
    ps1 = sum(1 for o in observed if o) / len(observed)
    py1 = ps1 / (1 - rho1)
    return rho1 * py1 / (1 - ps1)


def rank_pruning_keep(prob, observed, pi0: float, min_kept: int = 10) -> list[bool]:
    unl = sorted(((g, i) for i, (g, o) in enumerate(zip(prob, observed)) if not o), reverse=True)
    k0 = max(min(int(math.floor(len(unl) * pi0)), len(unl) - min_kept), 0)
    pruned = {i for _, i in unl[:k0]}
    return [i not in pruned for i in range(len(prob))]


def weighted_bce(scores, targets, weights) -> float:
    total = 0.0
    for z, t, w in zip(scores, targets, weights):
        s = 1.0 / (1.0 + math.exp(-z))
        total += w * bce(s, t)
    return total / len(scores)


def pusb_threshold(scores, prior: float) -> float:
    ordered = sorted(scores)
    k = int(math.floor(len(ordered) * (1 - prior)))
    return ordered[min(k, len(ordered) - 1)]
