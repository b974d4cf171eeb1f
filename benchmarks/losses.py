"""Speed of the vectorized losses vs their naive loop-by-loop references.

Usage: python benchmarks/losses.py [--sizes 512 1024] [--anchors 8] [--dim 128]

For each registered loss and each 2b in --sizes: the vectorized two-view loss is timed
on the whole batch (float64, to match the naive references' precision; the float32
forward+backward time is printed too). The naive reference (pure Python, one loop over
anchors, one over candidates) is far too slow for whole batches, so it is timed on the
first --anchors anchors and extrapolated linearly to all anchors (the per-anchor
cost is about the same for every anchor). As a sanity check, the mean naive and
vectorized losses over those anchors are compared (|diff|). Vectorized times are the
best of --repeats runs (the machine may be shared).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reference"))
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from loss_cases import ONE_PER_LOSS, call, call_naive, make_labels, make_views  # noqa: E402

TEMPERATURE = 0.5


def best_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)  # min: robust to other processes sharing the 2 cores


def fwd_bwd(case, z1, z2, labels):
    a, b = z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)
    call(case, a, b, TEMPERATURE, labels).backward()


def bench(case, n_views: int, n_anchors: int, dim: int, repeats: int):
    b = n_views // 2
    z1, z2 = make_views(b, dim, 0)
    labels = make_labels(case.label_kind, b, 0)
    vec64 = best_time(lambda: call(case, z1, z2, TEMPERATURE, labels), repeats)
    z1f, z2f = z1.float(), z2.float()
    vec32 = best_time(lambda: fwd_bwd(case, z1f, z2f, labels), repeats)
    anchors = list(range(n_anchors))
    t0 = time.perf_counter()
    naive_mean = call_naive(case, z1, z2, TEMPERATURE, labels, anchors=anchors)
    naive_subset = time.perf_counter() - t0
    naive_full = naive_subset * (b * case.anchor_views) / n_anchors  # ring_official: b anchors
    per_anchor = call(case, z1, z2, TEMPERATURE, labels, reduction="none")
    diff = abs(per_anchor[:n_anchors].mean().item() - naive_mean)
    return naive_full, vec64, vec32, diff


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024], help="values of 2b")
    parser.add_argument("--anchors", type=int, default=8, help="anchors timed for the naive version")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, d = {args.dim}, t = {TEMPERATURE}")
    print(
        f"naive: pure Python on the first {args.anchors} anchors, extrapolated x(2b/{args.anchors}) "
        "to the whole batch; vectorized: best of "
        f"{args.repeats} runs on the whole batch"
    )
    header = (
        f"{'loss':<18}{'2b':>6}{'naive (s, extrap.)':>20}{'vec f64 fwd (ms)':>18}"
        f"{'speed-up':>11}{'vec f32 fwd+bwd (ms)':>22}{'|diff| subset':>15}"
    )
    print(header)
    print("-" * len(header))
    for case in ONE_PER_LOSS:
        for n_views in args.sizes:
            naive, v64, v32, diff = bench(case, n_views, args.anchors, args.dim, args.repeats)
            print(
                f"{case.name:<18}{n_views:>6}{naive:>20.2f}{v64 * 1e3:>18.2f}"
                f"{naive / v64:>10.0f}x{v32 * 1e3:>22.2f}{diff:>15.1e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
