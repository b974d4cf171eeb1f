"""Naive InfoGraph local-global objectives: one loop over nodes, one over graphs, floats.

For node ``i`` of graph ``b(i)`` and graph ``j`` of the batch the score is
``l_i . g_j`` (``"dot"``) or ``l_i . g_j / (|l_i| |g_j|)`` (``"cosine"``), the logit is
the score divided by the temperature ``t``; the positive of node ``i`` is ``b(i)``, its
candidates are the other graphs. The per-anchor estimators are the naive ones of
``naive_losses`` (DCL, HCL, Ring, PUCL with M^u = N = B - 1 and M^+ = 1 = the own graph),
and JSD is InfoGraph's ``local_global_loss_`` with ``measure='JSD'``. Also returns, per
anchor, whether the estimator's floor ``N e^{-1/t}`` binds (its corrected negative sum is
below the floor), from the same formulas.
"""

from __future__ import annotations

import math

import naive_losses as ref


def _rows(x):
    return [list(map(float, r)) for r in x.tolist()]


def scores(l_enc, g_enc, score):
    """``s[i][j]`` for every node ``i`` and graph ``j``."""
    L, G = _rows(l_enc), _rows(g_enc)
    out = []
    for li in L:
        row = []
        for gj in G:
            s = sum(a * b for a, b in zip(li, gj))
            if score == "cosine":
                s /= math.sqrt(sum(a * a for a in li)) * math.sqrt(sum(b * b for b in gj))
            row.append(s)
        out.append(row)
    return out


def _softplus(x):
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


def corrected_negative_sum(p, negs, name, hyper):
    """The estimator's corrected sum of the N candidates before its floor (DCL, HCL, PUCL)."""
    N = len(negs)
    x = [math.exp(s) for s in negs]
    if name == "debiased":
        tp = hyper["tau_plus"]
        return (sum(x) - tp * N * math.exp(p)) / (1 - tp)
    if name == "hard":
        tp, beta = hyper["tau_plus"], hyper["beta"]
        mean_xb = sum(v**beta for v in x) / N
        return (sum(v**beta / mean_xb * v for v in x) - tp * N * math.exp(p)) / (1 - tp)
    if name == "pu_corrected":
        a, c = hyper["alpha"], hyper["c"]
        return N * ((1 - a * c) / (1 - a) * sum(x) / N - a * (1 - c) / (1 - a) * math.exp(p))
    return None  # no floor


def anchor_loss(p, negs, name, hyper):
    t = hyper.get("temperature", 1.0)
    if name == "info_nce":
        return ref.infonce_anchor(p, negs)
    if name == "debiased":
        return ref.dcl_anchor(p, negs, hyper["tau_plus"], t)
    if name == "hard":
        return ref.hcl_anchor(p, negs, hyper["tau_plus"], hyper["beta"], t)
    if name == "pu_corrected":
        return ref.pucl_anchor(p, negs, [p], hyper["alpha"], hyper["c"], t)
    if name == "ring":
        return ref.ring_anchor(p, negs, hyper["lower"], hyper["upper"])
    raise KeyError(name)


def naive_local_global(l_enc, g_enc, batch, *, score, name, hyper):
    """``(mean loss over nodes, [floor binds? per node])`` for estimator ``name``
    (``"infograph_jsd"``: InfoGraph's JSD on the logits; its floor list is all False)."""
    t = hyper.get("temperature", 1.0)
    s = scores(l_enc, g_enc, score)
    own = [int(b) for b in batch.tolist()]
    n, B = len(s), len(s[0])
    if name == "infograph_jsd":
        e_pos = sum(math.log(2) - _softplus(-s[i][own[i]] / t) for i in range(n)) / n
        e_neg = sum(_softplus(s[i][j] / t) - math.log(2) for i in range(n) for j in range(B) if j != own[i])
        return e_neg / (n * (B - 1)) - e_pos, [False] * n
    losses, floor = [], []
    for i in range(n):
        p = s[i][own[i]] / t
        negs = [s[i][j] / t for j in range(B) if j != own[i]]
        losses.append(anchor_loss(p, negs, name, hyper))
        total = corrected_negative_sum(p, negs, name, hyper)
        floor.append(total is not None and total <= len(negs) * math.exp(-1 / t))
    return sum(losses) / n, floor
