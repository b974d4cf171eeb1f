"""Task ``text_fewshot``: few-shot fine-tuning of a pretrained text encoder (001 Table 5,
the PNU few-shot experiment of Sec. 5.3, after Gunel et al. 2020). docs/tasks.md.

``params``:

* ``data: {dataset, n_per_class, n_unlabeled, eval_split, max_length}``: the ``data``
  seed draws ``n_per_class`` labeled sentences of each class from the training split
  (class-balanced, the N of the table being ``2 * n_per_class``) and ``n_unlabeled``
  further ones uniformly from the rest (their labels hidden); the model is evaluated on
  ``eval_split`` (``dev`` for SST-2: GLUE's test labels are hidden). Sentences are cut at
  ``max_length`` tokens.
* ``model: {backbone: {name, ...}}``: a text backbone (:mod:`pubench.models.text`); a
  linear classification head reads its first-token state.
* ``train: {epochs, batch_size, optimizer, schedule, views, objective,
  unlabeled_batch_size}``: an epoch is one pass over the labeled sentences in batches of
  ``batch_size`` (Gunel et al.'s protocol); with ``unlabeled_batch_size`` each batch is
  joined by that many unlabeled sentences, drawn without replacement from a reshuffled
  pool (the contrastive term's only use of them); ``objective`` is
  ``{name: ce}`` or ``{name: ce_plus_contrastive, lam, loss: {name, ...}}``
  (:mod:`pubench.losses.ce_contrastive`), the loss being any registered two-view loss.
  ``views: dropout``: the two views of a sentence are two forward passes with independent
  dropout masks (SimCSE), run as one pass over the batch stacked twice; the CE term reads
  the first view.

Seeds: ``data`` draws the labeled / unlabeled samples; ``init`` the head's initial
weights, the batch order and the dropout masks. The pretrained encoder weights are the
same for every seed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from pubench.losses.ce_contrastive import OBJECTIVES, ce_plus_contrastive
from pubench.models.text import REQUIRES
from pubench.tasks._image_common import check_top, run_info_common
from pubench.tasks.base import TASKS, Task
from pubench.train.context import JobContext
from pubench.train.loop import Step, Trainer, batches, predict
from pubench.train.optim import (
    OptimizerConfig,
    ScheduleConfig,
    build_optimizer,
    build_scheduler,
    check_optimizer,
    check_schedule,
)
from pubench.utils.config import ConfigError, build_config
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds, torch_generator

VIEWS = ("dropout",)
#: Two-view losses whose ``labels`` may mark unlabeled samples with -1 (PNU losses).
PNU_LOSSES = ("punce_pnu", "supcon_pnu")
INFO_KEYS = ("data_source", "eval_split", "n_labeled", "n_unlabeled", "backbone")
#: ``dev``: GLUE's dev set (the reported evaluation); ``train_holdout``: HOLDOUT_SIZE training
#: sentences drawn from the data seed and kept out of the labeled and unlabeled draws, so a
#: hyperparameter can be chosen without reading the set a table reports
EVAL_SPLITS = ("dev", "train_holdout")
HOLDOUT_SIZE = 872  # the dev set's size


@dataclass(frozen=True)
class TextDataConfig:
    dataset: str
    n_per_class: int
    n_unlabeled: int
    eval_split: str
    max_length: int


@dataclass(frozen=True)
class TextModelConfig:
    backbone: dict


@dataclass(frozen=True)
class TextTrainConfig:
    epochs: int
    batch_size: int
    optimizer: OptimizerConfig
    schedule: ScheduleConfig
    views: str
    objective: dict
    unlabeled_batch_size: int | None = None    # None: the unlabeled sentences are not used


@dataclass(frozen=True)
class ObjectiveConfig:
    name: str
    lam: float | None = None
    loss: dict | None = None


def _objective(cfg: dict, where: str):
    from pubench.frameworks.pretrain import LossCall

    c = build_config(ObjectiveConfig, cfg, where)
    if c.name not in OBJECTIVES:
        raise ConfigError(f"{where}.name: {c.name!r} is not one of {OBJECTIVES}")
    if c.name == "ce":
        if c.lam is not None or c.loss is not None:
            raise ConfigError(f"{where}: objective 'ce' takes no lam or loss")
        return c, None
    if c.lam is None or c.loss is None:
        raise ConfigError(f"{where}: ce_plus_contrastive needs lam and loss")
    if not 0.0 <= c.lam < 1.0:
        raise ConfigError(f"{where}.lam must be in [0, 1) (lam = 1 is objective 'ce')")
    call = LossCall(c.loss, prior=None, where=f"{where}.loss")
    if call.label_arg != "labels":
        raise ConfigError(f"{where}.loss: {call.name!r} takes no class labels; the text track needs a loss with "
                          "'labels' (supcon, supcon_pnu, punce_pnu)")
    return c, call


def validate(params: dict[str, Any]):
    from pubench.data import DATASETS

    check_top(params, {"data", "model", "train"}, {"data", "model", "train"})
    data = build_config(TextDataConfig, params["data"], "params.data")
    if data.dataset not in DATASETS or DATASETS.get(data.dataset).modality != "text":
        raise ConfigError(f"params.data.dataset: {data.dataset!r} is not a text data set")
    if data.n_per_class < 1 or data.n_unlabeled < 0 or data.max_length < 4:
        raise ConfigError("params.data: n_per_class >= 1, n_unlabeled >= 0 and max_length >= 4 are required")
    if data.eval_split not in EVAL_SPLITS:
        raise ConfigError(f"params.data.eval_split: one of {', '.join(EVAL_SPLITS)} ('dev': the GLUE dev set, what the "
                          "tables report, GLUE's test labels being hidden; 'train_holdout': sentences held out of the "
                          "training set, for choices that must not read the reported set)")
    model = build_config(TextModelConfig, params["model"], "params.model")
    from pubench.models import BACKBONES

    name = model.backbone.get("name") if isinstance(model.backbone, dict) else None
    if name not in BACKBONES or getattr(BACKBONES.get(name), "requires", None) != REQUIRES:
        raise ConfigError(f"params.model.backbone.name: {name!r} is not a text backbone")
    train = build_config(TextTrainConfig, params["train"], "params.train")
    if train.epochs < 0 or train.batch_size < 1:
        raise ConfigError("params.train: epochs must be >= 0 and batch_size >= 1")
    check_optimizer(train.optimizer, "params.train.optimizer")
    check_schedule(train.schedule, "params.train.schedule")
    if train.views not in VIEWS:
        raise ConfigError(f"params.train.views: {train.views!r} is not one of {VIEWS}")
    objective, loss = _objective(train.objective, "params.train.objective")
    if train.unlabeled_batch_size is not None:
        if loss is None or loss.name not in PNU_LOSSES:
            raise ConfigError("params.train.unlabeled_batch_size: only a PNU contrastive loss "
                              f"({', '.join(PNU_LOSSES)}) uses unlabeled sentences")
        if train.unlabeled_batch_size < 1 or data.n_unlabeled < 1:
            raise ConfigError("params.train.unlabeled_batch_size and params.data.n_unlabeled must be >= 1")
    return data, model, train, objective, loss


# ------------------------------------------------------------------ data
def draw_fewshot(labels: torch.Tensor, n_per_class: int, n_unlabeled: int, seed: int):
    """(labeled indices, unlabeled indices): ``n_per_class`` of each class, then
    ``n_unlabeled`` uniformly from the rest; both in random order."""
    g = torch_generator(seed)
    labeled = []
    for c in sorted(labels.unique().tolist()):
        members = (labels == c).nonzero().flatten()
        if len(members) < n_per_class:
            raise ValueError(f"class {c} has {len(members)} training sentences, fewer than n_per_class={n_per_class}")
        labeled.append(members[torch.randperm(len(members), generator=g)[:n_per_class]])
    labeled = torch.cat(labeled)
    labeled = labeled[torch.randperm(len(labeled), generator=g)]
    rest = torch.ones(len(labels), dtype=torch.bool)
    rest[labeled] = False
    pool = rest.nonzero().flatten()
    if len(pool) < n_unlabeled:
        raise ValueError(f"only {len(pool)} sentences are left for n_unlabeled={n_unlabeled}")
    return labeled, pool[torch.randperm(len(pool), generator=g)[:n_unlabeled]]


def holdout_split(train_set, data_seed: int):
    """``(train_set, holdout, pool)``: :data:`HOLDOUT_SIZE` training sentences drawn by the data
    seed (their own stream) as an evaluation set, and the indices of the others, from which
    the labeled and unlabeled sentences are drawn."""
    from pubench.data.text import TextSet
    from pubench.utils.hashing import derive_seed

    order = torch.randperm(len(train_set), generator=torch_generator(derive_seed("holdout", data_seed)))
    held, pool = order[:HOLDOUT_SIZE].sort().values, order[HOLDOUT_SIZE:].sort().values
    holdout = TextSet([train_set.sentences[k] for k in held.tolist()], train_set.labels[held], train_set.classes,
                      f"{train_set.source} ({HOLDOUT_SIZE} held out of the training set)")
    return train_set, holdout, pool


class UnlabeledStream:
    """Draws unlabeled indices without replacement, reshuffling the pool when it runs out."""

    def __init__(self, n: int, gen: torch.Generator):
        self.n, self.gen, self.perm, self.pos = n, gen, torch.randperm(n, generator=gen), 0

    def take(self, k: int) -> torch.Tensor:
        out = []
        while k > 0:
            if self.pos == self.n:
                self.perm, self.pos = torch.randperm(self.n, generator=self.gen), 0
            got = self.perm[self.pos:self.pos + k]
            self.pos += len(got)
            k -= len(got)
            out.append(got)
        return torch.cat(out)


@torch.no_grad()
def evaluate(encoder, head, ids: list[list[int]], labels: torch.Tensor, ctx: JobContext, chunk: int = 64) -> float:
    """Accuracy (%) in eval mode on the job's device; sentences batched by length (less padding)."""
    dev = ctx.device
    encoder.eval()
    head.eval()
    order = torch.tensor(sorted(range(len(ids)), key=lambda k: len(ids[k])), dtype=torch.long)

    def classes(pos: torch.Tensor) -> torch.Tensor:  # the sentences at these positions of ``order``
        x, mask = encoder.pad([ids[k] for k in order[pos].tolist()], dev)
        return head(encoder(x, mask)).argmax(1)

    pred = torch.empty(len(ids), dtype=torch.long)
    pred[order] = predict(classes, len(ids), ctx, chunk).long()
    return 100.0 * float((pred == labels).float().mean())


