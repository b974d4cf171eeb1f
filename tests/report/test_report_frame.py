"""The tidy tables of a report (pubench.report.frame): one row per record and metric, one row
per cell and metric, and both agree with what the report aggregates."""

import math

import pytest

from pubench.registry import load_all
from pubench.report import collect
from pubench.report.frame import CELL_COLUMNS, RECORD_COLUMNS, cells_frame, records_frame
from tests.conftest import selftest_results, selftest_spec

pd = pytest.importorskip("pandas")

VALUES = {("A", "x"): [1.4, 1.5, 1.45], ("A", "y"): [3.0, 3.1, 2.9], ("B", "x"): [1.0, 1.1, 0.9]}


@pytest.fixture
def table(tmp_registry):
    spec, store = selftest_results(tmp_registry, "table1-bcl", "paper", 3, lambda job: None if (
        job.row, job.col) not in VALUES else {"score": VALUES[(job.row, job.col)][job.seed_index], "extra": 7.0})
    return spec, store, tmp_registry


def test_records_frame_has_a_row_per_record_and_metric(table):
    spec, store, _ = table
    f = records_frame(spec, "paper", store)
    assert tuple(f.columns) == RECORD_COLUMNS
    assert len(f) == 9 * 2  # 9 records, each with score and extra
    assert f["aggregated"].all() and f["left_out"].isna().all()
    score = f[f.metric == "score"].set_index(["row", "col", "seed"])["value"]
    for (row, col), vals in VALUES.items():
        assert [score[(row, col, k)] for k in range(3)] == vals
    assert f["job_id"].str.len().gt(0).all() and f["spec_version"].eq(1).all() and f["wall_s"].eq(2.0).all()
    # the split key: equal for the rows that share params.data (same data seed per seed index)
    assert f.groupby("seed")["split"].nunique().eq(1).all()


def test_records_frame_keeps_stale_records_apart(table):
    spec, store, reg = table
    reg(selftest_spec("table1-bcl").replace("version: 1", "version: 2"))
    spec2 = load_all()["table1-bcl"]
    f = records_frame(spec2, "paper", store)
    assert len(f) == 18 and not f["aggregated"].any() and set(f["left_out"]) == {"stale"}
    assert collect(spec2, "paper", store).stale == 9


def test_cells_frame_matches_the_report(table):
    spec, store, _ = table
    res = collect(spec, "paper", store)
    c = cells_frame(res)
    assert tuple(c.columns) == CELL_COLUMNS
    assert len(c) == 4  # A|x, A|y, B|x, B|y: every cell of the 2x2 table
    a = c.set_index(["row", "col"])
    for (row, col), vals in VALUES.items():
        s = res.get(row, col, "score")
        assert a.loc[(row, col), "mean"] == pytest.approx(s.mean) and a.loc[(row, col), "n"] == 3
        assert a.loc[(row, col), "std"] == pytest.approx(s.std)
    assert a.loc[("A", "x"), "reported"] == 1.0 and a.loc[("A", "x"), "delta"] == pytest.approx(0.45)
    assert a.loc[("B", "x"), "delta"] == pytest.approx(-1.0)  # higher is better: 1.0 vs 2.0
    assert math.isnan(a.loc[("B", "y"), "mean"]) and a.loc[("B", "y"), "n"] == 0  # no results, reported null
    assert set(c["tier"]) == {"paper"} and set(c["version"]) == {1} and c["regime"].isna().all()
    assert cells_frame(spec=spec, tier="paper", store=store).equals(c)
