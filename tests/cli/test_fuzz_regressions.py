"""The crashes and hangs the generated-input tests found (issue 55, item 3), each kept as a
plain case: it was a traceback (or a hang) before its fix and is one line, a miss or a
discarded file now."""

from __future__ import annotations

import json
import os
import socket
import time
import warnings
from pathlib import Path

import pytest
import yaml
import torch

from pubench.cli import main
from tests.conftest import selftest_spec
from tests.fuzzing import call_cli

REPO = Path(__file__).resolve().parents[2]

GOOD = selftest_spec()
EXTRA = "  params: {value: 0.0}\n"


def _with_param(value: str) -> str:
    assert EXTRA in GOOD
    return GOOD.replace(EXTRA, f"  params:\n    value: 0.0\n    extra: {value}\n", 1)


def _laughs(levels: int = 9) -> str:
    """``extra``: a list of 10 aliases of a list of 10 aliases ... (10^9 values once expanded)."""
    lines = ["[&l0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"&l{i} [{', '.join([f'*l{i - 1}'] * 10)}]")
    return ", ".join(lines) + "]"


# (case, spec text, expected part of the one line): each crashed (or hung) expand, run --dry-run and status
SPEC_CASES = [
    ("a date", _with_param("2026-01-01"), "experiment.params.extra: 2026-01-01 is a date to YAML"),
    ("an impossible date", _with_param("2026-02-30"), "'2026-02-30' is not a valid !!timestamp"),
    ("a tag that cannot build", _with_param("!!int abc"), "'abc' is not a valid !!int"),
    ("binary", _with_param("!!binary aGk="), "binary data (!!binary) is not plain data"),
    ("a set", _with_param("!!set {a}"), "a set (!!set) is not plain data"),
    ("nan", _with_param(".nan"), "nan is not a finite number"),
    ("a key that is a number", _with_param("{1: 2}"), "the key 1 is a number, not text"),
    ("an alias inside its anchor", _with_param("&a [*a]"), "contains itself"),
    ("a billion laughs", _with_param(_laughs()), "more than 100,000 values once YAML aliases are expanded"),
    ("half a million values", _with_param(_laughs(6).replace("x, x, x, x, x, x, x, x, x, x", "x, x, x, x, x")),
     "more than 100,000 values once YAML aliases are expanded"),  # 5 x 10^5: expand printed it for minutes
    ("more_seeds beyond 1000", GOOD.replace(
        "    seeds: 1\n", "    seeds: 1\n    more_seeds: [{cells: 'A|x', seeds: 1000000000000, date: '2026-01-01', why: w}]\n"),
     "more_seeds[0].seeds: must be <= 1000"),
    ("a format that is not a number's", GOOD.replace("higher_is_better: true}", "higher_is_better: true, format: '%%%s'}"),
     "is not a format spec of numbers"),
    ("a negative std", GOOD.replace("std: 0.1", "std: -5"), "std: must be >= 0"),
]


@pytest.mark.parametrize("case,text,needle", SPEC_CASES, ids=[c[0] for c in SPEC_CASES])
def test_a_spec_the_generated_inputs_broke_is_one_line(case, text, needle, tmp_registry):
    path = tmp_registry(GOOD)
    path.write_text(text)
    checked = call_cli(["validate", str(path)])
    assert checked.rc == 2 and needle in checked.out and len(checked.out.strip().splitlines()) == 1, checked.out
    for argv in (["expand", "table1-bcl", "--tier", "smoke"], ["run", "table1-bcl", "--tier", "smoke", "--dry-run"],
                 ["status"]):
        out = call_cli(argv)
        assert out.rc == 2 and len(out.lines) == 1 and needle in out.lines[0], (argv, out.err)


@pytest.mark.parametrize("value,needle", [
    ("2026-01-01", "is a date to YAML"), (".nan", "nan is not a finite number"), ("1e999", "inf is not a finite"),
    ("!!binary aGk=", "binary data"), ("!!set {a}", "a set"), ("{1: 2}", "the key 1 is a number"),
    ("&a [*a]", "at 'value[0]': contains itself"), ("!!int x", "'x' is not a valid !!int"),
])
def test_a_set_value_the_generated_inputs_broke_is_one_line(value, needle, tmp_registry):
    tmp_registry(GOOD)
    out = call_cli(["expand", "table1-bcl", "--tier", "smoke", "--set", f"value={value}"])
    assert out.rc == 2 and len(out.lines) == 1 and needle in out.lines[0], out.err


@pytest.mark.parametrize("value,needle", [
    ("2026-01-01", "at 'value': 2026-01-01 is a date to YAML"), (".nan", "nan is not a finite number"),
    ("&a [*a]", "at 'value[0]': contains itself"), ("!!binary aGk=", "binary data"), ("!!set {a}", "a set"),
    ("!!int x", "'x' is not a valid !!int"),
])
def test_an_added_row_the_generated_inputs_broke_is_one_line(value, needle, tmp_registry, tmp_path):
    """--add-row's YAML (a traceback from the job ids' canonical JSON before), and the same in an overlay file."""
    tmp_registry(GOOD)
    out = call_cli(["expand", "table1-bcl", "--tier", "smoke", "--add-row", f"Mine=value: {value}", "--like", "A"])
    assert out.rc == 2 and len(out.lines) == 1 and needle in out.lines[0], out.err
    assert out.lines[0].startswith("pubench: error: --add-row 'Mine': "), out.err
    overlay = tmp_path / "mine.yaml"
    overlay.write_text(f"rows:\n  Mine: {{like: A, set: {{value: {value}}}}}\n")
    out = call_cli(["run", "table1-bcl", "--tier", "smoke", "--dry-run", "--overlay", str(overlay)])
    assert out.rc == 2 and len(out.lines) == 1 and "Traceback" not in out.err, out.err


@pytest.mark.parametrize("old,new,needle", [
    ("n_P=1k\": {data: {split: {n_labeled: 1000}}}", "n_P=1k\": {data: table3-punce}", "data is a str, not a mapping"),
    ("data: {pu_dataset: CIFAR vehicle/animal}", "data: {pu_dataset: CIFAR vehicle/animal, labels: {positive: [0, 99]}}",
     "must list class indices of cifar10 (0-9)"),
])
def test_an_exact_prior_of_a_data_block_the_generated_inputs_broke_is_one_line(old, new, needle, tmp_path):
    """`prior: exact` of a cell whose data is no mapping, or whose labels name no class of the data set:
    AttributeError / IndexError in validate, list and expand before."""
    text = (REPO / "experiments" / "punce" / "table3-punce.yaml").read_text()
    assert old in text
    path = tmp_path / "table3-punce.yaml"
    path.write_text(text.replace(old, new))
    notes = REPO / "experiments" / "punce" / "table3-punce.notes.yaml"
    (tmp_path / notes.name).write_text(notes.read_text())
    out = call_cli(["validate", str(path)])
    assert out.rc == 2 and needle in out.out and len(out.out.strip().splitlines()) == 1, out.out + out.err


# ---- records, claims, manifests, the meta cache -------------------------------------------------
@pytest.fixture
def smoke_store(tmp_registry, monkeypatch):
    monkeypatch.setenv("PUBENCH_NO_REEXEC", "1")
    tmp_registry(GOOD.replace("    params: {sleep: 0.0}\n", "    params: {sleep: 0.0}\n"
                                                             "    cells: {'B|y': {fail_if_missing: /nonexistent}}\n"
                                                             "    rows: {A: {}}\n"))
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 1
    return tmp_registry.root / "results" / "smoke" / "table1-bcl"


def _rewrite(path, change) -> None:
    rec = json.loads(path.read_text())
    change(rec)
    path.write_text(json.dumps(rec))


@pytest.mark.parametrize("case", ["no spec_version", "nested too deep", "traceback_tail a number",
                                  "error message a list", "a lone surrogate", "cpu_model a list",
                                  "encoder_cache text", "a NaN param", "an infinite seed"])
def test_a_record_the_generated_inputs_broke_is_corrupt(case, smoke_store):
    ok = sorted(p for p in smoke_store.glob("*.json") if not p.name.endswith(".failed.json"))
    [failed] = smoke_store.glob("*.failed.json")
    if case == "no spec_version":
        _rewrite(ok[0], lambda r: r["job"].pop("spec_version"))
    elif case == "nested too deep":
        ok[0].write_text('{"job": ' + "[" * 3000 + "]" * 3000 + "}")
    elif case == "a lone surrogate":  # JSON's "\ud800": report's UTF-8 file could not hold it (UnicodeEncodeError)
        _rewrite(ok[0], lambda r: r["job"]["numerics"].update(device="\ud800"))
    elif case == "cpu_model a list":  # report's compute summary counted CPU models: unhashable type: 'list'
        _rewrite(ok[0], lambda r: r["machine"].update(cpu_model=[None]))
    elif case == "encoder_cache text":  # report and verify asked it for "hit": 'str' object has no attribute 'get'
        _rewrite(ok[0], lambda r: r["info"].update(encoder_cache="yes"))
    elif case == "a NaN param":  # status --json: "Out of range float values are not JSON compliant"
        _rewrite(ok[0], lambda r: r["job"]["params"].update(value=float("nan")))
    elif case == "an infinite seed":
        _rewrite(ok[0], lambda r: r["job"].update(seed=float("inf")))
    elif case == "traceback_tail a number":
        _rewrite(failed, lambda r: r["error"].update(traceback_tail=5))
    else:
        _rewrite(failed, lambda r: r["error"].update(message=["x"]))
    for argv in (["report", "table1-bcl", "--tier", "smoke"], ["export", "--format", "json"], ["failures"],
                 ["log", failed.name.split("--")[-1][:8]], ["prune", "--dry-run"], ["status", "--json"]):
        out = call_cli(argv)
        assert "Traceback" not in out.err and out.rc in (0, 2), (argv, out.err)
    assert call_cli(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]).rc == 1  # the failing cell, again
    assert len([p for p in smoke_store.glob("*.json") if not p.name.endswith(".failed.json")]) == 3


