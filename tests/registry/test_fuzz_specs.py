"""Generated spec files (issue 55, item 3): structure-aware mutations of the committed specs
(keys dropped, renamed, retyped; values out of range, huge, unicode; YAML anchors, aliases
that contain themselves or multiply a subtree, tags; broken text) through `pubench validate`
and the registry's parse path (`list`, `show`, `expand`, `run --dry-run`, `status`). Every
case ends in success or one line and exit 2, never a traceback or a hang.

Budgets and how a failure is replayed: tests/fuzzing.py."""

from __future__ import annotations

import datetime
import os
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import note
from hypothesis import strategies as st

from pubench.utils.yamlio import safe_load
from tests.fuzzing import FuzzDumper, assert_clean_end, call_cli, dump, laughs, mutate, time_limit

REPO = Path(__file__).resolve().parents[2]
#: the committed specs, smallest first (a failing case shrinks towards the first)
SPECS = sorted((p for p in (REPO / "experiments").glob("*/*.yaml")
                if not p.parent.name.startswith("_") and not p.name.endswith(".notes.yaml")),
               key=lambda p: p.stat().st_size)
REGISTRY_COMMANDS = (["list"], ["show", "{id}"], ["expand", "{id}", "--tier", "smoke"],
                     ["run", "{id}", "--tier", "smoke", "--dry-run"], ["status", "{id}"])


# ---- the registry the cases write into ---------------------------------------------------
@pytest.fixture(scope="module")
def fuzz_registry(tmp_path_factory):
    """experiments/ with the committed presets, shared texts and planned units (and a spec the
    test writes), results/ reports/ logs/ and a meta cache of this module's own."""
    root = tmp_path_factory.mktemp("fuzz-registry")
    experiments = root / "experiments"
    experiments.mkdir()
    for name in ("_presets", "_shared.yaml", "_planned.yaml"):
        src = REPO / "experiments" / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, experiments / name)
    env = {"PUBENCH_EXPERIMENTS": experiments, "PUBENCH_RESULTS": root / "results", "PUBENCH_REPORTS": root / "reports",
           "PUBENCH_LOGS": root / "logs", "PUBENCH_CACHE": root / "cache", "PUBENCH_DATA": root / "data"}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, str(v))
        mp.setenv("PUBENCH_NO_REEXEC", "1")
        yield root


def _write_spec(root: Path, original: Path, text: str) -> Path:
    for old in (root / "experiments").glob("*/*.yaml"):
        if not old.parent.name.startswith("_"):
            old.unlink()
    path = root / "experiments" / original.parent.name / original.name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    notes = original.with_name(original.name[:-len(".yaml")] + ".notes.yaml")
    if notes.exists():  # the spec's decisions and reasons live beside it: the spec is the mutated part
        shutil.copy(notes, path.with_name(notes.name))
    return path


def _validated(path: Path):
    """`pubench validate FILE`: one line on stdout, exit 0 or 2."""
    checked = call_cli(["validate", str(path)])
    assert_clean_end(checked, ["validate", str(path)], bad_input_lines=0)
    assert checked.rc in (0, 2) and len(checked.out.strip().splitlines()) == 1, checked.out[-2000:]
    return checked


def test_a_mutated_spec_is_valid_or_one_line(fuzz_registry, fuzz):
    fuzz.run(40, _a_mutated_spec_is_valid_or_one_line, fuzz_registry)


def _a_mutated_spec_is_valid_or_one_line(fuzz_registry, data):
    original = data.draw(st.sampled_from(SPECS), label="spec")
    with time_limit():
        parsed = safe_load(original.read_text(encoding="utf-8"))
        done = mutate(parsed, data.draw)
        text = dump(parsed, data.draw)
    note(f"mutations: {done}")
    path = _write_spec(fuzz_registry, original, text)
    checked = _validated(path)
    argv = [a.format(id=original.stem) for a in data.draw(st.sampled_from(REGISTRY_COMMANDS), label="command")]
    loaded = call_cli(argv)
    assert_clean_end(loaded, argv)
    if checked.rc == 0:  # what validate accepts, the registry loads
        listed = call_cli(["list"])
        assert listed.rc == 0, listed.err


