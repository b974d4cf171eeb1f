"""InfoGraph track (issue 6): GIN encoder, local-global scoring, estimator plug-in, JSD
reference, training on a toy data set, SVM protocol determinism, task validation and an
end-to-end task run on generated graphs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import pubench.data.graphs as G
import pubench.losses as L
from pubench.models import BACKBONES
from pubench.models.gin import GINEncoder
from pubench.train import infograph as IG
from pubench.train.svm_eval import svm_cv
from pubench.utils.config import ConfigError


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
def test_local_global_logits_against_loop():
    torch.manual_seed(0)
    batch = torch.tensor([0, 0, 1, 2, 2, 2])
    l_enc, g_enc = torch.randn(6, 5), torch.randn(3, 5)
    pos, scores, mask = IG.local_global_logits(l_enc, g_enc, batch)
    for i in range(6):
        assert torch.isclose(pos[i], l_enc[i] @ g_enc[batch[i]])
        for j in range(3):
            assert torch.isclose(scores[i, j], l_enc[i] @ g_enc[j])
            assert bool(mask[i, j]) == (j != int(batch[i]))


def naive_jsd(pos_mask_scores, neg_mask_scores, n_nodes, n_graphs):
    """InfoGraph's local_global_loss_ with measure='JSD', literally (0/1 masks times scores)."""
    log2 = math.log(2.0)
    e_pos = (log2 - F.softplus(-pos_mask_scores)).sum() / n_nodes
    e_neg = (F.softplus(-neg_mask_scores) + neg_mask_scores - log2).sum() / (n_nodes * (n_graphs - 1))
    return e_neg - e_pos


def test_jsd_matches_infograph_reference():
    torch.manual_seed(1)
    batch = torch.tensor([0, 0, 1, 1, 1, 2, 3, 3])
    l_enc, g_enc = torch.randn(8, 6) * 2, torch.randn(4, 6)
    res = l_enc @ g_enc.t()
    pos_mask = F.one_hot(batch, 4).float()
    ref = naive_jsd(res * pos_mask, res * (1 - pos_mask), 8, 4)
    pos, scores, mask = IG.local_global_logits(l_enc, g_enc, batch)
    assert torch.allclose(IG.jsd_from_logits(pos, scores, neg_mask=mask), ref, atol=1e-5)


def objective(name, **hyper):
    return IG.LocalGlobalObjective.from_config({"name": name, **hyper})


def scored_batch(scale=1.0, seed=0):
    torch.manual_seed(seed)
    batch = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 3, 4])
    return IG.local_global_logits(torch.randn(10, 4) * scale, torch.randn(5, 4) * scale, batch)


def test_plugin_reduces_to_infonce():
    """DEB with tau_plus = 0, Hard with tau_plus = 0 and beta = 0, PUCL with c = 1, Ring on
    [0, 1] and BCL with tau_plus = 0, beta = 0 all equal the InfoNCE form (logits well above
    the e^{-1/t} floor)."""
    pos, scores, mask = scored_batch(scale=0.3)
    pos, scores = pos + 3.0, scores + 3.0  # keep the clamp N e^{-1/t} inactive
    ref = objective("info_nce", temperature=1.0)(pos, scores, mask)
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
        assert torch.allclose(obj(pos, scores, mask), ref, atol=1e-5), obj.name


def test_plugin_uses_the_pubench_estimators():
    """The objective is the logits-form estimator on (pos, scores) / t with the own-graph mask."""
    pos, scores, mask = scored_batch(scale=1.0, seed=3)
    t = 0.5
    got = objective("pu_corrected", temperature=t, alpha=0.5, c=0.1)(pos, scores, mask)
    want = L.pu_corrected_from_logits(pos / t, scores / t, neg_mask=mask, alpha=0.5, c=0.1, temperature=t)
    assert torch.allclose(got, want)
    # PUCL = DEB with tau_plus = alpha (1 - c) / (1 - alpha c)
    deb = objective("debiased", temperature=t, tau_plus=0.5 * 0.9 / 0.95)(pos, scores, mask)
    assert torch.allclose(got, deb, atol=1e-5)
    got = objective("ring", temperature=t, lower=0.2, upper=0.8)(pos, scores, mask)
    assert torch.allclose(got, L.ring_from_logits(pos / t, scores / t, neg_mask=mask, lower=0.2, upper=0.8))


def test_own_graph_is_never_a_negative():
    """Changing a node's own-graph score only moves the positive term."""
    pos, scores, mask = scored_batch()
    obj = objective("info_nce", temperature=1.0)
    base = obj(pos, scores, mask)
    bumped = scores.clone()
    bumped[~mask] += 100.0  # own-graph entries
    assert torch.allclose(obj(pos, bumped, mask), base)


@pytest.mark.parametrize("loss, match", [
    ({"name": "nope", "temperature": 1.0}, "no logits form"),
    ({"name": "debiased", "temperature": 1.0}, "missing \\['tau_plus'\\]"),
    ({"name": "info_nce", "temperature": 1.0, "tau_plus": 0.1}, "unknown \\['tau_plus'\\]"),
    ({"name": "debiased", "temperature": 1.0, "tau_plus": 1.5}, "tau_plus"),
    ({"name": "info_nce", "temperature": "hot"}, "expected a number"),
    ({"temperature": 1.0}, "'name'"),
])
def test_objective_validation(loss, match):
    with pytest.raises(ValueError, match=match):
        IG.LocalGlobalObjective.from_config(loss)


