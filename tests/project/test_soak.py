"""The store soak's short mode (issue 55, item 4; .ci/soak.py, whose ten-minute run is the
nightly's): local runners, and a SLURM cluster where one can be started, on one store for 45 s
while the chaos kills, stops and restarts them; every job then has exactly one ok record,
none ran twice, none is lost and `pubench verify` reproduces a sample."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import record_reliability

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_soak_loses_nothing_and_runs_nothing_twice(tmp_path):
    out = subprocess.run([sys.executable, ".ci/soak.py", "--seconds", "45", "--seed", "55", "--scratch",
                          str(tmp_path / "soak"), "--verify-sample", "2", "--json", str(tmp_path / "soak.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    f = json.loads((tmp_path / "soak.json").read_text())
    assert f["ok"] and f["duplicates"] == 0 and f["lost"] == 0 and f["verify"]["rc"] == 0, f
    assert f["jobs"] >= 24 and f["executions"] >= f["jobs"] and f["final_run"]["rc"] == 0, f
    assert f["runner_starts"] > 3 and f.get("SIGKILLs", 0) + f.get("SIGTERMs", 0) + f.get("SIGSTOPs", 0) > 0, f
    assert not f["failure_records_left"] and not f["claims_left"] and not f["temp_files_left"], f
    assert not f["processes_left"], f
    record_reliability("soak", "store soak, short mode (45 s of chaos)", {
        k: f.get(k, 0) for k in ("jobs", "executions", "SIGKILLs", "worker_SIGKILLs", "SIGTERMs", "SIGSTOPs",
                                 "slurm_submissions", "duplicates", "lost", "wall_s")})
