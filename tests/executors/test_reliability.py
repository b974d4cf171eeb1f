"""Runners that share a store or a machine, kills, signals, claims and core slots.

The figures of the README's "Reliability" section come from these tests (printed at the
end of the session by tests/conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pubench.executors.cores import hold_cores
from pubench.store import ResultStore
from pubench.store.claims import STALE_S, ClaimBook
from tests.conftest import record_reliability, selftest_spec

ROWS = [f"r{i}" for i in range(6)]


def _sleepy_spec(sleep: float) -> str:
    text = selftest_spec(rows=ROWS).replace("params: {value: 0.0}", f"params: {{value: 0.0, sleep: {sleep}}}")
    return text.replace("          rows:\n            r0: {value: 1.0}\n            r1: {value: 2.0}\n", "") \
               .replace("  rows:\n    r0: {value: 1.0}\n    r1: {value: 2.0}\n", "")


def _cmd(*extra: str) -> list[str]:
    return [sys.executable, "-m", "pubench", "run", "table1-bcl", "--tier", "paper", "--seeds", "2", *extra]


def _records(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in folder.glob("*.json")]


def _children(pid: int) -> set[int]:
    """Every descendant of ``pid`` (from /proc)."""
    out, frontier = set(), [pid]
    while frontier:
        p = frontier.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        for k in map(int, kids):
            if k not in out:
                out.add(k)
                frontier.append(k)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its dead parent's reaper) is not running
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _max_overlap(records: list[dict]) -> int:
    events = sorted([(r["info"]["started_unix"], 1) for r in records] + [(r["info"]["ended_unix"], -1) for r in records])
    cur = best = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


def test_two_runners_do_every_job_once_and_share_the_cores(tmp_registry, tmp_path):
    tmp_registry(_sleepy_spec(0.3))
    slots = tmp_path / "slots"
    env = {**os.environ, "PUBENCH_CORE_SLOTS": str(slots)}
    t0 = time.time()
    procs = [subprocess.Popen(_cmd("--jobs", "2"), env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    folder = tmp_registry.root / "results" / "paper" / "table1-bcl"
    recs = _records(folder)
    ids = [r["job"]["id"] for r in recs]
    assert len(ids) == 24 and len(set(ids)) == 24
    ran = sum(int(line.split()[1]) for o in outs for line in o.splitlines() if line.startswith("pubench: ") and " ok," in line)
    assert ran == 24  # no job ran twice: the other runner skipped what was claimed or done
    overlap = _max_overlap(recs)
    cores = len(os.sched_getaffinity(0))
    assert overlap <= cores  # 4 workers on the machine, never more jobs at once than cores
    record_reliability("runners", "two runners, --jobs 2 each, 24 jobs", {
        "jobs_run": ran, "jobs_done_twice": ran - 24, "max_jobs_at_once": overlap, "cores": cores,
        "seconds": round(time.time() - t0, 1)})


def _default_signals() -> None:
    """A process started with SIGINT or SIGHUP ignored keeps it ignored (Python installs no
    KeyboardInterrupt handler then, and ``pubench run`` honours both, as nohup'd runs should);
    a test run from such a process (a background job of a shell without job control, or a
    suite started under ``nohup``, as CI may start it) must give its runner the default
    dispositions back. Under nohup, a runner that kept SIGHUP ignored outlived its test and held
    the machine's job slots, and the next tests' workers never claimed their jobs."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _finish(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """``proc.communicate(timeout=...)``, but a runner that outlives the timeout is killed before
    the test fails: left running, it would hold the machine's core slots
    (pubench/executors/cores.py) and starve the tests after it."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def _start_and_wait_for_claims(cmd, env, folder: Path, n: int, timeout: float = 120, poll: float = 0.05):
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_signals)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if len(list((folder / ".claims").glob("*.claim"))) >= n:
            return proc
        time.sleep(poll)
    proc.kill()
    raise AssertionError("workers never claimed their jobs")


