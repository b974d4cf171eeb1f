"""InfoGraph track (issue 6): GIN encoder, local-global scoring, estimator plug-in, JSD
reference, training on a toy data set, SVM protocol determinism, task validation and an
end-to-end task run on generated graphs."""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import pubench.data.graphs as G
from pubench.frameworks import infograph as IG
from pubench.losses import logits_form
from pubench.models import BACKBONES
from pubench.models.gin import GINEncoder
from pubench.train.context import PLAIN
from pubench.train.svm_eval import svm_cv
from pubench.utils.config import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))
import naive_local_global as NLG  # noqa: E402
from loss_cases import L  # noqa: E402

TABLE2_TEMPERATURE = 1.0  # table2-pucl's temperature of the corrected rows (checked against the spec below)


def toy_graphs(n_per_class=24, seed=0):
    """Two classes of small random graphs: cycles with chords (0) and stars with a tail (1).
    Node features: 3-dim one-hot of a random node label."""
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    out = []
    for label in (0, 1):
        for _ in range(n_per_class):
            n = int(rng.integers(5, 12))
            if label == 0:
                edges = [(i, (i + 1) % n) for i in range(n)] + [(0, int(rng.integers(2, n - 1)))]
            else:
                edges = [(0, i) for i in range(1, n - 1)] + [(n - 2, n - 1)]
            e = torch.tensor(edges, dtype=torch.long).t()
            ei = torch.cat([e, e.flip(0)], 1)
            x = F.one_hot(torch.from_numpy(rng.integers(0, 3, n)), 3).float()
            out.append(Data(x=x, edge_index=ei, y=torch.tensor([label]), num_nodes=n))
    return out


def batch_of(graphs):
    from torch_geometric.data import Batch

    return Batch.from_data_list(graphs)


# ------------------------------------------------------------------ encoder
def test_gin_registered_and_shapes():
    enc = BACKBONES.get("gin")(3, 8, 3)
    assert isinstance(enc, GINEncoder) and enc.out_dim == 24
    b = batch_of(toy_graphs(3))
    y, m = enc(b.x, b.edge_index, b.batch, b.num_graphs)
    assert y.shape == (6, 24) and m.shape == (b.num_nodes, 24)


def test_gin_sum_pooling_of_layer_outputs():
    """Graph embedding = per-graph sum of the node representations (all layers concatenated)."""
    torch.manual_seed(0)
    enc = GINEncoder(3, 8, 2).eval()
    b = batch_of(toy_graphs(3))
    y, m = enc(b.x, b.edge_index, b.batch, b.num_graphs)
    ref = torch.zeros(b.num_graphs, 16).index_add_(0, b.batch, m)
    assert torch.allclose(y, ref, atol=1e-5)


def test_gin_equals_pyg_ginconv_and_global_add_pool():
    """The sparse-adjacency encoder computes what torch-geometric's GINConv (eps = 0) +
    global_add_pool per layer compute, values and gradients (directed edges included)."""
    import copy

    from torch_geometric.nn import GINConv, global_add_pool

    torch.manual_seed(0)
    enc = GINEncoder(3, 8, 3).double()
    ref = copy.deepcopy(enc)
    convs = [GINConv(nn.Sequential()) for _ in ref.mlps]  # GINConv re-initialises the nn it is given
    for conv, mlp in zip(convs, ref.mlps):
        conv.nn = mlp
    b = batch_of(toy_graphs(4))
    keep = torch.rand(b.edge_index.shape[1]) < 0.7  # drop some reverse edges: a directed graph
    ei, x = b.edge_index[:, keep], b.x.double()
    y, m = enc(x, ei, b.batch, b.num_graphs)
    h, xs = x, []
    for conv, bn in zip(convs, ref.bns):
        h = bn(F.relu(conv(h, ei)))
        xs.append(h)
    y_ref = torch.cat([global_add_pool(x, b.batch, size=b.num_graphs) for x in xs], dim=1)
    m_ref = torch.cat(xs, dim=1)
    assert torch.allclose(y, y_ref, rtol=1e-10, atol=1e-10) and torch.allclose(m, m_ref, rtol=1e-10, atol=1e-10)
    (y.square().sum() + m.sum()).backward()
    (y_ref.square().sum() + m_ref.sum()).backward()
    for p, q in zip(enc.parameters(), ref.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-8, atol=1e-8 * q.grad.abs().max().item())


