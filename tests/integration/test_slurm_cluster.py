"""A real SLURM cluster: Debian's slurmctld + slurmd + munge on localhost, one node.

Runs when the test process is root and the SLURM daemons are installed, or can be
installed with apt (``.ci/run`` does this on a fresh machine). Elsewhere the module is
skipped with the reason. A smoke table goes through ``pubench run --executor slurm``;
``status`` and ``report`` then read what the array tasks wrote, and a job claimed by a
live local runner is neither submitted nor run by SLURM. A job sent SLURM's pre-timeout
signal mid-training is requeued and resumes from its checkpoint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import record_reliability, selftest_spec
from tests.slurmcluster import Unavailable, running_cluster
from tests.train.test_checkpoint import smoke_variant


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    try:
        with running_cluster(tmp_path_factory.mktemp("slurm")) as cluster:
            yield cluster
    except Unavailable as e:
        pytest.skip(str(e))


def _pubench(args, env, timeout=600):
    return subprocess.run([sys.executable, "-m", "pubench", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_smoke_table_through_a_real_slurm_cluster(slurm_cluster, tmp_registry, tmp_path):
    tmp_registry(selftest_spec())
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "default.yaml").write_text(textwrap.dedent("""\
        common: {slurm_setup: []}
        tiers:
          paper: {timeout_min: 10, cpus_per_task: 1, slurm_partition: cpu}
          reduced: {timeout_min: 10, cpus_per_task: 1, slurm_partition: cpu}
          smoke: {timeout_min: 10, cpus_per_task: 1, mem_gb: 1, slurm_partition: cpu}
        """))
    env = {**slurm_cluster.env, "PUBENCH_SLURM_PROFILES": str(profiles)}
    logs = tmp_registry.root / "logs"
    env["PUBENCH_LOGS"] = str(logs)

    from pubench.jobs import expand
    from pubench.registry import get_spec
    from pubench.store import ResultStore

    store = ResultStore(tmp_registry.root / "results")
    jobs = expand(get_spec("table1-bcl"), "smoke").jobs
    held = store.claims("smoke", "table1-bcl").acquire(jobs[0].id)  # a live local runner holds this one
    held.start_heartbeat(1.0)

    t0 = time.time()
    out = _pubench(["run", "table1-bcl", "--tier", "smoke", "--executor", "slurm"], env)
    assert out.returncode == 0, out.stderr
    assert "1 job(s) running in another runner" in out.stdout and "submitted 3 job(s)" in out.stdout
    def status():
        return json.loads(_pubench(["status", "table1-bcl", "--tier", "smoke", "--json"], env, 120).stdout)[0]

    slurm_cluster.wait(lambda: (lambda st: st["done"] + st["failed"] >= 3 and st["submitted"] == 0)(status()), 300)
    st = status()
    assert (st["done"], st["failed"], st["running"]) == (3, 0, 1), st
    assert not store.is_done(jobs[0])  # SLURM never ran the claimed job
    recs = store.records("smoke", "table1-bcl")
    assert all(r["provenance"]["host"] for r in recs) and all(r["machine"]["torch_threads"] == 1 for r in recs)
    rep = _pubench(["report", "table1-bcl", "--tier", "smoke"], env)
    assert rep.returncode == 0, rep.stderr
    assert (tmp_registry.root / "reports" / "smoke" / "table1-bcl.md").exists()
    held.release()
    again = _pubench(["run", "table1-bcl", "--tier", "smoke", "--no-progress"], env)
    assert again.returncode == 0 and "3 already done, 1 to run" in again.stdout
    record_reliability("slurm", "smoke table on a real single-node SLURM cluster", {
        "submitted": 3, "done_by_slurm": 3, "claimed_locally_not_rerun": 1, "seconds": round(time.time() - t0, 1)})


def test_a_real_smoke_table_runs_in_chunks_of_short_jobs(slurm_cluster, tmp_path):
    """fig5-bcl's smoke table (72 sub-second jobs), 2 array tasks at a time: the smoke tier's
    ``jobs_per_task: auto`` puts 16 jobs in one task, so 5 tasks pay the start-up, not 72."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "default.yaml").write_text(
        "tiers:\n  smoke: {timeout_min: 10, cpus_per_task: 1, mem_gb: 1, slurm_partition: cpu, "
        "slurm_array_parallelism: 2}\n")
    env = {**slurm_cluster.env, "PUBENCH_SLURM_PROFILES": str(profiles), "PUBENCH_RESULTS": str(tmp_path / "results"),
           "PUBENCH_LOGS": str(tmp_path / "logs"), "PUBENCH_REPORTS": str(tmp_path / "reports")}
    env.pop("PUBENCH_EXPERIMENTS", None)
    t0 = time.time()
    out = _pubench(["run", "fig5-bcl", "--tier", "smoke", "--executor", "slurm"], env)
    assert out.returncode == 0, out.stderr
    manifest = json.loads(next((tmp_path / "logs" / "smoke" / "fig5-bcl").glob("manifest-*.json")).read_text())
    n_jobs, n_tasks = len(manifest["jobs"]), len({e["slurm_id"] for e in manifest["jobs"]})
    assert manifest["jobs_per_task"] == 16 and n_tasks == -(-n_jobs // 16), manifest["jobs_per_task"]

    def status():
        return json.loads(_pubench(["status", "fig5-bcl", "--tier", "smoke", "--json"], env, 120).stdout)[0]

    slurm_cluster.wait(lambda: (lambda st: st["done"] + st["failed"] >= n_jobs)(status()), 600)
    st = status()
    assert (st["done"], st["failed"]) == (n_jobs, 0), st
    record_reliability("slurm", "fig5-bcl smoke table, 2 array tasks at a time, jobs_per_task auto", {
        "jobs": n_jobs, "array_tasks": n_tasks, "seconds": round(time.time() - t0, 1)})


def _slurm(cluster, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run(list(args), env=cluster.env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"{' '.join(args)}: {out.stderr.strip()}; logs: {cluster.logs()}"
    return out


def _task_pids(cluster, slurm_id: str) -> list[int]:
    """The Python processes of the job's tasks (``scontrol listpids``: not the batch script or srun)."""
    pids = []
    for line in _slurm(cluster, "scontrol", "listpids", slurm_id).stdout.splitlines():
        fields = line.split()
        if not fields or not fields[0].isdigit():
            continue
        try:
            argv = Path(f"/proc/{fields[0]}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if Path(argv[0].decode()).name.startswith("python") and b"submitit.core._submit" in argv:
            pids.append(int(fields[0]))
    return pids


def _pending(pid: int, signum: int) -> bool:
    """Whether ``signum`` waits to be delivered to the (stopped) process ``pid``."""
    status = Path(f"/proc/{pid}/status").read_text()
    masks = [int(line.split()[1], 16) for line in status.splitlines() if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(m >> (signum - 1) & 1 for m in masks)


def test_a_signalled_job_is_requeued_and_resumes_from_its_checkpoint(slurm_cluster, tmp_registry, tmp_path,
                                                                      shared_image_root):
    """SLURM's pre-timeout signal, sent directly: ``scancel --signal=USR2`` (what
    ``--signal=USR2@<delay>`` sends before the time limit) to a smoke cell that checkpoints every
    epoch, mid pre-training. The job stops at its next epoch boundary with a checkpoint,
    submitit requeues it, and the requeued job resumes from the checkpoint and finishes.

    No race: once the job has written its first checkpoint its task process is stopped
    (SIGSTOP), checked to be mid-run, sent the signal through SLURM, and let go only when the
    signal is pending, so it runs no further instruction before the signal lands."""
    epochs = 40
    smoke_variant(tmp_registry, "punce/table1-punce", pretrain=epochs)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "default.yaml").write_text(textwrap.dedent("""\
        common: {slurm_setup: []}
        tiers:
          smoke: {timeout_min: 10, cpus_per_task: 1, mem_gb: 2, slurm_partition: cpu, checkpoint_every_epochs: 1,
                  max_num_timeout: 3}
        """))
    logs = tmp_registry.root / "logs"
    env = {**slurm_cluster.env, "PUBENCH_SLURM_PROFILES": str(profiles), "PUBENCH_LOGS": str(logs),
           "PUBENCH_DATA": str(shared_image_root)}
    t0 = time.time()
    out = _pubench(["run", "table1-punce", "--tier", "smoke", "--only", "MNIST n_P=1k|puNCE", "--executor", "slurm"],
                   env)
    assert out.returncode == 0, out.stderr
    [entry] = json.loads(next((logs / "smoke" / "table1-punce").glob("manifest-*.json")).read_text())["jobs"]
    job_id, slurm_id = entry["id"], entry["slurm_id"]
    folder = tmp_registry.root / "results" / "smoke" / "table1-punce"
    checkpoints = tmp_registry.root / "results" / ".checkpoints" / job_id

    def records():
        return [json.loads(p.read_text()) for p in folder.glob("*.json")] if folder.exists() else []

    try:
        assert slurm_cluster.wait(lambda: list(checkpoints.glob("*.pt")) and _task_pids(slurm_cluster, slurm_id),
                                  120, poll=0.2), \
            f"no checkpoint after 120 s; job log: {_tail(entry['stderr'])}; logs: {slurm_cluster.logs()}"
        pids = _task_pids(slurm_cluster, slurm_id)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            import torch

            done = max(torch.load(p, weights_only=True)["epoch"] for p in checkpoints.glob("*.pt"))
            assert done < epochs - 1 and not any(r.get("status") == "ok" for r in records()), \
                f"at epoch {done} of {epochs} before it could be stopped"
            _slurm(slurm_cluster, "scancel", "--signal=USR2", slurm_id)
            assert slurm_cluster.wait(lambda: all(_pending(p, signal.SIGUSR2) for p in pids), 30, poll=0.1), \
                "SIGUSR2 never reached the job's task"
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)

        # SLURM holds a requeued job back for about two minutes (its begin time): let it start now
        requeued = slurm_cluster.wait(lambda: "Restarts=1" in (job := _job(slurm_cluster, slurm_id))
                                      and "JobState=PENDING" in job, 60, poll=0.2)
        assert requeued, f"not requeued; job log: {_tail(entry['stderr'])}; logs: {slurm_cluster.logs()}"
        _slurm(slurm_cluster, "scontrol", "update", f"JobId={slurm_id}", "StartTime=now")
        assert slurm_cluster.wait(lambda: any(r.get("status") == "ok" for r in records()), 120, poll=0.5), \
            f"no ok record 120 s after the signal; job log: {_tail(entry['stderr'])}; logs: {slurm_cluster.logs()}"
    except BaseException:
        subprocess.run(["scancel", slurm_id], env=slurm_cluster.env, capture_output=True, timeout=60)
        raise
    [rec] = [r for r in records() if r.get("status") == "ok"]
    resumed = rec["info"]["checkpoint"]["resumed"]
    assert resumed and resumed[0]["stage"] == "pretrain punce.0" and 0 < resumed[0]["epoch"] < epochs, resumed
    assert len(rec["info"]["pretrain"]["loss"]) == epochs
    assert "Caught signal SIGUSR2" in Path(entry["stderr"]).read_text()
    assert not checkpoints.exists()
    record_reliability("slurm", "SLURM's pre-timeout signal to a job on a real SLURM cluster", {
        "requeued_and_resumed_at_epoch": resumed[0]["epoch"], "of_epochs": epochs, "requeues": len(resumed),
        "seconds": round(time.time() - t0, 1)})


def _job(cluster, slurm_id: str) -> str:
    return _slurm(cluster, "scontrol", "show", "job", "-o", slurm_id).stdout


def _tail(path: str, n: int = 800) -> str:
    p = Path(path)
    return " ".join(p.read_text()[-n:].split()) if p.exists() else "(none yet)"
