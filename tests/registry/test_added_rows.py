"""A new row in any table without editing its spec (issue 54, item 2): ``pubench run ID --add-row
NAME=YAML --like ROW`` (or ``--overlay FILE``) runs the row at the baseline's budget at the tier,
stores it apart from the spec's records, and the report sets it beside the paper's rows with its
rank and one-sided tests against every row of its block and the block's regime."""

from __future__ import annotations

import json

import pytest

from pubench.cli import main
from pubench.jobs import expand
from pubench.registry import get_spec
from pubench.registry.added_rows import AddedRow, canonical, overlay, parse_add_row
from pubench.registry.spec import CUSTOM
from pubench.utils.hashing import config_hash
from tests.conftest import selftest_spec

#: rows A and B in one block; the reduced tier gives A its budget by name (sleep 0) and B the tier-wide one
SPEC = selftest_spec(rows=("A", "B")).replace(
    "reduced: {seeds: 2}",
    'reduced:\n    seeds: 3\n    cells: {"A|*": {sleep: 0.0}}\n    rows: {B: {}}\n    deviations: [A sleeps no more]'
) + ("row_groups: {AB: [A, B]}\n"
     "regime:\n  - {block: AB, group: AB, check: trained, reference: B, baseline: A, margin: 0}\n")
BETTER = ["--add-row", "Better=value: 5.0", "--like", "A"]


def _records(root, tier, spec_id="table1-bcl"):
    return [json.loads(p.read_text()) for p in (root / "results" / tier / spec_id).glob("*.json")]


def test_an_added_row_runs_its_baselines_config_at_the_tier_with_its_own_keys(tmp_registry):
    tmp_registry(SPEC)
    spec = get_spec("table1-bcl")
    row = parse_add_row("Better=value: 5.0", "A")
    view = spec.with_added_rows("reduced", (row,))
    assert view.rows == ["A", "B", "Better"] and view.row_groups["AB"] == ["A", "B", "Better"]
    assert view.resolve(CUSTOM, "Better", "x")["params"] == {"value": 5.0, "sleep": 0.0}  # A's budget at reduced
    assert view.resolve(CUSTOM, "A", "x") == spec.resolve("reduced", "A", "x")
    plan = expand(view, CUSTOM)
    assert {(j.row, j.col) for j in plan.jobs} == {("Better", "x"), ("Better", "y")} and len(plan.jobs) == 6
    job = plan.jobs[0]
    base = next(j for j in expand(spec, "reduced").jobs if (j.row, j.col, j.seed_index) == ("A", "x", 0))
    assert job.seeds["data"] == base.seeds["data"]  # the same split: paired with its block
    assert job.id != base.id and job.id == config_hash(job.identity) and job.tier == CUSTOM
    assert job.variant == {"base_tier": "reduced", "row": {"name": "Better", "like": "A", "set": {"value": 5.0},
                                                           "inherits": {"sleep": 0.0}, "replaces": []}}


def test_a_unit_block_naming_another_unit_replaces_the_baselines():
    base = {"pu_method": {"name": "nnpu", "beta": 0.0, "gamma": 1.0}, "train": {"epochs": 20, "batch_size": 1000}}
    replaced = []
    out = overlay(base, {"pu_method": {"name": "my_pu"}, "train": {"epochs": 30}}, replaced)
    assert out == {"pu_method": {"name": "my_pu"}, "train": {"epochs": 30, "batch_size": 1000}}
    assert replaced == ["pu_method"]
    assert overlay(base, {"pu_method": {"name": "nnpu", "beta": 0.5}})["pu_method"] == {"name": "nnpu", "beta": 0.5,
                                                                                      "gamma": 1.0}
    assert overlay(base, {"train": None}) == {"pu_method": base["pu_method"]}


