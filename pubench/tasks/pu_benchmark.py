"""Task ``pu_benchmark``: one row of a PU benchmark table (docs/tasks.md).

A row is either

* an end-to-end PU classifier: ``params = {data, model, pu_method, train}`` — the backbone
  plus a linear layer is trained from scratch by ``PU_METHODS[pu_method.name]`` with the
  epochs / batch size / optimizer of ``train``; or
* the contrastive pipeline: ``params = {data, model, pretrain, downstream}`` — exactly the
  ``contrastive_probe`` task.

Seeds as in ``contrastive_probe``: the ``data`` seed decides subsets and the split, the
``init`` seed everything else. Every result carries ``info.split`` and ``info.data_source``.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from pubench.pu import PU_METHODS
from pubench.tasks import TASKS
from pubench.tasks._image_common import (
    TrainConfig,
    build_encoder,
    check_top,
    data_config,
    device,
    model_config,
    prepare_data,
    run_info_common,
)
from pubench.tasks.contrastive_probe import run_contrastive
from pubench.tasks.contrastive_probe import validate as validate_contrastive
from pubench.train._common import sub_seeds
from pubench.utils.config import ConfigError, build_config

E2E_KEYS = {"data", "model", "pu_method", "train"}
CONTRASTIVE_KEYS = {"data", "model", "pretrain", "downstream"}


def validate_end_to_end(params: dict[str, Any]):
    check_top(params, E2E_KEYS, E2E_KEYS)
    data = data_config(params["data"])
    model = model_config(params["model"])
    pm = params["pu_method"]
    if not isinstance(pm, dict) or "name" not in pm:
        raise ConfigError("params.pu_method must be a mapping with 'name'")
    try:
        unit = PU_METHODS.get(pm["name"])
    except KeyError as exc:
        raise ConfigError(f"params.pu_method.name: {exc}") from None
    cfg = build_config(unit.config_cls, pm, "params.pu_method")
    unit.check(cfg, "params.pu_method")
    train = build_config(TrainConfig, params["train"], "params.train")
    train.check("params.train")
    if hasattr(unit, "check_train"):  # a method with its own constraints on the train block (vpu)
        unit.check_train(cfg, train, "params")
    if data.split.get("kind") != "pu":
        raise ConfigError("params.data.split.kind must be pu for an end-to-end PU method")
    return data, model, unit, cfg, train


def run_end_to_end(params: dict[str, Any], seeds: dict[str, int]) -> dict[str, Any]:
    data_cfg, model_cfg, unit, cfg, train = validate_end_to_end(params)
    prepared = prepare_data(data_cfg, seeds["data"])
    d = prepared.data
    dev = device()
    enc_seed, run_seed, global_seed = sub_seeds(seeds["init"], 3)
    info: dict[str, Any] = dict(prepared.info)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(global_seed)
        backbone = build_encoder(model_cfg, d.x_train.shape[1], enc_seed).to(dev)
        t0 = time.perf_counter()
        metrics, method_info = unit.run(cfg, backbone, train, d, run_seed, dev)
        t1 = time.perf_counter()
    info.update(epochs_run=train.epochs, pu_method={"name": cfg.name, **method_info},
                seconds={"train": round(t1 - t0, 2)}, **run_info_common())
    return {"metrics": metrics, "info": info}


def _route(params: dict[str, Any]) -> str:
    if not isinstance(params, dict):
        raise ConfigError(f"params: expected a mapping, got {params!r}")
    if "pu_method" in params:
        return "end_to_end"
    if "pretrain" in params or "downstream" in params:
        return "contrastive"
    raise ConfigError("params: a pu_benchmark row has either pu_method + train (end-to-end PU method) "
                      "or pretrain + downstream (contrastive pipeline)")


@TASKS.register("pu_benchmark")
def pu_benchmark(params: dict[str, Any], seeds: dict[str, int]) -> dict[str, Any]:
    return (run_end_to_end if _route(params) == "end_to_end" else run_contrastive)(params, seeds)


def validate(params: dict[str, Any]):
    """The config checks of the row's pipeline, without loading data."""
    return (validate_end_to_end if _route(params) == "end_to_end" else validate_contrastive)(params)


pu_benchmark.validate = validate
