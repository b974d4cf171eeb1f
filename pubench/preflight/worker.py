"""One preflight check in its own process: ``python -m pubench.preflight.worker IN OUT``.

``IN`` (JSON): ``task``, ``params``, ``seeds``, ``numerics`` (a job's), ``steps``,
``synthetic`` (stand-ins: name -> modality), ``flops``, ``eval_divisor``. The worker runs the job as
``pubench run`` would (the numerics profile applied: threads, deterministic algorithms),
in a job context (:class:`pubench.train.context.JobContext`) whose step cap is a
:class:`pubench.preflight.meter.Meter` and whose data source the stand-ins
(:class:`pubench.preflight.standins.StandIns`), and writes ``OUT``: ``ok``, the
error (one line, and its traceback), the measured figures and their projection (times on a CUDA
device: wall clock; on the CPU: this process's CPU time per thread, which the machine's
other work does not inflate), the peak
memory of this process (``VmHWM`` on the CPU, ``torch.cuda.max_memory_allocated`` on
CUDA), the device's name and what was replaced by a stand-in. Its own process gives each
check a fresh memory peak, and lets the parent stop a check that outgrows the machine.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any


def peak_memory(device: str) -> dict[str, Any]:
    """This process's peak: ``VmHWM`` (resident set) on the CPU, allocated bytes on CUDA."""
    import torch

    if device == "cuda":
        return {"bytes": int(torch.cuda.max_memory_allocated()), "kind": "torch.cuda.max_memory_allocated"}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return {"bytes": int(line.split()[1]) * 1024, "kind": "VmHWM (peak resident set of the check's process)"}
    except OSError:
        pass
    from pubench.train.accel import peak_memory as rusage_peak

    return rusage_peak("cpu")


def check(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one capped job (module docstring); never raises for the job's own error."""
    from pubench import numerics
    from pubench.preflight.meter import Meter
    from pubench.preflight.standins import StandIns
    from pubench.tasks import TASKS
    from pubench.train import accel
    from pubench.train.context import JobContext

    num = numerics.Numerics.from_dict(spec["numerics"])
    out: dict[str, Any] = {"ok": False, "notes": []}
    clock = time.perf_counter if num.device == "cuda" else (lambda: time.process_time() / num.threads)
    t0 = clock()
    meter = Meter(int(spec["steps"]), flops=bool(spec.get("flops", True)), clock=clock,
                  eval_divisor=int(spec.get("eval_divisor") or 1))
    try:
        numerics.apply(num)
        out["device_name"] = accel.device_name(num.device)
        ctx = JobContext(numerics=num, cap=meter, data=StandIns(spec.get("synthetic") or {}, out["notes"]))
        TASKS.get(spec["task"]).run(spec["params"], dict(spec["seeds"]), ctx)
        out["ok"] = True
    except Exception as exc:  # noqa: BLE001 - a failed check is a result
        out["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
        out["traceback"] = traceback.format_exc()
    out["figures"] = meter.figures(clock() - t0)
    out["clock"] = "wall" if num.device == "cuda" else f"process CPU time / {num.threads} thread(s)"
    out["peak_memory"] = peak_memory(num.device)
    return out


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    result = check(spec)
    tmp = Path(argv[1] + ".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(argv[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
