"""Task ``bcl_score_density``: the empirical distribution of exp(x/t) of one class (002, Fig. 4).

BCL Sec. 4.2 (steps i-iii, Algorithms 1-3 of App. B.1) draws, for each of M anchors, N
unlabeled scores x: a false negative (FN) with probability tau_plus, else a true negative
(TN), from phi_FN or phi_TN (eq. 13-14) by accept-reject from a proposal phi, and maps them
to exp(x/t). Fig. 4 plots the density of exp(x/t) per class, 'fitted by using Gaussian
kernel', at t = 2, M = 1, N = 20000, for several alpha.

A job reports one class (``scores: tn | fn``); the process is drawn from the ``data`` seed,
so the TN and FN jobs of a column see the same simulated sample (one panel of the figure).
Metrics: ``mean`` (the class's mean exp(x/t)) and ``auc`` (P(a score of the class > a score
of the other class), ties 1/2: how far the class sits above the other, 1/2 when phi_TN =
phi_FN). ``info.density``: the Gaussian-kernel density estimate of the class's exp(x/t) on
the spec's grid (``x``, ``y``), the curve the figure draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import gaussian_kde

from pubench.sim import bcl_process as bp
from pubench.tasks.base import TASKS, Task
from pubench.train.context import JobContext
from pubench.utils.config import ConfigError, build_config
from pubench.utils.result import Result

CLASSES = ("tn", "fn")
PROPOSALS = ("normal",)
BANDWIDTHS = ("scott", "silverman")


@dataclass(frozen=True)
class ProposalConfig:
    name: str     # normal (phi = N(mean, std^2), Fig. 3's choice)
    mean: float
    std: float


@dataclass(frozen=True)
class ScoreProcessConfig:
    """Sec. 4.2's process: M anchors, N unlabeled scores each, alpha, t, tau_plus, the proposal phi."""

    M: int
    N: int
    alpha: float
    t: float
    tau_plus: float
    proposal: dict


@dataclass(frozen=True)
class GridConfig:
    start: float
    stop: float
    points: int


@dataclass(frozen=True)
class DensityConfig:
    grid: dict          # {start, stop, points}: where the density is evaluated (a fixed grid: seeds average pointwise)
    bandwidth: str      # scott | silverman (scipy.stats.gaussian_kde's rules)


def validate(params: dict) -> tuple[ScoreProcessConfig, ProposalConfig, str, DensityConfig, GridConfig]:
    unknown = set(params) - {"data", "scores", "density"}
    missing = {"data", "scores", "density"} - set(params)
    if unknown or missing:
        raise ConfigError(f"params: unknown key {sorted(unknown)[0]!r}" if unknown
                          else f"params: missing key {sorted(missing)[0]!r}")
    cfg = build_config(ScoreProcessConfig, params["data"], "params.data")
    prop = build_config(ProposalConfig, cfg.proposal, "params.data.proposal")
    if prop.name not in PROPOSALS:
        raise ConfigError(f"params.data.proposal.name: {prop.name!r} is not one of {PROPOSALS}")
    if prop.std <= 0:
        raise ConfigError("params.data.proposal.std must be > 0")
    if not 0.5 <= cfg.alpha <= 1.0:
        raise ConfigError(f"params.data.alpha must lie in [0.5, 1] (Sec. 3.1), got {cfg.alpha}")
    if not 0.0 < cfg.tau_plus < 1.0:
        raise ConfigError(f"params.data.tau_plus must lie in (0, 1), got {cfg.tau_plus}")
    if cfg.M < 1 or cfg.N < 2 or cfg.t <= 0:
        raise ConfigError("params.data: M >= 1, N >= 2 and t > 0 are required")
    scores = params["scores"]
    if scores not in CLASSES:
        raise ConfigError(f"params.scores: {scores!r} is not one of {CLASSES}")
    dens = build_config(DensityConfig, params["density"], "params.density")
    grid = build_config(GridConfig, dens.grid, "params.density.grid")
    if grid.points < 2 or not grid.stop > grid.start:
        raise ConfigError("params.density.grid: points >= 2 and stop > start are required")
    if dens.bandwidth not in BANDWIDTHS:
        raise ConfigError(f"params.density.bandwidth: {dens.bandwidth!r} is not one of {BANDWIDTHS}")
    return cfg, prop, scores, dens, grid


@TASKS.register("bcl_score_density")
class BCLScoreDensity(Task):
    """``params = {data: {M, N, alpha, t, tau_plus, proposal: {name: normal, mean, std}},
    scores: tn | fn, density: {grid: {start, stop, points}, bandwidth: scott | silverman}}``."""

    info_keys = ("density", "n_scores", "fn_fraction", "accept_reject_rounds")
    test_config = {"data": {"M": 1, "N": 400, "alpha": 0.9, "t": 2.0, "tau_plus": 0.5,
                            "proposal": {"name": "normal", "mean": 0.0, "std": 1.0}},
                   "scores": "fn", "density": {"grid": {"start": 0.0, "stop": 5.0, "points": 11}, "bandwidth": "scott"}}

    @classmethod
    def validate(cls, params: dict):
        return validate(params)

    @classmethod
    def run(cls, params: dict, seeds: dict[str, int], ctx: JobContext) -> Result:
        return score_density(params, seeds)


def score_density(params: dict, seeds: dict[str, int]) -> Result:
    """One job of :class:`BCLScoreDensity`."""
    cfg, prop, which, dens, grid = validate(params)
    x, is_tn, rounds = bp.simulate_scores(cfg.M, cfg.N, cfg.alpha, cfg.t, cfg.tau_plus, prop.mean, prop.std,
                                          np.random.default_rng(seeds["data"]))
    mine, other = (x[is_tn], x[~is_tn]) if which == "tn" else (x[~is_tn], x[is_tn])
    if mine.size < 2 or other.size < 1 or not np.isfinite(x).all():
        raise ValueError(f"params.data: the sample has {mine.size} {which.upper()} and {other.size} other scores "
                         "(finite); raise N or move tau_plus away from 0 / 1")
    at = np.linspace(grid.start, grid.stop, grid.points)
    kde = gaussian_kde(mine, bw_method=dens.bandwidth)
    return Result(
        metrics={"mean": float(mine.mean()), "auc": 100.0 * bp.ranks_above(mine, other)},
        info={
            "density": {"x": at.tolist(), "y": kde(at).tolist(), "bandwidth_factor": float(kde.factor)},
            "n_scores": int(mine.size),
            "fn_fraction": float(1 - is_tn.mean()),
            "accept_reject_rounds": rounds,
        },
    )
