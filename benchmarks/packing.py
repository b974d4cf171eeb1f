"""The packing ratio R(N): the aggregate throughput of N jobs at once on one device over that
of one job at a time (``pubench.preflight.packing``), measured with the campaign's own
scheduler (``pubench.campaign.schedule``: worker processes, each job claimed and recorded).

Usage: python benchmarks/packing.py SPEC --tier T [--only 'ROW|COL' ...] [--set KEY=VALUE ...]
           [--seeds S] [--n 1 2 4] [--device cpu|cuda] [--write] [--out DIR]

On a lease's GPU the campaign measures R(N) itself, in its window's first minutes and on the
queue's own first network (``pubench.campaign.calibrate``, into ``$OUT``); this script measures
whole jobs N at a time, which a 10-minute command only affords for short ones (``--out $OUT``
puts its JSON where a lease returns it).

The same jobs (the selected cells x seeds) run once per N into a fresh scratch store, N at a
time; R(N) = wall(1) / wall(N), each wall from the first job handed out to the last record
written (the workers' start-up, torch and the first CUDA use, is in every wall once; the
encoder cache is off, so no N reuses another's pre-training). The records of every N must
agree (same metrics; checked). ``--write`` saves
``benchmarks/results/packing-<device>-<date>.json``, which campaigns and ``run --dry-run``
then use. On the CPU the jobs take private core slots (other runs on the machine are not
waited for, so what they load the cores with is part of the figure: the load average is
recorded); on one GPU the same command runs the same way (``--device cuda``, e.g. paper-tier
cells with ``--set train.epochs=3`` to keep the jobs short).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def measure(jobs: list, n: int, say) -> dict:
    """Run ``jobs`` ``n`` at a time into a scratch store; the wall and each job's record."""
    from pubench.campaign import schedule
    from pubench.campaign.plan import Planned
    from pubench.store import ResultStore

    with tempfile.TemporaryDirectory(prefix=f"pubench-packing-{n}-") as tmp:
        pending = [Planned(j, 0, 1.0, "benchmark") for j in jobs]
        before = load_average()
        t0 = time.time()
        out = schedule.run(pending, n, schedule.Budget(t0, 10 * 24 * 3600.0), tmp, 1.0, say=lambda _: None)
        wall = time.time() - t0
        store = ResultStore(tmp)
        records = [store.read(j) for j in jobs]
    bad = [r.status for r in out.ran if r.status != "ok"]
    if bad or any(r is None for r in records):
        raise SystemExit(f"packing: N = {n}: not every job ended ok ({bad})")
    say(f"  N = {n}: {len(jobs)} job(s) in {wall:.1f} s ({len(jobs) / wall * 60:.2f} jobs/min; load average "
        f"{before} -> {load_average()})")
    return {"n": n, "wall_s": round(wall, 2), "load_average": [before, load_average()],
            "job_wall_s": [round(r["timing"]["wall_s"], 2) for r in records],
            "metrics": {j.id: r["metrics"] for j, r in zip(jobs, records)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--tier", default="smoke")
    ap.add_argument("--only", action="append")
    ap.add_argument("--set", dest="overrides", action="append", metavar="KEY=VALUE")
    ap.add_argument("--seeds", type=int)
    ap.add_argument("--n", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--write", action="store_true", help="save benchmarks/results/packing-<device>-<date>.json")
    ap.add_argument("--out", type=Path, help="also save the JSON into this folder (e.g. $OUT on a lease's machine)")
    args = ap.parse_args(argv)

    from pubench import numerics
    from pubench.jobs import expand
    from pubench.registry import get_spec

    num = numerics.resolve(device=args.device)
    missing = {k: v for k, v in numerics.process_env(num).items() if os.environ.get(k) != v}
    if missing:  # the libraries read them when they load: restart with them, as `pubench run` does
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **missing})
    os.environ["PUBENCH_CORE_SLOTS"] = tempfile.mkdtemp(prefix="pubench-packing-slots-")
    os.environ["PUBENCH_ENCODER_CACHE"] = "0"  # every N pre-trains its own encoders: none reuses another's
    jobs = expand(get_spec(args.spec), args.tier, args.seeds, args.only, numerics=num, overrides=args.overrides).jobs
    from pubench.campaign.concurrency import probe

    device = probe(args.device)
    print(f"packing: {len(jobs)} job(s) of {args.spec} at tier {jobs[0].tier} on {device.name} ({args.device}), "
          f"N = {', '.join(map(str, args.n))}; {os.cpu_count()} CPU(s), load average {load_average()}", flush=True)
    runs = [measure(jobs, n, lambda line: print(line, flush=True)) for n in sorted(set(args.n))]
    first = runs[0]
    if any(r["metrics"] != first["metrics"] for r in runs):
        raise SystemExit("packing: the records differ between N: packing must not change a job's numbers")
    one = next((r for r in runs if r["n"] == 1), None)
    ratios = {str(r["n"]): round(one["wall_s"] / r["wall_s"], 3) for r in runs if one and r["n"] > 1}
    for n, ratio in ratios.items():
        print(f"packing: R({n}) = {ratio:.2f} (each job {int(n) / ratio:.2f}x its time alone)")
    result = {"device": args.device, "device_name": device.name, "date": datetime.now(timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC"), "spec": args.spec, "tier": args.tier, "only": args.only, "set": args.overrides,
        "jobs": len(jobs), "cpus": os.cpu_count(), "ratios": ratios,
        "conditions": f"{os.cpu_count()} CPU(s), load average {runs[0]['load_average'][0]} before N = {runs[0]['n']}",
        "runs": [{k: v for k, v in r.items() if k != "metrics"} for r in runs]}
    name = f"packing-{args.device}-{datetime.now(timezone.utc):%Y-%m-%d}.json"
    for folder in ([ROOT / "benchmarks" / "results"] if args.write else []) + ([args.out] if args.out else []):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(json.dumps(result, indent=1) + "\n")
        print(f"packing: wrote {folder / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
