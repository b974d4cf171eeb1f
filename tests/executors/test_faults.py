"""Fault cases of a run (issue 33) and files an attacker could plant in a shared store
(issue 40): no SLURM, a stopped runner, a foreign or crafted checkpoint, `--jobs 64`, a full
disk, SIGHUP, long input, file modes. Figures go to the README's reliability table."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from pubench.errors import StorageError
from pubench.store import ResultStore
from pubench.store.claims import STALE_S
from pubench.train import checkpoint, prefix_cache
from tests.conftest import record_reliability, selftest_spec
from tests.train.test_checkpoint import in_session, reference, same
from tests.tasks.test_image_tasks import fake_data  # noqa: F401 - a fixture
from tests.executors.test_reliability import (_alive, _children, _cmd, _finish, _records, _sleepy_spec,
                                         _start_and_wait_for_claims)

REPO = Path(__file__).resolve().parents[2]


def _pubench(*args, env=None, timeout=300, **kw):
    return subprocess.run([sys.executable, "-m", "pubench", *args], env=env or os.environ, capture_output=True,
                          text=True, timeout=timeout, **kw)


def _one_clear_line(err: str) -> bool:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    return len(lines) == 1 and "Traceback" not in err


# ---- SLURM without SLURM ------------------------------------------------------------------
def test_slurm_executor_refuses_where_slurm_is_missing(tmp_registry, tmp_path):
    """submitit's AutoExecutor runs every job at once as local processes when `srun` is
    missing; pubench refuses instead: one line, exit 2, nothing submitted, run or written."""
    tmp_registry(selftest_spec())
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin")}  # no sbatch, no srun (nor anything else)
    (tmp_path / "empty-bin").mkdir()
    out = _pubench("run", "table1-bcl", "--tier", "smoke", "--executor", "slurm", env=env)
    assert out.returncode == 2 and _one_clear_line(out.stderr), (out.stdout, out.stderr)
    assert "SLURM is not available on this machine" in out.stderr and "sbatch and srun" in out.stderr
    logs, results = tmp_registry.root / "logs", tmp_registry.root / "results"
    assert not list(logs.rglob("manifest-*.json")) and not list(results.rglob("*.json"))
    dry = _pubench("run", "table1-bcl", "--tier", "smoke", "--executor", "slurm", "--dry-run", env=env)
    assert dry.returncode == 0 and "SLURM dry run" in dry.stdout, dry.stderr
    assert not list(logs.rglob("manifest-*.json"))
    record_reliability("slurm", "--executor slurm where sbatch/srun are missing", {
        "exit": out.returncode, "submitted": 0, "records": 0, "dry_run_exit": dry.returncode})


def test_the_submitit_executor_is_named_never_detected(tmp_registry, monkeypatch):
    """Even past the CLI's check, the executor never lets submitit pick a cluster."""
    from pubench.executors.slurm import ProfileError, SlurmExecutor

    monkeypatch.setenv("PATH", "/nonexistent")
    ex = SlurmExecutor(tmp_registry.root / "results", tmp_registry.root / "logs", {"timeout_min": 5})
    with pytest.raises(ProfileError, match="SLURM is not available"):
        ex.submit([])


# ---- claims: the holder process decides on its own host ------------------------------
def test_a_stopped_runner_keeps_its_claims(tmp_registry):
    """A runner suspended (SIGSTOP, Ctrl-Z, a paused VM) for longer than the heartbeat's
    limit keeps its claim: a second runner on the host does not run the job, and its line
    names the holder."""
    tmp_registry(_sleepy_spec(3.0))
    folder = tmp_registry.root / "results" / "paper" / "table1-bcl"
    one = ["--only", "r0|x", "--seeds", "1", "--no-progress"]
    first = _start_and_wait_for_claims(_cmd(*one), os.environ, folder, 1)
    try:
        os.kill(first.pid, signal.SIGSTOP)
        [claim] = (folder / ".claims").glob("*.claim")
        old = time.time() - STALE_S - 600  # twenty minutes without a heartbeat
        os.utime(claim, (old, old))
        second = _pubench(*_cmd(*one)[3:])
        assert second.returncode == 0, second.stderr
        assert "1 job(s) running in another runner (claimed)" in second.stdout, second.stdout
        assert f"pid {first.pid}" in second.stdout and "taken over when that process ends" in second.stdout
        assert "0 to run" in second.stdout and not list(folder.glob("*.json"))
    finally:
        os.kill(first.pid, signal.SIGCONT)
    _, err = _finish(first, 120)
    assert first.returncode == 0, err
    recs = _records(folder)
    assert len(recs) == 1 and recs[0]["status"] == "ok"
    record_reliability("claims", "a runner stopped (SIGSTOP) with a 20-min-old heartbeat, a second runner beside it", {
        "claim_kept": True, "jobs_run_twice": 0, "holder_named": True})


