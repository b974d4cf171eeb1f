"""The interface of the pre-training frameworks a spec names.

A **framework** (``params.pretrain.framework``) is a class registered in
:data:`FRAMEWORKS` (one module of this package each, found automatically) that subclasses
:class:`Framework`: built as ``cls(encoder, projector, cfg)``, it gives the modules it
trains (``modules()``) and the projections ``z1, z2`` of two batches of views
(``projections(v1, v2)``), which :func:`pubench.frameworks.pretrain.pretrain` hands to the loss.
A framework whose negatives are not the other views of the batch (MoCo's queue, CMC's
memory bank) sets ``negatives = "logits"``: pre-training then calls ``prepare`` once,
``logits(views, idx, temperature)`` per step (the loss gets them through its logits form,
``pubench.losses.base``) and ``after_step()`` after each optimizer step (queue, bank and
momentum updates). ``views_per_image`` says how many augmented views of each image a step
draws; ``build_encoder`` / ``build_projector`` let a framework shape the modules the task
builds (CMC: one network per colour view).

A framework is a :class:`pubench.utils.registry.Unit` class: ``config_cls``, ``check(cfg,
where)``, ``test_config`` (a small valid config for ``tests/project/test_contracts.py``).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch
from torch import nn

from pubench.utils.registry import Registry, Unit, subclass_check


class Framework(Unit):
    #: "views": the loss's two-view form on ``projections``; "logits": its logits form on ``logits``
    negatives: ClassVar[str] = "views"
    #: augmented views drawn per source image and step
    views_per_image: ClassVar[int] = 2

    def __init__(self, encoder: nn.Module, projector: nn.Module, cfg: Any):
        self.encoder, self.projector, self.cfg = encoder, projector, cfg

    @classmethod
    def check_batch(cls, cfg: Any, batch_size: int, where: str) -> None:
        """Checks that need the pre-training batch size (e.g. a queue that holds a batch)."""

    @classmethod
    def build_encoder(cls, cfg: Any, build: Callable[[int, int], nn.Module], in_channels: int, seed: int,
                      mean: Sequence[float], std: Sequence[float]) -> nn.Module:
        """The encoder pre-training trains and the downstream classifier reads (it takes the
        normalized images); ``build(in_channels, seed)`` builds the spec's backbone."""
        return build(in_channels, seed)

    @classmethod
    def build_projector(cls, cfg: Any, build: Callable[[int, int], nn.Module], encoder: nn.Module,
                        seed: int) -> nn.Module:
        """The projector; ``build(in_dim, seed)`` builds the spec's projector."""
        return build(encoder.out_dim, seed)

    def prepare(self, n_images: int, generator: torch.Generator) -> None:
        """Before the first step: ``n_images`` pre-training images; ``generator`` for the
        framework's own random draws (initial queue / bank, negative samples)."""

    def logits(self, views: Sequence[torch.Tensor], idx: torch.Tensor, temperature: float
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(pos (n,), neg (n, K), neg_mask (n, K) | None)``, logits divided by ``temperature``,
        for ``views`` (``views_per_image`` batches) of the images ``idx``; only frameworks with
        ``negatives = "logits"``."""
        raise NotImplementedError(f"{type(self).__name__} contrasts the views of the batch (negatives = 'views')")

    def after_step(self) -> dict[str, float]:
        """After each optimizer step (momentum encoder, queue, memory bank); reported values."""
        return {}

    @abstractmethod
    def modules(self) -> list[nn.Module]:
        """The modules pre-training trains (their parameters go to the optimizer)."""

    @abstractmethod
    def projections(self, v1: torch.Tensor, v2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(z1, z2)``, ``(b, d)`` each, of two views ``(b, C, H, W)`` of the same ``b`` images."""

    def checkpoint_state(self) -> dict[str, Any]:
        """The framework's state beyond ``modules()`` that a checkpoint must hold, by name:
        a queue or memory bank (tensors in a dict / list, restored in place), a momentum
        encoder that is not in ``modules()``, a generator the framework draws from. Each
        value is a generator, an object with ``state_dict`` / ``load_state_dict`` or a dict
        / list (:func:`pubench.train.checkpoint.object_state`), read at every save and
        restored in place: return objects the framework updates in place (a module holding
        the queue as a buffer, a dict it writes into), never a tensor it rebinds. The
        contract test ``test_every_framework_resumes_bit_for_bit`` checks the result.
        SimCLR has none."""
        return {}


FRAMEWORKS = Registry("framework", package="pubench.frameworks",
                      check=subclass_check("framework", Framework, ("config_cls", "test_config")))
