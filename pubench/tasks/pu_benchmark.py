"""Task ``pu_benchmark``: one row of a PU benchmark table (docs/tasks.md).

A row is either

* an end-to-end PU classifier: ``params = {data, model, pu_method, train}`` — the backbone
  plus a linear layer is trained from scratch by ``PU_METHODS[pu_method.name]`` with the
  epochs / batch size / optimizer of ``train``; ``model.classifier`` goes to a method that
  brings its own head (``PUMethod.classifier_config``) and is refused otherwise; or
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
from pubench.tasks._image_common import (
    build_encoder,
    build_projector,
    check_top,
    data_config,
    model_config,
    prepare_data,
    run_info_common,
)
from pubench.tasks.base import TASKS, Task
from pubench.tasks.contrastive_probe import INFO_KEYS, TEST_CONFIG, run_contrastive
from pubench.tasks.contrastive_probe import validate as validate_contrastive
from pubench.train import accel
from pubench.train.context import JobContext
from pubench.train.loop import TrainConfig, check_loop_config
from pubench.utils.config import ConfigError, build_config
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds

E2E_KEYS = {"data", "model", "pu_method", "train"}
CONTRASTIVE_KEYS = {"data", "model", "pretrain", "downstream"}


def validate_end_to_end(params: dict[str, Any]):
    check_top(params, E2E_KEYS, E2E_KEYS)
    data = data_config(params["data"])
    model = model_config(params["model"])
    pm = params["pu_method"]
    unit = PU_METHODS.named(pm, "params.pu_method")
    cfg = unit.config(pm, "params.pu_method")
    train = build_config(TrainConfig, params["train"], "params.train")
    check_loop_config(train, "params.train")
    unit.check_train(cfg, train, "params")
    classifier = unit.classifier(model.classifier, "params.model.classifier")
    if unit.uses_projector and model.projector is None:
        raise ConfigError(f"params.model.projector is needed by pu_method {pm['name']}")
    if data.split.get("kind") != "pu":
        raise ConfigError("params.data.split.kind must be pu for an end-to-end PU method")
    return data, model, unit, cfg, train, classifier


def run_end_to_end(params: dict[str, Any], seeds: dict[str, int], ctx: JobContext) -> Result:
    data_cfg, model_cfg, unit, cfg, train, classifier = validate_end_to_end(params)
    prepared = prepare_data(data_cfg, seeds["data"], ctx.data)
    d = prepared.data
    dev = ctx.device
    enc_seed, run_seed, global_seed, proj_seed = sub_seeds(seeds["init"], 4)
    info: dict[str, Any] = dict(prepared.info)
    with torch.random.fork_rng(devices=[]):
        ctx = accel.start_job(ctx)
        torch.manual_seed(global_seed)
        backbone = build_encoder(model_cfg, d.x_train.shape[1], enc_seed).to(dev)
        extra = {"projector": build_projector(model_cfg, backbone.out_dim, proj_seed).to(dev)} if unit.uses_projector else {}
        unit.check_run(cfg, train, d, **extra)  # the caller checks, the method trusts its inputs
        t0 = time.perf_counter()
        metrics, method_info = unit.run(cfg, backbone, train, d, run_seed,
                                        accel.stage(ctx, train.precision, train.compile, "params.train"),
                                        classifier=classifier, **extra)
        t1 = time.perf_counter()
    if method_info.get("validation_used") and "validation" in info:
        info["validation"] = dict(info["validation"], used=True,
                                  note="the method selected its trade-off parameters on these rows' true labels")
    if unit.wall_clock_metrics:
        info["wall_clock_metrics"] = list(unit.wall_clock_metrics)
    info.update(epochs_run=train.epochs, pu_method={"name": cfg.name, **method_info},
                seconds={"train": round(t1 - t0, 2)}, **run_info_common(ctx))
    return Result(metrics, info)


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
class PUBenchmark(Task):
    info_keys = INFO_KEYS
    test_config = {"data": TEST_CONFIG["data"], "model": {"backbone": TEST_CONFIG["model"]["backbone"]},
                   "pu_method": {"name": "nnpu"},
                   "train": {"epochs": 2, "batch_size": 32, "optimizer": {"name": "adam", "lr": 0.01}}}

    @classmethod
    def validate(cls, params: dict[str, Any]):
        """The config checks of the row's pipeline, without loading data."""
        return (validate_end_to_end if _route(params) == "end_to_end" else validate_contrastive)(params)

    @classmethod
    def run(cls, params: dict[str, Any], seeds: dict[str, int], ctx: JobContext) -> Result:
        return (run_end_to_end if _route(params) == "end_to_end" else run_contrastive)(params, seeds, ctx)
