"""``pubench campaign`` without a GPU: the same command on the CPU at the smoke tier, several
jobs at once, a budget that stops it before the queue is done, a second call that finishes
the rest, nothing run twice, the records those of a one-at-a-time run of the same jobs, and
the archive imported (checked) into a fresh store. A job still running at the budget's end
is stopped cleanly: recorded as interrupted, never half-written, run again by the next call."""

from __future__ import annotations

import json
import tarfile
import time
from pathlib import Path

import pytest

from pubench.cli import main
from pubench.store import ResultStore
from tests.conftest import selftest_spec

#: fast smoke cells (simulations, no data): two entries that fit a short budget, then one whose
#: stated projection (30 min) does not, so the first call stops before it
QUEUE = """\
tier: smoke
device: cpu
entries:
  - spec: fig5-bcl
    only: ["BCL|N=16", "DCL|N=16"]
    why: first
    projected_min: 0.2
  - spec: fig4-bcl
    only: ["*|alpha=0.5"]
    why: second
    projected_min: 0.2
  - spec: fig5-bcl
    only: ["BIASED|N=16"]
    why: does not fit a short budget
    projected_min: 30
"""


@pytest.fixture
def stores(tmp_path, monkeypatch):
    """The real specs; a throwaway store and queue."""
    for name, env in (("results", "PUBENCH_RESULTS"), ("logs", "PUBENCH_LOGS")):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(env, str(tmp_path / name))
    monkeypatch.delenv("PUBENCH_EXPERIMENTS", raising=False)
    monkeypatch.delenv("PUBENCH_CAMPAIGN_STARTED", raising=False)
    (tmp_path / "queue.yaml").write_text(QUEUE)
    return tmp_path


def _campaign(root: Path, out: str, budget: str, *more: str) -> int:
    import os

    os.environ.pop("PUBENCH_CAMPAIGN_STARTED", None)  # each call's budget counts from its own start
    return main(["campaign", "--device", "cpu", "--tier", "smoke", "--queue", str(root / "queue.yaml"),
                 "--budget", budget, "--out", str(root / out), "--packing-slowdown", "1", *more])


def _records(store_root: Path) -> dict[str, dict]:
    store = ResultStore(store_root)
    return {r["job"]["id"]: r for spec in ("fig5-bcl", "fig4-bcl") for r in store.records("smoke", spec)}


def _archived(out: Path) -> tuple[set[str], dict]:
    (archive,) = out.glob("campaign-*.tar.gz")
    with tarfile.open(archive) as tar:
        summary = json.loads(tar.extractfile("campaign.json").read())
        ids = {Path(m.name).stem.split("--")[-1] for m in tar.getmembers() if m.name.startswith("results/")}
    return ids, summary


def test_two_windows_finish_the_queue_once_and_as_one_at_a_time(stores, capsys, monkeypatch):
    t0 = time.time()
    # 3 minutes: the two short entries fit even on a loaded machine (workers import torch first), the 30-minute one not
    assert _campaign(stores, "out1", "3m", "--concurrency", "2") == 0
    first_ids, first = _archived(stores / "out1")
    assert first["concurrency"]["n"] == 2 and first["counts"].get("ok", 0) == len(first_ids)
    assert 0 < len(first_ids) <= 4  # the 30-minute entry never fits 3 minutes
    assert time.time() - t0 < 180
    assert _campaign(stores, "out2", "40m", "--concurrency", "2") == 0
    second_ids, second = _archived(stores / "out2")
    assert first_ids.isdisjoint(second_ids) and len(first_ids | second_ids) == 5  # nothing twice, nothing left
    assert [e["done"] == e["jobs"] for e in second["entries"]] == [True, True, True]
    campaign = _records(Path(stores / "results"))
    assert set(campaign) == first_ids | second_ids
    out = capsys.readouterr().out
    assert "complete" in out and "new record(s) in" in out

    # the same jobs one at a time, by `pubench run`, into another store: the same numbers
    monkeypatch.setenv("PUBENCH_RESULTS", str(stores / "one-at-a-time"))
    assert main(["run", "fig5-bcl", "--tier", "smoke", "--only", "*|N=16", "--no-progress"]) == 0
    assert main(["run", "fig4-bcl", "--tier", "smoke", "--only", "*|alpha=0.5", "--no-progress"]) == 0
    single = _records(stores / "one-at-a-time")
    assert set(single) == set(campaign)
    for job_id, rec in campaign.items():
        assert rec["metrics"] == single[job_id]["metrics"] and rec["job"] == single[job_id]["job"]

    # the archives into a fresh store, checked; twice is a no-op
    monkeypatch.setenv("PUBENCH_RESULTS", str(stores / "fresh"))
    archives = [str(p) for p in sorted((stores / "out1").glob("*.tar.gz")) + sorted((stores / "out2").glob("*.tar.gz"))]
    assert main(["campaign", "import", *archives, "--allow-dirty"]) == 0
    assert "wrote 5 record(s)" in capsys.readouterr().out
    assert _records(stores / "fresh") == campaign
    assert main(["campaign", "import", *archives, "--allow-dirty"]) == 0
    out = capsys.readouterr().out
    assert "wrote 0 record(s)" in out and "5 already there with the same metrics" in out


