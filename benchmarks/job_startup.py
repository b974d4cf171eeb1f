"""What a job's own process costs besides the job (issue 34): what a SLURM array task pays.

Usage: python benchmarks/job_startup.py [--runs 3] [--baseline PATH] [--spec fig5-bcl] [--tier smoke]

Runs the first job of ``--spec`` at ``--tier`` the way an array task does: a fresh Python
process started with the numerics environment already set (as the batch script exports
it: no re-exec), which calls :func:`pubench.executors.worker.execute_job` on the job into a
scratch store (no claim). Prints the process's wall time, the job's own wall time (its
record's ``timing.wall_s``) and the difference, the start-up (interpreter, imports,
numerics checks, record writing), best of ``--runs``; ``--baseline PATH`` times another
checkout the same way in the same call.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUN = ("import json, sys\n"
       "from pubench.executors.worker import execute_job\n"
       "print(execute_job(json.load(open(sys.argv[1])), sys.argv[2], claim=False, force=True))\n")


def job_dict(spec_id: str, tier: str) -> dict:
    from pubench.jobs import expand
    from pubench.registry import get_spec

    return expand(get_spec(spec_id), tier, 1).jobs[0].to_dict()


def time_job(root: Path, job_file: Path, store: Path, runs: int) -> tuple[float, float]:
    from pubench.numerics import process_env

    env = {**os.environ, **process_env(), "PYTHONPATH": str(root), "PUBENCH_HOME": str(root),
           "PUBENCH_ENCODER_CACHE": "0", "PUBENCH_PROGRESS": "0"}
    best = None
    for _ in range(runs):
        shutil.rmtree(store, ignore_errors=True)
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", RUN, str(job_file), str(store)], cwd=root, env=env,
                             capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if out.returncode != 0 or out.stdout.strip() != "ok":
            raise SystemExit(f"{root}: the job did not run: {out.stdout[-500:]} {out.stderr[-2000:]}")
        rec = json.loads(next(store.glob("*/*/*.json")).read_text())
        job_s = float(rec["timing"]["wall_s"])
        if best is None or wall < best[0]:
            best = (wall, job_s)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", type=Path)
    ap.add_argument("--spec", default="fig5-bcl")
    ap.add_argument("--tier", default="smoke")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="pubench-bench-startup-"))
    try:
        job_file = scratch / "job.json"
        job_file.write_text(json.dumps(job_dict(args.spec, args.tier)))
        load = os.getloadavg()
        print(f"# one {args.spec} {args.tier} job in a fresh process, best of {args.runs}; load average "
              f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}\n")
        print("| checkout | process s | job s | start-up s |\n|---|---|---|---|")
        for label, root in [("after", ROOT)] + ([("before", args.baseline.resolve())] if args.baseline else []):
            wall, job_s = time_job(root, job_file, scratch / f"store-{label}", args.runs)
            print(f"| {label} ({root.name}) | {wall:.2f} | {job_s:.2f} | {wall - job_s:.2f} |", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
