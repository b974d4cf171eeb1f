"""Naive reference implementations of the contrastive losses, straight from the papers.

Plain Python floats (double precision), one loop over anchors and one over candidates,
with the papers' symbols. No vectorization, no log-sum-exp tricks: these exist to be
obviously equal to the printed equations, and are only used on small inputs (tests)
or on a few anchors (benchmarks/losses.py). See pubench/losses/*.py for the decisions
(which terms include the positive, M^u, the Ring band, eq. 10's repeated term). The
``*_official`` references follow the authors' released code where it differs from the paper.

Two-view functions take ``z1, z2`` (anything ``.tolist()``-able, shape (b, d)) and
return the mean loss over ``anchors`` (default: all 2b views). View i of the stacked
batch is row i of z1 for i < b and row i - b of z2 otherwise; a(i) = (i + b) mod 2b.
"""

from __future__ import annotations

import math


# ------------------------------------------------------------------ geometry
def views(z1, z2):
    """The 2b L2-normalized views as lists of floats."""
    rows = [list(map(float, r)) for r in z1.tolist()] + [list(map(float, r)) for r in z2.tolist()]
    out = []
    for r in rows:
        norm = math.sqrt(sum(v * v for v in r))
        out.append([v / max(norm, 1e-12) for v in r])
    return out


def dot(u, v):
    return sum(a * b for a, b in zip(u, v))


def a(i, b):
    return (i + b) % (2 * b)


def anchor_row(z, i, temperature):
    """s_ik = z_i . z_k / t for every k (k = i included; callers skip it)."""
    return [dot(z[i], z[k]) / temperature for k in range(len(z))]


def pos_and_negs(z, i, b, temperature):
    s = anchor_row(z, i, temperature)
    return s[a(i, b)], [s[k] for k in range(2 * b) if k != i and k != a(i, b)]


def _aslist(x):
    return x.tolist() if hasattr(x, "tolist") else list(x)


def _mean(values):
    return sum(values) / len(values)


# ------------------------------------------------------------------ per-anchor estimators
def infonce_anchor(p, negs):
    """-log e^p / (e^p + sum_j e^{s_j})   (001 eq. 4)."""
    num = math.exp(p)
    den = num
    for s in negs:
        den += math.exp(s)
    return -math.log(num / den)


def dcl_anchor(p, negs, tau_plus, temperature):
    """Chuang et al. 2020: Ng = max((sum e^s - tau+ N e^p)/(1 - tau+), N e^{-1/t})."""
    N = len(negs)
    total = 0.0
    for s in negs:
        total += math.exp(s)
    Ng = max((total - tau_plus * N * math.exp(p)) / (1 - tau_plus), N * math.exp(-1 / temperature))
    return -math.log(math.exp(p) / (math.exp(p) + Ng))


def hcl_anchor(p, negs, tau_plus, beta, temperature):
    """Robinson et al. 2021 / 002 eq. 31: w_j = x_j^beta / mean_k x_k^beta."""
    N = len(negs)
    x = [math.exp(s) for s in negs]
    mean_xb = 0.0
    for xk in x:
        mean_xb += xk**beta / N
    reweighted = 0.0
    for xj in x:
        w_j = xj**beta / mean_xb
        reweighted += w_j * xj
    x_pos = math.exp(p)
    Ng = max((reweighted - tau_plus * N * x_pos) / (1 - tau_plus), N * math.exp(-1 / temperature))
    return -math.log(x_pos / (x_pos + Ng))


def pucl_anchor(p, unlabeled, positives, alpha, c, temperature):
    """000 eq. 7-8 with h = e^{s}, M^u = len(unlabeled), M^+ = len(positives), N = M^u."""
    Mu, Mp = len(unlabeled), len(positives)
    mean_u = sum(math.exp(s) for s in unlabeled) / Mu
    mean_p = sum(math.exp(s) for s in positives) / Mp
    mu_hat = max(
        (1 - alpha * c) / (1 - alpha) * mean_u - alpha * (1 - c) / (1 - alpha) * mean_p,
        math.exp(-1 / temperature),
    )
    N = Mu
    h_pos = math.exp(p)
    return -math.log(h_pos / (h_pos + N * mu_hat))


