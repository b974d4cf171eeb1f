"""The committed campaign queue (campaigns/paper-gpu.yaml): every entry's cells read data that
travel (MNIST, Fashion-MNIST), say why they are where they are, and state the projected GPU
minutes the committed figures give; a malformed queue is one line naming its key; a dry run
plans a window without a GPU."""

from __future__ import annotations

import argparse
import re

import pytest

from pubench.campaign import plan as plans
from pubench.campaign import schedule
from pubench.campaign.queue import QueueError, default_path, load
from pubench.cli import main
from pubench.cli.campaign import duration
from pubench.numerics import resolve
from pubench.store import ResultStore


@pytest.fixture
def committed_plan(tmp_path):
    queue = load(default_path())
    return plans.make(queue, queue.tier, resolve(device=queue.device), ResultStore(tmp_path / "empty"))


def test_the_committed_queue_reads_data_that_travel_and_states_its_minutes(committed_plan):
    assert committed_plan.queue.tier == "paper" and committed_plan.queue.device == "cuda"
    assert not committed_plan.notes  # every cell runnable and implemented
    assert committed_plan.datasets == {"mnist", "fashion_mnist"}
    for k, st in enumerate(committed_plan.entries, 1):
        assert st.jobs > 0 and st.entry.why, k
        assert st.entry.projected_min == pytest.approx(st.projected_s / 60, abs=0.06), \
            f"entry [{k}] states {st.entry.projected_min} min, the committed figures give {st.projected_s / 60:.1f}"
    assert all(p.projected_s and p.basis in ("measured", "scaled") for p in committed_plan.pending)
    ids = [p.job.id for p in committed_plan.pending]
    assert len(ids) == len(set(ids))  # an entry that names cells of an earlier one runs only the rest


def test_table1_punce_mnist_claims_open_the_queue(committed_plan):
    first = committed_plan.entries[0].entry
    assert first.spec == "table1-punce" and first.only == ("MNIST n_P=1k|*",)


@pytest.mark.parametrize("text,where", [
    ("entries: []", "entries"), ("entries: [{spec: x}]", "entries[0].why"),
    ("entries: [{spec: x, why: y, only: [nobar]}]", "entries[0].only"),
    ("entries: [{spec: x, why: y, seeds: 0}]", "entries[0].seeds"), ("device: tpu\nentries: [{spec: x, why: y}]", "device"),
    ("entries: [{spec: x, why: y, minutes: 3}]", "entries[0].minutes"), ("tiers: paper\nentries: []", "tiers")])
def test_a_malformed_queue_names_its_key(tmp_path, text, where):
    (tmp_path / "q.yaml").write_text(text)
    with pytest.raises(QueueError, match=re.escape(f": {where}: ")):
        load(tmp_path / "q.yaml")


@pytest.mark.parametrize("text,seconds", [("9m", 540), ("90s", 90), ("1h30m", 5400), ("540", 540), ("1.5m", 90)])
def test_budget_durations(text, seconds):
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["", "9x", "-1m", "0"])
def test_bad_budgets(text):
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_simulate_starts_what_fits_in_queue_order_and_backfills():
    class P:
        def __init__(self, s, entry=0):
            self.projected_s, self.entry = s, entry

    pending = [P(100), P(100), P(400), P(10, 1)]
    left = 200 + 2 * schedule.START_S
    assert schedule.simulate(pending, 1, left, 1.0) == [0, 1]  # the 400 s job never fits
    assert schedule.simulate(pending, 2, left, 1.0) == [0, 1, 3]  # the later short one backfills
    assert schedule.simulate(pending, 2, left, 2.0) == [0, 1]
    n, done = schedule.best_count(pending, 4, left, lambda n: 1.0 + 0.2 * (n - 1))
    assert n == 2 and done == 210


def stand_in_data(root):
    """The files of the queue's data sets, a few bytes each: a plan only asks whether they are there."""
    from pubench.campaign import travel

    for name in ("mnist", "fashion_mnist"):
        for f in travel.files_of(name):
            (root / f.path).parent.mkdir(parents=True, exist_ok=True)
            (root / f.path).write_bytes(b"\0")
    return root


def test_dry_run_plans_a_window_without_a_gpu(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("PUBENCH_DATA", str(stand_in_data(tmp_path / "data")))
    monkeypatch.delenv("PUBENCH_CAMPAIGN_STARTED", raising=False)
    assert main(["campaign", "--budget", "9m", "--dry-run", "--carry", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "campaign: paper-gpu.yaml at tier 'paper'" in out and "[1] table1-punce MNIST n_P=1k|*: 0 of 25 done" in out
    assert "throughput: 4 (92.2 TFLOP/s, the most a committed figure drew from NVIDIA H200" in out
    assert "campaign: dry run: if the projections hold, this window starts" in out


def test_make_gpu_paper_runs_the_campaign_from_the_source_tree(tmp_path):
    """``make gpu-paper`` on a machine without a GPU: its dry run plans the window."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if shutil.which("make") is None:
        pytest.skip("no make here")
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "PUBENCH_CAMPAIGN_STARTED"}
    out = subprocess.run(["make", "-s", "gpu-paper", f"GPU_PY={sys.executable}", "GPU_PAPER_ARGS=--dry-run",
                          f"OUT={tmp_path}"], cwd=root, env=env | {"PUBENCH_RESULTS": str(tmp_path / "results")},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "campaign: paper-gpu.yaml at tier 'paper'" in out.stdout and "this window starts" in out.stdout