def test_run_report_export_and_status_keep_the_added_row_apart(tmp_registry, capsys):
    tmp_registry(SPEC)
    assert main(["run", "table1-bcl", "--tier", "reduced", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["run", "table1-bcl", "--tier", "reduced", *BETTER, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "added row 'Better': runs like 'A' at tier 'reduced', with the budget the tier gives it (sleep = 0.0), " \
           "and sets value: 5.0" in out
    assert "baselines: all 4 cells of the rows compared with have their records at tier 'reduced'" in out
    root = tmp_registry.root
    assert {r["job"]["row"] for r in _records(root, "reduced")} == {"A", "B"}  # the spec's own, untouched
    added = _records(root, CUSTOM)
    assert len(added) == 6 and {r["job"]["variant"]["row"]["name"] for r in added} == {"Better"}

    assert main(["report", "table1-bcl"]) == 0
    text = (root / "reports" / CUSTOM / "table1-bcl--reduced+rows.md").read_text()
    assert "tier `custom` (reduced + added rows: Better)" in text
    table = text.split("## Rows added")[0]
    assert "| Better " in table and "/ 1.00" not in table.split("| Better")[1].splitlines()[0]  # no reported number
    section = text.split("## Rows added to the paper's")[1].split("\n## ")[0]
    lines = [line for line in section.splitlines() if line.startswith("| Better")]
    assert len(lines) == 4  # 2 columns x 2 rows of its block
    assert all("1 of 3" in line and "holds (p" in line and "paired, n=3" in line and "AB: in regime" in line
               for line in lines), section
    own = (root / "reports" / "reduced" / "table1-bcl.md").read_text()
    assert "Better" not in own

    assert main(["export", "--tier", "custom", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["row"] for r in rows} == {"Better"} and {r["variant"] for r in rows} == {"reduced + added rows: Better"}
    assert all(r["n"] == 3 and r["regime"] == "in regime" for r in rows)

    assert main(["status", "table1-bcl", "--json"]) == 0
    status = {r["tier"]: r for r in json.loads(capsys.readouterr().out)}
    assert status["custom (0 variants, 1 added row)"]["done"] == 6


def test_an_overlay_file_adds_rows(tmp_registry, tmp_path, capsys):
    tmp_registry(SPEC)
    overlay_file = tmp_path / "mine.yaml"
    overlay_file.write_text("rows:\n  Better: {like: A, set: {value: 5.0}}\n  Worse: {like: B, set: {value: -5.0}}\n")
    assert main(["expand", "table1-bcl", "--overlay", str(overlay_file), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["tier"] == CUSTOM and [r["name"] for r in got["variant"]["added_rows"]] == ["Better", "Worse"]
    params = {(c["row"], c["col"]): c["params"] for c in got["cells"]}
    assert params[("Worse", "x")] == {"value": -5.0} and params[("Better", "y")] == {"value": 5.0, "sleep": 0.0}


def test_a_method_column_is_added_where_methods_are_columns(tmp_registry):
    tmp_registry(selftest_spec(rows=("A", "B"), cols=("x", "y"), extra="methods_in: cols\n"))
    view = get_spec("table1-bcl").with_added_rows("reduced", (AddedRow("z", "x", canonical({"value": 9.0})),))
    assert view.cols == ["x", "z", "y"] and view.rows == ["A", "B"]
    assert view.resolve(CUSTOM, "B", "z")["params"] == {"value": 9.0}
    assert {(j.row, j.col) for j in expand(view, CUSTOM).jobs} == {("A", "z"), ("B", "z")}


@pytest.mark.parametrize("argv,message", [
    (["--add-row", "Better=value: 5.0"], "--add-row 'Better': name the baseline row it runs like with --like ROW"),
    (["--add-row", "Better", "--like", "A"], "expected NAME=YAML"),
    (["--add-row", "Better=[1, 2]", "--like", "A"], "the value must be a mapping of params"),
    (["--add-row", "Better=value: 5.0", "--like", "Q"], "--like 'Q' is not a row of table1-bcl"),
    (["--add-row", "B=value: 5.0", "--like", "A"], "already has a row or column of that name"),
    (["--like", "A"], "--like names the row an --add-row runs like"),
    (["--add-row", "Better=value: 5.0", "--like", "A", "--set", "value=1"], "--set and --add-row: one at a time"),
    (["--add-row", "Better=valu: 5.0", "--like", "A"], "--add-row: the config of Better|x is rejected by task "
                                                        "selftest: params: unknown key 'valu'"),
])
def test_bad_added_rows_are_one_line_before_any_job(tmp_registry, capsys, argv, message):
    tmp_registry(SPEC)
    assert main(["run", "table1-bcl", "--tier", "reduced", "--no-progress", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not list((tmp_registry.root / "results").rglob("*.json"))


# ---- issue 64, item 1: a unit nothing registers is one line, exit 2, in run, its dry run and expand alike
TYPO = ["--add-row", "MyPU=pu_method: {name: upuu}", "--like", "MLP nnPU"]
ENTRY_POINT = '[project.entry-points."pubench.units"]'


@pytest.mark.parametrize("argv", [
    ["run", "table2-punce", "--tier", "reduced", *TYPO, "--no-progress"],
    ["run", "table2-punce", "--tier", "reduced", *TYPO, "--dry-run"],
    ["run", "table2-punce", "--tier", "paper", *TYPO, "--executor", "slurm", "--dry-run"],
    ["expand", "table2-punce", "--tier", "reduced", *TYPO],
], ids=["run", "dry-run", "slurm-dry-run", "expand"])
def test_an_added_row_naming_a_unit_nothing_registers_stops_every_command(scratch_store, capsys, argv):
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "not implemented yet" not in captured.out, captured
    assert "--add-row 'MyPU': pu_method.name: unknown pu_method 'upuu'; did you mean 'upu'?" in err, err
    assert ENTRY_POINT in err and "pip install -e" in err
    assert not list(scratch_store.rglob("*.json"))


def test_an_overlay_row_naming_a_unit_nothing_registers_names_its_line(scratch_store, tmp_path, capsys):
    overlay_file = tmp_path / "mine.yaml"
    overlay_file.write_text("rows:\n  MyPU:\n    like: MLP nnPU\n    set:\n      pu_method: {name: nnpu, beta: 0.0}\n"
                            "  Other:\n    like: MLP uPU\n    set:\n      pu_method:\n        name: shrnk_nnpuu\n")
    for argv in (["run", "table2-punce", "--overlay", str(overlay_file), "--dry-run"],
                 ["expand", "table2-punce", "--overlay", str(overlay_file)]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert f"{overlay_file}:10: rows.Other.set.pu_method.name: unknown pu_method 'shrnk_nnpuu' (registered: " \
               in err and "nnpu, " in err and ENTRY_POINT in err, err


def test_a_job_naming_a_unit_not_installed_where_it_runs_fails_before_it_starts(tmp_path, monkeypatch):
    """On a SLURM node or a campaign's GPU machine whose environment lacks the package: the job
    records one line naming the unit, the host and the entry point, before any data is read."""
    from pubench.executors.worker import execute_job

    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path / "no-data"))  # a job that got as far as its data would say so
    view = get_spec("table2-punce").with_added_rows("smoke", (parse_add_row("MyPU=pu_method: {name: my_pu}",
                                                                            "MLP nnPU"),))
    job = expand(view, CUSTOM, 1, ["MyPU|n_P=1k"]).jobs[0]
    assert execute_job(job, tmp_path / "results", claim=False) == "failed"
    (failure,) = [json.loads(p.read_text()) for p in (tmp_path / "results").rglob("*.failed.json")]
    assert failure["error"]["type"] == "UnitNotInstalled"
    assert failure["error"]["message"].startswith("pu_method 'my_pu' is not registered on ") and ENTRY_POINT in \
        failure["error"]["message"]


# ---- issue 64, item 4: your rows in your own store, compared with the baselines of another (the committed one)
def _snapshot(folder):
    """Every file of ``folder`` but the caches of ``.cache/`` (git ignores it: the metadata, encoder and
    preflight caches, shared by every store)."""
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")
            if ".cache" not in p.relative_to(folder).parts}


def test_rows_in_your_own_store_are_compared_with_the_committed_baselines_and_nothing_in_the_checkout_moves(
        tmp_registry, tmp_path, monkeypatch, capsys):
    tmp_registry(SPEC)
    checkout = tmp_path / "checkout"
    monkeypatch.setenv("PUBENCH_RESULTS", str(checkout / "results"))  # the committed store, with the baselines
    assert main(["run", "table1-bcl", "--tier", "reduced", "--no-progress"]) == 0
    (checkout / "reports").mkdir()
    (checkout / "reports" / "README.md").write_text("the tracked index\n")
    monkeypatch.setenv("PUBENCH_HOME", str(checkout))
    before = _snapshot(checkout)
    mine = tmp_path / "mine"
    monkeypatch.setenv("PUBENCH_RESULTS", str(mine / "results"))
    monkeypatch.setenv("PUBENCH_REPORTS", str(mine / "reports"))
    capsys.readouterr()

    assert main(["run", "table1-bcl", "--tier", "reduced", *BETTER, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "baselines: all 4 cells of the rows compared with have their records at tier 'reduced' (of their 12 " \
           "job(s): 12 in the committed store (results/ of the checkout)); the report compares against them" in out, out
    assert len(_records(mine, CUSTOM)) == 6
    monkeypatch.delenv("PUBENCH_REPORTS")  # your store's reports would overwrite the committed ones: refused
    assert main(["report", "table1-bcl", "--tier", "custom"]) == 2
    assert "point $PUBENCH_REPORTS at a folder of yours" in capsys.readouterr().err
    monkeypatch.setenv("PUBENCH_REPORTS", str(mine / "reports"))
    assert main(["report", "table1-bcl", "--tier", "custom"]) == 0
    text = (mine / "reports" / CUSTOM / "table1-bcl--reduced+rows.md").read_text()
    section = text.split("## Rows added to the paper's")[1].split("\n## ")[0]
    assert "the added rows' baselines: 12 record(s) of 4 cell(s) from the committed store (results/ of the " \
           "checkout)." in section, section
    lines = [line for line in section.splitlines() if line.startswith("| Better")]
    assert len(lines) == 4 and all("holds (p" in line and "paired, n=3" in line for line in lines), section
    assert main(["site"]) == 0 and (mine / "reports" / "site" / "index.html").is_file()
    assert main(["export", "--tier", "custom", "--format", "json"]) == 0
    assert _snapshot(checkout) == before  # no record, report, index or site written into the checkout

    # --baselines names another store; this store's own records of a cell's seed come first
    other = tmp_path / "other"
    monkeypatch.setenv("PUBENCH_RESULTS", str(other))
    assert main(["run", "table1-bcl", "--tier", "reduced", "--only", "A|x", "--no-progress"]) == 0
    monkeypatch.setenv("PUBENCH_RESULTS", str(mine / "results"))
    assert main(["report", "table1-bcl", "--tier", "custom", "--baselines", str(other)]) == 0
    text = (mine / "reports" / CUSTOM / "table1-bcl--reduced+rows.md").read_text()
    assert f"3 record(s) of 1 cell(s) from {other}" in text and "`--baselines DIR` names another" in text
    assert "PUBENCH_BASELINES" not in __import__("os").environ


# ---- issue 64, item 6: an estimate from the --like row's records; hints that run exactly the missing cells
def test_an_added_row_is_estimated_from_its_like_rows_records_and_the_hint_names_the_missing_cells(
        tmp_registry, capsys):
    tmp_registry(SPEC)
    assert main(["run", "table1-bcl", "--tier", "reduced", *BETTER, "--dry-run"]) == 0  # a row missing everywhere: ROW|*
    assert "`pubench run table1-bcl --tier reduced --seeds 3 --only 'A|*' --only 'B|*'` runs the others into this " \
           "store" in capsys.readouterr().out
    assert main(["run", "table1-bcl", "--tier", "reduced", "--only", "A|x", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["run", "table1-bcl", "--tier", "reduced", *BETTER, "--only", "Better|x", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "baselines: 1 of 2 cells of the rows compared with have their records (seeds 0-2) at tier 'reduced'" in out
    assert "`pubench run table1-bcl --tier reduced --seeds 3 --only 'B|x'` runs the others into this store" in out, out
    estimate = next(line for line in out.splitlines() if line.startswith("  estimate:"))
    assert "for the 3 of 3 job(s) of added rows from the records of the rows they run like (3; 3 like A at tier " \
           "reduced" in estimate, estimate


def test_a_results_folder_that_is_a_file_is_one_line(tmp_registry, tmp_path, monkeypatch, capsys):
    tmp_registry(SPEC)
    (tmp_path / "afile").write_text("not a store\n")
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "afile"))
    for argv in (["status"], ["report"], ["run", "table1-bcl", "--dry-run"], ["export"]):
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert "no results yet" not in captured.out
        assert captured.err.strip() == (f"pubench: error: the result store {tmp_path / 'afile'} is a file, not a "
                                        "folder: point $PUBENCH_RESULTS at a folder (a new one is made)"), captured


# ---- issue 64, item 5: the added row on the site, linked from the index and from its table's page
def test_the_site_links_the_added_rows_from_the_index_and_the_tables_pages(tmp_registry, capsys):
    import re

    tmp_registry(SPEC)
    assert main(["run", "table1-bcl", "--tier", "reduced", "--no-progress"]) == 0
    assert main(["run", "table1-bcl", "--tier", "reduced", *BETTER, "--no-progress"]) == 0
    assert main(["site"]) == 0
    site = tmp_registry.root / "reports" / "site"
    added = "custom/table1-bcl--reduced+rows.html"
    assert (site / added).is_file()
    label = "rows added at tier reduced: Better"
    index = (site / "index.html").read_text()
    assert f'<a class="added" href="{added}">{label}</a>' in index
    table_page = (site / "reduced" / "table1-bcl.html").read_text()
    assert f'<a href="../{added}">{label}</a>' in table_page
    assert '<a href="../reduced/table1-bcl.html">tier reduced</a>' in (site / added).read_text()
    spec_page = (site / "spec" / "table1-bcl.html").read_text()
    links = re.search(r"<p>Reports: (.*?)</p>", spec_page).group(1)
    assert links == f'<a href="../reduced/table1-bcl.html">tier reduced</a> · <a href="../{added}">{label}</a>', links


# ---- issue 64, item 7: a YAML error is whole, never cut mid-word
@pytest.mark.parametrize("argv", [
    ["run", "table1-bcl", "--add-row", "Better=value: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9", "--like", "A",
     "--dry-run"],
    ["run", "table1-bcl", "--set", "value=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3", "--dry-run"],
])
def test_a_yaml_error_is_one_whole_line(tmp_registry, capsys, argv):
    tmp_registry(SPEC)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "<unicode string>" not in err, err
    assert err.endswith("did not find expected ',' or ']' (while parsing a flow sequence that starts at line 1, "
                        f"column {1 if '--set' in argv else 8}))"), err


def test_status_explains_a_partial_runs_seeds_jobs_and_pending(tmp_registry, capsys):
    """After `make demo` status read `seeds 3 / jobs 438 / pending 436` for a 1-seed, 2-cell run, unexplained."""
    tmp_registry(SPEC)
    assert main(["run", "table1-bcl", "--tier", "reduced", "--seeds", "1", "--only", "A|x", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.startswith("table1-bcl"))
    assert row[1:6] == ["reduced", "3", "12", "1", "0"]
    assert "(seeds and jobs: each tier's whole plan, every cell it runs x its seeds (--seeds N counts N), not only " \
           "the cells and seeds a run selected" in out
