"""How many jobs a campaign runs at once on its device (``--concurrency auto``): the least of

* **memory**: the device's free memory x :data:`MEMORY_SHARE` / what one job holds: the
  largest peak among the jobs the window can reach (their preflight figures:
  ``torch.cuda.max_memory_allocated`` on CUDA, the resident set on the CPU) x
  :data:`ALLOCATOR_SLACK` (PyTorch's caching allocator reserves more than it hands out), plus
  :data:`CUDA_CONTEXT_BYTES` per process on CUDA;
* **throughput** (CUDA): the most FLOP/s any committed figure drew from a device of this
  name (:mod:`pubench.preflight.committed`; a ResNet-18 at 32 x 32 drew 92 TFLOP/s from the
  H200) / the most any of those jobs draws alone (its figure's main stage: counted FLOPs /
  measured step time): past that many, the jobs together would ask for more than the device
  was seen to give;
* **cores**: the usable cores / threads per job (each job's process keeps a core busy, on
  CUDA launching its kernels);
* **host memory** (CUDA): the machine's memory x :data:`MEMORY_SHARE` / (the largest CPU
  preflight peak among those jobs + :data:`HOST_CUDA_BYTES`);
* :data:`MAX_CONCURRENCY`.

The jobs the window can reach: the pending jobs in queue order until their projected time
alone adds up to the budget x the cores bound (more cannot start in the window). A bound
without figures (no memory figure, no rate) is left out and said so.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, field

MAX_CONCURRENCY = 32
MEMORY_SHARE = 0.9
ALLOCATOR_SLACK = 1.25
#: a CUDA context and PyTorch's kernels in each process (about 0.5 GiB measured by nvidia-smi on
#: H100s with torch 2.x; a round figure above it)
CUDA_CONTEXT_BYTES = int(0.75 * 2**30)
#: what a job's process holds in host memory on a CUDA machine besides its CPU figure's peak (which
#: counts the data and the model on the CPU): torch's CUDA libraries, a round figure above what
#: such processes hold (not measured here)
HOST_CUDA_BYTES = 2 * 2**30


@dataclass
class Device:
    """What the campaign runs on: its kind, its name, and its free memory (bytes; None: unknown)."""

    kind: str
    name: str
    free_bytes: int | None
    notes: list[str] = field(default_factory=list)
    cores: int | None = None        # the machine's usable cores (None: this machine's)
    planned_for: str | None = None  # a lease's kind planned for (`--for`), not this machine
    host_bytes: int | None = None   # the machine's memory for the jobs' processes (CUDA; None: unknown)


@dataclass
class Choice:
    n: int
    bounds: dict[str, int]          # bound -> jobs at once
    lines: list[str]                # each bound with its figures; the first says the choice

    def describe(self) -> str:
        return "\n".join(self.lines)


def probe(kind: str) -> Device:
    """The device of ``kind`` on this machine (``cuda``: GPU 0, by ``nvidia-smi``, else by a
    short torch process, so this process holds no CUDA context)."""
    if kind == "cpu":
        from pubench.numerics import cpu_model

        return Device("cpu", cpu_model(), _available_memory())
    if shutil.which("nvidia-smi"):
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.free", "--format=csv,noheader,nounits",
                              "--id=0"], capture_output=True, text=True, timeout=60)
        if out.returncode == 0 and out.stdout.strip():
            name, free_mib = [x.strip() for x in out.stdout.strip().splitlines()[0].rsplit(",", 1)]
            return Device("cuda", name, int(float(free_mib)) * 2**20, host_bytes=_available_memory())
    code = ("import torch; free, _ = torch.cuda.mem_get_info(0); "
            "print(torch.cuda.get_device_name(0)); print(free)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        return Device("cuda", "no CUDA device", None, [out.stderr.strip().splitlines()[-1][:200]
                                                        if out.stderr.strip() else "torch found no CUDA device"])
    name, free = out.stdout.strip().splitlines()[-2:]
    return Device("cuda", name, int(free), host_bytes=_available_memory())


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def reachable(pending: list, budget_s: float, cores: int) -> list:
    """The pending jobs (queue order) a window of ``budget_s`` could start with ``cores`` at once."""
    out, total = [], 0.0
    for p in pending:
        if total > budget_s * cores:
            break
        out.append(p)
        total += p.projected_s or 0.0
    return out


def cores_bound(threads: int = 1, cores: int | None = None) -> int:
    """Jobs at once the cores allow: the usable cores (``cores``, else this machine's) / threads per job."""
    from pubench.executors.cores import usable_cores

    return max(1, (cores or usable_cores()) // max(1, threads))


def choose(requested: int | str, device: Device, jobs: list, threads: int = 1) -> Choice:
    """Jobs at once: ``requested`` when a number, else the least bound (module docstring) over
    ``jobs`` (:class:`pubench.campaign.plan.Planned`)."""
    from pubench.executors.cores import usable_cores

    cores = device.cores or usable_cores()
    bounds: dict[str, int] = {"cores": cores_bound(threads, cores)}
    lines = [f"  cores: {bounds['cores']} ({cores} usable core(s)"
             + (f", stated for {device.planned_for}" if device.planned_for else "") + f" / {threads} thread(s) per job)"]
    peaks = [p.peak_bytes for p in jobs if p.peak_bytes]
    if peaks and device.free_bytes:
        per_job = max(peaks) * ALLOCATOR_SLACK + (CUDA_CONTEXT_BYTES if device.kind == "cuda" else 0)
        bounds["memory"] = max(1, int(device.free_bytes * MEMORY_SHARE // per_job))
        context = f" + {CUDA_CONTEXT_BYTES / 2**30:.2f} GiB CUDA context" if device.kind == "cuda" else ""
        free = "stated for " + device.planned_for if device.planned_for else "free"
        lines.append(f"  memory: {bounds['memory']} ({_gib(device.free_bytes)} {free} x {MEMORY_SHARE} / "
                     f"({_gib(max(peaks))} largest preflight peak (measured) x {ALLOCATOR_SLACK}{context}))")
    else:
        lines.append("  memory: no bound (" + ("no memory figure for these jobs" if not peaks
                                                else "the device's free memory is unknown") + ")")
    host = [p.cpu_peak_bytes for p in jobs if getattr(p, "cpu_peak_bytes", None)]
    if device.kind == "cuda" and device.host_bytes and host:
        per_job = max(host) + HOST_CUDA_BYTES
        bounds["host memory"] = max(1, int(device.host_bytes * MEMORY_SHARE // per_job))
        free = "stated for " + device.planned_for if device.planned_for else "available"
        lines.append(f"  host memory: {bounds['host memory']} ({_gib(device.host_bytes)} {free} x {MEMORY_SHARE} / "
                     f"({_gib(max(host))} largest CPU preflight peak (measured) + {_gib(HOST_CUDA_BYTES)} for torch's "
                     "CUDA libraries (conservative)))")
    if device.kind == "cuda":
        drawn = [p.tflops for p in jobs if p.tflops]
        most = _most_drawn(device.name)
        if drawn and most:
            bounds["throughput"] = max(1, int(most // max(drawn)))
            lines.append(f"  throughput: {bounds['throughput']} ({most:.1f} TFLOP/s, the most a committed figure drew "
                         f"from {device.name} / {max(drawn):.2f} TFLOP/s, the most one of these jobs draws alone; "
                         "measured)")
        else:
            lines.append("  throughput: no bound (" + ("no FLOP rate for these jobs" if not drawn
                                                         else f"no committed figure on {device.name}") + ")")
    bounds["cap"] = MAX_CONCURRENCY
    if requested != "auto":
        n = min(int(requested), bounds["cores"])  # each job holds a core slot: more would wait for one
        capped = ", capped at the cores bound" if n < int(requested) else ""
        return Choice(n, bounds, [f"concurrency: {n} job(s) at once (--concurrency {requested}{capped}); the bounds "
                                  f"would give {min(bounds.values())}:"] + lines)
    n = min(bounds.values())
    which = ", ".join(k for k, v in bounds.items() if v == n)
    return Choice(n, bounds, [f"concurrency: {n} job(s) at once (auto: the least bound, {which}; over the "
                              f"{len(jobs)} job(s) this window can reach):"] + lines)


def _most_drawn(device_name: str) -> float | None:
    from pubench.preflight.committed import figures

    figs = figures().get("cuda", {}).values()
    rates = [r for f in figs if f.device_name == device_name and (r := f.achieved_tflops())]
    return max(rates) if rates else None


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"
