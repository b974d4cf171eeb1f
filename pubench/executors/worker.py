"""Run one job and write its record; the function every executor calls (in-process,
in a worker process or on a SLURM node)."""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pubench.jobs.plan import Job
from pubench.store.store import ResultStore


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _check_output(out: Any) -> tuple[dict[str, float], dict[str, Any]]:
    if not isinstance(out, dict) or not isinstance(out.get("metrics"), dict) or not out["metrics"]:
        raise TypeError(f"a task must return {{'metrics': {{...}}, 'info': {{...}}}}, got {type(out).__name__}")
    metrics = {}
    for k, v in out["metrics"].items():
        v = float(v)
        if not math.isfinite(v):
            raise FloatingPointError(f"metric {k!r} is {v}")
        metrics[k] = v
    return metrics, dict(out.get("info") or {})


def execute_job(job: Job | dict[str, Any], results_root: str | Path) -> str:
    """Run ``job``; write an ok record or a failure record. Returns ``"ok"`` or ``"failed"``.

    Never raises for an error of the task itself (that becomes a failure record), so a
    failed job never stops its siblings. KeyboardInterrupt/SystemExit propagate.
    """
    from pubench.tasks import TASKS

    job = Job.from_dict(job) if isinstance(job, dict) else job
    store = ResultStore(results_root)
    start, t0 = _now(), time.perf_counter()
    try:
        task = TASKS.get(job.task)
        metrics, info = _check_output(task(job.params, dict(job.seeds)))
    except Exception as exc:  # noqa: BLE001 - every task error becomes a failure record
        store.write_failure(job, exc, {"start": start, "end": _now(), "wall_s": time.perf_counter() - t0})
        return "failed"
    store.write_ok(job, metrics, info, {"start": start, "end": _now(), "wall_s": time.perf_counter() - t0})
    return "ok"
