"""``pubench cancel``: the SLURM submissions of a table read from their manifests, their arrays
scancelled, the manifests marked and the claims their jobs left released. (The real cluster
test, tests/integration/test_slurm_cluster.py, submits; here a stand-in ``scancel`` on PATH
records its arguments.)"""

import json
import os
import socket
import time

import pytest

from pubench.cli import main
from tests.conftest import selftest_spec


def test_no_submission_is_one_line_exit_2(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["cancel", "table1-bcl", "--tier", "paper"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no SLURM submission of table1-bcl to cancel at tier(s) paper" in err


@pytest.fixture
def submitted(tmp_registry, tmp_path, monkeypatch):
    tmp_registry(selftest_spec())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "scancel-calls"
    (bin_dir / "scancel").write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\n")
    (bin_dir / "scancel").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    folder = tmp_registry.root / "logs" / "paper" / "table1-bcl"
    folder.mkdir(parents=True)
    jobs = [{"id": f"{i:016x}", "name": f"table1-bcl/A|x/seed={i}", "slurm_id": f"{arr}_{i}",
             "stdout": "", "stderr": ""} for i, arr in ((1, 500), (2, 500), (3, 501))]
    for stamp, part in (("20260101T000000000000", jobs[:2]), ("20260102T000000000000", jobs[2:])):
        (folder / f"manifest-{stamp}.json").write_text(json.dumps({
            "cluster": "slurm", "spec": "table1-bcl", "tier": "paper", "submitted_unix": time.time(),
            "params": {"timeout_min": 600}, "jobs": part}))
    claims = tmp_registry.root / "results" / "paper" / "table1-bcl" / ".claims"
    claims.mkdir(parents=True)
    (claims / f"{1:016x}.claim").write_text(json.dumps({"host": "node7", "pid": 4242, "claimed_unix": time.time()}))
    (claims / f"{3:016x}.claim").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                                         "claimed_unix": time.time()}))
    return tmp_registry, folder, claims, calls


def test_cancel_scancels_every_array_marks_manifests_releases_claims(submitted, capsys):
    from pubench.executors.slurm import read_manifests

    reg, folder, claims, calls = submitted
    logs = reg.root / "logs"
    assert len(read_manifests(logs, "paper", "table1-bcl")) == 2
    assert main(["cancel", "table1-bcl"]) == 0
    out = capsys.readouterr().out
    assert calls.read_text().split() == ["500", "501"]
    assert "table1-bcl (paper): scancel 500 501 (3 job(s) in 2 submission(s)); released 1 claim(s)" in out
    assert not (claims / f"{1:016x}.claim").exists()  # left by a task on another host: released
    assert (claims / f"{3:016x}.claim").exists()      # a live process here holds it: kept
    assert all(json.loads(p.read_text())["cancelled_at"] for p in folder.glob("manifest-*.json"))
    assert read_manifests(logs, "paper", "table1-bcl") == []  # no longer counted as in flight
    # cancelled once: nothing left to cancel
    assert main(["cancel", "table1-bcl", "--tier", "paper"]) == 2
    assert "no SLURM submission" in capsys.readouterr().err


def test_cancel_without_scancel_cancels_nothing(submitted, monkeypatch, capsys):
    reg, folder, _, calls = submitted
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["cancel", "table1-bcl"]) == 2
    assert "scancel is not on PATH" in capsys.readouterr().err
    assert not any(json.loads(p.read_text()).get("cancelled_at") for p in folder.glob("manifest-*.json"))
