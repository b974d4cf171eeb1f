"""Student's t distribution: its upper tail and quantile, in pure Python.

Reports run thousands of t-tests; scipy gives the same numbers but importing ``scipy.special``
costs about as much as the rest of ``pubench report`` (issue 54: every table in 2 s). The tail
is the regularized incomplete beta function, ``P(T > t) = I_x(df/2, 1/2) / 2`` with
``x = df / (df + t^2)`` for t > 0, evaluated by its continued fraction (modified Lentz, as
Numerical Recipes' ``betacf``) to double precision; the quantile inverts it by Newton's method
on the density, kept inside a bracket. tests/report/test_student_t.py holds both to scipy's
``stdtr`` / ``stdtrit`` at 1e-12 relative over the range reports use.
"""

from __future__ import annotations

import functools
import math
import statistics

_EPS = 1e-16
_TINY = 1e-300


def _betacf(a: float, b: float, x: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` (> 0, not necessarily whole) degrees of freedom."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * betainc(0.5 * df, 0.5, df / (df + t * t))  # P(T > |t|)
    return tail if t > 0 else 1.0 - tail


def _pdf(t: float, df: float) -> float:
    return math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
                    - (df + 1) / 2 * math.log1p(t * t / df))


@functools.lru_cache(maxsize=4096)
def t_ppf(q: float, df: float) -> float:
    """The quantile: the t with P(T <= t) = q, for 0 < q < 1 (remembered: reports ask for the same
    few quantiles thousands of times)."""
    if q == 0.5:
        return 0.0
    if q < 0.5:
        return -t_ppf(1.0 - q, df)
    target = 1.0 - q  # solve t_sf(t) = target, t > 0
    z = statistics.NormalDist().inv_cdf(q)
    # Cornish-Fisher expansion of t in z: within a few percent from df = 2 on, so Newton needs few steps
    t = z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
    lo, hi = 0.0, math.inf
    for _ in range(200):
        f = t_sf(t, df) - target
        if f > 0:
            lo = t
        else:
            hi = t
        nxt = t + f / _pdf(t, df)  # sf decreases: t + f / pdf moves toward the root
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi) if math.isfinite(hi) else 2.0 * max(t, 1.0)
        if abs(nxt - t) <= 1e-15 * max(1.0, abs(t)):
            return nxt
        t = nxt
    return t