def test_a_stop_leaves_the_running_job_recorded_as_interrupted_and_no_half_record(tmp_registry, tmp_path):
    """SIGTERM to the campaign (as at its budget's end) stops a running job cleanly: it records
    itself interrupted (the next window reruns it), nothing half-written, the window still
    bundles and exits."""
    import os
    import signal
    import subprocess
    import sys

    tmp_registry(selftest_spec().replace("params: {sleep: 0.0}", "params: {sleep: 300.0}"))
    (tmp_path / "q.yaml").write_text("tier: smoke\ndevice: cpu\nentries:\n"
                                     "  - {spec: table1-bcl, only: ['A|x'], why: a job that sleeps, projected_min: 0.1}\n")
    env = {k: v for k, v in os.environ.items() if k != "PUBENCH_CAMPAIGN_STARTED"}
    proc = subprocess.Popen([sys.executable, "-m", "pubench", "campaign", "--device", "cpu", "--queue",
                             str(tmp_path / "q.yaml"), "--budget", "10m", "--out", str(tmp_path / "out"),
                             "--concurrency", "1"], env=env, cwd=Path(__file__).resolve().parents[2],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    folder = ResultStore(tmp_path / "results").folder("smoke", "table1-bcl")
    deadline = time.time() + 240
    while not list((folder / ".claims").glob("*.claim")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)  # the job has started once its claim is taken
    os.kill(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "1 interrupted" in out and "stopped by SIGTERM" in out
    (failure,) = folder.glob("*.failed.json")
    assert json.loads(failure.read_text())["error"]["type"] == "JobInterrupted"
    assert not [p for p in folder.glob("*.json") if not p.name.endswith(".failed.json")]  # no ok record
    assert not list(folder.rglob(".tmp-*")) and not list((folder / ".claims").glob("*.claim"))
    ids, summary = _archived(tmp_path / "out")
    assert ids == set() and summary["stopped"] == "stopped by SIGTERM"


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    import io

    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_import_checks_every_record(tmp_registry, tmp_path, capsys, monkeypatch):
    """Schema, id = the hash of the config, the spec and its version, a job of the spec, the
    code committed, and no other metrics already in the store: what fails is named and not
    written; the rest is written as it was."""
    from pubench.jobs.plan import Job

    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    store = ResultStore(tmp_path / "results")
    a, b, c, d = sorted(store.records("smoke", "table1-bcl"), key=lambda r: r["job"]["name"])
    committed = {"git_sha": "f" * 40, "git_dirty": False}

    def member(rec: dict, **job) -> tuple[str, bytes]:
        """``rec`` as a campaign would carry it (committed code), its job changed by ``job``
        (with the id of the changed job when ``job`` has no id of its own)."""
        j = rec["job"] | job
        if "id" not in job:
            j = Job.from_dict(j).to_dict()
        rec = rec | {"job": j, "provenance": rec["provenance"] | committed}
        name = store.path(Job.from_dict(j)).name.replace(Job.from_dict(j).id, j["id"])
        return f"results/smoke/table1-bcl/{name}", json.dumps(rec).encode()

    archive = _tar(tmp_path / "a.tar.gz", dict([
        member(a), member(b | {"metrics": {"score": 99.0}}), member(c, params={"value": 5.0}, id=c["job"]["id"]),
        member(d, spec_version=7), ("results/smoke/table1-bcl/x--0000.failed.json", b"{}"),
        ("results/../../etc/passwd.json", b"{}")]))
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "fresh"))
    fresh = ResultStore(tmp_path / "fresh")
    job_b = Job.from_dict(b["job"])
    fresh.path(job_b).parent.mkdir(parents=True)
    fresh.path(job_b).write_text(json.dumps(b))  # b is there already, with its own metrics
    assert main(["campaign", "import", str(archive)]) == 1
    out = capsys.readouterr().out
    assert "wrote 1 record(s)" in out and "5 refused" in out
    assert "already in the store with other metrics" in out
    assert "its job id is not the hash of its config" in out
    assert "spec version 7; table1-bcl is at version 1 here" in out
    assert "not a record's path" in out and "result schema None" in out
    assert fresh.read(job_b) == b  # kept as it was
    assert json.loads(fresh.path(Job.from_dict(a["job"])).read_text())["metrics"] == a["metrics"]
    dirty = tmp_path / "b.tar.gz"
    _tar(dirty, dict([(f"results/smoke/table1-bcl/{store.path(Job.from_dict(a['job'])).name}", json.dumps(a).encode())]))
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "fresh2"))
    if a["provenance"]["git_dirty"] is False:  # run from a clean checkout: mark it dirty
        _tar(dirty, dict([(f"results/smoke/table1-bcl/{store.path(Job.from_dict(a['job'])).name}",
                           json.dumps(a | {"provenance": a["provenance"] | {"git_dirty": True}}).encode())]))
    assert main(["campaign", "import", str(dirty)]) == 1
    assert "ran from code that differs from a commit" in capsys.readouterr().out
    assert main(["campaign", "import", str(dirty), "--allow-dirty"]) == 0


