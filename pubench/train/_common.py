"""Shared training plumbing (not a unit): batching, progress bars, seeds, evaluation,
and risk-based classifier training used by the probes, fine-tuning and end-to-end PU."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from pubench.pu import risks as R
from pubench.train.augment import build_augment
from pubench.train.optim import optimizer_config, schedule_config
from pubench.utils.config import ConfigError

RISKS = ("pn", "upu", "nnpu", "pvu")


def sub_seeds(seed: int, n: int) -> list[int]:
    """``n`` independent 63-bit seeds derived from ``seed`` (numpy SeedSequence)."""
    state = np.random.SeedSequence(int(seed) % (2**128)).generate_state(n, dtype=np.uint64)
    return [int(s) & ((1 << 63) - 1) for s in state]


def generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(int(seed))
    return g


def show_progress() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress(iterable, desc: str, total: int | None = None):
    """A tqdm bar over epochs when stderr is a terminal, the bare iterable otherwise."""
    if not show_progress():
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, total=total, leave=False, unit="epoch")


def set_postfix(bar, **kv) -> None:
    if hasattr(bar, "set_postfix"):
        bar.set_postfix({k: f"{v:.4g}" for k, v in kv.items()}, refresh=False)


def batches(n: int, batch_size: int, gen: torch.Generator, drop_last: bool = False, min_size: int = 1):
    """Index batches of a fresh random permutation of ``range(n)``.

    ``drop_last``: drop an incomplete last batch (kept when it is the only one).
    A trailing batch smaller than ``min_size`` is dropped (BatchNorm needs 2 rows).
    """
    perm = torch.randperm(n, generator=gen)
    out = [perm[i:i + batch_size] for i in range(0, n, batch_size)]
    if len(out) > 1 and (drop_last and len(out[-1]) < batch_size or len(out[-1]) < min_size):
        out = out[:-1]
    return [b for b in out if len(b) >= min_size]


def has_batchnorm(module: nn.Module) -> bool:
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in module.modules())


@torch.no_grad()
def predict(fn: Callable[[torch.Tensor], torch.Tensor], n: int, chunk: int = 1024) -> torch.Tensor:
    """``fn(idx)`` over ``range(n)`` in chunks, concatenated on the CPU."""
    outs = [fn(torch.arange(i, min(n, i + chunk))).float().cpu() for i in range(0, n, chunk)]
    return torch.cat(outs) if outs else torch.zeros(0)


# ------------------------------------------------------------------ risk-trained classifiers
@dataclass
class Targets:
    """What a classifier is trained on: ``rows`` (indices of the training examples used),
    and per used row either ``labeled`` (bool, PU risks) or ``target`` (int, PN / CE)."""

    risk: str
    rows: torch.Tensor
    target: torch.Tensor | None = None
    labeled: torch.Tensor | None = None
    n_classes: int = 2


def make_targets(risk: str, split_kind: str, observed: torch.Tensor, y_true: torch.Tensor,
                 n_classes: int) -> Targets:
    """Training targets for ``risk`` on a split of kind ``split_kind``.

    * kind ``none`` (fully labeled evaluation): ``pn`` on the true labels (cross-entropy over
      the classes, or binary cross-entropy on the binarized labels);
    * kind ``pu``: ``pn`` takes the observed labels (unlabeled = negative: the naive
      classifier); ``upu`` / ``nnpu`` / ``pvu`` take labeled positives vs unlabeled;
    * kind ``pnu``: ``pn`` on the labeled examples only (both classes).
    """
    if risk not in RISKS:
        raise ConfigError(f"risk {risk!r} is not one of {RISKS}")
    n = observed.shape[0]
    if n_classes != 2 and risk != "pn":
        raise ConfigError(f"risk {risk!r} needs a binary task (data.labels); multi-class evaluation uses pn")
    if split_kind == "none":
        if risk != "pn":
            raise ConfigError(f"risk {risk!r} needs a PU split; a split of kind none is fully labeled (use pn)")
        return Targets(risk, torch.arange(n), target=y_true.clone(), n_classes=n_classes)
    if split_kind == "pu":
        if risk == "pn":
            return Targets(risk, torch.arange(n), target=(observed == 1).long())
        return Targets(risk, torch.arange(n), labeled=observed == 1)
    if split_kind == "pnu":
        if risk != "pn":
            raise ConfigError(f"risk {risk!r} is a PU risk; on a PNU split use pn (labeled examples)")
        rows = torch.nonzero(observed >= 0).squeeze(1)
        return Targets(risk, rows, target=observed[rows].clone())
    raise ConfigError(f"unknown split kind {split_kind!r}")


@dataclass(frozen=True)
class RiskSettings:
    risk: str
    prior: float | None = None
    loss: str | None = None      # surrogate: default logistic (= cross-entropy) for pn and pvu, sigmoid for upu/nnpu
    beta: float = 0.0
    gamma: float = 1.0

    def surrogate(self) -> str:
        # pvu with the symmetric sigmoid loss is uPU + pi (pubench.pu.risks): cross-entropy keeps it distinct
        return self.loss or ("logistic" if self.risk in ("pn", "pvu") else "sigmoid")


def risk_step(out: torch.Tensor, t: Targets, pos: torch.Tensor, s: RiskSettings):
    """(objective to backprop, reported risk value) for the batch ``pos`` (positions in ``t.rows``)."""
    if t.risk == "pn":
        y = t.target[pos].to(out.device)
        if t.n_classes == 2:
            if s.surrogate() == "logistic":
                obj = nn.functional.binary_cross_entropy_with_logits(out.reshape(-1), y.float())
            else:
                obj = R.pn_risk(out.reshape(-1), y, s.surrogate())
        else:
            obj = nn.functional.cross_entropy(out, y)
        return obj, obj.detach()
    lab = t.labeled[pos].to(out.device)
    if s.prior is None:
        raise ConfigError(f"risk {t.risk} needs a class prior")
    scores = out.reshape(-1)
    if t.risk == "nnpu":
        obj, value, _ = R.nnpu_objective(scores, lab, s.prior, s.surrogate(), s.beta, s.gamma)
        return obj, value
    fn = R.upu_risk if t.risk == "upu" else R.pvu_risk
    obj = fn(scores, lab, s.prior, s.surrogate())
    return obj, obj.detach()


def fit(forward: Callable[[torch.Tensor], torch.Tensor], modules: list[nn.Module], optimizer, scheduler,
        t: Targets, s: RiskSettings, epochs: int, batch_size: int, gen: torch.Generator, desc: str,
        on_epoch: Callable[[int], None] | None = None) -> list[float]:
    """Train for ``epochs`` over ``t.rows`` in shuffled mini-batches; ``forward(rows)`` returns
    the outputs for those training examples. Returns the mean reported risk per epoch."""
    history: list[float] = []
    min_size = 2 if any(has_batchnorm(m) for m in modules) else 1
    bar = progress(range(epochs), desc, total=epochs)
    for epoch in bar:
        for m in modules:
            m.train()
        total, count = 0.0, 0
        for pos in batches(len(t.rows), batch_size, gen, min_size=min_size):
            out = forward(t.rows[pos])
            obj, value = risk_step(out, t, pos, s)
            if not torch.isfinite(obj):
                raise FloatingPointError(f"{desc}: non-finite objective at epoch {epoch}")
            optimizer.zero_grad(set_to_none=True)
            obj.backward()
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            total += float(value) * len(pos)
            count += len(pos)
        history.append(total / max(1, count))
        set_postfix(bar, risk=history[-1])
        if on_epoch is not None:
            on_epoch(epoch)
    return history


def check_loop_config(cfg, where: str) -> None:
    """Validate the fields every training loop config shares: epochs, batch_size, optimizer,
    schedule and the optional training-view augmentation."""
    if cfg.epochs < 0 or cfg.batch_size < 1:
        raise ConfigError(f"{where}: epochs must be >= 0 and batch_size >= 1")
    optimizer_config(cfg.optimizer, f"{where}.optimizer")
    schedule_config(cfg.schedule, f"{where}.schedule")
    if cfg.augment is not None:
        build_augment(cfg.augment, [0.0], [1.0], f"{where}.augment")
