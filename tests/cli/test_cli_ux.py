"""What a new user meets on the command line (issue 39, item 4): help text for every option,
one default tier, `report` quiet unless --print, errors that name the real id, and `run`
checking the data a selection needs before it starts any job."""

import argparse

import pytest

from pubench.cli import SUBCOMMANDS, main
from pubench.cli._common import DEFAULT_TIER
from tests.conftest import selftest_spec


def _subparsers():
    for add in SUBCOMMANDS:
        sub = argparse.ArgumentParser().add_subparsers()
        add(sub)
        yield from sub.choices.items()


def test_every_option_has_help_and_one_default_tier():
    for name, parser in _subparsers():
        for action in parser._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, f"pubench {name} {action.option_strings or action.dest}: no help text"
            if action.dest == "tier" and action.default is not None and name != "preflight":
                assert action.default == DEFAULT_TIER == "reduced", name


def test_report_is_quiet_unless_print(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["report", "table1-bcl", "--tier", "smoke"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "pubench: wrote " in err
    assert main(["report", "table1-bcl", "--tier", "smoke", "--print"]) == 0
    assert "table1-bcl" in capsys.readouterr().out
    assert main(["report", "table1-bcl", "--tier", "smoke", "--print", "--format", "latex"]) == 0
    assert "\\begin{tabular}" in capsys.readouterr().out
    assert main(["report", "table1-bcl", "--tier", "smoke", "--quiet"]) == 0  # old scripts keep working
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("argv,hint", [
    (["report", "table1-bcl", "--tier", "paper"], "run `pubench run table1-bcl --tier paper` first"),
    (["report", "table1-bcl"], "run `pubench run table1-bcl --tier reduced` first"),
    (["agreement", "table1-bcl"], "run `pubench run table1-bcl --tier reduced` first"),
    (["export", "table1-bcl", "--tier", "smoke"], "run `pubench run table1-bcl --tier smoke` first"),
    (["report"], "run `pubench run fig5-bcl --tier paper` first"),
])
def test_errors_name_the_real_id(tmp_registry, capsys, argv, hint):
    tmp_registry(selftest_spec())
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert hint in err and "<id>" not in err and len(err.splitlines()) == 1, err


def test_run_checks_the_data_before_starting_jobs(tmp_registry, tmp_path, monkeypatch, capsys):
    tmp_registry(selftest_spec().replace("B: {value: 2.0}", "B: {value: 2.0, data: {dataset: mnist}}"))
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path / "nodata"))
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("pubench: error: data missing for 2 job(s) of table1-bcl (nothing was run): ")
    assert f"mnist: place {tmp_path / 'nodata'}/MNIST/raw/" in err  # a long tmp path may shorten the rest
    assert not list((tmp_registry.root / "results").rglob("*.json"))  # no job ran, none failed
    # a selection that needs no missing data runs; --dry-run only warns
    assert main(["run", "table1-bcl", "--tier", "smoke", "--only", "A|*", "--no-progress"]) == 0
    assert main(["run", "table1-bcl", "--tier", "smoke", "--dry-run"]) == 0
    assert "warning: data missing for 2 job(s)" in capsys.readouterr().out


def test_progress_lines_without_a_terminal_are_a_twentieth_of_a_long_run(capsys):
    from types import SimpleNamespace

    from pubench.runner import _log_line

    short = _log_line(3)
    for i in range(3):
        short(SimpleNamespace(name=f"t/A|x/seed={i}"), "ok")
    assert capsys.readouterr().out.count("\n") == 3
    long = _log_line(360)
    for i in range(360):
        long(SimpleNamespace(name=f"t/A|x/seed={i}"), "failed" if i == 7 else "ok")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 21 and lines[0].startswith("  [8/360] failed") and lines[-1].startswith("  [360/360] ok")
    assert lines[-1].endswith("(359 ok, 1 failed so far)")


def test_expand_cell_names_its_own_option(tmp_registry, capsys):
    """Issue 54: `expand --cell zzz` said `--only` in its error."""
    tmp_registry(selftest_spec())
    assert main(["expand", "table1-bcl", "--cell", "zzz"]) == 2
    err = capsys.readouterr().err
    assert "--cell 'zzz' selects no cell of table1-bcl" in err and "--only" not in err


def test_preflights_first_example_is_not_the_twelve_hour_run():
    """Issue 54: the first example of `preflight --help` was every paper-tier cell, without a word."""
    sub = argparse.ArgumentParser().add_subparsers()
    next(add for add in SUBCOMMANDS if add.__module__.endswith(".preflight"))(sub)
    lines = [line.strip() for line in sub.choices["preflight"].epilog.splitlines() if line.strip().startswith("pubench")]
    assert "--only" in lines[0] or "--sample" in lines[0]
    whole = next(line for line in lines if line.split("#")[0].split() == ["pubench", "preflight", "--tier", "paper"])
    assert "12 hours" in whole