def test_a_zombie_holder_is_not_alive(tmp_path):
    """A killed worker that nobody has reaped yet (a zombie: a container's init that never
    reaps) holds no claim: the next runner takes its jobs over (CI found 2 jobs left undone)."""
    import socket
    import subprocess
    import sys

    from pubench.store.claims import ClaimBook, _proc_start

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.time() + 30
    while time.time() < deadline and Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.05)  # exited, not yet waited for: a zombie
    book = ClaimBook(tmp_path / ".claims")
    book.folder.mkdir(parents=True)
    book.path("j").write_text(json.dumps({"host": socket.gethostname(), "pid": child.pid,
                                          "proc_start": _proc_start(child.pid), "claimed_unix": time.time()}))
    try:
        assert book.holder("j") is None
    finally:
        child.wait()


def test_a_reused_pid_is_not_the_holder(tmp_path):
    import socket

    from pubench.store.claims import ClaimBook

    book = ClaimBook(tmp_path / ".claims")
    book.folder.mkdir(parents=True)
    book.path("j").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "proc_start": "1",
                                          "claimed_unix": time.time()}))
    assert book.holder("j") is None  # this pid is alive, but started at another time: another process


# ---- checkpoints name their job ------------------------------------------------------------
def test_a_checkpoint_of_another_job_is_discarded_with_both_ids(tmp_path, one_thread):
    """Seed 0's checkpoint placed in seed 1's folder is not resumed: it is discarded with a
    warning naming both jobs, and the stage starts over (the numbers of a clean run)."""
    ref = reference()
    out, _, session = _in_session_as(tmp_path, "job-seed0", "c0", stop_at=(0, 3))
    assert out is None and session.path("toy stage 0.0").exists()
    with pytest.warns(checkpoint.CheckpointWarning, match="written by job job-seed0, not by this job job-seed1"):
        out, _, session = _in_session_as(tmp_path, "job-seed1", "c1")
    same(out, ref)
    assert session.resumed == []


def test_a_truncated_checkpoint_is_discarded(tmp_path, one_thread):
    ref = reference()
    out, _, session = _in_session_as(tmp_path, "j", "c", stop_at=(0, 3))
    path = session.path("toy stage 0.0")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.warns(checkpoint.CheckpointWarning, match="unreadable"):
        out, _, session = _in_session_as(tmp_path, "j", "c")
    same(out, ref)
    assert session.resumed == [] or session.resumed[0]["stage"] != "toy stage 0.0"


def _in_session_as(folder, job_id, config, stop_at=None):
    import random

    import numpy as np

    from pubench.errors import JobInterrupted
    from pubench.train.context import JobContext
    from tests.train.test_checkpoint import Toy

    torch.manual_seed(0), np.random.seed(0), random.seed(0)
    session = checkpoint.Session(folder, 2, label="toy", job_id=job_id, config_hash=config)
    toy = Toy(stop_at, ctx=JobContext(session=session))
    try:
        return toy.run(), toy, session
    except JobInterrupted:
        return None, toy, session


