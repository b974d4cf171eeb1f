"""PiCO with 004's L_dis (pubench/pu/pico.py): each term against its naive loop version
(tests/reference/naive_pico_apu.py), its special cases, and the method on tiny data."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from pubench.pu import PU_METHODS
from pubench.pu import pico as P
from pubench.pu import wconpu_terms as W
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.train.optim import optimizer_config
from pubench.utils.config import ConfigError
from tests.reference import naive_pico_apu as naive
from tests.reference import naive_wconpu as NW

pytestmark = pytest.mark.usefixtures("one_thread")
TOL = 1e-12


def unit(rows: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(rows, d, generator=g, dtype=torch.float64), dim=1)


def _observed(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(100 + seed)
    return (torch.rand(n, generator=g) < 0.3).long()


@pytest.mark.parametrize("seed", range(4))
def test_pseudo_labels_stay_in_the_candidate_set(seed):
    g = torch.Generator().manual_seed(seed)
    probs = torch.randn(20, 2, generator=g, dtype=torch.float64).softmax(1)
    o = _observed(20, seed)
    labels = P.candidate_pseudo_labels(probs, o)
    assert labels.tolist() == naive.pseudo_labels(probs.tolist(), o.tolist())
    assert bool((labels[o == 1] == 1).all())                # labeled positives: candidates {1}
    assert torch.equal(labels[o == 0], probs[o == 0].argmax(1))
    # a labeled positive stays 1 even when its positive-class probability underflows
    assert P.candidate_pseudo_labels(torch.tensor([[1.0, 0.0]]), torch.tensor([1])).tolist() == [1]


@pytest.mark.parametrize("seed", range(4))
def test_prototype_labels_match_naive(seed):
    q, protos, o = unit(20, 5, seed), unit(2, 5, seed + 50), _observed(20, seed)
    assert P.prototype_pseudo_labels(q, protos, o).tolist() == naive.prototype_labels(q.tolist(), protos.tolist(),
                                                                                      o.tolist())
    # zero prototypes (the start): every unlabeled example goes to class 0
    zero = P.prototype_pseudo_labels(q, torch.zeros(2, 5, dtype=torch.float64), o)
    assert torch.equal(zero, o)


def test_pseudo_target_momentum_is_the_code_range():
    assert P.pseudo_target_momentum(0, 800, 0.95, 0.8) == 0.95
    assert P.pseudo_target_momentum(400, 800, 0.95, 0.8) == pytest.approx(0.875)
    for e in (3, 17, 799):
        assert P.pseudo_target_momentum(e, 800, 0.95, 0.8) == pytest.approx(naive.phi(e, 800, 0.95, 0.8), abs=TOL)


def test_pseudo_target_update_keeps_labeled_positives_and_moves_unlabeled_towards_the_prototype():
    o = torch.tensor([1, 0, 0])
    s = W.init_pseudo_labels(o, 0.5)                     # PiCO: uniform over the candidates
    assert s.tolist() == [[0.0, 1.0], [0.5, 0.5], [0.5, 0.5]]
    s2 = W.update_pseudo_labels(s, torch.tensor([1, 1, 0]), o, 0.9)
    assert torch.allclose(s2, torch.tensor([[0.0, 1.0], [0.45, 0.55], [0.55, 0.45]]))


@pytest.mark.parametrize("seed", range(4))
def test_positive_pool_mask_matches_naive(seed):
    g = torch.Generator().manual_seed(seed)
    b, m = 6, 9
    labels = torch.randint(0, 2, (b,), generator=g)
    queue_labels = torch.randint(0, 2, (m,), generator=g)
    pool_labels = torch.cat([labels, labels, queue_labels])
    mask = P.positive_pool_mask(labels, pool_labels)
    sets = naive.positive_sets(labels.tolist(), pool_labels.tolist())
    assert [set(torch.nonzero(row).squeeze(1).tolist()) for row in mask] == sets
    assert not bool(mask[torch.arange(b), torch.arange(b)].any())       # never the own query
    assert bool(mask[torch.arange(b), b + torch.arange(b)].all())       # always the own key


@pytest.mark.parametrize("seed", range(4))
def test_supcon_form_matches_naive(seed):
    """L_cont after the warm-up: SupCon over [q, k, queue] with same-label positives (PiCO
    Eq. 4-5), WConPU's weighted loss without hard negatives."""
    b, m, d, t = 5, 7, 4, 0.2
    q, k, queue = unit(b, d, seed), unit(b, d, seed + 10), unit(m, d, seed + 20)
    g = torch.Generator().manual_seed(seed)
    labels, ql = torch.randint(0, 2, (b,), generator=g), torch.randint(0, 2, (m,), generator=g)
    pool = torch.cat([q, k, queue])
    pos = P.positive_pool_mask(labels, torch.cat([labels, labels, ql]))
    got = W.weighted_contrastive_loss(q, pool, pos, torch.zeros_like(pos), torch.ones(pos.shape, dtype=q.dtype), t)
    sets = naive.positive_sets(labels.tolist(), torch.cat([labels, labels, ql]).tolist())
    want = NW.weighted_con_loss(q.tolist(), pool.tolist(), sets, [set()] * b, t)
    assert float(got) == pytest.approx(want, abs=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_moco_warmup_matches_naive_and_an_empty_queue(seed):
    q, k, queue = unit(5, 4, seed), unit(5, 4, seed + 1), unit(8, 4, seed + 2)
    assert float(P.moco_loss(q, k, queue, 0.1)) == pytest.approx(naive.moco(q.tolist(), k.tolist(), queue.tolist(),
                                                                           0.1), abs=1e-10)
    assert float(P.moco_loss(q, k, queue[:0], 0.1)) == pytest.approx(0.0, abs=TOL)   # nothing to contrast with


def test_objective_and_its_special_cases():
    a, b, c = torch.tensor(1.0), torch.tensor(2.0), torch.tensor(3.0)
    assert float(P.pico_objective(a, b, c, 0.5, 0.1)) == pytest.approx(1.0 + 1.0 + 0.3)
    assert float(P.pico_objective(a, b, c, 0.5, 0.0)) == pytest.approx(2.0)          # plain PiCO


def test_candidate_mask():
    assert P.candidate_mask(torch.tensor([1, 0])).tolist() == [[0.0, 1.0], [1.0, 1.0]]


# ------------------------------------------------------------------ the method
def _run(block, epochs=12, seed=1):
    from pubench.models.heads import projection_head
    from tests.pu.test_wconpu import Tiny, tiny_data

    unit_ = PU_METHODS.get("pico")
    cfg = unit_.config(block, "pu_method")
    torch.manual_seed(0)
    train = TrainConfig(epochs=epochs, batch_size=32, optimizer=optimizer_config({"name": "sgd", "lr": 0.05, "momentum": 0.9}))
    return unit_.run(cfg, Tiny(), train, tiny_data(), seed, projector=projection_head(16, 16, 8), ctx=PLAIN)


BLOCK = {"name": "pico", **PU_METHODS.get("pico").test_config}


def test_pico_learns_a_separable_problem():
    metrics, info = _run(BLOCK)
    assert metrics["acc"] > 90.0 and metrics["auc"] > 95.0, metrics
    assert info["pseudo_label_acc"][-1] > 90.0
    assert info["phi"][0] is None and info["phi"][1] == pytest.approx(0.95 - 0.15 / 12)
    assert info["prior_used"] == 0.4 and info["model_selection"] == "the last epoch's model"
    assert all(math.isfinite(v) for v in info["l_cont"]) and info["l_dis"][-1] < info["l_dis"][0]


def test_without_dist_loss_no_prior_is_used():
    metrics, info = _run({**BLOCK, "dist_loss": {"name": "none", "weight": 0.0}}, epochs=2)
    assert info["prior_used"] is None and info["l_dis"] == [0.0, 0.0]
    assert all(math.isfinite(v) for v in metrics.values())


@pytest.mark.parametrize("change, match", [
    ({"dist_loss": {"name": "dist_pu"}}, "dist_loss"), ({"dist_loss": {"name": "ce", "weight": 1.0}}, "one of"),
    ({"momentum": 1.0}, "momentum"), ({"pseudo_target_momentum": [0.9]}, "pseudo_target_momentum"),
    ({"augment": {"query": {"name": "crop"}}}, "augment"), ({"prototype_start_epoch": -1}, "prototype_start"),
])
def test_config_checks(change, match):
    with pytest.raises(ConfigError, match=match):
        PU_METHODS.get("pico").config({**BLOCK, **change}, "pu_method")