def bcl_anchor(p, negs, tau_plus, alpha, beta):
    """002 eq. 1-3 and L_BCL, x_hat = e^{s}; Phi_N inclusive over the anchor's N negatives."""
    N = len(negs)
    x = [math.exp(s) for s in negs]
    tau_minus = 1 - tau_plus
    p_tn = []
    for i in range(N):
        Phi = 0.0
        for j in range(N):
            Phi += (1.0 if x[j] <= x[i] else 0.0) / N  # eq. 1
        num = alpha * tau_minus + (1 - 2 * alpha) * Phi * tau_minus  # eq. 2
        den = alpha * tau_minus + (1 - alpha) * tau_plus + (1 - 2 * alpha) * Phi * (tau_minus - tau_plus)
        p_tn.append(1.0 if tau_plus == 0 else num / den)
    Z = 0.0
    for i in range(N):
        Z += p_tn[i] * x[i] ** beta / N  # eq. 3 denominator
    weighted = 0.0
    if Z > 0:
        for i in range(N):
            omega = p_tn[i] * x[i] ** beta / Z  # eq. 3
            weighted += omega * x[i]
    x_pos = math.exp(p)
    return -math.log(x_pos / (x_pos + weighted))


def ring_anchor(p, negs, lower, upper):
    """InfoNCE over negatives whose inclusive percentile (1/N) #{k: s_k <= s_j} is in [lower, upper]."""
    N = len(negs)
    ring = []
    for j in range(N):
        count = 0
        for k in range(N):
            if negs[k] <= negs[j]:
                count += 1
        q = count / N
        if lower <= q <= upper:
            ring.append(negs[j])
    return infonce_anchor(p, ring)


def ring_official_anchor(p, candidates, lower, upper):
    """Ring of the released code (mhw32/contrastive-ring-public, SimCLRRing / MoCoRing): sort the
    anchor's M candidates by similarity, most similar first; the ring is the ranks
    [floor((1 - upper) M), floor((1 - lower) M)); the positive is added to it."""
    M = len(candidates)
    ranked = sorted(candidates, reverse=True)
    first = math.floor((1 - upper) * M + 1e-9)
    stop = math.floor((1 - lower) * M + 1e-9)
    return infonce_anchor(p, ranked[first:stop])


def bcl_official_anchor(p, negs, tau_plus, alpha, beta):
    """BCL of the released code (liubin06/BCL image/main.py, criterion and cdf_trans)."""
    N = len(negs)
    x = [math.exp(s) for s in negs]
    tau_minus = 1 - tau_plus
    a = (1 - 2 * alpha) * (tau_minus - tau_plus) + 1e-3
    b = 2 * (alpha * tau_minus + (1 - alpha) * tau_plus)
    weighted = 0.0
    for i in range(N):
        Phi = 0.0
        for j in range(N):
            Phi += (1.0 if x[j] <= x[i] else 0.0) / N
        u = (-b + math.sqrt(b * b + 4 * a * Phi)) / (2 * a)  # cdf_trans: a u^2 + b u = Phi
        phi1, phi2 = 2 * (1 - u), 2 * u
        x_tn = alpha * phi1 + (1 - alpha) * phi2
        x_fn = (1 - alpha) * phi1 + alpha * phi2
        x_htn = (alpha * (1 - beta) * phi1 + (1 - alpha) * beta * phi2) / (
            alpha * (1 - beta) + (1 - alpha) * beta + 1e-3
        )
        omega = x_htn / (x_tn * tau_minus + x_fn * tau_plus)
        weighted += omega * x[i]
    x_pos = math.exp(p)
    return -math.log(x_pos / (x_pos + weighted))


# ------------------------------------------------------------------ two-view losses
def _two_view(z1, z2, temperature, anchors, per_anchor):
    z = views(z1, z2)
    b = len(z) // 2
    anchors = range(2 * b) if anchors is None else anchors
    losses = []
    for i in anchors:
        p, negs = pos_and_negs(z, i, b, temperature)
        losses.append(per_anchor(p, negs))
    return _mean(losses)


def naive_info_nce(z1, z2, temperature, anchors=None):
    return _two_view(z1, z2, temperature, anchors, infonce_anchor)


def naive_debiased(z1, z2, temperature, tau_plus, anchors=None):
    return _two_view(z1, z2, temperature, anchors, lambda p, n: dcl_anchor(p, n, tau_plus, temperature))


