"""RandAugment of the key view: torchvision one image at a time (what WConPU's and PiCO's
strong view ran before issue 61) against :func:`pubench.train.augment.rand_augment_batch` (the
same draws replayed, each drawn operation applied to all the images that drew it), on random
uint8 CIFAR-size batches: process CPU time per batch (best of ``--rounds``), their ratio, and
that the outputs are equal bit for bit.

    python benchmarks/randaugment_batch.py [--batch 128] [--rounds 5] [--threads 1]

Settings: WConPU's reduced tier (1 operation, magnitude 9), its paper recipe (2, 9) and PiCO's
(3, 15). Run it in the canonical environment (``pubench.numerics.process_env``) for the figures
a job sees: it restarts itself with it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETTINGS = ((1, 9), (2, 9), (3, 15))


def per_image(x, num_ops, magnitude, seed):
    import torch
    from torchvision.transforms import v2

    ra = v2.RandAugment(num_ops=num_ops, magnitude=magnitude)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.stack([ra(img) for img in x])


def best(fn, rounds):
    out, times = None, []
    for r in range(rounds):
        t = time.process_time()
        out = fn(r)
        times.append(time.process_time() - t)
    return min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    from pubench import numerics

    want = numerics.process_env(numerics.resolve())
    if any(os.environ.get(k) != v for k, v in want.items()):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **want})
    import torch

    from pubench.train.augment import rand_augment_batch

    torch.set_num_threads(args.threads)
    x = torch.randint(0, 256, (args.batch, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    print(f"batch {args.batch} x 3 x 32 x 32, {args.threads} thread(s), best of {args.rounds}, load "
          f"{os.getloadavg()[0]:.1f}")
    for num_ops, magnitude in SETTINGS:
        t_ref, a = best(lambda r: per_image(x, num_ops, magnitude, 1000 + r), args.rounds)
        t_new, b = best(lambda r: rand_augment_batch(x, num_ops, magnitude, 1000 + r), args.rounds)
        print(f"num_ops {num_ops}, magnitude {magnitude}: per image {1e3 * t_ref:.1f} ms, batched {1e3 * t_new:.1f} ms, "
              f"{t_ref / t_new:.2f}x; equal: {torch.equal(a, b)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
