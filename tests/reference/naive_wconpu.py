"""Naive, loop-by-loop versions of WConPU's equations (paper 004), written from the paper's
formulas with plain Python floats, for tests/pu/test_wconpu.py."""

from __future__ import annotations

import math


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def norm(a):
    return math.sqrt(dot(a, a))


def sat(tau, p, probs, lam):
    """Eq. 9-11: returns (tau_t, p_t, [tau_t(0), tau_t(1)])."""
    b = len(probs)
    tau = lam * tau + (1 - lam) * sum(max(z) for z in probs) / b
    p = [lam * p[c] + (1 - lam) * sum(z[c] for z in probs) / b for c in (0, 1)]
    return tau, p, [p[c] / max(p) * tau for c in (0, 1)]


def peer_sets(labeled, pred, pool_pred, pool_conf, pool_labeled_query, thr):
    """Eq. 12 for each anchor i of the b = len(labeled) anchors, as sets of pool columns
    (own query excluded, own key included)."""
    b = len(labeled)
    out = []
    for i in range(b):
        peers = set()
        for j in range(len(pool_pred)):
            if j == i:
                continue
            conf_ok = pool_conf[j] >= thr[pool_pred[j]]
            if labeled[i] == 1:
                ok = (pool_pred[j] == 1 and conf_ok) or pool_labeled_query[j]
            else:
                ok = pool_pred[j] == pred[i] and conf_ok
            if ok or j == b + i:
                peers.add(j)
        out.append(peers)
    return out


def dissim(q, k):
    qn, kn = norm(q), norm(k)
    return sum((a / qn - c / kn) ** 2 for a, c in zip(q, k)) / 4


def nearest(e, protos):
    scores = [dot(e, mu) for mu in protos]
    return max(range(len(scores)), key=lambda c: (scores[c], -c))


def quantile(values, qq):
    """Linear interpolation between order statistics (numpy's / torch's default)."""
    v = sorted(values)
    pos = qq * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def hard_negatives(qs, keys, q_lab, k_lab, qq=0.25):
    """Eq. 14 for each query: the set of queue indices."""
    out = []
    for i, q in enumerate(qs):
        d = [dissim(q, k) for k in keys]
        cut = quantile(d, qq)
        out.append({j for j in range(len(keys)) if q_lab[i] != k_lab[j] and d[j] <= cut})
    return out


def weighted_con_loss(qs, pool, peers, hard, rho, floor=1e-6):
    """Eq. 15-18 averaged over the anchors; hard[i] = set of pool columns (weights 1/DisSim)."""
    total = 0.0
    for i, q in enumerate(qs):
        denom = 0.0
        for j, k in enumerate(pool):
            if j == i:
                continue
            w = 1.0 / max(dissim(q, k), floor) if j in hard[i] else 1.0
            denom += w * math.exp(dot(q, k) / rho)
        if peers[i]:
            total += -sum(math.log(math.exp(dot(q, pool[j]) / rho) / denom) for j in peers[i]) / len(peers[i])
    return total / len(qs)


def pseudo_update(s, near, observed, alpha):
    out = []
    for si, c, o in zip(s, near, observed):
        if o == 1:
            out.append(list(si))
        else:
            out.append([alpha * si[j] + (1 - alpha) * (1.0 if j == c else 0.0) for j in (0, 1)])
    return out


def proto_update(protos, qs, preds, lam):
    mu = [list(m) for m in protos]
    for q, c in zip(qs, preds):
        v = [lam * a + (1 - lam) * b for a, b in zip(mu[c], q)]
        n = norm(v)
        mu[c] = [x / n for x in v]
    return mu


def l_dis(p1, observed, prior):
    lab = [p for p, o in zip(p1, observed) if o == 1]
    unl = [p for p, o in zip(p1, observed) if o == 0]
    t_p = abs(sum(lab) / len(lab) - 1) if lab else 0.0
    t_u = abs(sum(unl) / len(unl) - prior) if unl else 0.0
    return 2 * prior * t_p + t_u


def soft_ce(logits, s):
    total = 0.0
    for row, si in zip(logits, s):
        m = max(row)
        lse = m + math.log(sum(math.exp(v - m) for v in row))
        total += -sum(sj * (v - lse) for sj, v in zip(si, row))
    return total / len(logits)