def naive_hard(z1, z2, temperature, tau_plus, beta, anchors=None):
    f = lambda p, n: hcl_anchor(p, n, tau_plus, beta, temperature)  # noqa: E731
    return _two_view(z1, z2, temperature, anchors, f)


def naive_pu_corrected(z1, z2, temperature, alpha, c, anchors=None):
    f = lambda p, n: pucl_anchor(p, n, [p], alpha, c, temperature)  # noqa: E731
    return _two_view(z1, z2, temperature, anchors, f)


def naive_bayesian(z1, z2, temperature, tau_plus, alpha, beta, anchors=None):
    return _two_view(z1, z2, temperature, anchors, lambda p, n: bcl_anchor(p, n, tau_plus, alpha, beta))


def naive_ring(z1, z2, temperature, lower, upper, anchors=None):
    return _two_view(z1, z2, temperature, anchors, lambda p, n: ring_anchor(p, n, lower, upper))


def naive_ring_official(z1, z2, temperature, lower, upper, anchors=None):
    """b anchors (the views of z1), each ranking all 2b views: itself and its positive included."""
    z = views(z1, z2)
    b = len(z) // 2
    anchors = range(b) if anchors is None else anchors
    losses = []
    for i in anchors:
        s = anchor_row(z, i, temperature)
        losses.append(ring_official_anchor(s[a(i, b)], s, lower, upper))
    return _mean(losses)


def naive_bayesian_official(z1, z2, temperature, tau_plus, alpha, beta, anchors=None):
    f = lambda p, n: bcl_official_anchor(p, n, tau_plus, alpha, beta)  # noqa: E731
    return _two_view(z1, z2, temperature, anchors, f)


# ------------------------------------------------------------------ supervised family
def _log_q(s, i, j):
    """log( exp(s_ij) / sum_{k != i} exp(s_ik) )."""
    den = 0.0
    for k in range(len(s)):
        if k != i:
            den += math.exp(s[k])
    return math.log(math.exp(s[j]) / den)


def _supervised(z1, z2, temperature, anchors, weights_of):
    """Mean over anchors of -sum_j W_ij log q_ij; ``weights_of(i, b)`` -> {j: W_ij}."""
    z = views(z1, z2)
    b = len(z) // 2
    anchors = range(2 * b) if anchors is None else anchors
    losses = []
    for i in anchors:
        s = anchor_row(z, i, temperature)
        loss = 0.0
        for j, w in weights_of(i, b).items():
            loss -= w * _log_q(s, i, j)
        losses.append(loss)
    return _mean(losses)


def naive_supcon(z1, z2, labels, temperature, anchors=None):
    """001 eq. 5: Q(i) = {t != i : y_t = y_i}."""
    y = [int(v) for v in _aslist(labels)]

    def weights(i, b):
        Q = [t for t in range(2 * b) if t != i and y[t % b] == y[i % b]]
        return {j: 1 / len(Q) for j in Q}

    return _supervised(z1, z2, temperature, anchors, weights)


def naive_supcon_pu(z1, z2, labeled, temperature, anchors=None):
    """001 eq. 11: labeled anchors over P \\ {i}; unlabeled anchors InfoNCE."""
    s_lab = [bool(v) for v in _aslist(labeled)]

    def weights(i, b):
        P = [k for k in range(2 * b) if s_lab[k % b]]
        if s_lab[i % b]:
            return {j: 1 / (len(P) - 1) for j in P if j != i}
        return {a(i, b): 1.0}

    return _supervised(z1, z2, temperature, anchors, weights)


def naive_supcon_pnu(z1, z2, labels, temperature, anchors=None):
    """Semi-supervised SCL (001 Table 4; Assran et al. 2020): labeled anchors (y in {0, 1})
    over the other labeled views of their class; unlabeled anchors (y = -1) InfoNCE."""
    y = [int(v) for v in _aslist(labels)]

    def weights(i, b):
        if y[i % b] < 0:
            return {a(i, b): 1.0}
        Q = [t for t in range(2 * b) if t != i and y[t % b] == y[i % b]]
        return {j: 1 / len(Q) for j in Q}

    return _supervised(z1, z2, temperature, anchors, weights)


