"""Gradients, stability at temperature 0.07 / 2b = 1024, determinism, registry, argument checks."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))

import pytest  # noqa: E402
import torch  # noqa: E402

from loss_cases import (  # noqa: E402
    CASES,
    ONE_PER_LOSS,
    L,
    call,
    make_clustered_views,
    make_labels,
    make_views,
)
from pubench.losses import LOSSES  # noqa: E402

# ------------------------------------------------------------------ registry and signatures
def test_every_registered_loss_has_a_reference_case():
    """The registry finds every module of pubench/losses; each loss it finds has a naive case."""
    assert {c.name for c in CASES} == set(LOSSES.names())


@pytest.mark.parametrize("name", LOSSES.names())
def test_hyperparameters_have_no_defaults(name):
    sig = inspect.signature(LOSSES.get(name))
    for p in sig.parameters.values():
        if p.name != "reduction":
            assert p.default is inspect.Parameter.empty, (name, p.name)
    assert "temperature" in sig.parameters
    assert list(sig.parameters)[:2] == ["z1", "z2"]


# ------------------------------------------------------------------ gradients
@pytest.mark.parametrize("case", ONE_PER_LOSS, ids=lambda c: c.name)
def test_gradcheck_two_view(case):
    z1, z2 = make_views(4, 3, 0)
    labels = make_labels(case.label_kind, 4, 0)
    z1.requires_grad_(True)
    z2.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: call(case, a, b, 0.5, labels), (z1, z2))


@pytest.fixture(scope="module")
def big_views():
    return make_clustered_views(512, 32, 8, 42, dtype=torch.float32)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_float32_t007_b512_finite_and_accurate(case, big_views):
    z1, z2 = (z.clone().requires_grad_(True) for z in big_views)
    labels = make_labels(case.label_kind, 512, 42)
    loss = call(case, z1, z2, 0.07, labels)
    loss.backward()
    assert torch.isfinite(loss)
    assert torch.isfinite(z1.grad).all() and torch.isfinite(z2.grad).all()
    assert z1.grad.abs().sum() > 0
    ref64 = call(case, big_views[0].double(), big_views[1].double(), 0.07, labels)
    assert abs(loss.item() - ref64.item()) <= 1e-4 * max(1.0, abs(ref64.item()))


@pytest.mark.parametrize("case", ONE_PER_LOSS, ids=lambda c: c.name)
@pytest.mark.parametrize("kind", ["collapsed", "antipodal"])
def test_float32_extreme_geometry_finite(case, kind):
    # all embeddings equal (every logit = 1/t) or each positive antipodal (pos = -1/t)
    b = 256
    z1 = torch.ones(b, 16) if kind == "collapsed" else make_views(b, 16, 1, dtype=torch.float32)[0]
    z2 = z1.clone() if kind == "collapsed" else -z1.clone()
    z1.requires_grad_(True)
    labels = make_labels(case.label_kind, b, 1)
    loss = call(case, z1, z2, 0.07, labels)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(z1.grad).all()


@pytest.mark.parametrize("fn,params", [(L.hard, {"tau_plus": 0.1}), (L.bayesian, {"tau_plus": 0.1, "alpha": 0.9})])
def test_large_beta_does_not_overflow(fn, params):
    # x^beta = e^{beta/t} would overflow float32 for beta = 10 at t = 0.07 (e^{143})
    z1, z2 = make_views(64, 16, 3, dtype=torch.float32)
    z1.requires_grad_(True)
    loss = fn(z1, z2, temperature=0.07, beta=10.0, **params)
    loss.backward()
    ref = fn(z1.detach().double(), z2.double(), temperature=0.07, beta=10.0, **params)
    assert torch.isfinite(z1.grad).all()
    assert abs(loss.item() - ref.item()) <= 1e-4 * max(1.0, ref.item())


# ------------------------------------------------------------------ determinism and invariances
@pytest.mark.parametrize("case", ONE_PER_LOSS, ids=lambda c: c.name)
def test_deterministic(case):
    z1, z2 = make_views(64, 8, 5, dtype=torch.float32)
    labels = make_labels(case.label_kind, 64, 5)
    first = call(case, z1, z2, 0.1, labels)
    for _ in range(2):
        assert torch.equal(call(case, z1, z2, 0.1, labels), first)


@pytest.mark.parametrize("case", ONE_PER_LOSS, ids=lambda c: c.name)
def test_sample_permutation_invariance(case):
    z1, z2 = make_views(10, 6, 8)
    labels = make_labels(case.label_kind, 10, 8)
    perm = torch.randperm(10, generator=torch.Generator().manual_seed(0))
    permuted = {k: v[perm] for k, v in labels.items()}
    torch.testing.assert_close(
        call(case, z1[perm], z2[perm], 0.3, permuted), call(case, z1, z2, 0.3, labels), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("case", ONE_PER_LOSS, ids=lambda c: c.name)
def test_scale_invariance_of_inputs(case):
    z1, z2 = make_views(6, 4, 9)
    labels = make_labels(case.label_kind, 6, 9)
    torch.testing.assert_close(call(case, 3.0 * z1, 0.2 * z2, 0.3, labels), call(case, z1, z2, 0.3, labels))


@pytest.mark.parametrize("case", ONE_PER_LOSS, ids=lambda c: c.name)
def test_reduction_none_is_per_anchor(case):
    z1, z2 = make_views(5, 4, 10)
    labels = make_labels(case.label_kind, 5, 10)
    per = call(case, z1, z2, 0.3, labels, reduction="none")
    assert per.shape == (5 * case.anchor_views,)
    torch.testing.assert_close(per.mean(), call(case, z1, z2, 0.3, labels))


# ------------------------------------------------------------------ argument checks
def test_invalid_arguments_raise():
    z1, z2 = make_views(4, 3, 0)
    lab = torch.tensor([True, False, False, True])
    bad = [
        lambda: L.info_nce(z1, z2, temperature=0.0),
        lambda: L.info_nce(z1[:1], z2[:1], temperature=0.5),  # b = 1: no negatives
        lambda: L.info_nce(z1, z2[:3], temperature=0.5),
        lambda: L.debiased(z1, z2, temperature=0.5, tau_plus=1.0),
        lambda: L.hard(z1, z2, temperature=0.5, tau_plus=-0.1, beta=1.0),
        lambda: L.pu_corrected(z1, z2, temperature=0.5, alpha=1.0, c=0.1),
        lambda: L.pu_corrected(z1, z2, temperature=0.5, alpha=0.1, c=1.5),
        lambda: L.bayesian(z1, z2, temperature=0.5, tau_plus=0.1, alpha=1.2, beta=1.0),
        lambda: L.ring(z1, z2, temperature=0.5, lower=0.8, upper=0.2),
        lambda: L.ring_official(z1, z2, temperature=0.5, lower=0.99, upper=0.9),
        lambda: L.bayesian_official(z1, z2, temperature=0.5, tau_plus=0.1, alpha=0.8, beta=2.0),  # beta in [0, 1]
        lambda: L.bayesian_official(z1, z2, temperature=0.5, tau_plus=1.0, alpha=0.8, beta=0.5),
        lambda: L.supcon(z1, z2, labels=torch.zeros(3, dtype=torch.long), temperature=0.5),
        lambda: L.supcon(z1, z2, labels=torch.zeros(4), temperature=0.5),  # float labels
        lambda: L.supcon_pu(z1, z2, labeled=torch.tensor([0, 2, 0, 1]), temperature=0.5),
        lambda: L.mixed(z1, z2, labeled=lab, temperature=0.5, lam=1.5),
        lambda: L.punce(z1, z2, labeled=lab, prior=-0.5, temperature=0.5),
        lambda: L.punce_official(z1, z2, labeled=lab, prior=1.5, temperature=0.5),
        lambda: L.punce_pnu(z1, z2, labels=torch.tensor([1, 0, 2, -1]), prior=0.5, temperature=0.5),
        lambda: L.info_nce(z1, z2, temperature=0.5, reduction="avg"),
    ]
    for f in bad:
        with pytest.raises(ValueError):
            f()


def test_int_labeled_accepted():
    z1, z2 = make_views(4, 3, 0)
    lab = torch.tensor([True, False, False, True])
    torch.testing.assert_close(
        L.supcon_pu(z1, z2, labeled=lab.long(), temperature=0.5), L.supcon_pu(z1, z2, labeled=lab, temperature=0.5)
    )


def test_inference_mode_first_call_then_training():
    # cached index tensors must not become inference tensors (they are saved for backward)
    z1, z2 = make_views(13, 4, 0, dtype=torch.float32)  # a batch size no other test uses
    with torch.inference_mode():
        L.ring(z1, z2, temperature=0.5, lower=0.0, upper=1.0)
    z1.requires_grad_(True)
    L.ring(z1, z2, temperature=0.5, lower=0.0, upper=1.0).backward()
    assert torch.isfinite(z1.grad).all()
