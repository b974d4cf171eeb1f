"""PU / PNU splits, binarization and stratified subsets (the PU data set definitions: test_pu_catalogue.py)."""

import numpy as np
import pytest
import torch

from pubench.data.splits import (
    balanced_indices,
    binarize,
    exact_prior,
    holdout_indices,
    make_split,
    resolve_labels,
    restrict,
    split_checksum,
    subset,
    subset_indices,
)

VEHICLES = [0, 1, 8, 9]


def rng(seed=0):
    return np.random.default_rng(seed)


@pytest.fixture
def y100():
    """100 points, 10 classes x 10; vehicles {0, 1, 8, 9} -> 40 positives, 60 negatives."""
    return torch.arange(100, dtype=torch.int64) % 10


def pu(n_labeled, scheme="single_training_set", **kw):
    return {"kind": "pu", "n_labeled": n_labeled, "scheme": scheme, **kw}


# ---------------------------------------------------------------------------- binarize
def test_binarize_mnist_odd_even():
    y = torch.arange(10)
    assert binarize(y, [1, 3, 5, 7, 9]).tolist() == [0, 1, 0, 1, 0, 1, 0, 1, 0, 1]


def test_binarize_cifar_vehicle_animal():
    y = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 2])
    assert binarize(y, VEHICLES).tolist() == [1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0]


def test_binarize_partial_negative_and_unknown():
    y = torch.tensor([5, 3, 0, -1])  # dog, cat, airplane (in neither list), unknown
    assert binarize(y, [5], [3]).tolist() == [1, 0, -1, -1]
    assert binarize(y, [5]).tolist() == [1, 0, 0, -1]


def test_resolve_labels_names_and_errors():
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog"]
    assert resolve_labels({"positive": ["dog"], "negative": ["cat"]}, classes) == {"positive": [5], "negative": [3]}
    with pytest.raises(ValueError, match="both positive and negative"):
        resolve_labels({"positive": [1, 2], "negative": [2]})
    with pytest.raises(ValueError, match="unknown class name"):
        resolve_labels({"positive": ["zebra"]}, classes)
    with pytest.raises(ValueError, match="unknown key"):
        resolve_labels({"positive": [1], "neg": [2]})


# ---------------------------------------------------------------------------- PU, single training set
def test_pu_single_training_set_counts_and_prior(y100):
    s = make_split(y100, {"positive": VEHICLES}, pu(10), rng())
    assert len(s) == 100 and s.index.tolist() == list(range(100))
    labeled = s.index[s.observed == 1]
    assert len(labeled) == 10
    assert bool((binarize(y100[labeled], VEHICLES) == 1).all())  # every labeled row is a true positive
    assert s.y_true.tolist() == binarize(y100, VEHICLES).tolist()
    assert s.prior == pytest.approx((40 - 10) / (100 - 10)) == pytest.approx(exact_prior(40, 60, 10))
    c = s.counts
    assert (c["n_pos"], c["n_neg"], c["n_labeled"], c["n_unlabeled"]) == (40, 60, 10, 90)
    assert (c["n_unlabeled_pos"], c["n_unlabeled_neg"], c["n_overlap"]) == (30, 60, 0)
    assert c["prior_population"] == pytest.approx(0.4)
    assert s.definition["split"] == {"kind": "pu", "scheme": "single_training_set", "n_labeled": 10}
    assert s.definition["labels"] == {"positive": VEHICLES, "negative": None}
    assert s.observed.dtype == s.y_true.dtype == s.index.dtype == torch.int64


def test_same_seed_same_split_new_seed_new_split(y100):
    a = make_split(y100, {"positive": VEHICLES}, pu(10), rng(1))
    b = make_split(y100, {"positive": VEHICLES}, pu(10), rng(1))
    c = make_split(y100, {"positive": VEHICLES}, pu(10), rng(2))
    assert torch.equal(a.observed, b.observed) and a.checksum == b.checksum
    assert not torch.equal(a.observed, c.observed) and a.checksum != c.checksum


def test_identical_splits_when_only_the_method_differs(y100):
    """Every method of a row builds its split from the same data config and data seed."""
    cfg = {"labels": {"positive": VEHICLES}, "split": pu(10)}
    shuffled = {"split": dict(reversed(list(pu(10).items()))), "labels": {"positive": [9, 8, 1, 0]}}
    splits = [make_split(y100, c["labels"], c["split"], rng(7)) for c in (cfg, cfg, shuffled)]
    assert len({s.checksum for s in splits}) == 1
    assert all(torch.equal(s.observed, splits[0].observed) for s in splits)


def test_checksum_covers_labels_and_observed(y100):
    s = make_split(y100, {"positive": VEHICLES}, pu(10), rng())
    assert s.checksum == split_checksum(s.index, s.observed, s.y_true)
    flipped = s.y_true.clone()
    flipped[0] = 1 - flipped[0]
    assert split_checksum(s.index, s.observed, flipped) != s.checksum
    other = make_split(y100, {"positive": [0, 1, 8, 7]}, pu(10), rng())
    assert other.checksum != s.checksum


