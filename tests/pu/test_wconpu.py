"""WConPU (paper 004): each equation against its naive loop version
(tests/reference/naive_wconpu.py), special cases on hand-built embeddings (peer sets, the
self-adaptive threshold, the hard-negative set, the pseudo-label update), and the method
end to end on tiny separable images."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pubench.pu import PU_METHODS
from pubench.pu import wconpu_terms as W
from pubench.pu.data import DownstreamData
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.train.momentum import momentum_update_
from pubench.train.optim import optimizer_config
from pubench.utils.config import ConfigError
from tests.reference import naive_wconpu as N

pytestmark = pytest.mark.usefixtures("one_thread")


def unit(rows: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(rows, d, generator=g, dtype=torch.float64), dim=1)


# ------------------------------------------------------------------ Eq. 6
def test_momentum_update_is_the_convex_combination():
    tk, tq = [torch.tensor([1.0, 2.0])], [torch.tensor([3.0, -2.0])]
    momentum_update_(tk, tq, 0.75)
    assert torch.allclose(tk[0], torch.tensor([1.5, 1.0]))
    momentum_update_(tk, [torch.tensor([9.0, 9.0])], 1.0)   # lambda = 1: the key network does not move
    assert torch.allclose(tk[0], torch.tensor([1.5, 1.0]))


# ------------------------------------------------------------------ Eq. 9-11
def test_sat_matches_naive_and_starts_at_one_half():
    probs = torch.tensor([[0.9, 0.1], [0.3, 0.7], [0.2, 0.8], [0.6, 0.4]], dtype=torch.float64)
    tau, p = torch.tensor(0.5, dtype=torch.float64), torch.full((2,), 0.5, dtype=torch.float64)
    for lam in (0.0, 0.5, 0.999):
        t2, p2 = W.sat_update(tau, p, probs, lam)
        thr = W.sat_thresholds(t2, p2)
        nt, npp, nthr = N.sat(0.5, [0.5, 0.5], probs.tolist(), lam)
        assert math.isclose(float(t2), nt) and torch.allclose(p2, torch.tensor(npp, dtype=torch.float64))
        assert torch.allclose(thr, torch.tensor(nthr, dtype=torch.float64))
    # lambda = 0: tau is the mean max-probability (0.9+0.7+0.8+0.6)/4 = 0.75, p = the class means
    t0, p0 = W.sat_update(tau, p, probs, 0.0)
    assert math.isclose(float(t0), 0.75) and torch.allclose(p0, torch.tensor([0.5, 0.5], dtype=torch.float64))
    # the class with the larger estimate keeps the global threshold, the other is scaled down
    thr = W.sat_thresholds(torch.tensor(0.8), torch.tensor([0.2, 0.4]))
    assert torch.allclose(thr, torch.tensor([0.4, 0.8]))


# ------------------------------------------------------------------ Eq. 12
def test_peer_sets_on_hand_built_pool():
    # b = 3 anchors: 0 labeled positive, 1 unlabeled predicted 0, 2 unlabeled predicted 1;
    # pool = [q0 q1 q2 | k0 k1 k2 | queue0 queue1]
    labeled = torch.tensor([1, 0, 0])
    pred = torch.tensor([1, 0, 1])
    conf = torch.tensor([0.95, 0.9, 0.55])
    pool_pred = torch.cat([pred, pred, torch.tensor([1, 0])])
    pool_conf = torch.cat([conf, conf, torch.tensor([0.99, 0.6])])
    lab_query = torch.tensor([True, False, False, False, False, False, False, False])
    thr = torch.tensor([0.7, 0.8])
    mask = W.positive_peer_mask(labeled, pred, pool_pred, pool_conf, lab_query, thr)
    got = [set(torch.nonzero(r).flatten().tolist()) for r in mask]
    # anchor 0 (labeled): confident predicted positives {k0, queue0} (q2/k2 at 0.55 < 0.8 fail), own key k0
    assert got[0] == {3, 6}
    # anchor 1 (unlabeled, pred 0): confident predicted negatives q1? no (own query), k1 (own key); queue1 at 0.6 < 0.7
    assert got[1] == {4}
    # anchor 2 (unlabeled, pred 1): confident predicted positives q0, k0, queue0 and its own key k2
    assert got[2] == {0, 3, 5, 6}
    assert got == N.peer_sets(labeled.tolist(), pred.tolist(), pool_pred.tolist(), pool_conf.tolist(),
                              lab_query.tolist(), thr.tolist())


def test_peer_sets_include_labeled_queries_for_labeled_anchors_only():
    labeled = torch.tensor([1, 1, 0])
    pred = torch.tensor([0, 0, 0])              # the classifier calls everything negative
    conf = torch.tensor([0.1, 0.1, 0.1])        # and is never confident
    pool_pred, pool_conf = torch.cat([pred, pred]), torch.cat([conf, conf])
    lab_query = torch.tensor([True, True, False, False, False, False])
    mask = W.positive_peer_mask(labeled, pred, pool_pred, pool_conf, lab_query, torch.tensor([0.5, 0.5]))
    assert set(torch.nonzero(mask[0]).flatten().tolist()) == {1, 3}   # the other labeled query + own key
    assert set(torch.nonzero(mask[1]).flatten().tolist()) == {0, 4}
    assert set(torch.nonzero(mask[2]).flatten().tolist()) == {5}      # own key only


@pytest.mark.parametrize("seed", range(4))
def test_peer_sets_match_naive_random(seed):
    g = torch.Generator().manual_seed(seed)
    b, m = 6, 9
    labeled = (torch.rand(b, generator=g) < 0.4).long()
    pred = torch.randint(0, 2, (b,), generator=g)
    conf = 0.5 + 0.5 * torch.rand(b, generator=g)
    pool_pred = torch.cat([pred, pred, torch.randint(0, 2, (m,), generator=g)])
    pool_conf = torch.cat([conf, conf, 0.5 + 0.5 * torch.rand(m, generator=g)])
    lab_query = torch.cat([labeled.bool(), torch.zeros(b + m, dtype=torch.bool)])
    thr = 0.5 + 0.4 * torch.rand(2, generator=g)
    mask = W.positive_peer_mask(labeled, pred, pool_pred, pool_conf, lab_query, thr)
    want = N.peer_sets(labeled.tolist(), pred.tolist(), pool_pred.tolist(), pool_conf.tolist(),
                       lab_query.tolist(), thr.tolist())
    assert [set(torch.nonzero(r).flatten().tolist()) for r in mask] == want


# ------------------------------------------------------------------ Eq. 13-14
def test_dissim_matches_naive_and_its_range():
    q, k = unit(4, 5, 0) * 3.0, unit(6, 5, 1) * 0.5      # DisSim normalizes its arguments
    d = W.dissim(q, k)
    for i in range(4):
        for j in range(6):
            assert math.isclose(float(d[i, j]), N.dissim(q[i].tolist(), k[j].tolist()), abs_tol=1e-12)
    e = unit(2, 3, 2)
    d2 = W.dissim(e, torch.cat([e, -e]))
    assert float(d2[0, 0]) == pytest.approx(0.0, abs=1e-12) and float(d2[0, 2]) == pytest.approx(1.0)
    assert ((d2 >= 0) & (d2 <= 1)).all()
    assert float(W.dissim(e[:1], e[:1])) == 0.0 and math.isclose(float(W.dissim(e[:1], -e[:1])), 1.0)


def test_hard_negatives_on_hand_built_embeddings():
    # unit circle: prototype of class 1 at 0 degrees, of class 0 at 90 degrees; the query at 20
    # degrees (class 1). Nine queue keys: the quartile (linear interpolation, position 0.25 * 8
    # = 2) is exactly the third smallest DisSim, so the three closest keys pass the hardness
    # test; of those only the key at 50 degrees is of the other prototype.
    def at(*deg):
        r = torch.tensor(deg, dtype=torch.float64) * math.pi / 180
        return torch.stack([r.cos(), r.sin()], 1)

    protos = at(90, 0)
    q = at(20)
    keys = at(10, 35, 50, 180, 200, 135, 120, -60, 150)
    q_lab, k_lab = W.nearest_prototype(q, protos), W.nearest_prototype(keys, protos)
    assert q_lab.tolist() == [1] and k_lab.tolist() == [1, 1, 0, 0, 0, 0, 0, 1, 0]
    d = W.dissim(q, keys)
    hard = W.hard_negative_mask(d, q_lab, k_lab, 0.25)
    assert torch.nonzero(hard[0]).flatten().tolist() == [2]
    assert [set(torch.nonzero(hard[0]).flatten().tolist())] == N.hard_negatives(q.tolist(), keys.tolist(), [1],
                                                                                 k_lab.tolist())
    # quantile 1: every key of the other prototype
    assert torch.nonzero(W.hard_negative_mask(d, q_lab, k_lab, 1.0)[0]).flatten().tolist() == [2, 3, 4, 5, 6, 8]
    # an empty queue: no hard negatives
    assert W.hard_negative_mask(d[:, :0], q_lab, k_lab[:0], 0.25).shape == (1, 0)


@pytest.mark.parametrize("seed", range(3))
def test_hard_negatives_match_naive_random(seed):
    qs, keys = unit(5, 4, seed), unit(13, 4, seed + 10)
    protos = unit(2, 4, seed + 20)
    q_lab, k_lab = W.nearest_prototype(qs, protos), W.nearest_prototype(keys, protos)
    assert q_lab.tolist() == [N.nearest(e, protos.tolist()) for e in qs.tolist()]
    hard = W.hard_negative_mask(W.dissim(qs, keys), q_lab, k_lab, 0.25)
    want = N.hard_negatives(qs.tolist(), keys.tolist(), q_lab.tolist(), k_lab.tolist(), 0.25)
    assert [set(torch.nonzero(r).flatten().tolist()) for r in hard] == want


def test_nearest_prototype_ties_go_to_class_zero():
    assert W.nearest_prototype(unit(3, 4, 0), torch.zeros(2, 4, dtype=torch.float64)).tolist() == [0, 0, 0]


# ------------------------------------------------------------------ Eq. 15-18
@pytest.mark.parametrize("seed", range(3))
def test_weighted_contrastive_loss_matches_naive(seed):
    b, m, d = 4, 7, 5
    qs, ks, queue = unit(b, d, seed), unit(b, d, seed + 1), unit(m, d, seed + 2)
    pool = torch.cat([qs, ks, queue])
    g = torch.Generator().manual_seed(seed)
    peers = torch.rand(b, 2 * b + m, generator=g) < 0.4
    peers[torch.arange(b), torch.arange(b)] = False
    peers[torch.arange(b), b + torch.arange(b)] = True
    hard = torch.zeros(b, 2 * b + m, dtype=torch.bool)
    hard[:, 2 * b:] = torch.rand(b, m, generator=g) < 0.3
    weight = torch.ones(b, 2 * b + m, dtype=torch.float64)
    weight[:, 2 * b:] = W.hard_negative_weight(W.dissim(qs, queue))
    got = W.weighted_contrastive_loss(qs, pool, peers, hard, weight, 0.07)
    want = N.weighted_con_loss(qs.tolist(), pool.tolist(), [set(torch.nonzero(r).flatten().tolist()) for r in peers],
                               [set(torch.nonzero(r).flatten().tolist()) for r in hard], 0.07)
    assert math.isclose(float(got), want, rel_tol=1e-9)


def test_without_hard_negatives_the_loss_is_supcon():
    """Table III variant IV: no hard negatives -> SupCon's loss with the given positive sets."""
    b, m = 3, 4
    qs, ks, queue = unit(b, 6, 0), unit(b, 6, 1), unit(m, 6, 2)
    pool = torch.cat([qs, ks, queue])
    peers = torch.zeros(b, 2 * b + m, dtype=torch.bool)
    peers[torch.arange(b), b + torch.arange(b)] = True
    peers[0, 2 * b] = True
    none = torch.zeros_like(peers)
    got = W.weighted_contrastive_loss(qs, pool, peers, none, torch.full(peers.shape, 123.0, dtype=torch.float64), 0.5)
    logits = qs @ pool.T / 0.5
    per = []
    for i in range(b):
        keep = torch.ones(2 * b + m, dtype=torch.bool)
        keep[i] = False
        lse = torch.logsumexp(logits[i][keep], 0)
        per.append(-(logits[i][peers[i]] - lse).mean())
    assert math.isclose(float(got), float(torch.stack(per).mean()), rel_tol=1e-12)


