"""A short run of one paper-tier cell: each training stage capped at a few epochs, timed,
and projected to the full job and the full table.

Usage: python -m pubench.tools.paper_cell ID --cell 'ROW|COL' [--epochs 3] [--device cuda]
                                            [--synthetic cifar10 ...] [--precision bf16] [--compile]
                                            [--json FILE]

The job is the cell's seed-0 paper-tier job, run in this process as ``pubench run`` would
run it (the device's numerics profile: deterministic algorithms, one CPU thread), except
that every training loop (:class:`pubench.train.loop.Trainer`) runs at most ``--epochs``
epochs (the job's context holds a :class:`StageTimer` as its step cap); the stages'
schedules still span their full epochs. Its metrics are meaningless and nothing is
written to a result store.

Projection, per training stage with E epochs of which k ran: the first epoch (warm-up:
cuDNN autotuning, compilation) + the median of the others x (E - 1) + the stage's time
outside its epochs (evaluation hooks) scaled by E / k. The job's projection adds the time
outside any training loop (data loading, feature extraction, evaluation) once. The
table's projection multiplies the job by the number of jobs of the table's paper tier
(every cell, the spec's seeds): it assumes the cells cost alike, which holds for a table
whose rows differ only in the loss (e.g. table1-pucl) and not for one that mixes methods.

``--synthetic NAME``: the image data set NAME is replaced by random uint8 images of its
shape and size (a temporary data root holding only those), for timing where the data are
not at hand; data sets not named are read from ``$PUBENCH_DATA`` as usual. (``pubench
preflight`` measures every cell of a tier in a few steps each; this script runs whole
epochs of one.)
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from pubench.train.context import StepCap

def synthetic_root(names: list[str]) -> Path:
    """A temporary data root with random images of each named data set (processed caches;
    the stand-ins of ``pubench preflight``: :mod:`pubench.preflight.standins`)."""
    from pubench.data.images import _save_cache, root_cache_path
    from pubench.preflight.standins import IMAGE_SETS, synthetic_images

    root = Path(tempfile.mkdtemp(prefix="pubench-synthetic-"))
    for name in names:
        if name not in IMAGE_SETS:
            raise SystemExit(f"paper_cell: --synthetic knows {', '.join(IMAGE_SETS)}, not {name!r}")
        for split in IMAGE_SETS[name].splits:
            _save_cache(root_cache_path(name, split, root), synthetic_images(name, split))  # goes with the root
    return root


class StageTimer(StepCap):
    """The step cap of the job's context: every training loop runs at most ``cap`` epochs, in
    full, and each stage's epochs are timed; ``predict`` computes everything."""

    def __init__(self, cap: int):
        self.cap, self.stages = cap, []

    def begin(self, trainer, epochs: int, device) -> None:
        self.stages.append({"stage": trainer.desc, "epochs": epochs, "ran": 0, "epoch_s": [],
                            "call_s": time.perf_counter()})

    def epochs(self, first: int, epochs: int):
        return range(first, min(epochs, self.cap))

    def batches(self, batches):
        return batches

    def step(self):
        return contextlib.nullcontext()

    def epoch_end(self, stats) -> bool:
        self.stages[-1]["epoch_s"].append(stats.seconds)
        return False

    def end(self, trainer) -> None:
        stage = self.stages[-1]
        stage["ran"], stage["call_s"] = len(stage["epoch_s"]), time.perf_counter() - stage["call_s"]

    def predict(self, fn, n: int, chunk: int) -> torch.Tensor:
        return torch.cat([fn(torch.arange(i, min(n, i + chunk))).float().cpu() for i in range(0, n, chunk)])


def epoch_times(stage: dict) -> tuple[float, float]:
    """``(first epoch, median of the others)`` in seconds (the first alone when only one ran)."""
    secs = stage["epoch_s"]
    if not secs:
        return 0.0, 0.0
    return secs[0], statistics.median(secs[1:]) if len(secs) > 1 else secs[0]


def project(stage: dict) -> float:
    """Seconds the stage would take at its full epochs."""
    secs, epochs, ran = stage["epoch_s"], stage["epochs"], stage["ran"]
    if not secs:
        return stage["call_s"]
    first, per_epoch = epoch_times(stage)
    outside = max(0.0, stage["call_s"] - sum(secs))
    return first + per_epoch * (epochs - 1) + outside * epochs / ran


