"""puPL (003 Algorithm 2): PU-seeded 2-means recovers two separated Gaussian blobs; the
downstream unit trains a classifier on its pseudo-labels."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import torch.nn.functional as F

from pubench.downstream import DOWNSTREAM
from pubench.downstream.pupl import PuPL, pseudo_labels, pu_two_means
from pubench.pu.data import DownstreamData
from pubench.train.context import PLAIN
from pubench.utils.config import ConfigError, build_config


pytestmark = pytest.mark.usefixtures("one_thread")



def _blobs(n=600, d=5, sep=6.0, prior=0.4, n_labeled=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = (torch.rand(n, generator=g) < prior).long()
    centre = torch.zeros(2, d)
    centre[1, 0] = sep
    x = centre[y] + torch.randn(n, d, generator=g)
    pos = torch.nonzero(y == 1).squeeze(1)
    labeled = torch.zeros(n, dtype=torch.bool)
    labeled[pos[torch.randperm(len(pos), generator=g)[:n_labeled]]] = True
    return x, y, labeled


def test_recovers_blobs():
    for seed in range(5):
        x, y, labeled = _blobs(seed=seed)
        km = pu_two_means(x, labeled, np.random.default_rng(seed))
        assert km["converged"]
        assert float((km["labels"] == y).float().mean()) > 0.99
        assert bool(km["labels"][labeled].all())
        # centres close to the true means: positive centre ~ (6, 0, ...), negative ~ 0
        assert torch.allclose(km["centers"][1][0], torch.tensor(6.0, dtype=torch.float64), atol=0.3)
        assert km["centers"][0].abs().max() < 0.3


def test_seeding_is_d2_weighted_and_deterministic():
    x, y, labeled = _blobs(seed=1)
    a = pu_two_means(x, labeled, np.random.default_rng(3), max_iter=1)
    b = pu_two_means(x, labeled, np.random.default_rng(3), max_iter=1)
    assert torch.equal(a["centers"], b["centers"]) and torch.equal(a["labels"], b["labels"])
    # D^2 seeding picks negatives (far from mu_P) far more often than their share
    picks = []
    for s in range(200):
        rng = np.random.default_rng(s)
        unl = torch.nonzero(~labeled).squeeze(1)
        mu = x[labeled].double().mean(0)
        d2 = ((x[unl].double() - mu) ** 2).sum(1).numpy()
        j = int(rng.choice(len(unl), p=d2 / d2.sum()))
        picks.append(int(y[unl[j]]))
    assert np.mean(picks) < 0.1


def test_fix_labeled_keeps_positives():
    x, _, labeled = _blobs(sep=0.5, seed=2)  # overlapping: some labeled would move
    free = pu_two_means(x, labeled, np.random.default_rng(0), fix_labeled=False)
    fixed = pu_two_means(x, labeled, np.random.default_rng(0), fix_labeled=True)
    assert bool(fixed["labels"][labeled].all())
    assert free["iterations"] >= 1


def _separated(seed, normalize):
    """Two well separated blobs in 32 dimensions, off the origin (as non-negative CNN features
    are), 20 labeled positives: 2-means recovers the classes up to the cluster names."""
    x, y, labeled = _blobs(n=1000, d=32, sep=6.0, prior=0.4, n_labeled=20, seed=seed)
    x = x + 3.0
    return (F.normalize(x, dim=1) if normalize else x), y, labeled


def _unlabeled_acc(labels, y, labeled):
    return float((labels[~labeled] == y[~labeled]).float().mean())


DRAWS = range(100)


def test_printed_algorithm2_orientation_inverts_some_draws():
    """Why ``orientation`` exists: the cluster seeded at mu_P is not always the positive one
    after Lloyd's iterations (the D^2 draw landed on a far positive; pupl.py docstring)."""
    inverted = 0
    for seed in DRAWS:
        x, y, labeled = _separated(seed, normalize=False)
        km = pu_two_means(x, labeled, np.random.default_rng(seed))
        printed, _ = pseudo_labels(km, x, labeled, "algorithm2", True)
        assert torch.equal(printed, km["labels"])
        if _unlabeled_acc(printed, y, labeled) < 0.5:
            inverted += 1
            # a clean inversion of a correct clustering, which the other orientation names right
            assert _unlabeled_acc(printed, y, labeled) < 0.05
            named, seeded_is_positive = pseudo_labels(km, x, labeled, "nearest_positive_mean", True)
            assert not seeded_is_positive and _unlabeled_acc(named, y, labeled) > 0.95
            assert bool(named[labeled].all())
    assert inverted >= 10  # 15 of these 100 draws


