"""The command line: listing, showing, and one-line errors for bad input."""

import argparse
import json
import os
import subprocess
import sys

import pytest

from pubench.cli import main
from tests.conftest import selftest_spec


def _run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "pubench", *args], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("args,needle", [
    (["show", "fig5-bcll"], "did you mean 'fig5-bcl'"),
    (["run", "nope-table"], "no table or figure 'nope-table'"),
    (["run", "fig5-bcl", "--seeds", "0"], "--seeds must be in 1..1000"),
    (["run", "fig5-bcl", "--jobs", "0", "--tier", "smoke"], "--jobs must be in 1..64"),
    (["run", "fig5-bcl", "--executor", "slurm", "--profile", "nowhere", "--dry-run"], "no SLURM profile"),
    (["report", "nope-table"], "no table or figure"),
])
def test_bad_input_is_one_line_exit_2(args, needle, tmp_path):
    import os

    env = {**os.environ, "PUBENCH_RESULTS": str(tmp_path / "r"), "PUBENCH_REPORTS": str(tmp_path / "p")}
    out = _run(*args, env=env)
    assert out.returncode == 2, out.stderr
    assert needle in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_bad_choice_is_argparse_error():
    out = _run("run", "fig5-bcl", "--tier", "huge")
    assert out.returncode == 2 and "invalid choice" in out.stderr and "Traceback" not in out.stderr


