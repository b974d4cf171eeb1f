"""Running a campaign's jobs on one device inside a time budget.

``n`` worker processes of the local executor (:func:`pubench.executors.local._worker_loop`:
each claims its job, runs it through :func:`~pubench.executors.worker.execute_job` and writes
its record by rename; torch loads once per worker). A worker is handed a job only when it is
idle and the job fits what is left of the budget::

    now + projected_s x slowdown + START_S <= stop_at

``slowdown``: how much longer each of ``n`` packed jobs takes than alone
(:mod:`pubench.preflight.packing`); ``START_S``: a job's process start-up, first CUDA use and
data loading besides its projection; ``stop_at``: the budget less a reserve (:class:`Budget`)
in which running jobs stop and the records are bundled. Jobs go in queue order; a job that
does not fit lets a later one that does take the worker (so the end of a window fills with
short jobs), and a job without a projection is never started.

At ``stop_at`` (or at SIGINT / SIGTERM / SIGHUP to the campaign; SIGHUP not when it was
ignored at the start, as under ``nohup``) every worker gets SIGTERM:
a training job finishes its epoch, writes its checkpoint and records itself interrupted (the
runner's interruption handling), an idle worker ends. Half the grace later a second SIGTERM
stops a job at once (still recorded), at the end of the grace a worker left is killed (its
job unrecorded). A record is whole or absent, never half-written; the next window reruns
what did not finish.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import time
from dataclasses import dataclass, field
from typing import Callable

#: seconds a job takes besides its projection: its worker's start (torch, the first CUDA use,
#: about 6 s in gpu-check's first job on the H200 against 2 s for the same job again) and its
#: data loading
START_S = 15.0
#: the reserve at a budget's end: this share of it, within these bounds (seconds)
RESERVE_SHARE, RESERVE_MIN_S, RESERVE_MAX_S = 0.1, 4.0, 60.0


@dataclass(frozen=True)
class Budget:
    """``total_s`` from ``started`` (``time.time()``); jobs must end by :attr:`stop_at`."""

    started: float
    total_s: float

    @property
    def reserve_s(self) -> float:
        return min(RESERVE_MAX_S, max(RESERVE_MIN_S, RESERVE_SHARE * self.total_s))

    @property
    def stop_at(self) -> float:
        return self.started + self.total_s - self.reserve_s

    @property
    def grace_s(self) -> float:
        """How long stopping jobs get to record themselves (the rest of the reserve bundles)."""
        return 0.6 * self.reserve_s

    def left(self) -> float:
        return self.stop_at - time.time()


@dataclass
class Ran:
    """What became of one started job."""

    index: int
    status: str              # ok | failed | interrupted | killed | skipped
    started: float
    ended: float

    @property
    def wall_s(self) -> float:
        return self.ended - self.started


@dataclass
class Outcome:
    ran: list[Ran] = field(default_factory=list)
    not_started: dict[int, str] = field(default_factory=dict)  # index -> why
    stopped: str | None = None  # why the campaign stopped early (the budget, a signal)


def run(pending: list, n: int, budget: Budget, results_root: str, slowdown: float,
        say: Callable[[str], None] = print, checkpoint_every: int | None = None,
        on_end: Callable[[Outcome], None] | None = None) -> Outcome:
    """Run ``pending`` (:class:`pubench.campaign.plan.Planned`, queue order) ``n`` at once;
    ``on_end(outcome)`` after each job that ends (the window rewrites its archive there, so a
    command stopped from outside still returns what finished)."""
    from pubench.errors import StorageError
    from pubench.executors.local import _worker_loop
    from pubench.executors.worker import stop_signals
    from pubench.numerics import Numerics
    from pubench.utils.threads import stop_signals_blocked

    out = Outcome()
    todo = list(range(len(pending)))
    for i in todo:
        if pending[i].projected_s is None:
            out.not_started[i] = "no projection (no record, preflight figure or queue figure for its cell)"
    todo = [i for i in todo if i not in out.not_started]
    if not todo:
        return out
    ctx = mp.get_context("spawn")  # fork after torch has threads is unsafe
    with stop_signals_blocked():  # the resource tracker the first queue starts must not take a stop signal
        tasks, results = ctx.Queue(), ctx.Queue()
    workers: list = []
    running: dict[int, tuple[int | None, float]] = {}  # job index -> (worker pid, handed out at)
    asked: list[int] = []

    def start_worker():
        p = ctx.Process(target=_worker_loop, daemon=True,
                        args=(os.getpid(), tasks, results, results_root, False, checkpoint_every))
        p.start()
        workers.append(p)

    def on_signal(signum, frame):  # noqa: ARG001
        asked.append(signum)

    # SIGHUP stays ignored where it was (nohup): the window then runs to its budget's end
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, *stop_signals(signal.SIGTERM, signal.SIGHUP))}
    try:
        for _ in range(min(n, len(todo))):
            start_worker()
        idle = len(workers)
        while True:
            if asked:
                out.stopped = f"stopped by {signal.Signals(asked[0]).name}"
                break
            if time.time() >= budget.stop_at and running:
                out.stopped = "the budget's end"
                break
            while idle and todo:
                i = _next_fitting(pending, todo, budget, slowdown)
                if i is None:
                    break
                todo.remove(i)
                job = pending[i].job
                tasks.put((i, job.to_dict(), Numerics.from_dict(job.numerics).threads))
                running[i] = (None, time.time())
                idle -= 1
            if not running:
                break
            try:
                kind, i, value = results.get(timeout=0.5)
            except queue.Empty:
                idle += _replace_dead(workers, running, out, start_worker, bool(todo), say)
                continue
            if kind == "start":
                running[i] = (value, running[i][1])
            elif kind == "fatal":
                raise StorageError(None, value)
            else:
                _, began = running.pop(i)
                out.ran.append(Ran(i, value, began, time.time()))
                idle += 1
                say(f"  [{len(out.ran)}] {value:11s} {pending[i].job.name} ({time.time() - began:.0f} s, projected "
                    f"{pending[i].projected_s * slowdown:.0f} s packed; {budget.left():.0f} s left)")
                if on_end is not None:
                    on_end(out)
        _stop(workers, tasks, running, results, out, budget, pending, results_root, say)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        tasks.cancel_join_thread()
        results.cancel_join_thread()
    for i in todo:
        out.not_started.setdefault(i, "did not fit the budget left")
    return out


def _next_fitting(pending: list, todo: list[int], budget: Budget, slowdown: float) -> int | None:
    left = budget.left()
    for i in todo:
        if pending[i].projected_s * slowdown + START_S <= left:
            return i
    return None


def _replace_dead(workers: list, running: dict, out: Outcome, start_worker, more: bool, say) -> int:
    """Workers that died (killed for memory, a crashed driver) fail their job and are replaced
    while there is more to run; the count of workers that became idle."""
    freed = 0
    for p in list(workers):
        if p.is_alive() or p.exitcode == 0:
            continue
        workers.remove(p)
        lost = [i for i, (pid, _) in running.items() if pid == p.pid]
        for i in lost:
            _, began = running.pop(i)
            out.ran.append(Ran(i, "failed", began, time.time()))
            say(f"  worker {p.pid} died (exit code {p.exitcode}) running job {i}; the next window retries it")
        if more:
            start_worker()
            freed += 1
    return freed


def _stop(workers: list, tasks, running: dict, results, out: Outcome, budget: Budget, pending: list,
          results_root: str, say) -> None:
    """End the workers: idle ones take the sentinel; at a stop, running jobs get SIGTERM (record
    and checkpoint), a second one half the grace later, and are killed at its end. What became
    of a job whose worker ended without a word (it exits as soon as its record is written) is
    read from the store."""
    for _ in workers:
        tasks.put(None)
    if running:
        say(f"campaign: stopping {len(running)} running job(s) ({out.stopped}): SIGTERM, each records itself "
            "interrupted after its epoch's checkpoint")
        for p in workers:
            if p.is_alive():
                os.kill(p.pid, signal.SIGTERM)
    deadline, second = time.time() + budget.grace_s, time.time() + budget.grace_s / 2
    sent_second = False
    while running and time.time() < deadline:
        try:
            kind, i, value = results.get(timeout=0.2)
        except queue.Empty:
            if not sent_second and time.time() >= second:
                sent_second = True
                for p in workers:
                    if p.is_alive():
                        os.kill(p.pid, signal.SIGTERM)
            if not any(p.is_alive() for p in workers):
                break
            continue
        if kind == "start":
            running[i] = (value, running[i][1])
        elif kind == "done":
            _, began = running.pop(i)
            out.ran.append(Ran(i, value, began, time.time()))
            say(f"  [{len(out.ran)}] {value:11s} {pending[i].job.name} ({time.time() - began:.0f} s)")
    for p in workers:
        p.join(max(0.0, deadline - time.time()) if running else 1.0)
        if p.is_alive():  # an idle worker holds no claim: no need to wait for its interpreter's teardown
            p.kill()
            p.join(5.0)
    from pubench.store import ResultStore

    store = ResultStore(results_root)
    for i, (pid, began) in running.items():
        job = pending[i].job
        if pid is None:  # handed out, never taken by a worker
            out.not_started[i] = "stopped before a worker took it"
        elif store.is_done(job):
            out.ran.append(Ran(i, "ok", began, time.time()))
        elif store.path(job, failed=True).is_file() and store.path(job, failed=True).stat().st_mtime >= began:
            out.ran.append(Ran(i, "interrupted", began, time.time()))
        else:
            out.ran.append(Ran(i, "killed", began, time.time()))


def simulate(pending: list, n: int, left_s: float, slowdown: float) -> list[int]:
    """The jobs :func:`run` would start if every job took its projection x ``slowdown`` (+
    :data:`START_S`): ``n`` slots, each given the first job in queue order that fits."""
    slots = [0.0] * n
    todo = [i for i, p in enumerate(pending) if p.projected_s is not None]
    started = []
    while todo and min(slots) < float("inf"):
        k = slots.index(min(slots))
        cost = {i: pending[i].projected_s * slowdown + START_S for i in todo}
        fit = next((i for i in todo if slots[k] + cost[i] <= left_s), None)
        if fit is None:
            slots[k] = float("inf")
            continue
        todo.remove(fit)
        slots[k] += cost[fit]
        started.append(fit)
    return started


def best_count(pending: list, most: int, left_s: float, slowdown: Callable[[int], float]) -> tuple[int, float]:
    """The number of jobs at once, up to ``most``, under which :func:`simulate` does the most of
    the queue's first entry, then of its second, ... (job time alone per entry, compared in queue
    order: claims complete soonest), and the job time it completes. Packing more jobs gains
    throughput but slows each, so a short window may fit fewer of the first entries' jobs."""
    best, best_score = (1, 0.0), None
    for n in range(1, most + 1):
        started = simulate(pending, n, left_s, slowdown(n))
        per_entry: dict[int, float] = {}
        for i in started:
            per_entry[pending[i].entry] = per_entry.get(pending[i].entry, 0.0) + pending[i].projected_s
        score = [round(per_entry.get(e, 0.0), 3) for e in range(max(per_entry, default=-1) + 1)]
        score += [0.0] * (max(0, len(best_score or []) - len(score)))
        if best_score is None or score > best_score[:len(score)] + [0.0] * max(0, len(score) - len(best_score)):
            best, best_score = (n, sum(per_entry.values())), score
    return best
