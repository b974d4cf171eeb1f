"""``pubench failures`` and ``pubench log``: failed jobs grouped by reason, one job's log."""

import json

import pytest

from pubench.cli import main
from tests.conftest import selftest_spec


@pytest.fixture
def failed_run(tmp_registry, tmp_path, capsys):
    """table1-bcl at the smoke tier: row B's jobs fail (a missing gate file), row A's succeed."""
    gate = tmp_path / "gate"
    tmp_registry(selftest_spec().replace("B: {value: 2.0}", f"B: {{value: 2.0, fail_if_missing: '{gate}'}}"))
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 1
    capsys.readouterr()
    return tmp_registry, gate


def test_failures_grouped_by_reason_with_paths_and_traceback(failed_run, capsys):
    reg, _ = failed_run
    assert main(["failures"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 failed job(s), 1 reason(s)")
    assert "2 job(s): RuntimeError: selftest:" in out and "does not exist yet" in out
    assert "in: table1-bcl (smoke); cells: B|x, B|y" in out
    folder = reg.root / "results" / "smoke" / "table1-bcl"
    for p in folder.glob("*.failed.json"):
        assert str(p) in out
    assert "    | RuntimeError: selftest:" in out  # the traceback's last line
    assert main(["failures", "table1-bcl", "--json", "--lines", "2"]) == 0
    groups = json.loads(capsys.readouterr().out)
    assert len(groups) == 1 and groups[0]["jobs"] == 2 and len(groups[0]["traceback"].splitlines()) == 2
    assert main(["failures", "table1-bcl", "--tier", "paper"]) == 0
    assert capsys.readouterr().out.strip() == "no failed jobs in table1-bcl at tier(s) paper"


def test_failures_leave_out_jobs_that_succeeded_since(failed_run, capsys):
    reg, gate = failed_run
    gate.write_text("")
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["failures"]) == 0
    assert capsys.readouterr().out.strip() == "no failed jobs"


def test_log_prints_a_failed_jobs_traceback_by_prefix(failed_run, capsys):
    reg, _ = failed_run
    path = sorted((reg.root / "results" / "smoke" / "table1-bcl").glob("*.failed.json"))[0]
    job_id = path.name.split("--")[-1].split(".")[0]
    assert main(["log", job_id[:8]]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"==> {path} (failure record of table1-bcl/B|") and "Traceback" in out
    assert "does not exist yet" in out.splitlines()[-1]
    assert main(["log", job_id, "--tail", "1"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2


def test_log_errors_are_one_line(failed_run, capsys):
    reg, _ = failed_run
    ok = sorted(p for p in (reg.root / "results" / "smoke" / "table1-bcl").glob("*.json")
                if not p.name.endswith(".failed.json"))[0]
    job_id = ok.name.split("--")[-1].split(".")[0]
    for argv, needle in ((["log", job_id], f"job {job_id} has no log: it ran locally"),
                         (["log", "0000000000000000"], "no job '0000000000000000'"),
                         (["log", "zz"], "'zz' is not a job id"),
                         (["log", ""], "is not a job id")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err, err


def test_log_of_a_slurm_job_reads_the_manifest(tmp_registry, capsys):
    logs = tmp_registry.root / "logs"
    folder = logs / "paper" / "table1-bcl"
    (folder / "123").mkdir(parents=True)
    out, err = folder / "123" / "123_0_log.out", folder / "123" / "123_0_log.err"
    out.write_text("epoch 1\nepoch 2\n")
    err.write_text("warning\n")
    (folder / "manifest-20260101T000000000000.json").write_text(json.dumps({
        "cluster": "slurm", "spec": "table1-bcl", "tier": "paper", "params": {"timeout_min": 5},
        "jobs": [{"id": "abcdef0123456789", "name": "table1-bcl/A|x/seed=0", "slurm_id": "123_0",
                  "stdout": str(out), "stderr": str(err)}]}))
    assert main(["log", "abcdef"]) == 0
    text = capsys.readouterr().out
    assert f"==> {out} (SLURM job 123_0, stdout) <==\nepoch 1\nepoch 2" in text and "warning" in text
    out.unlink()
    err.unlink()
    assert main(["log", "abcdef"]) == 2
    assert "SLURM log files are not there" in capsys.readouterr().err


def test_failures_of_configs_that_no_longer_exist_are_not_promised_a_retry(failed_run, capsys):
    """Issue 54: a changed config leaves failure records no run retries (status counts 0 failed)."""
    reg, _ = failed_run
    path = next((reg.root / "experiments").rglob("table1-bcl.yaml"))
    path.write_text(path.read_text().replace("B: {value: 2.0,", "B: {value: 3.0,"))
    assert main(["failures"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no failed jobs\n") and "the next `pubench run` retries" not in out
    assert "2 failure record(s) of configs that no longer exist" in out and "`pubench prune` removes them" in out
    assert main(["failures", "--json"]) == 0
    assert [g["stale"] for g in json.loads(capsys.readouterr().out)] == [True]
