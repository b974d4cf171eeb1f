"""Job time before / after a code change on the representative jobs, measured in one run
(issue 61: the same-numbers speedups), and whether the numbers stayed the same.

Usage: python benchmarks/job_speedups.py --baseline REF [--pairs 3] [--full] [--no-warmup] [--write]
       python benchmarks/job_speedups.py --fast [--pairs 2] [--jobs NAME ...] [--write]

``REF`` (a commit of this repository) is unpacked into a temporary folder (``git archive``);
each job then runs from the baseline's code and from this tree's in turn, A B, B A, ... (the
order alternates, so a drift of the machine's load falls on both), ``--pairs`` times, each run
a fresh ``pubench run`` into a scratch store (the encoder cache off, so each run trains),
after one warm-up run per side that is not counted (it builds the data caches). Per run: the
job's own wall time (its record's ``timing.wall_s``) and the CPU time of the whole command
(``getrusage`` of the children: start-up included). Per job: the median over pairs of the
ratio after / before, and whether the two sides' records have the same metrics (wall-clock
metrics aside) and job id.

The jobs are seed 0 of three reduced-tier cells with their epochs capped (``--set``), so a
run takes a minute or two: table1-punce CIFAR DCL (``pretrain.epochs=2``,
``downstream.epochs=10``; the cell: 6 and 30), table2-wconpu WConPU (``train.epochs=2``; 8),
table2-pucl InfoGraph DD (``pretrain.epochs=5``; 20). ``--full`` runs them uncapped.
``--write`` saves ``benchmarks/results/job-speedups-<date>.json`` with the load average.

``--fast``: instead of a baseline commit, this tree's canonical profile (before) against its
opt-in fast profile (after: ``pubench run --fast-numerics``, channels_last and torch.compile;
compilation included in the job's time; other numbers, so ``same_metrics`` is false);
saved as ``job-speedups-fast-<date>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: name -> (spec, 'row|col', the --set caps)
JOBS = {
    "table1-punce CIFAR DCL": ("table1-punce", "CIFAR n_P=10k|DCL", ["pretrain.epochs=2", "downstream.epochs=10"]),
    "table2-wconpu WConPU": ("table2-wconpu", "WConPU|CIFAR-10", ["train.epochs=2"]),
    "table2-pucl InfoGraph DD": ("table2-pucl", "InfoGraph|DD", ["pretrain.epochs=5"]),
}


def unpack(ref: str, dest: Path) -> str:
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", ref], capture_output=True, text=True,
                         check=True).stdout.strip()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return sha


def run_once(code: Path, spec_id: str, cell: str, sets: list[str], scratch: Path, extra: list[str]) -> dict:
    """One ``pubench run`` of the job from the code under ``code``: its record's wall time and
    metrics, and the command's CPU time."""
    store = Path(tempfile.mkdtemp(prefix="store-", dir=scratch))
    path = os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH")]))  # the side's code first
    env = {**os.environ, "PYTHONPATH": path, "PUBENCH_RESULTS": str(store), "PUBENCH_ENCODER_CACHE": "0",
           "PUBENCH_CORE_SLOTS": "off", "PUBENCH_PROGRESS": "0", "PUBENCH_REPORTS": str(scratch / "reports")}
    cmd = [sys.executable, "-m", "pubench", "run", spec_id, "--tier", "reduced", "--only", cell, "--seeds", "1",
           "--jobs", "1", "--no-progress", *[a for s in sets for a in ("--set", s)], *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=code, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    recs = [json.loads(p.read_text()) for p in store.rglob("*.json") if "__s0--" in p.name]
    if proc.returncode != 0 or len(recs) != 1 or "metrics" not in recs[0]:
        raise SystemExit(f"job_speedups: {spec_id} {cell} from {code} failed (exit {proc.returncode}):\n"
                         f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    rec = recs[0]
    clock = set((rec.get("info") or {}).get("wall_clock_metrics") or ())
    return {"job_wall_s": rec["timing"]["wall_s"], "command_wall_s": round(wall, 2),
            "command_cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
            "job_id": rec["job"]["id"], "metrics": {k: v for k, v in rec["metrics"].items() if k not in clock}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", help="the commit before the change (e.g. main, 85eebbd)")
    ap.add_argument("--fast", action="store_true", help="this tree's canonical profile against its fast one")
    ap.add_argument("--no-warmup", action="store_true", help="no uncounted first run per side and job (the data "
                    "caches already built)")
    ap.add_argument("--pairs", type=int, default=3, help="timed pairs per job (default 3)")
    ap.add_argument("--jobs", nargs="*", choices=list(JOBS), default=list(JOBS), metavar="NAME")
    ap.add_argument("--full", action="store_true", help="the jobs as the cells run them (no epoch caps)")
    ap.add_argument("--write", action="store_true", help="save benchmarks/results/job-speedups-<date>.json")
    args = ap.parse_args(argv)
    if bool(args.baseline) == args.fast:
        ap.error("give --baseline REF or --fast")
    scratch = Path(tempfile.mkdtemp(prefix="pubench-job-speedups-"))
    if args.fast:
        sha = None
        sides = {"before": (ROOT, []), "after": (ROOT, ["--fast-numerics"])}
    else:
        base = scratch / "baseline"
        base.mkdir()
        sha = unpack(args.baseline, base)
        sides = {"before": (base, []), "after": (ROOT, [])}
    load0 = os.getloadavg()
    out_jobs = []
    for name in args.jobs:
        spec_id, cell, sets = JOBS[name]
        sets = [] if args.full else sets
        for side, (code, extra) in sides.items():  # warm-up: data caches, imports
            if not args.no_warmup:
                run_once(code, spec_id, cell, sets, scratch, extra)
                print(f"{name}: {side} warm-up done", flush=True)
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for pair in range(args.pairs):
            order = ["before", "after"] if pair % 2 == 0 else ["after", "before"]
            for side in order:
                runs[side].append(run_once(*sides[side][:1], spec_id, cell, sets, scratch, sides[side][1]))
            b, a = runs["before"][-1], runs["after"][-1]
            print(f"{name} pair {pair + 1}: job {b['job_wall_s']:.1f} s -> {a['job_wall_s']:.1f} s, command CPU "
                  f"{b['command_cpu_s']:.1f} -> {a['command_cpu_s']:.1f} s; load {os.getloadavg()[0]:.1f}", flush=True)
        ratio = [a["job_wall_s"] / b["job_wall_s"] for a, b in zip(runs["after"], runs["before"])]
        cpu = [a["command_cpu_s"] / b["command_cpu_s"] for a, b in zip(runs["after"], runs["before"])]
        same = all(r["metrics"] == runs["before"][0]["metrics"] and r["job_id"] == runs["before"][0]["job_id"]
                   for r in runs["before"] + runs["after"])
        repeatable = all(r["metrics"] == runs[side][0]["metrics"] for side in runs for r in runs[side])
        out_jobs.append({"name": name, "cell": f"{spec_id} {cell}", "set": sets, "runs": runs,
                         "job_time_ratio_after_over_before": round(statistics.median(ratio), 3),
                         "command_cpu_ratio_after_over_before": round(statistics.median(cpu), 3),
                         "speedup_job_time": round(1 / statistics.median(ratio), 3),
                         "same_metrics_and_job_id": same, "each_side_repeats_its_metrics": repeatable})
        print(f"{name}: job time after/before {statistics.median(ratio):.3f} (speed-up "
              f"{1 / statistics.median(ratio):.2f}x), command CPU {statistics.median(cpu):.3f}; same numbers: {same}",
              flush=True)
    out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "baseline": sha,
           "compared": "canonical profile (before) vs --fast-numerics (after)" if args.fast else
           "the baseline commit's code (before) vs this tree's (after)",
           "after": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                                   text=True).stdout.strip(),
           "after_tree_dirty": bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "pubench"],
                                                   capture_output=True, text=True).stdout.strip()),
           "pairs": args.pairs, "load_average": {"before": [round(v, 2) for v in load0],
                                                 "after": [round(v, 2) for v in os.getloadavg()]},
           "cpu": __import__("pubench.numerics", fromlist=["cpu_model"]).cpu_model(), "jobs": out_jobs}
    if args.write:
        path = ROOT / "benchmarks" / "results" / f"job-speedups-{'fast-' if args.fast else ''}{out['date'][:10]}.json"
        path.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