# ---- crafted files never run code (issue 40) --------------------------------------------
class _Payload:
    """Unpickling this creates a file: what a crafted checkpoint could do instead."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_crafted_checkpoint_never_runs_and_the_job_starts_over(tmp_path, one_thread):
    marker = tmp_path / "pwned"
    folder = tmp_path / "ckpt"
    session = checkpoint.Session(folder, 2)
    folder.mkdir()
    torch.save({"format": checkpoint.FORMAT, "x": _Payload(marker)}, session.path("toy stage 0.0"))
    with pytest.warns(checkpoint.CheckpointWarning, match="discarding checkpoint"):
        out, _, session = in_session(folder, 2)
    assert not marker.exists()
    same(out, reference())


def test_a_crafted_prefix_cache_entry_never_runs(tmp_path, monkeypatch):
    from tests.train.test_prefix_cache import same as same_prefix
    from tests.train.test_prefix_cache import toy_run

    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "1")
    marker = tmp_path / "pwned"
    fresh = toy_run(4, None)
    prefix_cache.root().mkdir(parents=True)
    torch.save({"format": prefix_cache.FORMAT, "key": "k", "epoch": 2, "x": _Payload(marker)},
               prefix_cache.root() / "k.pt")
    with pytest.warns(checkpoint.CheckpointWarning, match="discarding prefix-cache entry"):
        run = toy_run(4, "k")
    assert not marker.exists() and run["start"] == 0 and same_prefix(run, fresh)


def test_a_crafted_checkpoint_in_a_jobs_folder_through_the_worker(tmp_path, fake_data, monkeypatch):  # noqa: F811
    """End to end: the file sits in ``<results>/.checkpoints/<job id>/`` where the next run of
    the job looks; the job completes from scratch with a clean run's numbers."""
    from pubench.executors.worker import execute_job
    from pubench.jobs.plan import Job
    from tests.tasks.test_image_tasks import _params

    job = Job("table1-punce", 1, "smoke", "r", "c", 0, "contrastive_probe", _params(), {"data": 1, "init": 2})
    clean, planted = tmp_path / "clean", tmp_path / "planted"
    assert execute_job(job, clean) == "ok"
    marker = tmp_path / "pwned"
    folder = checkpoint.checkpoint_root(planted) / job.id
    folder.mkdir(parents=True)
    torch.save({"x": _Payload(marker)}, folder / "pretrain_punce.0.pt")
    with pytest.warns(checkpoint.CheckpointWarning, match="unreadable"):
        assert execute_job(job, planted) == "ok"
    assert not marker.exists()
    a, b = (json.loads(ResultStore(r).path(job).read_text()) for r in (clean, planted))
    assert a["metrics"] == b["metrics"] and b["info"]["checkpoint"]["resumed"] == []
    record_reliability("security", "a crafted checkpoint (pickle payload) in a job's checkpoint folder", {
        "payload_ran": marker.exists(), "job": "completed from scratch", "metrics_equal_clean_run": True})


