"""``pubench validate FILE.yaml``: a spec file checked as the registry checks it, with the line
of the offending key, running nothing."""

import pytest

from pubench.cli import main
from tests.conftest import selftest_spec


def _write(tmp_path, text, name="table1-bcl.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_valid_spec_is_ok(tmp_registry, tmp_path, capsys):
    path = _write(tmp_path, selftest_spec())
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: ok (table1-bcl") and "4 cells" in out
    assert not any((tmp_registry.root / "results").iterdir())  # nothing run


def test_a_typod_unit_name_points_at_its_line(tmp_registry, tmp_path, capsys):
    text = selftest_spec().replace("task: selftest", "task: seltest")
    path = _write(tmp_path, text)
    assert main(["validate", str(path)]) == 2
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1
    assert out.startswith(f"{path}:{_line_of(text, 'task: seltest')}: experiment.task: unknown task 'seltest'")
    assert "did you mean 'selftest'" in out


@pytest.mark.parametrize("old,new,key,needle", [
    ("higher_is_better: true", "higher_is_better: maybe", "metrics.score.higher_is_better", "higher_is_better"),
    ("{row: B, col: x, mean: 2.0}", "{row: B, col: z, mean: 2.0}", "reported.cells[1].col", "col: z"),
    ("reduced: {seeds: 2}", "reduced: {seeds: 2, unavailable: {'Q|x': why}}", "tiers.reduced.unavailable.Q|x",
     "Q|x"),
])
def test_schema_and_layout_problems_name_key_and_line(tmp_registry, tmp_path, capsys, old, new, key, needle):
    text = selftest_spec().replace(old, new)
    assert text != selftest_spec()
    path = _write(tmp_path, text)
    assert main(["validate", str(path)]) == 2
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"{path}:{_line_of(text, needle)}: {key}: "), out


def test_missing_key_has_no_line_and_several_files(tmp_registry, tmp_path, capsys):
    good = _write(tmp_path, selftest_spec())
    bad = _write(tmp_path, selftest_spec("table2-bcl").replace("title: Test\n", ""), "table2-bcl.yaml")
    assert main(["validate", str(good), str(bad)]) == 2
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith(f"{good}: ok") and lines[1] == f"{bad}: title: missing"


def test_a_file_named_after_another_id_and_no_file(tmp_registry, tmp_path, capsys):
    path = _write(tmp_path, selftest_spec(), "table3-bcl.yaml")
    assert main(["validate", str(path)]) == 2
    assert "differs from the file name" in capsys.readouterr().out
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_every_committed_spec_validates(capsys):
    from pubench.registry import spec_paths

    assert main(["validate", *map(str, spec_paths())]) == 0


# ---- issue 64, item 2: rows to add to a table (an overlay file, --add-row values) checked as `run` checks them
ADDED = selftest_spec(rows=("A", "B")) + "row_groups: {AB: [A, B]}\n"


@pytest.mark.parametrize("text,key,needle,problem", [
    ("rows:\n  Better:\n    like: Q\n    set: {value: 5.0}\n", "rows.Better.like", "like: Q",
     "'Q' is not a row of table1-bcl"),
    ("rows:\n  Better: {like: A, set: {value: 5.0}}\n  B: {like: A}\n", "rows.B", "B: {like: A}",
     "table1-bcl already has a row or column of that name"),
    ("rows:\n  Better:\n    like: A\n    set:\n      valu: 5.0\n", "rows.Better.set.valu", "valu: 5.0",
     "the config of Better|x is rejected by task selftest: params: unknown key 'valu'"),
    ("rows:\n  Better:\n    like: A\n    set:\n      value: 5.0\n      pu_method: {name: upuu}\n",
     "rows.Better.set.pu_method.name", "pu_method:", "unknown pu_method 'upuu'; did you mean 'upu'?"),
    ("rows:\n  Better: [A]\n", "rows.Better", "Better: [A]", "expected {like: ROW, set: {params it sets}}"),
], ids=["like", "name-taken", "task-rejects", "unit", "shape"])
def test_an_overlay_gets_every_check_of_run_at_its_line(tmp_registry, tmp_path, capsys, text, key, needle, problem):
    tmp_registry(ADDED)
    path = _write(tmp_path, text, "mine.yaml")
    assert main(["validate", str(path), "--spec", "table1-bcl"]) == 2
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1 and out.startswith(f"{path}:{_line_of(text, needle)}: {key}: "), out
    assert problem in out, out
    assert main(["run", "table1-bcl", "--overlay", str(path), "--no-progress"]) == 2  # what run says, said first
    assert problem in capsys.readouterr().err
    assert not list((tmp_registry.root / "results").rglob("*.json"))


def test_a_valid_overlay_and_add_row_are_ok(tmp_registry, tmp_path, capsys):
    tmp_registry(ADDED)
    path = _write(tmp_path, "rows:\n  Better: {like: A, set: {value: 5.0}}\n  Worse: {like: B, set: {value: -5.0}}\n",
                  "mine.yaml")
    spec_file = _write(tmp_path, selftest_spec("table2-bcl"), "table2-bcl.yaml")
    assert main(["validate", str(path), str(spec_file), "--spec", "table1-bcl"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: ok (Better, Worse added to table1-bcl at tier reduced: 4 cell(s), 8 job(s) with the " \
                     "tier's seeds)" and out[1].startswith(f"{spec_file}: ok (table2-bcl")
    assert main(["validate", "--spec", "table1-bcl", "--tier", "smoke", "--add-row", "Better=value: 5.0",
                 "--like", "A"]) == 0
    assert capsys.readouterr().out.strip() == ("--add-row 'Better': ok (Better added to table1-bcl at tier smoke: "
                                               "2 cell(s), 2 job(s) with the tier's seeds)")
    assert main(["validate", "--spec", "table1-bcl", "--add-row", "Better=valu: 5.0", "--like", "A"]) == 2
    assert "params: unknown key 'valu'" in capsys.readouterr().out
    assert not list((tmp_registry.root / "results").rglob("*.json"))


@pytest.mark.parametrize("argv,message", [
    (["validate"], "name spec or overlay files"),
    (["validate", "--add-row", "X=value: 1", "--like", "A"], "--add-row: name the table the row is added to with --spec"),
])
def test_validate_without_anything_to_check_is_one_line(tmp_registry, capsys, argv, message):
    tmp_registry(ADDED)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_an_overlay_without_its_table_is_one_line(tmp_registry, tmp_path, capsys):
    tmp_registry(ADDED)
    path = _write(tmp_path, "rows:\n  Better: {like: A, set: {value: 5.0}}\n", "mine.yaml")
    assert main(["validate", str(path)]) == 2
    assert "is an overlay (rows to add to a table): name the table with --spec ID" in capsys.readouterr().err
