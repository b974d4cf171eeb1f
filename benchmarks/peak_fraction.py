"""Achieved fraction of the CPU's fp32 peak per representative job (issue 61): a number for
performance work to move.

Usage: python benchmarks/peak_fraction.py [--steps 6] [--jobs NAME ...] [--fast-numerics] [--write]

For each representative job (seed 0 of a reduced-tier cell: table1-punce CIFAR DCL,
table2-wconpu WConPU, table2-pucl InfoGraph DD) the job runs as ``pubench preflight`` runs
it (:func:`pubench.preflight.worker.check`, the real data under ``$PUBENCH_DATA``): every
training stage runs ``--steps`` optimizer steps of its first and last epoch, each step timed
in process CPU time (one thread: the other work on the machine does not inflate it), and the
FLOPs of its first step counted by PyTorch's ``FlopCounterMode`` (matrix products and
convolutions, forward and backward; augmentations, losses' elementwise work and optimizer
updates are not FLOPs here, they are what the fraction leaves out). Achieved = the stage's
FLOPs per step / the median of its steps after the first.

The peak is measured in the same process, before and after the jobs: the best of 5 rounds of
a 2048 x 2048 fp32 matrix product (``torch.mm``, one thread, the canonical AVX2 code path),
2 n^3 FLOPs each. Fraction = achieved / the larger of the two peaks.

Runs in the canonical numerics (the process restarts itself with their environment);
``--fast-numerics`` measures the opt-in fast profile instead (channels_last, torch.compile:
the first steps compile, so give it more ``--steps``). ``--write`` saves
``benchmarks/results/peak-fraction-<date>[-fast].json`` with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: name -> (spec, 'row|col') at the reduced tier, seed 0
JOBS = {
    "table1-punce CIFAR DCL": ("table1-punce", "CIFAR n_P=10k|DCL"),
    "table2-wconpu WConPU": ("table2-wconpu", "WConPU|CIFAR-10"),
    "table2-pucl InfoGraph DD": ("table2-pucl", "InfoGraph|DD"),
}


def restart_with_numerics(fast: bool) -> None:
    from pubench import numerics

    want = numerics.process_env(numerics.resolve(fast=fast))
    if all(os.environ.get(k) == v for k, v in want.items()):
        return
    env = {**os.environ, **want, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def matmul_peak(n: int = 2048, rounds: int = 5) -> float:
    """fp32 FLOP/s of the best of ``rounds`` ``n`` x ``n`` matrix products (process CPU time)."""
    import torch

    a = torch.randn(n, n, generator=torch.Generator().manual_seed(0))
    b = torch.randn(n, n, generator=torch.Generator().manual_seed(1))
    torch.mm(a, b)
    best = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        torch.mm(a, b)
        best = min(best, time.process_time() - t)
    return 2.0 * n**3 / best


def job_spec(spec_id: str, cell: str, fast: bool, steps: int) -> dict:
    from pubench import numerics
    from pubench.jobs import expand
    from pubench.registry import get_spec

    job = expand(get_spec(spec_id), "reduced", 1, only=[cell], numerics=numerics.resolve(fast=fast)).jobs[0]
    return {"task": job.task, "params": job.params, "seeds": job.seeds, "numerics": job.numerics, "steps": steps,
            "synthetic": {}, "flops": True, "name": job.name, "job_id": job.id}


def measure(name: str, spec: dict, peak: float) -> dict:
    from pubench.preflight.worker import check

    t0 = time.perf_counter()
    out = check(spec)
    if not out["ok"]:
        raise SystemExit(f"peak_fraction: {name}: {out.get('error')}")
    stages = []
    for st in out["figures"]["stages"]:
        steps = st.get("step_s") or []
        if not st.get("step_flops") or len(steps) < 2:
            continue
        step_s = statistics.median(steps[1:])
        achieved = st["step_flops"] / step_s
        stages.append({"stage": st["desc"], "step_gflop": round(st["step_flops"] / 1e9, 3),
                       "step_s": round(step_s, 4), "steps_timed": len(steps) - 1,
                       "achieved_gflops": round(achieved / 1e9, 2), "fraction_of_peak": round(achieved / peak, 3),
                       "projected_flops": st.get("projected_flops")})
    total = sum(s["projected_flops"] or 0 for s in stages)
    weighted = (sum(s["fraction_of_peak"] * (s["projected_flops"] or 0) for s in stages) / total) if total else None
    return {"job": spec["name"], "job_id": spec["job_id"], "stages": stages,
            "fraction_of_peak_flop_weighted": round(weighted, 3) if weighted is not None else None,
            "check_wall_s": round(time.perf_counter() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=6, help="steps timed per stage and epoch (default 6)")
    ap.add_argument("--jobs", nargs="*", choices=list(JOBS), default=list(JOBS), metavar="NAME",
                    help=f"which jobs (default all: {', '.join(JOBS)})")
    ap.add_argument("--fast-numerics", action="store_true", help="the opt-in fast profile (channels_last, compile)")
    ap.add_argument("--write", action="store_true", help="save benchmarks/results/peak-fraction-<date>.json")
    args = ap.parse_args(argv)
    # as pubench preflight's runner: a capped job must neither read a cached encoder (the pre-training
    # would not run) nor store its few-step encoder under the full pre-training's key
    os.environ["PUBENCH_ENCODER_CACHE"] = "0"
    restart_with_numerics(args.fast_numerics)
    import torch

    torch.set_num_threads(1)
    load_before = os.getloadavg()
    peak_before = matmul_peak()
    print(f"peak (2048^2 fp32 mm, 1 thread): {peak_before / 1e9:.1f} GFLOP/s; load {load_before[0]:.1f}", flush=True)
    results = []
    for name in args.jobs:
        res = measure(name, job_spec(*JOBS[name], args.fast_numerics, args.steps), peak_before)
        results.append({"name": name, **res})
        for s in res["stages"]:
            print(f"{name}: {s['stage']}: {s['step_gflop']} GFLOP/step, {s['step_s'] * 1e3:.1f} ms/step, "
                  f"{s['achieved_gflops']} GFLOP/s = {100 * s['fraction_of_peak']:.0f}% of peak", flush=True)
    peak_after = matmul_peak()
    peak = max(peak_before, peak_after)
    for r in results:  # against the better of the two peaks
        for s in r["stages"]:
            s["fraction_of_peak"] = round(s["achieved_gflops"] * 1e9 / peak, 3)
    print(f"peak after: {peak_after / 1e9:.1f} GFLOP/s; fractions against {peak / 1e9:.1f}")
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "steps": args.steps,
           "numerics": "fast (channels_last, torch.compile)" if args.fast_numerics else "canonical",
           "peak_gflops": {"before": round(peak_before / 1e9, 2), "after": round(peak_after / 1e9, 2)},
           "load_average": {"before": [round(v, 2) for v in load_before], "after": [round(v, 2) for v in os.getloadavg()]},
           "cpu": __import__("pubench.numerics", fromlist=["cpu_model"]).cpu_model(), "torch": torch.__version__,
           "jobs": results}
    if args.write:
        stem = f"peak-fraction-{out['date'][:10]}{'-fast' if args.fast_numerics else ''}.json"
        path = ROOT / "benchmarks" / "results" / stem
        path.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
