"""Logits forms (memory bank / queue / graph negatives): equal to the two-view losses,
and per anchor equal to the naive estimators with ragged numbers of candidates."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))

import pytest  # noqa: E402
import torch  # noqa: E402

import naive_losses as ref  # noqa: E402
from loss_cases import L, make_views  # noqa: E402
from pubench.losses._pairs import partner_index, two_view_logits, view_logits  # noqa: E402

T = 0.4

# (two-view fn, logits fn, hyperparameters, does the logits form take temperature?, naive anchor fn)
ESTIMATORS = {
    "info_nce": (L.info_nce, L.info_nce_from_logits, {}, False, lambda p, n: ref.infonce_anchor(p, n)),
    "debiased": (
        L.debiased, L.debiased_from_logits, {"tau_plus": 0.3}, True,
        lambda p, n: ref.dcl_anchor(p, n, 0.3, T),
    ),
    "debiased_clamped": (
        L.debiased, L.debiased_from_logits, {"tau_plus": 0.9}, True,
        lambda p, n: ref.dcl_anchor(p, n, 0.9, T),
    ),
    "hard": (
        L.hard, L.hard_from_logits, {"tau_plus": 0.2, "beta": 1.5}, True,
        lambda p, n: ref.hcl_anchor(p, n, 0.2, 1.5, T),
    ),
    "pu_corrected": (
        L.pu_corrected, L.pu_corrected_from_logits, {"alpha": 0.3, "c": 0.1}, True,
        lambda p, n: ref.pucl_anchor(p, n, [p], 0.3, 0.1, T),
    ),
    "bayesian": (
        L.bayesian, L.bayesian_from_logits, {"tau_plus": 0.2, "alpha": 0.8, "beta": 1.0}, False,
        lambda p, n: ref.bcl_anchor(p, n, 0.2, 0.8, 1.0),
    ),
    "ring": (
        L.ring, L.ring_from_logits, {"lower": 0.25, "upper": 0.75}, False,
        lambda p, n: ref.ring_anchor(p, n, 0.25, 0.75),
    ),
    "bayesian_official": (
        L.bayesian_official, L.bayesian_official_from_logits, {"tau_plus": 0.2, "alpha": 0.8, "beta": 0.7}, False,
        lambda p, n: ref.bcl_official_anchor(p, n, 0.2, 0.8, 0.7),
    ),
    "ring_official": (
        L.ring_official, L.ring_official_from_logits, {"lower": 0.4, "upper": 0.9}, False,
        lambda p, n: ref.ring_official_anchor(p, n, 0.4, 0.9),
    ),
}
NAMES = list(ESTIMATORS)


def test_every_declared_logits_form_has_a_reference_case():
    """A loss that declares a logits form at registration is compared with its naive anchor
    version here (and with its two-view form)."""
    from pubench.losses.base import with_logits_form

    assert {fn.__name__ for fn, *_ in ESTIMATORS.values()} == set(with_logits_form())
    for name, (fn, logits, *_) in ESTIMATORS.items():
        assert getattr(fn, "from_logits", None) is logits, name


# ring_official's two-view form ranks each anchor's whole row (itself and its positive
# included) for the b views of z1, so it is not the logits form of the 2b x (2b - 2) split
TWO_VIEW_SPLIT = [n for n in NAMES if n != "ring_official"]


def logits_call(name, pos, neg, **kw):
    _, fn, params, needs_t, _ = ESTIMATORS[name]
    extra = {"temperature": T} if needs_t else {}
    return fn(pos, neg, **params, **extra, **kw)


@pytest.mark.parametrize("name", TWO_VIEW_SPLIT)
def test_logits_form_equals_two_view(name):
    two_view = ESTIMATORS[name][0]
    z1, z2 = make_views(7, 5, 0)
    pos, neg = two_view_logits(z1, z2, T)
    expected = two_view(z1, z2, temperature=T, **ESTIMATORS[name][2])
    torch.testing.assert_close(logits_call(name, pos, neg), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", TWO_VIEW_SPLIT)
def test_masked_full_matrix_equals_two_view(name):
    # the full 2b x 2b matrix with self and partner masked out, as a bank would be
    b = 6
    two_view = ESTIMATORS[name][0]
    z1, z2 = make_views(b, 5, 1)
    sim = view_logits(z1, z2, T)
    pos = sim.gather(1, partner_index(b).unsqueeze(1)).squeeze(1)
    mask = ~torch.eye(2 * b, dtype=torch.bool)
    mask[torch.arange(2 * b), partner_index(b)] = False
    neg = sim.masked_fill(~mask, 123.0)  # garbage in invalid entries must not matter
    expected = two_view(z1, z2, temperature=T, **ESTIMATORS[name][2])
    torch.testing.assert_close(logits_call(name, pos, neg, neg_mask=mask), expected, rtol=1e-12, atol=1e-12)


def test_ring_official_two_view_is_logits_form_on_whole_rows():
    # SimCLRRing: anchors = the b views of z1, candidates = all 2b views (self and positive included)
    b = 6
    z1, z2 = make_views(b, 5, 2)
    sim = view_logits(z1, z2, T)
    pos = sim[torch.arange(b), torch.arange(b) + b]
    expected = L.ring_official(z1, z2, temperature=T, lower=0.5, upper=0.95)
    got = L.ring_official_from_logits(pos, sim[:b], lower=0.5, upper=0.95)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def ragged(n=9, k=11, seed=0, ties=False):
    g = torch.Generator().manual_seed(seed)
    if ties:  # few distinct values -> exact ties
        neg = torch.randint(-2, 3, (n, k), generator=g).double() * 0.5
    else:
        neg = (torch.rand(n, k, generator=g, dtype=torch.float64) * 2 - 1) / T
    pos = (torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1) / T
    mask = torch.rand(n, k, generator=g) < 0.6
    mask[:, 0] = True  # at least one candidate per anchor (pucl's mean needs M^u >= 1)
    mask[0] = True  # one full row
    return pos, neg, mask


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
def test_ragged_masks_match_naive_per_anchor(name, ties):
    pos, neg, mask = ragged(seed=3, ties=ties)
    got = logits_call(name, pos, neg, neg_mask=mask, reduction="none")
    naive = ESTIMATORS[name][4]
    for i in range(pos.shape[0]):
        negs = [neg[i, j].item() for j in range(neg.shape[1]) if mask[i, j]]
        expected = naive(pos[i].item(), negs)
        assert abs(got[i].item() - expected) <= 1e-6 * max(1.0, abs(expected)), (i, got[i].item(), expected)


@pytest.mark.parametrize("name", NAMES)
def test_anchor_without_candidates_has_zero_loss_and_finite_grad(name):
    pos, neg, mask = ragged(seed=4)
    mask[2] = False
    pos.requires_grad_(True)
    neg.requires_grad_(True)
    loss = logits_call(name, pos, neg, neg_mask=mask, reduction="none")
    assert loss[2].item() == 0.0
    loss.sum().backward()
    assert torch.isfinite(pos.grad).all() and torch.isfinite(neg.grad).all()
    assert (neg.grad[~mask] == 0).all()  # invalid candidates get no gradient


@pytest.mark.parametrize("name", NAMES)
def test_reductions(name):
    pos, neg, mask = ragged(seed=5)
    per = logits_call(name, pos, neg, neg_mask=mask, reduction="none")
    assert per.shape == pos.shape
    torch.testing.assert_close(logits_call(name, pos, neg, neg_mask=mask), per.mean())
    torch.testing.assert_close(logits_call(name, pos, neg, neg_mask=mask, reduction="sum"), per.sum())


def test_graph_style_shapes():
    # InfoGraph-like: 13 node anchors vs 4 graphs; positive = own graph, negatives = the others
    g = torch.Generator().manual_seed(0)
    nodes = torch.nn.functional.normalize(torch.randn(13, 8, generator=g, dtype=torch.float64), dim=1)
    graphs = torch.nn.functional.normalize(torch.randn(4, 8, generator=g, dtype=torch.float64), dim=1)
    owner = torch.randint(0, 4, (13,), generator=g)
    s = nodes @ graphs.t() / T
    pos = s.gather(1, owner.unsqueeze(1)).squeeze(1)
    mask = torch.ones_like(s, dtype=torch.bool)
    mask[torch.arange(13), owner] = False
    for name in NAMES:
        loss = logits_call(name, pos, s, neg_mask=mask, reduction="none")
        assert loss.shape == (13,) and torch.isfinite(loss).all()
        for i in range(13):
            negs = [s[i, j].item() for j in range(4) if mask[i, j]]
            assert abs(loss[i].item() - ESTIMATORS[name][4](pos[i].item(), negs)) < 1e-6


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck_logits_form(name):
    pos, neg, mask = ragged(n=4, k=5, seed=6)
    pos.requires_grad_(True)
    neg.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda p, q: logits_call(name, p, q, neg_mask=mask), (pos, neg))


def test_bad_logits_shapes_raise():
    with pytest.raises(ValueError):
        L.info_nce_from_logits(torch.zeros(3, 1), torch.zeros(3, 4))
    with pytest.raises(ValueError):
        L.info_nce_from_logits(torch.zeros(3), torch.zeros(2, 4))
    with pytest.raises(ValueError):
        L.info_nce_from_logits(torch.zeros(3), torch.zeros(3, 4), neg_mask=torch.ones(3, 4))
    with pytest.raises(ValueError):
        L.info_nce_from_logits(torch.zeros(3), torch.zeros(3, 4), reduction="avg")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ring_band_from_order_statistics_equals_percentile_definition(dtype):
    """``ring_mask`` (two order statistics per anchor) keeps exactly the valid candidates with
    lower <= empirical_cdf <= upper: ties, ragged and empty rows, band edges on multiples of 1/N."""
    from pubench.losses._pairs import empirical_cdf
    from pubench.losses.ring import ring_mask

    gen = torch.Generator().manual_seed(0)
    neg = torch.randint(0, 6, (40, 12), generator=gen).to(dtype) / 2  # many ties
    neg[20:] = torch.randn(20, 12, generator=gen, dtype=dtype)
    mask = torch.rand(40, 12, generator=gen) < 0.7
    mask[0], mask[1], mask[2, 1:] = True, False, False  # a full row, an empty row, a single candidate
    mask[3, :10] = True
    bands = [(0.0, 1.0), (0.1, 0.9), (0.25, 0.75), (0.2, 0.2), (0.5, 0.4), (0.0, 0.05), (0.95, 1.0),
             (1 / 3, 2 / 3), (0.1, 1.0), (0.0, 0.5)]
    for lower, upper in bands:
        q = empirical_cdf(neg, mask)
        want = mask & (q >= lower) & (q <= upper)
        assert torch.equal(ring_mask(neg, mask, lower, upper), want), (lower, upper)