def naive_mixed(z1, z2, labeled, temperature, lam, anchors=None):
    """003 mCL: lam * sCL-PU + (1 - lam) * ssCL."""
    labels = [int(bool(v)) for v in _aslist(labeled)]
    return lam * naive_supcon(z1, z2, labels, temperature, anchors) + (1 - lam) * naive_info_nce(
        z1, z2, temperature, anchors
    )


def naive_punce(z1, z2, labeled, prior, temperature, anchors=None):
    """001 eq. 7 (labeled anchors) and eq. 8 (unlabeled anchors), mean = eq. 9."""
    s_lab = [bool(v) for v in _aslist(labeled)]
    pi = prior

    def weights(i, b):
        P = [k for k in range(2 * b) if s_lab[k % b]]
        if s_lab[i % b]:
            return {j: 1 / (len(P) - 1) for j in P if j != i}
        W = {}
        for j in P + [a(i, b)]:
            W[j] = W.get(j, 0.0) + pi / (len(P) + 1)
        W[a(i, b)] = W.get(a(i, b), 0.0) + (1 - pi)
        return W

    return _supervised(z1, z2, temperature, anchors, weights)


def naive_punce_official(z1, z2, labeled, prior, temperature, anchors=None):
    """The authors' PUinfoNCELoss: eq. 7 for labeled anchors; an unlabeled anchor puts
    1/(1 + pi) on a(i) and pi/((1 + pi)|P|) on each labeled view (InfoNCE when P is empty)."""
    s_lab = [bool(v) for v in _aslist(labeled)]
    pi = prior

    def weights(i, b):
        P = [k for k in range(2 * b) if s_lab[k % b]]
        if s_lab[i % b]:
            return {j: 1 / (len(P) - 1) for j in P if j != i}
        if not P:
            return {a(i, b): 1.0}
        W = {a(i, b): 1 / (1 + pi)}
        for j in P:
            W[j] = pi / ((1 + pi) * len(P))
        return W

    return _supervised(z1, z2, temperature, anchors, weights)


def naive_punce_pnu(z1, z2, labels, prior, temperature, anchors=None, negative_terms=1):
    """001 eq. 10 with its negative term once; labels 1 / 0 / -1 (unlabeled).
    ``negative_terms = 2``: the equation exactly as printed (naive_punce_pnu_literal)."""
    y = [int(v) for v in _aslist(labels)]
    pi = prior

    def weights(i, b):
        yi = y[i % b]
        if yi >= 0:
            Q = [t for t in range(2 * b) if t != i and y[t % b] == yi]
            return {j: 1 / len(Q) for j in Q}
        P_i = [k for k in range(2 * b) if y[k % b] == 1] + [a(i, b)]
        N_i = [k for k in range(2 * b) if y[k % b] == 0] + [a(i, b)]
        W = {}
        for j in P_i:
            W[j] = W.get(j, 0.0) + pi / len(P_i)
        for _ in range(negative_terms):
            for j in N_i:
                W[j] = W.get(j, 0.0) + (1 - pi) / len(N_i)
        return W

    return _supervised(z1, z2, temperature, anchors, weights)


def naive_punce_pnu_literal(z1, z2, labels, prior, temperature, anchors=None):
    """001 eq. 10 exactly as printed: an unlabeled anchor has the (1 - pi)/|N(i)| term twice,
    so its weights sum to pi + 2 (1 - pi). Not a loss pubench uses: it shows why the spec reads
    the repeated term once (tests/losses/test_losses_relations.py)."""
    return naive_punce_pnu(z1, z2, labels, prior, temperature, anchors, negative_terms=2)


# ------------------------------------------------------------------ text track objective
def naive_cross_entropy(logits, targets):
    """-(1/n) sum_i log( e^{l_i,y_i} / sum_c e^{l_i,c} )   (Gunel et al. eq. 1)."""
    rows, ys = [list(map(float, r)) for r in logits.tolist()], [int(v) for v in _aslist(targets)]
    return _mean([-math.log(math.exp(r[y]) / sum(math.exp(v) for v in r)) for r, y in zip(rows, ys)])


def naive_ce_plus_contrastive(logits, targets, contrastive, lam):
    """lam * L_CE + (1 - lam) * L_CL   (001 Sec. 5.3; Gunel et al. eq. 3); ``contrastive`` a float."""
    return lam * naive_cross_entropy(logits, targets) + (1 - lam) * contrastive