def test_invalid_spec_reported_in_one_line(tmp_registry, capsys):
    tmp_registry(selftest_spec().replace("higher_is_better: true", "higher_is_better: maybe"))
    assert main(["list"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pubench: error: ") and "metrics.score.higher_is_better" in err
    assert len(err.splitlines()) == 1


def test_list_show_json(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["list"]) == 0
    assert "table1-bcl" in capsys.readouterr().out
    assert main(["show", "table1-bcl", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cells"][0] == {"row": "A", "col": "x", "metric": "score", "mean": 1.0, "std": 0.1,
                                "note": None, "mark": None}
    assert main(["show", "table1-bcl"]) == 0
    out = capsys.readouterr().out
    assert "1.00 ± 0.10" in out and "— (1)" in out and "(1) not printed" in out


def test_run_status_report_end_to_end(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    assert "tier 'smoke'" in capsys.readouterr().out
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status == [{"id": "table1-bcl", "tier": "smoke", "seeds": 1, "jobs": 4, "done": 4, "failed": 0,
                       "running": 0, "submitted": 0, "corrupt": 0, "pending": 0, "not_implemented_jobs": 0,
                       "unavailable_cells": 0}]
    assert main(["report", "table1-bcl", "--tier", "smoke"]) == 0
    reports = tmp_registry.root / "reports"
    assert (reports / "smoke" / "table1-bcl.md").exists() and (reports / "smoke" / "table1-bcl.tex").exists()
    assert "table1-bcl" in (reports / "README.md").read_text()


def test_report_of_one_table_survives_a_broken_unrelated_spec(tmp_registry, capsys):
    """The report asked for is written (its pooled spreads over the specs that load); only the
    index, which reads every spec, is left as it was, with one line saying why."""
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    broken = tmp_registry.root / "experiments" / "bcl" / "table9-bcl.yaml"
    broken.write_text("id: table9-bcl\npaper: bcl\nkind: [unclosed\n")
    capsys.readouterr()
    assert main(["report", "table1-bcl", "--tier", "smoke"]) == 0
    err = capsys.readouterr().err
    assert (tmp_registry.root / "reports" / "smoke" / "table1-bcl.md").exists()
    assert "index not updated" in err and "table9-bcl.yaml" in err and "Traceback" not in err


def test_help_has_examples():
    out = _run("run", "--help")
    assert out.returncode == 0 and "examples:" in out.stdout and "--dry-run" in out.stdout


def test_every_subcommand_is_one_parser_function_with_a_worked_example():
    """Each parser function of ``SUBCOMMANDS`` adds one subcommand with a command function and
    at least one worked example in its help (a new subcommand is picked up here)."""
    import argparse as ap

    from pubench.cli import SUBCOMMANDS

    for add in SUBCOMMANDS:
        sub = ap.ArgumentParser().add_subparsers()
        add(sub)
        (name, parser), = sub.choices.items()
        assert callable(parser.get_default("fn")), name
        assert "pubench " + name in (parser.epilog or ""), f"{name}: no worked example in its help"


def test_cells_naming_missing_units_are_skipped_not_failed(tmp_registry, capsys):
    text = selftest_spec().replace("B: {value: 2.0}", "B: {value: 2.0, data: {dataset: no_such_dataset}}")
    tmp_registry.plan("dataset", "no_such_dataset")
    tmp_registry(text)
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "not implemented yet, not run: B|x: dataset:no_such_dataset" in out
    assert "2 job(s)" in out


def test_expand_prints_resolved_configs_and_seed0_job_ids(tmp_registry, capsys):
    from pubench.jobs import expand
    from pubench.numerics import resolve
    from pubench.registry import get_spec

    tmp_registry(selftest_spec().replace("  reduced: {seeds: 2}", "  reduced: {seeds: 2, unavailable: {'B|y': why}}"))
    assert main(["expand", "table1-bcl", "--tier", "smoke", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    jobs = {(j.row, j.col): j for j in expand(get_spec("table1-bcl"), "smoke", 1, numerics=resolve()).jobs}
    assert [(c["row"], c["col"]) for c in out["cells"]] == [("A", "x"), ("A", "y"), ("B", "x"), ("B", "y")]
    for c in out["cells"]:
        job = jobs[(c["row"], c["col"])]
        assert (c["job_id"], c["params"], c["seeds"], c["task"]) == (job.id, job.params, job.seeds, "selftest")
    assert out["cells"][0]["params"] == {"value": 1.0, "sleep": 0.0}

    assert main(["expand", "table1-bcl", "--tier", "reduced", "--cell", "B|*"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# table1-bcl (version 1), tier reduced: 1 cells to run, 1 not run")
    assert f"## B|x  job {expand(get_spec('table1-bcl'), 'reduced', 1).jobs[2].id}" in text
    assert "params:\n  value: 2.0" in text and "## B|y: not run at this tier: why" in text and "A|x" not in text

    assert main(["expand", "table1-bcl", "--tier", "reduced", "--only", "B|*"]) == 0  # run's and preflight's name
    assert capsys.readouterr().out == text

    assert main(["expand", "table1-bcl", "--cell", "Z|*"]) == 2
    assert "selects no cell" in capsys.readouterr().err


def test_schema_prints_the_committed_json_schema(capsys):
    from pathlib import Path

    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    committed = json.loads((Path(__file__).resolve().parents[2] / "experiments" / "spec.schema.json").read_text())
    assert printed == committed and printed["title"].startswith("pubench spec")


@pytest.mark.parametrize("command", ["run.cmd_run", "verify.cmd_verify"])
def test_no_progress_silences_progress_inside_jobs_and_restores_the_environment(command, monkeypatch):
    import importlib

    from pubench.cli._common import quiet_jobs_when_asked

    seen = []
    monkeypatch.setenv("PUBENCH_PROGRESS", "1")
    wrapped = quiet_jobs_when_asked(lambda args: seen.append(os.environ.get("PUBENCH_PROGRESS")) or 0)
    assert wrapped(argparse.Namespace(no_progress=True)) == 0
    assert wrapped(argparse.Namespace(no_progress=False)) == 0
    assert seen == ["0", "1"] and os.environ["PUBENCH_PROGRESS"] == "1"
    # both commands that run jobs go through it
    module, name = command.split(".")
    assert getattr(importlib.import_module(f"pubench.cli.{module}"), name).__wrapped__ is not None
