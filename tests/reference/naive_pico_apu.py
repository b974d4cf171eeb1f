"""Naive loop versions of PiCO's terms (Wang et al. 2022, as paper 004 adapts it to PU data)
and of aPU's PURR risk (Hammoudeh & Lowd 2020), written from the equations (plain floats).

PiCO, PU data as partial labels (labeled positive: candidates {1}; unlabeled: {0, 1}):
    pseudo label       y'_i = argmax_{j in Y_i} z_ij
    prototype label    argmax_{j in Y_i} q_i . mu_j   (ties to class 0)
    phi in epoch e     start + (end - start) e / E
    positives of i     {c in pool, c != i : label(c) = y'_i}   (pool = [q, k, queue])
    MoCo warm-up       -1/b sum_i log(exp(q_i.k_i/T) / (exp(q_i.k_i/T) + sum_j exp(q_i.queue_j/T)))
    objective          L_cls + w_cont L_cont + w_dis L_dis
PURR, with R_S^{+/-} the mean of l(g, +/-1) over the set S (0 when empty):
    R_n^{+/-}  = (1 - pi_te) / (1 - pi_tr) (R_Utr^{+/-} - pi_tr R_P^{+/-})
    R_te-p^+   = R_Ute^+ - max(0, R_n^+)
    PURR       = max(0, R_te-p^+) + max(0, R_n^-)
"""

from __future__ import annotations

import math

from tests.reference.naive_risks import LOSSES


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def pseudo_labels(probs, observed):
    out = []
    for p, o in zip(probs, observed):
        out.append(1 if o == 1 else (1 if p[1] > p[0] else 0))
    return out


def prototype_labels(qs, protos, observed):
    out = []
    for q, o in zip(qs, observed):
        if o == 1:
            out.append(1)
        else:
            out.append(1 if dot(q, protos[1]) > dot(q, protos[0]) else 0)
    return out


def phi(epoch, epochs, start, end):
    return start + (end - start) * epoch / epochs


def positive_sets(labels, pool_labels):
    out = []
    for i, y in enumerate(labels):
        out.append({c for c, yc in enumerate(pool_labels) if c != i and yc == y})
    return out


def moco(qs, ks, queue, t):
    total = 0.0
    for q, k in zip(qs, ks):
        pos = math.exp(dot(q, k) / t)
        neg = sum(math.exp(dot(q, m) / t) for m in queue)
        total += -math.log(pos / (pos + neg))
    return total / len(qs)


def _mean(values):
    return sum(values) / len(values) if values else 0.0


def purr(scores, labeled, u_train, u_test, pi_tr, pi_te, loss="sigmoid"):
    """(risk, R_n^+, R_n^-, R_te-p^+)."""
    ell = LOSSES[loss]
    ratio = (1 - pi_te) / (1 - pi_tr)
    terms = {}
    for y in (+1, -1):
        r_u = _mean([ell(s, y) for s, m in zip(scores, u_train) if m])
        r_p = _mean([ell(s, y) for s, m in zip(scores, labeled) if m])
        terms[y] = ratio * (r_u - pi_tr * r_p)
    r_te_u = _mean([ell(s, +1) for s, m in zip(scores, u_test) if m])
    te_p = r_te_u - max(0.0, terms[+1])
    return max(0.0, te_p) + max(0.0, terms[-1]), terms[+1], terms[-1], te_p
