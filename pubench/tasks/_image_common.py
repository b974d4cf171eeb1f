"""Shared by the image tasks ``contrastive_probe`` and ``pu_benchmark`` (not a task).

Param blocks (validated with dataclasses; unknown or missing keys fail) and the data
pipeline: load -> restrict to the classes of the definition -> seeded subset -> resize ->
split (``pubench.data.splits.make_split``) -> training examples, test set, normalization.
See docs/tasks.md for the schema.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from pubench.data.pixels import channel_stats, images_per_chunk
from pubench.data.source import DataSource
from pubench.pu.data import DownstreamData
from pubench.train.context import JobContext
from pubench.utils.config import ConfigError, build_config


# ------------------------------------------------------------------ param blocks
@dataclass(frozen=True)
class DataConfig:
    dataset: str
    split: dict = field(default_factory=lambda: {"kind": "none"})
    labels: dict | None = None          # {positive: [...], negative: [...] (optional)}; None: multi-class
    prior: float | None = None          # the paper's prior (passed to the split as split.prior)
    subset: dict | None = None          # {train: n, test: n, pretrain: n}: stratified seeded subsets
    input_size: list[int] | None = None  # [C, H, W]: images are resized once to H x W
    train_split: str = "train"
    test_split: str = "test"
    pretrain_split: str | None = None   # e.g. "train+unlabeled": images for pre-training only (split kind none)
    n_test: int | None = None           # expected test-set size (checked when the test set is not subsampled)
    validation: dict | None = None      # recorded; given to the method (WConPU selects its trade-offs on it)
    test_sampling: str | None = None    # "balanced": subsample the larger class of the (binary) test set


@dataclass(frozen=True)
class ProjectorConfig:
    out: int
    hidden: int | str | None = None     # None / "features": the backbone's out_dim
    layers: int = 2
    batchnorm: bool = True
    hidden_bias: bool = True
    out_bias: bool = True


@dataclass(frozen=True)
class ModelConfig:
    backbone: dict
    projector: dict | None = None
    classifier: dict | None = None      # a PU method's own classifier head (PUMethod.classifier_config)


SUBSET_KEYS = ("train", "test", "pretrain")


def check_top(params: dict, allowed: set[str], required: set[str], where: str = "params") -> None:
    if not isinstance(params, dict):
        raise ConfigError(f"{where}: expected a mapping, got {params!r}")
    unknown = set(params) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} (known: {', '.join(sorted(allowed))})")
    missing = required - set(params)
    if missing:
        raise ConfigError(f"{where}: missing key {sorted(missing)[0]!r}")


def data_config(params: dict) -> DataConfig:
    c = build_config(DataConfig, params, "params.data")
    if c.subset is not None:
        bad = set(c.subset) - set(SUBSET_KEYS)
        if bad:
            raise ConfigError(f"params.data.subset: unknown key {sorted(bad)[0]!r} (known: {', '.join(SUBSET_KEYS)})")
        for k, v in c.subset.items():
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 2):
                raise ConfigError(f"params.data.subset.{k} must be an integer >= 2 or null, got {v!r}")
    if c.input_size is not None and (len(c.input_size) != 3 or min(c.input_size) < 1):
        raise ConfigError(f"params.data.input_size must be [C, H, W], got {c.input_size}")
    if c.prior is not None and not 0.0 <= c.prior <= 1.0:
        raise ConfigError("params.data.prior must be in [0, 1]")
    if not isinstance(c.split, dict) or "kind" not in c.split:
        raise ConfigError("params.data.split must be a mapping with 'kind'")
    if c.pretrain_split is not None and c.split.get("kind") != "none":
        raise ConfigError("params.data.pretrain_split is for plain self-supervised pre-training (split kind none); "
                          "a PU split takes its extra unlabeled images through split.unlabeled_split")
    if c.test_sampling not in (None, "balanced"):
        raise ConfigError(f"params.data.test_sampling must be null or 'balanced', got {c.test_sampling!r}")
    if c.test_sampling is not None and c.labels is None:
        raise ConfigError("params.data.test_sampling: balanced needs a binary task (labels)")
    if c.labels is None and c.split.get("kind") != "none":
        raise ConfigError("params.data: a PU / PNU split needs labels: {positive: [...]}")
    return c


def model_config(params: dict) -> ModelConfig:
    c = build_config(ModelConfig, params, "params.model")
    if not isinstance(c.backbone, dict) or "name" not in c.backbone:
        raise ConfigError("params.model.backbone must be a mapping with 'name'")
    if c.projector is not None:
        build_config(ProjectorConfig, c.projector, "params.model.projector")
    return c


# ------------------------------------------------------------------ models
def build_encoder(model: ModelConfig, in_channels: int, seed: int):
    from pubench.models import BACKBONES, build_backbone
    from pubench.models.base import check_module

    kwargs = {k: v for k, v in model.backbone.items() if k != "name"}
    name = model.backbone["name"]
    if name not in BACKBONES:
        BACKBONES.get(name)  # raises UnknownName with a suggestion
    try:
        enc = build_backbone(name, in_channels, seed=seed, **kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"params.model.backbone: {exc}") from None
    check_module(name, enc)
    return enc


def build_projector(model: ModelConfig, in_dim: int, seed: int):
    from pubench.models.heads import projection_head

    if model.projector is None:
        raise ConfigError("params.model.projector is needed for contrastive pre-training")
    p = build_config(ProjectorConfig, model.projector, "params.model.projector")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return projection_head(in_dim, p.hidden, p.out, layers=p.layers, batchnorm=p.batchnorm,
                               hidden_bias=p.hidden_bias, out_bias=p.out_bias)


# ------------------------------------------------------------------ data
@dataclass
class Prepared:
    data: DownstreamData
    split: Any                  # pubench.data.splits.Split
    pretrain_x: torch.Tensor    # uint8 images for contrastive pre-training
    pretrain_observed: torch.Tensor | None
    info: dict


def _load(source: DataSource, name: str, split: str):
    from pubench.data import DATASETS
    from pubench.data.images import ImageSet

    try:
        ds = DATASETS.get(name)
    except KeyError as exc:
        raise ConfigError(f"params.data.dataset: {exc}") from None
    splits = getattr(ds, "splits", None)
    if splits is None or split in splits or "+" not in split:
        return source.images(name, split)
    parts = [source.images(name, s) for s in split.split("+")]
    return ImageSet(torch.cat([p.x for p in parts]), torch.cat([p.y for p in parts]), list(parts[0].classes),
                    " + ".join(f"{s}: {p.source}" for s, p in zip(split.split("+"), parts)))


def _resize(images, size: list[int] | None):
    if size is None:
        return images, None
    c, h, w = size
    if images.x.shape[1] != c:
        raise ConfigError(f"params.data.input_size asks for {c} channels, the images have {images.x.shape[1]}")
    if tuple(images.x.shape[2:]) == (h, w):
        return images, None
    from pubench.data.images import ImageSet

    n = images.x.shape[0]
    # each image is resized on its own, so the chunk changes no value; its size bounds the float copies
    # (2,048 Alzheimer scans at 3x224x224 held 5 GB of them: more than a CPU preflight check's share)
    chunk = images_per_chunk(max(c * h * w, images.x[0].numel()), 2048) if n else 1
    out = torch.empty((n, c, h, w), dtype=torch.uint8)
    for i in range(0, n, chunk):
        v = F.interpolate(images.x[i:i + chunk].float(), size=(h, w), mode="bilinear", antialias=True,
                          align_corners=False)
        out[i:i + chunk] = v.round_().clamp_(0, 255)
    note = f"resized {tuple(images.x.shape[2:])} -> {(h, w)} (bilinear, antialiased)"
    return ImageSet(out, images.y, images.classes, f"{images.source}; {note}"), note


def prepare_data(cfg: DataConfig, data_seed: int, source: DataSource) -> Prepared:
    """Everything the data seed decides: subsets and the split (so every method of a row
    that shares ``params.data`` sees the same training examples); the images come from
    ``source`` (the job's data source)."""
    from pubench.data.splits import (
        binarize,
        make_split,
        resolve_labels,
        restrict,
        subset,
    )

    t0 = time.perf_counter()
    rng = np.random.default_rng(data_seed)
    unl_split = cfg.split.get("unlabeled_split")
    train_name = f"{cfg.train_split}+{unl_split}" if unl_split else cfg.train_split
    train = _load(source, cfg.dataset, train_name)
    test = _load(source, cfg.dataset, cfg.test_split)
    try:
        labels = resolve_labels(cfg.labels, train.classes)
    except ValueError as exc:
        raise ConfigError(f"params.data.labels: {exc}") from None
    train, test = restrict(train, labels), restrict(test, labels)
    sub = cfg.subset or {}
    if sub.get("train"):
        train = subset(train, sub["train"], rng)
    if sub.get("test"):
        test = subset(test, sub["test"], rng)
    elif cfg.n_test is not None and len(test) != cfg.n_test:
        raise ConfigError(f"params.data.n_test = {cfg.n_test} but the {cfg.test_split} split holds {len(test)} images")
    train, resized = _resize(train, cfg.input_size)
    test, _ = _resize(test, cfg.input_size)
    split_cfg = dict(cfg.split)
    if cfg.prior is not None and split_cfg.get("prior") is None:
        split_cfg["prior"] = cfg.prior
    try:
        split = make_split(train.y, labels, split_cfg, rng, classes=train.classes)
    except ValueError as exc:
        raise ConfigError(f"params.data.split: {exc}") from None
    kind = split_cfg["kind"]
    x_train = train.x[split.index]
    if labels is not None:
        y_test = binarize(test.y, labels["positive"], labels["negative"])
        n_classes = 2
    else:
        y_test = test.y.clone()
        n_classes = len(train.classes)
    if bool((y_test < 0).any()):
        raise ConfigError("the test set holds images without a (binarized) label")
    x_test = test.x
    test_note = None
    if cfg.test_sampling == "balanced":
        pos, neg = np.nonzero(y_test.numpy() == 1)[0], np.nonzero(y_test.numpy() == 0)[0]
        k = min(len(pos), len(neg))
        keep = np.sort(np.concatenate([rng.choice(pos, k, replace=False) if len(pos) > k else pos,
                                       rng.choice(neg, k, replace=False) if len(neg) > k else neg]))
        x_test, y_test = x_test[torch.from_numpy(keep)], y_test[torch.from_numpy(keep)]
        test_note = f"balanced: {k} positives + {k} negatives (seeded) of {len(pos)} / {len(neg)}"
    mean, std = channel_stats(x_train)
    data = DownstreamData(x_train=x_train, observed=split.observed, y_true=split.y_true, split_kind=kind,
                          n_classes=n_classes, prior=split.prior, x_test=x_test, y_test=y_test, mean=mean, std=std,
                          pu_scheme=split.definition["split"].get("scheme") if kind == "pu" else None,
                          validation=cfg.validation)
    sources = {"train": train.source, "test": test.source + (f"; {test_note}" if test_note else "")}
    pre_x, pre_obs = x_train, (split.observed if kind != "none" else None)
    if cfg.pretrain_split is not None:
        pre = _load(source, cfg.dataset, cfg.pretrain_split)
        if sub.get("pretrain"):
            pre = subset(pre, sub["pretrain"], rng)
        pre, _ = _resize(pre, cfg.input_size)
        pre_x, pre_obs = pre.x, None
        sources["pretrain"] = pre.source
    elif sub.get("pretrain"):
        raise ConfigError("params.data.subset.pretrain needs data.pretrain_split")
    info = {
        "split": split.record(),
        "data_source": sources,
        "n_train_examples": int(x_train.shape[0]),
        "n_test": int(x_test.shape[0]),
        "n_pretrain": int(pre_x.shape[0]),
        "input_shape": list(x_train.shape[1:]),
        "normalization": {"mean": mean, "std": std, "from": "training examples"},
        "prior_run": split.prior,
        "data_seconds": round(time.perf_counter() - t0, 3),
    }
    if resized:
        info["resized"] = resized
    if cfg.validation is not None:
        info["validation"] = {"config": cfg.validation, "used": False,
                              "note": "this run's method selects nothing on it"}
    return Prepared(data=data, split=split, pretrain_x=pre_x, pretrain_observed=pre_obs, info=info)


def run_info_common(ctx: JobContext) -> dict:
    """The run's device and threads; where the job records its throughput
    (:func:`pubench.train.accel.start_job`), also ``accelerator``: device name, peak memory,
    throughput, determinism flags."""
    out = {"device": str(ctx.device), "torch_threads": torch.get_num_threads()}
    if ctx.accel.throughput is not None:
        from pubench.train import accel

        out["accelerator"] = accel.job_info(ctx.accel, ctx.device, fast=ctx.profile.fast)
    return out
