"""Framework ``cmc``: contrastive multiview coding with a memory bank (Tian et al., ECCV 2020).

Views: one augmented RGB image per source image, converted to CIE Lab (D65); the L
channel and the ab channels are the two views (Tian et al. Sec. 4.2, "L and ab"). Each
view has its own network: the spec's backbone built with 1 and 2 input channels
(:class:`LabViewsEncoder`), each with its own projector. The downstream classifier reads
the concatenation of both networks' features (Tian et al.'s linear evaluation).

Memory bank (Tian et al. Sec. 3.2, after Wu et al. 2018): one unit-norm entry per
pre-training image and view, ``bank_l`` and ``bank_ab`` (n, d). Per step, for the ``b``
images ``i`` of the batch with projections ``z_l``, ``z_ab`` (unit norm) and ``N``
indices ``j`` drawn uniformly with replacement from the n images (one draw per step,
shared by the batch):

    pos_i        = z_l_i . z_ab_i / t                      (the current cross-view pair)
    neg(L)_ij    = z_l_i . bank_ab[j] / t,   neg(ab)_ij = z_ab_i . bank_l[j] / t

A drawn index equal to the anchor's own image is masked out (``neg_mask``). The loss's
logits form runs on the 2b anchors (L anchors then ab anchors: L(V1, V2) + L(V2, V1) of
Tian et al. eq. 3, averaged over the 2b anchors as the two-view losses are). After the
optimizer step the batch's entries move towards the new projections:

    bank[i] <- normalize(m bank[i] + (1 - m) z_i)          (m = ``bank_momentum``)

Decisions (docs/losses.md "MoCo and CMC"): the positive is the current embedding of the
other view, as the paper's text says (the official code takes the positive from the
bank too); the negatives are one draw shared by the batch (the official code draws N per
anchor, a (b, N, d) gather); the bank starts as random unit vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from pubench.frameworks.base import FRAMEWORKS, Framework
from pubench.train.checkpoint import AttributeState
from pubench.utils.config import ConfigError
from pubench.utils.seeding import sub_seeds

# CIE Lab of sRGB, D65 white (IEC 61966-2-1; CIE 15)
SRGB_TO_XYZ = ((0.412453, 0.357580, 0.180423),
               (0.212671, 0.715160, 0.072169),
               (0.019334, 0.119193, 0.950227))
D65_WHITE = (0.95047, 1.0, 1.08883)
# the sRGB gamut's range in Lab, L in [0, 100], a in [-86.183, 98.233], b in [-107.857, 94.478]:
# each channel mapped to about [-1, 1] by its centre and half-range
LAB_CENTRE = (50.0, 6.025, -6.6895)
LAB_HALF_RANGE = (50.0, 92.208, 101.1675)


def rgb_to_lab(rgb: torch.Tensor) -> torch.Tensor:
    """CIE Lab ``(n, 3, H, W)`` of sRGB images in [0, 1] (D65 white point)."""
    lin = torch.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    m = torch.tensor(SRGB_TO_XYZ, dtype=rgb.dtype, device=rgb.device)
    white = torch.tensor(D65_WHITE, dtype=rgb.dtype, device=rgb.device).view(1, 3, 1, 1)
    xyz = torch.einsum("ij,njhw->nihw", m, lin) / white
    eps = (6.0 / 29.0) ** 3
    f = torch.where(xyz > eps, xyz.clamp_min(eps) ** (1.0 / 3.0), xyz / (3 * (6.0 / 29.0) ** 2) + 4.0 / 29.0)
    fx, fy, fz = f[:, 0], f[:, 1], f[:, 2]
    return torch.stack([116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)], dim=1)


class LabViewsEncoder(nn.Module):
    """Normalized RGB -> Lab -> (L network, ab network); ``forward`` concatenates their features."""

    def __init__(self, l_net: nn.Module, ab_net: nn.Module, mean: Sequence[float], std: Sequence[float]):
        super().__init__()
        self.l_net, self.ab_net = l_net, ab_net
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1), persistent=False)
        self.register_buffer("lab_centre", torch.tensor(LAB_CENTRE).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("lab_half_range", torch.tensor(LAB_HALF_RANGE).view(1, 3, 1, 1), persistent=False)
        self.out_dim = int(l_net.out_dim) + int(ab_net.out_dim)

    def lab(self, x: torch.Tensor) -> torch.Tensor:
        """The normalized Lab channels of normalized RGB images ``x``."""
        rgb = (x * self.std + self.mean).clamp(0.0, 1.0)
        return (rgb_to_lab(rgb) - self.lab_centre) / self.lab_half_range

    def views(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lab = self.lab(x)
        return self.l_net(lab[:, :1]), self.ab_net(lab[:, 1:])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat(self.views(x), dim=1)


@dataclass(frozen=True)
class CMCConfig:
    name: str
    negatives: int          # N, bank entries drawn per step
    bank_momentum: float    # m of the bank update


@torch.no_grad()
def bank_update(bank: torch.Tensor, idx: torch.Tensor, z: torch.Tensor, momentum: float) -> None:
    """``bank[i] <- normalize(m bank[i] + (1 - m) z_i)`` for the rows ``idx`` (distinct)."""
    bank[idx] = F.normalize(momentum * bank[idx] + (1.0 - momentum) * z.to(bank.dtype), dim=1)


@FRAMEWORKS.register("cmc")
class CMC(Framework):
    """L and ab views of Lab, one network each, negatives from a memory bank."""

    config_cls = CMCConfig
    test_config: dict = {"negatives": 16, "bank_momentum": 0.5}
    negatives = "logits"
    views_per_image = 1

    @classmethod
    def check(cls, cfg: CMCConfig, where: str) -> None:
        if cfg.negatives < 1:
            raise ConfigError(f"{where}.negatives must be >= 1, got {cfg.negatives}")
        if not 0.0 <= cfg.bank_momentum <= 1.0:
            raise ConfigError(f"{where}.bank_momentum must be in [0, 1], got {cfg.bank_momentum}")

    @classmethod
    def build_encoder(cls, cfg, build, in_channels, seed, mean, std) -> nn.Module:
        if in_channels != 3:
            raise ConfigError(f"framework cmc splits RGB images into L and ab; the data have {in_channels} channels")
        l_seed, ab_seed = sub_seeds(seed, 2)
        return LabViewsEncoder(build(1, l_seed), build(2, ab_seed), mean, std)

    @classmethod
    def build_projector(cls, cfg, build, encoder, seed) -> nn.Module:
        l_seed, ab_seed = sub_seeds(seed, 2)
        heads = nn.ModuleList([build(encoder.l_net.out_dim, l_seed), build(encoder.ab_net.out_dim, ab_seed)])
        heads.out_dim = heads[0].out_dim
        return heads

    def __init__(self, encoder: nn.Module, projector: nn.Module, cfg: Any):
        if not isinstance(encoder, LabViewsEncoder) or not isinstance(projector, nn.ModuleList):
            raise TypeError("framework cmc needs the encoder and projectors of CMC.build_encoder / build_projector")
        super().__init__(encoder, projector, cfg)
        self.bank_l: torch.Tensor | None = None
        self.bank_ab: torch.Tensor | None = None
        self.generator = torch.Generator()
        self._pending: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    def modules(self) -> list[nn.Module]:
        return [self.encoder, self.projector]

    def checkpoint_state(self) -> dict[str, Any]:
        return {"banks": AttributeState(self, ("bank_l", "bank_ab")), "generator": self.generator}

    def prepare(self, n_images: int, generator: torch.Generator) -> None:
        dim = self.projector.out_dim
        device = next(self.projector.parameters()).device
        self.bank_l = F.normalize(torch.randn(n_images, dim, generator=generator), dim=1).to(device)
        self.bank_ab = F.normalize(torch.randn(n_images, dim, generator=generator), dim=1).to(device)
        self.generator = generator

    def projections(self, v1: torch.Tensor, v2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(z_L, z_ab)`` of the images ``v1``; ``v2`` is unused (the views are colour channels)."""
        h_l, h_ab = self.encoder.views(v1)
        return self.projector[0](h_l), self.projector[1](h_ab)

    def logits(self, views: Sequence[torch.Tensor], idx: torch.Tensor, temperature: float):
        if self.bank_l is None:
            raise RuntimeError("CMC.prepare() must run before the first step")
        (v,) = views
        z_l, z_ab = (F.normalize(z, dim=1) for z in self.projections(v, v))
        drawn = torch.randint(self.bank_l.shape[0], (self.cfg.negatives,), generator=self.generator).to(v.device)
        pos = (z_l * z_ab).sum(dim=1) / temperature
        neg_l = z_l @ self.bank_ab[drawn].T / temperature
        neg_ab = z_ab @ self.bank_l[drawn].T / temperature
        mask = drawn.unsqueeze(0) != idx.unsqueeze(1)
        self._pending = (idx, z_l.detach(), z_ab.detach())
        return torch.cat([pos, pos]), torch.cat([neg_l, neg_ab]), torch.cat([mask, mask])

    def after_step(self) -> dict[str, float]:
        if self._pending is not None:
            idx, z_l, z_ab = self._pending
            bank_update(self.bank_l, idx, z_l, self.cfg.bank_momentum)
            bank_update(self.bank_ab, idx, z_ab, self.cfg.bank_momentum)
            self._pending = None
        return {}
