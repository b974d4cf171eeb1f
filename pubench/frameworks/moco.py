"""Framework ``moco``: momentum contrast (He et al., CVPR 2020, Algorithm 1).

A query encoder ``f_q`` (the task's encoder + projector, trained by the optimizer and read
by the downstream classifier) and a key encoder ``f_k`` (a copy, never given to the
optimizer) updated after every optimizer step by

    theta_k <- m theta_k + (1 - m) theta_q                       (He et al. eq. 2)

over the parameters (BatchNorm's running statistics of ``f_k`` come from its own forward
passes, in train mode). Per step, for ``b`` images with two views ``x_q, x_k``:

    q = normalize(f_q(x_q)),  k = normalize(f_k(x_k))   (k without gradient)
    pos_i = q_i . k_i / t,    neg_ij = q_i . queue_j / t   (j = 1..N, the queue's keys)

and the loss's logits form runs on ``(pos, neg)``: b anchors, the queries (Algorithm 1's
one-directional loss). After the optimizer step, the momentum update, then the batch's
keys replace the queue's oldest ``b`` entries (a ring buffer; ``queue`` = N >= b).

Decisions (docs/losses.md "MoCo and CMC"):

* The queue starts as N random unit vectors (the reference implementation's start too;
  the paper does not say), drawn from the framework's seeded generator.
* Shuffling BN: MoCo shuffles the keys' sample order across GPUs so that a query and its
  key never share BatchNorm statistics. On one device the key encoder's forward runs on a
  random permutation of the batch split into ``bn_splits`` chunks, each normalized by its
  own statistics; the queries go through in one forward (whole-batch statistics). The
  CIFAR demo of the official code (SplitBatchNorm) splits both encoders; splitting the
  keys alone already gives a query and its key different statistics, at one query forward.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from pubench.frameworks.base import FRAMEWORKS, Framework
from pubench.train.checkpoint import AttributeState
from pubench.train.momentum import momentum_update_
from pubench.utils.config import ConfigError


@dataclass(frozen=True)
class MoCoConfig:
    name: str
    queue: int          # N, keys in the queue (the negatives of every query)
    momentum: float     # m of the key encoder's update
    bn_splits: int      # chunks of the key batch with their own BatchNorm statistics (1: none)


def momentum_update(key: nn.Module, query: nn.Module, momentum: float) -> None:
    """``theta_k <- m theta_k + (1 - m) theta_q`` for every parameter (He et al. eq. 2)."""
    momentum_update_(list(key.parameters()), list(query.parameters()), momentum)


@torch.no_grad()
def enqueue(queue: torch.Tensor, ptr: int, keys: torch.Tensor) -> int:
    """Write ``keys`` (b, d) over the ``b`` oldest entries of the ring buffer ``queue`` (N, d),
    starting at ``ptr`` (wrapping around); returns the new pointer."""
    n, b = queue.shape[0], keys.shape[0]
    if b > n:
        raise ValueError(f"a batch of {b} keys does not fit a queue of {n}")
    slots = (ptr + torch.arange(b, device=queue.device)) % n
    queue[slots] = keys.to(queue.dtype)
    return (ptr + b) % n


def split_forward(module: nn.Module, x: torch.Tensor, splits: int, generator: torch.Generator) -> torch.Tensor:
    """``module(x)`` with the rows shuffled into ``splits`` chunks forwarded separately
    (each with its own BatchNorm statistics; at most ``len(x) // 2`` chunks), returned in
    ``x``'s order."""
    splits = min(splits, x.shape[0] // 2)  # BatchNorm needs 2 rows per chunk
    if splits <= 1:
        return module(x)
    perm = torch.randperm(x.shape[0], generator=generator).to(x.device)
    out = torch.cat([module(chunk) for chunk in x[perm].chunk(splits)])
    return out[torch.argsort(perm)]


@FRAMEWORKS.register("moco")
class MoCo(Framework):
    """Momentum contrast: query encoder, momentum key encoder, queue of N keys."""

    config_cls = MoCoConfig
    test_config: dict = {"queue": 32, "momentum": 0.9, "bn_splits": 2}
    negatives = "logits"

    @classmethod
    def check(cls, cfg: MoCoConfig, where: str) -> None:
        if cfg.queue < 1:
            raise ConfigError(f"{where}.queue must be >= 1, got {cfg.queue}")
        if not 0.0 <= cfg.momentum <= 1.0:
            raise ConfigError(f"{where}.momentum must be in [0, 1], got {cfg.momentum}")
        if cfg.bn_splits < 1:
            raise ConfigError(f"{where}.bn_splits must be >= 1, got {cfg.bn_splits}")

    @classmethod
    def check_batch(cls, cfg: MoCoConfig, batch_size: int, where: str) -> None:
        if batch_size > cfg.queue:
            raise ConfigError(f"{where}.queue = {cfg.queue} cannot hold a batch of {batch_size} keys")

    def __init__(self, encoder: nn.Module, projector: nn.Module, cfg: Any):
        super().__init__(encoder, projector, cfg)
        self.key_encoder = copy.deepcopy(nn.Sequential(encoder, projector))
        for p in self.key_encoder.parameters():
            p.requires_grad_(False)
        self.queue: torch.Tensor | None = None
        self.ptr = 0
        self.generator = torch.Generator()
        self._keys: torch.Tensor | None = None

    def modules(self) -> list[nn.Module]:
        return [self.encoder, self.projector]

    def checkpoint_state(self) -> dict[str, Any]:
        return {"key_encoder": self.key_encoder, "queue": AttributeState(self, ("queue", "ptr")),
                "generator": self.generator}

    def prepare(self, n_images: int, generator: torch.Generator) -> None:
        dim = self.projector.out_dim
        device = next(self.projector.parameters()).device
        self.queue = F.normalize(torch.randn(self.cfg.queue, dim, generator=generator), dim=1).to(device)
        self.ptr = 0
        self.generator = generator

    def keys(self, v: torch.Tensor) -> torch.Tensor:
        """Unit-norm keys of views ``v`` through the key encoder (no gradient, train mode)."""
        self.key_encoder.train()
        with torch.no_grad():
            return F.normalize(split_forward(self.key_encoder, v, self.cfg.bn_splits, self.generator), dim=1)

    def projections(self, v1: torch.Tensor, v2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries of ``v1`` (query encoder) and keys of ``v2`` (key encoder, no gradient)."""
        return self.projector(self.encoder(v1)), self.keys(v2)

    def logits(self, views: Sequence[torch.Tensor], idx: torch.Tensor, temperature: float):
        if self.queue is None:
            raise RuntimeError("MoCo.prepare() must run before the first step")
        q_raw, k = self.projections(*views)
        q = F.normalize(q_raw, dim=1)
        self._keys = k
        pos = (q * k).sum(dim=1) / temperature
        neg = q @ self.queue.T / temperature
        return pos, neg, None

    def after_step(self) -> dict[str, float]:
        momentum_update(self.key_encoder, nn.Sequential(self.encoder, self.projector), self.cfg.momentum)
        if self._keys is not None:
            self.ptr = enqueue(self.queue, self.ptr, self._keys)
            self._keys = None
        return {}
