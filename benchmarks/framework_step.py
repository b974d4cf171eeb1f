"""Time of one pre-training step of each framework (SimCLR, MoCo, CMC) at the reduced size.

Usage: python benchmarks/framework_step.py [--widths 0.125 0.25] [--batch 256] [--negatives 1024]
                                           [--rounds 5] [--threads 1] [--channels-last]

For each framework and encoder width (ResNet-18, CIFAR stem, 32x32 JPEG-CIFAR-sized uint8
images, projector 64 -> 64 -> 32 as the reduced tiers, InfoNCE at the block's temperature):

* ``model``: the framework's network work alone on views augmented beforehand: its
  forward (``Framework.projections``: SimCLR both views through encoder + projector, MoCo
  queries with gradient + keys through the key encoder, CMC Lab conversion + L and ab
  networks) and the backward of a stand-in objective;
* ``step``: the whole step as ``pubench.frameworks.pretrain`` runs it
  (:func:`pubench.frameworks.pretrain.pretrain_step` + ``Trainer.optimize``): indexing, the
  augmentations, the forward, queue / memory bank logits, the loss, backward, Adam, and
  the framework's ``after_step`` (momentum update, enqueue, bank update);
* ``ratio`` = step / model (the target is <= 1.10: everything around the network costs
  at most 10 %).

Times are the minimum over --rounds interleaved rounds after a warm-up (robust to other
processes on a shared machine), wall-clock and process CPU time (with one thread the CPU
time hardly depends on other processes; prefer its ratio on a shared machine). ``--channels-last`` runs the encoders and the views in
torch.channels_last memory format. Unless MALLOC_MMAP_MAX_ / MALLOC_TRIM_THRESHOLD_ are
set the script re-executes itself with them (as ``pubench run`` does).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

MALLOC_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "100000000000"}
if not all(k in os.environ for k in MALLOC_ENV):
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **MALLOC_ENV})

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch

from pubench.frameworks.pretrain import LossCall, build_framework, build_models, pretrain_step
from pubench.models import build_backbone
from pubench.models.heads import projection_head
from pubench.tools.gpu_step import MEAN, STD, TEMPERATURE, framework_block
from pubench.train.augment import build_augment
from pubench.train.context import PLAIN
from pubench.train.loop import Trainer
from pubench.train.optim import build_optimizer, optimizer_config


class Case:
    def __init__(self, name: str, width: float, batch: int, negatives: int, n_images: int, channels_last: bool):
        self.label = f"{name:6s} width={width:<6g}"
        self.block = framework_block(name, negatives)
        fmt = torch.channels_last if channels_last else torch.contiguous_format

        def encoder(ch, seed):
            return build_backbone("resnet18_cifar", ch, seed=seed, width=width).to(memory_format=fmt)

        torch.manual_seed(0)
        enc, proj = build_models(self.block, encoder, lambda d, s: projection_head(d, 64, 32), 3, (1, 2), MEAN, STD)
        self.framework = build_framework(self.block, enc, proj)
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, 256, (n_images, 3, 32, 32), generator=g, dtype=torch.uint8)
        self.framework.prepare(n_images, torch.Generator().manual_seed(1))
        self.loss = LossCall({"name": "info_nce", "temperature": TEMPERATURE[name]}, None)
        aug = build_augment({"name": "simclr"}, MEAN, STD)
        self.aug = (lambda xb, gen: aug(xb, gen).contiguous(memory_format=fmt)) if channels_last else aug
        params = [p for m in self.framework.modules() for p in m.parameters()]
        self.trainer = Trainer(self.framework.modules(), build_optimizer(optimizer_config({"name": "adam", "lr": 1e-3}), params), ctx=PLAIN)
        self.step = pretrain_step(self.framework, self.loss, self.aug, self.x, None, g, "cpu")
        self.idx = torch.randperm(n_images, generator=g)[:batch]
        self.views = [self.aug(self.x[self.idx], g) for _ in range(2)]
        self.model_s = self.step_s = float("inf")
        self.model_cpu = self.step_cpu = float("inf")
        for m in self.framework.modules():
            m.train()
        self.model_once(), self.step_once()  # warm-up

    def model_once(self) -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        z1, z2 = self.framework.projections(*self.views)
        (z1.square().mean() + z2.square().mean()).backward()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        self.trainer.optimizer.zero_grad(set_to_none=True)
        return dt, dc

    def step_once(self) -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        self.trainer.optimize(self.step(self.idx, 0), 0)
        return time.perf_counter() - t0, time.process_time() - c0

    def time_once(self) -> None:
        (mt, mc), (st, sc) = self.model_once(), self.step_once()
        self.model_s, self.model_cpu = min(self.model_s, mt), min(self.model_cpu, mc)
        self.step_s, self.step_cpu = min(self.step_s, st), min(self.step_cpu, sc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frameworks", nargs="*", default=["simclr", "moco", "cmc"])
    ap.add_argument("--widths", nargs="*", type=float, default=[0.125, 0.25])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--negatives", type=int, default=1024, help="MoCo queue / CMC bank draws (default 1024)")
    ap.add_argument("--images", type=int, default=4000, help="pre-training images (CMC bank rows)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--channels-last", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch}, "
          f"N = {args.negatives}, {'channels_last' if args.channels_last else 'contiguous'}, best of "
          f"{args.rounds} rounds after a warm-up, load average at start {os.getloadavg()[0]:.1f}", flush=True)
    cases = [Case(f, w, args.batch, args.negatives, args.images, args.channels_last)
             for f in args.frameworks for w in args.widths]
    for _ in range(args.rounds):
        for case in cases:
            case.time_once()
    print(f"{'framework':22s} {'model (s)':>10s} {'step (s)':>10s} {'ratio':>7s}   "
          f"{'model cpu':>10s} {'step cpu':>10s} {'ratio':>7s}")
    for case in cases:
        print(f"{case.label:22s} {case.model_s:10.3f} {case.step_s:10.3f} {case.step_s / case.model_s:7.3f}   "
              f"{case.model_cpu:10.3f} {case.step_cpu:10.3f} {case.step_cpu / case.model_cpu:7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
