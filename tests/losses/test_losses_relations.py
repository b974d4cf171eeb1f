"""Special cases that tie the losses together (derivations in the module docstrings)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))

import pytest  # noqa: E402
import torch  # noqa: E402

import naive_losses as ref  # noqa: E402
from loss_cases import make_labels, make_views  # noqa: E402
from loss_cases import L  # noqa: E402
from pubench.losses._pairs import two_view_logits, view_logits  # noqa: E402

T = 0.3
SEEDS = [0, 1, 2]


def close(a, b, tol=1e-10):
    assert a.shape == b.shape and torch.allclose(a, b, rtol=tol, atol=tol), (a, b)


def views(seed, b=9, d=5):
    return make_views(b, d, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_debiased_tau0_is_infonce(seed):
    z1, z2 = views(seed)
    # with cosine logits sum_j e^{s_j} >= N e^{-1/t}, so the clamp cannot be active
    _, neg = two_view_logits(z1, z2, T)
    assert (neg.exp().sum(1) >= neg.shape[1] * math.exp(-1 / T)).all()
    close(L.debiased(z1, z2, temperature=T, tau_plus=0.0), L.info_nce(z1, z2, temperature=T))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tau_plus", [0.0, 0.1, 0.5])
def test_hard_beta0_is_debiased(seed, tau_plus):
    z1, z2 = views(seed)
    close(L.hard(z1, z2, temperature=T, tau_plus=tau_plus, beta=0.0), L.debiased(z1, z2, temperature=T, tau_plus=tau_plus))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("alpha,c", [(0.1, 0.1), (0.5, 0.02), (0.9, 0.5), (0.3, 0.0)])
def test_pu_corrected_is_debiased_with_shifted_prior(seed, alpha, c):
    # 000 eq. 8: N mu = A S - B N h+ with A = (1 - ac)/(1 - a), B = a(1 - c)/(1 - a), A - B = 1,
    # i.e. DCL's (S - tau N h+)/(1 - tau) with tau = a(1 - c)/(1 - ac); same floor N e^{-1/t}
    z1, z2 = views(seed)
    tau = alpha * (1 - c) / (1 - alpha * c)
    close(
        L.pu_corrected(z1, z2, temperature=T, alpha=alpha, c=c),
        L.debiased(z1, z2, temperature=T, tau_plus=tau),
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_pu_corrected_edges(seed):
    z1, z2 = views(seed)
    close(L.pu_corrected(z1, z2, temperature=T, alpha=0.4, c=1.0), L.info_nce(z1, z2, temperature=T))
    close(L.pu_corrected(z1, z2, temperature=T, alpha=0.4, c=0.0), L.debiased(z1, z2, temperature=T, tau_plus=0.4))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tau_plus", [0.0, 0.1, 0.7])
def test_bayesian_alpha_half_beta0_is_infonce(seed, tau_plus):
    # alpha = 1/2 -> p(TN | x) = tau- for every x, so w_i = tau- x^0 / mean(tau- x^0) = 1
    z1, z2 = views(seed)
    close(L.bayesian(z1, z2, temperature=T, tau_plus=tau_plus, alpha=0.5, beta=0.0), L.info_nce(z1, z2, temperature=T))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_bayesian_constant_posterior_is_hcl_without_debiasing(seed, beta):
    # alpha = 1/2 (any tau+) or tau+ = 0 (any alpha): constant p(TN), w = HCL's weights;
    # HCL with tau+ = 0 never clamps (sum w x >= N min x >= N e^{-1/t})
    z1, z2 = views(seed)
    expected = L.hard(z1, z2, temperature=T, tau_plus=0.0, beta=beta)
    close(L.bayesian(z1, z2, temperature=T, tau_plus=0.3, alpha=0.5, beta=beta), expected)
    close(L.bayesian(z1, z2, temperature=T, tau_plus=0.0, alpha=0.8, beta=beta), expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_ring_full_band_is_infonce(seed):
    z1, z2 = views(seed)
    close(L.ring(z1, z2, temperature=T, lower=0.0, upper=1.0), L.info_nce(z1, z2, temperature=T))


def test_ring_empty_band_is_zero():
    z1, z2 = views(0)
    # percentiles are >= 1/N > 0, so the band [0, 0] keeps no negative: -log(e^p / e^p) = 0
    close(L.ring(z1, z2, temperature=T, lower=0.0, upper=0.0), torch.zeros((), dtype=torch.float64))


def test_ring_narrower_band_lowers_loss():
    z1, z2 = views(1)
    full = L.ring(z1, z2, temperature=T, lower=0.0, upper=1.0)
    assert L.ring(z1, z2, temperature=T, lower=0.3, upper=0.9) < full


@pytest.mark.parametrize("seed", SEEDS)
def test_no_labeled_sample_gives_infonce(seed):
    z1, z2 = views(seed)
    none = torch.zeros(9, dtype=torch.bool)
    ref = L.info_nce(z1, z2, temperature=T)
    close(L.supcon_pu(z1, z2, labeled=none, temperature=T), ref)
    for prior in (0.0, 0.4, 1.0):
        close(L.punce(z1, z2, labeled=none, prior=prior, temperature=T), ref)
        close(L.punce_pnu(z1, z2, labels=torch.full((9,), -1), prior=prior, temperature=T), ref)


@pytest.mark.parametrize("seed", SEEDS)
def test_everything_labeled_gives_supcon(seed):
    z1, z2 = views(seed)
    ones = torch.ones(9, dtype=torch.bool)
    ref = L.supcon(z1, z2, labels=torch.ones(9, dtype=torch.long), temperature=T)
    close(L.supcon_pu(z1, z2, labeled=ones, temperature=T), ref)
    close(L.punce(z1, z2, labeled=ones, prior=0.3, temperature=T), ref)
    y = make_labels("labels", 9, seed)["labels"] % 2
    close(L.punce_pnu(z1, z2, labels=y, prior=0.3, temperature=T), L.supcon(z1, z2, labels=y, temperature=T))


@pytest.mark.parametrize("seed", SEEDS)
def test_punce_prior0_is_supcon_pu(seed):
    z1, z2 = views(seed)
    lab = make_labels("labeled", 9, seed)["labeled"]
    close(L.punce(z1, z2, labeled=lab, prior=0.0, temperature=T), L.supcon_pu(z1, z2, labeled=lab, temperature=T))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("prior", [0.0, 0.35, 1.0])
def test_punce_pnu_without_labeled_negatives_is_punce(seed, prior):
    z1, z2 = views(seed)
    lab = make_labels("labeled", 9, seed)["labeled"]
    y = torch.where(lab, 1, -1)
    close(
        L.punce_pnu(z1, z2, labels=y, prior=prior, temperature=T),
        L.punce(z1, z2, labeled=lab, prior=prior, temperature=T),
    )


# ------------------------------------------------------------------ puNCE PNU, 001 eq. 10 (issue 36)
def _own_and_total_weights(loss, labels, t=0.5):
    """Each anchor's weight W_i,a(i) on its own view and its total weight sum_j W_ij, read off a
    loss -sum_j W_ij log q_ij through its per-anchor values: with one-hot views (z1 = z2 = rows of
    the identity) s_ij = 1/t at j = a(i) and 0 elsewhere, so l_i = S_i log(e^{1/t} + 2b - 2) -
    W_i,a(i) / t; with collapsed views every log q_ij = -log(2b - 1), so l_i = S_i log(2b - 1)."""
    b = len(labels)
    eye = torch.eye(b, dtype=torch.float64)
    same = torch.ones(b, 3, dtype=torch.float64)
    total = loss(same, same, labels, t) / math.log(2 * b - 1)
    own = t * (total * math.log(math.exp(1 / t) + 2 * b - 2) - loss(eye, eye, labels, t))
    return own, total


def _pnu_rows(z1, z2, labels, t):
    return L.punce_pnu(z1, z2, labels=labels, prior=0.4, temperature=t, reduction="none")


@pytest.mark.parametrize("n_pos, n_neg, want", [(1, 2, 0.2533), (5, 8, 0.0717), (10, 16, 0.0372)])
def test_punce_pnu_own_view_weight_shrinks_with_the_labeled_views(n_pos, n_neg, want):
    """table4-punce reduced (batch 256, prior 0.4; ~1 / 5 / 10% labeled: 3 / 13 / 26 labeled samples a
    batch): eq. 10 leaves an unlabeled anchor pi/|P(i)| + (1 - pi)/|N(i)| on its own view, every row
    still summing to 1; eq. 8 (the same batch with the labeled negatives passed as unlabeled) keeps at
    least 1 - pi on it. The measured consequence: benchmarks/reduced_internals.py punce."""
    b, prior = 256, 0.4
    labels = torch.full((b,), -1)
    labels[:n_pos], labels[n_pos:n_pos + n_neg] = 1, 0
    own, total = _own_and_total_weights(_pnu_rows, labels)
    close(total, torch.ones(2 * b, dtype=torch.float64), 1e-9)
    unl = (labels == -1).repeat(2)
    expected = prior / (2 * n_pos + 1) + (1 - prior) / (2 * n_neg + 1)
    close(own[unl], torch.full((int(unl.sum()),), expected, dtype=torch.float64), 1e-9)
    assert expected == pytest.approx(want, abs=1e-4)
    hidden = torch.where(labels == 0, -1, labels)
    own8, _ = _own_and_total_weights(_pnu_rows, hidden)
    assert (own8[(hidden == -1).repeat(2)] >= 1 - prior).all()


def test_punce_pnu_own_view_weight_falls_monotonically():
    weights = []
    for n_lab in (2, 6, 12, 26, 52):
        labels = torch.full((256,), -1)
        labels[: 2 * n_lab // 5], labels[2 * n_lab // 5:n_lab] = 1, 0
        own, _ = _own_and_total_weights(_pnu_rows, labels)
        weights.append(float(own[(labels == -1).repeat(2)].mean()))
    assert weights == sorted(weights, reverse=True) and weights[-1] < 0.03


def test_naive_punce_pnu_literal_repeats_the_negative_term():
    """Eq. 10 as printed (two identical (1 - pi)/|N(i)| terms): an unlabeled row weighs 2 - pi in all,
    and with no labeled negative it is not eq. 8 (puNCE), which the single term is."""
    z1, z2 = make_views(6, 4, 5)
    y = torch.tensor([1, 0, -1, 1, -1, -1])
    pi, b = 0.3, 6
    same = torch.ones(b, 2, dtype=torch.float64)
    for i in range(2 * b):
        literal = ref.naive_punce_pnu_literal(same, same, y, pi, T, anchors=[i]) / math.log(2 * b - 1)
        single = ref.naive_punce_pnu(same, same, y, pi, T, anchors=[i]) / math.log(2 * b - 1)
        assert single == pytest.approx(1.0, abs=1e-12)
        assert literal == pytest.approx(2 - pi if int(y[i % b]) == -1 else 1.0, abs=1e-12)
    pu = torch.where(y == 0, -1, y)
    assert ref.naive_punce_pnu(z1, z2, pu, pi, T) == pytest.approx(ref.naive_punce(z1, z2, pu == 1, pi, T), abs=1e-12)
    assert ref.naive_punce_pnu_literal(z1, z2, pu, pi, T) != pytest.approx(ref.naive_punce(z1, z2, pu == 1, pi, T),
                                                                         abs=1e-3)


@pytest.mark.parametrize("seed", SEEDS)
def test_naive_punce_pnu_special_cases(seed):
    """The naive loop of eq. 10: no label -> InfoNCE (naive loop of eq. 4), every sample labeled ->
    SupCon (naive loop of eq. 5), no labeled negative -> eq. 8 (naive puNCE), for any prior."""
    z1, z2 = views(seed)
    for prior in (0.0, 0.4, 1.0):
        assert ref.naive_punce_pnu(z1, z2, torch.full((9,), -1), prior, T) == pytest.approx(
            ref.naive_info_nce(z1, z2, T), abs=1e-12)
        y = make_labels("labels", 9, seed)["labels"] % 2
        assert ref.naive_punce_pnu(z1, z2, y, prior, T) == pytest.approx(ref.naive_supcon(z1, z2, y, T), abs=1e-12)
        lab = make_labels("labeled", 9, seed)["labeled"]
        assert ref.naive_punce_pnu(z1, z2, torch.where(lab, 1, -1), prior, T) == pytest.approx(
            ref.naive_punce(z1, z2, lab, prior, T), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_punce_is_linear_in_prior(seed):
    z1, z2 = views(seed)
    lab = make_labels("labeled", 9, seed)["labeled"]
    f = lambda p: L.punce(z1, z2, labeled=lab, prior=p, temperature=T)  # noqa: E731
    close(f(0.25), 0.75 * f(0.0) + 0.25 * f(1.0))


@pytest.mark.parametrize("seed", SEEDS)
def test_mixed_endpoints_and_linearity(seed):
    z1, z2 = views(seed)
    lab = make_labels("labeled", 9, seed)["labeled"]
    scl_pu = L.supcon(z1, z2, labels=lab.long(), temperature=T)
    ss = L.info_nce(z1, z2, temperature=T)
    close(L.mixed(z1, z2, labeled=lab, temperature=T, lam=1.0), scl_pu)
    close(L.mixed(z1, z2, labeled=lab, temperature=T, lam=0.0), ss)
    close(L.mixed(z1, z2, labeled=lab, temperature=T, lam=0.4), 0.4 * scl_pu + 0.6 * ss)


@pytest.mark.parametrize("seed", SEEDS)
def test_supcon_with_distinct_labels_is_infonce(seed):
    z1, z2 = views(seed)
    close(L.supcon(z1, z2, labels=torch.arange(9), temperature=T), L.info_nce(z1, z2, temperature=T))


def test_supcon_pnu_special_cases():
    """Semi-supervised SCL: no labels -> InfoNCE; PU labels -> puCL; all labeled -> SupCon."""

    z1, z2 = make_views(8, 5, seed=3)
    none = torch.full((8,), -1)
    torch.testing.assert_close(L.supcon_pnu(z1, z2, labels=none, temperature=0.5), L.info_nce(z1, z2, temperature=0.5))
    pu = torch.tensor([1, -1, 1, -1, -1, 1, -1, -1])
    torch.testing.assert_close(L.supcon_pnu(z1, z2, labels=pu, temperature=0.5),
                               L.supcon_pu(z1, z2, labeled=pu == 1, temperature=0.5))
    full = torch.tensor([1, 0, 1, 0, 0, 1, 1, 0])
    torch.testing.assert_close(L.supcon_pnu(z1, z2, labels=full, temperature=0.5),
                               L.supcon(z1, z2, labels=full, temperature=0.5))


# ------------------------------------------------------------------ the authors' code variants
@pytest.mark.parametrize("seed", SEEDS)
def test_punce_official_label_extremes(seed):
    # no labeled view -> InfoNCE (the code's explicit branch); all labeled -> SupCon, one class
    z1, z2 = views(seed)
    none, ones = torch.zeros(9, dtype=torch.bool), torch.ones(9, dtype=torch.bool)
    for prior in (0.0, 0.4, 1.0):
        close(L.punce_official(z1, z2, labeled=none, prior=prior, temperature=T), L.info_nce(z1, z2, temperature=T))
        close(
            L.punce_official(z1, z2, labeled=ones, prior=prior, temperature=T),
            L.supcon(z1, z2, labels=torch.ones(9, dtype=torch.long), temperature=T),
        )


@pytest.mark.parametrize("seed", SEEDS)
def test_punce_official_prior0_is_supcon_pu(seed):
    z1, z2 = views(seed)
    lab = make_labels("labeled", 9, seed)["labeled"]
    close(L.punce_official(z1, z2, labeled=lab, prior=0.0, temperature=T), L.supcon_pu(z1, z2, labeled=lab, temperature=T))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("prior", [0.1, 0.5, 1.0])
def test_punce_official_is_eq8_with_shifted_prior(seed, prior):
    # the code's weights 1/(1 + pi), pi/((1 + pi)|P|) are eq. 8's with pi' = pi (|P| + 1) / ((1 + pi)|P|)
    z1, z2 = views(seed)
    lab = make_labels("labeled", 9, seed)["labeled"]
    n_p = 2 * int(lab.sum())
    shifted = prior * (n_p + 1) / ((1 + prior) * n_p)
    close(
        L.punce_official(z1, z2, labeled=lab, prior=prior, temperature=T),
        L.punce(z1, z2, labeled=lab, prior=shifted, temperature=T),
    )
    if prior > 0:  # and not eq. 8 with the same prior
        assert not torch.allclose(
            L.punce_official(z1, z2, labeled=lab, prior=prior, temperature=T),
            L.punce(z1, z2, labeled=lab, prior=prior, temperature=T),
        )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("alpha,tau_plus", [(0.5, 0.0), (0.5, 0.3), (0.8, 0.0), (1.0, 0.0)])
def test_bayesian_official_beta_half_is_scaled_infonce(seed, alpha, tau_plus):
    # beta = 1/2: x_HTN = x_TN / (1 + 2e-3); with alpha = 1/2 (x_TN = x_FN = 1) or tau+ = 0 the
    # weight is 1/(1 + 2e-3) for every negative, i.e. InfoNCE with each e^{s} scaled by it
    z1, z2 = views(seed)
    pos, neg = two_view_logits(z1, z2, T)
    expected = L.info_nce_from_logits(pos, neg - math.log(1 + 2e-3))
    close(L.bayesian_official(z1, z2, temperature=T, tau_plus=tau_plus, alpha=alpha, beta=0.5), expected)


def test_bayesian_official_differs_from_eq3():
    z1, z2 = views(0)
    kw = dict(temperature=T, tau_plus=0.1, alpha=0.8, beta=0.9)
    assert not torch.allclose(L.bayesian_official(z1, z2, **kw), L.bayesian(z1, z2, **kw))


@pytest.mark.parametrize("seed", SEEDS)
def test_ring_official_full_band(seed):
    # [0, 1] keeps the whole sorted list: on a queue that is InfoNCE; on a SimCLR row it also
    # holds the anchor itself (1/t) and its positive a second time
    z1, z2 = views(seed)
    b = z1.shape[0]
    sim = view_logits(z1, z2, T)[:b]
    pos = sim[torch.arange(b), torch.arange(b) + b]
    expected = (torch.logaddexp(pos, sim.logsumexp(dim=1)) - pos).mean()
    close(L.ring_official(z1, z2, temperature=T, lower=0.0, upper=1.0), expected)
    q_pos, queue = two_view_logits(z1, z2, T)
    close(L.ring_official_from_logits(q_pos, queue, lower=0.0, upper=1.0), L.info_nce_from_logits(q_pos, queue))


def test_ring_official_released_band_drops_self_from_128_views():
    # 2b = 128: the released band keeps ranks [1, 12); rank 0 is the anchor itself (s = 1/t)
    z1, z2 = make_views(64, 8, 0)
    sim = view_logits(z1, z2, T)[:64]
    ranked = sim.sort(dim=1, descending=True).values
    assert torch.equal(ranked[:, 0], sim.diagonal())
    pos = sim[torch.arange(64), torch.arange(64) + 64]
    ring_lse = ranked[:, 1:12].logsumexp(dim=1)
    expected = (torch.logaddexp(pos, ring_lse) - pos).mean()
    close(L.ring_official(z1, z2, temperature=T, lower=0.9, upper=0.99), expected)
