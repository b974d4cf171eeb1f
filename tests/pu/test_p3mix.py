"""P3Mix-C / P3Mix-E (Li et al. 2022): the objective against a naive loop, the heuristic
partner selection on hand-built points, the mean teacher, and training end to end."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from pubench.pu import PU_METHODS
from pubench.pu.p3mix import (boundary_pool, corrected_labels, ema_decay_at, ema_update, marginal_pseudo_negatives,
                              mixup_lambda, p3mix_loss, pu_batches, select_partners)
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError, build_config
from tests.reference import naive_mixup_pu as naive
from tests.pu.test_vpu import RecordingEncoder, _data

pytestmark = pytest.mark.usefixtures("one_thread")

BASE = {"alpha": 1.0, "gamma": 0.6, "top_k": 10, "start_hmix": 1, "positive_weight": 1.0, "unlabeled_weight": 1.0,
        "entropy_weight": 0.1}
ELR = {"elr_weight": 3.0, "ema_decay": 0.999, "ema_start": 0}


# ------------------------------------------------------------------ the objective
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("with_teacher", [False, True])
def test_p3mix_loss_matches_the_naive_loop(seed, with_teacher):
    g = torch.Generator().manual_seed(seed)
    n = 11
    logits = torch.randn(n, generator=g, dtype=torch.float64) * 3
    targets = torch.rand(n, generator=g, dtype=torch.float64)
    labeled = torch.rand(n, generator=g) < 0.4
    teacher = torch.rand(n, generator=g, dtype=torch.float64) if with_teacher else None
    weights = (0.7, 1.3, 0.25)
    got = p3mix_loss(logits, targets, labeled, *weights, teacher=teacher, elr_weight=2.0)
    want = naive.p3mix_loss(logits.tolist(), targets.tolist(), labeled.tolist(), *weights,
                            teacher=None if teacher is None else teacher.tolist(), w_e=2.0)
    assert float(got) == pytest.approx(want, rel=1e-10)


def test_p3mix_loss_special_cases():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(8, generator=g, dtype=torch.float64)
    y = (torch.rand(8, generator=g) < 0.5).double()
    labeled = torch.tensor([True] * 3 + [False] * 5)
    # hard labels, unit weights on both parts of equal size, no entropy: the mean BCE
    half = torch.tensor([True] * 4 + [False] * 4)
    bce = nn.functional.binary_cross_entropy_with_logits(logits, y)
    assert float(p3mix_loss(logits, y, half, 1.0, 1.0, 0.0)) == pytest.approx(2 * float(bce), rel=1e-9)
    # a batch of labeled positives only: the unlabeled part adds nothing
    only_p = torch.ones(8, dtype=torch.bool)
    assert float(p3mix_loss(logits, y, only_p, 1.0, 5.0, 0.0)) == pytest.approx(float(bce), rel=1e-9)
    # elr_weight 0 equals no teacher; the entropy term is CE(p, p)
    t = torch.rand(8, generator=g, dtype=torch.float64)
    assert float(p3mix_loss(logits, y, labeled, 1.0, 1.0, 0.1, teacher=t, elr_weight=0.0)) == pytest.approx(
        float(p3mix_loss(logits, y, labeled, 1.0, 1.0, 0.1)), rel=1e-12)
    p = torch.sigmoid(logits)
    assert float(p3mix_loss(logits, p, only_p, 0.0, 0.0, 1.0)) == pytest.approx(
        float(p3mix_loss(logits, p, only_p, 1.0, 0.0, 0.0)), rel=1e-9)
    # the clamp keeps confident mistakes finite: -log(1e-4)
    big = torch.tensor([40.0], dtype=torch.float64)
    assert float(p3mix_loss(big, torch.zeros(1, dtype=torch.float64), torch.ones(1, dtype=torch.bool), 1, 1, 0)
                 ) == pytest.approx(-np.log(1e-4), rel=1e-6)
    # ELR pulls towards the teacher: its term falls as the prediction moves towards t = 1
    lo, hi = torch.tensor([0.0], dtype=torch.float64), torch.tensor([3.0], dtype=torch.float64)
    one = torch.ones(1, dtype=torch.float64)
    elr = [float(p3mix_loss(z, one, torch.ones(1, dtype=torch.bool), 0, 0, 0, teacher=one, elr_weight=1.0))
           for z in (lo, hi)]
    assert elr[1] < elr[0]


def test_loss_gradient_flows_only_through_the_logits():
    logits = torch.randn(6, dtype=torch.float64, requires_grad=True)
    loss = p3mix_loss(logits, torch.rand(6, dtype=torch.float64), torch.tensor([1, 1, 0, 0, 0, 0]).bool(), 1, 1, 0.1,
                      teacher=torch.rand(6, dtype=torch.float64), elr_weight=3.0)
    loss.backward()
    assert torch.isfinite(logits.grad).all() and logits.grad.abs().sum() > 0


# ------------------------------------------------------------------ partner selection
def test_boundary_pool_takes_the_most_uncertain_positives():
    logits = torch.tensor([5.0, -0.1, 3.0, 0.05, -4.0, 0.5, 0.2, -0.2])
    # |logit| ranks the entropy: 0.05, then the tie 0.1 / ..., ties keep the lower index
    assert boundary_pool(logits, 3).tolist() == [3, 1, 6]
    assert boundary_pool(logits, 4).tolist() == [3, 1, 6, 7]
    assert boundary_pool(logits, 100).tolist() == naive.boundary_pool(logits.tolist(), 100)
    g = torch.Generator().manual_seed(1)
    z = torch.randn(30, generator=g)
    assert boundary_pool(z, 7).tolist() == naive.boundary_pool(z.tolist(), 7)


def test_marginal_pseudo_negatives_and_corrected_labels():
    prob = torch.tensor([0.95, 0.55, 0.45, 0.61, 0.60, 0.40, 0.39, 0.50, 0.10], dtype=torch.float64)
    labeled = torch.tensor([True, True, False, False, False, False, False, False, False])
    # unlabeled strictly inside (0.4, 0.6); labeled positives never are
    assert marginal_pseudo_negatives(prob, labeled, 0.6).tolist() == [
        False, False, True, False, False, False, False, True, False]
    assert marginal_pseudo_negatives(prob, labeled, 0.6).tolist() == naive.marginal(prob.tolist(), labeled.tolist(),
                                                                                   0.6)
    # P3Mix-C: unlabeled with p >= gamma become positive
    assert corrected_labels(prob, labeled, 0.6).tolist() == [1, 1, 0, 1, 1, 0, 0, 0, 0]
    assert corrected_labels(prob, labeled, 0.6).tolist() == naive.corrected(prob.tolist(), labeled.tolist(), 0.6)
    # gamma = 1: nothing is corrected, every uncertain-enough unlabeled example is marginal
    assert corrected_labels(prob, labeled, 1.0).tolist() == [1, 1, 0, 0, 0, 0, 0, 0, 0]
    assert marginal_pseudo_negatives(prob, labeled, 1.0).sum() == 7


def test_select_partners_sends_marginal_examples_to_the_pool():
    marginal = torch.tensor([False, True, False, True, True, False])
    n, pool = 6, 3
    seen_pool, seen_batch = set(), set()
    for s in range(50):
        partner = select_partners(marginal, pool, torch.Generator().manual_seed(s))
        assert ((partner >= n) == marginal).all()       # marginal -> pool, others -> the batch
        assert (partner < n + pool).all() and (partner >= 0).all()
        seen_pool |= set((partner[marginal] - n).tolist())
        seen_batch |= set(partner[~marginal].tolist())
    assert seen_pool == {0, 1, 2} and seen_batch == set(range(n))   # uniform draws reach every candidate
    # an empty pool: everyone takes a batch partner
    assert (select_partners(marginal, 0, torch.Generator().manual_seed(0)) < n).all()


def test_mixup_lambda_stays_on_the_first_example_side():
    rng = np.random.default_rng(0)
    lams = [mixup_lambda(rng, 1.0) for _ in range(200)]
    assert min(lams) >= 0.5 and max(lams) <= 1.0 and np.mean(lams) == pytest.approx(0.75, abs=0.05)


def test_pu_batches_pass_over_unlabeled_once_and_cycle_the_positives():
    labeled = torch.arange(0, 5)
    unlabeled = torch.arange(5, 28)
    out = pu_batches(labeled, unlabeled, 4, torch.Generator().manual_seed(0))
    assert sorted(torch.cat([u for _, u in out]).tolist()) == unlabeled.tolist()
    assert all(len(p) == len(u) for p, u in out)
    counts = torch.bincount(torch.cat([p for p, _ in out]), minlength=5)
    assert counts.max() - counts.min() <= 1        # permutations laid end to end
    assert len(pu_batches(labeled, unlabeled, 4, torch.Generator().manual_seed(0), min_size=4)) == 5


# ------------------------------------------------------------------ mean teacher
def test_mean_teacher_decay_and_update():
    assert ema_decay_at(3, 3, 0.999) == 0.0                      # first update: a copy of the student
    assert ema_decay_at(4, 3, 0.999) == pytest.approx(0.5)
    assert ema_decay_at(10_000, 0, 0.999) == 0.999
    teacher, student = nn.Linear(2, 1), nn.Linear(2, 1)
    t0 = [p.detach().clone() for p in teacher.parameters()]
    ema_update(teacher, student, 0.25)
    for t, before, s in zip(teacher.parameters(), t0, student.parameters()):
        assert torch.allclose(t, 0.25 * before + 0.75 * s)


# ------------------------------------------------------------------ training
def _train(epochs: int = 6):
    return build_config(TrainConfig, {"epochs": epochs, "batch_size": 32, "optimizer": {"name": "adam", "lr": 0.01}})


def _run(name, data=None, epochs=6, **cfg):
    unit = PU_METHODS.get(name)
    block = {"name": name, **BASE, **(ELR if name == "p3mix_e" else {}), **cfg}
    config = build_config(unit.config_cls, block)
    encoder = RecordingEncoder()
    metrics, info = unit.run(config, encoder, _train(epochs), data or _data(n=400), seed=0, ctx=PLAIN)
    return metrics, info, encoder


@pytest.mark.parametrize("name", ["p3mix_c", "p3mix_e"])
def test_p3mix_learns_and_is_deterministic(name):
    data = _data(n=400)
    m, info, _ = _run(name, data=data)
    assert m["acc"] > 80 and m["auc"] > 90, m
    assert info["prior_used"] is None and info["model_selection"] == "the last epoch's model"
    m2, info2, _ = _run(name, data=data)
    assert m == m2 and info["loss_per_epoch"] == info2["loss_per_epoch"]


def test_heuristic_mixup_and_correction_start_at_start_hmix():
    _, info, encoder = _run("p3mix_c", epochs=3, start_hmix=2)
    assert info["marginal_fraction_per_epoch"][:2] == [0.0, 0.0]
    assert info["corrected_fraction_per_epoch"][:2] == [0.0, 0.0]
    # before start_hmix a step sees its batch (the prediction), then the batch mixed with a
    # permutation of itself: a mix that keeps the batch's sum
    raw, mixed = encoder.train_inputs[0], encoder.train_inputs[1]
    assert raw.shape == mixed.shape and not torch.allclose(raw, mixed)
    assert torch.allclose(raw.sum(0), mixed.sum(0), atol=1e-4)
    _, info, _ = _run("p3mix_c", epochs=1, start_hmix=0, gamma=1.0)
    assert info["marginal_fraction_per_epoch"][0] > 0     # an untrained network is uncertain on U
    assert info["corrected_fraction_per_epoch"][0] == 0   # gamma 1: no unlabeled example is that sure
    _, info_e, _ = _run("p3mix_e", epochs=2, start_hmix=0)
    assert info_e["corrected_fraction_per_epoch"] == [0.0, 0.0]   # P3Mix-E never relabels


def test_elr_weight_changes_training():
    a, _, _ = _run("p3mix_e", epochs=3, elr_weight=0.0)
    b, _, _ = _run("p3mix_e", epochs=3, elr_weight=3.0)
    assert a != b


def test_config_checks():
    unit = PU_METHODS.get("p3mix_c")
    for bad, key in [({"gamma": 0.5}, "gamma"), ({"alpha": 0.0}, "alpha"), ({"top_k": 0}, "top_k"),
                     ({"entropy_weight": -1.0}, "entropy_weight")]:
        with pytest.raises(ConfigError, match=key):
            unit.check(build_config(unit.config_cls, {"name": "p3mix_c", **BASE, **bad}))
    e = PU_METHODS.get("p3mix_e")
    with pytest.raises(ConfigError, match="ema_decay"):
        e.check(build_config(e.config_cls, {"name": "p3mix_e", **BASE, **ELR, "ema_decay": 1.5}))
    with pytest.raises(ConfigError):    # P3Mix-E's keys have no defaults
        build_config(e.config_cls, {"name": "p3mix_e", **BASE})
    with pytest.raises(ConfigError):    # and P3Mix-C takes none of them
        build_config(unit.config_cls, {"name": "p3mix_c", **BASE, **ELR})


def test_table3_pupl_p3mix_cells():
    from pubench.registry import get_spec

    s = get_spec("table3-pupl")
    for row, name in (("P3mix-c (1)", "p3mix_c"), ("P3mix-e (1)", "p3mix_e")):
        p = s.resolve("paper", row, "CIFAR-I")["params"]
        unit = PU_METHODS.get(name)
        cfg = unit.config(p["pu_method"], "pu_method")
        unit.check(cfg)
        assert (cfg.gamma, cfg.top_k, cfg.start_hmix) == (0.6, 100, 10)
        assert p["train"]["optimizer"] == {"name": "adam", "lr": 1.0e-3, "betas": [0.5, 0.99], "weight_decay": 0.0005}
        assert p["data"]["split"]["n_labeled"] == 1000
        r = s.resolve("reduced", row, "F-MNIST-I")["params"]
        assert r["pu_method"]["top_k"] == 17 and r["pu_method"]["start_hmix"] == 1 and r["train"]["epochs"] == 20
        r = s.resolve("reduced", row, "CIFAR-II")["params"]
        assert r["pu_method"]["top_k"] == 8 and r["train"]["epochs"] == 8  # table2-wconpu's 8 cosine epochs (issue 36)
        assert r["train"]["schedule"] == {"name": "cosine"} and r["model"]["backbone"]["name"] == "cnn13"
    assert s.resolve("paper", "P3mix-e (1)", "STL-I")["params"]["pu_method"]["elr_weight"] == 3.0
