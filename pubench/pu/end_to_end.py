"""Risk-based PU classifiers trained end to end (``PU_METHODS``): a backbone + a linear
layer (one output, the score) trained from scratch with a risk of :mod:`pubench.pu.risks`.

=============  ================================================================  ===========
name           risk                                                              surrogate
=============  ================================================================  ===========
``pn_naive``   PN with every unlabeled example taken as negative (001's "PN")     logistic
``pvu``        ``2 pi R_P^+ + R_U^-``: cost-sensitive P vs U (001's "PvU")        logistic
``upu``        du Plessis et al. 2014: ``pi R_P^+ + R_U^- - pi R_P^-``            sigmoid
``nnpu``       Kiryo et al. 2017, with its ``beta`` / ``gamma`` training step      sigmoid
=============  ================================================================  ===========

vPU (Chen et al. 2020a) is :mod:`pubench.pu.vpu`.

``loss`` overrides the surrogate (``sigmoid`` | ``logistic``). ``prior`` defaults to the
run's prior (``data.prior``, else the Split's: the positive fraction of the unlabeled set).
Each unit is a :class:`pubench.pu.base.PUMethod`; ``run`` gets the backbone (built by the
task, ``out_dim`` features) and the task's ``train`` block (epochs, batch_size, optimizer,
schedule, augment).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.data import DownstreamData, evaluate_network
from pubench.pu.objective import RiskSettings, make_targets, resolve_prior, train_network
from pubench.pu.risks import SURROGATES
from pubench.train.classifier import seeded_head
from pubench.train.context import JobContext
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds


@dataclass(frozen=True)
class RiskMethodConfig:
    name: str
    prior: float | None = None
    loss: str | None = None
    beta: float = 0.0        # nnpu only
    gamma: float = 1.0       # nnpu only


class RiskMethod(PUMethod):
    """A backbone + a linear layer trained from scratch with the risk ``risk``."""

    config_cls = RiskMethodConfig
    test_config: dict = {}
    risk = "pn"

    @classmethod
    def check(cls, cfg: RiskMethodConfig, where: str = "pu_method") -> None:
        if cfg.loss is not None and cfg.loss not in SURROGATES:
            raise ConfigError(f"{where}.loss: {cfg.loss!r} is not one of {sorted(SURROGATES)}")
        if cls.risk != "nnpu" and (cfg.beta != 0.0 or cfg.gamma != 1.0):
            raise ConfigError(f"{where}: beta / gamma are nnPU options")
        if cls.risk == "pn" and cfg.prior is not None:
            raise ConfigError(f"{where}: {cfg.name} takes no prior")
        if cfg.prior is not None and not 0.0 <= cfg.prior <= 1.0:
            raise ConfigError(f"{where}.prior must be in [0, 1]")
        if cfg.beta < 0 or cfg.gamma < 0:
            raise ConfigError(f"{where}: beta and gamma must be >= 0")

    @classmethod
    def run(cls, cfg: RiskMethodConfig, backbone: nn.Module, train: TrainConfig, data: DownstreamData, seed: int,
            ctx: JobContext, classifier=None):
        device = ctx.device
        prior, source = resolve_prior(cfg.prior, data.prior, cls.risk != "pn", "pu_method")
        settings = cls.risk_settings(cfg, prior if cls.risk != "pn" else None)
        targets = make_targets(cls.risk, "pu", data.observed, data.y_true, 2)
        init_seed, order_seed, aug_seed = sub_seeds(seed, 3)
        model = nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, init_seed)).to(device)
        mix = cls.input_mix(cfg, targets, sub_seeds(seed, 4)[3], device)
        hist = train_network(model, train, targets, settings, data, order_seed, aug_seed, ctx, f"{cfg.name}", mix=mix)
        metrics, extra = cls.evaluate(cfg, model, data, settings.prior, ctx)
        info = {"risk": cls.risk, "surrogate_loss": settings.surrogate(), "prior_used": settings.prior,
                "prior_source": source if cls.risk != "pn" else "not used",
                "final_train_risk": hist[-1] if hist else None}
        if cls.risk == "nnpu":
            info.update(beta=cfg.beta, gamma=cfg.gamma)
        return Result(metrics, info | extra)

    @classmethod
    def risk_settings(cls, cfg, prior: float | None) -> RiskSettings:
        return RiskSettings(cls.risk, prior, cfg.loss, cfg.beta, cfg.gamma)

    @classmethod
    def input_mix(cls, cfg, targets, seed: int, device):
        """``mix(x, rows)`` applied to each training batch (None: the inputs as they are); its
        random generators, if any, in its ``checkpoint_state`` attribute (name -> generator)."""
        return None

    @classmethod
    def evaluate(cls, cfg, model: nn.Module, data: DownstreamData, prior: float | None, ctx: JobContext
                 ) -> tuple[dict[str, float], dict]:
        """(test metrics, extra info) of the trained network: positive iff its score > 0."""
        return evaluate_network(model, data, ctx), {}


@PU_METHODS.register("pn_naive")
class PNNaive(RiskMethod):
    risk = "pn"


@PU_METHODS.register("pvu")
class PvU(RiskMethod):
    risk = "pvu"


@PU_METHODS.register("upu")
class UPU(RiskMethod):
    risk = "upu"


@PU_METHODS.register("nnpu")
class NNPU(RiskMethod):
    risk = "nnpu"
    test_config = {"loss": "sigmoid", "beta": 0.01, "gamma": 0.5}
