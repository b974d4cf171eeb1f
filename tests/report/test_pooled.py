"""Spread across specs (pubench.report.pooled): a cell whose config other specs also run shows
every run of that config beside its own seeds; a run two specs share counts once."""

import pytest

from pubench.jobs import expand
from pubench.registry import load_all
from pubench.report import collect, render_markdown
from pubench.report.pooled import pooled_spreads
from pubench.store import ResultStore
from tests.conftest import selftest_spec


def _two_specs(tmp_registry):
    tmp_registry(selftest_spec("table1-bcl", seeds=3))
    tmp_registry(selftest_spec("table2-bcl", seeds=3))
    specs = load_all()
    return specs["table1-bcl"], specs["table2-bcl"], ResultStore(tmp_registry.root / "results")


def test_a_config_run_by_two_specs_shows_the_pooled_spread(tmp_registry):
    a, b, store = _two_specs(tmp_registry)
    values = {"table1-bcl": [10.0, 10.2, 10.1], "table2-bcl": [4.0, 16.0, 9.0]}
    for spec in (a, b):
        for job in expand(spec, "paper", 3).jobs:
            if (job.row, job.col) == ("A", "x"):
                store.write_ok(job, {"score": values[spec.id][job.seed_index]}, {}, {})
    res = collect(a, "paper", store)
    pooled = pooled_spreads(res, store)
    p = pooled[("A", "x", "score")]
    assert p.n == 6 and p.specs == (("table1-bcl", 3), ("table2-bcl", 3))
    assert p.mean == pytest.approx(sum(values["table1-bcl"] + values["table2-bcl"]) / 6)
    assert res.get("A", "x", "score").std < 0.2 < 3.0 < p.std  # the cell's own seeds are far tighter
    res.pooled = pooled
    md = render_markdown(res)
    assert "## Spread across specs" in md and "| A | x" in md and "table2-bcl (3)" in md


def test_a_run_two_specs_share_counts_once_and_a_lone_config_shows_nothing(tmp_registry):
    a, b, store = _two_specs(tmp_registry)
    for job in expand(a, "paper", 2).jobs:
        if job.col == "x":
            store.write_ok(job, {"score": 1.0 + job.seed_index}, {}, {})
    res = collect(a, "paper", store)
    assert pooled_spreads(res, store) == {}  # no other spec runs these configs
    for job in expand(a, "paper", 2).jobs:  # the same runs under table2-bcl too, as seeds_from copies them
        if job.col == "x":
            other = type(job)(**{**{k: getattr(job, k) for k in job.__dataclass_fields__}, "spec_id": b.id})
            store.write_ok(other, store.read(job)["metrics"], {}, {})
    assert pooled_spreads(collect(a, "paper", ResultStore(store.root)), store) == {}  # shared runs only
    extra = next(j for j in expand(b, "paper", 3).jobs if (j.row, j.col, j.seed_index) == ("A", "x", 2))
    store.write_ok(extra, {"score": 7.0}, {}, {})
    (p,) = pooled_spreads(collect(a, "paper", store), store).values()
    assert p.values == (1.0, 2.0, 7.0) and p.specs == (("table1-bcl", 2), ("table2-bcl", 3))