# ------------------------------------------------------------------ fine-tuning
def fine_tune(encoder, head, train_ids, train_labels, unlabeled_ids, train: TextTrainConfig, objective, loss,
              gen: torch.Generator, ctx: JobContext) -> list:
    """Fine-tune ``encoder`` and ``head`` in place with the loop of :mod:`pubench.train.loop`,
    in the job's context ``ctx``; returns its epoch history."""
    dev = ctx.device
    n_l = len(train_ids)
    steps_per_epoch = math.ceil(n_l / train.batch_size)
    params = [p for m in (encoder, head) for p in m.parameters()]
    optimizer = build_optimizer(train.optimizer, params)
    scheduler = build_scheduler(train.schedule, optimizer, steps_per_epoch, train.epochs)
    stream = UnlabeledStream(len(unlabeled_ids), gen) if train.unlabeled_batch_size else None
    labels_dev = train_labels.to(dev)

    def epoch_batches(epoch):
        for idx in batches(n_l, train.batch_size, gen):
            unl = stream.take(train.unlabeled_batch_size) if stream is not None else idx[:0]
            yield idx, unl

    def step(batch, epoch) -> Step:
        idx, unl = batch
        ids = [train_ids[k] for k in idx.tolist()] + [unlabeled_ids[k] for k in unl.tolist()]
        n, n_lab = len(ids), len(idx)
        y = labels_dev[idx.to(dev)]
        if loss is None:
            x, mask = encoder.pad(ids, dev)
            h = encoder(x, mask)
            value = ce_plus_contrastive(head(h[:n_lab]), y, None, 1.0)
            return Step(value, weight=n_lab)
        x, mask = encoder.pad(ids + ids, dev)    # two dropout views in one pass
        h = encoder(x, mask)
        z1, z2 = h[:n], h[n:]
        observed = torch.cat([y, torch.full((n - n_lab,), -1, dtype=torch.long, device=dev)])
        cl = loss(z1, z2, observed, epoch)
        value = ce_plus_contrastive(head(z1[:n_lab]), y, cl, objective.lam)
        return Step(value, weight=n_lab)

    trainer = Trainer([encoder, head], optimizer, scheduler, desc="text_fewshot", ctx=ctx)
    return trainer.run(train.epochs, epoch_batches, step)