@pytest.mark.parametrize("orientation", ["nearest_positive_mean", "labeled_enrichment"])
@pytest.mark.parametrize("normalize", [False, True])
def test_named_orientations_never_invert_separable_data(normalize, orientation):
    """The orientation the pupl specs use (nearest_positive_mean) and labeled_enrichment:
    pseudo-label accuracy > 0.5 (here > 0.95) in every draw."""
    flipped = 0
    for seed in DRAWS:
        x, y, labeled = _separated(seed, normalize)
        km = pu_two_means(x, labeled, np.random.default_rng(seed))
        labels, seeded_is_positive = pseudo_labels(km, x, labeled, orientation, True)
        assert _unlabeled_acc(labels, y, labeled) > 0.95, seed
        assert bool(labels[labeled].all())
        flipped += not seeded_is_positive
    assert flipped >= 5  # the renaming was needed in some draws, not a no-op


def test_labeled_enrichment_names_the_purer_positive_cluster():
    """The split weak encoders give (reduced fig5-pupl / fig14-pupl): the cluster seeded at mu_P
    holds every negative, half the positives and the pinned labeled positives; the other holds
    the other half of the positives. Its centre stays nearest mu_P, so nearest_positive_mean
    inverts the pseudo-labels; the labeled positives are over-represented in the other one."""
    n_neg, n_half, n_lab_half = 1200, 400, 250
    feats = torch.cat([torch.zeros(n_neg), torch.full((n_half,), 0.2), torch.full((n_half,), 5.0),
                       torch.full((n_lab_half,), 0.2), torch.full((n_lab_half,), 5.0)]).unsqueeze(1)
    y = torch.cat([torch.zeros(n_neg), torch.ones(2 * n_half + 2 * n_lab_half)]).long()
    labeled = torch.zeros(len(y), dtype=torch.bool)
    labeled[n_neg + 2 * n_half:] = True
    seeded = torch.ones(len(y), dtype=torch.long)      # km index 1: the cluster seeded at mu_P
    seeded[n_neg + n_half:n_neg + 2 * n_half] = 0     # the far unlabeled positives
    centers = torch.stack([feats[seeded == 0].mean(0), feats[seeded == 1].mean(0)]).to(torch.float64)
    km = {"labels": seeded, "centers": centers}
    nearest, nearest_seeded = pseudo_labels(km, feats, labeled, "nearest_positive_mean", True)
    assert nearest_seeded and _unlabeled_acc(nearest, y, labeled) < 0.25           # inverted
    enriched, enriched_seeded = pseudo_labels(km, feats, labeled, "labeled_enrichment", True)
    assert not enriched_seeded and _unlabeled_acc(enriched, y, labeled) > 0.75
    assert bool(enriched[labeled].all())


def test_labeled_enrichment_maximizes_balanced_accuracy_not_accuracy():
    """The near-chance case where the two namings part ways (fig12-pupl's CIFAR-medium): the
    clusters split the positive classes, not P from N. Cluster A holds one positive class
    only, B the other positives and every negative, and U is 80% positive. Enrichment names
    the purer cluster A (higher balanced accuracy, 62.5 vs 37.5%), although naming B positive
    is more accurate on U (60 vs 40%), which a rule could only know from the class prior."""
    u_a, u_b_pos, u_b_neg, l_a, l_b = 300, 900, 300, 100, 300
    feats = torch.cat([torch.full((u_a,), 5.0), torch.full((u_b_pos,), 0.2), torch.zeros(u_b_neg),
                       torch.full((l_a,), 5.0), torch.full((l_b,), 0.2)]).unsqueeze(1)
    y = torch.cat([torch.ones(u_a + u_b_pos), torch.zeros(u_b_neg), torch.ones(l_a + l_b)]).long()
    labeled = torch.zeros(len(y), dtype=torch.bool)
    labeled[u_a + u_b_pos + u_b_neg:] = True
    in_a = feats[:, 0] > 2.5
    km = {"labels": (~in_a).long(),  # km index 1 (seeded at mu_P = 1.4): cluster B
          "centers": torch.stack([feats[in_a].mean(0), feats[~in_a].mean(0)]).to(torch.float64)}

    def balanced_acc(labels):
        yu, pu = y[~labeled], labels[~labeled]
        return 0.5 * (float((pu[yu == 1] == 1).float().mean()) + float((pu[yu == 0] == 0).float().mean()))

    enriched, _ = pseudo_labels(km, feats, labeled, "labeled_enrichment", True)
    nearest, _ = pseudo_labels(km, feats, labeled, "nearest_positive_mean", True)
    assert enriched[:u_a].eq(1).all() and enriched[u_a:u_a + u_b_pos + u_b_neg].eq(0).all()
    assert balanced_acc(enriched) == pytest.approx(0.625) and balanced_acc(nearest) == pytest.approx(0.375)
    assert _unlabeled_acc(enriched, y, labeled) == pytest.approx(0.4)
    assert _unlabeled_acc(nearest, y, labeled) == pytest.approx(0.6)


