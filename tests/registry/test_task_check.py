"""``validate`` runs the task's parameter check on every cell at every tier and ``run`` refuses
before any job (issue 54, item 4): the two specs of the issue, a copy of fig4-bcl with ``NN`` for
``N`` and one whose row has no experiment entry, fail with one line naming the key and its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from pubench.cli import main
from pubench.registry.task_check import rejected_path
from tests.conftest import selftest_spec

ROOT = Path(__file__).resolve().parents[2]
FIG4 = (ROOT / "experiments" / "bcl" / "fig4-bcl.yaml").read_text(encoding="utf-8").replace("id: fig4-bcl",
                                                                                            "id: fig9-bcl")
NN = FIG4.replace("M: 1, N: 20000", "M: 1, NN: 20000")
NO_ROW_ENTRY = FIG4.replace("    FN: {scores: fn}\n", "")


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("text,key,line_of,problem", [
    (NN, "experiment.params.data.NN", "NN: 20000", "params.data: unknown key 'NN'"),
    (NO_ROW_ENTRY, "experiment.rows.FN", "  rows:", "params: missing key 'scores' (near line"),
], ids=["NN-for-N", "row-without-entry"])
def test_validate_names_the_key_and_its_line(tmp_registry, tmp_path, capsys, text, key, line_of, problem):
    path = tmp_path / "fig9-bcl.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1
    assert out.startswith(f"{path}:{_line_of(text, line_of)}: {key}: task bcl_score_density rejects cell "), out
    assert problem in out


@pytest.mark.parametrize("text", [NN, NO_ROW_ENTRY], ids=["NN-for-N", "row-without-entry"])
def test_run_refuses_before_any_job(tmp_registry, capsys, text):
    path = tmp_registry(text)
    assert main(["run", "fig9-bcl", "--tier", "smoke", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"pubench: error: {path}:") and err.endswith("(nothing was run)"), err
    assert len(err.splitlines()) == 1
    assert not list((tmp_registry.root / "results").rglob("*.json")), "a job ran"


def test_a_key_a_tier_sets_points_at_the_tier(tmp_registry, tmp_path, capsys):
    text = selftest_spec().replace("params: {sleep: 0.0}", "params: {slep: 0.0}")
    path = tmp_path / "table1-bcl.yaml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 2
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"{path}:{_line_of(text, 'slep')}: tiers.smoke.params.slep: task selftest rejects cell "
                          "A|x at tier smoke: params: unknown key 'slep'"), out


def test_dry_run_warns_instead(tmp_registry, capsys):
    tmp_registry(selftest_spec().replace("params: {sleep: 0.0}", "params: {slep: 0.0}"))
    assert main(["run", "table1-bcl", "--tier", "smoke", "--dry-run"]) == 0
    assert "warning: " in capsys.readouterr().out


@pytest.mark.parametrize("message,path", [
    ("params.data: unknown key 'NN' (known: M, N)", ["data", "NN"]),
    ("params: missing key 'scores'", ["scores"]),
    ("params.data.alpha must lie in [0.5, 1] (Sec. 3.1), got 0.2", ["data", "alpha"]),
    ("params.pretrain.optimizer.lr: expected a number, got 'x'", ["pretrain", "optimizer", "lr"]),
    ("something else", []),
])
def test_the_rejected_path_is_read_off_the_message(message, path):
    assert rejected_path(message) == path
