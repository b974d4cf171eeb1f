"""Spread across specs (pubench.report.pooled): a cell whose config other specs also run shows
every run of that config beside its own seeds; a run two specs share counts once."""

import pytest
import yaml

from pubench.jobs import expand
from pubench.registry import parse_spec
from pubench.report import collect, render_markdown
from pubench.report.pooled import pooled_spreads
from pubench.store import ResultStore
from tests.conftest import selftest_spec


def _spec(spec_id: str):
    return parse_spec(yaml.safe_load(selftest_spec(spec_id)), "<t>")


def test_a_config_run_by_two_specs_shows_the_pooled_spread(tmp_path):
    store = ResultStore(tmp_path)
    a, b = _spec("table1-bcl"), _spec("table2-bcl")
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


def test_a_run_two_specs_share_counts_once_and_a_lone_config_shows_nothing(tmp_path):
    store = ResultStore(tmp_path)
    a = _spec("table1-bcl")
    for job in expand(a, "paper", 2).jobs:
        if job.col == "x":
            store.write_ok(job, {"score": 1.0 + job.seed_index}, {}, {})
    res = collect(a, "paper", store)
    assert pooled_spreads(res, store) == {}  # no other spec runs these configs
    copy = ResultStore(tmp_path)  # the same records under another spec id: one run each, as seeds_from copies
    for job in expand(a, "paper", 2).jobs:
        if job.col != "x":
            continue
        rec = store.read(job)
        other = type(job)(**{**{k: getattr(job, k) for k in job.__dataclass_fields__}, "spec_id": "table2-bcl"})
        copy.write_ok(other, rec["metrics"], {}, {})
    assert pooled_spreads(collect(a, "paper", copy), copy) == {}  # shared runs only: nothing beyond the cell's own
    b = _spec("table2-bcl")
    extra = next(j for j in expand(b, "paper", 3).jobs if (j.row, j.col, j.seed_index) == ("A", "x", 2))
    copy.write_ok(extra, {"score": 7.0}, {}, {})
    (p,) = pooled_spreads(collect(a, "paper", copy), copy).values()
    assert p.values == (1.0, 2.0, 7.0) and p.specs == (("table1-bcl", 2), ("table2-bcl", 3))
