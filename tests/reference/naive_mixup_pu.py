"""Naive loop versions of the mixup-based PU methods' objectives and selections, written
from their definitions (plain Python floats and lists).

P3Mix (Li et al. 2022), on a mixed batch with predictions p_i = clamp(sigmoid(z_i), 1e-4,
1 - 1e-4), mixed labels y_i, first-example kinds (labeled positive or unlabeled) and,
for P3Mix-E, mixed mean-teacher predictions t_i:
    CE(p, y) = -(y log p + (1 - y) log(1 - p)),  H(p) = CE(p, p)
    L = w_P mean_{i in P} CE(p_i, y_i) + w_U mean_{i in U} CE(p_i, y_i) + w_H mean_i H(p_i)
        [+ w_E mean_i log(1 - (t_i p_i + (1 - t_i)(1 - p_i)))]
    (a mean over no rows is 0)
Candidate pool: the k examples of largest H(sigmoid(z)), ties by index.
Marginal pseudo-negatives: unlabeled i with 1 - gamma < p_i < gamma.
P3Mix-C labels: 1 if labeled or p_i >= gamma, else 0.
MixPUL (Wei et al. 2020): see the section at the end.
"""

from __future__ import annotations

import math

CLAMP = 1e-4


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def _ce(p: float, y: float) -> float:
    return -(y * math.log(p) + (1.0 - y) * math.log(1.0 - p))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def p3mix_loss(logits, targets, labeled, w_p: float, w_u: float, w_h: float, teacher=None, w_e: float = 0.0
               ) -> float:
    probs = [min(max(_sigmoid(z), CLAMP), 1.0 - CLAMP) for z in logits]
    ce_p, ce_u, ent, elr = [], [], [], []
    for i, p in enumerate(probs):
        (ce_p if labeled[i] else ce_u).append(_ce(p, targets[i]))
        ent.append(_ce(p, p))
        if teacher is not None:
            t = teacher[i]
            elr.append(math.log(1.0 - (t * p + (1.0 - t) * (1.0 - p))))
    loss = w_p * _mean(ce_p) + w_u * _mean(ce_u) + w_h * _mean(ent)
    if teacher is not None:
        loss += w_e * _mean(elr)
    return loss


def boundary_pool(logits, k: int) -> list[int]:
    ent = []
    for i, z in enumerate(logits):
        p = _sigmoid(z)
        ent.append((-_ce(p, p), i))
    return [i for _, i in sorted(ent)[:k]]


def marginal(probs, labeled, gamma: float) -> list[bool]:
    return [(not labeled[i]) and 1.0 - gamma < p < gamma for i, p in enumerate(probs)]


def corrected(probs, labeled, gamma: float) -> list[float]:
    return [1.0 if labeled[i] or p >= gamma else 0.0 for i, p in enumerate(probs)]


# ------------------------------------------------------------------ MixPUL
# Supervised MixUp: lam mean_i BCE(z_i, a_i) + (1 - lam) mean_i BCE(z_i, b_i), BCE(z, y) =
#   -(y log sigmoid(z) + (1 - y) log(1 - sigmoid(z))).
# ICT target: sigmoid(lam t_i + (1 - lam) t_perm(i)) (mixed logits) or
#   lam sigmoid(t_i) + (1 - lam) sigmoid(t_perm(i)) (mixed probabilities).
# Consistency: mean_i (sigmoid(z_i) - m_i)^2.
def _bce(z: float, y: float) -> float:
    p = _sigmoid(z)
    return -(y * math.log(p) + (1.0 - y) * math.log(1.0 - p))


def mixup_cross_entropy(logits, y_a, y_b, lam: float) -> float:
    a = _mean([_bce(z, y) for z, y in zip(logits, y_a)])
    b = _mean([_bce(z, y) for z, y in zip(logits, y_b)])
    return lam * a + (1.0 - lam) * b


def ict_target(teacher_logits, perm, lam: float, mode: str) -> list[float]:
    out = []
    for i, j in enumerate(perm):
        if mode == "mixed_teacher_logits":
            out.append(_sigmoid(lam * teacher_logits[i] + (1.0 - lam) * teacher_logits[j]))
        else:
            out.append(lam * _sigmoid(teacher_logits[i]) + (1.0 - lam) * _sigmoid(teacher_logits[j]))
    return out


def interpolation_consistency(mixed_logits, target) -> float:
    return _mean([(_sigmoid(z) - m) ** 2 for z, m in zip(mixed_logits, target)])
