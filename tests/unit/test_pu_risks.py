"""PU risks vs naive loops from the equations (float64, 1e-10) and their special cases."""

from __future__ import annotations

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
