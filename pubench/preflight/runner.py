"""Runs one configuration's check in a worker process (:mod:`pubench.preflight.worker`)
and watches its memory.

The worker starts with the job's numerics environment (``pubench.numerics.process_env``:
threads, the CPU code-path pins, cuBLAS's workspace; the libraries read them when they
load), the caches off (``PUBENCH_ENCODER_CACHE=0``: no encoder or prefix is read or
written) and the network off (``HF_HUB_OFFLINE``, ``PUBENCH_OFFLINE``). On the CPU the
parent samples the worker's resident set every 0.2 s and stops it above ``max_bytes`` (the
machine's other work keeps its memory), and then says from the worker's stage lines
(:func:`pubench.preflight.meter.stopped_in`) whether it stopped in a training stage or
before any; a check can also be given ``max_seconds``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pubench.numerics import Numerics, process_env
from pubench.preflight.meter import STAGE_BEGINS, STAGE_ENDS, stopped_in

SOURCE_ROOT = Path(__file__).resolve().parents[2]
#: the running checks' processes (so that an interrupted preflight stops them: :func:`stop_all`)
LIVE: set[subprocess.Popen] = set()


def stop_all() -> None:
    for proc in list(LIVE):
        proc.kill()


def available_memory() -> int | None:
    """``MemAvailable`` of this machine in bytes (None where /proc/meminfo is missing)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def worker_env(num: Numerics) -> dict[str, str]:
    env = {**os.environ, **process_env(num)}
    env.update(PUBENCH_ENCODER_CACHE="0", PUBENCH_PROGRESS="0", HF_HUB_OFFLINE="1", PUBENCH_OFFLINE="1",
               PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([str(SOURCE_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def _lines(log: Path) -> list[str]:
    try:
        return [s.strip() for s in log.read_text(errors="replace").splitlines() if s.strip()]
    except OSError:
        return []


def _last_line(log: Path) -> str:
    lines = [s for s in _lines(log) if STAGE_BEGINS not in s and STAGE_ENDS not in s]
    return lines[-1][:300] if lines else ""


def run_check(job: dict[str, Any], steps: int, synthetic: dict[str, str], *, flops: bool = True,
              max_bytes: int | None = None, max_seconds: float | None = None, eval_divisor: int = 1
              ) -> dict[str, Any]:
    """The worker's result for ``job`` (a :class:`pubench.jobs.Job` dict), or, when the
    worker did not finish, ``ok: False`` with ``stopped`` (``memory``, ``time``) or the
    last line of its output as the error."""
    num = Numerics.from_dict(job["numerics"])
    with tempfile.TemporaryDirectory(prefix="pubench-preflight-") as tmp:
        spec, result, log = Path(tmp, "in.json"), Path(tmp, "out.json"), Path(tmp, "log.txt")
        spec.write_text(json.dumps({"task": job["task"], "params": job["params"], "seeds": job["seeds"],
                                    "numerics": job["numerics"], "steps": steps, "synthetic": synthetic,
                                    "flops": flops, "eval_divisor": eval_divisor}))
        t0, peak, stopped = time.perf_counter(), 0, None
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "pubench.preflight.worker", str(spec), str(result)],
                                    env=worker_env(num), stdout=out, stderr=subprocess.STDOUT,
                                    cwd=str(SOURCE_ROOT), start_new_session=True)
            LIVE.add(proc)
            try:
                while proc.poll() is None:
                    rss = _rss(proc.pid)
                    peak = max(peak, rss)
                    if max_bytes is not None and num.device == "cpu" and rss > max_bytes:
                        stopped = "memory"
                    elif max_seconds is not None and time.perf_counter() - t0 > max_seconds:
                        stopped = "time"
                    if stopped:
                        proc.send_signal(signal.SIGKILL)
                        proc.wait()
                        break
                    time.sleep(0.2)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            finally:
                LIVE.discard(proc)
        wall = time.perf_counter() - t0
        if result.is_file() and stopped is None:
            out_ = json.loads(result.read_text())
            out_["process_s"] = round(wall, 2)
            return out_
        began, stage = False, None
        if stopped == "memory":
            began, stage = stopped_in(_lines(log))
            where = (f"in stage '{stage}'" if stage else "outside the training stages" if began
                     else "before training began (loading data, building the model)")
            error = (f"stopped at {peak / 2**30:.1f} GiB of resident memory, above this machine's memory budget "
                     f"({max_bytes / 2**30:.1f} GiB; --max-memory), {where}")
        elif stopped == "time":
            error = f"stopped after {max_seconds:.0f} s (--max-seconds)"
        else:
            error = f"the check's process ended with status {proc.returncode}: {_last_line(log) or 'no output'}"
        return {"ok": False, "stopped": stopped, "error": error, "process_s": round(wall, 2),
                "peak_memory": {"bytes": peak, "kind": "VmRSS sampled by the parent"},
                "training_began": began, "stopped_in": stage}