def test_two_means_cannot_name_a_pu_split_that_crosses_the_clusters():
    """Issue 36, puPL at chance on F-MNIST-I/II (reduced table2-pupl / table3-pupl): positives
    {trouser, coat, sneaker} take one class out of each natural group, so the data's 2-cluster
    structure (here: group A, 4 classes with 1 positive; group B, 6 classes with 2 positives, as
    footwear + bags vs garments on Fashion-MNIST) holds the positives at about the prior in both
    clusters. 2-means finds the groups, and any naming of them is ~50% right, although the
    positives are linearly separable along a second axis (which nnPU's linear probe can use).
    Measured on the real job: benchmarks/reduced_internals.py pupl-fmnist."""
    g = torch.Generator().manual_seed(0)
    n = 3000
    cls = torch.randint(0, 10, (n,), generator=g)
    group_a = cls >= 6                               # 4 of the 10 classes
    y = ((cls == 0) | (cls == 1) | (cls == 6)).long()  # one positive class in A, two in B: prior 0.3
    x = torch.randn(n, 3, generator=g) * 0.3
    x[:, 0] += 10.0 * group_a                        # the dominant structure: the two groups
    x[:, 1] += 2.0 * y                               # the PU label: a weaker direction
    pos = torch.nonzero(y == 1).squeeze(1)
    labeled = torch.zeros(n, dtype=torch.bool)
    labeled[pos[torch.randperm(len(pos), generator=g)[:150]]] = True
    assert float(((x[:, 1] > 1.0).long() == y).float().mean()) > 0.99  # a linear rule separates P from N
    for seed in range(5):
        km = pu_two_means(x, labeled, np.random.default_rng(seed))
        found = km["labels"][~labeled].bool()
        assert min(float((found == group_a[~labeled]).float().mean()), float((found != group_a[~labeled]).float().mean())) < 0.01
        shares = [float(y[~labeled][km["labels"][~labeled] == k].float().mean()) for k in (0, 1)]
        assert all(0.2 < v < 0.4 for v in shares) and abs(shares[0] - shares[1]) < 0.12  # ~ the prior in both
        for orientation in ("algorithm2", "nearest_positive_mean", "labeled_enrichment"):
            named, _ = pseudo_labels(km, x, labeled, orientation, True)
            assert 0.4 < _unlabeled_acc(named, y, labeled) < 0.6, (seed, orientation)


def test_pinned_labeled_positives_can_decide_nearest_positive_mean():
    """Issue 36, ssCL on MNIST-I n_L = 10k, seed 1 (table1-pupl reduced, test AUC 43): the counts of
    that job's clustering (benchmarks/reduced_internals.py sscl-mnist) on a line. U splits into cluster 1
    (seeded at mu_P: 5,163 rows, 31.9% positive) and cluster 0 (3,170 rows, 55.9% positive); the
    1,667 labeled positives fall like U's positives (803 near cluster 1, 864 near cluster 0) and
    are all pinned to cluster 1, whose centre they pull towards mu_P. nearest_positive_mean then
    names cluster 1 positive (pseudo-label accuracy 36.6%, as the job's 36.55%); without the pins
    its centre would be the farther one. labeled_enrichment names cluster 0 (63.4%)."""
    u1_pos, u1_neg, u0_pos, u0_neg, l1, l0 = 1647, 3516, 1772, 1398, 803, 864
    feats = torch.cat([torch.zeros(u1_pos + u1_neg), torch.ones(u0_pos + u0_neg),
                       torch.zeros(l1), torch.ones(l0)]).unsqueeze(1).to(torch.float64)
    y = torch.cat([torch.ones(u1_pos), torch.zeros(u1_neg), torch.ones(u0_pos), torch.zeros(u0_neg),
                   torch.ones(l1 + l0)]).long()
    labeled = torch.zeros(len(y), dtype=torch.bool)
    labeled[-(l1 + l0):] = True
    assign = torch.cat([torch.ones(u1_pos + u1_neg), torch.zeros(u0_pos + u0_neg), torch.ones(l1 + l0)]).long()
    centers = torch.stack([feats[assign == 0].mean(0), feats[assign == 1].mean(0)])  # Lloyd's fixed point
    km = {"labels": assign, "centers": centers}
    mu_p = float(feats[labeled].mean())
    assert abs(float(centers[1]) - mu_p) < abs(float(centers[0]) - mu_p)  # pinned: cluster 1 nearer mu_P
    unpinned = float(feats[(assign == 1) & ~labeled].mean())
    assert abs(unpinned - mu_p) > abs(float(centers[0]) - mu_p)           # its U members alone: farther
    nearest, seeded = pseudo_labels(km, feats, labeled, "nearest_positive_mean", True)
    assert seeded and _unlabeled_acc(nearest, y, labeled) == pytest.approx(0.3656, abs=1e-3)
    enriched, seeded = pseudo_labels(km, feats, labeled, "labeled_enrichment", True)
    assert not seeded and _unlabeled_acc(enriched, y, labeled) == pytest.approx(0.6344, abs=1e-3)