@pytest.mark.parametrize("content", ["[1, 2]", "null", "5", '"text"', '{"host": 7, "pid": "1"}',
                                     '{"host": "%s", "pid": 100000000000000000000}',
                                     '{"host": "other", "pid": 1, "claimed_unix": 1e300}', "[" * 3000 + "]" * 3000,
                                     '{"host": "\\ud800", "pid": 1}'])
def test_a_claim_the_generated_inputs_broke_never_crashes(content, smoke_store):
    from pubench.store.claims import ClaimBook

    victim = sorted(p for p in smoke_store.glob("*.json") if not p.name.endswith(".failed.json"))[0]
    job_id = victim.name.split("--")[-1].split(".")[0]
    victim.unlink()
    book = ClaimBook(smoke_store / ".claims")
    book.path(job_id).write_text(content.replace("%s", socket.gethostname()))
    old = time.time() - 3600
    os.utime(book.path(job_id), (old, old))
    holder = book.read(job_id)
    book.describe(holder)
    for argv in (["status", "table1-bcl", "--tier", "smoke"], ["run", "table1-bcl", "--tier", "smoke", "--no-progress"]):
        out = call_cli(argv)
        assert "Traceback" not in out.err and out.rc in (0, 1), (argv, out.err)
    assert (smoke_store / victim.name).exists()  # an hour-old claim of unknown shape was taken over


