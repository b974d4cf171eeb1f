"""PAN (Hu et al. 2021): its KL-based value against a naive loop, the special cases, the
gradients each player follows, and the method on tiny data."""

from __future__ import annotations

import math

import pytest
import torch

from pubench.pu import PU_METHODS
from pubench.pu.pan import (DISCRIMINATOR_FORMS, fresh_copy, pan_discriminator_term, pan_kl_term, pan_step_loss,
                            pan_value)
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError, build_config
from tests.reference import naive_pan_pulns as naive
from tests.pu.test_vpu import RecordingEncoder, _data

pytestmark = pytest.mark.usefixtures("one_thread")
TOL = 1e-10


def _case(seed: int, n: int = 30, frac: float = 0.3):
    g = torch.Generator().manual_seed(seed)
    d = 2 * torch.randn(n, generator=g, dtype=torch.float64)
    c = 2 * torch.randn(n, generator=g, dtype=torch.float64)
    lab = torch.rand(n, generator=g) < frac
    return d, c, lab


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam", [0.0, 1e-4, 0.5, 3.0])
def test_pan_value_matches_naive(seed, lam):
    d, c, lab = _case(seed)
    got = float(pan_value(d, c, lab, lam))
    assert got == pytest.approx(naive.pan_value(d.tolist(), c.tolist(), lab.tolist(), lam), abs=TOL)
    terms = pan_kl_term(d, c)
    for i in range(len(d)):
        assert float(terms[i]) == pytest.approx(naive.pan_kl_term(float(d[i]), float(c[i])), abs=TOL)


def test_pan_special_cases():
    d, c, lab = _case(0)
    # an undecided discriminator (d = 1/2) gives the classifier nothing to follow
    assert torch.allclose(pan_kl_term(torch.zeros(5, dtype=torch.float64), c[:5]), torch.zeros(5, dtype=torch.float64))
    # lam = 0: GAN's discriminator value, the P-vs-U log-likelihood
    ll = float(torch.nn.functional.logsigmoid(d[lab]).mean() + torch.nn.functional.logsigmoid(-d[~lab]).mean())
    assert float(pan_value(d, c, lab, 0.0)) == pytest.approx(ll, abs=TOL)
    # a classifier that copies the discriminator: KL(d || c) = 0, the term is -KL(d || 1 - d) <= 0
    same = pan_kl_term(d, d)
    ref = [-naive.bernoulli_kl(naive.sigmoid(z), 1 - naive.sigmoid(z)) for z in d.tolist()]
    assert same.tolist() == pytest.approx(ref, abs=TOL) and bool((same <= 0).all())
    # no unlabeled example: only E_P[log d]; no labeled one: only the U parts
    all_p = torch.ones_like(lab)
    assert float(pan_value(d, c, all_p, 2.0)) == pytest.approx(float(torch.nn.functional.logsigmoid(d).mean()))
    none_p = torch.zeros_like(lab)
    assert float(pan_value(d, c, none_p, 1.0)) == pytest.approx(
        naive.pan_value(d.tolist(), c.tolist(), [False] * len(d), 1.0), abs=TOL)
    with pytest.raises(ValueError, match="lam"):
        pan_value(d, c, lab, -1.0)
    with pytest.raises(ValueError, match="same length"):
        pan_value(d, c[:-1], lab, 1.0)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam", [0.0, 1e-4, 0.5, 3.0])
@pytest.mark.parametrize("classifier_eps", [0.0, 0.01])
def test_pan_kl_term_with_and_without_classifier_eps_matches_naive(seed, lam, classifier_eps):
    """Both forms of the KL term against the naive loop: 0 (the formula, Bernoulli
    divergences) and 0.01 (the released code's loss2, eps inside the logs of c), under
    both discriminator forms."""
    d, c, lab = _case(seed)   # logits up to about +-6: past log(1 / eps) = 4.6 the eps form saturates
    terms = pan_kl_term(d, c, classifier_eps)
    for i in range(len(d)):
        assert float(terms[i]) == pytest.approx(naive.pan_kl_term(float(d[i]), float(c[i]), classifier_eps), abs=TOL)
    got = float(pan_value(d, c, lab, lam, classifier_eps=classifier_eps))
    assert got == pytest.approx(naive.pan_value(d.tolist(), c.tolist(), lab.tolist(), lam, classifier_eps), abs=TOL)
    got = float(pan_value(d, c, lab, lam, "released", 0.01, classifier_eps))
    want = naive.pan_value_released(d.tolist(), c.tolist(), lab.tolist(), lam, 0.01, classifier_eps)
    assert got == pytest.approx(want, abs=TOL)


