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
