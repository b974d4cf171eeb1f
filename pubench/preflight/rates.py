"""Achieved GPU rates: the time one FLOP of a paper-tier job costs on the GPU, by kind of
network, and the least time of one optimizer step (launch-bound small nets).

:data:`ASSUMED` holds rates for fp32 training (convolutions in TF32, PyTorch's default) on
one H100 under deterministic algorithms; :func:`calibrate` replaces them by what a
``make gpu-check`` JSON measured (each preflight cell's counted FLOPs / measured step time),
and :func:`committed_rates` does so from the newest such JSON under ``benchmarks/results/``.
``pubench.tools.paper_cost`` (the cost table of docs/gpu.md) and the estimates of
:mod:`pubench.preflight.committed` read the same rates.
"""

from __future__ import annotations

import functools
import json
import statistics
from pathlib import Path

#: TFLOP/s achieved per kind of network, and seconds per optimizer step at least
ASSUMED = {"conv32": 25.0, "conv_large": 50.0, "text": 30.0, "step_floor_s": 0.004}


def calibrate(path: Path | None) -> tuple[dict, str]:
    """Rates from a gpu-check JSON's preflight cells (counted FLOPs / measured step time of
    each cell's main stage), else :data:`ASSUMED`; and where they come from, in words."""
    rates = dict(ASSUMED)
    if path is None or not path.is_file():
        return rates, "assumed (no `make gpu-check` figures yet)"
    res = json.loads(path.read_text())
    env = res["environment"]
    got = {}
    for c in (res["parts"].get("preflight") or {}).get("cells", []):
        for cell in (c.get("preflight") or {}).get("cells", []):
            for s in (cell.get("figures") or {}).get("stages", []):
                if s.get("step_flops") and len(s.get("step_s") or []) > 1:
                    kind = "text" if cell["task"] == "text_fewshot" else "conv32" if cell["id"] == "table1-pucl" else None
                    if kind:
                        got[kind] = s["step_flops"] / statistics.median(s["step_s"][1:]) / 1e12
    rates.update(got)
    return rates, (f"calibrated on {env['device_name']} ({env['date']}, torch {env['torch']}) for "
                   f"{', '.join(sorted(got)) or 'nothing'}; the rest assumed")


def newest_gpu_check(folder: Path) -> Path | None:
    """The gpu-check JSON of ``folder`` measured last (by its own date, not its name)."""
    found = []
    for p in folder.glob("gpu-check-*.json"):
        try:
            found.append((json.loads(p.read_text())["environment"]["date"], p))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return max(found)[1] if found else None


@functools.lru_cache(maxsize=4)
def committed_rates(folder: Path | None = None) -> tuple[dict, str]:
    """:func:`calibrate` on the newest gpu-check JSON under ``folder`` (default
    ``benchmarks/results/``)."""
    from pubench.paths import measurements_root

    return calibrate(newest_gpu_check(folder or measurements_root()))


def kind_of(task: str, shape: tuple[int, ...] | None) -> str:
    """The rate a job's networks train at: ``text`` (RoBERTa), ``conv32`` (inputs up to 32 x 32)
    or ``conv_large``."""
    if task == "text_fewshot":
        return "text"
    return "conv32" if shape is None or shape[-1] * shape[-2] <= 32 * 32 else "conv_large"
