"""Task ``infograph``: InfoGraph pre-training with a negative correction, SVM evaluation (000, Table 2).

``params``::

    data:     {dataset: ptc_mr | enzymes | dd | reddit_binary | mutag | proteins | nci1 | imdb_binary,
               features: auto,                     # auto | degree | constant (pubench.data.graphs)
               subset: null}                       # smoke: a stratified sample of this many graphs
    model:    {backbone: {name: gin, hidden: 32, layers: 3}}
    pretrain: {score: dot | cosine,                # local-global score (pubench.frameworks.infograph)
               measure: JSD,                       # InfoGraph's objective, or instead:
               loss: {name: <pubench loss with a logits form>, <its hyperparameters>},
               epochs: 20, batch_size: 128, optimizer: {name: adam, lr: 1.0e-3, weight_decay: 0.0}}
    eval:     {name: svm_cv, folds: 10, C: [0.001, ..., 1000], inner_folds: 5, at_init: false}

Exactly one of ``measure`` and ``loss``. ``pretrain.epochs: 0`` is the untrained-encoder
reference: the randomly initialised GIN is scored as it is; ``score``, ``measure`` and
``loss`` must then be absent (nothing is trained).

Seeds: ``init`` seeds the model initialisation and the batch order; ``data`` seeds the
SVM's cross-validation folds. The ``data`` seed depends only on the column's data
config and the seed index, so for a given seed index every row (method) of a column is
scored on the same folds: the comparison between rows is paired.

Returns ``metrics.acc`` (mean 10-fold SVM accuracy, %) and ``info`` with the std over
folds, the per-fold accuracies and chosen C, the loss curve, the floor fraction (the
fraction of node anchors whose negatives got no gradient because the estimator's floor
binds; per epoch and at the last epoch), timings and data facts. ``eval.at_init: true``
also scores the untrained encoder (``info.acc_at_init``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from pubench.tasks.base import TASKS, Task
from pubench.train.context import JobContext
from pubench.utils.config import ConfigError, build_config
from pubench.utils.result import Result


@dataclass(frozen=True)
class DataConfig:
    dataset: str
    features: str = "auto"
    subset: int | None = None  # smoke tiers: a stratified sample of this many graphs (data seed)


@dataclass(frozen=True)
class BackboneConfig:
    name: str
    hidden: int
    layers: int


@dataclass(frozen=True)
class ModelConfig:
    backbone: BackboneConfig


@dataclass(frozen=True)
class OptimizerConfig:
    name: str
    lr: float
    weight_decay: float = 0.0


@dataclass(frozen=True)
class PretrainConfig:
    epochs: int
    batch_size: int
    optimizer: OptimizerConfig
    score: str | None = None  # required when epochs > 0 (no default: a spec choice)
    measure: str | None = None  # "JSD": InfoGraph's objective; or
    loss: dict[str, Any] | None = None  # a pubench estimator; one of the two when epochs > 0


@dataclass(frozen=True)
class EvalConfig:
    name: str
    C: list[float] = field(default_factory=lambda: [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0])
    folds: int = 10
    inner_folds: int = 5
    at_init: bool = False


@dataclass(frozen=True)
class InfographParams:
    data: DataConfig
    model: ModelConfig
    pretrain: PretrainConfig
    eval: EvalConfig


def parse_params(params: dict) -> tuple[InfographParams, Any]:
    """Validate ``params``; returns the config and the local-global objective (None at 0 epochs)."""
    from pubench.data import DATASETS
    from pubench.data.graphs import FEATURES, GraphDatasetSpec
    from pubench.frameworks.infograph import LocalGlobalObjective

    cfg = build_config(InfographParams, params, "params")
    if cfg.data.dataset not in DATASETS or not isinstance(DATASETS.get(cfg.data.dataset), GraphDatasetSpec):
        DATASETS.get(cfg.data.dataset)  # raises UnknownName with a suggestion if unknown
        raise ConfigError(f"params.data.dataset: {cfg.data.dataset!r} is not a graph data set")
    if cfg.data.subset is not None and cfg.data.subset < 4:
        raise ConfigError(f"params.data.subset: need at least 4 graphs, got {cfg.data.subset}")
    if cfg.data.features not in FEATURES:
        raise ConfigError(f"params.data.features: {cfg.data.features!r} is not one of {FEATURES}")
    if cfg.model.backbone.name != "gin":
        raise ConfigError(f"params.model.backbone.name: only 'gin' is supported, got {cfg.model.backbone.name!r}")
    if cfg.pretrain.optimizer.name != "adam":
        raise ConfigError(f"params.pretrain.optimizer.name: only 'adam' is supported, got {cfg.pretrain.optimizer.name!r}")
    if cfg.pretrain.epochs < 0 or cfg.pretrain.batch_size < 2:
        raise ConfigError("params.pretrain: need epochs >= 0 and batch_size >= 2")
    if cfg.eval.name != "svm_cv":
        raise ConfigError(f"params.eval.name: only 'svm_cv' is supported, got {cfg.eval.name!r}")
    pt = cfg.pretrain
    if pt.epochs == 0:
        if (pt.score, pt.measure, pt.loss) != (None, None, None):
            raise ConfigError("params.pretrain: epochs = 0 (untrained encoder) takes no 'score', 'measure' or 'loss'")
        return cfg, None
    if pt.score is None:
        raise ConfigError("params.pretrain: missing key 'score'")
    try:
        objective = LocalGlobalObjective.from_config(
            score=pt.score, measure=pt.measure, loss=None if pt.loss is None else dict(pt.loss))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return cfg, objective


@TASKS.register("infograph")
class Infograph(Task):
    info_keys = ("dataset", "graphs_used", "acc_std_over_folds", "fold_acc", "svm_C", "loss_curve",
                 "floor_fraction", "floor_fraction_curve")
    test_config = {
        "data": {"dataset": "mutag", "subset": 24},
        "model": {"backbone": {"name": "gin", "hidden": 8, "layers": 2}},
        "pretrain": {"epochs": 2, "batch_size": 8, "optimizer": {"name": "adam", "lr": 1.0e-3}, "score": "cosine",
                     "loss": {"name": "debiased", "temperature": 0.5, "tau_plus": 0.1}},
        "eval": {"name": "svm_cv", "folds": 3, "inner_folds": 2, "C": [0.1, 1.0]},
    }

    @classmethod
    def validate(cls, params: dict) -> tuple[InfographParams, Any]:
        return parse_params(params)

    @classmethod
    def run(cls, params: dict, seeds: dict[str, int], ctx: JobContext) -> Result:
        return infograph(params, seeds, ctx)


def infograph(params: dict, seeds: dict[str, int], ctx: JobContext) -> Result:
    """One job of :class:`Infograph`."""
    from pubench.frameworks.infograph import InfoGraph, embed, pretrain
    from pubench.models import BACKBONES
    from pubench.train.svm_eval import svm_cv

    cfg, objective = parse_params(params)
    gs = ctx.data.graphs(cfg.data.dataset, cfg.data.features)
    graphs, y = gs.graphs, gs.labels.numpy()
    if cfg.data.subset is not None and cfg.data.subset < len(graphs):
        from sklearn.model_selection import train_test_split

        keep, _ = train_test_split(np.arange(len(graphs)), train_size=cfg.data.subset, stratify=y,
                                   random_state=seeds["data"])
        keep = np.sort(keep)
        graphs, y = [graphs[i] for i in keep], y[keep]
    torch.manual_seed(seeds["init"])
    bb = cfg.model.backbone
    model = InfoGraph(BACKBONES.get(bb.name)(gs.num_features, bb.hidden, bb.layers))
    ev = dict(seed=seeds["data"], folds=cfg.eval.folds, C=cfg.eval.C, inner_folds=cfg.eval.inner_folds)
    info: dict[str, Any] = {"dataset": gs.info, "graphs_used": len(graphs), "num_features": gs.num_features,
                            "parameters": sum(p.numel() for p in model.parameters())}
    if cfg.eval.at_init:
        info["acc_at_init"] = svm_cv(embed(model.encoder, graphs), y, **ev)["acc"]
    t0 = time.perf_counter()
    hist = {"loss": [], "floor_fraction": [], "epoch_s": [], "prepare_s": 0.0}
    if objective is not None:
        hist = pretrain(model, graphs, objective, epochs=cfg.pretrain.epochs, batch_size=cfg.pretrain.batch_size,
                        lr=cfg.pretrain.optimizer.lr, weight_decay=cfg.pretrain.optimizer.weight_decay,
                        seed=seeds["init"], ctx=ctx)
    t1 = time.perf_counter()
    res = svm_cv(embed(model.encoder, graphs), y, **ev)
    t2 = time.perf_counter()
    info.update({
        "acc_std_over_folds": res["acc_std"],
        "fold_acc": res["fold_acc"],
        "svm_C": res["C"],
        "loss_first_epoch": hist["loss"][0] if hist["loss"] else None,
        "loss_last_epoch": hist["loss"][-1] if hist["loss"] else None,
        "loss_curve": [round(v, 5) for v in hist["loss"]],
        "floor_fraction": hist["floor_fraction"][-1] if hist["floor_fraction"] else None,
        "floor_fraction_curve": [round(v, 4) for v in hist["floor_fraction"]],
        "pretrain_s": round(t1 - t0, 2),
        "prepare_batches_s": round(hist["prepare_s"], 2),
        "epoch_s_mean": round(sum(hist["epoch_s"]) / max(len(hist["epoch_s"]), 1), 3),
        "svm_s": round(t2 - t1, 2),
        "torch_threads": torch.get_num_threads(),
    })
    return Result({"acc": res["acc"]}, info)
