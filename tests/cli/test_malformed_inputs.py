"""A campaign of malformed inputs: CLI arguments, environment, broken specs, corrupt
records, unwritable folders. Every bad input gets one clear line on stderr and a non-zero
exit; never a traceback, never a hang. Corrupt records are not errors of the user: they
are counted, skipped with one warning, quarantined and rerun.

The session prints the figure (``pytest_terminal_summary`` in tests/conftest.py).
"""

from __future__ import annotations

import json
import time

import pytest

from pubench.cli import main
from tests.conftest import record_reliability, selftest_spec

GOOD = selftest_spec()


def _spec(old: str, new: str) -> str:
    assert old in GOOD, old
    return GOOD.replace(old, new, 1)


# (case id, spec text or None for the good one, argv, expected substring of the error line)
CLI_CASES = [
    ("show-unknown-id", None, ["show", "table1-bcll"], "did you mean 'table1-bcl'"),
    ("run-unknown-id", None, ["run", "nope-table"], "no table or figure 'nope-table'"),
    ("run-seeds-zero", None, ["run", "table1-bcl", "--seeds", "0"], "--seeds must be in 1..1000"),
    ("run-seeds-negative", None, ["run", "table1-bcl", "--seeds", "-1"], "--seeds must be in 1..1000"),
    ("run-seeds-huge", None, ["run", "table1-bcl", "--seeds", "1000000000000"], "--seeds must be in 1..1000"),
    ("run-seeds-text", None, ["run", "table1-bcl", "--seeds", "abc"], "--seeds must be an integer"),
    ("run-jobs-zero", None, ["run", "table1-bcl", "--jobs", "0"], "--jobs must be in 1..64"),
    ("run-jobs-huge", None, ["run", "table1-bcl", "--jobs", "100000"], "--jobs must be in 1..64"),
    ("run-jobs-text", None, ["run", "table1-bcl", "--jobs", "two"], "--jobs must be an integer"),
    ("run-threads-zero", None, ["run", "table1-bcl", "--threads", "0"], "--threads must be in 1..256"),
    ("run-threads-huge", None, ["run", "table1-bcl", "--threads", "100000"], "--threads must be in 1..256"),
    ("run-tier-unknown", None, ["run", "table1-bcl", "--tier", "huge"], "invalid choice: 'huge'"),
    ("run-executor-unknown", None, ["run", "table1-bcl", "--executor", "k8s"], "invalid choice: 'k8s'"),
    ("run-numerics-unknown", None, ["run", "table1-bcl", "--numerics", "fast"], "invalid choice: 'fast'"),
    ("run-device-unknown", None, ["run", "table1-bcl", "--device", "tpu"], "invalid choice: 'tpu'"),
    ("run-only-no-match", None, ["run", "table1-bcl", "--only", "Z|*"], "selects no cell"),
    ("run-only-col-no-match", None, ["run", "table1-bcl", "--only", "A|zz"], "rows: A, B; cols: x, y"),
    ("run-only-empty", None, ["run", "table1-bcl", "--only", ""], "selects no cell"),
    ("run-slurm-no-profile", None, ["run", "table1-bcl", "--executor", "slurm", "--profile", "nowhere", "--dry-run"],
     "no SLURM profile"),
    ("run-no-id", None, ["run"], "the following arguments are required: id"),
    ("show-no-id", None, ["show"], "the following arguments are required: id"),
    ("no-command", None, [], "the following arguments are required: command"),
    ("unknown-command", None, ["frobnicate"], "invalid choice: 'frobnicate'"),
    ("list-paper-unknown", None, ["list", "--paper", "nope"], "invalid choice: 'nope'"),
    ("report-unknown-id", None, ["report", "nope-table"], "no table or figure"),
    ("report-no-results", None, ["report", "table1-bcl"], "no results for table1-bcl"),
    ("report-no-results-any", None, ["report"], "no results for any table"),
    ("report-format-unknown", None, ["report", "--format", "docx"], "invalid choice: 'docx'"),
    ("status-unknown-id", None, ["status", "nope-table"], "no table or figure"),
    ("status-seeds-zero", None, ["status", "--seeds", "0"], "--seeds must be in 1..1000"),
    ("coverage-unknown-id", None, ["coverage", "nope-table"], "no table or figure"),
    ("verify-unknown-id", None, ["verify", "nope-table"], "no table or figure"),
    ("verify-no-records", None, ["verify", "table1-bcl", "--tier", "smoke"], "no records of table1-bcl"),
    ("verify-sample-negative", None, ["verify", "table1-bcl", "--sample", "-1"], "--sample must be in"),
    ("verify-sigmas-negative", None, ["verify", "table1-bcl", "--sigmas", "-1"], "--sigmas must be a finite"),
    ("verify-sigmas-inf", None, ["verify", "table1-bcl", "--sigmas", "inf"], "--sigmas must be a finite"),
    ("compare-no-baseline-arg", None, ["compare"], "the following arguments are required: --baseline"),
    ("compare-missing-baseline", None, ["compare", "--baseline", "/nonexistent/store"], "does not exist"),
    ("compare-abs-tol-nan", None, ["compare", "--baseline", ".", "--abs-tol", "nan"], "--abs-tol must be a finite"),
    ("prepare-unknown-dataset", None, ["prepare", "mnsit", "--check"], "did you mean 'mnist'"),
    ("prepare-missing-source", None, ["prepare", "mnist", "--from", "/nonexistent/data"], "no such folder"),
]