def test_sigkill_of_a_parallel_runner_leaves_no_process_and_loses_nothing(tmp_registry):
    tmp_registry(_sleepy_spec(1.5))
    folder = tmp_registry.root / "results" / "paper" / "table1-bcl"
    proc = _start_and_wait_for_claims(_cmd("--jobs", "2", "--no-progress"), os.environ, folder, 2)
    time.sleep(0.5)
    kids = _children(proc.pid)
    assert len(kids) >= 2
    done_before = {p.name: p.read_text() for p in folder.glob("*.json")}
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.1)
    left = [k for k in kids if _alive(k)]
    assert not left, f"processes left after 5 s: {left}"
    subprocess.run(_cmd("--jobs", "2"), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    recs = {p.name: p.read_text() for p in folder.glob("*.json")}
    assert len(recs) == 24 and all(recs[k] == v for k, v in done_before.items())
    assert not list((folder / ".claims").glob("*.claim"))  # stale claims of the dead workers were taken over
    record_reliability("kill", "kill -9 of a --jobs 2 runner", {
        "workers": len(kids), "left_after_5s": len(left), "jobs_lost": 24 - len(recs), "finished_kept": len(done_before)})


def test_sigterm_stops_cleanly_and_records_jobs_in_flight(tmp_registry):
    tmp_registry(_sleepy_spec(20.0))
    folder = tmp_registry.root / "results" / "paper" / "table1-bcl"
    proc = _start_and_wait_for_claims(_cmd("--jobs", "2", "--no-progress"), os.environ, folder, 2)
    kids = _children(proc.pid)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = _finish(proc, 60)
    assert proc.returncode == 143, err
    assert "interrupted (SIGTERM)" in err and "Traceback" not in err
    failed = [json.loads(p.read_text()) for p in folder.glob("*.failed.json")]
    assert len(failed) == 2 and all("interrupted by SIGTERM" in f["error"]["message"] for f in failed)
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.1)
    assert not [k for k in kids if _alive(k)]
    assert not list((folder / ".claims").glob("*.claim"))
    record_reliability("signals", "SIGTERM of a --jobs 2 runner", {
        "exit": proc.returncode, "in_flight_recorded_interrupted": len(failed), "left": 0})


@pytest.mark.parametrize("delay", [0.3, 0.0], ids=["while-running", "as-the-claim-appears"])
def test_sigint_in_process_records_the_job_as_interrupted(tmp_registry, delay):
    """Also when SIGINT lands the moment the claim file exists (before the job starts):
    the job is recorded as interrupted and its claim released, never left behind."""
    tmp_registry(_sleepy_spec(20.0))
    folder = tmp_registry.root / "results" / "paper" / "table1-bcl"
    proc = _start_and_wait_for_claims(_cmd("--no-progress"), os.environ, folder, 1, poll=0.001)
    if delay:  # "while running": the job's own stop handlers are in place (on a loaded machine that takes a while)
        deadline = time.time() + 60
        while time.time() < deadline and not _catches(proc.pid, signal.SIGUSR2):
            time.sleep(0.01)
        assert _catches(proc.pid, signal.SIGUSR2), "the runner never installed the job's stop handlers"
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = _finish(proc, 60)
    assert proc.returncode == 130 and "Traceback" not in err
    failed = [json.loads(p.read_text()) for p in folder.glob("*.failed.json")]
    assert len(failed) == 1 and "interrupted by SIGINT" in failed[0]["error"]["message"]
    assert not list((folder / ".claims").glob("*.claim"))


# ---- claims ----------------------------------------------------------------------------
def test_claim_is_exclusive_and_released(tmp_path):
    book = ClaimBook(tmp_path / ".claims")
    first = book.acquire("job1")
    assert first is not None and book.acquire("job1") is None  # a live claimer (this process) holds it
    assert book.live_ids() == {"job1"}
    first.release()
    assert book.live_ids() == set() and book.acquire("job1") is not None


def test_claim_of_a_dead_process_is_taken_over(tmp_path):
    book = ClaimBook(tmp_path / ".claims")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    book.folder.mkdir(parents=True)
    import socket

    book.path("job1").write_text(json.dumps({"host": socket.gethostname(), "pid": pid, "proc_start": "1",
                                             "claimed_unix": time.time()}))
    assert book.holder("job1") is None
    assert book.acquire("job1") is not None


def test_claim_from_another_host_is_live_until_its_heartbeat_stops(tmp_path):
    book = ClaimBook(tmp_path / ".claims")
    book.folder.mkdir(parents=True)
    p = book.path("job1")
    p.write_text(json.dumps({"host": "node-elsewhere", "pid": 1, "claimed_unix": time.time()}))
    assert book.acquire("job1") is None  # we cannot see that process: its heartbeat says it lives
    old = time.time() - STALE_S - 5
    os.utime(p, (old, old))
    assert book.acquire("job1") is not None


def test_heartbeat_keeps_a_claim_fresh(tmp_path):
    book = ClaimBook(tmp_path / ".claims")
    claim = book.acquire("job1")
    old = time.time() - 100
    os.utime(claim.path, (old, old))
    claim.start_heartbeat(every=0.05)
    time.sleep(0.3)
    assert time.time() - claim.path.stat().st_mtime < 5
    claim.release()