def test_hard_negative_weights_raise_the_loss_and_zero_dissim_is_guarded():
    b = 2
    qs, ks = unit(b, 3, 0), unit(b, 3, 1)
    queue = torch.cat([qs[:1], -qs[:1]])            # a key equal to query 0: DisSim 0
    pool = torch.cat([qs, ks, queue])
    peers = torch.zeros(b, 2 * b + 2, dtype=torch.bool)
    peers[torch.arange(b), b + torch.arange(b)] = True
    hard = torch.zeros_like(peers)
    hard[0, 2 * b] = True
    weight = torch.ones(b, 2 * b + 2, dtype=torch.float64)
    weight[:, 2 * b:] = W.hard_negative_weight(W.dissim(qs, queue))
    assert float(weight[0, 2 * b]) == 1.0 / W.DISSIM_FLOOR
    weighted = W.weighted_contrastive_loss(qs, pool, peers, hard, weight, 0.1)
    plain = W.weighted_contrastive_loss(qs, pool, peers, torch.zeros_like(hard), weight, 0.1)
    assert math.isfinite(float(weighted)) and float(weighted) > float(plain)


def test_contrastive_loss_gradient_is_finite():
    qs = unit(3, 4, 0).clone().requires_grad_(True)
    pool = torch.cat([qs, unit(3, 4, 1)])
    peers = torch.zeros(3, 6, dtype=torch.bool)
    peers[torch.arange(3), 3 + torch.arange(3)] = True
    W.weighted_contrastive_loss(qs, pool, peers, torch.zeros_like(peers), torch.ones(3, 6, dtype=torch.float64),
                                0.07).backward()
    assert torch.isfinite(qs.grad).all()


