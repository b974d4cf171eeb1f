"""The PU-method interface: an end-to-end PU classifier a ``pu_benchmark`` row names in
``params.pu_method``.

A PU method is a class registered in :data:`PU_METHODS` (one module of this package each,
found automatically; the registration sets its ``name``) that subclasses :class:`PUMethod`:

* ``config_cls``: the dataclass of its ``pu_method`` block; ``check(cfg, where)``: the
  checks types cannot say (``ConfigError``);
* ``check_train(cfg, train, where)``: its constraints on the row's ``train`` block
  (:class:`pubench.train.loop.TrainConfig`), e.g. vPU's fixed schedule;
* ``classifier_config``: the dataclass of ``params.model.classifier`` when the method
  brings its own classifier head (e.g. WConPU's head on the shared encoder); ``None``
  (the default): the method trains the standard linear head and a
  ``model.classifier`` block is refused;
* ``uses_projector``: true when the method also trains a projection head (e.g. WConPU's
  query encoder): the task builds it from ``params.model.projector`` and passes it to
  ``run`` as ``projector=``;
* ``run(cfg, backbone, train, data, seed, ctx, classifier) -> Result(metrics, info)``:
  train on ``data`` (:class:`pubench.pu.data.DownstreamData`, a binary PU split)
  from the task's freshly built ``backbone`` (``out_dim`` features) in the job's context
  ``ctx`` (:class:`pubench.train.context.JobContext`: its device, checkpoints, step cap;
  pass it to every :class:`pubench.train.loop.Trainer` and ``predict``) and evaluate on
  the test split; ``info`` holds at least :attr:`PUMethod.info_keys`. The caller has run
  :meth:`PUMethod.check_run` first (the task does, and the contract tests): ``run`` checks
  nothing of its own;
* ``test_config``: a small valid ``pu_method`` block for the contract tests.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

from torch import nn

from pubench.pu.data import DownstreamData
from pubench.train.context import JobContext
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError
from pubench.utils.registry import Registry, Unit, subclass_check
from pubench.utils.result import Result


class PUMethod(Unit):
    classifier_config: ClassVar[type | None] = None
    #: true: the method trains a projection head too, built by the task from
    #: ``params.model.projector`` and passed to ``run`` as ``projector=``
    uses_projector: ClassVar[bool] = False
    #: metrics that measure wall-clock time (e.g. WConPU's ``time``, minutes per epoch):
    #: the only ones that differ between two runs of the same seed
    wall_clock_metrics: ClassVar[tuple[str, ...]] = ()
    #: ``info`` entries that are wall-clock measurements (left out when runs are compared)
    wall_clock_info: ClassVar[tuple[str, ...]] = ()
    #: what every result's ``info.pu_method`` holds (a method may add more)
    info_keys: ClassVar[tuple[str, ...]] = ("risk", "prior_used", "prior_source")

    @classmethod
    def check_train(cls, cfg: Any, train: TrainConfig, where: str) -> None:
        """The method's constraints on the ``train`` block (``where`` is the params level)."""

    @classmethod
    def classifier(cls, params: dict | None, where: str) -> Any:
        """The checked ``model.classifier`` block (``None`` when absent)."""
        if params is None:
            return None
        if cls.classifier_config is None:
            raise ConfigError(f"{where}: this PU method trains the standard linear head and takes no classifier block")
        from pubench.utils.config import build_config

        return build_config(cls.classifier_config, params, where)

    @staticmethod
    def needs_own_views(train: TrainConfig, name: str, where: str = "params") -> None:
        """For methods that draw their two augmented views from ``pu_method.augment``."""
        if train.augment is not None:
            raise ConfigError(f"{where}.train.augment: {name} draws its views from pu_method.augment")
        if train.batch_size < 2:
            raise ConfigError(f"{where}.train.batch_size must be >= 2 for {name}")

    @classmethod
    def check_run(cls, cfg: Any, train: TrainConfig, data: DownstreamData, projector: nn.Module | None = None) -> None:
        """What the caller checks before :meth:`run` (the task, the contract tests): the
        method's config, its ``train`` constraints, a binary PU split and, for a method that
        trains a projection head, the head."""
        cls.check(cfg, "pu_method")
        cls.check_train(cfg, train, "params")
        if data.split_kind != "pu" or data.n_classes != 2:
            raise ConfigError(f"pu_method {cls.name} needs a binary PU split (data.split.kind: pu)")
        if cls.uses_projector and projector is None:
            raise ConfigError(f"{cls.name} needs params.model.projector (the query encoder's projection head)")

    @classmethod
    @abstractmethod
    def run(cls, cfg: Any, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier: Any = None) -> Result:
        ...


PU_METHODS = Registry("pu_method", package="pubench.pu",
                      check=subclass_check("pu_method", PUMethod, ("config_cls", "test_config")))
