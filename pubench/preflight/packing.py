"""Packing: several jobs at once on one device, and what it gains.

The packing ratio R(N) is the aggregate throughput of N concurrent jobs on one device over
that of one job at a time (``benchmarks/packing.py`` measures it into
``benchmarks/results/packing-<device>-<date>.json``). N packed jobs take 1 / R(N) of the
device time they take one at a time, and each takes ``slowdown(N) = N / R(N)`` times its
time alone: what a campaign (:mod:`pubench.campaign`) admits jobs by, and what the SLURM
executor's ``jobs_per_gpu`` saves (``run --dry-run``, docs/gpu.md).

Between measured counts R is interpolated linearly from R(1) = 1; past the largest measured
count it stays at that count's value (no gain is assumed that was not seen). Without a
measurement for the device, :data:`ASSUMED_GAIN` gives R(N) = 1 + gain x (N - 1), said as
assumed wherever it is used (:func:`packing`: the cost estimates of ``run --dry-run`` and
docs/gpu.md). A campaign runs by :func:`campaign_packing` instead: on CUDA only a ratio
measured on a GPU of the same name, else **conservative** R(N) = 1 (no gain that was not
measured: packing then only slows each job), until the window's first minutes measure it
(:mod:`pubench.campaign.calibrate`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

#: R(N) = 1 + gain x (N - 1) where nothing was measured: on the CPU each job holds its own
#: core (core slots), so N jobs on N free cores run N times as much; on one GPU the small
#: paper-tier nets leave most of it idle (docs/gpu.md: a few percent of its FLOP rate, at
#: least 4 ms per optimizer step), but N processes share its time slices: half a job's
#: throughput per extra job is a guess until `benchmarks/packing.py` measures it
ASSUMED_GAIN = {"cpu": 1.0, "cuda": 0.5}


@dataclass(frozen=True)
class Packing:
    """R(N) on one device: measured points (N -> ratio) or the assumed line."""

    device: str
    points: tuple[tuple[int, float], ...]  # (N, R(N)), N ascending; empty: assumed (or conservative)
    source: str
    conservative: bool = False             # no points: R(N) = 1 rather than the assumed line

    @property
    def measured(self) -> bool:
        return bool(self.points)

    @property
    def basis(self) -> str:
        return "measured" if self.points else "conservative" if self.conservative else "assumed"

    def ratio(self, n: int) -> float:
        if n <= 1:
            return 1.0
        if not self.points:
            return 1.0 if self.conservative else 1.0 + ASSUMED_GAIN.get(self.device, 0.5) * (n - 1)
        lo_n, lo_r = 1, 1.0
        for p_n, p_r in self.points:
            if n <= p_n:
                return lo_r + (p_r - lo_r) * (n - lo_n) / (p_n - lo_n)
            lo_n, lo_r = p_n, p_r
        return lo_r

    def slowdown(self, n: int) -> float:
        """How much longer each of ``n`` packed jobs takes than alone."""
        return max(1.0, n / self.ratio(n))

    def describe(self, n: int) -> str:
        return f"R({n}) = {self.ratio(n):.2f}, each job {self.slowdown(n):.2f}x its time alone ({self.source})"


def measurements(folder: Path | None = None) -> list[dict]:
    """Every committed packing measurement (``packing-*.json``), oldest first."""
    from pubench.paths import measurements_root

    out = []
    for path in sorted((folder or measurements_root()).glob("packing-*.json")):
        try:
            m = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(m, dict) and isinstance(m.get("ratios"), dict):
            out.append(m | {"file": path.name})
    return sorted(out, key=lambda m: str(m.get("date")))


@functools.lru_cache(maxsize=16)
def packing(device: str, device_name: str | None = None, folder: Path | None = None) -> Packing:
    """R(N) on ``device``: the newest measurement on a device of that name, else on any of
    that kind, else assumed."""
    found = [m for m in measurements(folder) if m.get("device") == device]
    named = [m for m in found if device_name and m.get("device_name") == device_name]
    if named or found:
        m = (named or found)[-1]
        points = tuple(sorted((int(n), float(r)) for n, r in m["ratios"].items() if int(n) > 1))
        return Packing(device, points, f"measured on {m.get('device_name')}, {m.get('date')}, {m['file']}"
                       + (f"; {m['conditions']}" if m.get("conditions") else ""))
    return Packing(device, (), f"assumed: R(N) = 1 + {ASSUMED_GAIN.get(device, 0.5):g} (N - 1), no packing measured "
                               f"on {device} yet (benchmarks/packing.py)")


def from_measurement(m: dict, file: str = "") -> Packing:
    """The :class:`Packing` of one measurement (a ``packing-*.json``'s content)."""
    points = tuple(sorted((int(n), float(r)) for n, r in m["ratios"].items() if int(n) > 1))
    return Packing(m.get("device") or "cuda", points, f"measured on {m.get('device_name')}, {m.get('date')}"
                   + (f", {file}" if file else "") + (f"; {m['conditions']}" if m.get("conditions") else ""))


def campaign_packing(device: str, device_name: str, folder: Path | None = None) -> Packing:
    """R(N) a campaign runs by: on the CPU as :func:`packing`; on CUDA the newest measurement on a
    GPU named ``device_name``, else conservative R(N) = 1 (module docstring)."""
    if device != "cuda":
        return packing(device, device_name, folder)
    named = [m for m in measurements(folder) if m.get("device") == device and m.get("device_name") == device_name]
    if named:
        return from_measurement(named[-1], named[-1]["file"])
    other = sorted({str(m.get("device_name")) for m in measurements(folder) if m.get("device") == device})
    return Packing(device, (), f"conservative: R(N) = 1, no packing measured on {device_name}"
                   + (f" (only on {', '.join(other)})" if other else "")
                   + "; the window's first minutes measure it", conservative=True)
