"""ImbPU (Su, Chen & Xu 2021, "Positive-Unlabeled Learning from Imbalanced Data", IJCAI),
PU_METHODS ``imbpu``: nnPU trained on the risk of the problem re-balanced to the prior
``target_prior`` (0.5 in the paper and its released code,
guangxinsuuu/Positive-and-Unlabeled-Learning-from-Imbalanced-Data, ImbalancednnPU):

    pi' R_P^+ + max(0, (1 - pi') / (1 - pi) (R_U^- - pi R_P^-))

(:func:`pubench.pu.risks.imbalanced_nnpu_objective`), with nnPU's ``beta`` / ``gamma``
step. Prediction: positive iff the score > 0 (the code's sign of the output), i.e. the
classifier of the re-balanced problem, which favours the minority positive class.
"""

from __future__ import annotations

from dataclasses import dataclass

from pubench.pu.base import PU_METHODS
from pubench.pu.end_to_end import RiskMethod
from pubench.pu.objective import RiskSettings
from pubench.utils.config import ConfigError


@dataclass(frozen=True)
class ImbPUConfig:
    name: str
    target_prior: float         # pi' of the re-balanced problem (paper / released code: 0.5)
    prior: float | None = None
    loss: str | None = None     # released code: sigmoid (the nnPU default here too)
    beta: float = 0.0
    gamma: float = 1.0


@PU_METHODS.register("imbpu")
class ImbPU(RiskMethod):
    """nnPU on the re-balanced (oversampled) PU risk of Su et al. 2021."""

    config_cls = ImbPUConfig
    risk = "nnpu"
    test_config = {"target_prior": 0.5, "loss": "sigmoid", "beta": 0.0, "gamma": 1.0}

    @classmethod
    def check(cls, cfg: ImbPUConfig, where: str = "pu_method") -> None:
        super().check(cfg, where)
        if not 0.0 < cfg.target_prior < 1.0:
            raise ConfigError(f"{where}.target_prior must be in (0, 1)")

    @classmethod
    def risk_settings(cls, cfg: ImbPUConfig, prior: float | None) -> RiskSettings:
        if prior is not None and prior >= 1.0:
            raise ConfigError("imbpu needs a class prior below 1")
        return RiskSettings(cls.risk, prior, cfg.loss, cfg.beta, cfg.gamma, target_prior=cfg.target_prior)

    @classmethod
    def evaluate(cls, cfg: ImbPUConfig, model, data, prior, ctx):
        metrics, info = super().evaluate(cfg, model, data, prior, ctx)
        return metrics, info | {"target_prior": cfg.target_prior}
