"""Executors: local (sequential and worker processes), failure records and retry,
resume after SIGKILL, SLURM dry run and the submitit local path."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pubench.cli import main
from pubench.executors import LocalExecutor, SlurmExecutor, load_profile
from pubench.executors.slurm import SMOKE_JOBS_PER_TASK, jobs_per_task
from pubench.jobs import expand
from pubench.registry import get_spec
from pubench.store import ResultStore
from tests.conftest import selftest_spec


def _store():
    return ResultStore(os.environ["PUBENCH_RESULTS"])


def test_local_sequential_and_parallel_agree(tmp_registry):
    tmp_registry(selftest_spec())
    spec = get_spec("table1-bcl")
    jobs = expand(spec, "paper", 2).jobs
    store = _store()
    assert LocalExecutor(store.root, 1, progress=False).run(jobs)["ok"] == 8
    first = {r["job"]["id"]: r["metrics"] for r in store.records("paper", spec.id)}
    for p in store.folder("paper", spec.id).glob("*.json"):
        p.unlink()
    assert LocalExecutor(store.root, 2, progress=False).run(jobs)["ok"] == 8
    second = {r["job"]["id"]: r["metrics"] for r in store.records("paper", spec.id)}
    assert first == second  # same seed, same numbers, whichever executor


def test_failure_record_then_retry(tmp_registry, tmp_path, capsys):
    gate = tmp_path / "gate"
    tmp_registry(selftest_spec().replace("params: {value: 0.0}", f"params: {{value: 0.0, fail_if_missing: '{gate}'}}"))
    assert main(["run", "table1-bcl", "--tier", "paper", "--seeds", "1", "--no-progress"]) == 1
    store = _store()
    assert len(store.failed_ids("paper", "table1-bcl")) == 4 and not store.done_ids("paper", "table1-bcl")
    rec = store.records("paper", "table1-bcl", failed=True)[0]
    assert "does not exist yet" in rec["error"]["message"]
    gate.write_text("")
    assert main(["run", "table1-bcl", "--tier", "paper", "--seeds", "1", "--no-progress"]) == 0
    assert len(store.done_ids("paper", "table1-bcl")) == 4
    assert not store.failed_ids("paper", "table1-bcl")  # success replaced the failure records


def test_finished_jobs_are_not_rerun_unless_forced(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    args = ["run", "table1-bcl", "--tier", "paper", "--seeds", "1", "--no-progress"]
    assert main(args) == 0
    before = {p.name: p.stat().st_mtime_ns for p in _store().folder("paper", "table1-bcl").glob("*.json")}
    assert main(args) == 0
    assert "4 already done" in capsys.readouterr().out
    after = {p.name: p.stat().st_mtime_ns for p in _store().folder("paper", "table1-bcl").glob("*.json")}
    assert before == after
    assert main(args + ["--force"]) == 0
    forced = {p.name: p.stat().st_mtime_ns for p in _store().folder("paper", "table1-bcl").glob("*.json")}
    assert forced.keys() == before.keys() and all(forced[k] > before[k] for k in before)


def test_resume_after_sigkill(tmp_registry):
    """Kill the runner mid-way with SIGKILL; a rerun does every job exactly once."""
    rows = [f"r{i}" for i in range(6)]
    text = selftest_spec(rows=rows).replace("params: {value: 0.0}", "params: {value: 0.0, sleep: 0.25}")
    text = text.replace("            A: {value: 1.0}\n            B: {value: 2.0}\n", "")
    text = text.replace("  rows:\n    r0: {value: 1.0}\n    r1: {value: 2.0}\n", "")
    tmp_registry(text)
    cmd = [sys.executable, "-m", "pubench", "run", "table1-bcl", "--tier", "paper", "--seeds", "2", "--no-progress"]
    folder = _store().folder("paper", "table1-bcl")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and len(list(folder.glob("*.json")) if folder.exists() else []) < 4:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = {p.name: p.read_text() for p in folder.glob("*.json")}
    assert 4 <= len(done_before) < 24
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = {p.name: p.read_text() for p in folder.glob("*.json")}
    assert len(records) == 24  # 12 cells x 2 seeds, each exactly once
    assert all(records[k] == v for k, v in done_before.items())  # finished jobs untouched
    assert not list(folder.glob(".tmp-*"))
    for text in records.values():
        assert json.loads(text)["status"] == "ok"  # every record whole and valid


def test_slurm_dry_run_prints_plan_and_sbatch(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "paper", "--executor", "slurm", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "table1-bcl/A|x/seed=0" in out and '"value": 1.0' in out
    assert "#SBATCH --array=0-7%8" in out  # submitit caps the parallelism at the array size
    assert "#SBATCH --gpus-per-node=1" in out and "#SBATCH --partition=gpu" in out
    assert "export MALLOC_MMAP_MAX_=0" in out and "#SBATCH --job-name=pubench-table1-bcl" in out
    assert not _store().folder("paper", "table1-bcl").exists()  # nothing ran
    # checkpoint and requeue settings of the default profile's paper tier
    assert "#SBATCH --signal=USR2@600" in out and "checkpoints: every 5 epoch(s)" in out
    assert "requeued up to 10 time(s) (max_num_timeout)" in out
    assert "max_num_timeout:" not in out and "checkpoint_every_epochs:" not in out  # pubench's keys, not sbatch's
    assert main(["run", "table1-bcl", "--tier", "paper", "--executor", "slurm", "--dry-run",
                 "--checkpoint-every", "0"]) == 0
    out = capsys.readouterr().out
    assert "checkpoints: at the end of each training stage" in out


def test_slurm_profile_errors(tmp_path):
    with pytest.raises(Exception, match="no SLURM profile"):
        load_profile(tmp_path / "nope.yaml", "paper")
    (tmp_path / "p.yaml").write_text("tiers: {paper: {timeout_min: 5}}\n")
    with pytest.raises(Exception, match="tiers.smoke: missing"):
        load_profile(tmp_path / "p.yaml", "smoke")


@pytest.mark.parametrize(("cluster", "per_task"), [("local", 1), ("debug", 1), ("debug", "auto"), ("debug", 3)])
def test_submitit_path_runs_jobs_and_writes_manifest(tmp_registry, cluster, per_task):
    """One job per array task, or chunks of short jobs in one task (smoke: 16 per task)."""
    tmp_registry(selftest_spec())
    spec = get_spec("table1-bcl")
    jobs = expand(spec, "smoke").jobs
    ex = SlurmExecutor(_store().root, os.environ["PUBENCH_LOGS"], {"timeout_min": 5, "jobs_per_task": per_task},
                       cluster=cluster, spec_id=spec.id, tier="smoke")
    assert ex.runs_here is False
    sub = ex.submit(jobs)
    assert sub.counts is None and sub.where == f"manifest {sub.manifest}"
    size = {1: 1, 3: 3, "auto": SMOKE_JOBS_PER_TASK}[per_task]
    assert len(ex._handles) == -(-len(jobs) // size)
    for h in ex._handles:  # submit returned at once; wait here only because this is a test
        got = h.result()
        assert set([got] if isinstance(got, str) else got) == {"ok"}, got
    data = json.loads(sub.manifest.read_text())
    assert [e["id"] for e in data["jobs"]] == [j.id for j in jobs]
    assert len({e["slurm_id"] for e in data["jobs"]}) == len(ex._handles)
    assert _store().done_ids("smoke", spec.id) == {j.id for j in jobs}


def test_jobs_per_task_from_past_records():
    assert jobs_per_task(4, "paper", [1.0]) == 4
    assert jobs_per_task("auto", "paper", []) == 1 and jobs_per_task("auto", "smoke", []) == SMOKE_JOBS_PER_TASK
    assert jobs_per_task("auto", "reduced", [600.0, 900.0]) == 1  # long jobs: one per task
    assert jobs_per_task("auto", "reduced", [10.0, 12.0, 11.0]) == 10  # ~120 s of job time per task
    assert jobs_per_task("auto", "smoke", [0.01]) == 64  # capped
    with pytest.raises(Exception, match="jobs_per_task must be"):
        SlurmExecutor("/tmp/r", "/tmp/l", {"jobs_per_task": 0}, cluster="debug")


def test_executor_choices_match_the_registry():
    """`pubench run --executor` offers the registered executors (from the unit index, so the
    parser imports none of them)."""
    from pubench.cli import build_parser
    from pubench.executors import EXECUTORS

    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    (executor,) = [a for a in sub.choices["run"]._actions if a.dest == "executor"]
    assert executor.choices == EXECUTORS.names()


def test_registering_something_that_is_not_an_executor_fails():
    from pubench.executors import EXECUTORS

    with pytest.raises(TypeError, match="must subclass"):
        EXECUTORS.register("toy", object)
