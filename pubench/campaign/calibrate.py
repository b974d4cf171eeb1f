"""Measured before trusted: a window's first minutes on a GPU without a packing figure of its
own measure the packing ratio R(N) and the step time alone, on the queue's own first network.

:func:`measure` starts ``max(counts)`` worker processes (``python -m
pubench.campaign.calibrate IN OUT``), each running the first pending job that trains on the
device as ``pubench run`` would (its numerics, the real data) under a step cap
(:class:`Paced`) that holds it at its first training step until every worker is there, then
lets it step only inside its phases of a schedule the parent writes: phase k runs workers
``0 .. counts[k] - 1`` together for :data:`PHASE_S` seconds (the first :data:`WARMUP_S`
not counted). R(N) is the steps per second of the N workers of the N-phase together over
those of the 1-phase: the jobs' aggregate throughput packed N at a time over alone, data
loading between the steps included; the step time alone (the step's own wall, synchronised)
over the committed figure's gives the device factor the planner scales other GPUs' figures
by (:func:`pubench.campaign.plan.for_device`). Then every worker stops (its job is not
recorded: nothing is written to the store).

:func:`write` puts the measurement into ``$OUT`` as ``packing-<device>-<date>-<gpu>.json``
(``pubench.preflight.packing`` reads it once committed under ``benchmarks/results/``), at
once, so it comes back even when the command is stopped later.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from pubench.train.context import StepCap

#: seconds each phase lets its workers step, the first of them not counted, and the gap between phases
PHASE_S, WARMUP_S, GAP_S = 10.0, 2.0, 1.0
#: the most the workers may take to reach their first step together (start, torch, CUDA, the data)
READY_LIMIT_S = 90.0
#: the counts measured: 1 and then doubling, up to the bounds and this many workers
MAX_WORKERS = 8
#: a window spends at most this share of its budget measuring
BUDGET_SHARE = 0.3


class Done(BaseException):
    """The worker's schedule is over (or cannot be kept): its job stops here, unrecorded."""


def counts_for(bound: int) -> list[int]:
    """1, 2, 4, ... up to ``bound`` and :data:`MAX_WORKERS` (``bound`` itself last when it is
    not a power of two)."""
    top = max(1, min(bound, MAX_WORKERS))
    out = [1]
    while out[-1] * 2 <= top:
        out.append(out[-1] * 2)
    if out[-1] != top:
        out.append(top)
    return out


def planned_s(counts: list[int]) -> float:
    """The most the measurement takes (conservative: the workers' whole start-up allowance)."""
    return READY_LIMIT_S + 0.5 + len(counts) * (PHASE_S + GAP_S) + 5.0


def first_network(pending: list) -> Any | None:
    """The first pending job (:class:`pubench.campaign.plan.Planned`) that trains on the device
    and has a projection."""
    from pubench.preflight.committed import CPU_TASKS

    for p in pending:
        if p.projected_s and p.job.task not in CPU_TASKS and not p.flag:
            return p
    return None


