"""Training and inference speed of every image backbone on this CPU (images/s).

Usage: python benchmarks/backbones.py [--batch 256] [--rounds 3] [--only resnet18_cifar lenet5]
                                      [--no-reduced] [--threads N]

For each configuration: a batch of --batch random images at the dataset size the backbone
is used at (MNIST 1x28x28 for mlp_001 / lenet5, CIFAR 3x32x32 for the others, plus the
STL 3x96x96 networks), the model in train mode, one forward + backward of a linear head's
squared output (the shape of a training step without the optimizer update), and an eval-
mode forward without gradients (feature extraction for a linear probe). Times are the
best of --rounds passes over all configurations after one warm-up (min over
interleaved passes: robust to other processes sharing the cores). The "(cpu est.)"
columns divide by the process CPU time per thread instead of wall time: on a machine
shared with other jobs the wall-clock rate is a lower bound of the unshared speed and the
CPU-time rate an upper bound (it ignores time the threads wait for each other). On a
shared machine prefer --threads 1: a 2-thread OpenMP region stalls whenever another job
holds one of the two cores, which makes 2-thread timings meaningless there. Besides the printed architectures, reduced-width variants (the ``width`` /
``hidden`` kwargs) are timed to size the reduced tiers; --no-reduced skips them.

glibc's default allocator makes CPU conv training 2-10x slower: unless
MALLOC_MMAP_MAX_ / MALLOC_TRIM_THRESHOLD_ are already set, the script re-executes itself
with MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 (as ``pubench run`` does).
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

from pubench.models import build_backbone, count_parameters, linear_head

MNIST, CIFAR, STL = (1, 28), (3, 32), (3, 96)

# (label, backbone name, kwargs, input shape, reduced-width variant?)
CONFIGS = [
    ("mlp_001", "mlp_001", {}, MNIST, False),
    ("mlp_001 hidden=1000", "mlp_001", {"hidden": 1000}, MNIST, True),
    ("lenet5", "lenet5", {}, MNIST, False),
    ("allconv_001 / cnn13", "allconv_001", {}, CIFAR, False),
    ("allconv_001 width=0.5", "allconv_001", {"width": 0.5}, CIFAR, True),
    ("cnn7_003 (cifar)", "cnn7_003", {}, CIFAR, False),
    ("cnn7_003 (stl) @96", "cnn7_003", {"variant": "stl"}, STL, False),
    ("resnet18_cifar", "resnet18_cifar", {}, CIFAR, False),
    ("resnet18_cifar width=0.5", "resnet18_cifar", {"width": 0.5}, CIFAR, True),
    ("resnet18_cifar width=0.25", "resnet18_cifar", {"width": 0.25}, CIFAR, True),
    ("resnet18 (ImageNet stem) @96", "resnet18", {}, STL, False),
    ("resnet34 cifar_stem", "resnet34", {"cifar_stem": True}, CIFAR, False),
    ("resnet50 cifar_stem", "resnet50", {"cifar_stem": True}, CIFAR, False),
    ("resnet50 cifar_stem width=0.5", "resnet50", {"cifar_stem": True, "width": 0.5}, CIFAR, True),
    ("resnet50 cifar_stem width=0.25", "resnet50", {"cifar_stem": True, "width": 0.25}, CIFAR, True),
]


class Case:
    """One configuration: model, head and input built once; timings kept as minima."""

    def __init__(self, name: str, kwargs: dict, shape: tuple[int, int], batch: int):
        c, s = shape
        self.model = build_backbone(name, c, seed=0, **kwargs)
        self.head = linear_head(self.model.out_dim, 1)
        self.x = torch.randn(batch, c, s, s, generator=torch.Generator().manual_seed(0))
        self.n_params = count_parameters(self.model)
        self.train_s = self.eval_s = float("inf")  # best wall-clock seconds
        self.train_cpu = self.eval_cpu = float("inf")  # best process CPU seconds (all threads)
        self.train_step(), self.infer()  # warm-up

    def train_step(self) -> None:
        self.model.train()
        self.model.zero_grad(set_to_none=True)
        self.head.zero_grad(set_to_none=True)
        self.head(self.model(self.x)).square().mean().backward()

    def infer(self) -> None:
        self.model.eval()
        with torch.no_grad():
            self.model(self.x)

    def time_once(self) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        self.train_step()
        t1, c1 = time.perf_counter(), time.process_time()
        self.infer()
        t2, c2 = time.perf_counter(), time.process_time()
        self.train_s, self.eval_s = min(self.train_s, t1 - t0), min(self.eval_s, t2 - t1)
        self.train_cpu, self.eval_cpu = min(self.train_cpu, c1 - c0), min(self.eval_cpu, c2 - c1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3,
                    help="passes over all configurations; each reports its best (default 3)")
    ap.add_argument("--only", nargs="*", default=None, help="backbone names to time (default: all)")
    ap.add_argument("--no-reduced", action="store_true", help="skip the reduced-width variants")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    selected = [(label, name, kwargs, shape) for label, name, kwargs, shape, reduced in CONFIGS
                if (not args.only or name in args.only) and not (reduced and args.no_reduced)]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch}, best of "
          f"{args.rounds} rounds after a warm-up, MALLOC_MMAP_MAX_={os.environ.get('MALLOC_MMAP_MAX_')} "
          f"MALLOC_TRIM_THRESHOLD_={os.environ.get('MALLOC_TRIM_THRESHOLD_')}, "
          f"load average at start {os.getloadavg()[0]:.1f}", flush=True)
    cases = [Case(name, kwargs, shape, args.batch) for _, name, kwargs, shape in selected]
    for _ in range(args.rounds):  # rounds interleave the configurations: contention spreads out
        for case in cases:
            case.time_once()
    threads = torch.get_num_threads()
    print(f"| {'backbone':34s} | {'input':8s} | {'params':>11s} | {'train img/s':>11s} | {'(cpu est.)':>10s} "
          f"| {'eval img/s':>10s} | {'(cpu est.)':>10s} |")
    print(f"|{'-' * 36}|{'-' * 10}|{'-' * 13}|{'-' * 13}|{'-' * 12}|{'-' * 12}|{'-' * 12}|")
    for (label, _, _, shape), case in zip(selected, cases):
        inp = f"{shape[0]}x{shape[1]}x{shape[1]}"
        print(f"| {label:34s} | {inp:8s} | {case.n_params:>11,d} | {args.batch / case.train_s:>11,.0f} | "
              f"{args.batch * threads / case.train_cpu:>10,.0f} | {args.batch / case.eval_s:>10,.0f} | "
              f"{args.batch * threads / case.eval_cpu:>10,.0f} |")
    print(f"load average at end {os.getloadavg()[0]:.1f} (2 cores: above ~2 means other processes shared them)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