SPEC_CASES = [
    ("spec-yaml-syntax", "id: [unclosed\n", ["list"], "(yaml)"),
    ("spec-top-level-list", "- a\n- b\n", ["list"], "expected a mapping"),
    ("spec-empty-file", "", ["list"], "expected a mapping"),
    ("spec-unknown-top-key", GOOD + "colour: blue\n", ["list"], "colour: unknown key"),
    ("spec-id-differs-from-file", _spec("id: table1-bcl", "id: table9-bcl"), ["list"], "differs from the file name"),
    ("spec-unknown-paper", _spec("paper: bcl", "paper: xyz"), ["list"], "unknown paper 'xyz'"),
    ("spec-missing-tier", _spec("  paper: {seeds: 2}\n", ""), ["list"], "missing tier 'paper'"),
    ("spec-tier-seeds-zero", _spec("  paper: {seeds: 2}", "  paper: {seeds: 0}"), ["list"], "must be >= 1"),
    ("spec-reported-unknown-row", _spec("- {row: A, col: x, mean: 1.0, std: 0.1}", "- {row: Q, col: x, mean: 1.0}"),
     ["list"], "'Q' is not one of the rows"),
    ("spec-reported-mean-text", _spec("mean: 1.0, std: 0.1", "mean: high, std: 0.1"), ["list"], "expected float"),
    ("spec-claim-unknown-kind", GOOD + "claims:\n  - {kind: best_everything, text: t, rows: [A]}\n", ["list"],
     "unknown claim kind"),
    ("spec-task-typo", _spec("task: selftest", "task: selftset"), ["list"], "did you mean 'selftest'"),
    ("spec-dataset-typo", _spec("A: {value: 1.0}", "A: {value: 1.0, data: {dataset: mnsit}}"), ["list"],
     "did you mean 'mnist'"),
    ("spec-loss-typo", _spec("A: {value: 1.0}", "A: {value: 1.0, pretrain: {loss: {name: punc}}}"), ["list"],
     "did you mean 'punce'"),
    ("spec-optimizer-typo", _spec("A: {value: 1.0}", "A: {value: 1.0, train: {optimizer: {name: adamm}}}"),
     ["list"], "did you mean 'adam'"),
    ("spec-backbone-typo", _spec("A: {value: 1.0}", "A: {value: 1.0, model: {backbone: {name: resnet19}}}"),
     ["list"], "unknown backbone 'resnet19'"),
    ("spec-pu-method-typo", _spec("A: {value: 1.0}", "A: {value: 1.0, pu_method: {name: nnpuu}}"), ["list"],
     "did you mean 'nnpu'"),
    ("spec-typo-in-tier", _spec("params: {sleep: 0.0}", "params: {sleep: 0.0, data: {dataset: cifar11}}"),
     ["list"], "tiers.smoke"),
    ("spec-unknown-preset", _spec("A: {value: 1.0}", "A: {value: 1.0, train: {preset: nowhere}}"), ["list"],
     "experiment.rows.A.train.preset: unknown preset 'nowhere'"),
    ("spec-unknown-pu-dataset", _spec("A: {value: 1.0}", "A: {value: 1.0, data: {pu_dataset: CIFAR-IIII}}"), ["list"],
     "unknown PU data set 'CIFAR-IIII'; did you mean"),
    ("spec-tier-seeds-text", _spec("  paper: {seeds: 2}", "  paper: {seeds: two}"), ["list"],
     "tiers.paper.seeds: expected int, got str 'two'"),
    ("spec-cells-pattern-no-match", _spec("  params: {value: 0.0}\n", "  params: {value: 0.0}\n  cells: {'Q|*': {value: 3.0}}\n"),
     ["list"], "matching at least one cell"),
    ("spec-duplicate-rows", _spec("rows: ['A', 'B']", "rows: ['A', 'A']"), ["list"], "duplicate entries"),
    ("spec-not-utf8", None, ["list"], "not UTF-8"),
    ("spec-run-typo", _spec("task: selftest", "task: selftset"), ["run", "table1-bcl", "--tier", "smoke"],
     "did you mean 'selftest'"),
]