def test_mutated_text_of_a_spec_is_valid_or_one_line(fuzz_registry, fuzz):
    """Byte-level damage to a committed spec's own text (its comments, flow style and quoting
    kept): truncation, inserted characters, a line dropped, a tab, a stray BOM or NUL."""
    fuzz.run(30, _mutated_text_of_a_spec_is_valid_or_one_line, fuzz_registry)


def _mutated_text_of_a_spec_is_valid_or_one_line(fuzz_registry, data):
    original = data.draw(st.sampled_from(SPECS[:12]), label="spec")
    text = original.read_text(encoding="utf-8")
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(text)))
        piece = data.draw(st.text(max_size=4) | st.sampled_from(["\t", ":", "- ", "&x ", "*x", "!!int ", "\ufeff",
                                                                  "\x00", "\r", "{", "}", "'", '"', "#", "<<: *x\n"]))
        cut = data.draw(st.integers(0, 3))
        text = text[:i] + piece + text[i + cut:]
    path = _write_spec(fuzz_registry, original, text)
    _validated(path)
    loaded = call_cli(["expand", original.stem, "--tier", "smoke"])
    assert_clean_end(loaded, ["expand", original.stem])


NOTED = [p for p in SPECS if p.with_name(p.name[:-len(".yaml")] + ".notes.yaml").exists()]


def test_a_mutated_notes_file_is_valid_or_one_line(fuzz_registry, fuzz):
    """The notes beside a spec (its decisions, one-class and regime reasons, long deviation
    reasons) are text a user edits too: the spec kept, its notes mutated by structure or by bytes."""
    fuzz.run(20, _a_mutated_notes_file_is_valid_or_one_line, fuzz_registry)


def _a_mutated_notes_file_is_valid_or_one_line(fuzz_registry, data):
    original = data.draw(st.sampled_from(NOTED), label="spec")
    notes = original.with_name(original.name[:-len(".yaml")] + ".notes.yaml")
    text = notes.read_text(encoding="utf-8")
    if data.draw(st.booleans(), label="by structure"):
        with time_limit():
            parsed = safe_load(text)
            done = mutate(parsed, data.draw)
            text = dump(parsed, data.draw)
        note(f"mutations: {done}")
    else:
        i = data.draw(st.integers(0, len(text)))
        piece = data.draw(st.text(max_size=4) | st.sampled_from(["\t", ":", "- ", "&x ", "*x", "!!int ", "\x00", "{"]))
        text = text[:i] + piece + text[i + data.draw(st.integers(0, 3)):]
    path = _write_spec(fuzz_registry, original, original.read_text(encoding="utf-8"))
    path.with_name(notes.name).write_text(text, encoding="utf-8")
    _validated(path)
    argv = [a.format(id=original.stem) for a in data.draw(st.sampled_from(REGISTRY_COMMANDS), label="command")]
    assert_clean_end(call_cli(argv), argv)


def test_generated_specs_through_a_real_process(fuzz_registry):
    """A few of the cases above as a user runs them: `python -m pubench validate FILE` in its
    own process (one line on stdout, exit 0 or 2, nothing on stderr but a warning)."""
    import subprocess
    import sys

    original = SPECS[0]
    parsed = safe_load(original.read_text(encoding="utf-8"))
    cases = {"a date": {**parsed, "experiment": {**parsed["experiment"], "params": {"x": datetime.date(2026, 2, 1)}}},
             "itself": None, "laughs": {**parsed, "caption": laughs(9, 10)}}
    itself = dict(parsed)
    itself["rows"] = [itself]
    cases["itself"] = itself
    for what, doc in cases.items():
        path = _write_spec(fuzz_registry, original, yaml.dump(doc, Dumper=FuzzDumper, sort_keys=False))
        out = subprocess.run([sys.executable, "-m", "pubench", "validate", str(path)], capture_output=True, text=True,
                             timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO)
        assert out.returncode == 2 and len(out.stdout.strip().splitlines()) == 1, (what, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr, (what, out.stderr)
