"""``pubench export``: the aggregated results, a row per cell and metric, readable by pandas."""

import io
import json

import pytest

from pubench.cli import main
from tests.conftest import selftest_results

pd = pytest.importorskip("pandas")

VALUES = {("A", "x"): [1.4, 1.5], ("A", "y"): [3.0, 3.2], ("B", "x"): [1.0, 1.2]}


@pytest.fixture
def store(tmp_registry):
    spec, store = selftest_results(tmp_registry, "table1-bcl", "paper", 2, lambda job: None if (
        job.row, job.col) not in VALUES else {"score": VALUES[(job.row, job.col)][job.seed_index]})
    return tmp_registry


def test_export_csv_has_a_row_per_cell_and_metric(store, capsys):
    assert main(["export", "--format", "csv"]) == 0
    f = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(f) == 4 and set(f["tier"]) == {"paper"} and set(f["spec"]) == {"table1-bcl"}
    for col in ("mean", "std", "n", "reported", "delta", "tier", "version", "regime"):
        assert col in f.columns, col
    a = f.set_index(["row", "col"])
    assert a.loc[("A", "x"), "mean"] == pytest.approx(1.45) and a.loc[("A", "x"), "n"] == 2
    assert a.loc[("A", "x"), "reported"] == 1.0 and a.loc[("A", "x"), "delta"] == pytest.approx(0.45)
    assert a.loc[("B", "y"), "n"] == 0 and set(f["version"]) == {1}


def test_export_json_to_a_file_and_tier_filter(store, tmp_path, capsys):
    out = tmp_path / "sub" / "x.json"
    assert main(["export", "table1-bcl", "--tier", "paper", "--format", "json", "--out", str(out)]) == 0
    assert "wrote 4 row(s)" in capsys.readouterr().err
    rows = json.loads(out.read_text())
    assert len(rows) == 4 and pd.read_json(io.StringIO(out.read_text()), orient="records").shape[0] == 4
    # no results at the smoke tier: one line naming the real id, exit 2
    assert main(["export", "table1-bcl", "--tier", "smoke"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pubench run table1-bcl --tier smoke" in err and "<id>" not in err
    assert main(["export", "table1-bcl", "--tier", "custom"]) == 2
    assert "run a variant first: `pubench run table1-bcl --set key.path=value`" in capsys.readouterr().err


def test_export_parquet(store, tmp_path, capsys):
    out = tmp_path / "x.parquet"
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert main(["export", "--format", "parquet", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "install" in err and "pyarrow" in err
        assert not out.exists()
        return
    assert main(["export", "--format", "parquet", "--out", str(out)]) == 0
    assert len(pd.read_parquet(out)) == 4


def test_export_marks_variants_run_with_set(tmp_registry, capsys):
    from tests.conftest import selftest_spec

    tmp_registry(selftest_spec())
    for value in ("10", "20"):
        assert main(["run", "table1-bcl", "--tier", "reduced", "--set", f"value={value}", "--only", "A|*",
                     "--no-progress"]) == 0
    assert main(["run", "table1-bcl", "--tier", "reduced", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["export", "--format", "csv"]) == 0
    f = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert set(f["tier"]) == {"reduced", "custom"} and f[f.tier == "reduced"]["variant"].isna().all()
    v = f[(f.tier == "custom") & (f.n > 0)].set_index(["variant", "row", "col"])
    assert sorted(set(v.index.get_level_values(0))) == ["reduced + value=10", "reduced + value=20"]
    assert len(v) == 4 and (v["n"] == 2).all()
    assert v.loc[("reduced + value=20", "A", "x"), "mean"] == pytest.approx(20, abs=0.5)
    assert v.loc[("reduced + value=10", "A", "x"), "delta"] == pytest.approx(v.loc[("reduced + value=10", "A", "x"),
                                                                                  "mean"] - 1.0)
    assert main(["export", "--tier", "custom", "--format", "json"]) == 0
    assert {r["tier"] for r in json.loads(capsys.readouterr().out)} == {"custom"}