def test_gin_permutation_invariant():
    torch.manual_seed(0)
    enc = GINEncoder(3, 8, 3).eval()
    g = toy_graphs(1)[0]
    perm = torch.randperm(g.num_nodes)
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(g.num_nodes)
    batch = torch.zeros(g.num_nodes, dtype=torch.long)
    y1, _ = enc(g.x, g.edge_index, batch, 1)
    y2, _ = enc(g.x[perm], inv[g.edge_index], batch, 1)
    assert torch.allclose(y1, y2, atol=1e-4)


# ------------------------------------------------------------------ local-global scoring
@pytest.mark.parametrize("score", ["dot", "cosine"])
def test_local_global_scores_against_loop(score):
    torch.manual_seed(0)
    batch = torch.tensor([0, 0, 1, 2, 2, 2])
    l_enc, g_enc = torch.randn(6, 5, dtype=torch.float64), torch.randn(3, 5, dtype=torch.float64)
    t = 0.4
    logits = IG.local_global_scores(l_enc, g_enc, score, t)
    want = NLG.scores(l_enc, g_enc, score)
    pos, mask = IG.positive_logits(logits, batch), IG.own_graph_mask(batch, 3)
    for i in range(6):
        assert math.isclose(pos[i].item(), want[i][int(batch[i])] / t, rel_tol=1e-12)
        for j in range(3):
            assert math.isclose(logits[i, j].item(), want[i][j] / t, rel_tol=1e-12)
            assert bool(mask[i, j]) == (j != int(batch[i]))
    if score == "cosine":
        assert logits.abs().max() <= 1 / t + 1e-12


def test_jsd_matches_infograph_reference():
    torch.manual_seed(1)
    batch = torch.tensor([0, 0, 1, 1, 1, 2, 3, 3])
    l_enc, g_enc = torch.randn(8, 6) * 2, torch.randn(4, 6)
    res = l_enc @ g_enc.t()
    pos_mask = F.one_hot(batch, 4).float()
    ref = naive_jsd(res * pos_mask, res * (1 - pos_mask), 8, 4)
    assert torch.allclose(jsd_objective()(l_enc, g_enc, batch), ref, atol=1e-5)


def naive_jsd(pos_mask_scores, neg_mask_scores, n_nodes, n_graphs):
    """InfoGraph's local_global_loss_ with measure='JSD', literally (0/1 masks times scores)."""
    log2 = math.log(2.0)
    e_pos = (log2 - F.softplus(-pos_mask_scores)).sum() / n_nodes
    e_neg = (F.softplus(-neg_mask_scores) + neg_mask_scores - log2).sum() / (n_nodes * (n_graphs - 1))
    return e_neg - e_pos


def objective(name, score="cosine", **hyper):
    return IG.LocalGlobalObjective.from_config(score=score, loss={"name": name, **hyper})


def jsd_objective(score="dot"):
    return IG.LocalGlobalObjective.from_config(score=score, measure="JSD")


# the rows of table2-pucl (plus BCL), with their estimator hyperparameters
ESTIMATORS = [
    ("info_nce", {"temperature": 0.5}),
    ("debiased", {"temperature": 0.5, "tau_plus": 0.5}),
    ("debiased", {"temperature": 1.0, "tau_plus": 0.1667}),
    ("hard", {"temperature": 0.5, "tau_plus": 0.5, "beta": 1.0}),
    ("ring", {"temperature": 0.5, "lower": 0.1, "upper": 0.9}),
    ("pu_corrected", {"temperature": 0.5, "alpha": 0.1, "c": 0.1}),
    ("pu_corrected", {"temperature": 1.0, "alpha": 0.5, "c": 0.1}),
]


def tiny_batch(seed=0, scale=1.0, dtype=torch.float64):
    torch.manual_seed(seed)
    batch = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 3, 4, 4])
    return torch.randn(11, 4, dtype=dtype) * scale, torch.randn(5, 4, dtype=dtype) * scale, batch