@pytest.mark.parametrize("mask", [0o027, 0o002])
def test_files_pubench_creates_follow_the_umask(tmp_path, mask):
    script = f"""
import os, json, sys
os.umask({mask:#o})
sys.path.insert(0, {str(REPO)!r})
from pathlib import Path
root = Path({str(tmp_path)!r})
from pubench.store.claims import ClaimBook
from pubench.utils.io import atomic_write_json
from pubench.train import checkpoint, encoder_cache
os.environ['PUBENCH_CACHE'] = str(root / 'cache'); os.environ['PUBENCH_ENCODER_CACHE'] = '1'
atomic_write_json(root / 'results/paper/t/rec.json', {{'a': 1}})
ClaimBook(root / 'results/paper/t/.claims').acquire('job')
checkpoint.atomic_save({{'x': 1}}, root / 'results/.checkpoints/job/stage.pt')
import torch
encoder_cache.save('k', {{'w': torch.zeros(2)}}, {{}}, checkpoint.global_rng_state(), True)
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    made = [p for p in tmp_path.rglob("*")]
    assert len([p for p in made if p.is_file()]) == 4
    for p in made:
        mode = p.stat().st_mode & 0o777
        assert mode & mask == 0, (p, oct(mode))
        assert mode == (0o777 if p.is_dir() else 0o666) & ~mask, (p, oct(mode))
    record_reliability("security", f"file modes under umask {mask:03o}", {
        "files": 4, "wider_than_umask": 0, "world_writable": 0})


# ---- --jobs N is bounded by the core slots ----------------------------------------------
def test_jobs_64_holds_no_more_workers_than_core_slots(tmp_registry, tmp_path):
    tmp_registry(_sleepy_spec(0.5))
    cores = len(os.sched_getaffinity(0))
    env = {**os.environ, "PUBENCH_CORE_SLOTS": str(tmp_path / "slots")}
    proc = subprocess.Popen(_cmd("--jobs", "64", "--no-progress"), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peak_procs, peak_rss = 0, 0
    while proc.poll() is None:
        try:  # the runner's own processes (workers, resource tracker); their git/provenance children are not
            kids = {int(k) for k in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()}
        except OSError:
            kids = set()
        peak_procs = max(peak_procs, len(kids))
        rss = 0
        for k in _children(proc.pid) | {proc.pid}:
            try:
                rss += int(next(x for x in Path(f"/proc/{k}/status").read_text().splitlines()
                                if x.startswith("VmRSS:")).split()[1])
            except (OSError, StopIteration):
                pass
        peak_rss = max(peak_rss, rss)
        time.sleep(0.1)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert f"--jobs 64: {min(cores, 24)} worker process(es)" in err or cores >= 24, err
    assert peak_procs <= cores + 1, peak_procs  # the workers and multiprocessing's resource tracker
    assert len(_records(tmp_registry.root / "results" / "paper" / "table1-bcl")) == 24
    record_reliability("runners", "--jobs 64 on this machine, 24 jobs", {
        "cores": cores, "peak_child_processes": peak_procs, "peak_rss_mb": round(peak_rss / 1024)})


# ---- a full disk --------------------------------------------------------------------------
def test_a_record_write_error_stops_the_run_with_one_line(tmp_registry, monkeypatch, capsys):
    """Any OSError writing a record (disk full, read-only, quota): one line naming the
    folder and the system's reason, a non-zero exit; the claim is released."""
    from pubench import cli
    from pubench.store import store as store_module

    tmp_registry(selftest_spec())
    monkeypatch.setattr(store_module, "atomic_write_json", lambda path, obj: (_ for _ in ()).throw(
        StorageError.from_os(OSError(errno.ENOSPC, "No space left on device"), Path(path).parent)))
    monkeypatch.setenv("PUBENCH_NO_REEXEC", "1")
    code = cli.main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "No space left on device (ENOSPC)" in err and "smoke/table1-bcl" in err, err
    assert "Traceback" not in err
    assert not list((tmp_registry.root / "results").rglob("*.claim"))


def test_a_claim_that_cannot_be_written_leaves_nothing(tmp_path, monkeypatch):
    from pubench.store import claims

    book = claims.ClaimBook(tmp_path / ".claims")

    def full(obj, f):
        f.write("{")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(claims.json, "dump", full)
    with pytest.raises(StorageError, match=r"cannot write in .*\.claims: No space left on device \(ENOSPC\)"):
        book.acquire("j")
    assert not list(book.folder.glob("*"))


def test_a_claim_appears_whole(tmp_path, monkeypatch):
    """A runner stopped (or slow) while it writes its claim must not leave a half-written claim
    that another runner would take for stale and take over (CI saw a job run twice: the test
    above stopped the runner between the claim's creation and its content)."""
    from pubench.store import claims

    book = claims.ClaimBook(tmp_path / ".claims")
    visible_while_written = []
    real_dump = claims.json.dump

    def dump(obj, f):
        visible_while_written.append(book.path("j").exists())
        real_dump(obj, f)

    monkeypatch.setattr(claims.json, "dump", dump)
    assert book.acquire("j") is not None and visible_while_written == [False]
    assert book.read("j")["pid"] == os.getpid() and book.acquire("j") is None  # held, by a live process
    assert [p.name for p in book.folder.iterdir()] == ["j.claim"]  # no temporary file left
    # a filesystem without hard links: created with O_EXCL, then written
    monkeypatch.setattr(claims.os, "link", lambda a, b: (_ for _ in ()).throw(OSError(errno.EPERM, "no links")))
    assert book.acquire("k") is not None and visible_while_written[-1] is True
    assert book.read("k")["pid"] == os.getpid() and book.acquire("k") is None
    assert sorted(p.name for p in book.folder.iterdir()) == ["j.claim", "k.claim"]


