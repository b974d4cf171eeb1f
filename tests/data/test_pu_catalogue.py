"""The PU data set catalogue (pubench/data/pu_datasets.yaml): the papers' definitions,
`data: {pu_dataset: ...}` references, and the priors the loader computes (`exact`, `data.prior`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pubench.data import DATASETS
from pubench.data.splits import exact_prior, make_split
from pubench.registry import SpecError, get_spec
from pubench.registry.catalogue import class_counts, data_block, lookup
from pubench.registry.priors import PriorError, evaluate_priors, exact_prior_of
from pubench.registry.units import planned
from tests.conftest import selftest_spec

#: training images per class, from each data set's one entry (pubench/data/images.py)
COUNTS = class_counts(DATASETS.names())

PRINTED = ["F-MNIST-I", "F-MNIST-II", "CIFAR-I", "CIFAR-II", "CIFAR-III", "CIFAR-0", "CIFAR-hard", "CIFAR-easy",
           "CIFAR-medium", "STL-I", "STL-II", "STL-III", "SVHN-I", "MNIST odd/even", "CIFAR vehicle/animal",
           "ImageNet-I", "ImageNet-II", "Alzheimer", "CIFAR-10 (004)"]


def test_every_printed_definition_is_there_and_consistent():
    counts = COUNTS
    assert sum(counts["mnist"]) == 60000 and sum(counts["cifar10"]) == 50000
    for name in PRINTED:
        printed, e = lookup(name)
        assert e.source and e.decision, name
        assert e.dataset in DATASETS.names() or e.dataset in planned().get("dataset", {}), name
        assert not set(e.positive) & set(e.negative or []), name
        if e.dataset in counts:
            assert set(e.positive) | set(e.negative or []) <= set(range(len(counts[e.dataset]))), name


def test_definitions_as_printed():
    assert lookup("F-MNIST-I")[1].positive == [1, 4, 7] and lookup("F-MNIST-I")[1].prior == 0.3
    assert lookup("CIFAR-II")[1].positive == [2, 3, 4, 5, 6, 7] and lookup("cifar_ii")[1].prior == 0.6
    assert lookup("STL-I")[1].prior == 0.51 and lookup("STL-II")[1].prior == 0.49
    assert lookup("STL-III")[1].positive == [0, 2, 8, 9]  # 004 Table I's 1-based 1, 3, 9, 10
    assert lookup("SVHN-I")[1].positive == [0, 2, 4, 6, 8] and lookup("wconpu_svhn")[0] == "SVHN (004)"
    assert (lookup("CIFAR-0")[1].positive, lookup("CIFAR-0")[1].negative) == ([5], [3])
    assert lookup("CIFAR-hard")[1].positive == [0, 3] and lookup("cifar easy")[1].negative == [3, 5]
    assert lookup("CIFAR-medium")[1].negative == [2]
    assert lookup("MNIST-I")[0] == "MNIST odd/even" and lookup("ImageNet-I")[1].positive == list(range(151, 269))
    with pytest.raises(KeyError, match="did you mean"):
        lookup("CIFAR-IIII")


def test_printed_priors_match_the_population_fractions():
    """003/004 print priors that are the positive fractions of the balanced training sets:
    what `exact` computes for a case-control split of the whole training split."""
    for name in ("F-MNIST-I", "F-MNIST-II", "CIFAR-I", "CIFAR-II", "CIFAR-III", "CIFAR-10 (004)"):
        block = data_block(name)
        assert exact_prior_of(block, COUNTS) == block["prior"], name
    assert lookup("STL-10 (004)")[1].prior == pytest.approx(4 / 10)


def test_exact_priors_of_001_equal_the_printed_values():
    """001 A.1.1's pi* of the single-training-set splits, bit for bit as the specs used to write them."""
    mnist = {1000: 0.500135593220339, 3000: 0.4825964912280702, 10000: 0.41016}
    cifar = {1000: 0.3877551020408163, 3000: 0.3617021276595745, 10000: 0.25}
    for name, table in (("MNIST odd/even", mnist), ("CIFAR vehicle/animal", cifar)):
        for n_p, pi in table.items():
            assert exact_prior_of(data_block(name, n_p), COUNTS) == pi
    assert exact_prior_of(data_block("MNIST odd/even", 1000), COUNTS) == exact_prior(30508, 29492, 1000)
    assert exact_prior_of(data_block("CIFAR-hard", 198), COUNTS) == 0.495000504999495  # 003 Fig. 14, 4 classes
    assert exact_prior_of(data_block("CIFAR-0", 50), COUNTS) == 0.5  # case-control with a fixed unlabeled prior


@pytest.mark.parametrize("data,problem", [
    ({**data_block("CIFAR-I", 10), "subset": {"train": 100}}, "realized split"),
    (data_block("STL-I", 10), "no class counts"),
    (data_block("MNIST odd/even"), "needs split.n_labeled"),
    ({**data_block("CIFAR-I", 10), "split": {"kind": "pu", "scheme": "case_control", "n_unlabeled": 500}},
     "exact prior is unknown"),
])
def test_exact_prior_refuses_what_it_cannot_know(data, problem):
    with pytest.raises(PriorError, match=problem):
        exact_prior_of(data, COUNTS)


def test_data_block_has_only_the_keys_of_the_entry():
    assert data_block("CIFAR vehicle/animal", 1000) == {
        "dataset": "cifar10", "labels": {"positive": [0, 1, 8, 9]},
        "split": {"kind": "pu", "scheme": "single_training_set", "n_labeled": 1000}}
    svhn = data_block("SVHN-I")
    assert svhn["split"]["n_labeled"] == 1000 and svhn["n_test"] == 26032 and "negative" not in svhn["labels"]
    assert data_block("STL-I")["split"]["unlabeled_split"] == "unlabeled"