@pytest.mark.parametrize("name, hyper", ESTIMATORS, ids=lambda x: str(x))
@pytest.mark.parametrize("seed", [0, 1])
def test_normalised_objective_against_naive_loop(name, hyper, seed):
    """Every correction on cos(l_i, g_j) / t equals its naive per-node, per-graph loop
    (float64), and so does InfoGraph's JSD on the raw dot products."""
    l_enc, g_enc, batch = tiny_batch(seed, scale=2.0)
    got = objective(name, **hyper)(l_enc, g_enc, batch)
    want, _ = NLG.naive_local_global(l_enc, g_enc, batch, score="cosine", name=name, hyper=hyper)
    assert math.isclose(got.item(), want, rel_tol=1e-9, abs_tol=1e-12), (got.item(), want)
    got = jsd_objective()(l_enc, g_enc, batch)
    want, _ = NLG.naive_local_global(l_enc, g_enc, batch, score="dot", name="infograph_jsd", hyper={})
    assert math.isclose(got.item(), want, rel_tol=1e-9)


@pytest.mark.parametrize("name, hyper", [e for e in ESTIMATORS if e[0] != "info_nce"], ids=lambda x: str(x))
def test_floor_count_matches_the_naive_clamp(name, hyper):
    """``starved_anchors`` (no gradient reaches any candidate) marks exactly the anchors whose
    corrected negative sum is at or below the floor N e^{-1/t} (naive formula); Ring and
    InfoNCE have no floor. Scores shifted so that both cases occur."""
    for seed in range(4):
        l_enc, g_enc, batch = tiny_batch(seed, scale=2.0)
        g_enc = g_enc.clone()
        g_enc[:2] = l_enc[[0, 3]]  # nodes 0 and 3 point at their own graphs: large positives
        obj = objective(name, **hyper)
        logits = obj.logits(l_enc, g_enc).detach().requires_grad_()
        mask = IG.own_graph_mask(batch, 5)
        obj.loss(IG.positive_logits(logits, batch), logits, mask).backward()
        starved = IG.starved_anchors(logits.grad, mask).tolist()
        _, floor = NLG.naive_local_global(l_enc, g_enc, batch, score="cosine", name=name, hyper=hyper)
        assert starved == floor, (seed, starved, floor)
        if name in ("debiased", "hard", "pu_corrected") and hyper.get("tau_plus", hyper.get("alpha")) == 0.5:
            assert any(floor) and not all(floor)


def scored_batch(scale=1.0, seed=0):
    l_enc, g_enc, batch = tiny_batch(seed, scale, dtype=torch.float32)
    logits = IG.local_global_scores(l_enc, g_enc, "dot")
    return IG.positive_logits(logits, batch), logits, IG.own_graph_mask(batch, 5)


def test_plugin_reduces_to_infonce():
    """DEB with tau_plus = 0, Hard with tau_plus = 0 and beta = 0, PUCL with c = 1, Ring on
    [0, 1] and BCL with tau_plus = 0, beta = 0 all equal the InfoNCE form (logits well above
    the e^{-1/t} floor)."""
    pos, scores, mask = scored_batch(scale=0.3)
    pos, scores = pos + 3.0, scores + 3.0  # keep the clamp N e^{-1/t} inactive
    ref = objective("info_nce", temperature=1.0).loss(pos, scores, mask)
    manual = (torch.logsumexp(torch.cat([pos[:, None], scores.masked_fill(~mask, -math.inf)], 1), 1) - pos).mean()
    assert torch.allclose(ref, manual, atol=1e-5)
    same = [
        objective("debiased", temperature=1.0, tau_plus=0.0),
        objective("hard", temperature=1.0, tau_plus=0.0, beta=0.0),
        objective("pu_corrected", temperature=1.0, alpha=0.3, c=1.0),
        objective("ring", temperature=1.0, lower=0.0, upper=1.0),
        objective("bayesian", temperature=1.0, tau_plus=0.0, alpha=0.5, beta=0.0),
    ]
    for obj in same:
        assert torch.allclose(obj.loss(pos, scores, mask), ref, atol=1e-5), obj.name