def test_record_is_json_ready(y100):
    import json

    s = make_split(y100, {"positive": VEHICLES}, pu(10), rng())
    rec = json.loads(json.dumps(s.record()))
    assert rec["prior"] == pytest.approx(1 / 3) and rec["counts"]["n_labeled"] == 10 and rec["checksum"] == s.checksum


# ---------------------------------------------------------------------------- PU, case-control
def test_pu_case_control(y100):
    s = make_split(y100, {"positive": VEHICLES}, pu(10, "case_control"), rng())
    assert len(s) == 110  # n_P labeled + the whole set unlabeled
    assert s.observed[:10].tolist() == [1] * 10 and s.observed[10:].tolist() == [0] * 100
    assert s.index[10:].tolist() == list(range(100))
    assert bool((s.y_true[:10] == 1).all())
    assert s.prior == pytest.approx(0.4)  # P / (P + N)
    assert s.counts["n_overlap"] == 10 and s.counts["n_unlabeled"] == 100


def test_case_control_subsampled_unlabeled_with_prior(y100):
    s = make_split(y100, {"positive": VEHICLES}, pu(5, "case_control", n_unlabeled=50, unlabeled_prior=0.2), rng())
    unl = s.index[s.observed == 0]
    assert len(unl) == 50 and s.prior == pytest.approx(0.2)
    assert int(binarize(y100[unl], VEHICLES).sum()) == 10
    assert s.definition["split"]["n_unlabeled"] == 50


def test_case_control_with_unknown_labels_uses_them_as_unlabeled_set():
    """STL-10 train+unlabeled: labels -1 for the unlabeled split; X_U = those rows; prior must be given."""
    y = torch.cat([torch.arange(50) % 10, torch.full((30,), -1)])
    split = pu(5, "case_control")
    with pytest.raises(ValueError, match="give split.prior"):
        make_split(y, {"positive": [0, 2, 3, 8, 9]}, split, rng())
    s = make_split(y, {"positive": [0, 2, 3, 8, 9]}, split, rng(), prior=0.51)
    assert s.prior == 0.51 and s.definition["prior"] == "given"
    assert s.index[s.observed == 0].tolist() == list(range(50, 80))
    assert bool((s.index[s.observed == 1] < 50).all()) and s.counts["n_unlabeled_unknown"] == 30
    assert s.counts["prior_exact"] is None
    assert s.y_true[s.observed == 0].tolist() == [-1] * 30


def test_given_prior_keeps_exact_in_counts(y100):
    s = make_split(y100, {"positive": VEHICLES}, pu(10, "case_control", prior=0.46), rng())
    assert s.prior == 0.46 and s.counts["prior_exact"] == pytest.approx(0.4)
    with pytest.raises(ValueError, match="two different priors"):
        make_split(y100, {"positive": VEHICLES}, pu(10, prior=0.3), rng(), prior=0.4)


def test_partial_binarization_drops_other_classes(y100):
    """CIFAR-0: dog (5) vs cat (3); the other classes are not part of the training set."""
    s = make_split(y100, {"positive": [5], "negative": [3]}, pu(4), rng())
    assert len(s) == 20 and set(y100[s.index].tolist()) == {3, 5}
    assert s.counts["n_excluded"] == 80 and s.prior == pytest.approx(6 / 16)


# ---------------------------------------------------------------------------- PNU / none
def test_pnu_stratified_fraction(y100):
    s = make_split(y100, {"positive": VEHICLES}, {"kind": "pnu", "labeled_fraction": 0.1}, rng())
    assert len(s) == 100
    lab = s.observed >= 0
    assert int(lab.sum()) == 10
    assert s.counts["n_labeled_pos"] == 4 and s.counts["n_labeled_neg"] == 6
    assert torch.equal(s.observed[lab], s.y_true[lab])  # labeled rows keep their true label
    assert bool((s.observed[~lab] == -1).all())
    assert s.prior == pytest.approx(36 / 90)
    assert s.definition["split"] == {"kind": "pnu", "labeled_fraction": 0.1, "stratified": True}
    assert torch.equal(s.labeled, lab)


def test_pnu_unstratified_and_n_labeled(y100):
    s = make_split(y100, {"positive": VEHICLES}, {"kind": "pnu", "labeled_fraction": 0.1, "stratified": False}, rng(3))
    assert s.counts["n_labeled"] == 10 and s.counts["n_labeled_pos"] + s.counts["n_labeled_neg"] == 10
    t = make_split(y100, {"positive": VEHICLES}, {"kind": "pnu", "n_labeled": 25}, rng())
    assert (t.counts["n_labeled_pos"], t.counts["n_labeled_neg"]) == (10, 15)


def test_pnu_everything_labeled(y100):
    s = make_split(y100, {"positive": VEHICLES}, {"kind": "pnu", "labeled_fraction": 1.0}, rng())
    assert bool((s.observed == s.y_true).all()) and s.counts["n_unlabeled"] == 0
    assert s.prior == pytest.approx(0.4) and "no unlabeled rows" in s.definition["prior"]


