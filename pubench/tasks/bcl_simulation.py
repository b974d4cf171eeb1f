"""Task ``bcl_simulation``: one estimator of BCL's numerical experiment (002, Fig. 5 and Fig. 8).

Metrics: ``mse`` against theta_SUP (Fig. 5), ``mean_estimate`` (the mean of the estimator over
the anchors, Fig. 8's theta-bar), ``mean_theta_sup`` and the estimator's ``bias`` and
``abs_bias`` (mean_estimate - mean_theta_sup, and its absolute value). The estimator ``sup``
is theta_SUP itself (eq. 27, Fig. 8's true theta: mse and bias 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pubench.sim import bcl_process as bp
from pubench.tasks.base import TASKS, Task
from pubench.train.context import JobContext
from pubench.utils.config import ConfigError, build_config
from pubench.utils.result import Result

ESTIMATORS = ("sup", "biased", "dcl", "bcl")


@dataclass(frozen=True)
class EstimatorConfig:
    name: str
    beta: float = 0.0  # only BCL uses it; Sec. 4.3 sets beta = 0


def validate(params: dict) -> tuple[bp.ProcessConfig, EstimatorConfig]:
    unknown = set(params) - {"data", "estimator"}
    if unknown:
        raise ConfigError(f"params: unknown key {sorted(unknown)[0]!r}")
    cfg = build_config(bp.ProcessConfig, params["data"], "params.data")
    est = build_config(EstimatorConfig, params["estimator"], "params.estimator")
    if est.name not in ESTIMATORS:
        raise ConfigError(f"params.estimator.name: {est.name!r} is not one of {ESTIMATORS}")
    return cfg, est


class DegenerateSimulation(ValueError):
    """The simulation's numbers left float64's range: the result would be meaningless."""


def check_scores(obs: bp.Observations, cfg: bp.ProcessConfig) -> None:
    """Every score exp(x/t) is a positive finite number; 0, a subnormal or inf means exp
    under/overflowed float64 (|x/t| beyond ~708), which happens when 1/t^2 (the range x
    may slide to) or gamma is large."""
    tiny = np.finfo(np.float64).tiny
    scores = np.concatenate([obs.x.ravel(), obs.pos.ravel()])
    bad = ~(np.isfinite(scores) & (scores >= tiny))
    if bad.any():
        reach = (0.5 + cfg.gamma * max(1 / cfg.t**2 - 0.5, 0.0)) / cfg.t
        raise DegenerateSimulation(
            f"exp(x/t) under/overflowed float64 for {int(bad.sum())} of {scores.size} scores: at "
            f"t={cfg.t}, gamma={cfg.gamma} the exponent x/t reaches +-{reach:.3g} (float64 holds "
            "about +-708); raise params.data.t (or lower params.data.gamma)")


def check_errors(theta: np.ndarray, target: np.ndarray, name: str) -> None:
    """Estimates and squared errors are finite, and no non-zero error squares to 0."""
    if not np.isfinite(theta).all():
        raise DegenerateSimulation(f"theta_{name} is not finite for {int((~np.isfinite(theta)).sum())} "
                                   "anchor(s); raise params.data.t")
    if not np.isfinite(target).all():
        raise DegenerateSimulation("theta_SUP is not finite; raise params.data.t")
    with np.errstate(over="ignore", under="ignore"):
        diff = theta - target
        sq = diff**2
    if not np.isfinite(sq).all() or ((diff != 0) & (sq == 0)).any():
        raise DegenerateSimulation(f"the squared error of theta_{name} over/underflows float64; "
                                   "raise params.data.t")


@TASKS.register("bcl_simulation")
class BCLSimulation(Task):
    """``params = {data: ProcessConfig fields, estimator: {name, beta}}``.

    The process is drawn from the ``data`` seed, so every estimator of a column sees the
    same observations: the comparison between rows is paired. Raises ``DegenerateSimulation``
    (the job gets a failure record) when the numbers leave float64's range.
    """

    info_keys = ("anchors_used", "anchors_without_tn", "fn_fraction", "accept_reject_rounds")
    test_config = {"data": {"M": 8, "N": 16, "K": 4, "alpha": 0.8, "gamma": 0.5, "t": 0.5, "tau_plus": 0.1},
                   "estimator": {"name": "bcl", "beta": 0.5}}

    @classmethod
    def validate(cls, params: dict) -> tuple[bp.ProcessConfig, EstimatorConfig]:
        return validate(params)

    @classmethod
    def run(cls, params: dict, seeds: dict[str, int], ctx: JobContext) -> Result:
        return simulate(params, seeds)


def simulate(params: dict, seeds: dict[str, int]) -> Result:
    """One job of :class:`BCLSimulation`."""
    cfg, est = validate(params)
    with np.errstate(over="ignore", under="ignore"):  # reported by check_scores instead
        obs = bp.simulate(cfg, np.random.default_rng(seeds["data"]))
    check_scores(obs, cfg)
    target = bp.theta_sup(obs)
    if est.name == "sup":
        theta = target
    elif est.name == "biased":
        theta = bp.theta_biased(obs)
    elif est.name == "dcl":
        theta = bp.theta_dcl(obs, cfg.tau_plus)
    else:
        theta = bp.theta_bcl(obs, cfg.alpha, cfg.tau_plus, est.beta)
    ok = np.isfinite(target)
    check_errors(theta[ok], target[ok], est.name)
    mean_estimate, mean_sup = float(theta[ok].mean()), float(target[ok].mean())
    return Result(
        metrics={
            "mse": bp.mse(theta, target),
            "mean_estimate": mean_estimate,
            "mean_theta_sup": mean_sup,
            "bias": mean_estimate - mean_sup,
            "abs_bias": abs(mean_estimate - mean_sup),
        },
        info={
            "anchors_used": int(ok.sum()),
            "anchors_without_tn": int((~ok).sum()),
            "fn_fraction": float(1 - obs.is_tn.mean()),
            "accept_reject_rounds": obs.rounds,
        },
    )

