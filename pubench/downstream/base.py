"""The interface of the downstream classifiers a spec names.

A **downstream classifier** (``params.downstream``) is a class registered in
:data:`DOWNSTREAM` (one module of this package each, found automatically) that subclasses
:class:`Downstream`; ``run(cfg, encoder, data, seed, ctx) -> Result(metrics, info)``
(:class:`pubench.utils.result.Result`) trains a classifier on the pre-trained ``encoder``
from ``data`` (:class:`pubench.pu.data.DownstreamData`) in the job's context
``ctx`` (:class:`pubench.train.context.JobContext`: device, checkpoints, ...; pass it to
every trainer) and evaluates it on the test split. It is a :class:`pubench.utils.registry.Unit` class: ``config_cls``,
``check(cfg, where)``, ``test_config`` (a small valid config for
``tests/project/test_contracts.py``).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

from torch import nn

from pubench.pu.data import DownstreamData
from pubench.train.context import JobContext
from pubench.utils.registry import Registry, Unit, subclass_check
from pubench.utils.result import Result


class Downstream(Unit):
    #: what every result's ``info.downstream`` holds (a unit may add more)
    info_keys: ClassVar[tuple[str, ...]] = ("risk", "final_train_risk")

    @classmethod
    @abstractmethod
    def run(cls, cfg: Any, encoder: nn.Module, data: DownstreamData, seed: int,
            ctx: JobContext) -> Result:
        ...


DOWNSTREAM = Registry("downstream", package="pubench.downstream",
                      check=subclass_check("downstream", Downstream, ("config_cls", "test_config")))
