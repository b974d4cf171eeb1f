"""Records of seeds nobody registered (issue 60): a seed index beyond the cell's registered
seeds at its tier (the tier's ``seeds``, its ``more_seeds`` entries) is listed apart and read by
no statistic, claim, regime check or verdict until a ``more_seeds`` entry registers it."""

from __future__ import annotations

import pytest

from pubench.registry import load_all
from pubench.report import collect
from pubench.report.checks import claim_checks
from pubench.report.collect import UNREGISTERED, registered_seeds, seed_ranges, unregistered_line
from pubench.report.markdown import render_markdown
from tests.conftest import selftest_results, selftest_spec

# A beats B on x over the registered seeds 0-1; seeds 2-4 (run with --seeds 5, registered by
# nobody) would turn it around
SCORES = {"A": [2.0, 2.2, 0.0, 0.1, 0.2], "B": [1.0, 1.1, 9.0, 9.1, 9.2]}
CLAIM = """\
claims:
  - {kind: greater, metric: score, rows: [A, B], cols: [x], text: "A beats B on x"}
"""


def _more_seeds(seeds: int) -> str:
    return (f"\n    more_seeds: [{{cells: 'A|x', seeds: {seeds}, date: '2026-12-08', why: 'registered for a test'}},"
            f" {{cells: 'B|x', seeds: {seeds}, date: '2026-12-08', why: 'with A'}}]")


def _table(tmp_registry, registered: str = ""):
    text = selftest_spec("table1-bcl", extra=CLAIM).replace("paper: {seeds: 2}", "paper:\n    seeds: 2" + registered)
    return selftest_results(tmp_registry, "table1-bcl", "paper", 5,
                            lambda job: {"score": SCORES[job.row][job.seed_index]}, spec_text=text)


def test_seeds_beyond_the_registered_ones_are_listed_apart_and_read_by_no_claim(tmp_registry):
    spec, store = _table(tmp_registry)
    res = collect(spec, "paper", store)
    assert res.seeds_done == {("A", "x"): 2, ("A", "y"): 2, ("B", "x"): 2, ("B", "y"): 2}
    assert res.unregistered == {cell: (2, 3, 4) for cell in res.seeds_done}
    assert res.get("A", "x", "score").by_seed == {0: 2.0, 1: 2.2} and res.compute.jobs == 8
    (check,) = claim_checks(res)
    assert check.test_status.startswith("holds") and check.tests[0].n == 2  # seeds 2-4 would make it fail
    line = unregistered_line(res)
    assert line.startswith("12 record(s) of seeds no registration covers") and "A|x seeds 2-4" in line
    assert f"- {line}" in render_markdown(res)
    assert res.stale == 0  # not stale: `pubench prune` keeps them, a registration brings them in


def test_a_more_seeds_entry_brings_them_in(tmp_registry):
    spec, store = _table(tmp_registry, _more_seeds(4))
    res = collect(spec, "paper", store)
    assert res.seeds_done[("A", "x")] == 4 and res.seeds_done[("A", "y")] == 2
    assert res.unregistered == {("A", "x"): (4,), ("A", "y"): (2, 3, 4), ("B", "x"): (4,), ("B", "y"): (2, 3, 4)}
    (check,) = claim_checks(res)
    assert check.tests[0].n == 4
    assert registered_seeds(spec, "paper", "A", "x") == 4 and registered_seeds(spec, "paper", "A", "y") == 2


def test_a_variant_registers_its_base_tiers_seeds(tmp_registry):
    spec, _ = _table(tmp_registry, _more_seeds(4))
    view = spec.with_variant("paper", ["value=3.0"])
    assert registered_seeds(view, "custom", "A", "x") == 4 and registered_seeds(view, "custom", "B", "y") == 2


def test_the_records_frame_says_why_they_are_left_out(tmp_registry):
    pytest.importorskip("pandas")
    from pubench.report.frame import records_frame

    spec, store = _table(tmp_registry)
    f = records_frame(spec, "paper", store)
    left = f[~f["aggregated"]]
    assert set(left["left_out"]) == {UNREGISTERED} and sorted(set(left["seed"])) == [2, 3, 4]
    assert f[f["aggregated"]]["seed"].max() == 1


def test_seed_ranges():
    assert seed_ranges((7, 2, 3, 4)) == "2-4, 7" and seed_ranges([5]) == "5"


def test_the_pooled_spread_leaves_them_out_too(tmp_registry):
    from pubench.jobs import expand
    from pubench.report.pooled import pooled_spreads
    from pubench.store import ResultStore

    tmp_registry(selftest_spec("table1-bcl"))
    tmp_registry(selftest_spec("table2-bcl"))
    specs = load_all()
    store = ResultStore(tmp_registry.root / "results")
    for spec in (specs["table1-bcl"], specs["table2-bcl"]):
        for job in expand(spec, "paper", 3).jobs:  # 3 seeds where 2 are registered
            if (job.row, job.col) == ("A", "x"):
                store.write_ok(job, {"score": 10.0 * job.seed_index + (spec.id == "table2-bcl")}, {}, {})
    p = pooled_spreads(collect(specs["table1-bcl"], "paper", store), store)[("A", "x", "score")]
    assert sorted(p.values) == [0.0, 1.0, 10.0, 11.0] and p.specs == (("table1-bcl", 2), ("table2-bcl", 2))