def test_none_multiclass_and_binary(y100):
    s = make_split(y100, None, {"kind": "none"}, rng())
    assert s.prior is None and torch.equal(s.y_true, y100) and bool((s.observed == -1).all())
    b = make_split(y100, {"positive": VEHICLES}, None, rng())
    assert b.prior == pytest.approx(0.4) and b.y_true.sum() == 40


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize("labels,split,match", [
    ({"positive": VEHICLES}, pu(41), "only 40 positives"),
    ({"positive": VEHICLES}, {"kind": "semi"}, "unknown split kind"),
    (None, pu(10), "multi-class"),
    (None, {"kind": "pnu", "labeled_fraction": 0.1}, "multi-class"),
    ({"positive": VEHICLES}, {**pu(10), "n_labled": 3}, "unknown key"),
    ({"positive": VEHICLES}, pu(10, "case-control"), "unknown split scheme"),
    ({"positive": VEHICLES}, pu(10, n_unlabeled=200), "n_unlabeled = 200"),
    ({"positive": VEHICLES}, pu(10, unlabeled_prior=0.5), "needs split.n_unlabeled"),
    ({"positive": VEHICLES}, {"kind": "pu", "scheme": "case_control"}, "n_labeled must be an integer"),
    ({"positive": VEHICLES}, {"kind": "pnu", "labeled_fraction": 1.5}, r"in \(0, 1\]"),
    ({"positive": VEHICLES}, {"kind": "pnu", "labeled_fraction": 0.1, "n_labeled": 3}, "exactly one"),
])
def test_errors(y100, labels, split, match):
    with pytest.raises(ValueError, match=match):
        make_split(y100, labels, split, rng())


def test_needs_a_generator(y100):
    with pytest.raises(TypeError):
        make_split(y100, {"positive": VEHICLES}, pu(1), 0)


# ---------------------------------------------------------------------------- subsets
def test_subset_indices_stratified_and_seeded(y100):
    idx = subset_indices(y100, 30, rng(0))
    assert len(idx) == 30 and np.all(np.diff(idx) > 0)
    assert np.bincount(y100.numpy()[idx]).tolist() == [3] * 10
    assert np.array_equal(idx, subset_indices(y100, 30, rng(0)))
    assert not np.array_equal(idx, subset_indices(y100, 30, rng(1)))
    uneven = torch.tensor([0] * 70 + [1] * 20 + [2] * 10)
    assert np.bincount(uneven.numpy()[subset_indices(uneven, 11, rng())]).tolist() == [8, 2, 1]


def test_subset_of_imageset(y100):
    from pubench.data.images import ImageSet

    imgs = ImageSet(torch.arange(100, dtype=torch.uint8).view(100, 1, 1, 1).expand(100, 1, 2, 2).contiguous(),
                    y100.clone(), [str(i) for i in range(10)], "synthetic")
    sub = subset(imgs, 20, rng())
    assert len(sub) == 20 and torch.equal(sub.x[:, 0, 0, 0].long() % 10, sub.y)
    assert "stratified subset of 20 of 100" in sub.source
    assert subset(imgs, 500, rng()) is imgs
    r = restrict(imgs, {"positive": [5], "negative": [3]})
    assert len(r) == 20 and set(r.y.tolist()) == {3, 5}
    assert restrict(imgs, {"positive": [5]}) is imgs


def test_holdout_and_balanced(y100):
    kept, held = holdout_indices(y100, 0.1, rng())
    assert len(held) == 10 and len(kept) == 90 and not set(kept) & set(held)
    assert np.bincount(y100.numpy()[held]).tolist() == [1] * 10
    b = balanced_indices(binarize(y100, VEHICLES), rng())
    assert len(b) == 80 and int(binarize(y100, VEHICLES)[b].sum()) == 40
    assert np.array_equal(b, balanced_indices(binarize(y100, VEHICLES), rng()))


def test_restrict_keeps_the_rows_of_unknown_class(y100):
    """STL-10's unlabeled images (y = -1) are the case-control pool of a PU split: a
    binarization with a negative list keeps them (found by `pubench preflight` on
    table2-pupl's paper-tier STL-I cells, whose split draws 100,000 unlabeled images)."""
    from pubench.data.images import ImageSet

    y = torch.cat([y100, torch.full((30,), -1)])
    imgs = ImageSet(torch.zeros(130, 1, 2, 2, dtype=torch.uint8), y, [str(i) for i in range(10)], "synthetic")
    r = restrict(imgs, {"positive": [5], "negative": [3]})
    assert len(r) == 50 and int((r.y == -1).sum()) == 30 and set(r.y[r.y >= 0].tolist()) == {3, 5}
    split = make_split(r.y, {"positive": [5], "negative": [3]},
                       {"kind": "pu", "scheme": "case_control", "n_labeled": 5, "n_unlabeled": 30, "prior": 0.5}, rng())
    assert split.record()["counts"]["n_unlabeled"] == 30
