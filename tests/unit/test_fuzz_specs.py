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
from hypothesis import given, note
from hypothesis import strategies as st

from pubench.utils.yamlio import safe_load
from tests.fuzzing import (NUMBERS, ODD_TEXT, TAGS, FuzzDumper, Tagged, assert_clean_end, budget, call_cli, keys, laughs,
                           time_limit, values)

REPO = Path(__file__).resolve().parents[2]
#: the committed specs, smallest first (a failing case shrinks towards the first)
SPECS = sorted((p for p in (REPO / "experiments").glob("*/*.yaml") if not p.parent.name.startswith("_")),
               key=lambda p: p.stat().st_size)
REGISTRY_COMMANDS = (["list"], ["show", "{id}"], ["expand", "{id}", "--tier", "smoke"],
                     ["run", "{id}", "--tier", "smoke", "--dry-run"], ["status", "{id}"])


# ---- mutations of a parsed spec ------------------------------------------------------------
def _slots(node, out: list, seen: set | None = None) -> list:
    """(container, key) of every value inside ``node``, in document order; a container met
    before (an alias, or one that holds itself) is not entered again."""
    seen = set() if seen is None else seen
    if isinstance(node, (dict, list)):
        if id(node) in seen:
            return out
        seen.add(id(node))
    if isinstance(node, dict):
        for k in list(node):
            out.append((node, k))
            _slots(node[k], out, seen)
    elif isinstance(node, list):
        for i in range(len(node)):
            out.append((node, i))
            _slots(node[i], out, seen)
    return out


def _typo(text: str, draw) -> str:
    if not text:
        return "x"
    i = draw(st.integers(0, len(text) - 1))
    how = draw(st.sampled_from(["drop", "double", "swap", "upper", "lookalike", "space"]))
    if how == "drop":
        return text[:i] + text[i + 1:]
    if how == "double":
        return text[:i] + text[i] + text[i:]
    if how == "swap" and len(text) > 1:
        i = min(i, len(text) - 2)
        return text[:i] + text[i + 1] + text[i] + text[i + 2:]
    if how == "upper":
        return text.upper() if text != text.upper() else text.lower()
    if how == "lookalike":
        return text.replace("a", "\u0430", 1).replace("o", "\u03bf", 1) if any(c in text for c in "ao") else text + "\u200b"
    return text + " "


def _out_of_range(value, draw):
    if isinstance(value, bool):
        return draw(st.sampled_from(["true", 1, None]))
    if isinstance(value, (int, float)):
        return draw(st.sampled_from(NUMBERS + [float("nan"), float("inf"), -float("inf")]))
    if isinstance(value, str):
        return draw(st.sampled_from(ODD_TEXT + [value * 200, value + "\u0301", value.strip() + "\n"]))
    if isinstance(value, list):
        return draw(st.sampled_from([[], value + value, value[:1] * 3, [None]]))
    if isinstance(value, dict):
        return draw(st.sampled_from([{}, None, [value]]))
    return None


MUTATIONS = ("drop", "rename", "retype", "range", "alias", "recursive", "laughs", "tag")


def mutate(data: dict, draw) -> list[str]:
    """Apply 1-3 mutations to ``data`` in place; returns what was done (for the failure report)."""
    done = []
    for _ in range(draw(st.integers(1, 3))):
        slots = _slots(data, [])
        if not slots:
            break
        # a key name first, then one of its places: `format` or `seeds` (a few places) are hit as
        # often as `row` (hundreds of reported cells)
        names = sorted({k if isinstance(k, str) else "[item]" for _, k in slots})
        name = draw(st.sampled_from(names))
        places = [(c, k) for c, k in slots if (k if isinstance(k, str) else "[item]") == name]
        container, key = places[draw(st.integers(0, len(places) - 1))]
        op = draw(st.sampled_from(MUTATIONS))
        where = f"{op} at {key!r}"
        if op == "drop":
            del container[key]
        elif op == "rename" and isinstance(container, dict):
            siblings = [k for _, k in slots if isinstance(k, str)][:50] or ["id"]
            new = draw(st.one_of(st.just(_typo(str(key), draw)), keys, st.sampled_from(siblings)))
            value = container.pop(key)
            container[new] = value
            where += f" -> {new!r}"
        elif op == "range":
            container[key] = _out_of_range(container[key], draw)
        elif op == "alias":  # the same object twice: the dumper writes an anchor and an alias
            other_container, other_key = slots[draw(st.integers(0, len(slots) - 1))]
            container[key] = other_container[other_key]
        elif op == "recursive" and isinstance(container, (dict, list)):
            container[key] = container
        elif op == "laughs":
            container[key] = laughs(draw(st.integers(1, 9)), draw(st.integers(2, 10)))
        elif op == "tag":
            container[key] = draw(st.builds(Tagged, st.sampled_from(TAGS), st.text(max_size=8)))
        else:
            container[key] = draw(values)
        done.append(where)
    return done


