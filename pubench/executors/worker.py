"""Run one job and write its record; the function every executor calls (in-process,
in a worker process or on a SLURM node).

Order of events: skip if done -> claim (skip if a live runner holds it; a stop signal
waits until the claim is taken, so it is always recorded and released) -> check again
that it is not done -> check the process can deliver the job's numerics and that every unit the
job names is registered here (a package of one's own missing from a node's environment fails the
job at once, with one line: :func:`missing_unit`) -> run (the task
gets the job's context, :class:`pubench.train.context.JobContext`: its numerics, its
checkpoint session, the real data) -> check the output -> write the record -> release the
claim. SIGINT during a job, and SIGTERM /
SIGUSR1 / SIGUSR2 outside a training loop, are recorded as an interrupted failure (retried
by the next run) and then propagate. Inside a training loop the three stop signals first
let the loop finish its epoch and write a checkpoint (:mod:`pubench.train.checkpoint`), so
the next run resumes the job instead of restarting it; a second signal stops at once.
"""

from __future__ import annotations

import math
import signal
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pubench.errors import JobInterrupted, PubenchError, StorageError
from pubench.jobs.plan import Job
from pubench.store.store import ResultStore
from pubench.utils.hashing import config_hash
from pubench.utils.result import Result

OK, FAILED, SKIPPED = "ok", "failed", "skipped"


class UnitNotInstalled(PubenchError):
    """A job names a unit that nothing installed where it runs registers (its failure record says which)."""


def missing_unit(job: Job) -> str | None:
    """Why ``job`` cannot run in this environment, naming the first unit (task, data set, backbone,
    loss, framework, downstream classifier, PU method) its config names that no registry here
    holds, or None. Asked of the registries themselves (what a job would get), so a unit of an
    installed package counts and one registered by a test inside the process too."""
    import importlib
    import socket

    from pubench.registry.units import REGISTRIES, units
    from pubench.utils.registry import UnknownName

    for kind, name in units(job.task, job.params):
        module, attr = REGISTRIES[kind].split(":")
        try:
            getattr(importlib.import_module(module), attr).get(name)
        except UnknownName:
            return (f"{kind} {name!r} is not registered on {socket.gethostname()} (python {sys.executable}): no "
                    "package installed in the "
                    "environment this job runs in registers it; install the package whose pyproject.toml names it "
                    "under [project.entry-points.\"pubench.units\"] there (the same environment as where it was "
                    "submitted), then run again")
    return None