def test_a_checkpoint_write_error_names_the_folder(tmp_path, monkeypatch):
    from pubench.utils import io

    real = io.os.fsync
    monkeypatch.setattr(io.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.EDQUOT, "Disk quota exceeded")))
    with pytest.raises(StorageError, match=r"Disk quota exceeded \(EDQUOT\)") as e:
        checkpoint.atomic_save({"x": torch.zeros(3)}, tmp_path / "ck" / "s.pt")
    monkeypatch.setattr(io.os, "fsync", real)
    assert str(tmp_path / "ck") in str(e.value) and not list((tmp_path / "ck").iterdir())


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True).returncode == 0


def test_a_full_disk_stops_the_run_and_a_rerun_loses_nothing(tmp_registry, tmp_path):
    """On a real tmpfs that fills up: `run` stops with one line (folder, errno text) and a
    non-zero exit; after the space is freed a rerun finishes every job once."""
    store = tmp_path / "tiny"
    if not _mount_tmpfs(store, "64k"):
        pytest.skip("needs root to mount a small tmpfs")
    try:
        tmp_registry(_sleepy_spec(0.0))
        env = {**os.environ, "PUBENCH_RESULTS": str(store), "PUBENCH_CORE_SLOTS": str(tmp_path / "slots")}
        full = subprocess.run(_cmd("--no-progress"), env=env, capture_output=True, text=True, timeout=300)
        assert full.returncode == 1, (full.stdout, full.stderr)
        assert _one_clear_line(full.stderr) and "No space left on device (ENOSPC)" in full.stderr, full.stderr
        assert str(store) in full.stderr
        before = {p.name: p.read_bytes() for p in store.rglob("*.json")}
        assert 0 < len(before) < 24
        assert subprocess.run(["mount", "-o", "remount,size=16m", str(store)]).returncode == 0
        again = subprocess.run(_cmd("--no-progress"), env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        folder = store / "paper" / "table1-bcl"
        recs = _records(folder)
        ids = [r["job"]["id"] for r in recs]
        assert len(ids) == 24 and len(set(ids)) == 24 and all(r["status"] == "ok" for r in recs)
        assert all((folder / n).read_bytes() == b for n, b in before.items() if (folder / n).exists())
        assert not list(store.rglob(".tmp-*")) and not list(store.rglob("*.claim"))
        record_reliability("disk", "a 64 KB tmpfs store fills up mid-run, then is enlarged", {
            "exit": full.returncode, "one_line": True, "kept_before": len(before), "after_rerun": len(ids),
            "run_twice": 0})
    finally:
        subprocess.run(["umount", "-l", str(store)])


# ---- SIGHUP, long input --------------------------------------------------------------------
def test_sighup_is_treated_as_sigterm(tmp_registry):
    tmp_registry(_sleepy_spec(20.0))
    folder = tmp_registry.root / "results" / "paper" / "table1-bcl"
    proc = _start_and_wait_for_claims(_cmd("--jobs", "2", "--no-progress"), os.environ, folder, 2)
    kids = _children(proc.pid)
    time.sleep(0.5)
    proc.send_signal(signal.SIGHUP)
    out, err = _finish(proc, 60)
    assert proc.returncode == 128 + signal.SIGHUP and "interrupted (SIGHUP)" in err and "Traceback" not in err, err
    failed = [json.loads(p.read_text()) for p in folder.glob("*.failed.json")]
    assert len(failed) == 2 and all("interrupted by" in f["error"]["message"] for f in failed)
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.1)
    assert not [k for k in kids if _alive(k)] and not list((folder / ".claims").glob("*.claim"))
    record_reliability("signals", "SIGHUP of a --jobs 2 runner (a closed terminal)", {
        "exit": proc.returncode, "in_flight_recorded_interrupted": len(failed), "left": 0})


