"""Every loss against its naive loop-by-loop reference (tests/reference/naive_losses.py).

Double precision, tolerance 1e-6, random inputs plus awkward batches (label extremes,
duplicate embeddings with exact similarity ties, b = 2).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))

import pytest  # noqa: E402
import torch  # noqa: E402

import naive_losses as ref  # noqa: E402
from loss_cases import CASES, ONE_PER_LOSS, L, call, call_naive, make_labels, make_views  # noqa: E402

TOL = 1e-6


def assert_close(actual: torch.Tensor, expected: float):
    assert actual.dim() == 0 and actual.dtype == torch.float64
    assert math.isfinite(expected)
    assert abs(actual.item() - expected) <= TOL * max(1.0, abs(expected)), (actual.item(), expected)


# ------------------------------------------------------------------ the naive references themselves
def test_naive_infonce_hand_computed():
    # b = 2, d = 2: views e1, e2 | e1, -e2  (sims: i=0 -> a=2: 1, negs: 0 and 0)
    z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    z2 = torch.tensor([[1.0, 0.0], [0.0, -1.0]])
    t = 1.0
    # anchor 0: pos e1.e1 = 1; negs e2 (0), -e2 (0)
    l0 = -math.log(math.e / (math.e + 2))
    # anchor 1 (e2): pos -e2 -> -1; negs e1 (0), e1 (0)
    l1 = -math.log(math.exp(-1) / (math.exp(-1) + 2))
    assert ref.naive_info_nce(z1, z2, t) == pytest.approx((2 * l0 + 2 * l1) / 4, abs=1e-12)


def test_naive_bcl_ecdf_is_inclusive():
    # negatives with a tie: Phi = [2/3, 2/3, 1]; alpha = 1, tau+ = 0.5 -> p(TN) = 1 - Phi
    negs = [0.0, 0.0, 1.0]
    tau_plus, alpha = 0.5, 1.0
    phi = [2 / 3, 2 / 3, 1.0]
    p_tn = [(alpha * 0.5 + (1 - 2 * alpha) * f * 0.5) / (alpha * 0.5 + (1 - 2 * alpha) * f * 0.0) for f in phi]
    x = [math.exp(s) for s in negs]
    Z = sum(p * xi for p, xi in zip(p_tn, x)) / 3
    weighted = sum(p * xi / Z * xi for p, xi in zip(p_tn, x))
    expected = -math.log(math.exp(0.5) / (math.exp(0.5) + weighted))
    assert ref.bcl_anchor(0.5, negs, tau_plus, alpha, 0.0) == pytest.approx(expected, abs=1e-12)


def test_naive_ring_band():
    negs = [0.1, 0.4, 0.2, 0.3]  # percentiles 1/4, 1, 1/2, 3/4
    assert ref.ring_anchor(0.0, negs, 0.5, 0.75) == pytest.approx(ref.infonce_anchor(0.0, [0.2, 0.3]))


def released_ring_anchor(p, candidates, thres_outer, thres_inner):
    """The released code's ring arithmetic (dynamic_inner, self_negative): top int(w_o M) of the
    sorted list, minus its top int(w_i int(w_o M)); LSE(p, ring) - p."""
    ranked = sorted(candidates, reverse=True)
    outer = ranked[: int(thres_outer * len(candidates))]
    ring = outer[int(thres_inner * len(outer)):]
    return ref.infonce_anchor(p, ring)


@pytest.mark.parametrize("thres, band", [
    ((0.1, 0.1), (0.9, 0.99)),   # thres_outer = thres_inner = 0.1: the released MoCo and IR configs
    ((0.5, 0.1), (0.5, 0.95)),   # config/pretrain/simclr/simclr_ring.json (table1-pucl's SimCLR+Ring, issue 36)
])
@pytest.mark.parametrize("b", [2, 5, 10, 15, 16, 25, 50, 64, 128])
def test_ring_official_reproduces_released_simclr_ring(b, thres, band):
    # (thres_outer w_o, thres_inner w_i) <-> lower = 1 - w_o, upper = 1 - w_i w_o, for every 2b
    z1, z2 = make_views(b, 4, b)
    z = ref.views(z1, z2)
    expected = 0.0
    for i in range(b):
        s = ref.anchor_row(z, i, 0.5)
        expected += released_ring_anchor(s[ref.a(i, b)], s, *thres) / b
    assert_close(L.ring_official(z1, z2, temperature=0.5, lower=band[0], upper=band[1]), expected)


@pytest.mark.parametrize("queue", [10, 30, 100, 101, 999, 4096])
def test_ring_official_reproduces_released_moco_ring(queue):
    g = torch.Generator().manual_seed(queue)
    neg = torch.randn(3, queue, generator=g, dtype=torch.float64) * 3
    pos = torch.randn(3, generator=g, dtype=torch.float64) * 3
    expected = sum(released_ring_anchor(pos[i].item(), neg[i].tolist(), 0.1, 0.1) for i in range(3)) / 3
    assert_close(L.ring_official_from_logits(pos, neg, lower=0.9, upper=0.99), expected)


def test_naive_ring_official_hand_computed():
    # M = 10 candidates, band [0.5, 0.8]: ranks [floor(0.2 M), floor(0.5 M)) = [2, 5) of the sorted list
    cands = [0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.6, 0.4, 0.5, 0.0]
    kept = [0.7, 0.6, 0.5]
    assert ref.ring_official_anchor(0.3, cands, 0.5, 0.8) == pytest.approx(ref.infonce_anchor(0.3, kept), abs=1e-12)


def test_naive_bcl_official_root_is_on_the_mixture_cdf():
    # cdf_trans's u solves tau- F_TN(u) + tau+ F_FN(u) = Phi (with its 1e-3 in the u^2 term)
    tau_plus, alpha, phi = 0.2, 0.8, 0.6
    tau_minus = 1 - tau_plus
    a = (1 - 2 * alpha) * (tau_minus - tau_plus) + 1e-3
    b = 2 * (alpha * tau_minus + (1 - alpha) * tau_plus)
    u = (-b + math.sqrt(b * b + 4 * a * phi)) / (2 * a)
    f_tn = 2 * alpha * u + (1 - 2 * alpha) * u * u  # integral of alpha 2(1 - v) + (1 - alpha) 2 v
    f_fn = 2 * (1 - alpha) * u - (1 - 2 * alpha) * u * u
    assert 0 <= u <= 1
    assert tau_minus * f_tn + tau_plus * f_fn + 1e-3 * u * u == pytest.approx(phi, abs=1e-12)


# ------------------------------------------------------------------ vectorized vs naive
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("b,d,temperature,seed", [(2, 3, 0.5, 0), (5, 4, 0.5, 1), (8, 6, 0.2, 2)])
def test_matches_naive_random(case, b, d, temperature, seed):
    z1, z2 = make_views(b, d, seed)
    labels = make_labels(case.label_kind, b, seed)
    assert_close(call(case, z1, z2, temperature, labels), call_naive(case, z1, z2, temperature, labels))


@pytest.mark.parametrize("case", [c for c in CASES if c.label_kind in ("labeled", "pnu")], ids=lambda c: c.id)
@pytest.mark.parametrize("n_labeled", [0, 1, 2, 6], ids=lambda k: f"labeled{k}")
def test_matches_naive_label_extremes(case, n_labeled):
    b = 6  # 0 labeled, a single labeled sample, two, everything labeled
    z1, z2 = make_views(b, 5, 7)
    labels = make_labels(case.label_kind, b, 7, n_labeled=n_labeled)
    assert_close(call(case, z1, z2, 0.3, labels), call_naive(case, z1, z2, 0.3, labels))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_matches_naive_duplicate_embeddings(case):
    # rows drawn from 3 scaled basis vectors: every similarity is exactly 0 or 1, so
    # there are many exact ties (BCL's Phi_N and Ring's percentiles count them inclusively)
    b, d = 7, 3
    idx1 = torch.tensor([0, 0, 1, 2, 1, 0, 2])
    idx2 = torch.tensor([0, 1, 1, 2, 0, 0, 2])
    z1 = torch.eye(d, dtype=torch.float64)[idx1] * 2.0
    z2 = torch.eye(d, dtype=torch.float64)[idx2] * 0.5
    labels = make_labels(case.label_kind, b, 3)
    assert_close(call(case, z1, z2, 0.5, labels), call_naive(case, z1, z2, 0.5, labels))


@pytest.mark.parametrize("case", ONE_PER_LOSS, ids=lambda c: c.name)
def test_matches_naive_identical_views(case):
    # z2 == z1 and two identical samples: positives at similarity 1, tied negatives
    z1, _ = make_views(4, 3, 11)
    z1[3] = z1[0]
    labels = make_labels(case.label_kind, 4, 11)
    assert_close(call(case, z1, z1.clone(), 0.5, labels), call_naive(case, z1, z1.clone(), 0.5, labels))


def test_debiased_clamp_branch_is_exercised():
    # a large tau_plus and well-aligned views make the corrected sum fall below the floor
    z1, _ = make_views(6, 4, 5)
    z2 = z1 + 0.01
    t, tau = 0.5, 0.6
    z = ref.views(z1, z2)
    clamped = 0
    for i in range(12):
        p, negs = ref.pos_and_negs(z, i, 6, t)
        N = len(negs)
        corrected = (sum(math.exp(s) for s in negs) - tau * N * math.exp(p)) / (1 - tau)
        clamped += corrected < N * math.exp(-1 / t)
    assert clamped > 0
    assert_close(L.debiased(z1, z2, temperature=t, tau_plus=tau), ref.naive_debiased(z1, z2, t, tau))
