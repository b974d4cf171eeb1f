"""Shared test/benchmark cases: each registered loss with its naive reference and inputs."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

_HERE = Path(__file__).resolve().parent
for _p in (str(_HERE.parents[1]), str(_HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import torch  # noqa: E402

import naive_losses as ref  # noqa: E402
from pubench.losses import LOSSES, logits_form  # noqa: E402


class _ByName:
    """Every registered loss as an attribute (``L.debiased``) and its declared logits form
    (``L.debiased_from_logits``), looked up in the registry."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        base = name.removesuffix("_from_logits")
        if base not in LOSSES:
            raise AttributeError(f"no registered loss {base!r}")
        fn = LOSSES.get(base) if base == name else logits_form(base)
        if fn is None:
            raise AttributeError(f"loss {base!r} declares no logits form")
        return fn


L = _ByName()


@dataclass(frozen=True)
class LossCase:
    name: str
    fn: Callable
    naive: Callable
    params: dict  # paper hyperparameters besides temperature
    label_kind: str | None = None  # None | "labeled" | "labels" | "pnu"
    anchor_views: int = 2  # anchors per sample: 2 (both views) or 1 (the views of z1 only)

    @property
    def id(self) -> str:
        return self.name + "".join(f"-{k}={v}" for k, v in self.params.items())


# Several hyperparameter settings per loss (each also exercised at several batch sizes).
CASES = [
    LossCase("info_nce", L.info_nce, ref.naive_info_nce, {}),
    LossCase("debiased", L.debiased, ref.naive_debiased, {"tau_plus": 0.1}),
    LossCase("debiased", L.debiased, ref.naive_debiased, {"tau_plus": 0.6}),
    LossCase("hard", L.hard, ref.naive_hard, {"tau_plus": 0.1, "beta": 1.0}),
    LossCase("hard", L.hard, ref.naive_hard, {"tau_plus": 0.0, "beta": 0.5}),
    LossCase("hard", L.hard, ref.naive_hard, {"tau_plus": 0.5, "beta": 3.0}),
    LossCase("pu_corrected", L.pu_corrected, ref.naive_pu_corrected, {"alpha": 0.1, "c": 0.1}),
    LossCase("pu_corrected", L.pu_corrected, ref.naive_pu_corrected, {"alpha": 0.5, "c": 0.02}),
    LossCase("bayesian", L.bayesian, ref.naive_bayesian, {"tau_plus": 0.1, "alpha": 0.9, "beta": 0.9}),
    LossCase("bayesian", L.bayesian, ref.naive_bayesian, {"tau_plus": 0.3, "alpha": 0.7, "beta": 0.0}),
    LossCase("bayesian", L.bayesian, ref.naive_bayesian, {"tau_plus": 0.2, "alpha": 1.0, "beta": 2.0}),
    LossCase("bayesian", L.bayesian, ref.naive_bayesian, {"tau_plus": 0.1, "alpha": 0.2, "beta": 1.0}),
    LossCase("ring", L.ring, ref.naive_ring, {"lower": 0.2, "upper": 0.8}),
    LossCase("ring", L.ring, ref.naive_ring, {"lower": 0.5, "upper": 1.0}),
    LossCase("ring", L.ring, ref.naive_ring, {"lower": 0.0, "upper": 0.3}),
    LossCase("bayesian_official", L.bayesian_official, ref.naive_bayesian_official,
             {"tau_plus": 0.1, "alpha": 0.9, "beta": 0.9}),
    LossCase("bayesian_official", L.bayesian_official, ref.naive_bayesian_official,
             {"tau_plus": 0.3, "alpha": 0.5, "beta": 1.0}),
    LossCase("bayesian_official", L.bayesian_official, ref.naive_bayesian_official,
             {"tau_plus": 0.0, "alpha": 1.0, "beta": 0.0}),
    LossCase("bayesian_official", L.bayesian_official, ref.naive_bayesian_official,
             {"tau_plus": 0.5, "alpha": 0.7, "beta": 0.5}),
    LossCase("ring_official", L.ring_official, ref.naive_ring_official, {"lower": 0.9, "upper": 0.99}, anchor_views=1),
    LossCase("ring_official", L.ring_official, ref.naive_ring_official, {"lower": 0.5, "upper": 0.95}, anchor_views=1),
    LossCase("ring_official", L.ring_official, ref.naive_ring_official, {"lower": 0.0, "upper": 1.0}, anchor_views=1),
    LossCase("supcon", L.supcon, ref.naive_supcon, {}, "labels"),
    LossCase("supcon_pu", L.supcon_pu, ref.naive_supcon_pu, {}, "labeled"),
    LossCase("supcon_pnu", L.supcon_pnu, ref.naive_supcon_pnu, {}, "pnu"),
    LossCase("mixed", L.mixed, ref.naive_mixed, {"lam": 0.3}, "labeled"),
    LossCase("punce", L.punce, ref.naive_punce, {"prior": 0.4}, "labeled"),
    LossCase("punce", L.punce, ref.naive_punce, {"prior": 1.0}, "labeled"),
    LossCase("punce_official", L.punce_official, ref.naive_punce_official, {"prior": 0.4}, "labeled"),
    LossCase("punce_official", L.punce_official, ref.naive_punce_official, {"prior": 1.0}, "labeled"),
    LossCase("punce_pnu", L.punce_pnu, ref.naive_punce_pnu, {"prior": 0.4}, "pnu"),
]