def _hup_group(ignored: bool, jobs: int, tmp_registry, sleep: float = 0.3) -> tuple[subprocess.Popen, list[int], Path]:
    """A runner in its own process group (as a shell's job), started with SIGHUP ignored as
    ``nohup`` starts it or with the default; SIGHUP to the whole group once its jobs run, as a
    closed terminal sends it. Returns the runner, its children and the store folder."""
    tmp_registry(_sleepy_spec(sleep))
    folder = tmp_registry.root / "results" / "paper" / "table1-bcl"

    def dispositions() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_IGN if ignored else signal.SIG_DFL)

    proc = subprocess.Popen(_cmd("--jobs", str(jobs), "--no-progress"), env=os.environ, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=dispositions)
    deadline = time.time() + 120
    while len(list((folder / ".claims").glob("*.claim"))) < jobs and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the runner ended before the signal could reach it mid-run"
    kids = list(_children(proc.pid))
    os.killpg(proc.pid, signal.SIGHUP)
    return proc, kids, folder


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_ignored_sighup_stays_ignored(tmp_registry, jobs):
    """`nohup pubench run ... &`, then the terminal closes: SIGHUP to the job's process group
    (twice) reaches the runner and its workers, which keep it ignored and finish every job."""
    proc, kids, folder = _hup_group(True, jobs, tmp_registry)
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGHUP)
    out, err = _finish(proc, 180)
    assert proc.returncode == 0 and "interrupted" not in err and "Traceback" not in err, err
    recs = _records(folder)
    assert len(recs) == 24 and all(r["status"] == "ok" for r in recs), [r["status"] for r in recs]
    assert not list(folder.glob("*.failed.json")) and not list((folder / ".claims").glob("*.claim"))
    deadline = time.time() + 5  # the resource tracker ends once it sees its runner's pipe close
    while time.time() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.1)
    assert not [k for k in kids if _alive(k)]
    record_reliability("signals", f"SIGHUP to the process group of a nohup'd --jobs {jobs} runner (a closed "
                                  "terminal)", {"exit": proc.returncode, "records": len(recs), "interrupted": 0})


def test_sighup_to_the_group_stops_a_runner_that_did_not_ignore_it(tmp_registry):
    """The same SIGHUP without nohup: the runner and its workers stop cleanly, as for SIGTERM. Jobs of
    2 s, so that a loaded machine cannot finish all 24 before the signal (CI once did with 0.3 s)."""
    proc, kids, folder = _hup_group(False, 2, tmp_registry, sleep=2.0)
    out, err = _finish(proc, 60)
    assert proc.returncode == 128 + signal.SIGHUP and "interrupted (SIGHUP)" in err and "Traceback" not in err, err
    failed = [json.loads(p.read_text()) for p in folder.glob("*.failed.json")]
    assert len(failed) == 2 and all("interrupted by" in f["error"]["message"] for f in failed)
    assert 2 + len(failed) + len([p for p in folder.glob("*.json") if ".failed" not in p.name]) <= 2 + 24
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.1)
    assert not [k for k in kids if _alive(k)] and not list((folder / ".claims").glob("*.claim"))
    record_reliability("signals", "SIGHUP to the process group of a --jobs 2 runner without nohup", {
        "exit": proc.returncode, "in_flight_recorded_interrupted": len(failed), "left": 0, "tracebacks": 0})


def test_long_user_input_is_shortened_in_messages(tmp_registry):
    tmp_registry(selftest_spec())
    out = _pubench("run", "table1-bcl", "--tier", "smoke", "--only", "x" * 100_000)
    assert out.returncode == 2 and _one_clear_line(out.stderr)
    assert len(out.stderr) < 1500 and "more characters" in out.stderr


def test_prune_removes_only_stale_records(tmp_registry):
    """After a spec's version or a cell's config changes, its old records are stale: `prune`
    lists them (--dry-run) and removes them, and nothing current."""
    path = tmp_registry(selftest_spec())
    assert _pubench("run", "table1-bcl", "--tier", "smoke", "--no-progress").returncode == 0
    folder = tmp_registry.root / "results" / "smoke" / "table1-bcl"
    old = sorted(p.name for p in folder.glob("*.json"))
    path.write_text(path.read_text().replace("version: 1", "version: 2"))
    assert _pubench("run", "table1-bcl", "--tier", "smoke", "--no-progress").returncode == 0
    dry = _pubench("prune", "--dry-run")
    assert dry.returncode == 0 and f"{len(old)} stale record(s): {len(old)} spec version 1 (now 2)" in dry.stdout
    assert len(list(folder.glob("*.json"))) == 2 * len(old)
    out = _pubench("prune", "table1-bcl", "--tier", "smoke")
    assert out.returncode == 0 and f"removed {len(old)} stale record(s)" in out.stdout
    left = sorted(p.name for p in folder.glob("*.json"))
    assert len(left) == len(old) and not set(left) & set(old)
    assert "no stale records" in _pubench("prune").stdout
