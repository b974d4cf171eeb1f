"""Which cells preflight checks, and which of them share one check.

A cell is checked through its seed-0 job (seeds change no cost). Cells whose configs
differ only in what changes a job's numbers but not its work share one check (a
*configuration*, :func:`cost_key`): a loss's hyperparameters (every key of a ``loss``
mapping but its ``name``: temperatures, tau+, priors, schedules) and the class priors
(``prior``, ``unlabeled_prior``: the same numbers of examples, other labels). Everything
else (data set and split sizes, model, framework, method, batch sizes, epochs) stays in
the key, so the projection of the configuration is each of its cells'.

Every cell is validated on its own first (its task's ``validate``: unknown or mistyped
keys, units the code lacks), so a config error fails in seconds with one line.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

from pubench.registry.overrides import OverrideError
from pubench.jobs.plan import Job, expand
from pubench.numerics import Numerics
from pubench.utils.hashing import config_hash

#: keys that change a job's numbers but not its cost (besides the hyperparameters of a loss)
COST_FREE = ("prior", "unlabeled_prior")


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in COST_FREE:
                continue
            out[k] = {"name": v.get("name")} if k == "loss" and isinstance(v, dict) else _strip(v)
        return out
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def cost_key(task: str, params: dict[str, Any]) -> str:
    """The configuration a cell's check stands for (module docstring); device-independent."""
    return config_hash({"task": task, "params": _strip(params)}, 16)


@dataclass
class Cell:
    spec_id: str
    row: str
    col: str
    job: Job                  # the seed-0 job
    seeds: int                # the tier's seeds: jobs of this cell in a full run
    error: str | None = None  # the config check's one line

    @property
    def name(self) -> str:
        return f"{self.spec_id} {self.row}|{self.col}"

    @property
    def key(self) -> str:
        return cost_key(self.job.task, self.job.params)


@dataclass
class Group:
    """One configuration: the cells sharing a check; the first is the one run."""

    key: str
    cells: list[Cell] = field(default_factory=list)

    @property
    def job(self) -> Job:
        return self.cells[0].job


def config_error(task: str, params: dict[str, Any]) -> str | None:
    """The task's config check and the units the code lacks, as one line (None: fine)."""
    from pubench.registry.units import implemented, units
    from pubench.tasks import TASKS

    try:
        have = implemented()
        missing = sorted({f"{k}:{n}" for k, n in units(task, params) if n not in have[k]})
        if missing:
            return f"not implemented yet: {', '.join(missing)}"
        TASKS.get(task).validate(params)
    except Exception as exc:  # noqa: BLE001 - any config error is the cell's result
        return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400]
    return None


def select(specs: dict[str, Any], tier: str, only: list[str] | None, numerics: Numerics,
           overrides: list[str] | tuple[str, ...] = ()) -> tuple[list[Cell], list[tuple[str, str]]]:
    """The runnable cells of ``specs`` at ``tier`` (seed 0, validated) and the cells the tier
    marks unavailable, as ``(name, reason)``; ``overrides`` (``--set key.path=value``): the
    variant of each cell that ``pubench run --set`` runs (tier ``custom``)."""
    cells, unavailable = [], []
    for spec_id in sorted(specs):
        spec = specs[spec_id]
        if tier not in spec.tiers:
            continue
        try:
            plan = expand(spec, tier, seeds=1, only=only, numerics=numerics, overrides=list(overrides) or None)
        except OverrideError:
            raise
        except ValueError:  # --only selects none of this spec's cells
            continue
        n = spec.tiers[tier].seeds
        unavailable += [(f"{spec_id} {r}|{c}", why) for r, c, why in plan.unavailable]
        for job in plan.jobs:
            cells.append(Cell(spec_id, job.row, job.col, job, n, config_error(job.task, job.params)))
    return cells, unavailable


def group(cells: list[Cell]) -> list[Group]:
    """The configurations of the cells that passed their config check, in cell order."""
    groups: dict[str, Group] = {}
    for c in cells:
        if c.error is None:
            groups.setdefault(c.key, Group(c.key)).cells.append(c)
    return list(groups.values())


# ------------------------------------------------------------------ a sample (CI)
def _backbone(params: dict[str, Any]) -> str:
    bb = (params.get("model") or {}).get("backbone") if isinstance(params.get("model"), dict) else None
    if isinstance(bb, dict):
        extra = ",".join(f"{k}={v}" for k, v in sorted(bb.items()) if k != "name")
        return bb.get("name", "?") + (f"[{extra}]" if extra else "")
    return "none"


def kind(job: Job) -> str:
    """The task kind of a cell: the task, and for ``pu_benchmark`` its route."""
    if job.task == "pu_benchmark":
        return "pu_benchmark/" + ("end_to_end" if "pu_method" in job.params else "contrastive")
    return job.task


def _input_shape(params: dict[str, Any]) -> tuple[int, ...] | None:
    from pubench.preflight.standins import IMAGE_SETS

    data = params.get("data") if isinstance(params.get("data"), dict) else {}
    shape = data.get("input_size") or getattr(IMAGE_SETS.get(data.get("dataset")), "shape", None)
    return tuple(shape) if shape else None


