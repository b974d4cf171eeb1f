"""GPU cost of the paper tier of every spec from FLOP counts: the ``paper-cost`` section of
``docs/gpu.md``.

Usage: python -m pubench.tools.paper_cost [IDS ...] [--calibrate gpu-check.json] [--write]

Per paper-tier job (every cell x the tier's seeds), per training stage:
``epochs x steps per epoch x max(FLOPs per step / achieved rate, step floor)``, where

* the examples per epoch come from the cell's own data pipeline
  (``pubench.tasks._image_common.prepare_data`` on labels only: the data set's split sizes
  and class counts, :mod:`pubench.preflight.standins`), so PU splits, case-control pools
  and class restrictions are the job's;
* FLOPs per example are counted by PyTorch's ``FlopCounterMode`` on the meta device
  (shapes only, nothing computed): for pre-training the framework's own
  ``projections`` forward and backward (SimCLR: two views through encoder and projector;
  MoCo: the query's forward and backward and the key encoder's forward; CMC: its two
  channel halves), for a PU method the backbone's forward x 3 (forward + backward) x the
  method's passes per example (:data:`METHOD_PASSES`, read from each method's step and
  checked against the FLOPs ``pubench preflight`` counted on one real step), for frozen
  features one forward over the training and test sets;
* the achieved rate and the per-step floor are :data:`ASSUMED` unless ``--calibrate``
  names a ``make gpu-check`` JSON (its preflight cells' counted FLOPs / measured step
  time on the GPU).

Counted besides the networks: the contrastive losses' similarity products (about 40 % of a
LeNet-5 step at batch 1,024, under 1 % of a ResNet's). Not counted: data loading and
augmentation, evaluation outside the networks (k-means, SVMs). Tasks that train on
the CPU (``infograph``: the task keeps its GIN on the CPU; ``bcl_simulation``) are given in
CPU-hours from the committed records' median wall per cell.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

from pubench.preflight.committed import CPU_TASKS
from pubench.preflight.rates import ASSUMED, calibrate, newest_gpu_check  # noqa: F401  (the tests' pc.calibrate)

ROOT = Path(__file__).resolve().parents[2]

#: forward passes x 3 per training row of a PU method's step, relative to one backbone forward
#: + backward (3 F); default 1. PAN: classifier + discriminator; vPU: data + positives + MixUp;
#: Self-PU: two students, confident + noisy sets, the look-ahead step; WConPU / PiCO: query
#: forward + backward and the key encoder's forward (4/3); PUbN: two networks; P3Mix: the
#: mixed positive and unlabeled batches (preflight: 7.4 / 9.4 F per row at F-MNIST-I).
METHOD_PASSES = {"pan": 2.0, "vpu": 1.36, "self_pu": 2.7, "wconpu": 4 / 3, "pico": 4 / 3, "pubn": 2.0,
                 "p3mix_c": 2.5, "p3mix_e": 3.1, "dist_pu": 1.5, "mixpul": 2.1, "nnpu_mixup": 1.0}


def _meta_flops(fn) -> float:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.device("meta"), counter:
        fn()
    return float(counter.get_total_flops())


def _cached(*keys: str):
    """``fn(params, *rest)`` memoized on the JSON of the params blocks it reads (``keys``):
    the cells of a table repeat them."""

    def decorate(fn):
        memo: dict = {}

        def wrapped(params: dict, *rest):
            key = json.dumps([{k: params.get(k) for k in keys}, rest], sort_keys=True, default=str)
            if key not in memo:
                memo[key] = fn(params, *rest)
            return memo[key]

        return wrapped

    return decorate


@_cached("model")
def pretrain_flops(params: dict, shape: tuple[int, ...], framework: str) -> float:
    """FLOPs of one source image's pre-training step (its views' forward and backward) with
    ``framework`` (the JSON of ``params.pretrain.framework``)."""
    import torch

    from pubench.frameworks.pretrain import build_framework, build_models
    from pubench.tasks._image_common import build_encoder, build_projector, model_config

    model = model_config(params["model"])
    fw = json.loads(framework)

    def step():
        enc, proj = build_models(fw, lambda ch, s: build_encoder(model, ch, s), lambda d, s: build_projector(model, d, s),
                                 shape[0], (0, 1), [0.5] * shape[0], [0.25] * shape[0])
        z1, z2 = build_framework(fw, enc, proj).projections(torch.empty(2, *shape), torch.empty(2, *shape))
        (z1.float().sum() + z2.float().sum()).backward()

    return _meta_flops(step) / 2


def loss_flops(params: dict, batch: int) -> float:
    """FLOPs of one pre-training step's similarity products (forward + backward = 3 x 2mnk):
    SimCLR-type ``(2B) x (2B) x d``, MoCo ``B x queue x d``, CMC twice ``B x negatives x d``."""
    fw = params["pretrain"]["framework"]
    d = (params["model"].get("projector") or {}).get("out", 128)
    if fw["name"] == "moco":
        return 6.0 * batch * (fw.get("queue") or 0) * d
    if fw["name"] == "cmc":
        return 12.0 * batch * (fw.get("negatives") or 0) * d
    return 6.0 * (2 * batch) ** 2 * d


@_cached("model")
def backbone_flops(params: dict, shape: tuple[int, ...]) -> float:
    """FLOPs of one example's forward pass through the cell's backbone."""
    import torch

    from pubench.tasks._image_common import build_encoder, model_config

    model = model_config(params["model"])
    return _meta_flops(lambda: build_encoder(model, shape[0], 0).eval()(torch.empty(2, *shape))) / 2


# ------------------------------------------------------------------ examples per epoch
class LabelsOnly:
    """A data source of 1 x 1 images with each data set's labels: the data pipeline's split
    sizes without the pixels (the images are never resized: they have no ``input_size``)."""

    def images(self, name: str, split: str):
        import torch

        from pubench.data.images import ImageSet
        from pubench.preflight.standins import IMAGE_SETS, synthetic_labels

        y, classes = synthetic_labels(name, split)
        return ImageSet(torch.zeros((len(y), IMAGE_SETS[name].shape[0], 1, 1), dtype=torch.uint8), y, classes, name)


@_cached("data")
def sizes(params: dict, data_seed: int) -> dict[str, int]:
    from pubench.tasks._image_common import data_config, prepare_data

    data = dict(params["data"], input_size=None)  # 1 x 1 images: the sizes do not depend on the pixels
    p = prepare_data(data_config(data), data_seed, LabelsOnly())
    return {"train": int(p.data.x_train.shape[0]), "test": int(p.data.x_test.shape[0]),
            "pretrain": int(p.pretrain_x.shape[0])}


# ------------------------------------------------------------------ one job
def stages(job) -> list[dict]:
    """``[{kind, steps, rows, flops}]`` of a job's training (FLOPs in total over the stage)."""
    from pubench.preflight.plan import _input_shape

    p, out = job.params, []
    shape = _input_shape(p)
    n = sizes(p, job.seeds["data"])
    f_b = backbone_flops(p, shape)
    kind = "conv32" if shape[1] * shape[2] <= 32 * 32 else "conv_large"
    if "pretrain" in p:
        pre, down = p["pretrain"], p["downstream"]
        steps = pre["epochs"] * (n["pretrain"] // pre["batch_size"])
        per_image = pretrain_flops(p, shape, json.dumps(pre["framework"], sort_keys=True))
        out.append({"stage": "pretrain", "kind": kind, "steps": steps,
                    "flops": steps * (pre["batch_size"] * per_image + loss_flops(p, pre["batch_size"]))})
        feats = (n["train"] + n["test"]) * f_b
        if down["name"] == "finetune":
            steps = down["epochs"] * math.ceil(n["train"] / down["batch_size"])
            out.append({"stage": "finetune", "kind": kind, "steps": steps, "flops": down["epochs"] * n["train"] * 3 * f_b
                        + n["test"] * f_b})
        else:
            epochs = down["epochs"] if down.get("augment") else 1
            out.append({"stage": "features", "kind": kind, "steps": 0, "flops": feats + (epochs - 1) * n["train"] * f_b})
        return out
    pm, train = p["pu_method"], p["train"]
    passes = METHOD_PASSES.get(pm["name"], 1.0)
    rows = n["train"]
    if pm["name"] == "vpu":
        rows = pm["iterations_per_epoch"] * 2 * train["batch_size"]
    trainings = 1
    if pm["name"] == "rank_pruning":
        trainings = 1 + pm["cv_folds"] * (pm["cv_folds"] - 1) / pm["cv_folds"]
    if pm["name"] == "wconpu":
        grid = (pm.get("tuning") or {}).get("grid") or {}
        trainings = math.prod(len(v) for v in grid.values()) if grid else 1
    steps = train["epochs"] * math.ceil(rows / train["batch_size"]) * trainings
    out.append({"stage": pm["name"], "kind": kind, "steps": steps,
                "flops": train["epochs"] * rows * 3 * f_b * passes * trainings + n["test"] * f_b})
    return out


def gpu_seconds(st: list[dict], rates: dict) -> float:
    return sum(max(s["flops"] / (rates[s["kind"]] * 1e12), s["steps"] * rates["step_floor_s"]) for s in st)


def text_stages(job) -> list[dict]:
    """``text_fewshot``: RoBERTa-large, 6 x parameters FLOPs per token (forward + backward),
    24 tokens per padded sentence, one view (CE) or two (CE + contrastive)."""
    p = job.params
    t = p["train"]
    params = 355e6
    views = 1 if t["objective"]["name"] == "ce" else 2
    labeled = 2 * p["data"]["n_per_class"]
    steps_per_epoch = math.ceil(labeled / t["batch_size"])
    rows = labeled + steps_per_epoch * (t.get("unlabeled_batch_size") or 0)
    return [{"stage": "fine-tune", "kind": "text", "steps": t["epochs"] * steps_per_epoch,
             "flops": t["epochs"] * rows * views * 6 * params * 24}]


def cpu_hours(spec_id: str) -> dict:
    """Median wall per cell of the committed paper-tier records (tasks that run on the CPU)."""
    from pubench.report.compute import past_walls
    from pubench.store import ResultStore

    walls = past_walls(ResultStore(ROOT / "results").scan("paper", spec_id).records)
    return {(k[2], k[3]): statistics.median(w for _, w in v) for k, v in walls.items()}


# ------------------------------------------------------------------ the page
def render(rows: list[dict], rates: dict, source: str) -> str:
    lines = [f"Achieved rates: conv nets at <= 32 x 32 {rates['conv32']:.0f} TFLOP/s, at 96 x 96 and 224 x 224 "
             f"{rates['conv_large']:.0f} TFLOP/s, RoBERTa-large {rates['text']:.0f} TFLOP/s, at least "
             f"{rates['step_floor_s'] * 1000:.0f} ms per optimizer step; {source}. Generated by "
             "`python -m pubench.tools.paper_cost --write`.", "",
             "| table | jobs | GPU-hours (one GPU) | TFLOP per job (median) | CPU-hours (CPU-only tasks) |",
             "|---|---:|---:|---:|---:|"]
    tot_gpu = tot_cpu = 0.0
    for r in rows:
        tot_gpu += r["gpu_h"]
        tot_cpu += r["cpu_h"] or 0.0
        cpu = "—" if r["cpu_h"] is None else f"{r['cpu_h']:.3g}"
        lines.append(f"| {r['id']} | {r['jobs']} | {r['gpu_h']:.3g} | {r['tflop_median']:.3g} | {cpu} |")
    lines.append(f"| **all {len(rows)} specs** | {sum(r['jobs'] for r in rows)} | **{tot_gpu:.0f}** | | {tot_cpu:.3g} |")
    return "\n".join(lines)


def table_cost(spec, rates: dict) -> dict:
    from pubench.jobs.plan import expand
    from pubench.numerics import resolve

    plan = expand(spec, "paper", seeds=1, numerics=resolve(device="cuda"))
    seeds = spec.tiers["paper"].seeds
    gpu_s, cpu_s, tflop = 0.0, None, []
    cpu_walls = None
    for job in plan.jobs:
        if job.task in CPU_TASKS:
            cpu_walls = cpu_walls if cpu_walls is not None else cpu_hours(spec.id)
            wall = cpu_walls.get((job.row, job.col))
            cpu_s = (cpu_s or 0.0) + (wall or 0.0) * seeds
            continue
        st = text_stages(job) if job.task == "text_fewshot" else stages(job)
        gpu_s += gpu_seconds(st, rates) * seeds
        tflop.append(sum(s["flops"] for s in st) / 1e12)
    return {"id": spec.id, "jobs": len(plan.jobs) * seeds, "gpu_h": gpu_s / 3600,
            "tflop_median": statistics.median(tflop) if tflop else 0.0,
            "cpu_h": None if cpu_s is None else cpu_s / 3600}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ids", nargs="*")
    ap.add_argument("--calibrate", type=Path, help="a make gpu-check JSON (default: the newest under benchmarks/results)")
    ap.add_argument("--write", action="store_true", help="write the section of docs/gpu.md")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    from pubench.registry import get_spec, load_all

    specs = {i: get_spec(i) for i in args.ids} if args.ids else load_all()
    rates, source = calibrate(args.calibrate or newest_gpu_check(ROOT / "benchmarks" / "results"))
    rows = [table_cost(specs[i], rates) for i in sorted(specs)]
    text = render(rows, rates, source)
    print(text)
    if args.json:
        args.json.write_text(json.dumps({"rates": rates, "source": source, "tables": rows}, indent=1))
    if args.write:
        from pubench.tools.gpu_report import replace_section

        replace_section(ROOT / "docs" / "gpu.md", "paper-cost", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