def test_classifier_eps_bounds_the_kl_term_and_its_gradient():
    """The released eps = 0.01 bounds the term by log(1.01 / 0.01) = 4.62 and stops pushing
    the classifier's logit past about log(1 / eps); the formula (eps 0) is linear in the
    logit, unbounded, with a constant push. eps 0 is the closed form bit for bit (the
    committed records' runs)."""
    bound = math.log(1.01 / 0.01)
    assert bound == pytest.approx(4.6151, abs=1e-4)
    d = torch.full((4,), 30.0, dtype=torch.float64)                 # d = 1: the term is -C's log-ratio
    c = torch.tensor([-60.0, -20.0, 20.0, 60.0], dtype=torch.float64, requires_grad=True)
    released = pan_kl_term(d, c, 0.01)
    assert released.tolist() == pytest.approx([bound, bound, -bound, -bound], abs=1e-6)
    released.sum().backward()
    assert float(c.grad.abs().max()) < 1e-6                         # saturated: no push left
    c.grad = None
    formula = pan_kl_term(d, c)
    assert formula.tolist() == pytest.approx([60.0, 20.0, -20.0, -60.0], abs=1e-9)
    formula.sum().backward()
    assert c.grad.tolist() == pytest.approx([-1.0] * 4, abs=1e-12)  # constant push at any logit
    dd, cc, _ = _case(2)
    assert torch.equal(pan_kl_term(dd, cc, 0.0), -(2.0 * torch.sigmoid(dd) - 1.0) * cc)
    with pytest.raises(ValueError, match="classifier_eps"):
        pan_kl_term(dd, cc, -0.1)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("form", DISCRIMINATOR_FORMS)
@pytest.mark.parametrize("classifier_eps", [0.0, 0.01])
def test_pan_step_loss_gives_each_player_its_gradient(seed, form, classifier_eps):
    d, c, lab = _case(seed)
    lam = 0.7
    d1, c1 = d.clone().requires_grad_(), c.clone().requires_grad_()
    pan_step_loss(d1, c1, lab, lam, form, 0.01, classifier_eps).backward()
    d2, c2 = d.clone().requires_grad_(), c.clone().requires_grad_()
    pan_value(d2, c2, lab, lam, form, 0.01, classifier_eps).backward()
    assert torch.allclose(d1.grad, -d2.grad, atol=1e-12)      # D ascends V
    assert torch.allclose(c1.grad, c2.grad, atol=1e-12)       # C descends V
    assert bool((c1.grad[lab] == 0).all())                    # C sees only the unlabeled examples


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam", [0.0, 1e-4, 0.5])
@pytest.mark.parametrize("eps", [0.01, 0.3])
def test_pan_released_discriminator_matches_naive(seed, lam, eps):
    d, c, lab = _case(seed, frac=0.4 if seed % 2 else 0.7)  # fewer and more P than U: H is |P| or all of U
    got = float(pan_value(d, c, lab, lam, "released", eps))
    assert got == pytest.approx(naive.pan_value_released(d.tolist(), c.tolist(), lab.tolist(), lam, eps), abs=TOL)


