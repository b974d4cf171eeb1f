"""Speed of the batched per-sample augmentations (pubench.train.augment) against the usual
per-image PIL torchvision pipeline with the same recipe.

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 python benchmarks/augment.py [--n 4096] [--batch 512]

Prints images per second for both and their ratio, for SimCLR's CIFAR recipe (32x32 RGB:
crop, flip, colour jitter p 0.8, grayscale p 0.2) and the MNIST crop (28x28, grayscale).
Uses random uint8 images (no data needed); torch's thread setting unless --threads.
"""

from __future__ import annotations

import argparse
import time

import torch
from PIL import Image
from torchvision import transforms as T

from pubench.train.augment import build_augment


def ours(cfg, x, batch):
    c = x.shape[1]
    aug = build_augment(cfg, [0.5] * c, [0.25] * c)
    g = torch.Generator().manual_seed(0)
    aug(x[:batch], g)  # warm-up
    t = time.perf_counter()
    for i in range(0, x.shape[0], batch):
        aug(x[i:i + batch], g)
    return x.shape[0] / (time.perf_counter() - t)


def pil(pipeline, x):
    mode = "RGB" if x.shape[1] == 3 else "L"
    imgs = [Image.fromarray(v.permute(1, 2, 0).squeeze(-1).numpy(), mode=mode) for v in x]
    t = time.perf_counter()
    for im in imgs:
        pipeline(im)
    return len(imgs) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096, help="images per measurement")
    ap.add_argument("--batch", type=int, default=512, help="batch size of the batched version")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's setting)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    cases = [
        ("simclr CIFAR 32x32 RGB", {"name": "simclr"},
         T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(),
                    T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), T.RandomGrayscale(0.2),
                    T.ToTensor(), T.Normalize([0.5] * 3, [0.25] * 3)]),
         torch.randint(0, 256, (args.n, 3, 32, 32), generator=g, dtype=torch.uint8)),
        ("mnist_crop 28x28 gray", {"name": "mnist_crop", "size": 28, "scale": [0.5, 1.0]},
         T.Compose([T.RandomResizedCrop(28, scale=(0.5, 1.0)), T.ToTensor(), T.Normalize([0.5], [0.25])]),
         torch.randint(0, 256, (args.n, 1, 28, 28), generator=g, dtype=torch.uint8)),
    ]
    print(f"torch threads: {torch.get_num_threads()}, n = {args.n}, batch = {args.batch}")
    print(f"{'recipe':<26}{'batched img/s':>15}{'PIL img/s':>12}{'ratio':>8}")
    for name, cfg, pipe, x in cases:
        a, b = ours(cfg, x, args.batch), pil(pipe, x)
        print(f"{name:<26}{a:>15,.0f}{b:>12,.0f}{a / b:>8.1f}")


if __name__ == "__main__":
    main()
