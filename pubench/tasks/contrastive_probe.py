"""Task ``contrastive_probe``: contrastive pre-training of an encoder, then a downstream
classifier on it, evaluated on the test split (docs/tasks.md).

``params = {data, model, pretrain, downstream}``. Seeds: ``data`` -> subsets and the
split (shared by every row with the same ``params.data``); ``init`` -> model
initialization, augmentations, data order and the downstream classifier. The whole run
happens inside ``torch.random.fork_rng`` seeded from ``init``, so nothing depends on (or
changes) the caller's global RNG. Torch's thread setting is left as the executor set it.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from pubench.downstream import DOWNSTREAM
from pubench.frameworks.pretrain import (
    LossCall,
    PretrainConfig,
    build_models,
    check_pretrain_config,
    pretrain,
)
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
from pubench.train import accel, checkpoint, encoder_cache
from pubench.train.context import JobContext
from pubench.utils.config import ConfigError, build_config
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds

KEYS = {"data", "model", "pretrain", "downstream"}
#: what every result's ``info`` holds (besides the data's and the run's facts)
INFO_KEYS = ("split", "data_source", "n_train_examples", "n_test", "epochs_run", "seconds", "device", "torch_threads")


def validate(params: dict[str, Any]):
    """All configs, before any data is loaded (unknown / missing keys fail here)."""
    check_top(params, KEYS, KEYS)
    data = data_config(params["data"])
    model = model_config(params["model"])
    if model.classifier is not None:
        raise ConfigError("params.model.classifier: the downstream unit builds its own head; a classifier block "
                          "belongs to an end-to-end pu_method that brings one")
    pre = build_config(PretrainConfig, params["pretrain"], "params.pretrain")
    unit = DOWNSTREAM.named(params["downstream"], "params.downstream")
    down = unit.config(params["downstream"], "params.downstream")
    # loss checks that need no prior now; the prior is known after the split
    check_pretrain_config(pre, prior=0.5)
    return data, model, pre, unit, down


def run_contrastive(params: dict[str, Any], seeds: dict[str, int], ctx: JobContext) -> Result:
    data_cfg, model_cfg, pre_cfg, unit, down_cfg = validate(params)
    prepared = prepare_data(data_cfg, seeds["data"], ctx.data)
    d = prepared.data
    LossCall(pre_cfg.loss, d.prior, "params.pretrain.loss")  # prior-dependent checks
    dev = ctx.device
    enc_seed, proj_seed, pre_seed, down_seed, global_seed = sub_seeds(seeds["init"], 5)
    info: dict[str, Any] = dict(prepared.info)
    with torch.random.fork_rng(devices=[]):
        ctx = accel.start_job(ctx)
        torch.manual_seed(global_seed)  # anything that still draws from the global RNG (dropout)
        encoder, projector = build_models(
            pre_cfg.framework, lambda ch, s: build_encoder(model_cfg, ch, s),
            lambda dim, s: build_projector(model_cfg, dim, s), d.x_train.shape[1], (enc_seed, proj_seed),
            d.mean, d.std, "params.pretrain.framework")
        encoder, projector = encoder.to(dev), projector.to(dev)
        t0 = time.perf_counter()
        pre_seeds = {"data": seeds["data"], "init": [enc_seed, proj_seed, pre_seed, global_seed]}
        key = encoder_cache.encoder_key({k: params[k] for k in ("data", "model", "pretrain")}, pre_seeds, ctx.profile)
        cached = encoder_cache.load(key)
        if cached is not None:  # the same pre-training already ran (e.g. the other probe of a row)
            encoder.load_state_dict(cached["encoder"])
            encoder.train(cached["training"])
            checkpoint.set_global_rng_state(cached["rng"])  # where a fresh pre-training leaves them
            hist = cached["history"]
        else:
            prefix_key = None
            if pre_cfg.eval_at_epoch is not None:  # epoch E of the full run: continue an earlier epoch's job
                full_run = {k: v for k, v in params["pretrain"].items() if k != "eval_at_epoch"}
                prefix_key = encoder_cache.encoder_key(
                    {"prefix_of": {"data": params["data"], "model": params["model"], "pretrain": full_run}},
                    pre_seeds, ctx.profile)
            hist = pretrain(encoder, projector, prepared.pretrain_x, prepared.pretrain_observed, pre_cfg,
                            normalization=(d.mean, d.std), prior=d.prior, seed=pre_seed, ctx=ctx, prefix_key=prefix_key)
            encoder_cache.save(key, encoder.state_dict(), hist, checkpoint.global_rng_state(), encoder.training)
        info["encoder_cache"] = {"key": key, "hit": cached is not None}
        t1 = time.perf_counter()
        metrics, down_info = unit.run(down_cfg, encoder, d, down_seed, ctx)
        t2 = time.perf_counter()
    info.update(
        epochs_run=hist["epochs_run"],
        pretrain={k: v for k, v in hist.items() if k != "epochs_run"},
        downstream={"name": down_cfg.name, **down_info},
        seconds={"pretrain": round(t1 - t0, 2), "downstream": round(t2 - t1, 2)},
        **run_info_common(ctx),
    )
    return Result(metrics, info)


#: a small run for the contract tests (generated images stand in for mnist)
TEST_CONFIG = {
    "data": {"dataset": "mnist", "labels": {"positive": [1, 3, 5, 7, 9]},
             "split": {"kind": "pu", "n_labeled": 20, "scheme": "single_training_set"},
             "subset": {"train": 120, "test": 60}, "input_size": [1, 12, 12]},
    "model": {"backbone": {"name": "mlp_001", "hidden": 16, "out_dim": 8, "input_size": 12},
              "projector": {"hidden": 8, "out": 8}},
    "pretrain": {"framework": {"name": "simclr"}, "loss": {"name": "punce", "temperature": 0.5}, "epochs": 1,
                 "batch_size": 32, "optimizer": {"name": "adam", "lr": 0.01},
                 "augment": {"name": "mnist_crop", "scale": [0.7, 1.0]}},
    "downstream": {"name": "linear_probe", "risk": "nnpu", "epochs": 2, "batch_size": 32,
                   "optimizer": {"name": "adam", "lr": 0.01}},
}


@TASKS.register("contrastive_probe")
class ContrastiveProbe(Task):
    info_keys = (*INFO_KEYS, "pretrain", "downstream")
    test_config = TEST_CONFIG

    @classmethod
    def validate(cls, params: dict[str, Any]):
        return validate(params)

    @classmethod
    def run(cls, params: dict[str, Any], seeds: dict[str, int], ctx: JobContext) -> Result:
        return run_contrastive(params, seeds, ctx)
