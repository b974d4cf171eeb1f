"""Loop-by-loop versions of the MoCo / CMC updates and logits (pubench.frameworks.moco, .cmc)."""

from __future__ import annotations

import math


def enqueue(queue: list[list[float]], ptr: int, keys: list[list[float]]) -> tuple[list[list[float]], int]:
    """Ring buffer: key t goes to slot (ptr + t) mod N."""
    out = [list(row) for row in queue]
    for t, k in enumerate(keys):
        out[(ptr + t) % len(queue)] = list(k)
    return out, (ptr + len(keys)) % len(queue)


def momentum(key: list[float], query: list[float], m: float) -> list[float]:
    return [m * k + (1.0 - m) * q for k, q in zip(key, query)]


def normalize(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def dot(a, b) -> float:
    return sum(x * y for x, y in zip(a, b))


def bank_update(bank: list[list[float]], idx: list[int], z: list[list[float]], m: float) -> list[list[float]]:
    out = [list(row) for row in bank]
    for i, zi in zip(idx, z):
        out[i] = normalize([m * b + (1.0 - m) * x for b, x in zip(bank[i], zi)])
    return out


def moco_logits(q, k, queue, t):
    """Unit-norm queries ``q`` and keys ``k``: pos_i = q_i.k_i / t, neg_ij = q_i.queue_j / t."""
    q = [normalize(r) for r in q]
    pos = [dot(qi, ki) / t for qi, ki in zip(q, k)]
    neg = [[dot(qi, kj) / t for kj in queue] for qi in q]
    return pos, neg


def cmc_logits(z_l, z_ab, bank_l, bank_ab, drawn, idx, t):
    """L anchors then ab anchors; a drawn index equal to the anchor's image is masked."""
    z_l = [normalize(r) for r in z_l]
    z_ab = [normalize(r) for r in z_ab]
    pos, neg, mask = [], [], []
    for anchors, other_bank in ((z_l, bank_ab), (z_ab, bank_l)):
        for i, a in enumerate(anchors):
            pos.append(dot(z_l[i], z_ab[i]) / t)
            neg.append([dot(a, other_bank[j]) / t for j in drawn])
            mask.append([j != idx[i] for j in drawn])
    return pos, neg, mask


def rgb_to_lab(r: float, g: float, b: float) -> tuple[float, float, float]:
    """One sRGB pixel in [0, 1] to CIE Lab (D65), the textbook formulas."""
    def linear(c):
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    rl, gl, bl = linear(r), linear(g), linear(b)
    x = (0.412453 * rl + 0.357580 * gl + 0.180423 * bl) / 0.95047
    y = (0.212671 * rl + 0.715160 * gl + 0.072169 * bl) / 1.0
    z = (0.019334 * rl + 0.119193 * gl + 0.950227 * bl) / 1.08883

    def f(v):
        d = 6.0 / 29.0
        return v ** (1.0 / 3.0) if v > d ** 3 else v / (3 * d * d) + 4.0 / 29.0

    return 116.0 * f(y) - 16.0, 500.0 * (f(x) - f(y)), 200.0 * (f(y) - f(z))