def test_a_takeover_race_has_one_winner(tmp_path):
    book = ClaimBook(tmp_path / ".claims")
    book.folder.mkdir(parents=True)
    book.path("job1").write_text(json.dumps({"host": "gone", "pid": 1, "claimed_unix": 0.0}))
    old = time.time() - STALE_S - 5
    os.utime(book.path("job1"), (old, old))
    wins = []
    barrier = threading.Barrier(8)

    def take():
        barrier.wait()
        wins.append(book.acquire("job1") is not None)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(wins) == 1


def test_worker_skips_a_job_claimed_by_a_live_runner(tmp_registry):
    from pubench.executors.worker import SKIPPED, execute_job
    from pubench.jobs import expand
    from pubench.registry import get_spec

    tmp_registry(selftest_spec())
    job = expand(get_spec("table1-bcl"), "smoke").jobs[0]
    store = ResultStore(tmp_registry.root / "results")
    held = store.claims("smoke", "table1-bcl").acquire(job.id)
    assert execute_job(job, store.root) == SKIPPED and not store.is_done(job)
    held.release()
    assert execute_job(job, store.root) == "ok" and store.is_done(job)


# ---- core slots --------------------------------------------------------------------------
def test_core_slots_never_exceed_the_cores(tmp_path):
    running, peak, lock = [0], [0], threading.Lock()

    def job():
        with hold_cores(1, folder=tmp_path, total=2, poll_s=0.01):
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.1)
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=job) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 2


def _listdir(folder: Path) -> list[str]:
    return os.listdir(folder) if folder.is_dir() else []


def test_core_slots_serve_waiters_first_come_first_served(tmp_path):
    """A job that waits for a core gets it before any job that started waiting later (a short
    `verify` beside a `--jobs 2` run must not lose every race to the run's next job)."""
    order, lock = [], threading.Lock()

    def waiter(name):
        with hold_cores(1, folder=tmp_path, total=2, poll_s=0.005):
            with lock:
                order.append(name)
            time.sleep(0.05)

    with hold_cores(2, folder=tmp_path, total=2):
        threads = []
        for name in "abcdef":
            threads.append(threading.Thread(target=waiter, args=(name,)))
            threads[-1].start()
            deadline = time.time() + 10  # the next waiter arrives once this one holds a ticket
            while len([n for n in _listdir(tmp_path / "queue") if not n.startswith(".")]) < len(threads):
                assert time.time() < deadline
                time.sleep(0.001)
    for t in threads:
        t.join()
    # two cores: a waiter is served at most one place after its turn (the two freed slots race)
    assert sorted(order) == list("abcdef")
    assert all(abs(order.index(n) - i) <= 1 for i, n in enumerate("abcdef")), order
    assert not [n for n in os.listdir(tmp_path / "queue")]  # tickets removed


def test_a_dead_waiters_ticket_does_not_block_the_queue(tmp_path):
    (tmp_path / "queue").mkdir()
    (tmp_path / "queue" / f"{0:020d}-00000001-deadbeef").write_text("")  # older, nobody holds it
    with hold_cores(1, folder=tmp_path, total=2, poll_s=0.005) as n:
        assert n == 1
    assert not os.listdir(tmp_path / "queue")


def test_core_slots_off(monkeypatch, tmp_path):
    monkeypatch.setenv("PUBENCH_CORE_SLOTS", "off")
    with hold_cores(4) as n:
        assert n == 0


@pytest.mark.parametrize("threads,expect", [(1, 1), (2, 2), (9, 2)])
def test_a_job_holds_as_many_slots_as_threads(tmp_path, threads, expect):
    with hold_cores(threads, folder=tmp_path, total=2) as n:
        assert n == expect


def _catches(pid: int, signum: int) -> bool:
    """Whether ``pid`` has installed a handler for ``signum`` (SigCgt in /proc)."""
    try:
        line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)


def test_sigterm_while_verify_waits_for_a_core_is_one_line(tmp_registry, tmp_path):
    """A command that runs jobs outside `run` (here `verify`, waiting for a core slot another
    process holds) stops on SIGTERM with one line and 128 + 15, never a traceback."""
    tmp_registry(selftest_spec())
    slots = tmp_path / "slots"
    env = {**os.environ, "PUBENCH_CORE_SLOTS": str(slots)}
    subprocess.run(_cmd("--seeds", "1"), env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with hold_cores(2, folder=slots, total=2, poll_s=0.01):
        proc = subprocess.Popen([sys.executable, "-m", "pubench", "verify", "table1-bcl", "--tier", "paper",
                                 "--sample", "1", "--no-progress"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and not _catches(proc.pid, signal.SIGTERM):
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = _finish(proc, 60)
    assert proc.returncode == 128 + signal.SIGTERM, (out, err)
    assert "Traceback" not in err and err.strip().startswith("pubench: interrupted (SIGTERM)"), err
