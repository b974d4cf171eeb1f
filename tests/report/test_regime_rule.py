"""The regime rule's revision of 2026-12-07: a two_classes block's verdict converges as seeds are
added. As first registered, any near-one-class reference seed put a block out, so a block whose
reference collapses at any rate q > 0 stayed in regime with probability (1 - q)^n: more seeds
could only push it out. Now the near-one-class share is tested against a bound (exact one-sided
binomial test): below the bound, adding seeds never turns a block out; above it, enough seeds do."""

from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pubench.jobs import expand
from pubench.registry import parse_spec
from pubench.report import collect
from pubench.report.regime import (CURRENT, DEFAULT_BOUND, FIRST, IN, OUT, POWER, RULE_REVISION, binomial_sf,
                                   regime_verdicts, rule_changed, two_classes_verdict)
from pubench.store import ResultStore
from tests.conftest import selftest_spec

BOUND = float(DEFAULT_BOUND)
GAIN, AUC_P = 20.0, 1e-4  # a reference that discriminates well: the AUC part of the check is met


def test_binomial_sf_is_the_exact_upper_tail():
    assert binomial_sf(0, 5, 0.2) == 1.0 and binomial_sf(1, 3, 0.2) == pytest.approx(1 - 0.8 ** 3)
    assert binomial_sf(2, 14, 0.2) == pytest.approx(1 - 0.8 ** 14 - 14 * 0.2 * 0.8 ** 13)
    assert binomial_sf(3, 3, 0.2) == pytest.approx(0.008) and binomial_sf(1, 4, 0.0) == 0.0


@settings(max_examples=200, deadline=None)
@given(rate=st.floats(0.0, BOUND), n_max=st.integers(1, 400))
def test_below_the_bound_adding_seeds_never_turns_a_block_out(rate, n_max):
    """At a near-one-class rate within the bound, the block is in regime at every seed count (the
    AUC test met), so no number of added seeds flips it out."""
    for n in range(1, n_max + 1):
        k = math.floor(rate * n + 1e-9)
        verdict, share_p = two_classes_verdict(k, n, GAIN, AUC_P, BOUND, CURRENT)
        assert verdict == IN, (k, n, share_p)
        assert share_p >= 0.05


@settings(max_examples=100, deadline=None)
@given(seq=st.lists(st.booleans(), min_size=1, max_size=300))
def test_any_seed_sequence_within_the_bound_stays_in_regime(seq):
    """Whatever order the collapsed seeds come in: while the running share is within the bound, the
    block never reads out; a verdict once in regime turns out only after the share passes the bound."""
    near = 0
    for n, collapsed in enumerate(seq, 1):
        near += collapsed
        verdict, _ = two_classes_verdict(near, n, GAIN, AUC_P, BOUND, CURRENT)
        if near <= BOUND * n + 1e-9:
            assert verdict == IN
        else:
            assert verdict in (POWER, OUT)


@pytest.mark.parametrize("rate", [0.3, 0.4, 0.6, 1.0])
def test_above_the_bound_enough_seeds_turn_a_block_out(rate):
    verdicts = [two_classes_verdict(math.ceil(rate * n), n, GAIN, AUC_P, BOUND, CURRENT)[0] for n in range(1, 301)]
    assert all(v == OUT for v in verdicts[150:])  # with enough seeds out, and out from then on
    assert all(v in (POWER, OUT) for v in verdicts)  # never in regime at a rate over the bound


def test_the_first_rule_could_only_worsen_with_more_seeds():
    """As first registered: one collapsed seed in nineteen (table2-punce's nnPU reference) was out."""
    assert two_classes_verdict(1, 19, GAIN, AUC_P, 0.0, FIRST)[0] == OUT
    assert two_classes_verdict(1, 19, GAIN, AUC_P, BOUND, CURRENT)[0] == IN
    assert two_classes_verdict(2, 14, GAIN, AUC_P, BOUND, CURRENT)[0] == IN   # table3-wconpu's V: 2 of 14
    assert two_classes_verdict(3, 3, GAIN, AUC_P, BOUND, CURRENT)[0] == OUT   # 3 of 3: p = 0.008


def test_a_block_with_auc_below_the_margin_is_out_under_both_rules():
    for rule in (FIRST, CURRENT):
        assert two_classes_verdict(0, 10, -1.0, 0.9, BOUND, rule)[0] == OUT


# ---- through the store: one collapsed reference seed among many ---------------------------------

TWO = """regime:
  - {block: PU methods, rows: [A, B], check: two_classes, reference: [A]}
"""


def _binary(recall: float, auc: float) -> dict:
    tp, fp, tn = recall * 400, 60, 540
    return {"acc": 100 * (tp + tn) / 1000, "precision": 100 * tp / (tp + fp) if tp else 0.0, "recall": 100 * recall,
            "auc": auc}


def test_one_collapsed_seed_of_nineteen_keeps_the_block_in_regime_and_the_page_says_the_rule_changed(tmp_path):
    spec = parse_spec(yaml.safe_load(selftest_spec(rows=("A", "B"), cols=("x", "y"), extra=TWO, seeds=19)), "<t>")
    store = ResultStore(tmp_path)
    for job in expand(spec, "reduced", 19).jobs:
        if job.row == "A":
            recall = 0.0 if job.seed_index == 3 else 0.5 + 0.01 * job.seed_index
            store.write_ok(job, _binary(recall, 85.0 + (job.seed_index % 3)), {}, {})
    res = collect(spec, "reduced", store)
    now, then = (next(v for v in regime_verdicts(res, rule) if v.col == "x") for rule in (CURRENT, FIRST))
    assert (now.near, now.seeds, now.verdict) == (1, 19, IN) and then.verdict == OUT
    assert "1 of 19 seed(s) of A near-one-class (bound 20%, binomial p=0.99)" in now.text
    assert (then, now) in rule_changed(res)
    assert RULE_REVISION.startswith("regime rule revised 2026-12-07")


def test_the_revision_is_registered_with_its_date_and_the_old_rule():
    from pubench import paths
    from pubench.utils.yamlio import parse_mapping, read_text

    path = paths.experiments_root() / "_verdicts.yaml"
    entries = {r["id"]: r for r in parse_mapping(read_text(path), path)["rule_revisions"]}
    entry = entries["regime-convergent"]
    assert entry["date"] in RULE_REVISION and entry["was"] and entry["now"] and entry["why"]
