"""The backbone interface: the encoder a spec names in ``params.model.backbone``.

A backbone is a factory registered in :data:`BACKBONES` (one module of this package each,
found automatically)::

    @BACKBONES.register("lenet5", test_config={"input": [1, 28, 28], "kwargs": {}})
    def lenet5(in_channels: int, **kwargs) -> LeNet5: ...

* ``factory(in_channels, **hyperparameters)`` returns an ``nn.Module`` with an integer
  ``out_dim`` (the width of its features); image backbones map float ``(n, C, H, W)`` to
  ``(n, out_dim)``; a graph backbone (``gin``) takes node features, ``in_channels`` being
  their width, and maps a batch of graphs to ``(graphs, out_dim)``;
* ``test_config``: ``{"input": [C, H, W] | {"graph_features": F}, "kwargs": {...}}``, a
  small configuration the contract tests build, run forward and backward
  (``tests/project/test_contracts.py``). Parameter counts are checked against the papers'
  printouts on the ``meta`` device (``tests/models/test_backbones.py``): nothing is allocated.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol, runtime_checkable

from torch import nn

from pubench.utils.registry import Registry


@runtime_checkable
class Backbone(Protocol):
    """What a backbone factory returns (besides being an ``nn.Module``)."""

    out_dim: int


def _check_backbone(name: str, factory: Any) -> None:
    if not callable(factory):
        raise TypeError(f"backbone {name!r} must be a factory (in_channels, **hyperparameters) -> nn.Module")
    params = list(inspect.signature(factory).parameters.values())
    if not params or params[0].kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        raise TypeError(f"backbone {name!r}: the first argument must be the input channels (or node features)")
    tc = getattr(factory, "test_config", None)
    if not isinstance(tc, dict) or set(tc) != {"input", "kwargs"} or not isinstance(tc["kwargs"], dict):
        raise TypeError(f"backbone {name!r} must declare test_config = {{input: [C, H, W] | {{graph_features: F}}, "
                        "kwargs: {...}}")


def check_module(name: str, module: Any) -> None:
    """A built backbone is an ``nn.Module`` with an integer ``out_dim``."""
    if not isinstance(module, nn.Module) or not isinstance(getattr(module, "out_dim", None), int):
        raise TypeError(f"backbone {name!r} must build an nn.Module with an integer out_dim")


BACKBONES = Registry("backbone", package="pubench.models", check=_check_backbone)
