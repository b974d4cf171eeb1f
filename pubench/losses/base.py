"""The loss interface: a contrastive loss a spec names in ``loss: {name, ...}``.

A loss is a pure function registered in :data:`LOSSES` (one module of this package each,
found automatically)::

    @LOSSES.register("info_nce", from_logits=info_nce_from_logits, test_config={"temperature": 0.5})
    def info_nce(z1, z2, temperature, *, reduction="mean"): ...

* the two-view form takes the projections ``z1, z2`` ``(b, d)`` of two views of ``b``
  samples, optionally one label argument (``labeled``: bool ``(b,)`` labeled-positive
  mask, or ``labels``: int ``(b,)``), its hyperparameters (no defaults: a spec says them)
  and the keyword ``reduction`` (``"mean"`` | ``"sum"`` | ``"none"``, per anchor);
* ``from_logits`` (optional): the same estimator on precomputed logits,
  ``fn(pos_logits (n,), neg_logits (n, K), *, neg_mask (n, K) | None, reduction,
  <a subset of the hyperparameters>)``, for negatives that are not the other views of
  the batch (InfoGraph's graphs, a memory bank, a queue); the graph trainer accepts exactly
  the losses that declare one (:func:`logits_form`);
* ``test_config``: a value for every hyperparameter, for ``tests/project/test_contracts.py``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from pubench.utils.registry import Registry

VIEW_ARGS = ("z1", "z2")
LABEL_ARGS = ("labeled", "labels")
LOGIT_ARGS = ("pos_logits", "neg_logits")


def hyperparameters(fn: Callable) -> list[str]:
    """The hyperparameters of a two-view loss: its arguments but views, label and reduction."""
    return [k for k in inspect.signature(fn).parameters if k not in (*VIEW_ARGS, *LABEL_ARGS, "reduction")]


def label_argument(fn: Callable) -> str | None:
    """``labeled``, ``labels`` or None: what the loss needs to know about the batch."""
    return next((a for a in LABEL_ARGS if a in inspect.signature(fn).parameters), None)


def _check_loss(name: str, fn: Any) -> None:
    if not callable(fn) or isinstance(fn, type):
        raise TypeError(f"loss {name!r} must be a function (z1, z2, ..., *, reduction)")
    params = inspect.signature(fn).parameters
    if list(params)[:2] != list(VIEW_ARGS):
        raise TypeError(f"loss {name!r}: the first arguments must be z1, z2, got {list(params)[:2]}")
    red = params.get("reduction")
    if red is None or red.kind is not inspect.Parameter.KEYWORD_ONLY or red.default != "mean":
        raise TypeError(f"loss {name!r} must take the keyword-only argument reduction='mean'")
    if sum(a in params for a in LABEL_ARGS) > 1:
        raise TypeError(f"loss {name!r} takes at most one of {LABEL_ARGS}")
    hyper = hyperparameters(fn)
    defaulted = [k for k in hyper if params[k].default is not inspect.Parameter.empty]
    if defaulted:
        raise TypeError(f"loss {name!r}: hyperparameters {defaulted} have defaults (a spec must say them)")
    test_config = getattr(fn, "test_config", None)
    if not isinstance(test_config, dict) or set(test_config) != set(hyper):
        raise TypeError(f"loss {name!r} must declare test_config with a value for each of {hyper}")
    logits = getattr(fn, "from_logits", None)
    if logits is None:
        return
    lparams = inspect.signature(logits).parameters
    if list(lparams)[:2] != list(LOGIT_ARGS) or "neg_mask" not in lparams or "reduction" not in lparams:
        raise TypeError(f"loss {name!r}: from_logits must take (pos_logits, neg_logits, *, neg_mask, reduction, ...)")
    extra = set(lparams) - {*LOGIT_ARGS, "neg_mask", "reduction"} - set(hyper)
    if extra:
        raise TypeError(f"loss {name!r}: from_logits takes {sorted(extra)}, which the loss does not")


LOSSES = Registry("loss", package="pubench.losses", check=_check_loss)


def logits_form(name: str) -> Callable | None:
    """The logits form loss ``name`` declares, or None."""
    return getattr(LOSSES.get(name), "from_logits", None)


def with_logits_form() -> list[str]:
    """The registered losses that declare a logits form."""
    return [n for n in LOSSES.names() if logits_form(n) is not None]