def test_plugin_uses_the_pubench_estimators():
    """The objective is the logits-form estimator on cos(l, g) / t with the own-graph mask."""
    l_enc, g_enc, batch = tiny_batch(3, dtype=torch.float32)
    t = 0.5
    cos = F.normalize(l_enc, dim=1) @ F.normalize(g_enc, dim=1).t()
    pos, mask = IG.positive_logits(cos, batch), IG.own_graph_mask(batch, 5)
    got = objective("pu_corrected", temperature=t, alpha=0.5, c=0.1)(l_enc, g_enc, batch)
    want = L.pu_corrected_from_logits(pos / t, cos / t, neg_mask=mask, alpha=0.5, c=0.1, temperature=t)
    assert torch.allclose(got, want)
    # PUCL = DEB with tau_plus = alpha (1 - c) / (1 - alpha c)
    deb = objective("debiased", temperature=t, tau_plus=0.5 * 0.9 / 0.95)(l_enc, g_enc, batch)
    assert torch.allclose(got, deb, atol=1e-5)
    got = objective("ring", temperature=t, lower=0.2, upper=0.8)(l_enc, g_enc, batch)
    assert torch.allclose(got, L.ring_from_logits(pos / t, cos / t, neg_mask=mask, lower=0.2, upper=0.8))
    # the raw-score form is the same estimator on l . g / t
    dot = l_enc @ g_enc.t()
    got = objective("debiased", score="dot", temperature=t, tau_plus=0.3)(l_enc, g_enc, batch)
    want = L.debiased_from_logits(IG.positive_logits(dot, batch) / t, dot / t, neg_mask=mask, tau_plus=0.3,
                                  temperature=t)
    assert torch.allclose(got, want)


def test_own_graph_is_never_a_negative():
    """Changing a node's own-graph score only moves the positive term."""
    pos, scores, mask = scored_batch()
    obj = objective("info_nce", temperature=1.0)
    base = obj.loss(pos, scores, mask)
    bumped = scores.clone()
    bumped[~mask] += 100.0  # own-graph entries
    assert torch.allclose(obj.loss(pos, bumped, mask), base)


@pytest.mark.parametrize("cfg, match", [
    ({"score": "cosine", "loss": {"name": "nope", "temperature": 1.0}}, "no logits form"),
    ({"score": "cosine", "loss": {"name": "debiased", "temperature": 1.0}}, "missing \\['tau_plus'\\]"),
    ({"score": "cosine", "loss": {"name": "info_nce", "temperature": 1.0, "tau_plus": 0.1}}, "unknown \\['tau_plus'\\]"),
    ({"score": "cosine", "loss": {"name": "debiased", "temperature": 1.0, "tau_plus": 1.5}}, "tau_plus"),
    ({"score": "cosine", "loss": {"name": "info_nce", "temperature": "hot"}}, "expected a number"),
    ({"score": "cosine", "loss": {"temperature": 1.0}}, "'name'"),
    ({"score": "l2", "loss": {"name": "info_nce", "temperature": 1.0}}, "score"),
    ({"score": "dot", "measure": "KL"}, "only 'JSD'"),
    ({"score": "dot"}, "exactly one"),
    ({"score": "dot", "measure": "JSD", "loss": {"name": "info_nce", "temperature": 1.0}}, "exactly one"),
])
def test_objective_validation(cfg, match):
    with pytest.raises(ConfigError, match=match):
        IG.LocalGlobalObjective.from_config(**cfg)


# ------------------------------------------------------------------ training
def fake_graphs(n=24, seed=0):
    """PyG's FakeDataset: random graphs, 3 node features, 2 classes (test data, no downloads)."""
    from torch_geometric.datasets import FakeDataset

    torch.manual_seed(seed)
    ds = FakeDataset(num_graphs=n, avg_num_nodes=8, avg_degree=2, num_channels=3, num_classes=2)
    return [ds[i] for i in range(n)]


