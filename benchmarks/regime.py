"""Cost / quality frontier of a cell's method at a tier: run the cell under a grid of
``key.path=value`` overrides and print the metric against core-minutes.

Used to pick reduced configurations that reach the methods' working regime (issue 36): the
reference row of a block (plain SimCLR, nnPU, ...) is run at a few widths, data sizes,
epoch counts and optimizers, and beside it the same architecture untrained
(``pretrain.epochs=0``), so the gain training buys is measured, not assumed. Points are
appended to a JSON-lines file as they finish (rerunning skips the points already there), so
a long measurement survives being stopped. Jobs run one at a time, one torch thread each
(the canonical numerics), with the caches off, into a scratch store.

    python benchmarks/regime.py table1-pucl --cell 'SimCLR|CIFAR10' \\
        --grid pretrain.epochs=0,4,10,20 --grid data.subset.train=4000,10000 \\
        --seeds 2 --out benchmarks/results/regime-table1-pucl.jsonl
    python benchmarks/regime.py --show benchmarks/results/regime-table1-pucl.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _grid(specs: list[str]) -> list[tuple[str, ...]]:
    axes = []
    for g in specs:
        key, _, values = g.partition("=")
        axes.append([f"{key}={v}" for v in _split(values)])
    return [tuple(p) for p in itertools.product(*axes)] if axes else [()]


def _split(values: str) -> list[str]:
    """Comma-separated values, commas inside [] or {} kept."""
    out, depth, cur = [], 0, ""
    for ch in values:
        depth += ch in "[{"
        depth -= ch in "]}"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def _done(path: Path) -> dict:
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(r["cell"], tuple(r["overrides"]), r["seed"]): r for r in rows}


def run(args) -> None:
    from pubench import numerics

    env = numerics.process_env(numerics.resolve())
    if any(os.environ.get(k) != v for k, v in env.items()):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **env, "PUBENCH_ENCODER_CACHE": "0"})
    from pubench.executors.worker import execute_job
    from pubench.jobs import expand
    from pubench.registry.overrides import apply_overrides
    from pubench.jobs.plan import Job
    from pubench.registry import get_spec
    from pubench.store import ResultStore

    os.environ["PUBENCH_ENCODER_CACHE"] = "0"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _done(out)
    base = [j for j in expand(get_spec(args.id), args.tier, args.seeds, [args.cell]).jobs]
    points = _grid(args.grid)
    for overrides in points:
        for job in base:
            key = (f"{job.row}|{job.col}", tuple(overrides), job.seed_index)
            if key in done:
                continue
            variant = Job(**{**{k: getattr(job, k) for k in Job.__dataclass_fields__},
                             "params": apply_overrides(job.params, overrides), "tier": "custom"})
            with tempfile.TemporaryDirectory(prefix="pubench-regime-") as scratch:
                t0 = time.time()
                status = execute_job(variant, scratch, claim=False, force=True)
                store = ResultStore(scratch)
                path = store.path(variant, failed=status != "ok")
                rec = json.loads(path.read_text())
            row = {"spec": args.id, "tier": args.tier, "cell": key[0], "overrides": list(overrides),
                   "seed": job.seed_index, "status": status, "core_min": round((time.time() - t0) / 60, 3),
                   "metrics": rec.get("metrics"), "error": (rec.get("error") or {}).get("message"),
                   "pretrain_loss": ((rec.get("info") or {}).get("pretrain") or {}).get("loss"),
                   "seconds": (rec.get("info") or {}).get("seconds")}
            with out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{key[0]} {' '.join(overrides) or '(as committed)'} seed {job.seed_index}: {status} "
                  f"{row['metrics'] and {k: round(v, 2) for k, v in row['metrics'].items()}} "
                  f"{row['core_min']:.1f} core-min", flush=True)
    show(out, args.metric)


def show(path: Path, metric: str | None = None) -> None:
    rows = [r for r in _done(path).values() if r["status"] == "ok"]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["cell"], tuple(r["overrides"])), []).append(r)
    print(f"\n{'cell':28s} {'overrides':60s} {'n':>2s} {'metric':>16s} {'core-min':>8s}")
    for (cell, ov), rs in sorted(groups.items()):
        m = metric or next(iter(rs[0]["metrics"]))
        vals = [r["metrics"][m] for r in rs]
        sd = f"±{statistics.stdev(vals):.1f}" if len(vals) > 1 else ""
        print(f"{cell[:28]:28s} {' '.join(ov)[:60]:60s} {len(rs):2d} {m}={statistics.fmean(vals):6.2f}{sd:>6s} "
              f"{statistics.fmean(r['core_min'] for r in rs):8.1f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("id", nargs="?")
    p.add_argument("--cell", help="ROW|COL (one cell)")
    p.add_argument("--tier", default="reduced")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                   help="an axis of the grid (repeatable; the grid is their product)")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--metric", help="the metric to print (default: the first)")
    p.add_argument("--out", help="JSON-lines file (appended; points already there are skipped)")
    p.add_argument("--show", metavar="FILE", help="only print the table of FILE")
    args = p.parse_args()
    if args.show:
        show(Path(args.show), args.metric)
        return
    if not (args.id and args.cell and args.out):
        p.error("id, --cell and --out are required (or --show FILE)")
    run(args)


if __name__ == "__main__":
    main()