def dump(data: dict, draw) -> str:
    text = yaml.dump(data, Dumper=FuzzDumper, sort_keys=False, allow_unicode=draw(st.booleans()),
                     default_flow_style=draw(st.sampled_from([False, None, True])), width=draw(st.sampled_from([80, 4096])))
    how = draw(st.sampled_from(["as is"] * 6 + ["truncate", "insert", "drop line", "tab"]))
    if how == "truncate":
        text = text[:draw(st.integers(0, len(text)))]
    elif how == "insert":
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.text(max_size=5) | st.sampled_from([":", "- ", "{", "[", "&a ", "*a", "!!", "\t",
                                                                      "? ", "<<: *a\n", "%YAML 1.1\n", "---\n"])) + text[i:]
    elif how == "drop line":
        lines = text.splitlines(keepends=True)
        if lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
        text = "".join(lines)
    elif how == "tab":
        text = text.replace("\n  ", "\n\t", 1)
    return text


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
    return path


@given(data=st.data())
@budget(40)
def test_a_mutated_spec_is_valid_or_one_line(fuzz_registry, fuzz_cases, data):
    original = data.draw(st.sampled_from(SPECS), label="spec")
    with time_limit():
        parsed = safe_load(original.read_text(encoding="utf-8"))
        done = mutate(parsed, data.draw)
        text = dump(parsed, data.draw)
    note(f"mutations: {done}")
    path = _write_spec(fuzz_registry, original, text)
    fuzz_cases()

    checked = call_cli(["validate", str(path)])
    assert_clean_end(checked, ["validate", str(path)], bad_input_lines=0)
    assert checked.rc in (0, 2) and len(checked.out.strip().splitlines()) == 1, checked.out[-2000:]
    argv = [a.format(id=original.stem) for a in data.draw(st.sampled_from(REGISTRY_COMMANDS), label="command")]
    loaded = call_cli(argv)
    assert_clean_end(loaded, argv)
    if checked.rc == 0:  # what validate accepts, the registry loads
        listed = call_cli(["list"])
        assert listed.rc == 0, listed.err


@given(data=st.data())
@budget(30)
def test_mutated_text_of_a_spec_is_valid_or_one_line(fuzz_registry, fuzz_cases, data):
    """Byte-level damage to a committed spec's own text (its comments, flow style and quoting
    kept): truncation, inserted characters, a line dropped, a tab, a stray BOM or NUL."""
    original = data.draw(st.sampled_from(SPECS[:12]), label="spec")
    text = original.read_text(encoding="utf-8")
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(text)))
        piece = data.draw(st.text(max_size=4) | st.sampled_from(["\t", ":", "- ", "&x ", "*x", "!!int ", "\ufeff",
                                                                  "\x00", "\r", "{", "}", "'", '"', "#", "<<: *x\n"]))
        cut = data.draw(st.integers(0, 3))
        text = text[:i] + piece + text[i + cut:]
    path = _write_spec(fuzz_registry, original, text)
    fuzz_cases()
    checked = call_cli(["validate", str(path)])
    assert_clean_end(checked, ["validate", str(path)], bad_input_lines=0)
    assert checked.rc in (0, 2) and len(checked.out.strip().splitlines()) == 1, checked.out[-2000:]
    loaded = call_cli(["expand", original.stem, "--tier", "smoke"])
    assert_clean_end(loaded, ["expand", original.stem])


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
