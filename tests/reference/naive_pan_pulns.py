"""Naive loop versions of PAN's value (Hu et al. 2021) and PULNS's selector objective
(Luo et al. 2021), written from the formulas with plain Python floats.

PAN, with d = sigmoid(D(x)), c = sigmoid(C(x)) and Bernoulli divergences
KL(a || b) = a log(a / b) + (1 - a) log((1 - a) / (1 - b)):
    V(D, C) = (1/|P|) sum_P log d + (1/|U|) sum_U log(1 - d)
              + lam (1/|U|) sum_U [KL(d || c) - KL(d || 1 - c)]
(an empty P or U part contributes 0). With classifier_eps > 0 the KL term is the released
code's loss2 per example (morning-dews/PAN, main.py, --model pan):
    (log(1 - c + eps) - log(c + eps)) (2 d - 1).
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


def pan_kl_term(d_logit: float, c_logit: float, classifier_eps: float = 0.0) -> float:
    d, c = sigmoid(d_logit), sigmoid(c_logit)
    if classifier_eps == 0:
        return bernoulli_kl(d, c) - bernoulli_kl(d, 1 - c)
    return (math.log(1 - c + classifier_eps) - math.log(c + classifier_eps)) * (2 * d - 1)


def pan_value(d_logits, c_logits, labeled, lam: float, classifier_eps: float = 0.0) -> float:
    log_d_pos, log_not_d_unl, kl_unl = [], [], []
    for d_logit, c_logit, lab in zip(d_logits, c_logits, labeled):
        d = sigmoid(d_logit)
        if lab:
            log_d_pos.append(math.log(d))
        else:
            log_not_d_unl.append(math.log(1 - d))
            kl_unl.append(pan_kl_term(d_logit, c_logit, classifier_eps))
    return _mean(log_d_pos) + _mean(log_not_d_unl) + lam * _mean(kl_unl)


def pan_released_discriminator_term(d_logits, labeled, eps: float) -> float:
    """The released code's loss1 (morning-dews/PAN, main.py, --model pan), as means:
    (1/|P|) sum_P log(d + eps) + (1/|H|) sum_H max(log(1 - d + eps) - log(1 - m), 0),
    H = the first min(|P|, |U|) unlabeled examples in batch order, m = their mean d."""
    pos = [sigmoid(z) for z, lab in zip(d_logits, labeled) if lab]
    head = [sigmoid(z) for z, lab in zip(d_logits, labeled) if not lab][: len(pos)]
    m = _mean(head)
    hinge = [max(math.log(1 - d + eps) - math.log(1 - m), 0.0) for d in head]
    return _mean([math.log(d + eps) for d in pos]) + _mean(hinge)


def pan_value_released(d_logits, c_logits, labeled, lam: float, eps: float, classifier_eps: float = 0.0) -> float:
    kl_unl = [pan_kl_term(dz, cz, classifier_eps) for dz, cz, lab in zip(d_logits, c_logits, labeled) if not lab]
    return pan_released_discriminator_term(d_logits, labeled, eps) + lam * _mean(kl_unl)


# PULNS (Luo et al. 2021): r_i = clip((1 - 2 a_i) g_i, -clip, clip) (g_i the classifier's logit:
# log((1 - p) / p) when selected, log(p / (1 - p)) when rejected), returns
# v_i = sum_{t >= i} beta^(t - i) r_t + alpha (z - b), REINFORCE loss
# -(1/n) sum_i v_i log pi(a_i | s_i), pi(1 | s) = sigmoid(selector logit).
def pulns_intermediate_reward(logit: float, action: int, clip: float) -> float:
    p = sigmoid(logit)
    raw = math.log((1 - p) / p) if action else math.log(p / (1 - p))
    return min(clip, max(-clip, raw))


def pulns_returns(rewards, terminal: float, discount: float, terminal_weight: float) -> list[float]:
    out = []
    for i in range(len(rewards)):
        total = sum(discount ** (t - i) * rewards[t] for t in range(i, len(rewards)))
        out.append(total + terminal_weight * terminal)
    return out


def pulns_policy_loss(selector_logits, actions, returns) -> float:
    total = 0.0
    for z, a, v in zip(selector_logits, actions, returns):
        p = sigmoid(z)
        total += v * math.log(p if a else 1 - p)
    return -total / len(selector_logits)


def balanced_bce(logits, positive, negative) -> float:
    """mean over positives of -log sigmoid(g) + mean over negatives of -log(1 - sigmoid(g))."""
    pos = [-math.log(sigmoid(g)) for g, p in zip(logits, positive) if p]
    neg = [-math.log(1 - sigmoid(g)) for g, n in zip(logits, negative) if n]
    return _mean(pos) + _mean(neg)


def pu_f1_criterion(positive_scores, unlabeled_scores) -> float:
    """Lee & Liu (2003): recall^2 / Pr(f(x) = 1)."""
    recall = sum(1 for s in positive_scores if s > 0) / len(positive_scores)
    rate = sum(1 for s in unlabeled_scores if s > 0) / len(unlabeled_scores)
    return recall * recall / rate if rate > 0 else 0.0