@pytest.mark.parametrize("cfg", [
    {"measure": "JSD", "score": "dot"},
    {"loss": {"name": "info_nce", "temperature": 0.5}, "score": "cosine"},
    {"loss": {"name": "debiased", "temperature": 0.5, "tau_plus": 0.5}, "score": "cosine"},
    {"loss": {"name": "hard", "temperature": 0.5, "tau_plus": 0.5, "beta": 1.0}, "score": "cosine"},
    {"loss": {"name": "ring", "temperature": 0.5, "lower": 0.1, "upper": 0.9}, "score": "cosine"},
    {"loss": {"name": "pu_corrected", "temperature": 0.5, "alpha": 0.1, "c": 0.1}, "score": "cosine"},
    {"loss": {"name": "pu_corrected", "temperature": 0.5, "alpha": 0.5, "c": 0.1}, "score": "cosine"},
], ids=lambda c: c.get("measure") or c["loss"]["name"] + str(c["loss"].get("alpha", "")))
def test_every_objective_trains_on_generated_graphs(cfg):
    """A few epochs on PyG-generated graphs: finite losses, every parameter moves, the loss falls."""
    graphs = fake_graphs()
    torch.manual_seed(0)
    model = IG.InfoGraph(GINEncoder(3, 8, 2))
    before = [p.detach().clone() for p in model.parameters()]
    hist = IG.pretrain(model, graphs, IG.LocalGlobalObjective.from_config(**cfg),
                       epochs=6, batch_size=8, lr=1e-2, weight_decay=0.0, seed=0, ctx=PLAIN)
    assert len(hist["loss"]) == 6 and all(math.isfinite(v) for v in hist["loss"])
    assert all(0.0 <= f <= 1.0 for f in hist["floor_fraction"])
    assert all(not torch.equal(a, p) for a, p in zip(before, model.parameters()))
    assert hist["loss"][-1] < hist["loss"][0]


@pytest.mark.parametrize("loss", [
    {"name": "info_nce", "temperature": 0.5},
    {"name": "pu_corrected", "temperature": 0.5, "alpha": 0.1, "c": 0.1},
    None,
])
def test_loss_decreases_on_toy_data(loss):
    graphs = toy_graphs(16)
    torch.manual_seed(0)
    model = IG.InfoGraph(GINEncoder(3, 16, 2))
    obj = (IG.LocalGlobalObjective.from_config(score="cosine", loss=loss) if loss
           else IG.LocalGlobalObjective.from_config(score="dot", measure="JSD"))
    hist = IG.pretrain(model, graphs, obj, epochs=15, batch_size=16, lr=1e-3, weight_decay=0.0, seed=0, ctx=PLAIN)
    assert len(hist["loss"]) == 15 and all(math.isfinite(v) for v in hist["loss"])
    assert np.mean(hist["loss"][-3:]) < np.mean(hist["loss"][:3]) - 0.05 * abs(np.mean(hist["loss"][:3]))


def floor_after_training(score, temperature, epochs=40):
    graphs = toy_graphs(24)
    torch.manual_seed(0)
    model = IG.InfoGraph(GINEncoder(3, 16, 3))
    obj = objective("pu_corrected", score=score, temperature=temperature, alpha=0.1, c=0.1)
    hist = IG.pretrain(model, graphs, obj, epochs=epochs, batch_size=24, lr=1e-3, weight_decay=0.0, seed=0, ctx=PLAIN)
    return hist["floor_fraction"]


def test_floor_rarely_binds_on_normalised_scores():
    """The audit's failure: on raw discriminator dot products at t = 1 PUCL's floor binds for
    many node anchors once trained (the negatives then get no gradient). On cos / t, with
    h in [e^{-1/t}, e^{1/t}] as 000 eq. 8 assumes, it binds for few (trained toy run)."""
    raw = floor_after_training("dot", 1.0)
    cos = floor_after_training("cosine", TABLE2_TEMPERATURE)
    assert max(cos[-5:]) < 0.1
    assert min(raw[-5:]) > 0.3


def test_prepare_batches_are_seeded_and_cover_the_data():
    graphs = toy_graphs(10)
    for g, k in zip(graphs, range(len(graphs))):
        g.y = torch.tensor([k])
    a = IG.prepare_batches(graphs, 6, seed=1)
    b = IG.prepare_batches(graphs, 6, seed=1)
    c = IG.prepare_batches(graphs, 6, seed=2)
    order = lambda seed: IG.batch_order(len(graphs), seed)  # noqa: E731
    assert order(1) == order(1) != order(2) and sorted(order(1)) == list(range(20))
    assert [pb.graphs.num_graphs for pb in a] == [6, 6, 6, 2]
    for pb, pb2 in zip(a, b):
        assert torch.equal(pb.graphs.first_input, pb2.graphs.first_input)
        assert torch.equal(pb.neg_mask, IG.own_graph_mask(pb.graphs.batch, pb.graphs.num_graphs))
    first = batch_of([graphs[i] for i in order(1)[:6]])
    assert torch.equal(a[0].graphs.batch, first.batch)
    assert not torch.equal(a[0].graphs.first_input, c[0].graphs.first_input)


