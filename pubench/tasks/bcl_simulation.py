"""Task ``bcl_simulation``: MSE of one estimator of BCL's numerical experiment (002, Fig. 5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pubench.sim import bcl_process as bp
from pubench.tasks import TASKS
from pubench.utils.config import build_config

ESTIMATORS = ("biased", "dcl", "bcl")


@dataclass(frozen=True)
class EstimatorConfig:
    name: str
    beta: float = 0.0  # only BCL uses it; Sec. 4.3 sets beta = 0


def validate(params: dict) -> tuple[bp.ProcessConfig, EstimatorConfig]:
    unknown = set(params) - {"data", "estimator"}
    if unknown:
        raise ValueError(f"params: unknown key {sorted(unknown)[0]!r}")
    cfg = build_config(bp.ProcessConfig, params["data"], "params.data")
    est = build_config(EstimatorConfig, params["estimator"], "params.estimator")
    if est.name not in ESTIMATORS:
        raise ValueError(f"params.estimator.name: {est.name!r} is not one of {ESTIMATORS}")
    return cfg, est


@TASKS.register("bcl_simulation")
def bcl_simulation(params: dict, seeds: dict[str, int]) -> dict:
    """``params = {data: ProcessConfig fields, estimator: {name, beta}}``.

    The process is drawn from the ``data`` seed, so every estimator of a column sees the
    same observations: the comparison between rows is paired.
    """
    cfg, est = validate(params)
    obs = bp.simulate(cfg, np.random.default_rng(seeds["data"]))
    target = bp.theta_sup(obs)
    if est.name == "biased":
        theta = bp.theta_biased(obs)
    elif est.name == "dcl":
        theta = bp.theta_dcl(obs, cfg.tau_plus)
    else:
        theta = bp.theta_bcl(obs, cfg.alpha, cfg.tau_plus, est.beta)
    ok = np.isfinite(target)
    return {
        "metrics": {
            "mse": bp.mse(theta, target),
            "mean_estimate": float(theta[ok].mean()),
            "mean_theta_sup": float(target[ok].mean()),
        },
        "info": {
            "anchors_used": int(ok.sum()),
            "anchors_without_tn": int((~ok).sum()),
            "fn_fraction": float(1 - obs.is_tn.mean()),
            "accept_reject_rounds": obs.rounds,
        },
    }


bcl_simulation.validate = validate
