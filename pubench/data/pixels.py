"""Float views of a uint8 image set, a chunk of images at a time: the normalization
statistics of the training images (:func:`channel_stats`) and how many images one float copy
may hold (:func:`images_per_chunk`; the image tasks' resize uses it too). Data preparation,
not training: the augmentations (:mod:`pubench.train.augment`) take the statistics as given."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the data registry imports every module of the package; commands without torch use it
    import torch

#: a float copy of a data set is made at most this many values at a time (:func:`channel_stats`, the image
#: tasks' resize): 4,096 CIFAR images, 100 MB of float64. Larger images go fewer to a chunk: 4,096 STL-10
#: images (96 px) held 0.9 GB per float64 copy, which with the data set itself put a paper-tier STL-10 job
#: over 8 GiB.
FLOAT_CHUNK_VALUES = 4096 * 3 * 32 * 32


def images_per_chunk(values_per_image: int, most: int) -> int:
    """Images of ``values_per_image`` values in a float copy of at most :data:`FLOAT_CHUNK_VALUES`, and
    at most ``most`` (the chunk a caller used before, kept for small images so their values are unchanged)."""
    return max(1, min(most, FLOAT_CHUNK_VALUES // max(1, values_per_image)))


def stats_chunk(x: torch.Tensor) -> int:
    """Images per chunk of :func:`channel_stats`: 4,096 up to 3x32x32 pixels (so the sums, and the
    records, of those images are unchanged), fewer for larger images."""
    return images_per_chunk(x[0].numel(), 4096) if len(x) else 1


def channel_stats(x: torch.Tensor, chunk: int | None = None) -> tuple[list[float], list[float]]:
    """Per-channel mean and std in [0, 1] units of a uint8 (n, C, H, W) tensor (float64 sums, in
    chunks of ``chunk`` images: :func:`stats_chunk` by default)."""
    import torch

    c = x.shape[1]
    chunk = chunk or stats_chunk(x)
    s1 = torch.zeros(c, dtype=torch.float64)
    s2 = torch.zeros(c, dtype=torch.float64)
    for i in range(0, x.shape[0], chunk):
        v = x[i:i + chunk].to(torch.float64).div_(255.0)  # in place: one float64 copy of the chunk at a time
        s1 += v.sum(dim=(0, 2, 3))
        s2 += v.mul_(v).sum(dim=(0, 2, 3))
    cnt = x.shape[0] * x.shape[2] * x.shape[3]
    mean = s1 / cnt
    std = (s2 / cnt - mean ** 2).clamp(min=1e-12).sqrt()
    return mean.tolist(), std.tolist()
