"""Self-PU's building blocks (Chen et al. 2020; released code VITA-Group/Self-PU): the
weighted nnPU risk, the selection schedule, the look-ahead re-weighting on a tiny linear
model, the calibration weights and the distillation terms, against naive loops and hand
computations."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from pubench.pu import risks
from pubench.pu import self_pu_terms as T
from tests.reference import naive_self_pu as naive

pytestmark = pytest.mark.usefixtures("one_thread")


def _batch(seed: int, n: int = 12, frac: float = 0.3):
    g = torch.Generator().manual_seed(seed)
    scores = 2 * torch.randn(n, generator=g, dtype=torch.float64)
    labeled = torch.rand(n, generator=g) < frac
    labeled[0], labeled[1] = True, False
    weights = torch.rand(n, generator=g, dtype=torch.float64)
    return scores, labeled, weights


# ------------------------------------------------------------------ weighted nnPU


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("prior", [0.2, 0.49])
def test_weighted_pu_terms_match_naive_loop(seed, prior):
    scores, labeled, weights = _batch(seed)
    got = T.weighted_pu_terms(scores, labeled, weights, prior)
    pos, neg = naive.weighted_pu_terms(scores.tolist(), labeled.tolist(), weights.tolist(), prior)
    assert float(got["positive"]) == pytest.approx(pos, abs=1e-12)
    assert float(got["negative"]) == pytest.approx(neg, abs=1e-12)


def test_weighted_pu_terms_special_cases():
    scores, labeled, _ = _batch(3)
    ones = torch.ones_like(scores)
    got, plain = T.weighted_pu_terms(scores, labeled, ones, 0.4), risks.pu_terms(scores, labeled, 0.4)
    assert torch.allclose(got["positive"], plain["positive"]) and torch.allclose(got["negative"], plain["negative"])
    zero = T.weighted_pu_terms(scores, labeled, torch.zeros_like(scores), 0.4)
    assert float(zero["positive"]) == 0.0 and float(zero["negative"]) == 0.0


def test_weighted_nnpu_objective_takes_the_defeat_step_below_minus_beta():
    labeled = torch.tensor([True, True, False, False])
    # positives scored very positive, unlabeled very negative: R_U^- - pi R_P^- < 0
    scores = torch.tensor([8.0, 8.0, -8.0, -8.0], dtype=torch.float64)
    t = T.weighted_pu_terms(scores, labeled, torch.ones(4, dtype=torch.float64), 0.5)
    assert float(t["negative"]) < 0
    obj, risk = T.weighted_nnpu_objective(scores, labeled, torch.ones(4, dtype=torch.float64), 0.5, "sigmoid", 0.0,
                                          0.5)
    assert float(obj) == pytest.approx(-0.5 * float(t["negative"]))
    assert float(risk) == pytest.approx(float(t["positive"]))
    obj, _ = T.weighted_nnpu_objective(scores, labeled, torch.ones(4, dtype=torch.float64), 0.5, "sigmoid", 1.0, 0.5)
    assert float(obj) == pytest.approx(float(t["positive"] + t["negative"]))


def test_entropy_matches_naive_and_is_log2_at_zero():
    z = torch.tensor([-30.0, -2.0, 0.0, 0.7, 30.0], dtype=torch.float64)
    got = T.entropy_per_example(z)
    for zi, gi in zip(z.tolist(), got.tolist()):
        if abs(zi) < 20:
            assert gi == pytest.approx(naive.entropy(zi), abs=1e-12)
    assert got[2].item() == pytest.approx(math.log(2))
    assert 0 <= got[0].item() < 1e-11 and 0 <= got[-1].item() < 1e-11


# ------------------------------------------------------------------ self-paced selection


def test_selection_schedule_of_the_released_code():
    epochs = [e for e in range(200) if T.is_selection_epoch(e, 10, 50, 10)]
    assert epochs == [10, 20, 30, 40]
    assert [T.self_paced_active(e, 10, 50) for e in (9, 10, 49, 50)] == [False, True, True, False]
    # floor(n_U (1 - 0.5) min(epoch / 100, 1) top), by hand
    assert T.confident_count(10000, 10, 100, 0.5, 0.4) == 200
    assert T.confident_count(10000, 40, 100, 0.5, 0.6) == 1200
    assert T.confident_count(10000, 150, 100, 0.5, 0.4) == 2000
    assert T.confident_count(7, 10, 100, 0.5, 0.4) == 0
    counts = [T.confident_count(49000, e, 100, 0.5, 0.6) for e in range(0, 130, 10)]
    assert counts == sorted(counts) and counts[-1] == counts[-3] == int(49000 * 0.5 * 1 * 0.6)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("count", [0, 1, 3])
def test_select_confident_matches_naive(seed, count):
    g = torch.Generator().manual_seed(seed)
    prob = torch.rand(15, generator=g).round(decimals=1)        # ties on purpose
    labeled = torch.rand(15, generator=g) < 0.3
    pos, neg = T.select_confident(prob, labeled, count)
    npos, nneg = naive.select_confident(prob.tolist(), labeled.tolist(), count)
    assert pos.tolist() == npos and neg.tolist() == nneg
    assert not labeled[pos].any() and not labeled[neg].any()
    assert set(pos.tolist()).isdisjoint(neg.tolist())


def test_select_confident_refuses_overlapping_sets():
    with pytest.raises(ValueError):
        T.select_confident(torch.rand(6), torch.zeros(6, dtype=torch.bool), 4)


def test_confident_set_loss_kinds():
    z = torch.tensor([2.0, -1.0, 0.5], dtype=torch.float64)
    target = torch.tensor([1, 0, 1])
    assert float(T.confident_set_loss(z, target, "entropy")) == pytest.approx(
        sum(naive.entropy(v) for v in z.tolist()) / 3)
    bce = [-math.log(naive.sigmoid(2.0)), -math.log(1 - naive.sigmoid(-1.0)), -math.log(naive.sigmoid(0.5))]
    assert float(T.confident_set_loss(z, target, "cross_entropy")) == pytest.approx(sum(bce) / 3)
    with pytest.raises(ValueError):
        T.confident_set_loss(z, target, "soft")


# ------------------------------------------------------------------ self-calibration


def _linear(a, b):
    lin = nn.Linear(len(a), 1).double()
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([a], dtype=torch.float64))
        lin.bias.fill_(b)
    return lin


def test_look_ahead_gradient_matches_hand_computation_on_a_linear_model():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 3, generator=g, dtype=torch.float64)
    x_meta = torch.randn(5, 3, generator=g, dtype=torch.float64)
    labeled = torch.tensor([True, False, True, False, False, False])
    a, b, prior, lr = [0.7, -0.4, 1.1], 0.2, 0.4, 0.5
    model = _linear(a, b)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    got = T.look_ahead_weight_gradient(model, x, labeled, x_meta, prior, "sigmoid", lr)
    closed = naive.linear_look_ahead_gradient(x.tolist(), labeled.tolist(), x_meta.tolist(), a, b, prior, lr)
    assert torch.allclose(got, torch.tensor(closed, dtype=torch.float64), atol=1e-12, rtol=1e-9)
    # the same from the explicit look-ahead step, by central differences in eps
    h = 1e-5
    for i in range(6):
        for k in range(2):
            plus = [[0.0, 0.0] for _ in range(6)]
            minus = [[0.0, 0.0] for _ in range(6)]
            plus[i][k], minus[i][k] = h, -h
            args = (x.tolist(), labeled.tolist(), x_meta.tolist(), a, b, prior, lr)
            fd = (naive.linear_look_ahead_meta_loss(plus, *args) - naive.linear_look_ahead_meta_loss(minus, *args)) / (
                2 * h)
            assert got[i, k].item() == pytest.approx(fd, abs=1e-9)
    # the model is left as it was
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert got.abs().sum() > 0


def test_look_ahead_leaves_batchnorm_statistics_alone():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1))
    x, x_meta = torch.randn(8, 3), torch.randn(8, 3)
    stats = model[1].running_mean.clone()
    grad = T.look_ahead_weight_gradient(model, x, torch.arange(8) < 2, x_meta, 0.4, "sigmoid", 0.1)
    assert grad.shape == (8, 2) and torch.isfinite(grad).all()
    assert torch.equal(model[1].running_mean, stats)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("budget", [0.0, 0.8, 2.5, 100.0])
def test_calibration_weights_match_the_row_by_row_loop(seed, budget):
    g = torch.Generator().manual_seed(seed)
    grad = torch.randn(14, 2, generator=g, dtype=torch.float64)
    grad[3] = torch.tensor([0.5, 0.5])          # both clamped to 0: nnPU weight only
    labeled = torch.rand(14, generator=g) < 0.3
    got = T.calibration_weights(grad, labeled, budget)
    want = torch.tensor(naive.calibration_weights(grad.tolist(), labeled.tolist(), budget), dtype=torch.float64)
    assert torch.allclose(got, want, atol=1e-12)
    assert torch.allclose(got.sum(dim=1), torch.ones(14, dtype=torch.float64))
    assert (got[labeled] == torch.tensor([1.0, 0.0], dtype=torch.float64)).all()
    assert got[3].tolist() == [1.0, 0.0]


def test_calibration_weights_budget_extremes():
    grad = -torch.tensor([[1.0, 3.0], [2.0, 2.0], [0.0, 1.0]], dtype=torch.float64)
    labeled = torch.zeros(3, dtype=torch.bool)
    none = T.calibration_weights(grad, labeled, 0.0)
    assert none[:, 1].tolist() == [0.0, 0.0, 0.0]
    every = T.calibration_weights(grad, labeled, 10.0)
    assert every[:, 1].tolist() == pytest.approx([0.75, 0.5, 1.0 / (1.0 + 1e-10)])
    # 0.75 spent after the first row: the second is kept, the third is not (1.25 >= 1)
    assert T.calibration_weights(grad, labeled, 1.0)[:, 1].tolist() == pytest.approx([0.75, 0.5, 0.0])


def test_calibrated_loss_adds_the_weighted_entropy():
    scores, labeled, _ = _batch(4)
    w = torch.stack([torch.full_like(scores, 0.6), torch.full_like(scores, 0.4)], dim=1)
    obj, _ = T.calibrated_loss(scores, labeled, w, 0.4, "sigmoid", 0.0, 1.0)
    nnpu, _ = T.weighted_nnpu_objective(scores, labeled, w[:, 0], 0.4, "sigmoid", 0.0, 1.0)
    ent = sum(naive.entropy(z) for z in scores.tolist()) / len(scores)
    assert float(obj) == pytest.approx(float(nnpu) + 0.4 * ent, abs=1e-12)


# ------------------------------------------------------------------ self-distillation


def test_mutual_distillation_is_gated_by_alpha_times_the_loss():
    z, peer = torch.tensor([0.0, 1.0]), torch.tensor([1.0, 1.0])
    mse = (naive.sigmoid(0.0) - naive.sigmoid(1.0)) ** 2 / 2
    term, used = T.mutual_distillation(z, peer, torch.tensor(1.0), 0.1)
    assert used and float(term) == pytest.approx(mse)
    term, used = T.mutual_distillation(z, peer, torch.tensor(mse / 0.1 * 0.99), 0.1)
    assert not used and float(term) == 0.0
    peer.requires_grad_(True)
    z.requires_grad_(True)
    term, _ = T.mutual_distillation(z, peer, torch.tensor(1.0), 0.1)
    term.backward()
    assert peer.grad is None and z.grad is not None


def test_consistency_loss_ramp_and_ema():
    s, t = torch.tensor([0.3, -1.0]), torch.tensor([0.3, 2.0])
    assert float(T.consistency_loss(s, t)) == pytest.approx((naive.sigmoid(-1.0) - naive.sigmoid(2.0)) ** 2 / 2)
    assert T.consistency_ramp(-20, 400) == pytest.approx(math.exp(-5))
    assert T.consistency_ramp(400, 400) == 1.0 and T.consistency_ramp(3, 0) == 1.0
    assert T.consistency_ramp(200, 400) == pytest.approx(math.exp(-5 * 0.25))
    teacher, student = nn.Linear(2, 1), nn.Linear(2, 1)
    w_t, w_s = teacher.weight.detach().clone(), student.weight.detach().clone()
    T.ema_update(teacher, student, 0.999, 0)          # a = min(0, 0.999): the student itself
    assert torch.equal(teacher.weight, w_s)
    teacher.weight.data.copy_(w_t)
    T.ema_update(teacher, student, 0.999, 3)          # a = min(0.75, 0.999)
    assert torch.allclose(teacher.weight, 0.75 * w_t + 0.25 * w_s)
    teacher.weight.data.copy_(w_t)
    T.ema_update(teacher, student, 0.5, 3)            # a = min(0.75, 0.5)
    assert torch.allclose(teacher.weight, 0.5 * w_t + 0.5 * w_s)