# ------------------------------------------------------------------ Eq. 19-23, 27-28
def test_pseudo_labels_init_and_update():
    observed = torch.tensor([1, 0, 0, 0])
    s = W.init_pseudo_labels(observed, 0.4)
    assert torch.allclose(s, torch.tensor([[0.0, 1.0], [0.6, 0.4], [0.6, 0.4], [0.6, 0.4]]))
    near = torch.tensor([0, 1, 0, 1])
    s2 = W.update_pseudo_labels(s, near, observed, 0.9)
    want = N.pseudo_update(s.tolist(), near.tolist(), observed.tolist(), 0.9)
    assert torch.allclose(s2, torch.tensor(want))
    assert torch.allclose(s2.sum(1), torch.ones(4))                           # rows stay distributions
    assert s2[0].tolist() == [0.0, 1.0]                                        # labeled rows never move
    assert torch.allclose(s2[1], torch.tensor([0.54, 0.46]))                   # 0.9 * 0.6, 0.9 * 0.4 + 0.1
    for _ in range(200):                                                       # towards the one-hot prototype label
        s2 = W.update_pseudo_labels(s2, near, observed, 0.9)
    assert torch.allclose(s2[1:], F.one_hot(near[1:], 2).float(), atol=1e-6)
    assert torch.equal(W.update_pseudo_labels(s, near, observed, 0.0)[1:], F.one_hot(near[1:], 2).float())