# ---------------------------------------------------------------- the worker
class Paced(StepCap):
    """Runs the job's first training stage (one with epochs) step by step inside the windows of
    a schedule; every other stage and ``predict`` as a preflight check would (one chunk)."""

    def __init__(self, ready: Path, schedule: Path, index: int, wait_s: float = 300.0):
        self.ready, self.schedule_path, self.index, self.wait_s = ready, schedule, index, wait_s
        self.windows: list[tuple[float, float]] | None = None
        self.measuring = False
        self.measured: str | None = None
        self.steps: list[tuple[float, float]] = []  # (end time, step wall)
        self.device = None
        self.done = False

    def begin(self, trainer, epochs: int, device) -> None:
        self.device = device
        self.measuring = self.measured is None and epochs > 0
        if self.measuring:
            self.measured = trainer.desc

    def epochs(self, first: int, epochs: int):
        return range(first, epochs) if self.measuring else [e for e in dict.fromkeys((first, epochs - 1))
                                                           if first <= e < epochs]

    def batches(self, batches):
        for k, item in enumerate(batches):
            if self.measuring:
                self._gate()
            elif k >= 1:
                return
            yield item

    def _gate(self) -> None:
        if self.windows is None:
            self.ready.write_text(repr(time.time()))
            deadline = time.time() + self.wait_s
            while not self.schedule_path.is_file():
                if time.time() > deadline:
                    self.done = True
                    raise Done("no schedule came")
                time.sleep(0.02)
            self.windows = [tuple(w) for w in json.loads(self.schedule_path.read_text())[str(self.index)]]
        while True:
            now = time.time()
            ahead = [w for w in self.windows if w[1] > now]
            if not ahead:
                self.done = True
                raise Done("the schedule is over")
            if now >= ahead[0][0]:
                return
            time.sleep(min(0.02, ahead[0][0] - now))

    def _sync(self) -> None:
        import torch

        if self.device is not None and self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    @contextlib.contextmanager
    def step(self):
        if not self.measuring:
            yield
            return
        self._sync()
        t0 = time.perf_counter()
        yield
        self._sync()
        self.steps.append((time.time(), time.perf_counter() - t0))

    def epoch_end(self, stats) -> bool:  # noqa: ARG002 - the interface's
        return False

    def end(self, trainer) -> None:  # noqa: ARG002
        if self.measuring:
            self.measuring = False
            if not self.done:  # not already stopping: the stage ran out of epochs first
                self.done = True
                raise Done("the stage ended before the schedule did")

    def predict(self, fn, n: int, chunk: int):
        import torch

        out = fn(torch.arange(0, min(n, chunk))).float().cpu()
        reps = math.ceil(n / max(1, out.shape[0]))
        return out.repeat((reps,) + (1,) * (out.dim() - 1))[:n]


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    from pubench import numerics
    from pubench.tasks import TASKS
    from pubench.train import accel
    from pubench.train.context import JobContext

    num = numerics.Numerics.from_dict(spec["job"]["numerics"])
    cap = Paced(Path(spec["ready"]), Path(spec["schedule"]), spec["index"])
    out: dict[str, Any] = {"ok": False}
    try:
        numerics.apply(num)
        out["device_name"] = accel.device_name(num.device)
        job = spec["job"]
        TASKS.get(job["task"]).run(job["params"], dict(job["seeds"]), JobContext(numerics=num, cap=cap))
        out["error"] = "the job ended without reaching a training stage"
    except Done as stop:
        out["ok"], out["stopped"] = str(stop) == "the schedule is over", str(stop)
        if not out["ok"]:
            out["error"] = str(stop)
    except Exception as exc:  # noqa: BLE001 - a failed measurement is a result
        out["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400]
    out["stage"], out["steps"] = cap.measured, cap.steps
    return out


def main(argv: list[str]) -> int:
    result = worker(json.loads(Path(argv[0]).read_text()))
    tmp = Path(argv[1] + ".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(argv[1])
    return 0


# ---------------------------------------------------------------- the parent
def measure(job, counts: list[int], say: Callable[[str], None] = print, ready_limit_s: float = READY_LIMIT_S,
            phase_s: float = PHASE_S) -> dict[str, Any] | None:
    """Measure R(N) for ``counts`` and the step alone on ``job`` (a :class:`pubench.jobs.Job`);
    the measurement (module docstring), or None, said why."""
    from pubench.numerics import Numerics
    from pubench.preflight.runner import SOURCE_ROOT, worker_env

    num = Numerics.from_dict(job.numerics)
    n = max(counts)
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix="pubench-calibrate-") as tmp_:
        tmp = Path(tmp_)
        schedule = tmp / "schedule.json"
        procs, logs = [], []
        for k in range(n):
            spec = {"job": job.to_dict(), "index": k, "ready": str(tmp / f"ready-{k}"), "schedule": str(schedule)}
            (tmp / f"in-{k}.json").write_text(json.dumps(spec))
            log = open(tmp / f"log-{k}.txt", "wb")
            logs.append(log)
            procs.append(subprocess.Popen([sys.executable, "-m", "pubench.campaign.calibrate", str(tmp / f"in-{k}.json"),
                                           str(tmp / f"out-{k}.json")], env=worker_env(num), stdout=log,
                                          stderr=subprocess.STDOUT, cwd=str(SOURCE_ROOT), start_new_session=True))
        try:
            while not all((tmp / f"ready-{k}").is_file() for k in range(n)):
                if any(p.poll() is not None for p in procs) or time.time() - t_start > ready_limit_s:
                    why = _why_not_ready(tmp, procs, n, ready_limit_s)
                    say(f"  calibration: stopped ({why}); the window runs by the conservative figures")
                    return None
                time.sleep(0.05)
            ready_s = time.time() - t_start
            begin = time.time() + 0.5
            phases = [(begin + i * (phase_s + GAP_S), begin + i * (phase_s + GAP_S) + phase_s) for i in range(len(counts))]
            windows = {str(k): [w for w, c in zip(phases, counts) if k < c] for k in range(n)}
            (tmp / "schedule.tmp").write_text(json.dumps(windows))
            (tmp / "schedule.tmp").replace(schedule)
            for p in procs:
                try:
                    p.wait(timeout=max(1.0, phases[-1][1] + 30 - time.time()))
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            outs = [_read(tmp / f"out-{k}.json") for k in range(n)]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            for log in logs:
                log.close()
    bad = [o for o in outs if not o.get("ok")]
    if bad:
        say(f"  calibration: a worker failed ({bad[0].get('error') or 'no result'}); the window runs by the "
            "conservative figures")
        return None
    counted = phase_s - WARMUP_S
    throughput = {}
    for (start, end), c in zip(phases, counts):
        steps = sum(1 for o in outs[:c] for t, _ in o["steps"] if start + WARMUP_S <= t <= end)
        throughput[c] = steps / counted
    if not throughput.get(1):
        say("  calibration: no step finished alone; the window runs by the conservative figures")
        return None
    alone = [dt for t, dt in outs[0]["steps"] if phases[0][0] + WARMUP_S <= t <= phases[0][1]]
    return {"counts": counts, "throughput": {str(c): round(v, 3) for c, v in throughput.items()},
            "ratios": {str(c): round(v / throughput[1], 3) for c, v in throughput.items() if c > 1},
            "step_s_alone": statistics.median(alone), "stage": outs[0]["stage"], "device_name": outs[0]["device_name"],
            "ready_s": round(ready_s, 1), "wall_s": round(time.time() - t_start, 1), "phase_s": phase_s,
            "warmup_s": WARMUP_S}


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {"ok": False, "error": "the worker wrote no result"}


def _why_not_ready(tmp: Path, procs: list, n: int, limit_s: float) -> str:
    for k, p in enumerate(procs):
        if p.poll() is not None:
            out = _read(tmp / f"out-{k}.json")
            if out.get("error"):
                return f"worker {k}: {out['error']}"
            try:
                tail = [s for s in (tmp / f"log-{k}.txt").read_text(errors="replace").splitlines() if s.strip()]
            except OSError:
                tail = []
            return f"worker {k} ended with status {p.returncode}: {tail[-1][:200] if tail else 'no output'}"
    ready = sum((tmp / f"ready-{k}").is_file() for k in range(n))
    return f"{ready} of {n} workers reached their first step within {limit_s:.0f} s"


def reference_step_s(figure, stage: str | None) -> float | None:
    """The steady step time of ``figure``'s stage named ``stage`` (else its main stage)."""
    if figure is None:
        return None
    stages = [s for s in figure.stages if len(s.get("step_s") or []) > 1]
    named = [s for s in stages if s.get("desc") == stage] or stages
    if not named:
        return None
    main = max(named, key=lambda s: s.get("projected_s") or 0.0)
    return statistics.median(main["step_s"][1:])


def write(result: dict[str, Any], planned, device, out: Path) -> Path:
    """Write the measurement into ``out`` (``packing-<device>-<date>-<gpu>.json``); its path."""
    import re

    job = planned.job
    ref = planned.reference if planned.basis == "measured" else None
    ref_step = reference_step_s(ref, result.get("stage"))
    now = datetime.now(timezone.utc)
    doc = {"device": device.kind, "device_name": result["device_name"] or device.name,
           "date": now.strftime("%Y-%m-%d %H:%M UTC"), "method": "campaign calibration",
           "spec": job.spec_id, "tier": job.tier, "cell": f"{job.row}|{job.col}", "stage": result.get("stage"),
           "ratios": result["ratios"], "throughput_steps_per_s": result["throughput"],
           "step_s_alone": round(result["step_s_alone"], 6),
           "conditions": f"{max(result['counts'])} worker processes of {job.spec_id} {job.row}|{job.col}'s "
                         f"'{result.get('stage')}' stage, {result['phase_s']:g} s a phase ({result['warmup_s']:g} s "
                         "not counted), data loading between steps included",
           "ready_s": result["ready_s"], "wall_s": result["wall_s"]}
    if ref_step:
        doc["device_factor"] = {"factor": round(result["step_s_alone"] / ref_step, 4),
                                "reference_device": ref.device_name, "reference_step_s": ref_step,
                                "reference_file": ref.file, "cell": f"{job.spec_id} {job.row}|{job.col}"}
    slug = re.sub(r"[^a-z0-9]+", "-", doc["device_name"].lower()).strip("-")
    path = out / f"packing-{device.kind}-{now:%Y-%m-%d}-{slug}.json"
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{path.name}.tmp"
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