ENV_CASES = [
    # (case id, {env var: value or a path template}, argv, expected substring)
    ("env-results-under-a-file", {"PUBENCH_RESULTS": "{file}/results"}, ["run", "table1-bcl", "--tier", "smoke"],
     "cannot write the results ($PUBENCH_RESULTS) folder"),
    ("env-reports-under-a-file", {"PUBENCH_REPORTS": "{file}/reports"}, ["report"], "cannot write the reports ($PUBENCH_REPORTS) folder"),
    ("env-experiments-missing", {"PUBENCH_EXPERIMENTS": "{tmp}/no-such-folder"}, ["list"], "no such folder of specs"),
    ("env-experiments-is-a-file", {"PUBENCH_EXPERIMENTS": "{file}"}, ["list"], "no such folder of specs"),
    ("env-data-under-a-file", {"PUBENCH_DATA": "{file}/data"}, ["prepare", "mnist"], "cannot write the data ($PUBENCH_DATA) folder"),
    ("env-slurm-profiles-missing", {"PUBENCH_SLURM_PROFILES": "{tmp}/none"},
     ["run", "table1-bcl", "--executor", "slurm", "--dry-run"], "no SLURM profile"),
    ("env-core-slots-under-a-file", {"PUBENCH_CORE_SLOTS": "{file}/slots"}, ["run", "table1-bcl", "--tier", "smoke"],
     "cannot write the core slots ($PUBENCH_CORE_SLOTS) folder"),
    ("env-planned-catalogue-broken", {"_planned": "- not a mapping\n"}, ["list"], "expected a mapping kind"),
]


def _check_one_line(case: str, rc: int, err: str, needle: str, elapsed: float) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    ok = rc not in (0, None) and len(lines) == 1 and needle in lines[0] and "Traceback" not in err
    record_reliability("malformed", case, {"ok": ok, "rc": rc, "lines": len(lines), "seconds": round(elapsed, 2)})
    assert rc != 0, f"{case}: exit 0"
    assert "Traceback" not in err
    assert len(lines) == 1, f"{case}: {len(lines)} lines: {err}"
    assert needle in lines[0], f"{case}: {lines[0]!r} lacks {needle!r}"
    assert elapsed < 60, f"{case}: took {elapsed:.0f} s"


