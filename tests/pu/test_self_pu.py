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
from pubench.train.optim import optimizer_config, schedule_config
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
    # floor(n_U pace min(epoch / 100, 1)), by hand; pace = (1 - 0.5) top of the released code
    assert T.confident_count(10000, 10, 100, 0.2) == 200
    assert T.confident_count(10000, 40, 100, 0.3) == 1200
    assert T.confident_count(10000, 150, 100, 0.2) == 2000
    assert T.confident_count(7, 10, 100, 0.2) == 0
    counts = [T.confident_count(49000, e, 100, 0.3) for e in range(0, 130, 10)]
    assert counts == sorted(counts) and counts[-1] == counts[-3] == int(49000 * 0.3)
    for n, e in [(49000, 10), (49000, 40), (10000, 30), (12345, 20)]:   # the released code's floor
        assert T.confident_count(n, e, 100, 0.3) == int(n * (1 - 0.5) * min(e / 100, 1) * 0.6)
    with pytest.raises(ValueError):
        T.confident_count(100, 10, 100, 0.6)


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


# ------------------------------------------------------------------ the method


SMALL = {"pace1": 0.2, "pace2": 0.3, "pace_ramp_epochs": 2, "self_paced_start": 1, "self_paced_stop": 3,
         "self_paced_every": 1, "confident_loss": "entropy", "meta_lr": 0.001, "entropy_budget": 0.0625,
         "ema_start": 2, "ema_decay": 0.999, "consistency": 0.3, "consistency_offset": 0, "consistency_rampup": 2,
         "mutual_alpha": 0.1, "reported_network": "teacher_1", "loss": "sigmoid", "beta": 0.0, "gamma": 1.0}


def _run_small(epochs: int = 4, ctx=None, **over):
    from pubench.pu import PU_METHODS
    from pubench.train.context import PLAIN
    from pubench.train.loop import TrainConfig
    from tests.project.test_contracts import TinyEncoder, pu_data

    unit = PU_METHODS.get("self_pu")
    cfg = unit.config({"name": "self_pu", **SMALL, **over}, "pu_method")
    train = TrainConfig(epochs=epochs, batch_size=16, optimizer=optimizer_config({"name": "adam", "lr": 0.01, "weight_decay": 5e-3}),
                        schedule=schedule_config({"name": "cosine"}))
    data = pu_data()
    torch.manual_seed(0)
    return unit.run(cfg, TinyEncoder(2), train, data, seed=7, ctx=ctx or PLAIN), data


def test_self_pu_trains_selects_on_schedule_and_reports_the_last_epoch():
    (metrics, info), data = _run_small()
    n_u = int((data.observed == 0).sum())
    # selections after epochs 1 and 2 (start 1, stop 3, every 1), networks 1 then 2
    want = [2 * T.confident_count(n_u, e, 2, pace) for e in (1, 2) for pace in (0.2, 0.3)]
    assert info["selected_per_selection"] == want and want[0] > 0
    assert all(0 <= a <= 1 for a in info["selection_accuracy"])
    assert set(info["last_epoch_acc"]) == {"student_1", "student_2", "teacher_1", "teacher_2"}
    assert metrics["acc"] == info["last_epoch_acc"]["teacher_1"]
    assert all(math.isfinite(v) for v in metrics.values())
    assert len(info["student_1_risk_per_epoch"]) == 4 and info["model_selection"] == "the last epoch's model"


def test_self_pu_resumes_bit_for_bit_after_the_confident_sets_exist(tmp_path, monkeypatch):
    from pubench.errors import JobInterrupted
    import signal

    from pubench.train import checkpoint
    from pubench.train.context import JobContext
    from pubench.train.loop import Progress

    whole = _run_small()[0]
    original = Progress.epoch_end

    def epoch_end(self, trainer, stats, epochs):
        original(self, trainer, stats, epochs)
        if stats.epoch == 2:         # confident sets selected twice, mean teachers on
            assert trainer.ctx.session.request_stop(signal.SIGTERM)

    with monkeypatch.context() as m:
        m.setattr(Progress, "epoch_end", epoch_end)
        with pytest.raises(JobInterrupted):
            _run_small(ctx=JobContext(session=checkpoint.Session(tmp_path, 0)))
    session = checkpoint.Session(tmp_path, 0)
    resumed = _run_small(ctx=JobContext(session=session))[0]
    assert session.resumed and session.resumed[0]["epoch"] == 3
    assert whole[0] == resumed[0] and str(whole[1]) == str(resumed[1])


def test_self_pu_refuses_bad_settings():
    from pubench.pu import PU_METHODS
    from pubench.utils.config import ConfigError

    unit = PU_METHODS.get("self_pu")
    for bad in ({"pace1": 0.7}, {"confident_loss": "soft"}, {"reported_network": "best"},
                {"self_paced_stop": 0}, {"ema_decay": 1.5}):
        with pytest.raises(ConfigError):
            unit.check(unit.config({"name": "self_pu", **SMALL, **bad}, "pu_method"))


def test_noisy_order_interleaves_one_positive_with_its_share_of_unlabeled():
    from pubench.pu.self_pu import noisy_order

    pos, unl = torch.tensor([100, 101, 102]), torch.arange(11)
    order = noisy_order(pos, unl, torch.Generator().manual_seed(0))
    assert len(order) == 3 * (1 + 11 // 3)
    blocks = order.reshape(3, 4)
    assert sorted(blocks[:, 0].tolist()) == [100, 101, 102]
    assert set(blocks[:, 1:].reshape(-1).tolist()) < set(range(11)) and len(set(blocks[:, 1:].reshape(-1).tolist())) == 9


def test_fresh_copy_redraws_weights_and_leaves_the_global_rng():
    from pubench.pu.self_pu import fresh_copy

    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    state = torch.random.get_rng_state()
    a, b = fresh_copy(net, 5), fresh_copy(net, 5)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(a[0].weight, b[0].weight) and not torch.equal(a[0].weight, net[0].weight)


def test_one_optimizer_over_both_students_equals_one_each():
    torch.manual_seed(0)
    nets = [nn.Linear(3, 1), nn.Linear(3, 1)]
    twins = [copy_module(n) for n in nets]
    joint = torch.optim.Adam(nn.ModuleList(nets).parameters(), lr=0.1, weight_decay=5e-3)
    apart = [torch.optim.Adam(t.parameters(), lr=0.1, weight_decay=5e-3) for t in twins]
    x = torch.randn(8, 3)
    for k in (0, 1, 1, 0, 0, 1):
        joint.zero_grad(set_to_none=True)
        nets[k](x).pow(2).mean().backward()
        joint.step()
        apart[k].zero_grad(set_to_none=True)
        twins[k](x).pow(2).mean().backward()
        apart[k].step()
    for n, t in zip(nets, twins):
        assert all(torch.equal(p, q) for p, q in zip(n.parameters(), t.parameters()))


def copy_module(m):
    import copy

    return copy.deepcopy(m)