class DegenerateResult(ValueError):
    """A task returned something that is not a result (non-finite, malformed)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def check_output(out: Any) -> tuple[dict[str, float], dict[str, Any]]:
    """``(metrics, info)`` of a task's return value (a :class:`~pubench.utils.result.Result`);
    a malformed or non-finite one raises."""
    if not isinstance(out, Result) or not isinstance(out.metrics, dict) or not out.metrics:
        raise DegenerateResult(f"a task must return pubench.utils.result.Result(metrics, info) with metrics, "
                               f"got {type(out).__name__}")
    metrics = {}
    for k, v in out.metrics.items():
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise DegenerateResult(f"metric {k!r} is {v!r}, not a number") from None
        if not math.isfinite(v):
            raise DegenerateResult(f"metric {k!r} is {v}")
        metrics[k] = v
    info = out.info or {}
    if not isinstance(info, dict):
        raise DegenerateResult(f"info must be a mapping, got {type(info).__name__}")
    return metrics, dict(info)


#: SIGHUP (a closed terminal, the end of a `setsid` session) stops a job like SIGTERM does,
#: unless it was ignored when the process started (:data:`HUP_IGNORED`)
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")
                     if hasattr(signal, name))
#: ``nohup`` (or a shell, ``setsid``, tmux) set SIGHUP to ignored for a run meant to outlive its
#: terminal: it stays ignored, as Python leaves an ignored SIGINT. Read when this module is first
#: imported, before pubench installs any handler; a worker process starts with its runner's
#: ignored signals still ignored (they survive exec), so it reads the same.
HUP_IGNORED = hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
DEFAULT_CHECKPOINT_EVERY = 10   # epochs; also the stage ends and stop signals (pubench.train.checkpoint)


def stop_signals(*signals: int) -> tuple[int, ...]:
    """``signals`` (default :data:`STOP_SIGNALS`) less SIGHUP where it is to stay ignored."""
    return tuple(sig for sig in signals or STOP_SIGNALS if not (HUP_IGNORED and sig == signal.SIGHUP))


def stop_handler(session):
    """The stop signals' handler while the job of ``session`` (its
    :class:`pubench.train.checkpoint.Session`) runs: a training loop of the job stops at its
    next epoch boundary, after a checkpoint; anywhere else (or at a second signal) the job
    stops at once."""

    def handler(signum, frame):  # noqa: ARG001 - signal handler signature
        if not session.request_stop(signum):
            raise JobInterrupted(signum)

    return handler


def execute_job(job: Job | dict[str, Any], results_root: str | Path, claim: bool = True, force: bool = False,
                checkpoint_every: int | None = None, context: Any = None) -> str:
    """Run ``job``; write an ok record or a failure record. Returns ``"ok"``, ``"failed"``
    or ``"skipped"`` (done already, unless ``force``, or claimed by another live runner).

    Checkpoints: ``<results_root>/.checkpoints/<job id>/``, written every
    ``checkpoint_every`` epochs (default :data:`DEFAULT_CHECKPOINT_EVERY`; 0: only at the
    end of each training stage and on a stop signal), resumed from when they exist,
    deleted when the record is written (kept when the job is interrupted). The record's
    ``info.checkpoint`` says what was saved and resumed. ``context``: a
    :class:`pubench.train.context.JobContext` to run the job in, with its own numerics and
    checkpoint session put in (default: the plain one: the files under the data root, no
    step cap; the GPU check passes stand-in data and a loop callback).

    Never raises for an error of the task itself (that becomes a failure record), so a
    failed job never stops its siblings. Interruptions are recorded and propagate, and so
    does a :class:`~pubench.errors.StorageError` (the store, a claim or a checkpoint cannot
    be written: the job's claim is released, its checkpoints stay, nothing is recorded).
    """
    from pubench import numerics
    from pubench.tasks import TASKS
    from pubench.train import checkpoint
    from pubench.train.context import PLAIN

    job = Job.from_dict(job) if isinstance(job, dict) else job
    store = ResultStore(results_root)
    if store.is_done(job) and not force:
        return SKIPPED
    in_main = _is_main_thread()
    every = DEFAULT_CHECKPOINT_EVERY if checkpoint_every is None else checkpoint_every
    session = checkpoint.Session(checkpoint.checkpoint_root(results_root) / job.id, every, label=job.name,
                                 job_id=job.id, config_hash=config_hash({"task": job.task, "params": job.params,
                                                                         "seeds": job.seeds}))
    start, t0, machine = _now(), time.perf_counter(), None
    previous, held, finished = {}, None, False
    try:
        previous = {sig: signal.signal(sig, stop_handler(session)) for sig in stop_signals()} if in_main else {}
        # A stop signal from the moment the claim file exists is the job's: recorded, claim released.
        if claim:
            with _signals_deferred(in_main):
                held = store.claims(job.tier, job.spec_id).acquire(job.id, {"job": job.name})
                if held is not None:
                    held.start_heartbeat()
            if held is None:
                return SKIPPED
            if not force and store.is_done(job):  # finished by another runner between the check and the claim
                finished = True
                return SKIPPED
        try:
            # Deferred here too: torch's set-up calls (thread counts, the CUDA probe of machine(), a
            # task module's first import) run Python callbacks from C++ (warnings) that swallow an
            # exception a signal handler raises in them, and the job would run on unstopped.
            with _signals_deferred(in_main):
                num = numerics.Numerics.from_dict(job.numerics)
                numerics.check_process(num)
                numerics.apply(num)
                machine = numerics.machine()
                task = TASKS.get(job.task)
                missing = missing_unit(job)
            if missing is not None:
                raise UnitNotInstalled(missing)
            ctx = (context or PLAIN).replace(numerics=num, session=session)
            metrics, info = check_output(task.run(job.params, dict(job.seeds), ctx))
            info["checkpoint"] = session.record()
        except StorageError:
            raise  # the store cannot take writes: stop the run (checkpoints kept), not a failure of the job
        except Exception as exc:  # noqa: BLE001 - every task error becomes a failure record
            store.write_failure(job, exc, _timing(start, t0), machine)
            finished = True
            session.clear()  # a rerun (perhaps of fixed code) must not resume a failed run
            return FAILED
        store.write_ok(job, metrics, info, _timing(start, t0), machine)
        finished = True
        session.clear()
        return OK
    except (JobInterrupted, KeyboardInterrupt) as exc:
        if not finished and (held is not None or not claim):
            try:
                store.write_failure(job, JobInterrupted(getattr(exc, "signum", signal.SIGINT)), _timing(start, t0),
                                    machine)
            except StorageError as err:  # the stop still wins; the next run retries the job anyway
                print(f"pubench: warning: {job.name}: interrupted, and its record could not be written ({err})",
                      file=sys.stderr)
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        if held is not None:
            held.release()


@contextmanager
def _signals_deferred(active: bool):
    """Stop signals that arrive while a claim is being taken wait until it is taken, then
    stop the job, so none lands between the claim file and the code that records the
    job and releases the claim. (Blocking them with ``pthread_sigmask`` would not do: a
    process-directed signal goes to any other thread that does not block it.)"""
    if not active:
        yield
        return
    pending: list[int] = []
    before = {sig: signal.signal(sig, lambda signum, frame: pending.append(signum))
              for sig in (signal.SIGINT, *STOP_SIGNALS) if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        if pending:
            raise KeyboardInterrupt if pending[0] == signal.SIGINT else JobInterrupted(pending[0])


def _timing(start: str, t0: float) -> dict[str, Any]:
    return {"start": start, "end": _now(), "wall_s": time.perf_counter() - t0}


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