# ------------------------------------------------------------------ training
@pytest.mark.parametrize("loss", [
    {"name": "info_nce", "temperature": 1.0},
    {"name": "pu_corrected", "temperature": 1.0, "alpha": 0.1, "c": 0.1},
    {"name": "infograph_jsd"},
])
def test_loss_decreases_on_toy_data(loss):
    graphs = toy_graphs(16)
    torch.manual_seed(0)
    model = IG.InfoGraph(GINEncoder(3, 16, 2))
    hist = IG.pretrain(model, graphs, IG.LocalGlobalObjective.from_config(loss),
                       epochs=15, batch_size=16, lr=1e-3, seed=0)
    assert len(hist["loss"]) == 15 and all(math.isfinite(v) for v in hist["loss"])
    assert np.mean(hist["loss"][-3:]) < 0.8 * np.mean(hist["loss"][:3])


def test_fixed_batches_are_seeded_and_cover_the_data():
    graphs = toy_graphs(10)
    for g, k in zip(graphs, range(len(graphs))):
        g.gid = torch.tensor([k])
    a = IG.fixed_batches(graphs, 6, seed=1)
    b = IG.fixed_batches(graphs, 6, seed=1)
    c = IG.fixed_batches(graphs, 6, seed=2)
    ids = lambda bs: torch.cat([x.gid for x in bs]).tolist()  # noqa: E731
    assert ids(a) == ids(b) != ids(c)
    assert sorted(ids(a)) == list(range(20)) and [x.num_graphs for x in a] == [6, 6, 6, 2]


def test_training_is_deterministic_given_seed():
    graphs = toy_graphs(8)
    obj = IG.LocalGlobalObjective.from_config({"name": "hard", "temperature": 1.0, "tau_plus": 0.5, "beta": 1.0})
    embs = []
    for _ in range(2):
        torch.manual_seed(5)
        model = IG.InfoGraph(GINEncoder(3, 8, 2))
        IG.pretrain(model, graphs, obj, epochs=2, batch_size=8, lr=1e-3, seed=5)
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
        "pretrain": {"loss": {"name": "pu_corrected", "temperature": 1.0, "alpha": 0.1, "c": 0.1},
                     "epochs": 2, "batch_size": 8, "optimizer": {"name": "adam", "lr": 1.0e-3}},
        "eval": {"name": "svm_cv", "folds": 3, "inner_folds": 2, "C": [1, 10], "at_init": True},
    }
    for k, v in over.items():
        p[k] = {**p[k], **v}
    return p


@pytest.fixture
def toy_root(tmp_path, monkeypatch):
    """A GIN-format toy data set registered as ``tiny_toy`` under a temporary data root."""
    from pubench.data import DATASETS
    from pubench.tasks import infograph as task_mod

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
    spec = G.GraphDatasetSpec("tiny_toy", "TOY", "TOY", 24, sum(g.num_nodes for g in graphs), 0, (12, 12), True)
    monkeypatch.setitem(G.SPECS, "tiny_toy", spec)
    monkeypatch.setitem(DATASETS._items, "tiny_toy", spec)
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path))
    task_mod._load.cache_clear()
    yield tmp_path
    task_mod._load.cache_clear()


def test_task_end_to_end_and_deterministic(toy_root):
    from pubench.tasks import TASKS

    task = TASKS.get("infograph")
    a = task(task_params(), {"init": 1, "data": 2})
    b = task(task_params(), {"init": 1, "data": 2})
    assert a["metrics"] == b["metrics"] and 0 <= a["metrics"]["acc"] <= 100
    info = a["info"]
    assert len(info["fold_acc"]) == 3 and info["acc_std_over_folds"] >= 0 and len(info["loss_curve"]) == 2
    assert "acc_at_init" in info and info["dataset"]["source"] == "gin" and info["graphs_used"] == 24
    c = task(task_params(data={"subset": 12}), {"init": 1, "data": 2})
    assert c["info"]["graphs_used"] == 12


@pytest.mark.parametrize("over, match", [
    ({"data": {"dataset": "cifar10x"}}, "unknown dataset"),
    ({"data": {"features": "random"}}, "features"),
    ({"model": {"backbone": {"name": "resnet18", "hidden": 8, "layers": 2}}}, "only 'gin'"),
    ({"pretrain": {"optimizer": {"name": "sgd", "lr": 0.1}}}, "only 'adam'"),
    ({"pretrain": {"loss": {"name": "debiased", "temperature": 1.0}}}, "tau_plus"),
    ({"eval": {"name": "knn"}}, "svm_cv"),
    ({"eval": {"folds": 3, "extra": 1}}, "unknown key 'extra'"),
])
def test_task_validates_params(toy_root, over, match):
    from pubench.tasks import TASKS

    with pytest.raises((ConfigError, KeyError), match=match):
        TASKS.get("infograph")(task_params(**over), {"init": 0, "data": 0})


def test_spec_tiers_resolve_to_valid_params():
    """Every cell of table2-pucl validates at every tier (no data needed)."""
    from pubench.registry import get_spec
    from pubench.tasks.infograph import parse_params

    s = get_spec("table2-pucl")
    for tier in ("paper", "reduced", "smoke"):
        for r in s.rows:
            for c in s.cols:
                assert not s.unavailable_reason(tier, r, c)
                cfg, obj = parse_params(s.resolve(tier, r, c)["params"])
                assert obj.name in IG.LOGIT_FORMS
    paper = parse_params(s.resolve("paper", "InfoGraph", "DD")["params"])[0]
    assert (paper.pretrain.epochs, paper.pretrain.batch_size, paper.model.backbone.hidden) == (200, 128, 32)
    assert parse_params(s.resolve("reduced", "InfoGraph", "DD")["params"])[0].pretrain.epochs == 20
