"""Generated command lines, `--set` values, `--add-row` values and overlay files (issue 55,
item 3): argument lists built from the CLI's own parsers (every subcommand, its options, values
from valid to hostile); `key.path=value` overrides (pubench/registry/overrides.py) through the
library and through `expand`/`run --dry-run`; `--add-row NAME=YAML` and structure-aware mutations
of an overlay file (pubench/registry/added_rows.py) through `expand`, `run --dry-run` and `run`.
Every case ends in success or one line and exit 2; the store's valid records stay valid.

Budgets and how a failure is replayed: tests/fuzzing.py."""

from __future__ import annotations

import argparse
import copy
import json
import shutil

import pytest
from hypothesis import note
from hypothesis import strategies as st

from tests.conftest import selftest_spec
from tests.fuzzing import FuzzDumper, assert_clean_end, call_cli, dump, mutate, time_limit, values

ODD = ["", " ", "-", "--", "---", "-x", "--x", "=", "*", "*|*", "A|x", "|", "A|", "|x", "[", "?",
       "\x00", "\u202e", "\U0001F600", "e\u0301", "nan", "inf", "-inf", "1e999", "0", "-1", "1", "2",
       "0x10", "1_000", "10**9", "99999999999999999999", "-0", "0.5", "true", "null", "~", "table1-bcl", "table1-bcll",
       "fig5-bcl", "smoke", "paper", "custom", "md", "json", "csv", "cpu", "cuda", "slurm", "local", "debug"]


# ---- a store the commands read ---------------------------------------------------------
@pytest.fixture(scope="module")
def cli_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-cli")
    for name in ("experiments", "results", "reports", "logs", "cache", "data", "empty"):
        (root / name).mkdir()
    (root / "experiments" / "bcl").mkdir()
    (root / "experiments" / "bcl" / "table1-bcl.yaml").write_text(selftest_spec())
    env = {"PUBENCH_EXPERIMENTS": "experiments", "PUBENCH_RESULTS": "results", "PUBENCH_REPORTS": "reports",
           "PUBENCH_LOGS": "logs", "PUBENCH_CACHE": "cache", "PUBENCH_DATA": "data"}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, str(root / v))
        mp.setenv("PUBENCH_NO_REEXEC", "1")  # a generated --threads or --numerics must not re-exec pytest
        mp.setenv("PUBENCH_NO_MALLOC_TUNING", "1")
        mp.setenv("PUBENCH_SLURM_PROFILES", str(root / "empty"))  # no profile: nothing is ever submitted
        mp.chdir(root)
        assert call_cli(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]).rc == 0
        yield root


def _records(root) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (root / "results" / "smoke" / "table1-bcl").glob("*.json")}


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from pubench.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


SUBCOMMANDS = _subcommands()
#: commands a generated list may not run as given: they would start worker processes, submit to a
#: cluster or download; `run` without --dry-run runs in this process (--jobs 1, the local executor)
SPAWNING_OPTIONS = {"--jobs", "--executor", "--cluster", "--profile"}


def _value(draw, action: argparse.Action, root) -> str:
    choices = [str(c) for c in action.choices] if action.choices else []
    # paths inside this test's folder only: --out, --status and export write where they are told
    paths = [str(root / "empty"), str(root / "results"), str(root / "nowhere" / "x"), str(root / "reports" / "out.x"),
             str(root / "experiments" / "bcl" / "table1-bcl.yaml"), str(root / "a file"), "/dev/null"]
    return draw(st.sampled_from(choices + paths + ODD) | st.text(max_size=12), label="value")


@st.composite
def argv_of(draw, root):
    name = draw(st.sampled_from(sorted(SUBCOMMANDS)), label="command")
    parser = SUBCOMMANDS[name]
    actions = [a for a in parser._actions if a.dest != "help"]
    argv = [name]
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["option", "option", "positional", "junk"]))
        if kind == "option" and any(a.option_strings for a in actions):
            action = draw(st.sampled_from([a for a in actions if a.option_strings]))
            argv.append(draw(st.sampled_from(action.option_strings)))
            if action.nargs != 0:
                argv.append(_value(draw, action, root))
        elif kind == "positional" and any(not a.option_strings for a in actions):
            argv.append(_value(draw, draw(st.sampled_from([a for a in actions if not a.option_strings])), root))
        else:
            argv.append(draw(st.sampled_from(ODD + ["--help", "-h", "--tier=smoke", "--seeds=0", "--set=a=1"])
                             | st.text(max_size=8)))
    return _tamed(argv)