@functools.lru_cache(maxsize=None)
def forward_flops(backbone: str, shape: tuple[int, ...] | None) -> float:
    """FLOPs of one example's forward pass through a backbone (``name`` + kwargs as JSON),
    counted on the meta device (nothing is computed; 0 where it cannot be counted: graphs,
    text, no backbone)."""
    import json

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from pubench.models import build_backbone

    bb = json.loads(backbone)
    if not bb or shape is None:
        return 0.0
    try:
        with torch.device("meta"):
            net = build_backbone(bb["name"], shape[0], **{k: v for k, v in bb.items() if k != "name"}).eval()
            counter = FlopCounterMode(display=False)
            with counter, torch.no_grad():
                net(torch.empty(2, *shape))
    except Exception:  # noqa: BLE001 - a backbone the meta device cannot run: no estimate
        return 0.0
    return counter.get_total_flops() / 2


@functools.lru_cache(maxsize=None)
def forward_activation_bytes(backbone: str, shape: tuple[int, ...] | None) -> float:
    """Bytes of the layer outputs of one example's forward pass through a backbone (the sum
    over its leaf modules, fp32), counted on the meta device: roughly what training keeps for
    the backward pass (0 where it cannot be counted)."""
    import json

    import torch

    from pubench.models import build_backbone

    bb = json.loads(backbone)
    if not bb or shape is None:
        return 0.0
    total = [0]

    def hook(module, args, out):
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                total[0] += t.numel() * 4

    try:
        with torch.device("meta"):
            net = build_backbone(bb["name"], shape[0], **{k: v for k, v in bb.items() if k != "name"}).train()
            for m in net.modules():
                if not list(m.children()) and not getattr(m, "inplace", False):  # in place: no new tensor
                    m.register_forward_hook(hook)
            net(torch.empty(2, *shape))
    except Exception:  # noqa: BLE001 - a backbone the meta device cannot run: no estimate
        return 0.0
    return total[0] / 2


#: the params blocks whose ``batch_size`` trains a network (a probe on frozen features keeps no layer outputs)
TRAINED_STAGES = ("pretrain", "train")


def trained_activation_bytes(job: Job) -> float:
    """A lower estimate of the memory a cell's training step keeps for backward: the layer
    outputs of its backbone (:func:`forward_activation_bytes`) x the largest batch of the
    stages that train it (``pretrain``, ``train``; a probe on frozen features keeps none),
    one view per example."""
    p = job.params
    batch = max([int(p[k].get("batch_size") or 1) for k in TRAINED_STAGES if isinstance(p.get(k), dict)] or [0])
    return batch * forward_activation_bytes(_backbone_json(p), _input_shape(p))


#: the params blocks whose ``batch_size`` a CPU check over its memory budget divides: the stages that
#: train and the probe (an augmented probe runs the frozen backbone on every batch)
DIVIDED_STAGES = (*TRAINED_STAGES, "downstream")


def smaller_batch(job: Job, divisor: int) -> Job | None:
    """``job`` with the ``batch_size`` of its stages (:data:`DIVIDED_STAGES`) divided by
    ``divisor`` (a CPU check of a configuration over the memory budget), or None where a
    training batch would fall below 2 (batch norm) or the job has no such stage (a probe's
    batch stops at 2)."""
    params, changed = copy.deepcopy(job.params), False
    for k in DIVIDED_STAGES:
        block = params.get(k)
        if isinstance(block, dict) and block.get("batch_size"):
            size = int(block["batch_size"])
            if size // divisor < 2 and k in TRAINED_STAGES:
                return None
            block["batch_size"], changed = max(min(2, size), size // divisor), True
    return dataclasses.replace(job, params=params) if changed else None


def trained_batches(job: Job) -> str:
    """``pretrain 256, downstream 512``: the batch sizes :func:`smaller_batch` divides."""
    return ", ".join(f"{k} {job.params[k]['batch_size']}" for k in DIVIDED_STAGES
                     if isinstance(job.params.get(k), dict) and job.params[k].get("batch_size"))


def step_flops(job: Job) -> float:
    """A rough forward cost of a cell's largest batch: the backbone's FLOPs per example x
    the largest ``batch_size`` of its blocks (no data is loaded; for picking and filtering)."""
    p = job.params
    batch = max([int(b.get("batch_size") or 1) for b in p.values()
                 if isinstance(b, dict) and "batch_size" in b] or [1])
    return batch * forward_flops(_backbone_json(p), _input_shape(p))


def _backbone_json(params: dict[str, Any]) -> str:
    """A cell's ``model.backbone`` as canonical JSON (the cache key of the meta-device counts)."""
    import json

    model = params.get("model") if isinstance(params.get("model"), dict) else {}
    bb = model.get("backbone") if isinstance(model.get("backbone"), dict) else {}
    return json.dumps(bb, sort_keys=True)


def sample(cells: list[Cell]) -> list[Cell]:
    """One cell per task kind and backbone: the cheapest by :func:`step_flops` (the first on a tie)."""
    best: dict[tuple[str, str], Cell] = {}
    for c in cells:
        k = (kind(c.job), _backbone(c.job.params))
        if k not in best or step_flops(c.job) < step_flops(best[k].job):
            best[k] = c
    return sorted(best.values(), key=lambda c: (c.spec_id, c.row, c.col))
