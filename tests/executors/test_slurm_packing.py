"""SLURM ``jobs_per_gpu``: several jobs at once on an array task's GPU. The submission packs
``jobs_per_task x jobs_per_gpu`` jobs into a task that runs ``jobs_per_gpu`` of them at once
(the local executor's worker processes inside the task), the dry run says so and prices the
packed GPU-hours, and the jobs run through submitit's in-process cluster write each its own
record, as unpacked ones do. No SLURM needed."""

from __future__ import annotations

import json
import os

import pytest

from pubench.cli import main
from pubench.executors import SlurmExecutor
from pubench.executors.slurm import CheckpointedChunk, CheckpointedJob, PackedChunk, ProfileError
from pubench.jobs import expand
from pubench.registry import get_spec
from pubench.store import ResultStore
from tests.conftest import selftest_spec

PROFILE = """\
tiers:
  paper: {timeout_min: 60, gpus_per_node: 1, cpus_per_task: 4, slurm_array_parallelism: 3, jobs_per_task: 1,
          jobs_per_gpu: 2, slurm_signal_delay_s: 120}
  smoke: {timeout_min: 5, jobs_per_task: 1, jobs_per_gpu: 2}
"""


@pytest.fixture
def packed_profile(tmp_registry, monkeypatch):
    tmp_registry(selftest_spec())
    folder = tmp_registry.root / "slurm"
    folder.mkdir()
    (folder / "packed.yaml").write_text(PROFILE)
    monkeypatch.setenv("PUBENCH_SLURM_PROFILES", str(folder))
    return folder / "packed.yaml"


def _executor(tier: str, **params) -> SlurmExecutor:
    return SlurmExecutor(os.environ["PUBENCH_RESULTS"], os.environ["PUBENCH_LOGS"],
                         {"timeout_min": 5, "jobs_per_task": 1, **params}, cluster="debug", spec_id="table1-bcl",
                         tier=tier)


def test_tasks_hold_jobs_per_gpu_jobs_and_run_them_at_once(packed_profile):
    jobs = expand(get_spec("table1-bcl"), "paper", 2).jobs  # 8 jobs
    ex = _executor("paper", jobs_per_gpu=3, slurm_signal_delay_s=120)
    chunks = ex.chunks(jobs, "paper", "table1-bcl")
    assert [len(c) for c in chunks] == [3, 3, 2]
    packed = ex.task_callable(chunks[0])
    assert isinstance(packed, PackedChunk) and packed.lanes == 3 and packed.stop_grace_s == 90.0
    assert ex.task_callable(chunks[2]).lanes == 2  # never more lanes than jobs
    plain = _executor("paper")
    assert isinstance(plain.task_callable(jobs[:1]), CheckpointedJob)
    assert type(_executor("paper", jobs_per_task=2).task_callable(jobs[:2])) is CheckpointedChunk
    for bad in (0, "auto", True):
        with pytest.raises(ProfileError, match="jobs_per_gpu"):
            _executor("paper", jobs_per_gpu=bad)


def test_dry_run_says_what_shares_a_gpu_and_prices_the_packed_gpu_hours(packed_profile, capsys):
    assert main(["run", "table1-bcl", "--tier", "paper", "--executor", "slurm", "--profile", "packed",
                 "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "one array of 4 task(s) (jobs_per_task: 1), 2 at once on each task's GPU" in out
    assert "#SBATCH --array=0-3%3" in out and "\n  jobs_per_gpu: 2" not in out  # pubench's key, not sbatch's


def test_packed_estimate_counts_a_gpu_once_for_the_jobs_it_holds(packed_profile, tmp_path, capsys):
    from pubench.executors.local import LocalExecutor

    assert LocalExecutor(os.environ["PUBENCH_RESULTS"], 1, progress=False).run(
        expand(get_spec("table1-bcl"), "paper").jobs)["ok"] == 8  # CPU records: the estimate's figures
    assert main(["run", "table1-bcl", "--tier", "paper", "--executor", "slurm", "--profile", "packed",
                 "--dry-run", "--force"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("  estimate:"))
    assert "GPU-hours one job per GPU" in line and "with 2 per GPU" in line
    assert "3 array task(s) at once (slurm_array_parallelism) x 2 job(s) per GPU (jobs_per_gpu)" in line
    assert "packing R(2) =" in line and "x its time alone" in line


def test_a_packed_submission_runs_every_job_once_with_its_own_record(packed_profile):
    spec = get_spec("table1-bcl")
    jobs = expand(spec, "smoke", only=["A|*"]).jobs  # 2 jobs: one task runs both at once
    ex = _executor("smoke", jobs_per_gpu=2)
    sub = ex.submit(jobs)
    (handle,) = ex._handles
    assert handle.result() == {"ok": 2}  # submitit's debug cluster runs the task here
    manifest = json.loads(sub.manifest.read_text())
    assert manifest["jobs_per_gpu"] == 2 and manifest["jobs_per_task"] == 2
    records = ResultStore(os.environ["PUBENCH_RESULTS"]).records("smoke", spec.id)
    assert sorted(r["job"]["id"] for r in records) == sorted(j.id for j in jobs)