def test_released_hinge_leaves_the_unlabeled_above_the_batch_mean_alone():
    """The expectation pushes every unlabeled d down (no bound: all of U can go negative);
    the released hinge moves only the first |P| unlabeled examples, and of those only the
    ones already below their mean d."""
    d, c, lab = _case(1, n=40, frac=0.3)
    unl = torch.nonzero(~lab).reshape(-1)
    head = unl[: int(lab.sum())]
    grads = {}
    for form in DISCRIMINATOR_FORMS:
        z = d.clone().requires_grad_()
        pan_discriminator_term(z, lab, form).backward()
        grads[form] = z.grad
    assert bool((grads["expectation"][unl] < 0).all())
    released = grads["released"]
    below = torch.sigmoid(d[head]) < torch.sigmoid(d[head]).mean()
    assert bool((released[head][below] < 0).all()) and bool((released[head][~below] == 0).all())
    assert bool((released[unl[len(head):]] == 0).all())
    # bounded: pushing the unlabeled logits to -inf gains at most log(1 + eps) - log(1 - m) per example
    far = d.clone()
    far[unl] = -50.0
    assert float(pan_discriminator_term(far, lab, "released")) <= math.log(1.01) + 1e-12
    # a saturated discriminator (mean d = 1 in float) keeps the value finite
    sat = d.clone().float()
    sat[unl] = 40.0
    assert math.isfinite(float(pan_discriminator_term(sat, lab, "released")))
    with pytest.raises(ValueError, match="form"):
        pan_discriminator_term(d, lab, "hinge")


def test_fresh_copy_reinitialises_from_its_seed():
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    state = torch.random.get_rng_state()
    a, b, other = fresh_copy(net, 1), fresh_copy(net, 1), fresh_copy(net, 2)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(a[0].weight, b[0].weight) and not torch.equal(a[0].weight, other[0].weight)
    assert not torch.equal(a[0].weight, net[0].weight)


def _run(data, lam=6e-3, epochs=20, seed=0, discriminator="expectation", classifier_eps=0.0):
    unit = PU_METHODS.get("pan")
    config = build_config(unit.config_cls, {"name": "pan", "lam": lam, "discriminator": discriminator,
                                            "classifier_eps": classifier_eps})
    train = build_config(TrainConfig, {"epochs": epochs, "batch_size": 64,
                                       "optimizer": {"name": "adam", "lr": 0.01, "betas": [0.5, 0.999]}})
    return unit.run(config, RecordingEncoder(), train, data, seed=seed, ctx=PLAIN)


def test_pan_learns_and_is_deterministic():
    data = _data(n=400)
    m, info = _run(data)
    assert m["auc"] > 95 and m["acc"] > 80, m
    assert info["prior_used"] is None and info["prior_source"] == "none"
    again, _ = _run(data)
    assert again == m
    _, other = _run(data, seed=1)
    assert other["final_value"] != info["final_value"]


def test_pan_with_the_released_discriminator_learns():
    data = _data(n=400)
    m, info = _run(data, discriminator="released")
    assert m["auc"] > 95 and m["acc"] > 80, m
    assert info["discriminator"] == "released"


def test_pan_with_the_released_classifier_eps_learns():
    data = _data(n=400)
    m, _ = _run(data, classifier_eps=0.01)
    assert m["auc"] > 95 and m["acc"] > 80, m
    assert m != _run(data)[0]    # the option reaches the training


def test_config_checks():
    unit = PU_METHODS.get("pan")
    with pytest.raises(ConfigError, match="discriminator"):
        unit.check(build_config(unit.config_cls, {"name": "pan", "lam": 0.1, "discriminator": "hinge"}))
    with pytest.raises(ConfigError, match="eps"):
        unit.check(build_config(unit.config_cls, {"name": "pan", "lam": 0.1, "eps": 0.0}))
    with pytest.raises(ConfigError, match="classifier_eps"):
        unit.check(build_config(unit.config_cls, {"name": "pan", "lam": 0.1, "classifier_eps": -0.01}))
    assert build_config(unit.config_cls, {"name": "pan", "lam": 0.1}).classifier_eps == 0.0   # the formula
    with pytest.raises(ConfigError, match="lam"):
        build_config(unit.config_cls, {"name": "pan"})
    with pytest.raises(ConfigError, match="lam"):
        unit.check(build_config(unit.config_cls, {"name": "pan", "lam": -0.1}))
