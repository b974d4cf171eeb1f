"""Images/s of one pre-training step of each framework (SimCLR, MoCo, CMC) at paper size on
a GPU, and how much of the step is the network.

Usage: python -m pubench.tools.gpu_step [--precision fp32|bf16] [--compile] [--rounds 10] [--json FILE]
       python -m pubench.tools.gpu_step --device cpu --small      # tiny sizes, exercises the script

Paper size = table1-pucl's paper tier (preset ``dcl_hcl_simclr``): ResNet-50 with the CIFAR
stem, projector 2048 -> 512 -> 128, batch 256 source images of 32x32 (512 views), MoCo
queue and CMC negatives 4096, Adam; the step runs as ``pubench run`` runs it on a CUDA
device (:mod:`pubench.train.accel`): the uint8 images on the device, the augmentations
there, conv nets and views in channels_last, the forward under the precision's autocast.

* ``model``: the framework's network work alone on views augmented beforehand: its forward
  (``Framework.projections``) and the backward of a stand-in objective;
* ``step``: the whole step (:func:`pubench.frameworks.pretrain.pretrain_step` +
  ``Trainer.optimize``): indexing, augmentations, forward, queue / bank logits, loss,
  backward, Adam, ``after_step``;
* ``ratio`` = step / model (target <= 1.10: everything around the network costs at most 10 %).

Times: minimum over ``--rounds`` interleaved rounds after a warm-up, each bracketed by
``torch.cuda.synchronize``. Without a CUDA device (and without ``--device cpu``) the
script prints one line saying so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from pubench.frameworks.pretrain import LossCall, build_framework, build_models, pretrain_step
from pubench.models import build_backbone
from pubench.models.heads import projection_head
from pubench.train import accel
from pubench.train.augment import build_augment
from pubench.train.context import PLAIN
from pubench.train.loop import Trainer
from pubench.train.optim import OptimizerConfig, build_optimizer

MEAN, STD = [0.49, 0.48, 0.45], [0.25, 0.24, 0.26]
TEMPERATURE = {"simclr": 0.5, "cmc": 0.07, "moco": 0.1}


def framework_block(name: str, negatives: int) -> dict:
    """Each framework's block as table1-pucl's paper tier sets it (also the CPU benchmark's,
    ``benchmarks/framework_step.py``), with ``negatives`` keys in the queue or the bank."""
    if name == "moco":
        return {"name": "moco", "queue": negatives, "momentum": 0.99, "bn_splits": 8}
    if name == "cmc":
        return {"name": "cmc", "negatives": negatives, "bank_momentum": 0.5}
    return {"name": "simclr"}
#: (backbone, projector hidden / out, batch, negatives, images): table1-pucl's paper tier, and --small
PAPER = ({"name": "resnet50", "cifar_stem": True}, (512, 128), 256, 4096, 50000)
SMALL = ({"name": "resnet18_cifar", "width": 0.125}, (16, 8), 16, 64, 256)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Case:
    def __init__(self, name: str, size: tuple, device: torch.device, precision: str, compile: bool):
        backbone, (hidden, out), self.batch, negatives, n_images = size
        self.name, self.device, self.precision = name, device, precision
        block = framework_block(name, negatives)
        kwargs = {k: v for k, v in backbone.items() if k != "name"}
        torch.manual_seed(0)
        enc, proj = build_models(block, lambda ch, s: build_backbone(backbone["name"], ch, seed=s, **kwargs),
                                 lambda d, s: projection_head(d, hidden, out, hidden_bias=False), 3, (1, 2), MEAN, STD)
        self.framework = build_framework(block, enc.to(device), proj.to(device))
        g = torch.Generator().manual_seed(0)
        x = accel.data_on_device(torch.randint(0, 256, (n_images, 3, 32, 32), generator=g, dtype=torch.uint8), device)
        self.framework.prepare(n_images, torch.Generator().manual_seed(1))
        loss = LossCall({"name": "info_nce", "temperature": TEMPERATURE[name]}, None)
        aug = build_augment({"name": "simclr"}, MEAN, STD)
        params = [p for m in self.framework.modules() for p in m.parameters()]
        self.trainer = Trainer(self.framework.modules(), build_optimizer(OptimizerConfig("adam", 1e-3), params),
                               ctx=PLAIN)  # its optimizer step only: timed outside any job
        accel.prepare_modules(self.framework.modules(), device, compile)
        self.step = pretrain_step(self.framework, loss, aug, x, None, g, device)
        self.idx = torch.randperm(n_images, generator=g)[: self.batch]
        self.views = [accel.input_format(aug(x[self.idx].to(device), g)) for _ in range(2)]
        self.model_s = self.step_s = float("inf")
        for m in self.framework.modules():
            m.train()
        for _ in range(2):  # warm-up (cuDNN algorithm choice, compilation)
            self.model_once(), self.step_once()

    def model_once(self) -> float:
        sync(self.device)
        t0 = time.perf_counter()
        with accel.autocast(self.device, self.precision):
            z1, z2 = self.framework.projections(*self.views)
            objective = z1.float().square().mean() + z2.float().square().mean()
        objective.backward()
        sync(self.device)
        dt = time.perf_counter() - t0
        self.trainer.optimizer.zero_grad(set_to_none=True)
        return dt

    def step_once(self) -> float:
        sync(self.device)
        t0 = time.perf_counter()
        with accel.autocast(self.device, self.precision):
            step = self.step(self.idx, 0)
        self.trainer.optimize(step, 0)
        sync(self.device)
        return time.perf_counter() - t0

    def time_once(self) -> None:
        self.model_s = min(self.model_s, self.model_once())
        self.step_s = min(self.step_s, self.step_once())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--small", action="store_true", help="tiny sizes (1/8-width ResNet-18, batch 16)")
    ap.add_argument("--frameworks", nargs="*", default=["simclr", "moco", "cmc"])
    ap.add_argument("--precision", default="fp32", choices=list(accel.PRECISIONS))
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_step: no CUDA device on this machine; nothing measured "
              "(run it on a GPU node, or with --device cpu --small to exercise the script)")
        return 0
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
    size = SMALL if args.small else PAPER
    name = accel.device_name(device)
    print(f"gpu_step: {name}, torch {torch.__version__}, {'small' if args.small else 'paper'} size "
          f"({size[0]['name']}, batch {size[2]}, N = {size[3]}), {args.precision}, "
          f"{'compiled' if args.compile else 'eager'}, best of {args.rounds} rounds after a warm-up", flush=True)
    cases = [Case(f, size, device, args.precision, args.compile) for f in args.frameworks]
    for _ in range(args.rounds):
        for case in cases:
            case.time_once()
    print(f"{'framework':10s} {'model (s)':>10s} {'step (s)':>10s} {'ratio':>7s} {'images/s':>10s}")
    for case in cases:
        print(f"{case.name:10s} {case.model_s:10.4f} {case.step_s:10.4f} {case.step_s / case.model_s:7.3f} "
              f"{case.batch / case.step_s:10.1f}")
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    if peak is not None:
        print(f"peak memory: {peak / 2**30:.2f} GiB")
    if args.json:
        args.json.write_text(json.dumps({
            "device_name": name, "torch": torch.__version__, "size": "small" if args.small else "paper",
            "backbone": size[0], "batch": size[2], "negatives": size[3], "precision": args.precision,
            "compile": args.compile, "rounds": args.rounds, "peak_memory_bytes": peak,
            "frameworks": [{"name": c.name, "model_s": c.model_s, "step_s": c.step_s, "ratio": c.step_s / c.model_s,
                            "images_per_s": c.batch / c.step_s} for c in cases]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
