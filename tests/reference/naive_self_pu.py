"""Naive loop versions of Self-PU's terms (Chen et al. 2020; released code VITA-Group/Self-PU),
plain Python floats, written from the formulas:

weighted nnPU terms, weights w_i on both losses of an example:
    positive = pi / n_P sum_P w_i l(g_i, +1)
    negative = 1 / n_U sum_U w_i l(g_i, -1) - pi / n_P sum_P w_i l(g_i, -1)
entropy: H(z) = -(s log s + (1 - s) log(1 - s)), s = sigmoid(z)
confident selection: the count lowest / highest scored unlabeled rows (stable order)
calibration weights, row by row (the released code's loop for its second network):
    w = max(-grad, 0); w_0 += 1e-10; labeled: (1, 0); unlabeled: (1, 0) when the entropy
    weights of the rows before sum to >= budget, else the row normalised to sum 1
look-ahead on a linear model g(x) = a.x + b with the sigmoid loss:
    L_f(theta, eps) = sum_i eps_i0 c_i(theta) - (1/n) sum_i eps_i1 H(g_i)
    c_i = pi / n_P (l(g_i, +1) - l(g_i, -1)) for a labeled i, l(g_i, -1) / n_U otherwise
    theta' = theta - lr grad_theta L_f;  L_meta = (1/m) sum_j H(g'(x_meta_j))
"""

from __future__ import annotations

import math


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def sigmoid_loss(z: float, y: int) -> float:
    return sigmoid(-y * z)


def sigmoid_loss_grad(z: float, y: int) -> float:
    """d/dz sigmoid(-y z)."""
    s = sigmoid(-y * z)
    return -y * s * (1.0 - s)


def entropy(z: float) -> float:
    s = sigmoid(z)
    return -(s * math.log(s) + (1.0 - s) * math.log(1.0 - s))


def entropy_grad(z: float) -> float:
    """dH/dz = -z s (1 - s)."""
    s = sigmoid(z)
    return -z * s * (1.0 - s)


def weighted_pu_terms(scores, labeled, weights, prior: float) -> tuple[float, float]:
    n_p = max(1, sum(1 for lab in labeled if lab))
    n_u = max(1, sum(1 for lab in labeled if not lab))
    positive, negative = 0.0, 0.0
    for z, lab, w in zip(scores, labeled, weights):
        if lab:
            positive += prior * w * sigmoid_loss(z, +1) / n_p
            negative -= prior * w * sigmoid_loss(z, -1) / n_p
        else:
            negative += w * sigmoid_loss(z, -1) / n_u
    return positive, negative


def select_confident(prob, labeled, count: int) -> tuple[list[int], list[int]]:
    unlabeled = [i for i in range(len(prob)) if not labeled[i]]
    ranked = sorted(unlabeled, key=lambda i: prob[i])     # Python's sort is stable
    if count == 0:
        return [], []
    return ranked[len(ranked) - count:], ranked[:count]


def calibration_weights(grad, labeled, budget: float) -> list[list[float]]:
    w = [[max(-g0, 0.0) + 1e-10, max(-g1, 0.0)] for g0, g1 in grad]
    for j in range(len(w)):
        if labeled[j]:
            w[j] = [1.0, 0.0]
            continue
        spent = 0.0
        for k in range(j):
            spent += w[k][1]
        if spent >= budget:
            w[j] = [1.0, 0.0]
        else:
            total = w[j][0] + w[j][1]
            w[j] = [w[j][0] / total, w[j][1] / total]
    return w


def _example_coefficient_grad(z: float, lab: bool, prior: float, n_p: int, n_u: int) -> float:
    """d c_i / d z for the weighted nnPU part."""
    if lab:
        return prior / n_p * (sigmoid_loss_grad(z, +1) - sigmoid_loss_grad(z, -1))
    return sigmoid_loss_grad(z, -1) / n_u


def linear_look_ahead_meta_loss(eps, x, labeled, x_meta, a, b, prior: float, lr: float) -> float:
    """L_meta(theta') after the explicit SGD step on L_f(theta, eps) (gradients by hand)."""
    n, d = len(x), len(a)
    n_p = max(1, sum(1 for lab in labeled if lab))
    n_u = max(1, n - sum(1 for lab in labeled if lab))
    grad_a, grad_b = [0.0] * d, 0.0
    for i in range(n):
        z = sum(a[k] * x[i][k] for k in range(d)) + b
        dz = eps[i][0] * _example_coefficient_grad(z, labeled[i], prior, n_p, n_u) - eps[i][1] * entropy_grad(z) / n
        for k in range(d):
            grad_a[k] += dz * x[i][k]
        grad_b += dz
    a2 = [a[k] - lr * grad_a[k] for k in range(d)]
    b2 = b - lr * grad_b
    total = 0.0
    for xm in x_meta:
        total += entropy(sum(a2[k] * xm[k] for k in range(d)) + b2)
    return total / len(x_meta)


def linear_look_ahead_gradient(x, labeled, x_meta, a, b, prior: float, lr: float) -> list[list[float]]:
    """d L_meta / d eps at eps = 0, in closed form: theta' = theta there, so
    dL_meta/deps_ik = -lr grad_theta L_meta(theta) . grad_theta c_ik(theta)."""
    n, d = len(x), len(a)
    n_p = max(1, sum(1 for lab in labeled if lab))
    n_u = max(1, n - sum(1 for lab in labeled if lab))
    meta_a, meta_b = [0.0] * d, 0.0
    for xm in x_meta:
        dz = entropy_grad(sum(a[k] * xm[k] for k in range(d)) + b) / len(x_meta)
        for k in range(d):
            meta_a[k] += dz * xm[k]
        meta_b += dz
    out = []
    for i in range(n):
        z = sum(a[k] * x[i][k] for k in range(d)) + b
        dot = sum(meta_a[k] * x[i][k] for k in range(d)) + meta_b
        out.append([-lr * dot * _example_coefficient_grad(z, labeled[i], prior, n_p, n_u),
                    -lr * dot * (-entropy_grad(z) / n)])
    return out
