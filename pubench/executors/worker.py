"""Run one job and write its record; the function every executor calls (in-process,
in a worker process or on a SLURM node).

Order of events: skip if done -> claim (skip if a live runner holds it) -> check again
that it is not done -> check the process can deliver the job's numerics -> run -> check
the output -> write the record -> release the claim. SIGTERM and SIGINT during a job are
recorded as an interrupted failure (retried by the next run) and then propagate.
"""

from __future__ import annotations

import math
import signal
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pubench.jobs.plan import Job
from pubench.store.store import ResultStore

OK, FAILED, SKIPPED = "ok", "failed", "skipped"


class JobInterrupted(BaseException):
    """SIGTERM (or SIGINT) arrived while a job ran: not an error of the job."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}; the next run retries this job")
        self.signum = signum


class DegenerateResult(ValueError):
    """A task returned something that is not a result (non-finite, malformed)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def check_output(out: Any) -> tuple[dict[str, float], dict[str, Any]]:
    """``(metrics, info)`` of a task's return value; a malformed or non-finite one raises."""
    if not isinstance(out, dict) or not isinstance(out.get("metrics"), dict) or not out["metrics"]:
        raise DegenerateResult(f"a task must return {{'metrics': {{...}}, 'info': {{...}}}}, got {type(out).__name__}")
    metrics = {}
    for k, v in out["metrics"].items():
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise DegenerateResult(f"metric {k!r} is {v!r}, not a number") from None
        if not math.isfinite(v):
            raise DegenerateResult(f"metric {k!r} is {v}")
        metrics[k] = v
    info = out.get("info") or {}
    if not isinstance(info, dict):
        raise DegenerateResult(f"info must be a mapping, got {type(info).__name__}")
    return metrics, dict(info)


def _raise_interrupted(signum, frame):  # noqa: ARG001 - signal handler signature
    raise JobInterrupted(signum)


def execute_job(job: Job | dict[str, Any], results_root: str | Path, claim: bool = True, force: bool = False) -> str:
    """Run ``job``; write an ok record or a failure record. Returns ``"ok"``, ``"failed"``
    or ``"skipped"`` (done already, unless ``force``, or claimed by another live runner).

    Never raises for an error of the task itself (that becomes a failure record), so a
    failed job never stops its siblings. Interruptions are recorded and propagate.
    """
    from pubench import numerics
    from pubench.tasks import TASKS

    job = Job.from_dict(job) if isinstance(job, dict) else job
    store = ResultStore(results_root)
    if store.is_done(job) and not force:
        return SKIPPED
    held = None
    if claim:
        held = store.claims(job.tier, job.spec_id).acquire(job.id, {"job": job.name})
        if held is None:
            return SKIPPED
        held.start_heartbeat()
    in_main = _is_main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_interrupted) if in_main else None
    start, t0, machine = _now(), time.perf_counter(), None
    try:
        if claim and not force and store.is_done(job):  # finished by another runner between the check and the claim
            return SKIPPED
        try:
            num = numerics.Numerics.from_dict(job.numerics)
            numerics.check_process(num)
            numerics.apply(num)
            machine = numerics.machine()
            task = TASKS.get(job.task)
            with numerics.active(num):
                metrics, info = check_output(task.run(job.params, dict(job.seeds)))
        except (JobInterrupted, KeyboardInterrupt) as exc:
            signum = getattr(exc, "signum", signal.SIGINT)
            store.write_failure(job, JobInterrupted(signum), _timing(start, t0), machine)
            raise
        except Exception as exc:  # noqa: BLE001 - every task error becomes a failure record
            store.write_failure(job, exc, _timing(start, t0), machine)
            return FAILED
        store.write_ok(job, metrics, info, _timing(start, t0), machine)
        return OK
    finally:
        if in_main and previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if held is not None:
            held.release()


def _timing(start: str, t0: float) -> dict[str, Any]:
    return {"start": start, "end": _now(), "wall_s": time.perf_counter() - t0}


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
