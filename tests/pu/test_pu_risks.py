"""PU risks vs naive loops from the equations (float64, 1e-10) and their special cases."""

from __future__ import annotations

import math

import pytest
import torch

from pubench.pu import risks
from tests.reference import naive_risks as naive

TOL = 1e-10


def _case(seed: int, n: int = 40, frac: float = 0.3, scale: float = 2.0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(n, generator=g, dtype=torch.float64) * scale
    labeled = torch.rand(n, generator=g) < frac
    return scores, labeled


@pytest.mark.parametrize("loss", ["sigmoid", "logistic"])
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("prior", [0.0, 0.25, 0.5, 0.9])
def test_risks_match_naive(loss, seed, prior):
    s, lab = _case(seed)
    assert abs(float(risks.upu_risk(s, lab, prior, loss)) - naive.upu(s, lab, prior, loss)) < TOL
    assert abs(float(risks.nnpu_risk(s, lab, prior, loss)) - naive.nnpu(s, lab, prior, loss)) < TOL
    assert abs(float(risks.pvu_risk(s, lab, prior, loss)) - naive.pvu(s, lab, prior, loss)) < TOL
    assert abs(float(risks.pn_risk(s, lab, loss)) - naive.pn(s, lab, loss)) < TOL


def test_scores_column_vector_accepted():
    s, lab = _case(0)
    assert float(risks.upu_risk(s[:, None], lab, 0.3)) == pytest.approx(float(risks.upu_risk(s, lab, 0.3)), abs=0)


def test_nnpu_equals_upu_when_negative_part_nonnegative():
    # scores near 0 on P and strongly positive on U make R_U^- large: r >= 0
    for seed in range(10):
        s, lab = _case(seed)
        neg = naive.negative_part(s, lab, 0.4)
        n, u = float(risks.nnpu_risk(s, lab, 0.4)), float(risks.upu_risk(s, lab, 0.4))
        if neg >= 0:
            assert n == pytest.approx(u, abs=TOL)
        else:
            assert n > u
    s = torch.tensor([0.0, 0.0, 5.0, 5.0, 5.0], dtype=torch.float64)
    lab = torch.tensor([True, True, False, False, False])
    assert naive.negative_part(s, lab, 0.4) > 0
    assert float(risks.nnpu_risk(s, lab, 0.4)) == pytest.approx(float(risks.upu_risk(s, lab, 0.4)), abs=TOL)


def test_nnpu_clips_negative_estimate():
    # U all confidently negative, P scored negative too: R_U^- ~ 0 < pi R_P^-
    s = torch.tensor([-5.0, -5.0, -9.0, -9.0, -9.0], dtype=torch.float64)
    lab = torch.tensor([True, True, False, False, False])
    assert naive.negative_part(s, lab, 0.5) < 0
    assert float(risks.upu_risk(s, lab, 0.5)) < float(risks.nnpu_risk(s, lab, 0.5))
    assert float(risks.nnpu_risk(s, lab, 0.5)) == pytest.approx(0.5 * naive.sigmoid_loss(-5.0, 1), abs=TOL)


@pytest.mark.parametrize("loss", ["sigmoid", "logistic"])
def test_upu_with_zero_prior_is_pn_on_unlabeled_as_negative(loss):
    s, lab = _case(3)
    # pi = 0: the P terms vanish, the risk is the mean loss of U labeled -1
    u = ~lab
    pn_u = float(risks.pn_risk(s[u], torch.zeros(int(u.sum()), dtype=torch.long), loss))
    assert float(risks.upu_risk(s, lab, 0.0, loss)) == pytest.approx(pn_u, abs=TOL)
    # and with no labeled sample at all, it is the PN risk of everything as negative
    none = torch.zeros_like(lab)
    assert float(risks.upu_risk(s, none, 0.0, loss)) == pytest.approx(
        float(risks.pn_risk(s, torch.zeros_like(s, dtype=torch.long), loss)), abs=TOL)


def test_empty_sets_contribute_zero():
    s = torch.tensor([0.3, -0.2], dtype=torch.float64)
    all_lab = torch.tensor([True, True])
    # no unlabeled: R_U^- = 0
    expect = 0.5 * naive._expect([naive.sigmoid_loss(z, 1) for z in s.tolist()]) \
        - 0.5 * naive._expect([naive.sigmoid_loss(z, -1) for z in s.tolist()])
    assert float(risks.upu_risk(s, all_lab, 0.5)) == pytest.approx(expect, abs=TOL)


def _linear_case(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(30, 4, generator=g, dtype=torch.float64)
    lab = torch.zeros(30, dtype=torch.bool)
    lab[:8] = True
    return x, lab


def _numeric_grad(f, w, eps=1e-6):
    grad = torch.zeros_like(w)
    for k in range(w.numel()):
        e = torch.zeros_like(w)
        e[k] = eps
        grad[k] = (f(w + e) - f(w - e)) / (2 * eps)
    return grad


def test_nnpu_defeat_step_gradient():
    x, lab = _linear_case(0)
    prior, gamma = 0.6, 0.7
    # choose w so that U is scored very negative and P fairly negative: r < 0
    w = torch.tensor([-3.0, 0.5, 0.0, 0.0], dtype=torch.float64)
    x[:8, 0] = 0.3
    x[8:, 0] = 3.0
    scores = x @ w
    r = naive.negative_part(scores.tolist(), lab.tolist(), prior)
    assert r < 0
    wv = w.clone().requires_grad_(True)
    obj, risk, defeated = risks.nnpu_objective(x @ wv, lab, prior, beta=0.0, gamma=gamma)
    assert defeated
    assert float(risk) == pytest.approx(naive.nnpu(scores.tolist(), lab.tolist(), prior), abs=TOL)
    obj.backward()
    expected = -gamma * _numeric_grad(lambda v: naive.negative_part((x @ v).tolist(), lab.tolist(), prior), w)
    assert torch.allclose(wv.grad, expected, atol=1e-8)
    # with a large beta the same point is not defeated: the step is grad of the nn risk
    wv.grad = None
    obj, _, defeated = risks.nnpu_objective(x @ wv, lab, prior, beta=10.0, gamma=gamma)
    assert not defeated
    obj.backward()
    expected = _numeric_grad(lambda v: naive.nnpu((x @ v).tolist(), lab.tolist(), prior), w)
    assert torch.allclose(wv.grad, expected, atol=1e-8)


def test_nnpu_objective_not_defeated_is_upu_gradient():
    x, lab = _linear_case(1)
    w = torch.tensor([1.0, -0.5, 0.2, 0.1], dtype=torch.float64)
    x[8:, 0] += 4.0  # U scored high: r > 0
    assert naive.negative_part((x @ w).tolist(), lab.tolist(), 0.3) > 0
    wv = w.clone().requires_grad_(True)
    obj, _, defeated = risks.nnpu_objective(x @ wv, lab, 0.3)
    assert not defeated
    obj.backward()
    expected = _numeric_grad(lambda v: naive.upu((x @ v).tolist(), lab.tolist(), 0.3), w)
    assert torch.allclose(wv.grad, expected, atol=1e-8)


def test_argument_checks():
    s, lab = _case(0)
    with pytest.raises(ValueError, match="prior"):
        risks.upu_risk(s, lab, 1.5)
    with pytest.raises(ValueError, match="surrogate"):
        risks.upu_risk(s, lab, 0.5, loss="hinge2")
    with pytest.raises(ValueError, match="shape"):
        risks.upu_risk(s, lab[:-1], 0.5)
    with pytest.raises(ValueError, match="beta"):
        risks.nnpu_objective(s, lab, 0.5, beta=-1.0)


# ------------------------------------------------------------------ PvU (cost-sensitive P vs U)
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("prior", [0.0, 0.3, 0.7])
def test_pvu_with_sigmoid_loss_is_upu_plus_prior(seed, prior):
    # l(z, +1) + l(z, -1) = 1: 2 pi R_P^+ + R_U^- = pi R_P^+ + R_U^- - pi (1 - R_P^+) + pi
    s, lab = _case(seed)
    assert float(risks.pvu_risk(s, lab, prior, "sigmoid")) == pytest.approx(
        float(risks.upu_risk(s, lab, prior, "sigmoid")) + prior, abs=TOL)


def test_pvu_default_surrogate_is_logistic():
    s, lab = _case(2)
    assert float(risks.pvu_risk(s, lab, 0.4)) == pytest.approx(naive.pvu(s, lab, 0.4, "logistic"), abs=TOL)


@pytest.mark.parametrize("loss", ["sigmoid", "logistic"])
def test_pvu_prefers_perfect_classifier_to_all_negative(loss):
    # labeled positives; U = 30 positives + 70 negatives (pi = 0.3); scores of magnitude m
    m = 6.0
    y_u = torch.cat([torch.ones(30), torch.zeros(70)])
    lab = torch.cat([torch.ones(20, dtype=torch.bool), torch.zeros(100, dtype=torch.bool)])
    y = torch.cat([torch.ones(20), y_u])
    perfect = torch.where(y == 1, m, -m).double()
    negative = torch.full_like(perfect, -m)
    r_perfect = naive.pvu(perfect, lab, 0.3, loss)
    r_negative = naive.pvu(negative, lab, 0.3, loss)
    assert float(risks.pvu_risk(perfect, lab, 0.3, loss)) == pytest.approx(r_perfect, abs=TOL)
    assert r_perfect < r_negative - 0.2
    # the uncorrected pi R_P^+ + R_U^- (the old definition) cannot tell them apart
    ell = naive.LOSSES[loss]

    def uncorrected(s):
        p, u = naive._parts(s, lab)
        return 0.3 * naive._expect([ell(z, 1) for z in p]) + naive._expect([ell(z, -1) for z in u])

    assert uncorrected(perfect) == pytest.approx(uncorrected(negative), rel=0.05)


def _gaussians(seed: int, n: int = 1000, pi: float = 0.4, n_labeled: int = 100):
    """Two separable Gaussians in 2-d (means +-(2, 2), unit variance); a single training set
    with ``n_labeled`` positives labeled; returns x, y, labeled, prior of the unlabeled part."""
    g = torch.Generator().manual_seed(seed)
    y = (torch.rand(n, generator=g) < pi).long()
    x = torch.randn(n, 2, generator=g) + (2.0 * y - 1.0)[:, None] * 2.0
    pos = torch.nonzero(y == 1).squeeze(1)
    lab = torch.zeros(n, dtype=torch.bool)
    lab[pos[torch.randperm(len(pos), generator=g)[:n_labeled]]] = True
    return x, y, lab, float((y[~lab] == 1).float().mean())


@pytest.mark.parametrize("seed", range(3))
def test_pvu_learns_a_separable_problem(seed, one_thread):
    x, _, lab, prior = _gaussians(seed)
    x_test, y_test, _, _ = _gaussians(100 + seed)
    w = torch.zeros(2, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        risks.pvu_risk(x @ w + b, lab, prior).backward()
        opt.step()
    pred = (x_test @ w.detach() + b.detach() > 0).long()
    acc, positive_rate = float((pred == y_test).float().mean()), float(pred.float().mean())
    # all-negative would score 1 - 0.4 = 60%: PvU finds the boundary, biased towards negative
    # (a linear logit cannot fit log(2 pi p_P / p_U) exactly)
    assert acc > 0.88, acc
    assert 0.25 < positive_rate < 0.5, positive_rate


# ------------------------------------------------------------------ vPU losses
def _log_phi(seed: int, n: int):
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.logsigmoid(torch.randn(n, generator=g, dtype=torch.float64) * 3)


@pytest.mark.parametrize("seed", range(5))
def test_vpu_variational_loss_matches_naive(seed):
    lx, lp = _log_phi(seed, 37), _log_phi(seed + 50, 11)
    assert float(risks.vpu_variational_loss(lx, lp)) == pytest.approx(naive.vpu_variational(lx, lp), abs=TOL)
    # invariant to scaling Phi (a constant added to log Phi)
    assert float(risks.vpu_variational_loss(lx - 2.5, lp - 2.5)) == pytest.approx(
        float(risks.vpu_variational_loss(lx, lp)), abs=TOL)
    # stable where exp underflows
    assert torch.isfinite(risks.vpu_variational_loss(lx - 800.0, lp - 800.0))


def test_vpu_variational_loss_special_cases():
    # Phi constant: log c - log c = 0
    c = torch.full((5,), math.log(0.3), dtype=torch.float64)
    assert float(risks.vpu_variational_loss(c, c[:2])) == pytest.approx(0.0, abs=TOL)
    # x sample = the positive sample: log mean Phi >= mean log Phi (Jensen), equal iff constant
    lp = _log_phi(3, 20)
    assert float(risks.vpu_variational_loss(lp, lp)) > 0
    with pytest.raises(ValueError, match="non-empty"):
        risks.vpu_variational_loss(lp[:0], lp)


@pytest.mark.parametrize("mu", [0.0, 0.2, 0.5, 1.0])
def test_vpu_mixup_and_regularizer_match_naive(mu):
    g = torch.Generator().manual_seed(7)
    x_u, x_p = torch.randn(6, 3, 2, 2, generator=g, dtype=torch.float64), torch.randn(6, 3, 2, 2, generator=g,
                                                                                      dtype=torch.float64)
    phi_u = _log_phi(8, 6).exp()
    x_mix, target = risks.vpu_mixup(x_u, x_p, phi_u, mu)
    for i in range(6):
        assert torch.allclose(x_mix[i], mu * x_u[i] + (1 - mu) * x_p[i], atol=TOL)
        assert float(target[i]) == pytest.approx(mu * float(phi_u[i]) + (1 - mu), abs=TOL)
    log_phi_mixed = _log_phi(9, 6)
    assert float(risks.vpu_mixup_regularizer(log_phi_mixed, target)) == pytest.approx(
        naive.vpu_mixup_reg(log_phi_mixed, phi_u, mu), abs=TOL)
    if mu == 0.0:  # a pure positive: target 1, the penalty is mean (log Phi)^2
        assert float(risks.vpu_mixup_regularizer(log_phi_mixed, target)) == pytest.approx(
            float((log_phi_mixed ** 2).mean()), abs=TOL)
    if mu == 1.0:  # a pure data example: zero penalty where the network is consistent with itself
        assert float(risks.vpu_mixup_regularizer(phi_u.log(), target)) == pytest.approx(0.0, abs=TOL)
    with pytest.raises(ValueError, match="mu"):
        risks.vpu_mixup(x_u, x_p, phi_u, 1.5)