def test_prototype_update_matches_naive_and_stays_normalized():
    protos = torch.zeros(2, 4, dtype=torch.float64)
    qs = unit(6, 4, 3)
    preds = torch.tensor([1, 1, 0, 1, 0, 0])
    for lam in (0.5, 0.999):
        got = W.update_prototypes(protos, qs, preds, lam)
        want = N.proto_update(protos.tolist(), qs.tolist(), preds.tolist(), lam)
        assert torch.allclose(got, torch.tensor(want, dtype=torch.float64))
        assert torch.allclose(got.norm(dim=1), torch.ones(2, dtype=torch.float64))
    # from zero, the first update puts the prototype on the first query of its class
    first = W.update_prototypes(protos, qs[:1], preds[:1], 0.999)
    assert torch.allclose(first[1], qs[0]) and torch.equal(first[0], protos[0])


def test_label_distribution_loss_matches_naive_and_vanishes_at_the_prior():
    p1 = torch.tensor([0.9, 0.8, 0.3, 0.5, 0.1, 0.6], dtype=torch.float64)
    observed = torch.tensor([1, 1, 0, 0, 0, 0])
    assert math.isclose(float(W.label_distribution_loss(p1, observed, 0.4)), N.l_dis(p1.tolist(), observed.tolist(), 0.4))
    perfect = torch.tensor([1.0, 1.0, 0.4, 0.4], dtype=torch.float64)
    assert float(W.label_distribution_loss(perfect, torch.tensor([1, 1, 0, 0]), 0.4)) == 0.0
    # a batch without labeled positives keeps only the unlabeled term
    assert math.isclose(float(W.label_distribution_loss(p1[2:], observed[2:], 0.4)), abs(1.5 / 4 - 0.4))


