"""Batched SimCLR augmentations on uint8 image tensors, per-sample random parameters.

``build_augment({name: simclr, ...}, mean, std)`` returns a callable
``aug(x_uint8 (n, C, H, W), generator) -> float32 (n, C, size, size)`` (normalized with the
per-channel ``mean``/``std`` given in [0, 1] units). Every random parameter is drawn per
sample from the ``torch.Generator`` passed in (on the CPU, so a seed gives the same views
on any device), and all image operations run on the whole batch at once on ``x``'s device:

* random resized crop (torchvision ``RandomResizedCrop`` semantics: area fraction
  ~ U(scale), log aspect ratio ~ U(log ratio), integer box sides, 10 tries, the first
  box that fits wins, else the whole image) + horizontal flip with probability ``flip``,
  as one affine resampling (``affine_grid`` + bilinear ``grid_sample``, pixel-edge aligned);
* colour jitter (brightness, contrast, saturation, hue with torchvision's factor ranges
  and its per-image random order of the four operations) applied with probability
  ``jitter_p``; random grayscale with probability ``gray_p``; optional Gaussian blur with
  probability ``blur_p`` (sigma ~ U(blur_sigma), kernel ``blur_kernel``);
* single-channel inputs (MNIST, Fashion-MNIST) get no colour operations.

Registered names (``AUGMENTS``):

``simclr``  SimCLR (Chen et al. 2020): crop scale (0.08, 1), ratio (3/4, 4/3), flip 0.5,
            jitter (0.4, 0.4, 0.4, 0.1) with p 0.8, grayscale p 0.2, no blur (SimCLR's
            CIFAR recipe; set ``blur_p: 0.5`` for its ImageNet/STL recipe).
``crop``    random resized crop only (+ optional flip), for grayscale digits.
``mnist_crop``  = ``crop`` with no flip and scale (0.5, 1) by default: 001 prints no MNIST
            augmentation; the specs choose random resized crops to 28x28 (digits are not
            flip invariant and have no colour).

Difference to torchvision's PIL pipeline: bilinear resampling without antialiasing (a
crop is never smaller than the output for the 32x32 and 28x28 recipes, so only
up-sampling happens there), and hue arithmetic in float.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from pubench.utils.config import ConfigError, build_config
from pubench.utils.registry import Registry

AUGMENTS = Registry("augment")

GRAY_WEIGHTS = (0.2989, 0.587, 0.114)


# ------------------------------------------------------------------ configs
@dataclass(frozen=True)
class CropConfig:
    name: str
    size: int | None = None                       # output side; default: the input's
    scale: list[float] = field(default_factory=lambda: [0.08, 1.0])
    ratio: list[float] = field(default_factory=lambda: [3 / 4, 4 / 3])
    flip: float = 0.5


@dataclass(frozen=True)
class SimCLRConfig(CropConfig):
    jitter: list[float] = field(default_factory=lambda: [0.4, 0.4, 0.4, 0.1])   # brightness, contrast, saturation, hue
    jitter_p: float = 0.8
    gray_p: float = 0.2
    blur_p: float = 0.0
    blur_kernel: int | None = None                # default: ~10% of the output side, odd
    blur_sigma: list[float] = field(default_factory=lambda: [0.1, 2.0])


def _check_pair(name, v, lo=0.0, hi=math.inf):
    if len(v) != 2 or not (lo <= v[0] <= v[1] <= hi):
        raise ConfigError(f"augment.{name} must be [low, high] with {lo} <= low <= high <= {hi}, got {v}")


def _check_prob(name, p):
    if not 0.0 <= p <= 1.0:
        raise ConfigError(f"augment.{name} must be a probability, got {p}")


# ------------------------------------------------------------------ colour helpers
def grayscale(x: torch.Tensor) -> torch.Tensor:
    """(n, 3, H, W) in [0, 1] -> (n, 1, H, W), ITU-R 601-2 luma (torchvision's weights)."""
    w = torch.tensor(GRAY_WEIGHTS, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return (x * w).sum(1, keepdim=True)


def _view(f: torch.Tensor) -> torch.Tensor:
    return f.view(-1, 1, 1, 1)


def adjust_brightness(x, f):
    return (x * _view(f)).clamp(0.0, 1.0)


def adjust_contrast(x, f):
    mean = grayscale(x).mean(dim=(1, 2, 3), keepdim=True)
    return (_view(f) * x + (1 - _view(f)) * mean).clamp(0.0, 1.0)


def adjust_saturation(x, f):
    return (_view(f) * x + (1 - _view(f)) * grayscale(x)).clamp(0.0, 1.0)


def adjust_hue(x, f):
    """Shift the HSV hue of (n, 3, H, W) RGB in [0, 1] by ``f`` (n,) turns, as torchvision's
    ``adjust_hue`` (RGB -> HSV -> RGB), without forming HSV: with ``M = max``, ``D = max - min``,
    the hue sector is picked in torchvision's tie order R, G, B, and the output channels are
    ``c_n = M - D clamp(min(k, 4 - k), 0, 1)``, ``k = (n + 6 h') mod 6``, n = 5, 3, 1.
    Masks are float arithmetic: ``torch.where`` is an order of magnitude slower on CPU."""
    r, g, b = x[:, 0:1], x[:, 1:2], x[:, 2:3]
    maxc = x.amax(1, keepdim=True)
    delta = maxc - x.amin(1, keepdim=True)
    inv = 1.0 / (delta + (delta == 0).to(x.dtype))
    is_r = (r == maxc).to(x.dtype)
    is_g = (g == maxc).to(x.dtype) * (1.0 - is_r)
    is_b = 1.0 - is_r - is_g
    h6 = (is_r * (g - b) + is_g * (b - r + 2.0 * delta) + is_b * (r - g + 4.0 * delta)) * inv  # 6 h, in [-1, 5]
    n = torch.tensor([5.0, 3.0, 1.0], dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    k = n + h6 + 6.0 * f.view(-1, 1, 1, 1)
    k = k - 6.0 * torch.floor(k / 6.0)
    return maxc - delta * torch.minimum(k, 4.0 - k).clamp(0.0, 1.0)


_COLOR_OPS = (adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue)


# ------------------------------------------------------------------ the augmentations
class Augment:
    """Random resized crop (+ flip); subclasses add colour operations."""

    config_cls = CropConfig

    def __init__(self, cfg: CropConfig, mean, std):
        self.cfg = cfg
        _check_pair("scale", cfg.scale, 0.0, 1.0)
        _check_pair("ratio", cfg.ratio, 1e-6)
        _check_prob("flip", cfg.flip)
        if cfg.scale[0] <= 0:
            raise ConfigError("augment.scale: the lower bound must be > 0")
        self.mean = torch.as_tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
        self.std = torch.as_tensor(std, dtype=torch.float32).view(1, -1, 1, 1)

    # -- parameters (CPU generator)
    def crop_params(self, n: int, h: int, w: int, generator: torch.Generator, tries: int = 10) -> torch.Tensor:
        """(n, 4) float boxes (top, left, height, width) in pixels, torchvision semantics."""
        lo, hi = self.cfg.scale
        area = h * w * (lo + (hi - lo) * torch.rand(n, tries, generator=generator, dtype=torch.float64))
        lr0, lr1 = math.log(self.cfg.ratio[0]), math.log(self.cfg.ratio[1])
        ratio = torch.exp(lr0 + (lr1 - lr0) * torch.rand(n, tries, generator=generator, dtype=torch.float64))
        cw = torch.round(torch.sqrt(area * ratio))
        ch = torch.round(torch.sqrt(area / ratio))
        ok = (cw > 0) & (cw <= w) & (ch > 0) & (ch <= h)
        first = torch.where(ok.any(1), ok.float().argmax(1), torch.full((n,), -1))
        u = torch.rand(n, 2, generator=generator, dtype=torch.float64)
        idx = first.clamp(min=0).unsqueeze(1)
        bw = torch.where(first >= 0, cw.gather(1, idx).squeeze(1), torch.full((n,), float(w), dtype=torch.float64))
        bh = torch.where(first >= 0, ch.gather(1, idx).squeeze(1), torch.full((n,), float(h), dtype=torch.float64))
        top = torch.floor(u[:, 0] * (h - bh + 1))
        left = torch.floor(u[:, 1] * (w - bw + 1))
        return torch.stack((top, left, bh, bw), 1)

    def draw(self, n: int, h: int, w: int, channels: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
        flip = torch.rand(n, generator=generator) < self.cfg.flip
        return {"box": self.crop_params(n, h, w, generator), "flip": flip}

    # -- application (x's device)
    def out_size(self, h: int, w: int) -> tuple[int, int]:
        return (self.cfg.size, self.cfg.size) if self.cfg.size else (h, w)

    def crop(self, x: torch.Tensor, box: torch.Tensor, flip: torch.Tensor) -> torch.Tensor:
        n, _, h, w = x.shape
        oh, ow = self.out_size(h, w)
        box = box.to(device=x.device, dtype=torch.float32)
        top, left, bh, bw = box.unbind(1)
        sign = 1.0 - 2.0 * flip.to(device=x.device, dtype=torch.float32)
        # affine_grid without its batched matmul (no rotation): pixel-centre coordinates in
        # [-1, 1] (align_corners=False) mapped onto each box, mirrored when flipped
        bx = (torch.arange(ow, device=x.device, dtype=torch.float32) * 2 + 1) / ow - 1
        by = (torch.arange(oh, device=x.device, dtype=torch.float32) * 2 + 1) / oh - 1
        gx = (sign * bw / w).view(n, 1) * bx.view(1, ow) + ((2 * left + bw) / w - 1).view(n, 1)
        gy = (bh / h).view(n, 1) * by.view(1, oh) + ((2 * top + bh) / h - 1).view(n, 1)
        grid = torch.stack((gx.view(n, 1, ow).expand(n, oh, ow), gy.view(n, oh, 1).expand(n, oh, ow)), dim=3)
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)

    def colour(self, x: torch.Tensor, params: dict) -> torch.Tensor:
        return x

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean.to(x.device)) / self.std.to(x.device)

    def __call__(self, x: torch.Tensor, generator: torch.Generator, params: dict | None = None) -> torch.Tensor:
        if x.dtype != torch.uint8 or x.dim() != 4:
            raise ValueError(f"augment expects a uint8 (n, C, H, W) batch, got {x.dtype} {tuple(x.shape)}")
        n, c, h, w = x.shape
        p = params if params is not None else self.draw(n, h, w, c, generator)
        out = self.crop(x.float().div_(255.0), p["box"], p["flip"])
        out = self.colour(out, p)
        return self.normalize(out)


class SimCLRAugment(Augment):
    config_cls = SimCLRConfig

    def __init__(self, cfg: SimCLRConfig, mean, std):
        super().__init__(cfg, mean, std)
        if len(cfg.jitter) != 4 or min(cfg.jitter) < 0 or cfg.jitter[3] > 0.5:
            raise ConfigError(f"augment.jitter must be [brightness, contrast, saturation, hue<=0.5], got {cfg.jitter}")
        for name in ("jitter_p", "gray_p", "blur_p"):
            _check_prob(name, getattr(cfg, name))
        _check_pair("blur_sigma", cfg.blur_sigma, 1e-6)
        if cfg.blur_kernel is not None and (cfg.blur_kernel < 1 or cfg.blur_kernel % 2 == 0):
            raise ConfigError("augment.blur_kernel must be a positive odd integer")

    def draw(self, n, h, w, channels, generator):
        p = super().draw(n, h, w, channels, generator)
        if channels != 3:
            return p
        b, c, s, hue = self.cfg.jitter
        u = torch.rand(n, 4, generator=generator)
        apply = torch.rand(n, generator=generator) < self.cfg.jitter_p
        factors = torch.stack((
            max(0.0, 1 - b) + u[:, 0] * (1 + b - max(0.0, 1 - b)),
            max(0.0, 1 - c) + u[:, 1] * (1 + c - max(0.0, 1 - c)),
            max(0.0, 1 - s) + u[:, 2] * (1 + s - max(0.0, 1 - s)),
            -hue + u[:, 3] * 2 * hue,
        ), 1)
        identity = torch.tensor([1.0, 1.0, 1.0, 0.0])
        p["jitter"] = torch.where(apply.unsqueeze(1), factors, identity)
        p["jitter_applied"] = apply
        p["order"] = torch.argsort(torch.rand(n, 4, generator=generator), dim=1)
        p["gray"] = torch.rand(n, generator=generator) < self.cfg.gray_p
        lo, hi = self.cfg.blur_sigma
        p["blur"] = torch.rand(n, generator=generator) < self.cfg.blur_p
        p["sigma"] = lo + (hi - lo) * torch.rand(n, generator=generator)
        return p

    def colour(self, x, p):
        if x.shape[1] != 3 or "jitter" not in p:
            return x
        dev = x.device
        factors, order, applied = p["jitter"].to(dev), p["order"].to(dev), p["jitter_applied"].to(dev)
        for stage in range(4):
            for op in range(4):
                if op == 3 and not bool((factors[:, 3] != 0).any()):
                    continue
                idx = ((order[:, stage] == op) & applied).nonzero().squeeze(1)
                if idx.numel():
                    x[idx] = _COLOR_OPS[op](x[idx], factors[idx, op])
        gray = p["gray"].to(dev)
        if bool(gray.any()):
            idx = gray.nonzero().squeeze(1)
            x[idx] = grayscale(x[idx]).expand(-1, 3, -1, -1)
        blur = p["blur"].to(dev)
        if bool(blur.any()):
            idx = blur.nonzero().squeeze(1)
            x[idx] = self._blur(x[idx], p["sigma"].to(dev)[idx])
        return x

    def _blur(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        k = self.cfg.blur_kernel or max(3, int(0.1 * min(h, w)) // 2 * 2 + 1)
        r = torch.arange(k, device=x.device, dtype=x.dtype) - (k - 1) / 2
        ker = torch.exp(-(r.view(1, -1) ** 2) / (2 * sigma.view(-1, 1) ** 2))
        ker = (ker / ker.sum(1, keepdim=True)).repeat_interleave(c, 0)  # (n*c, k)
        y = x.reshape(1, n * c, h, w)
        pad = k // 2
        y = F.conv2d(F.pad(y, (pad, pad, 0, 0), mode="reflect"), ker.view(n * c, 1, 1, k), groups=n * c)
        y = F.conv2d(F.pad(y, (0, 0, pad, pad), mode="reflect"), ker.view(n * c, 1, k, 1), groups=n * c)
        return y.view(n, c, h, w)


AUGMENTS.register("simclr", SimCLRAugment)
AUGMENTS.register("crop", Augment)


class MnistCrop(Augment):
    pass


@dataclass(frozen=True)
class MnistCropConfig(CropConfig):
    scale: list[float] = field(default_factory=lambda: [0.5, 1.0])
    flip: float = 0.0


MnistCrop.config_cls = MnistCropConfig
AUGMENTS.register("mnist_crop", MnistCrop)


@dataclass(frozen=True)
class SimAugmentConfig(SimCLRConfig):
    scale: list[float] = field(default_factory=lambda: [0.2, 1.0])


class SimAugment(SimCLRAugment):
    """SupCon's "SimAugment" (Khosla et al. 2020, the weak view of WConPU, paper 004 Sec. 6.1):
    random resized crop with scale (0.2, 1), flip, colour jitter (0.4, 0.4, 0.4, 0.1) with
    p 0.8, grayscale with p 0.2, no blur."""

    config_cls = SimAugmentConfig


AUGMENTS.register("simaugment", SimAugment)


@dataclass(frozen=True)
class RandAugmentConfig(CropConfig):
    scale: list[float] = field(default_factory=lambda: [0.2, 1.0])
    num_ops: int = 2
    magnitude: int = 9


class RandAugment(Augment):
    """RandAugment (Cubuk et al. 2020; the strong view of WConPU, paper 004 Sec. 6.1) after a
    random resized crop (scale (0.2, 1)) and flip, as PiCO's strong view (which WConPU
    follows) composes them. The ``num_ops`` operations of magnitude ``magnitude`` are
    torchvision's ``RandAugment`` on the uint8 image, drawn with the global RNG forked and
    seeded from ``generator`` (so a run stays reproducible): :func:`rand_augment_batch`, the
    same images as torchvision applied one image at a time, computed a batch at a time."""

    config_cls = RandAugmentConfig

    def __init__(self, cfg: RandAugmentConfig, mean, std):
        super().__init__(cfg, mean, std)
        if cfg.num_ops < 0 or not 0 <= cfg.magnitude <= 30:
            raise ConfigError("augment: num_ops must be >= 0 and magnitude in [0, 30]")

    def __call__(self, x: torch.Tensor, generator: torch.Generator, params: dict | None = None) -> torch.Tensor:
        if x.dtype != torch.uint8 or x.dim() != 4:
            raise ValueError(f"augment expects a uint8 (n, C, H, W) batch, got {x.dtype} {tuple(x.shape)}")
        n, c, h, w = x.shape
        p = params if params is not None else self.draw(n, h, w, c, generator)
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        xs = rand_augment_batch(x.cpu(), self.cfg.num_ops, self.cfg.magnitude, seed).to(x.device)
        out = self.crop(xs.float().div_(255.0), p["box"], p["flip"])
        return self.normalize(out)


def rand_augment_draws(n: int, num_ops: int, magnitude: int, h: int, w: int, seed: int) -> list[list[tuple[str, float]]]:
    """The operations torchvision's ``v2.RandAugment(num_ops, magnitude)`` picks for ``n``
    images of ``h`` x ``w`` called one after another with the global RNG seeded with ``seed``:
    per image, per operation, ``(name, signed magnitude)``. The same calls in the same order as
    its ``forward`` (``torch.randint`` for the operation, ``torch.rand`` for the sign of a signed
    one), with the global RNG forked, so the draws are torchvision's own."""
    from torchvision.transforms import v2

    ra = v2.RandAugment(num_ops=num_ops, magnitude=magnitude)
    space = ra._AUGMENTATION_SPACE
    keys = tuple(space)
    values = {}
    for key, (magnitudes_fn, signed) in space.items():
        mags = magnitudes_fn(ra.num_magnitude_bins, h, w)
        values[key] = (None if mags is None else float(mags[ra.magnitude]), signed)
    out = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for _ in range(n):
            ops = []
            for _ in range(num_ops):
                key = keys[int(torch.randint(len(keys), ()))]
                value, signed = values[key]
                if value is None:
                    value = 0.0
                elif signed and torch.rand(()) <= 0.5:
                    value *= -1
                ops.append((key, value))
            out.append(ops)
    return out


def rand_augment_batch(x: torch.Tensor, num_ops: int, magnitude: int, seed: int) -> torch.Tensor:
    """``torch.stack([ra(img) for img in x])`` with ``ra = v2.RandAugment(num_ops, magnitude)``
    and the global RNG seeded with ``seed`` (forked), bit for bit, without the per-image loop:
    the draws are replayed (:func:`rand_augment_draws`), then each of the ``num_ops`` rounds
    applies each (operation, magnitude) once to all the images that drew it, through
    torchvision's own kernels (each computes every image of a batch on its own pixels only:
    ``tests/train/test_augment.py`` checks the equality on random images and seeds)."""
    from torchvision.transforms import v2

    if x.dtype != torch.uint8 or x.dim() != 4:
        raise ValueError(f"rand_augment_batch expects a uint8 (n, C, H, W) batch, got {x.dtype} {tuple(x.shape)}")
    n, _, h, w = x.shape
    ra = v2.RandAugment(num_ops=num_ops, magnitude=magnitude)
    draws = rand_augment_draws(n, num_ops, magnitude, h, w, seed)
    out = x.clone()
    for round_ in range(num_ops):
        groups: dict[tuple[str, float], list[int]] = {}
        for i, ops in enumerate(draws):
            groups.setdefault(ops[round_], []).append(i)
        for (key, value), rows in groups.items():
            if key == "Identity":
                continue
            idx = torch.tensor(rows)
            out[idx] = ra._apply_image_or_video_transform(out[idx], key, value, interpolation=ra.interpolation,
                                                          fill=ra._fill)
    return out


AUGMENTS.register("randaugment", RandAugment)


def build_augment(cfg: dict, mean, std, where: str = "augment") -> Augment:
    """An augmentation from its config dict ``{name, ...options}``."""
    cls = AUGMENTS.named(cfg, where)
    return cls(build_config(cls.config_cls, cfg, where), mean, std)


def to_float(x: torch.Tensor, mean, std) -> torch.Tensor:
    """Deterministic (evaluation) view: uint8 -> [0, 1] -> normalized float32."""
    m = torch.as_tensor(mean, dtype=torch.float32, device=x.device).view(1, -1, 1, 1)
    s = torch.as_tensor(std, dtype=torch.float32, device=x.device).view(1, -1, 1, 1)
    return (x.float() / 255.0 - m) / s