def test_pseudo_labels_orientation_rule():
    feats = torch.tensor([[0.0], [0.2], [5.0], [5.2], [4.9]])
    labeled = torch.tensor([False, False, True, False, False])
    km = {"labels": torch.tensor([1, 1, 1, 0, 0]), "centers": torch.tensor([[5.05], [1.0]], dtype=torch.float64)}
    assert torch.equal(pseudo_labels(km, feats, labeled, "algorithm2", True)[0], km["labels"])
    named, seeded = pseudo_labels(km, feats, labeled, "nearest_positive_mean", True)
    assert not seeded and named.tolist() == [0, 0, 1, 1, 1]
    named, _ = pseudo_labels(km, feats, labeled, "nearest_positive_mean", False)
    assert named.tolist() == [0, 0, 0, 1, 1]  # without fix_labeled the labeled positive follows its cluster
    km["centers"] = torch.tensor([[0.1], [5.0]], dtype=torch.float64)
    named, seeded = pseudo_labels(km, feats, labeled, "nearest_positive_mean", True)
    assert seeded and torch.equal(named, km["labels"])
    with pytest.raises(ValueError, match="orientation"):
        pseudo_labels(km, feats, labeled, "farthest", True)


def test_errors():
    x, _, labeled = _blobs()
    with pytest.raises(ValueError, match="labeled positive"):
        pu_two_means(x, torch.zeros_like(labeled), np.random.default_rng(0))


class Identity(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.out_dim = d
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return x.flatten(1)


def _as_images(x):
    """Blob features as 1 x 1 x d 'images' (uint8, affine-mapped)."""
    return ((x + 4) * 16).clamp(0, 255).round().to(torch.uint8).view(x.shape[0], 1, 1, -1)


def test_pupl_downstream_end_to_end():
    x, y, labeled = _blobs(seed=4)
    xt, yt, _ = _blobs(n=300, seed=5)
    data = DownstreamData(x_train=_as_images(x), observed=labeled.long(), y_true=y, split_kind="pu", n_classes=2,
                          prior=None, x_test=_as_images(xt), y_test=yt, mean=[0.25], std=[0.0625])
    assert DOWNSTREAM.get("pupl") is PuPL
    base = {"name": "pupl", "epochs": 30, "batch_size": 64, "optimizer": {"name": "adam", "lr": 0.05}}
    variant = {"orientation": "algorithm2", "normalize": False}
    for key in variant:  # no default: the spec says which variant
        with pytest.raises(ConfigError, match=f"missing key '{key}'"):
            build_config(PuPL.config_cls, {**base, **{k: v for k, v in variant.items() if k != key}})
    with pytest.raises(ConfigError, match="orientation"):
        PuPL.config({**base, "orientation": "seeded", "normalize": False}, "downstream")
    cfg = build_config(PuPL.config_cls, {**base, "orientation": "nearest_positive_mean", "normalize": False})
    m, info = PuPL.run(cfg, Identity(5), data, seed=0, ctx=PLAIN)
    assert info["pseudo_label_acc_unlabeled"] > 99 and info["kmeans_converged"]
    assert info["orientation"] == "nearest_positive_mean" and isinstance(info["positive_cluster_seeded_at_mu_p"], bool)
    assert m["acc"] > 98
    m2, _ = PuPL.run(cfg, Identity(5), data, seed=0, ctx=PLAIN)
    assert m == m2
    with pytest.raises(ConfigError, match="PU split"):
        data.split_kind = "none"
        PuPL.run(cfg, Identity(5), data, seed=0, ctx=PLAIN)
