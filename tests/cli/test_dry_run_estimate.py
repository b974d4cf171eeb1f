"""``pubench run ID --tier paper --dry-run`` on a fresh clone (no record of the jobs, an empty
preflight cache) estimates every spec from the figures committed with the code
(``benchmarks/results/``, docs/gpu.md's cost table), for the local and the SLURM executor, in
GPU-hours and in wall time at the run's parallelism, and prints a summary of its jobs, not
each one, unless ``--jobs-list``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pubench.cli import main

SPECS = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "experiments").glob("[a-z]*/*.yaml")
               if not p.parent.name.startswith("_") and not p.name.endswith(".notes.yaml"))


@pytest.fixture
def fresh_clone(tmp_path, monkeypatch):
    """Nothing run yet and nothing preflighted on this machine."""
    for name, env in (("results", "PUBENCH_RESULTS"), ("cache", "PUBENCH_CACHE"), ("logs", "PUBENCH_LOGS")):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(env, str(tmp_path / name))
    monkeypatch.delenv("PUBENCH_EXPERIMENTS", raising=False)


@pytest.mark.parametrize("spec_id", SPECS)
def test_every_spec_s_paper_tier_dry_run_prints_an_estimate(spec_id, fresh_clone, capsys):
    for executor in (["--device", "cuda", "--jobs", "4"], ["--executor", "slurm"]):
        assert main(["run", spec_id, "--tier", "paper", "--dry-run", *executor]) == 0
        out = capsys.readouterr().out
        estimate = next(line for line in out.splitlines() if line.startswith("  estimate:"))
        assert "cannot estimate" not in estimate, estimate
        assert "GPU-hours" in estimate and "of wall time with" in estimate, estimate
        assert sum("/seed=" in line for line in out.splitlines()) <= 3  # a summary, not a line per job


def test_the_summary_names_a_few_jobs_and_jobs_list_names_them_all(fresh_clone, capsys):
    assert main(["run", "table1-punce", "--tier", "paper", "--dry-run", "--device", "cuda", "--only", "MNIST*|*"]) == 0
    out = capsys.readouterr().out
    assert "job plan: 75 job(s), 15 cell(s), seeds 0-4" in out and "... and 72 more (`--jobs-list`" in out
    assert "measured (NVIDIA H200, 2026-11-27; benchmarks/results/)" in out  # the committed CUDA preflight
    assert "4 local worker(s)" not in out and "1 local worker(s) on one GPU" in out
    assert main(["run", "table1-punce", "--tier", "paper", "--dry-run", "--device", "cuda", "--only", "MNIST*|*",
                 "--jobs-list"]) == 0
    assert sum("table1-punce/MNIST" in line for line in capsys.readouterr().out.splitlines()) == 75
    assert main(["run", "table1-punce", "--jobs-list"]) == 2  # only with --dry-run


# ---- issue 64, item 7: one format for one total; a paper-tier estimate on the CPU says a GPU changes it
def test_a_paper_dry_run_on_the_cpu_prints_one_total_one_way_and_says_a_gpu_changes_it(fresh_clone, capsys):
    import re

    assert main(["run", "table1-punce", "--tier", "paper", "--dry-run"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  estimate:")]
    job_h = re.search(r"estimate: (\S+) h \((\S+ years)\) of job time", lines[0])
    assert job_h and f"; {job_h.group(1)} CPU core-hours;" in lines[0], lines[0]  # one job a core: the same number
    assert "e+" not in lines[0] and not re.search(r"\d\.\d h", lines[0]), lines[0]
    assert "the paper tier is meant for GPUs" in lines[-1] and "--device cuda --dry-run" in lines[-1], lines
    assert main(["run", "table1-punce", "--tier", "paper", "--device", "cuda", "--dry-run"]) == 0
    assert "meant for GPUs" not in capsys.readouterr().out