def _tamed(argv: list[str]) -> list[str]:
    """``argv`` without what would start processes, submit or download (see SPAWNING_OPTIONS)."""
    out, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a.split("=", 1)[0] in SPAWNING_OPTIONS and argv[0] in ("run", "verify", "preflight"):
            skip = "=" not in a
            continue
        out.append(a)
    if out[0] == "prepare" and "--check" not in out:
        out.append("--check")  # never a download: offline it would wait on the network
    if out[0] == "preflight":
        out += ["--max-seconds", "5"]
    return out


def test_a_generated_command_line_ends_in_success_or_one_line(cli_store, fuzz):
    fuzz.run(80, _a_generated_command_line_ends_in_success_or_one_line, cli_store)


def _a_generated_command_line_ends_in_success_or_one_line(cli_store, data):
    argv = data.draw(argv_of(cli_store), label="argv")
    note(f"argv: {argv}")
    before = _records(cli_store)
    out = call_cli(argv)
    assert_clean_end(out, argv, bad_input_lines=(0, 1) if argv[0] == "validate" else 1)  # validate: on stdout
    after = _records(cli_store)
    lost = [name for name, blob in before.items() if name not in after
            or (after[name] != blob and "--force" not in argv)]
    assert not lost, f"valid records lost or changed: {lost}"
    shutil.rmtree(cli_store / "results" / "custom", ignore_errors=True)  # --set runs go there


def test_generated_command_lines_through_a_real_process(cli_store):
    """A few generated lines as a user types them: `python -m pubench ...` in its own process."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    lines = [["run", "table1-bcl", "--seeds", "1e999"], ["expand", "table1-bcl", "--set", "value=&a [*a]"],
             ["run", "table1-bcl", "--tier", "smoke", "--dry-run", "--set", "value=2026-02-30"],
             ["status", "--tier", "\U0001F600"], ["log", "x" * 5000], ["show", "\x7f"]]
    for argv in lines:
        out = subprocess.run([sys.executable, "-m", "pubench", *argv], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(repo)}, cwd=cli_store)
        assert out.returncode == 2 and "Traceback" not in out.stderr, (argv, out.stderr)
        assert len([x for x in out.stderr.splitlines() if x.strip()]) == 1, (argv, out.stderr)


# ---- --set values ------------------------------------------------------------------------
def _yaml_text(draw) -> str:
    """A value as YAML's flow style writes it (dates, !!binary, anchors and tags included), or odd text."""
    import yaml

    if draw(st.booleans()):
        return draw(st.sampled_from(ODD) | st.text(max_size=20) | st.builds(lambda: "x" * 5000))
    value = draw(values)
    return yaml.dump(value, Dumper=FuzzDumper, default_flow_style=True, width=10**6).strip().removesuffix("\n...")


override_keys = st.one_of(st.sampled_from(["value", "sleep", "data", "data.x", "a.b.c", "value.x", "", ".", "a..b",
                                            ".value", "value.", "\u202e", "x" * 300, "a b", "a=b", "~"]),
                          st.text(max_size=10))


def test_a_generated_override_parses_to_plain_data_or_one_line(fuzz):
    """The library path: :func:`parse_override` / :func:`apply_overrides` either give params that
    canonical JSON (job ids, records) holds unchanged, or raise :class:`OverrideError` with one line."""
    fuzz.run(80, _a_generated_override_parses_to_plain_data_or_one_line)


