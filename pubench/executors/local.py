"""Local executor: jobs one after another in this process, or in ``--jobs N`` worker processes.

Each job writes its own record as it finishes, so killing the runner loses only the jobs
that were running. Jobs are claimed before they run (``pubench.store.claims``) and hold
machine-wide core slots while they run (``pubench.executors.cores``), so two runners on
one machine and store neither repeat a job nor oversubscribe the cores.

Worker processes die with their runner, SIGKILL included (``PR_SET_PDEATHSIG`` on Linux,
and a parent watchdog elsewhere). SIGINT / SIGTERM / SIGHUP stop the run cleanly: jobs in
flight get an "interrupted" failure record (retried by the next run) and the runner raises
:class:`~pubench.executors.worker.JobInterrupted`. A SIGHUP ignored when the runner started
(``nohup``) stays ignored in the runner and its workers: the run goes on to its end.
``--jobs N`` starts at most as many workers as the core slots can run at once, and a worker
loads torch only once it holds a slot: memory stays bounded whatever N is. A write that
fails (disk full) stops the run with :class:`~pubench.errors.StorageError`: finished jobs
are kept, a rerun continues.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import queue
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from tqdm import tqdm

from pubench.executors.base import EXECUTORS, Executor, ExecutorContext, Submission
from pubench.errors import StorageError, install_warning_format
from pubench.executors.cores import hold_cores, usable_cores
from pubench.executors.worker import FAILED, JobInterrupted, execute_job, stop_signals
from pubench.jobs.plan import Job
from pubench.numerics import Numerics
from pubench.utils.threads import start_helper_thread, stop_signals_blocked

MAX_WORKERS = 64
PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Make this process end when ``parent`` does, whatever kills it."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except OSError:  # pragma: no cover - no libc: the watchdog below still works
            pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    start_helper_thread(watch, "parent-watchdog")


def _init_worker(parent: int) -> None:
    _die_with_parent(parent)
    install_warning_format()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides; it forwards SIGTERM
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal: the runner records the jobs in flight


def _worker_loop(parent: int, tasks, results, results_root: str, force: bool, checkpoint_every: int | None) -> None:
    """A worker process: take (index, job, threads) items until the sentinel ``None``.

    The libraries (torch, the task registry) load once a core slot is held for the first job:
    a worker waiting for a core stays a small process, so ``--jobs 64`` holds no more
    memory than the cores it can use."""
    _init_worker(parent)
    loaded = False
    while True:
        item = tasks.get()
        if item is None:
            return
        i, job, threads = item
        with stop_signals_blocked():  # the queue's feeder thread starts here: it must not take SIGTERM
            results.put(("start", i, os.getpid()))
        try:
            with hold_cores(threads):
                if not loaded:  # before the claim: an interrupt lands in a job, not an import
                    import torch  # noqa: F401

                    from pubench.tasks import TASKS

                    TASKS.names()
                    loaded = True
                status = execute_job(job, results_root, force=force, checkpoint_every=checkpoint_every)
        except JobInterrupted as exc:  # recorded by execute_job; this worker takes no further job
            results.put(("done", i, "interrupted"))
            os._exit(128 + exc.signum)
        except StorageError as exc:  # the store takes no writes: the runner stops the run
            results.put(("fatal", i, str(exc)))
            os._exit(1)
        results.put(("done", i, status))


def worker_count(n_jobs: int, n_todo: int, threads: int, total: int | None = None) -> int:
    """Worker processes for ``--jobs n_jobs``: never more than jobs to run, nor than the
    machine's core slots can run at once (each worker imports torch, ~0.3 GB)."""
    slots = max(1, (total or usable_cores()) // max(1, threads))
    return max(1, min(n_jobs, n_todo, slots))


def _raise_interrupted(signum, frame):  # noqa: ARG001
    raise JobInterrupted(signum)


@EXECUTORS.register("local")
class LocalExecutor(Executor):
    """Runs jobs on this machine; ``run`` returns counts of ok / failed / skipped jobs."""

    runs_here = True

    @classmethod
    def from_context(cls, context: ExecutorContext) -> "LocalExecutor":
        return cls(context.results_root, n_jobs=context.jobs, progress=context.progress, force=context.force,
                   checkpoint_every=context.checkpoint_every, desc=context.spec_id)

    @classmethod
    def active_ids(cls, context: ExecutorContext) -> set[str]:
        """Jobs claimed by a live runner (this machine's or another's) sharing the store."""
        from pubench.store import ResultStore

        return ResultStore(context.results_root).claims(context.tier, context.spec_id).live_ids()

    @classmethod
    def describe_active(cls, context: ExecutorContext, jobs: list[Job]) -> list[str]:
        """The claimed jobs, the first three with their holder."""
        from pubench.store import ResultStore
        from pubench.store.claims import ClaimBook

        holders = ResultStore(context.results_root).claims(context.tier, context.spec_id).live_holders()
        lines = [f"  {len(jobs)} job(s) running in another runner (claimed): not started again"]
        lines += [f"    {j.row}|{j.col} seed {j.seed_index}: {ClaimBook.describe(holders[j.id])}"
                  for j in jobs[:3] if j.id in holders]
        if len(jobs) > 3:
            lines.append(f"    ... and {len(jobs) - 3} more")
        return lines

    def submit(self, jobs: list[Job], on_done: Callable[[Job, str], None] | None = None) -> Submission:
        return Submission(self.run(jobs, desc=self.desc, on_done=on_done))

    def concurrency(self, jobs: list[Job]) -> tuple[int, int, str] | None:
        """The workers ``run`` starts; on CUDA they share this machine's one GPU."""
        if not jobs:
            return None
        n = worker_count(self.n_jobs, len(jobs), max(Numerics.from_dict(j.numerics).threads for j in jobs))
        if jobs[0].numerics.get("device") == "cuda":
            return n, n, f"{n} local worker(s) on one GPU"
        return n, 1, f"{n} local worker(s)"

    def __init__(self, results_root: str | Path, n_jobs: int = 1, progress: bool = True, force: bool = False,
                 checkpoint_every: int | None = None, desc: str = "jobs"):
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or not 1 <= n_jobs <= MAX_WORKERS:
            raise ValueError(f"--jobs must be an integer in 1..{MAX_WORKERS}, got {n_jobs!r}")
        self.results_root = str(results_root)
        self.n_jobs = n_jobs
        self.progress = progress
        self.force = force  # rerun jobs that are done (their records are replaced when they finish)
        self.checkpoint_every = checkpoint_every  # None: the worker's default
        self.desc = desc  # the progress bar's label
        #: signals that stop the run (a SLURM task packing jobs adds SIGUSR1 / SIGUSR2), and how long the
        #: workers then get to finish their epoch and write a checkpoint before they are killed
        self.stop_signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)
        self.stop_grace_s = 15.0

    def run(self, jobs: list[Job], desc: str = "jobs", on_done: Callable[[Job, str], None] | None = None) -> Counter:
        counts: Counter = Counter()
        bar = tqdm(total=len(jobs), desc=desc, unit="job", disable=not self.progress, dynamic_ncols=True)
        stops = stop_signals(*self.stop_signals)
        previous = {sig: signal.signal(sig, _raise_interrupted) for sig in stops}
        try:
            if self.n_jobs == 1 or len(jobs) <= 1:
                for job in jobs:
                    bar.set_postfix_str(f"{job.row}|{job.col} s{job.seed_index}", refresh=False)
                    with hold_cores(Numerics.from_dict(job.numerics).threads):
                        status = execute_job(job, self.results_root, force=self.force,
                                             checkpoint_every=self.checkpoint_every)
                    counts[status] += 1
                    if on_done:
                        on_done(job, status)
                    bar.update()
            else:
                self._run_pool(jobs, counts, bar, on_done)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, signal.SIG_DFL if handler is None else handler)
            bar.close()
        return counts

    def _run_pool(self, jobs: list[Job], counts: Counter, bar, on_done) -> None:
        ctx = mp.get_context("spawn")  # fork after torch has threads is unsafe
        # The first queue starts multiprocessing's resource tracker, which inherits this mask: a
        # SIGHUP to the process group (a closed terminal) would kill it, and the stopping runner
        # would print its replacement's tracebacks. The runner takes the signal after the block.
        with stop_signals_blocked():
            tasks, results = ctx.Queue(), ctx.Queue()
        for i, job in enumerate(jobs):
            tasks.put((i, job.to_dict(), Numerics.from_dict(job.numerics).threads))
        n_workers = worker_count(self.n_jobs, len(jobs), max(Numerics.from_dict(j.numerics).threads for j in jobs))
        if n_workers < min(self.n_jobs, len(jobs)):
            print(f"pubench: --jobs {self.n_jobs}: {n_workers} worker process(es), as many jobs as the "
                  f"{usable_cores()} core(s) here run at once", file=sys.stderr)
        for _ in range(n_workers):
            tasks.put(None)

        def start_worker():
            p = ctx.Process(target=_worker_loop, args=(os.getpid(), tasks, results, self.results_root, self.force,
                                                          self.checkpoint_every),
                            daemon=True)
            p.start()
            return p

        workers = [start_worker() for _ in range(n_workers)]
        running: dict[int, int] = {}  # worker pid -> job index
        reported: set[int] = set()
        finished = 0
        try:
            while finished < len(jobs):
                try:
                    kind, i, value = results.get(timeout=1.0)
                except queue.Empty:
                    for p in list(workers):  # a worker that died (OOM-killed, ...) fails its job; replace it
                        if p.is_alive() or p.exitcode == 0:
                            continue
                        workers.remove(p)
                        lost = running.pop(p.pid, None)
                        if lost is not None:
                            finished += 1
                            reported.add(lost)
                            self._done(jobs[lost], FAILED, counts, bar, on_done)
                            print(f"pubench: worker {p.pid} died (exit code {p.exitcode}) while running "
                                  f"{jobs[lost].name}; the next run retries it", file=sys.stderr)
                        if finished + len(running) < len(jobs):
                            tasks.put(None)  # the replacement needs its own sentinel
                            workers.append(start_worker())
                    if not any(p.is_alive() for p in workers):  # jobs lost with a dead worker: count them
                        for j in sorted(set(range(len(jobs))) - reported):
                            self._done(jobs[j], FAILED, counts, bar, on_done)
                        break
                    continue
                if kind == "start":
                    running[value] = i
                    continue
                if kind == "fatal":
                    raise StorageError(None, value)
                running = {pid: j for pid, j in running.items() if j != i}
                finished += 1
                reported.add(i)
                self._done(jobs[i], FAILED if value == "interrupted" else value, counts, bar, on_done)
        except BaseException:
            for p in workers:  # workers ignore SIGINT; SIGTERM makes them record their job as interrupted
                if p.is_alive():
                    p.terminate()
            deadline = time.time() + self.stop_grace_s
            for p in workers:
                p.join(max(0.0, deadline - time.time()))
                if p.is_alive():
                    p.kill()
            raise
        finally:
            for p in workers:
                p.join(5)
            tasks.cancel_join_thread()
            results.cancel_join_thread()

    @staticmethod
    def _done(job: Job, status: str, counts: Counter, bar, on_done) -> None:
        counts[status] += 1
        if on_done:
            on_done(job, status)
        bar.update()
