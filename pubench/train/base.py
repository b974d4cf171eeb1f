"""The interfaces of the training units a spec names.

A **framework** (``params.pretrain.framework``) is a class registered in
:data:`FRAMEWORKS` (one module of this package each, found automatically) that subclasses
:class:`Framework`: built as ``cls(encoder, projector, cfg)``, it gives the modules it
trains (``modules()``) and the projections ``z1, z2`` of two batches of views
(``projections(v1, v2)``), which :func:`pubench.train.pretrain.pretrain` hands to the loss.

A **downstream classifier** (``params.downstream``) is a class registered in
:data:`DOWNSTREAM` that subclasses :class:`Downstream`; ``run(cfg, encoder, data, seed,
device) -> (metrics, info)`` trains a classifier on the pre-trained ``encoder`` from
``data`` (:class:`pubench.train.classifier.DownstreamData`) and evaluates it on the test
split. The implementations live in :mod:`pubench.downstream` (that package is scanned):
they train with the PU risks of :mod:`pubench.pu`, which builds on this package, so they
cannot live here.

Both are :class:`pubench.utils.registry.Unit` classes: ``config_cls``, ``check(cfg,
where)``, ``test_config`` (a small valid config for ``tests/unit/test_contracts.py``).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import torch
from torch import nn

from pubench.train.classifier import DownstreamData
from pubench.utils.registry import Registry, Unit, subclass_check


class Framework(Unit):
    def __init__(self, encoder: nn.Module, projector: nn.Module, cfg: Any):
        self.encoder, self.projector, self.cfg = encoder, projector, cfg

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


class Downstream(Unit):
    #: what every result's ``info.downstream`` holds (a unit may add more)
    info_keys: ClassVar[tuple[str, ...]] = ("risk", "final_train_risk")

    @classmethod
    @abstractmethod
    def run(cls, cfg: Any, encoder: nn.Module, data: DownstreamData, seed: int,
            device: Any = "cpu") -> tuple[dict[str, float], dict[str, Any]]:
        ...


_UNIT_ATTRS = ("config_cls", "test_config")
FRAMEWORKS = Registry("framework", package="pubench.train", check=subclass_check("framework", Framework, _UNIT_ATTRS))
DOWNSTREAM = Registry("downstream", package="pubench.downstream",
                      check=subclass_check("downstream", Downstream, _UNIT_ATTRS))