@TASKS.register("text_fewshot")
class TextFewshot(Task):
    info_keys = INFO_KEYS
    requires = REQUIRES
    test_config = {
        "data": {"dataset": "sst2", "n_per_class": 3, "n_unlabeled": 4, "eval_split": "dev", "max_length": 16},
        "model": {"backbone": {"name": "minilm_l6", "layers": 1, "pooling": "mean"}},
        "train": {"epochs": 2, "batch_size": 4, "unlabeled_batch_size": 2, "views": "dropout",
                  "optimizer": {"name": "adamw", "lr": 1.0e-4, "weight_decay": 0.01},
                  "schedule": {"name": "linear"},
                  "objective": {"name": "ce_plus_contrastive", "lam": 0.9,
                                "loss": {"name": "punce_pnu", "temperature": 0.3, "prior": 0.5}}},
    }

    @classmethod
    def validate(cls, params: dict[str, Any]):
        return validate(params)

    @classmethod
    def run(cls, params: dict[str, Any], seeds: dict[str, int], ctx: JobContext) -> Result:
        from pubench.data import DATASETS
        from pubench.models import BACKBONES, build_backbone

        data, model, train, objective, loss = validate(params)
        ds = DATASETS.get(data.dataset)
        t0 = time.perf_counter()
        train_set = ctx.data.text(ds, "train")
        if data.eval_split == "train_holdout":
            train_set, eval_set, pool = holdout_split(train_set, seeds["data"])
            labeled, unlabeled = (pool[i] for i in draw_fewshot(train_set.labels[pool], data.n_per_class,
                                                               data.n_unlabeled, seeds["data"]))
        else:
            eval_set = ctx.data.text(ds, data.eval_split)
            labeled, unlabeled = draw_fewshot(train_set.labels, data.n_per_class, data.n_unlabeled, seeds["data"])
        dev = ctx.device
        enc_seed, head_seed, batch_seed, global_seed = sub_seeds(seeds["init"], 4)
        name, kwargs = model.backbone["name"], {k: v for k, v in model.backbone.items() if k != "name"}
        factory = ctx.data.pretrained(name, BACKBONES.get(name))  # the data source may stand in for its weights
        encoder = build_backbone(name, 0, seed=enc_seed, factory=factory, **kwargs).to(dev)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(head_seed)
            head = nn.Linear(encoder.out_dim, len(train_set.classes)).to(dev)
        tok = encoder.tokenize
        train_ids = tok([train_set.sentences[k] for k in labeled.tolist()], data.max_length)
        unlabeled_ids = tok([train_set.sentences[k] for k in unlabeled.tolist()], data.max_length)
        eval_ids = tok(eval_set.sentences, data.max_length)
        t1 = time.perf_counter()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(global_seed)
            history = fine_tune(encoder, head, train_ids, train_set.labels[labeled], unlabeled_ids, train,
                                objective, loss, torch_generator(batch_seed), ctx)
        t2 = time.perf_counter()
        acc = evaluate(encoder, head, eval_ids, eval_set.labels, ctx)
        t3 = time.perf_counter()
        info = {
            "data_source": f"{ds.name}: {train_set.source}, {eval_set.source}",
            "eval_split": data.eval_split, "n_eval": len(eval_set),
            "n_labeled": len(labeled), "n_unlabeled": len(unlabeled),
            "labeled_per_class": torch.bincount(train_set.labels[labeled], minlength=2).tolist(),
            "unlabeled_positive_fraction": float(train_set.labels[unlabeled].float().mean()) if len(unlabeled) else None,
            "unlabeled_used": train.unlabeled_batch_size is not None,
            "truncated_sentences": sum(len(s) >= data.max_length for s in train_ids + eval_ids),
            "backbone": model.backbone["name"], "objective": train.objective,
            "epochs_run": train.epochs, "steps": sum(h.steps for h in history),
            "final_train_loss": history[-1].mean if history else None,
            "seconds": {"load": round(t1 - t0, 2), "train": round(t2 - t1, 2), "eval": round(t3 - t2, 2)},
            **run_info_common(ctx),
        }
        return Result({"acc": acc}, info)