def test_data_block_feeds_make_split():
    y100 = torch.arange(100, dtype=torch.int64) % 10
    cfg = data_block("CIFAR-10 (004)", 10)
    split = {k: v for k, v in cfg["split"].items() if k != "n_unlabeled"}
    s = make_split(y100, cfg["labels"], split, np.random.default_rng(0), prior=cfg["prior"])
    assert s.prior == 0.4 and len(s) == 110


def test_evaluate_priors_replaces_tokens_and_leaves_numbers():
    params = {"data": {**data_block("MNIST odd/even", 3000), "prior": "exact"},
              "pretrain": {"loss": {"prior": "data.prior", "tau_plus": "exact"}}, "downstream": {"prior": 0.3}}
    out = evaluate_priors(params, COUNTS)
    assert out["data"]["prior"] == out["pretrain"]["loss"]["prior"] == 0.4825964912280702
    assert out["pretrain"]["loss"]["tau_plus"] == 0.4825964912280702 and out["downstream"]["prior"] == 0.3
    with pytest.raises(PriorError, match="has no prior"):
        evaluate_priors({"data": data_block("MNIST odd/even", 3000), "loss": {"prior": "data.prior"}}, COUNTS)
    with pytest.raises(PriorError, match="is not a number"):
        evaluate_priors({"data": data_block("MNIST odd/even", 3000), "loss": {"prior": "oracle"}}, COUNTS)


CATALOGUE_SPEC = selftest_spec().replace("  params: {value: 0.0}", """\
  params:
    value: 0.0
    data: {pu_dataset: CIFAR vehicle/animal, n_labeled: 1000, prior: exact, labels: {negative: [2, 3]}}
    loss: {prior: exact, tau_plus: data.prior}""").replace("    params: {sleep: 0.0}", """\
    params: {sleep: 0.0, data: {split: {n_labeled: 3000}}, probe: {prior: exact}}""")


def test_spec_reference_and_priors_evaluated_where_written(tmp_registry):
    tmp_registry(CATALOGUE_SPEC)
    spec = get_spec("table1-bcl")
    paper = spec.resolve("paper", "A", "x")["params"]
    assert paper["data"] == {"dataset": "cifar10", "labels": {"positive": [0, 1, 8, 9], "negative": [2, 3]},
                             "split": {"kind": "pu", "scheme": "single_training_set", "n_labeled": 1000},
                             "prior": exact_prior(20000, 10000, 1000)}  # 6 classes kept: 4 positive, 2 negative
    smoke = spec.resolve("smoke", "A", "x")["params"]
    # written in `experiment`: the paper config's value, also at the smoke tier; written in the tier: the tier's
    pi = exact_prior(20000, 10000, 1000)
    assert smoke["loss"] == paper["loss"] == {"prior": pi, "tau_plus": pi}
    assert smoke["probe"]["prior"] == exact_prior(20000, 10000, 3000)


def test_reference_errors_name_the_key(tmp_registry):
    path = tmp_registry(CATALOGUE_SPEC.replace("pu_dataset: CIFAR vehicle/animal", "pu_dataset: CIFAR vehicle"))
    with pytest.raises(SpecError) as err:
        get_spec("table1-bcl")
    assert (err.value.file, err.value.key) == (str(path), "experiment.params.data.pu_dataset")
    assert "unknown PU data set 'CIFAR vehicle'; did you mean 'CIFAR vehicle/animal'?" in err.value.problem
    tmp_registry(CATALOGUE_SPEC.replace("{n_labeled: 3000}}", "{n_labeled: 3000}, subset: {train: 50}}"))
    with pytest.raises(SpecError, match=r"cell A\|x at tier smoke: .*realized split"):
        get_spec("table1-bcl")


def test_resolving_a_spec_reads_no_file(monkeypatch):
    """Issue 35: a loaded spec holds the class counts its ``prior: exact`` cells need, so that
    resolving a cell (computed priors included) touches no file: not the catalogue, not the
    data set table, not another spec. Once the whole registry is loaded, the sentence of a
    generated ``unavailable`` reason reads none either."""
    import builtins
    import io
    import pathlib

    from pubench.registry import load_all

    spec = get_spec("table1-punce")  # MNIST / CIFAR cells with `prior: exact` at every tier
    assert set(spec.class_counts) == {"mnist", "cifar10"}
    expected = {(t, r, c): spec.resolve(t, r, c) for t in spec.tiers for r, c in spec.cells()}
    registry = load_all()

    def no_file(*args, **kwargs):
        raise AssertionError(f"resolving read a file: {args[:1]}")

    for obj, name in ((builtins, "open"), (io, "open"), (pathlib.Path, "open"), (pathlib.Path, "read_text"),
                      (pathlib.Path, "read_bytes"), (pathlib.Path, "stat")):
        monkeypatch.setattr(obj, name, no_file)
    for (tier, row, col), cfg in expected.items():
        assert spec._resolve(tier, row, col) == cfg  # computed again, not the precomputed copy
    reasons = {s.unavailable_reason(t, r, c) for s in registry.values() for t in s.tiers for r, c in s.cells()}
    assert any(why and "so far only" in why for why in reasons)  # a not_designed sentence was generated


def test_every_data_set_entry_agrees_with_itself():
    """A data set is one entry: its class counts add up to its training split's size."""
    for name in DATASETS.names():
        ds = DATASETS.get(name)
        counts, sizes = getattr(ds, "class_counts", None), getattr(ds, "sizes", {})
        if counts is not None and "train" in sizes:
            assert sum(counts) == sizes["train"], name