def test_soft_cross_entropy_matches_naive_and_hard_labels():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(5, 2, generator=g, dtype=torch.float64)
    s = torch.rand(5, 1, generator=g, dtype=torch.float64)
    s = torch.cat([1 - s, s], 1)
    assert math.isclose(float(W.soft_cross_entropy(logits, s)), N.soft_ce(logits.tolist(), s.tolist()), rel_tol=1e-12)
    y = torch.tensor([0, 1, 1, 0, 1])
    assert torch.allclose(W.soft_cross_entropy(logits, F.one_hot(y, 2).double()), F.cross_entropy(logits, y))
    observed = torch.tensor([1, 0, 0, 1, 0])
    assert torch.allclose(W.unlabeled_negative_ce(logits, observed), F.cross_entropy(logits, observed))


def test_objective_is_eq_28():
    assert float(W.wconpu_objective(torch.tensor(1.0), torch.tensor(2.0), torch.tensor(3.0), 0.1, 0.01)) == \
        pytest.approx(1.0 + 0.2 + 0.03)


# ------------------------------------------------------------------ the method
class Tiny(nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.lin = nn.Linear(3 * 8 * 8, 16)
        self.out_dim = 16

    def forward(self, x):
        return torch.relu(self.lin(x.flatten(1)))


def separable(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, 3, 8, 8) uint8: positives bright in the top half, negatives in the bottom half."""
    g = torch.Generator().manual_seed(seed)
    y = (torch.rand(n, generator=g) < 0.4).long()
    x = torch.randint(0, 60, (n, 3, 8, 8), generator=g)
    x[y == 1, :, :4] += 180
    x[y == 0, :, 4:] += 180
    return x.to(torch.uint8), y


def tiny_data(n=240) -> DownstreamData:
    x, y = separable(n, 0)
    xt, yt = separable(200, 1)
    observed = ((y == 1) & (torch.arange(n) % 4 == 0)).long()
    return DownstreamData(x_train=x, observed=observed, y_true=y, split_kind="pu", n_classes=2, prior=0.4,
                          x_test=xt, y_test=yt, mean=[0.4] * 3, std=[0.3] * 3, pu_scheme="case_control",
                          validation={"fraction": 0.1})


BLOCK = {"name": "wconpu", **PU_METHODS.get("wconpu").test_config}
BLOCK["augment"] = {"query": {"name": "crop", "scale": [0.8, 1.0], "flip": 0.0},
                    "key": {"name": "crop", "scale": [0.6, 1.0], "flip": 0.0}}
TRAIN = TrainConfig(epochs=6, batch_size=32, optimizer=optimizer_config({"name": "sgd", "lr": 0.05, "momentum": 0.9}))


def run(block, data=None, seed=1):
    from pubench.models.heads import projection_head

    unit_ = PU_METHODS.get("wconpu")
    cfg = unit_.config(block, "pu_method")
    torch.manual_seed(0)
    return unit_.run(cfg, Tiny(), TRAIN, data or tiny_data(), seed, projector=projection_head(16, 16, 8), ctx=PLAIN)


def test_wconpu_learns_a_separable_problem_and_selects_on_validation():
    metrics, info = run(BLOCK)
    assert metrics["acc"] > 90.0, metrics
    assert len(info["grid"]) == 2 and info["validation_used"] and info["n_validation"] == 24
    assert info["selected_val_acc"] == max(r["val_acc"] for r in info["grid"])
    assert info["pseudo_label_acc"][-1] > info["pseudo_label_acc"][0] or info["pseudo_label_acc"][-1] > 90
    assert info["n_hard_per_anchor"][-1] > 0 and info["n_peers_per_anchor"][-1] >= 1
    assert metrics["time"] > 0 and set(metrics) == {"acc", "precision", "recall", "f1", "auc", "ap", "time"}


def test_pseudo_label_curves_are_recorded_per_epoch():
    """004 Fig. 5 (fig5-wconpu): after each epoch, (a) the accuracy of argmax s_i on the unlabeled
    rows and (b) the mean max pseudo label (1/n) sum_i max(s_i) over the n training rows. Frozen
    pseudo labels (Eq. 20: (pi_N, pi_P) on U, one-hot on the labeled rows) give both exactly."""
    data = tiny_data()
    frozen = {**BLOCK, "pseudo_labels": {"init": "prior", "update": "none"},
              "tuning": {"grid": {"gamma0": [1.0], "gamma1": [1.0]}, "select_on": "none", "metric": "acc"}}
    _, info = run(frozen, data)
    n, n_lab = len(data.observed), int(data.observed.sum())
    unl = data.observed == 0
    assert info["pseudo_label_mean_max"] == pytest.approx([(n_lab + 0.6 * (n - n_lab)) / n] * TRAIN.epochs)
    assert info["pseudo_label_acc"] == pytest.approx([100.0 * float((data.y_true[unl] == 0).float().mean())]
                                                     * TRAIN.epochs)
    _, info = run(BLOCK, data)  # updated pseudo labels move towards one-hot vectors
    curve = info["pseudo_label_mean_max"]
    assert len(curve) == TRAIN.epochs and all(0.5 <= v <= 1.0 for v in curve)
    assert curve[-1] > (n_lab + 0.6 * (n - n_lab)) / n


@pytest.mark.parametrize("variant", [
    {"con_loss": {"name": "none"}, "tuning": {"grid": {"gamma1": [1.0]}, "select_on": "none", "metric": "acc"}},
    {"pseudo_labels": {"init": "prior", "update": "none"}},
    {"dist_loss": {"name": "unlabeled_negative_ce"}},
    {"hard_negatives": {"mining": "none"}},
    {"hard_negatives": {"mining": "pseudo_label", "quantile": 0.25, "weight": "inverse_dissim"}},
    {"prototypes": {"update": "recompute_epoch", "init": "zeros"}},
])
def test_variants_run(variant):
    metrics, info = run({**BLOCK, **variant})
    assert all(math.isfinite(v) for v in metrics.values())
    if "pseudo_labels" in variant:
        assert len(set(info["pseudo_label_acc"])) == 1          # frozen at the prior initialisation
    if variant.get("con_loss"):
        assert info["l_con"] == [0.0] * TRAIN.epochs
    if variant.get("hard_negatives", {}).get("mining") == "none":
        assert info["n_hard_per_anchor"] == [0.0] * TRAIN.epochs


@pytest.mark.parametrize("change, match", [
    ({"con_loss": {"name": "none"}}, "no gamma0"),
    ({"hard_negatives": {"mining": "hardest"}}, "mining"),
    ({"tuning": {"grid": {"gamma0": [1.0], "gamma1": [1.0, 0.1]}, "select_on": "none", "metric": "acc"}},
     "select_on: validation"),
    ({"momentum": 1.0}, "momentum"),
    ({"augment": {"query": {"name": "simaugment"}}}, "augment.key"),
])
def test_config_checks(change, match):
    with pytest.raises(ConfigError, match=match):
        PU_METHODS.get("wconpu").config({**BLOCK, **change}, "pu_method")


def test_validation_selection_needs_the_validation_rows():
    d = tiny_data()
    d.validation = None
    with pytest.raises(ConfigError, match="validation"):
        run(BLOCK, d)


def test_clean_validation_rows_are_a_stratified_tenth():
    import numpy as np

    from pubench.pu.wconpu import clean_validation_rows

    y = torch.tensor([1] * 37 + [0] * 63)
    rows = clean_validation_rows(y, 0.1, np.random.default_rng(0))
    assert len(rows) == 10 and int(y[rows].sum()) == 4 and len(set(rows.tolist())) == 10
    assert torch.equal(rows, clean_validation_rows(y, 0.1, np.random.default_rng(0)))
    assert not torch.equal(rows, clean_validation_rows(y, 0.1, np.random.default_rng(1)))
    with pytest.raises(ConfigError, match="fraction"):
        clean_validation_rows(y, 1.0, np.random.default_rng(0))