def test_training_is_deterministic_given_seed():
    graphs = toy_graphs(8)
    obj = objective("hard", temperature=0.5, tau_plus=0.5, beta=1.0)
    embs = []
    for _ in range(2):
        torch.manual_seed(5)
        model = IG.InfoGraph(GINEncoder(3, 8, 2))
        IG.pretrain(model, graphs, obj, epochs=2, batch_size=8, lr=1e-3, weight_decay=0.0, seed=5, ctx=PLAIN)
        embs.append(IG.embed(model.encoder, graphs))
    assert embs[0].shape == (16, 16) and np.array_equal(embs[0], embs[1])


# ------------------------------------------------------------------ SVM protocol
def blobs(n=90, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    x = rng.normal(size=(n, 5)) + y[:, None] * 0.8
    return x, y


def test_svm_cv_deterministic_given_seed():
    x, y = blobs()
    a = svm_cv(x, y, seed=3, folds=5, C=[0.1, 1, 10], inner_folds=3)
    b = svm_cv(x, y, seed=3, folds=5, C=[0.1, 1, 10], inner_folds=3)
    c = svm_cv(x, y, seed=4, folds=5, C=[0.1, 1, 10], inner_folds=3)
    assert a == b
    assert a["fold_acc"] != c["fold_acc"]  # other folds
    assert 40 < a["acc"] <= 100 and len(a["fold_acc"]) == 5 and set(a["C"]) <= {0.1, 1, 10}
    assert math.isclose(a["acc"], np.mean(a["fold_acc"]), abs_tol=1e-3)


def test_svm_cv_matches_a_direct_sklearn_protocol():
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.svm import SVC

    x, y = blobs(60, seed=1)
    accs = []
    for tr, te in StratifiedKFold(4, shuffle=True, random_state=7).split(x, y):
        gs = GridSearchCV(SVC(), {"C": [1.0, 100.0]}, cv=3).fit(x[tr], y[tr])
        accs.append((gs.predict(x[te]) == y[te]).mean() * 100)
    got = svm_cv(x, y, seed=7, folds=4, C=[1, 100], inner_folds=3)
    assert math.isclose(got["acc"], float(np.mean(accs)))


def test_svm_cv_rejects_bad_input():
    x, y = blobs()
    with pytest.raises(ValueError):
        svm_cv(x[:, 0], y, seed=0)
    x[0, 0] = np.nan
    with pytest.raises(FloatingPointError):
        svm_cv(x, y, seed=0)


# ------------------------------------------------------------------ task
def task_params(**over):
    p = {
        "data": {"dataset": "tiny_toy"},
        "model": {"backbone": {"name": "gin", "hidden": 8, "layers": 2}},
        "pretrain": {"score": "cosine", "loss": {"name": "pu_corrected", "temperature": 1.0, "alpha": 0.1, "c": 0.1},
                     "epochs": 2, "batch_size": 8, "optimizer": {"name": "adam", "lr": 1.0e-3}},
        "eval": {"name": "svm_cv", "folds": 3, "inner_folds": 2, "C": [1, 10], "at_init": True},
    }
    for k, v in over.items():
        p[k] = {kk: vv for kk, vv in {**p[k], **v}.items() if vv is not None}
    return p


@pytest.fixture
def toy_root(tmp_path, monkeypatch):
    """A GIN-format toy data set registered as ``tiny_toy`` under a temporary data root."""
    from pubench.data import DATASETS, source

    graphs = toy_graphs(12)
    lines = [str(len(graphs))]
    for g in graphs:
        lines.append(f"{g.num_nodes} {int(g.y)}")
        nbrs = [[] for _ in range(g.num_nodes)]
        for u, v in g.edge_index.t().tolist():
            nbrs[u].append(v)
        for i in range(g.num_nodes):
            lines.append(" ".join(map(str, [int(g.x[i].argmax()), len(nbrs[i])] + nbrs[i])))
    path = tmp_path / "gin" / "TOY" / "TOY.txt"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    spec = G.GraphDatasetSpec("tiny_toy", "TOY", "TOY", 24, sum(g.num_nodes for g in graphs), 0, (12, 12), True,
                              reads="gin")
    monkeypatch.setitem(G.SPECS, "tiny_toy", spec)
    monkeypatch.setitem(DATASETS._items, "tiny_toy", spec)
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path))
    source._graphs.cache_clear()
    yield tmp_path
    source._graphs.cache_clear()


