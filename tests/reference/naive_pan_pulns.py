"""Naive loop versions of PAN's value (Hu et al. 2021) and PULNS's selector objective
(Luo et al. 2021), written from the formulas with plain Python floats.

PAN, with d = sigmoid(D(x)), c = sigmoid(C(x)) and Bernoulli divergences
KL(a || b) = a log(a / b) + (1 - a) log((1 - a) / (1 - b)):
    V(D, C) = (1/|P|) sum_P log d + (1/|U|) sum_U log(1 - d)
              + lam (1/|U|) sum_U [KL(d || c) - KL(d || 1 - c)]
(an empty P or U part contributes 0).
"""

from __future__ import annotations

import math


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def bernoulli_kl(a: float, b: float) -> float:
    total = 0.0
    if a > 0:
        total += a * math.log(a / b)
    if a < 1:
        total += (1 - a) * math.log((1 - a) / (1 - b))
    return total


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def pan_kl_term(d_logit: float, c_logit: float) -> float:
    d, c = sigmoid(d_logit), sigmoid(c_logit)
    return bernoulli_kl(d, c) - bernoulli_kl(d, 1 - c)


def pan_value(d_logits, c_logits, labeled, lam: float) -> float:
    log_d_pos, log_not_d_unl, kl_unl = [], [], []
    for d_logit, c_logit, lab in zip(d_logits, c_logits, labeled):
        d = sigmoid(d_logit)
        if lab:
            log_d_pos.append(math.log(d))
        else:
            log_not_d_unl.append(math.log(1 - d))
            kl_unl.append(pan_kl_term(d_logit, c_logit))
    return _mean(log_d_pos) + _mean(log_not_d_unl) + lam * _mean(kl_unl)