def _run(argv: list[str], capsys) -> tuple[int, str, float]:
    t0 = time.perf_counter()
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse
        rc = e.code
    return rc, capsys.readouterr().err, time.perf_counter() - t0


@pytest.mark.parametrize("case,text,argv,needle", CLI_CASES + SPEC_CASES, ids=[c[0] for c in CLI_CASES + SPEC_CASES])
def test_malformed_input_is_one_line_and_non_zero(case, text, argv, needle, tmp_registry, capsys, tmp_path):
    path = tmp_registry(GOOD)
    if case == "spec-not-utf8":
        path.write_bytes(GOOD.encode() + b"\ncaption2: \xff\xfe\n")
    elif text is not None:
        path.write_text(text)
    rc, err, elapsed = _run(argv, capsys)
    _check_one_line(case, rc, err, needle, elapsed)


@pytest.mark.parametrize("case,env,argv,needle", ENV_CASES, ids=[c[0] for c in ENV_CASES])
def test_malformed_environment_is_one_line_and_non_zero(case, env, argv, needle, tmp_registry, capsys, monkeypatch,
                                                        tmp_path):
    tmp_registry(GOOD)
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    for k, v in env.items():
        if k == "_planned":
            (tmp_registry.root / "experiments" / "_planned.yaml").write_text(v)
            continue
        monkeypatch.setenv(k, v.format(file=a_file, tmp=tmp_path))
    rc, err, elapsed = _run(argv, capsys)
    _check_one_line(case, rc, err, needle, elapsed)


# ---- corrupt records: counted, skipped with one warning, quarantined and rerun --------
CORRUPT = {
    "record-empty": b"",
    "record-truncated": b'{"schema": 2, "status": "ok", "job": {"id": ',
    "record-binary": b"\x00\xff\x10garbage",
    "record-not-an-object": b"[1, 2, 3]",
    "record-no-metrics": None,         # built from a real record below
    "record-nan-metric": None,
    "record-id-mismatch": None,
    "record-status-unknown": None,
}


def _corrupt_bytes(case: str, real: dict) -> bytes:
    if CORRUPT[case] is not None:
        return CORRUPT[case]
    rec = json.loads(json.dumps(real))
    if case == "record-no-metrics":
        rec.pop("metrics")
    elif case == "record-nan-metric":
        rec["metrics"] = {"score": float("nan")}
    elif case == "record-id-mismatch":
        rec["job"]["id"] = "0" * 16
    elif case == "record-status-unknown":
        rec["status"] = "maybe"
    return json.dumps(rec).encode()


@pytest.mark.parametrize("case", list(CORRUPT))
def test_corrupt_record_is_counted_skipped_quarantined_and_rerun(case, tmp_registry, capsys):
    from pubench.store import ResultStore

    tmp_registry(GOOD)
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    store = ResultStore(tmp_registry.root / "results")
    victim = sorted(store.folder("smoke", "table1-bcl").glob("*.json"))[0]
    victim.write_bytes(_corrupt_bytes(case, json.loads(victim.read_text())))
    capsys.readouterr()

    assert main(["status", "table1-bcl", "--tier", "smoke", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert (row["done"], row["corrupt"], row["pending"]) == (3, 1, 1)

    assert main(["report", "table1-bcl", "--tier", "smoke"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "corrupt record" in warnings[0]

    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "moved to" in out and "quarantine" in out and "1 to run" in out
    assert len(store.done_ids("smoke", "table1-bcl")) == 4
    assert len(list((store.folder("smoke", "table1-bcl") / "quarantine").iterdir())) == 1
    record_reliability("corrupt", case, {"ok": True})