@pytest.mark.parametrize("content", ["[1]", '{"jobs": 5}', '{"jobs": [5]}', '{"cluster": "slurm", "jobs": [{"id": 1}]}'])
def test_a_manifest_the_generated_inputs_broke_is_skipped(content, smoke_store, tmp_registry):
    folder = tmp_registry.root / "logs" / "smoke" / "table1-bcl"
    folder.mkdir(parents=True)
    (folder / "manifest-20260101T000000000000.json").write_text(content)
    for argv in (["status", "table1-bcl", "--tier", "smoke"], ["log", "0123"], ["cancel", "table1-bcl", "--tier", "smoke"]):
        out = call_cli(argv)
        assert "Traceback" not in out.err and out.rc in (0, 2), (argv, out.err)


def test_a_cached_spec_whose_fields_have_other_types_is_a_miss(tmp_registry, monkeypatch, tmp_path):
    from pubench.registry import cache

    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "cache"))
    tmp_registry(GOOD)
    assert call_cli(["list"]).rc == 0
    [entry] = (tmp_path / "cache" / "meta" / "specs").glob("*.json")
    planted = json.loads(entry.read_text())
    planted["fields"]["rows"] = 5
    entry.write_text(json.dumps(planted))
    cache._memo.clear()
    for argv in (["list"], ["show", "table1-bcl"]):
        out = call_cli(argv)
        assert out.rc == 0 and "Traceback" not in out.err, out.err


def test_a_checkpoint_whose_history_lacks_a_field_is_discarded(tmp_path, one_thread):
    from pubench.train import checkpoint
    from tests.train.test_checkpoint import in_session, reference, same

    _, _, session = in_session(tmp_path, 2, stop_at=(0, 3))
    path = session.path("toy stage 0.0")
    payload = torch.load(path, weights_only=False)
    payload["history"][-1].pop("epoch")  # was: TypeError from EpochStats(**h), the job failed
    checkpoint.atomic_save(payload, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", checkpoint.CheckpointWarning)
        out, _, session = in_session(tmp_path, 2)
    same(out, reference())
    assert session.resumed == []


def test_a_notes_tier_with_nothing_under_it_is_one_line(tmp_path):
    """`tiers: {reduced: null}` in a notes file (the schema allows an empty tier): AttributeError
    in the notes' merge before."""
    spec = REPO / "experiments" / "pupl" / "fig12-pupl.yaml"
    notes = yaml.safe_load(spec.with_name("fig12-pupl.notes.yaml").read_text())
    notes["tiers"]["reduced"] = None
    (tmp_path / spec.name).write_text(spec.read_text())
    (tmp_path / "fig12-pupl.notes.yaml").write_text(yaml.safe_dump(notes))
    out = call_cli(["validate", str(tmp_path / spec.name)])
    assert out.rc in (0, 2) and len(out.out.strip().splitlines()) == 1 and "Traceback" not in out.err, out.out + out.err


@pytest.mark.parametrize("tag", ["!!int ''", "!!float ''"])
def test_a_value_whose_tag_cannot_build_is_one_line_in_validate(tmp_path, tag):
    """`validate` asks first whether a file is an overlay: an empty `!!int` was an IndexError
    from the YAML constructor there, before the spec's own check could name it."""
    spec = REPO / "experiments" / "pupl" / "fig13-pupl.yaml"
    path = tmp_path / spec.name
    path.write_text(spec.read_text() + f"bad_value: {tag}\n")
    out = call_cli(["validate", str(path)])
    assert out.rc == 2 and len(out.out.strip().splitlines()) == 1 and "Traceback" not in out.err, out.out + out.err
    assert "is not a valid" in out.out