# One case per registered loss (for the expensive checks).
ONE_PER_LOSS = list({c.name: c for c in reversed(CASES)}.values())[::-1]


def make_views(b: int, d: int, seed: int, dtype=torch.float64, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, d, generator=g, dtype=dtype) * scale
    z2 = z1 + 0.7 * torch.randn(b, d, generator=g, dtype=dtype) * scale
    return z1, z2


def make_clustered_views(b: int, d: int, k: int, seed: int, dtype=torch.float32, noise: float = 1.0):
    """Views of ``b`` samples drawn around ``k`` cluster centres: many hard negatives, so
    DCL/HCL/PUCL at t = 0.07 are clamped on some anchors and not on others."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(k, d, generator=g, dtype=torch.float64)
    noise0 = 0.5 * torch.randn(b, d, generator=g, dtype=torch.float64)
    base = centres[torch.randint(0, k, (b,), generator=g)] + noise0
    z1 = base + noise * torch.randn(b, d, generator=g, dtype=torch.float64)
    z2 = base + noise * torch.randn(b, d, generator=g, dtype=torch.float64)
    return z1.to(dtype), z2.to(dtype)


def make_labels(kind: str | None, b: int, seed: int, n_labeled: int | None = None):
    """Label tensor for ``kind``: random with at least one labeled sample by default."""
    if kind is None:
        return {}
    g = torch.Generator().manual_seed(seed + 1000)
    if kind == "labels":
        return {"labels": torch.randint(0, 3, (b,), generator=g)}
    order = torch.randperm(b, generator=g)
    k = max(1, b // 3) if n_labeled is None else n_labeled
    labeled = torch.zeros(b, dtype=torch.bool)
    labeled[order[:k]] = True
    if kind == "labeled":
        return {"labeled": labeled}
    # pnu: labeled samples split into positives (1) and negatives (0), others -1
    y = torch.full((b,), -1, dtype=torch.long)
    y[labeled] = torch.randint(0, 2, (int(labeled.sum()),), generator=g)
    return {"labels": y}


def call(case: LossCase, z1, z2, temperature: float, labels: dict, **overrides):
    return case.fn(z1, z2, temperature=temperature, **labels, **{**case.params, **overrides})


def call_naive(case: LossCase, z1, z2, temperature: float, labels: dict, anchors=None):
    return case.naive(z1, z2, temperature=temperature, **labels, **case.params, anchors=anchors)