def test_a_window_killed_from_outside_still_returns_what_finished(tmp_registry, tmp_path):
    """The archive is rewritten as each job ends: a command the lease's time limit kills (SIGKILL,
    no chance to bundle) leaves in --out every record finished before it, whole."""
    import os
    import signal
    import subprocess
    import sys

    spec = selftest_spec().replace("params: {sleep: 0.0}", "params: {}")
    spec = spec.replace("A: {value: 1.0}", "A: {value: 1.0, sleep: 0.0}").replace("B: {value: 2.0}",
                                                                                "B: {value: 2.0, sleep: 300.0}")
    tmp_registry(spec)
    (tmp_path / "q.yaml").write_text("tier: smoke\ndevice: cpu\nentries:\n"
                                     "  - {spec: table1-bcl, only: ['A|x', 'B|x'], why: 'one quick, one that sleeps', "
                                     "projected_min: 0.1}\n")
    env = {k: v for k, v in os.environ.items() if k != "PUBENCH_CAMPAIGN_STARTED"} | {"PUBENCH_CORE_SLOTS": "off"}
    proc = subprocess.Popen([sys.executable, "-m", "pubench", "campaign", "--device", "cpu", "--queue",
                             str(tmp_path / "q.yaml"), "--budget", "10m", "--out", str(tmp_path / "out"),
                             "--concurrency", "2"], env=env, cwd=Path(__file__).resolve().parents[2],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.time() + 240
    try:
        while time.time() < deadline and proc.poll() is None:
            archives = list((tmp_path / "out").glob("campaign-*.tar.gz"))
            if archives and _archived(tmp_path / "out")[0]:
                break
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the campaign and its workers, as a time limit would
        proc.communicate(timeout=60)
    ids, summary = _archived(tmp_path / "out")
    assert len(ids) == 1 and summary["counts"] == {"ok": 1} and not summary["final"]
    (record,) = ResultStore(tmp_path / "results").records("smoke", "table1-bcl")
    assert ids == {record["job"]["id"]} and record["job"]["row"] == "A"
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]  # nothing half-written left
