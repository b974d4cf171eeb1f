"""PUSB (Kato, Teshima & Honda 2019, "Learning from Positive and Unlabeled Data with a
Selection Bias", ICLR), PU_METHODS ``pusb``: when the labeled positives are not a uniform
draw of the positives, the nnPU classifier's scores still order the examples (they are
monotone in ``p(y = 1 | x)`` under the paper's invariance-of-order assumption) but its
threshold 0 is biased; PUSB keeps the scores and moves the threshold to ``theta_pi``, the
score above which a fraction ``pi`` of the data lies (``pi = P_x(r(x) > theta_pi)``).

The scorer is trained as nnPU (Kiryo et al. 2017, :func:`pubench.pu.risks.nnpu_objective`;
the released code, MasaKat0/PUlearning ``BiasedPUlearning/nnPUSB/train_nnPU.py``, uses the
logistic loss, beta 0, gamma 1: the spec says so). ``theta_pi`` is
:func:`selection_bias_threshold` of the scores of ``threshold_sample``:

* ``unlabeled``: the unlabeled training examples, a sample of the distribution whose
  positive fraction is the prior the method is given (case-control: ``p(x)``; single
  training set: the unlabeled part, whose positive fraction is the Split's prior);
* ``test``: the test inputs, as the released code does (a transductive threshold).

AUC and AP do not depend on the threshold; accuracy, precision, recall and F1 do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from pubench.pu.base import PU_METHODS
from pubench.pu.end_to_end import RiskMethod
from pubench.train.augment import to_float
from pubench.train.loop import predict
from pubench.train.metrics import evaluate_scores
from pubench.utils.config import ConfigError

THRESHOLD_SAMPLES = ("unlabeled", "test")


@dataclass(frozen=True)
class PUSBConfig:
    name: str
    threshold_sample: str           # unlabeled (the paper's p(x) sample) | test (the released code)
    prior: float | None = None
    loss: str | None = None
    beta: float = 0.0
    gamma: float = 1.0


def selection_bias_threshold(scores: torch.Tensor, prior: float) -> float:
    """``theta_pi`` from a sample of scores: the value at 0-based position
    ``floor(n (1 - pi))`` of the sorted scores (the last one when that is ``n``), so that
    ``score > theta_pi`` holds for a fraction of about ``pi`` of the sample (the released
    code's quantile)."""
    scores = scores.reshape(-1)
    if scores.numel() == 0:
        raise ValueError("selection_bias_threshold needs a non-empty sample of scores")
    if not 0.0 <= prior <= 1.0:
        raise ValueError(f"prior must be in [0, 1], got {prior}")
    k = min(scores.numel() - 1, math.floor(scores.numel() * (1.0 - prior)))
    return float(scores.sort().values[k])


@PU_METHODS.register("pusb")
class PUSB(RiskMethod):
    """nnPU scores thresholded at ``theta_pi`` (Kato et al. 2019), see the module docstring."""

    config_cls = PUSBConfig
    risk = "nnpu"
    test_config = {"loss": "logistic", "beta": 0.0, "gamma": 1.0, "threshold_sample": "unlabeled"}

    @classmethod
    def check(cls, cfg: PUSBConfig, where: str = "pu_method") -> None:
        super().check(cfg, where)
        if cfg.threshold_sample not in THRESHOLD_SAMPLES:
            raise ConfigError(f"{where}.threshold_sample: {cfg.threshold_sample!r} is not one of {THRESHOLD_SAMPLES}")

    @classmethod
    def evaluate(cls, cfg: PUSBConfig, model, data, prior, ctx):
        model.eval()
        device = ctx.device

        def scores(x: torch.Tensor) -> torch.Tensor:
            return predict(lambda k: model(to_float(x[k].to(device), data.mean, data.std)), x.shape[0],
                           ctx).reshape(-1)

        test_scores = scores(data.x_test)
        if cfg.threshold_sample == "unlabeled":
            sample = scores(data.x_train[data.observed == 0])
        else:
            sample = test_scores
        theta = selection_bias_threshold(sample, prior)
        metrics = evaluate_scores(test_scores - theta, data.y_test, 2)
        return metrics, {"threshold": theta, "threshold_sample": cfg.threshold_sample,
                         "threshold_0_metrics": evaluate_scores(test_scores, data.y_test, 2)}