def set_keys(params: dict, key: str, value) -> None:
    """``key: value`` in each training block of a job's params (``pretrain``, ``train``)."""
    for block in ("pretrain", "train"):
        if isinstance(params.get(block), dict):
            params[block][key] = value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("id", help="table or figure id, e.g. table1-pucl")
    ap.add_argument("--cell", required=True, help="'ROW|COL' of one cell (globs allowed; the first match)")
    ap.add_argument("--epochs", type=int, default=3, help="epochs each training loop runs at most (default 3)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1, the canonical count)")
    ap.add_argument("--synthetic", nargs="*", default=[], metavar="NAME",
                    help="image data sets to replace by random images (those of pubench.preflight.standins)")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default=None,
                    help="set pretrain/train.precision (default: the spec's, i.e. fp32)")
    ap.add_argument("--compile", action="store_true", help="set pretrain/train.compile: true")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    if args.epochs < 1:
        ap.error("--epochs must be >= 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("paper_cell: no CUDA device here; use --device cpu to time on the CPU")
        return 0

    from pubench import numerics
    from pubench.jobs.plan import expand
    from pubench.registry import get_spec
    from pubench.tasks import TASKS
    from pubench.train import accel
    from pubench.train.context import JobContext

    if args.synthetic:
        os.environ["PUBENCH_DATA"] = str(synthetic_root(args.synthetic))
    num = numerics.resolve(device=args.device, threads=args.threads)
    for k, v in numerics.process_env(num).items():
        if k not in numerics.CANONICAL_CPU_ENV:  # the ISA pins take effect only at start-up
            os.environ.setdefault(k, v)
    spec = get_spec(args.id)
    plan = expand(spec, "paper", seeds=1, only=[args.cell], numerics=num)
    if not plan.jobs:
        why = "; ".join(f"{r}|{c}: {w}" for r, c, w in plan.unavailable)
        print(f"paper_cell: no runnable paper-tier job for {args.cell!r} ({why})")
        return 1
    job = plan.jobs[0]
    params = copy.deepcopy(job.params)
    if args.precision:
        set_keys(params, "precision", args.precision)
    if args.compile:
        set_keys(params, "compile", True)
    table_jobs = len(expand(spec, "paper", numerics=num).jobs)

    numerics.apply(num)
    timer = StageTimer(args.epochs)
    t0 = time.perf_counter()
    out = TASKS.get(job.task).run(params, dict(job.seeds), JobContext(numerics=num, cap=timer))
    wall = time.perf_counter() - t0
    in_loops = sum(s["call_s"] for s in timer.stages)
    stages = [{**s, "projected_s": project(s)} for s in timer.stages]
    job_s = sum(s["projected_s"] for s in stages) + max(0.0, wall - in_loops)
    acc = (out.get("info") or {}).get("accelerator", {})
    figures = {
        "id": args.id, "cell": f"{job.row}|{job.col}", "task": job.task, "device": args.device,
        "device_name": acc.get("device_name") or accel.device_name(args.device),
        "torch": torch.__version__, "date": datetime.now(timezone.utc).date().isoformat(),
        "precision": args.precision or "spec (fp32)", "compile": args.compile, "synthetic": args.synthetic,
        "epochs_cap": args.epochs, "wall_s": round(wall, 1),
        "stages": [{**s, "projected_s": round(s["projected_s"], 1)} for s in stages],
        "throughput": acc.get("throughput"), "peak_memory": acc.get("peak_memory"),
        "job_hours": round(job_s / 3600, 3), "table_jobs": table_jobs,
        "table_hours": round(job_s * table_jobs / 3600, 1),
    }
    print(f"{figures['id']} {figures['cell']} on {figures['device_name']} ({args.device}, torch {torch.__version__}, "
          f"precision {figures['precision']}, compile {args.compile}); ran {wall:.0f} s")
    print(f"{'stage':40s} {'epochs':>6s} {'ran':>4s} {'first s':>8s} {'epoch s':>8s} {'projected h':>11s}")
    for s in figures["stages"]:
        first, med = epoch_times(s)
        print(f"{s['stage'][:40]:40s} {s['epochs']:6d} {s['ran']:4d} {first:8.2f} {med:8.2f} "
              f"{s['projected_s'] / 3600:11.3f}")
    for name, t in (figures["throughput"] or {}).items():
        print(f"throughput {name}: {t.get('examples_per_s')} examples/s")
    if figures["peak_memory"]:
        print(f"peak memory: {figures['peak_memory'].get('bytes', 0) / 2**30:.2f} GiB")
    print(f"projected: {figures['job_hours']:.3f} h per job; {table_jobs} jobs in the table's paper tier -> "
          f"{figures['table_hours']:.1f} h (if every cell costs what this one does)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