def test_task_end_to_end_and_deterministic(toy_root):
    from pubench.tasks import TASKS

    task = functools.partial(TASKS.get("infograph").run, ctx=PLAIN)
    a = task(task_params(), {"init": 1, "data": 2})
    b = task(task_params(), {"init": 1, "data": 2})
    assert a.metrics == b.metrics and 0 <= a.metrics["acc"] <= 100
    info = a.info
    assert len(info["fold_acc"]) == 3 and info["acc_std_over_folds"] >= 0 and len(info["loss_curve"]) == 2
    assert "acc_at_init" in info and info["dataset"]["source"] == "gin" and info["graphs_used"] == 24
    assert len(info["floor_fraction_curve"]) == 2 and info["floor_fraction"] == info["floor_fraction_curve"][-1]
    c = task(task_params(data={"subset": 12}), {"init": 1, "data": 2})
    assert c.info["graphs_used"] == 12


def test_task_untrained_encoder_row(toy_root):
    """epochs = 0: no objective, no training; the score is the randomly initialised encoder's,
    i.e. what ``eval.at_init`` reports for the same init seed."""
    from pubench.tasks import TASKS

    params = task_params()
    params["pretrain"] = {"epochs": 0, "batch_size": 8, "optimizer": {"name": "adam", "lr": 1.0e-3}}
    out = TASKS.get("infograph").run(params, {"init": 1, "data": 2}, ctx=PLAIN)
    info = out.info
    assert out.metrics["acc"] == info["acc_at_init"]
    assert info["loss_curve"] == [] and info["floor_fraction"] is None and info["epoch_s_mean"] == 0


@pytest.mark.parametrize("over, match", [
    ({"data": {"dataset": "cifar10x"}}, "unknown dataset"),
    ({"data": {"features": "random"}}, "features"),
    ({"model": {"backbone": {"name": "resnet18", "hidden": 8, "layers": 2}}}, "only 'gin'"),
    ({"pretrain": {"optimizer": {"name": "sgd", "lr": 0.1}}}, "only 'adam'"),
    ({"pretrain": {"loss": {"name": "debiased", "temperature": 1.0}}}, "tau_plus"),
    ({"pretrain": {"score": None}}, "missing key 'score'"),
    ({"pretrain": {"measure": "JSD"}}, "exactly one"),
    ({"pretrain": {"epochs": 0}}, "takes no 'score'"),
    ({"eval": {"name": "knn"}}, "svm_cv"),
    ({"eval": {"folds": 3, "extra": 1}}, "unknown key 'extra'"),
])
def test_task_validates_params(toy_root, over, match):
    from pubench.tasks import TASKS

    with pytest.raises((ConfigError, KeyError), match=match):
        TASKS.get("infograph").run(task_params(**over), {"init": 0, "data": 0}, ctx=PLAIN)


def test_spec_tiers_resolve_to_valid_params():
    """Every cell of table2-pucl validates at every tier (no data needed): InfoGraph is
    InfoGraph's JSD on raw scores, the corrections (and the InfoNCE reference) run on
    cos / t with one temperature, the untrained-encoder row trains nothing at any tier."""
    from pubench.registry import get_spec
    from pubench.tasks.infograph import parse_params

    s = get_spec("table2-pucl")
    for tier in ("paper", "reduced", "smoke"):
        for r in s.rows:
            for c in s.cols:
                assert not s.unavailable_reason(tier, r, c)
                cfg, obj = parse_params(s.resolve(tier, r, c)["params"])
                if r == "untrained encoder":
                    assert obj is None and cfg.pretrain.epochs == 0
                elif r == "InfoGraph":
                    assert (obj.name, obj.score) == (IG.JSD, "dot")
                else:
                    assert logits_form(obj.name) is not None and obj.score == "cosine"
                    assert obj.temperature == TABLE2_TEMPERATURE
    paper = parse_params(s.resolve("paper", "InfoGraph", "DD")["params"])[0]
    assert (paper.pretrain.epochs, paper.pretrain.batch_size, paper.model.backbone.hidden) == (200, 128, 32)
    assert parse_params(s.resolve("reduced", "InfoGraph", "DD")["params"])[0].pretrain.epochs == 20