def _a_generated_override_parses_to_plain_data_or_one_line(data):
    from pubench.registry.overrides import OverrideError, apply_overrides
    from pubench.utils.hashing import canonical_json

    key = data.draw(override_keys, label="key")
    raw = _yaml_text(data.draw)
    text = f"{key}={raw}" if data.draw(st.booleans()) else data.draw(st.sampled_from([key, raw, f"{key}:{raw}"]))
    note(f"--set {text!r}")
    params = {"value": 1.0, "sleep": 0.0, "data": {"x": 1}}
    try:
        out = apply_overrides(params, [text])
    except OverrideError as e:
        assert len(str(e).splitlines()) == 1 and len(str(e)) < 1000, str(e)
        return
    assert json.loads(canonical_json(out)) == out
    assert params == {"value": 1.0, "sleep": 0.0, "data": {"x": 1}}  # the spec's own params untouched


def test_a_generated_override_on_the_command_line_ends_in_one_line(cli_store, fuzz):
    fuzz.run(30, _a_generated_override_on_the_command_line_ends_in_one_line, cli_store)


def _a_generated_override_on_the_command_line_ends_in_one_line(cli_store, data):
    key = data.draw(override_keys, label="key")
    raw = _yaml_text(data.draw)
    argv = [data.draw(st.sampled_from(["expand", "run"])), "table1-bcl", "--tier", "smoke", "--set", f"{key}={raw}"]
    if argv[0] == "run":
        argv.append("--dry-run")
    note(f"argv: {argv}")
    assert_clean_end(call_cli(argv), argv)


# ---- --add-row values and overlay files ---------------------------------------------------
OVERLAY = {"rows": {"Mine": {"like": "A", "set": {"value": 2.0}}, "Theirs": {"like": "B", "set": {"data": {"x": 1}}}}}
ADDED_COMMANDS = (["expand", "table1-bcl", "--tier", "smoke"], ["run", "table1-bcl", "--tier", "smoke", "--dry-run"],
                  ["run", "table1-bcl", "--tier", "smoke", "--no-progress"])
row_names = st.sampled_from(["Mine", "A", "B", "x", "A|x", "*", "", " ", "=", "\u202e", "e\u0301", "\U0001F600",
                             "new\nline", "x" * 300]) | st.text(max_size=8)


def _added_rows_case(root, argv: list[str]) -> None:
    """``argv`` ends in success or one line; the spec's own records are untouched (added rows
    run in the tier custom, emptied after the case)."""
    before = _records(root)
    out = call_cli(argv)
    assert_clean_end(out, argv)
    assert _records(root) == before, "the spec's own records changed"
    shutil.rmtree(root / "results" / "custom", ignore_errors=True)


def test_a_mutated_overlay_file_ends_in_success_or_one_line(cli_store, fuzz):
    fuzz.run(30, _a_mutated_overlay_file_ends_in_success_or_one_line, cli_store)


def _a_mutated_overlay_file_ends_in_success_or_one_line(cli_store, data):
    doc = copy.deepcopy(OVERLAY)
    with time_limit():
        done = mutate(doc, data.draw)
        text = dump(doc, data.draw)
    path = cli_store / "overlay.yaml"
    path.write_text(text, encoding="utf-8")
    argv = [*data.draw(st.sampled_from(ADDED_COMMANDS), label="command"), "--overlay", str(path)]
    note(f"overlay: {done}: {text[:300]!r}")
    _added_rows_case(cli_store, argv)


def test_a_generated_add_row_ends_in_success_or_one_line(cli_store, fuzz):
    fuzz.run(40, _a_generated_add_row_ends_in_success_or_one_line, cli_store)


def _a_generated_add_row_ends_in_success_or_one_line(cli_store, data):
    # a valid name and --like most of the time, so that the YAML is what most cases try
    name = data.draw(st.just("Mine") | st.just("Yours") | row_names, label="name")
    key = data.draw(override_keys.filter(lambda k: k.strip() != "sleep"), label="key")  # a long sleep is asked for
    raw = _yaml_text(data.draw)
    body = data.draw(st.sampled_from([f"value: {raw}", f"{key}: {raw}", f"{{{key}: {raw}}}", raw, ""]), label="body")
    like = data.draw(st.just("A") | st.just("B") | st.none() | row_names, label="like")
    argv = [*data.draw(st.sampled_from(ADDED_COMMANDS), label="command"), "--add-row", f"{name}={body}"]
    if like is not None:
        argv += ["--like", like]
    note(f"argv: {argv}")
    _added_rows_case(cli_store, argv)
