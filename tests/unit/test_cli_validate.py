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
