"""PUSB (Kato et al. 2019): the selection-bias threshold theta_pi and the method on tiny data."""

from __future__ import annotations

import math

import pytest
import torch

from pubench.pu import PU_METHODS
from pubench.pu.pusb import selection_bias_threshold
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError, build_config
from tests.reference import naive_risks as naive
from tests.pu.test_vpu import RecordingEncoder, _data

pytestmark = pytest.mark.usefixtures("one_thread")

KATO = {"loss": "logistic", "beta": 0.0, "gamma": 1.0}


@pytest.mark.parametrize("prior", [0.0, 0.1, 0.37, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("n", [1, 7, 100])
def test_threshold_matches_naive_and_keeps_a_prior_fraction_above(prior, n):
    s = torch.randn(n, generator=torch.Generator().manual_seed(n))
    theta = selection_bias_threshold(s, prior)
    assert theta == naive.pusb_threshold(s.tolist(), prior)
    above = int((s > theta).sum())
    assert above == max(0, n - 1 - min(n - 1, math.floor(n * (1 - prior))))   # about pi n, never all
    if prior == 0.0:
        assert above == 0


def test_threshold_checks():
    with pytest.raises(ValueError, match="non-empty"):
        selection_bias_threshold(torch.zeros(0), 0.3)
    with pytest.raises(ValueError, match="prior"):
        selection_bias_threshold(torch.zeros(3), 1.3)


def _run(threshold_sample: str, data=None, seed=0):
    unit = PU_METHODS.get("pusb")
    cfg = build_config(unit.config_cls, {"name": "pusb", "threshold_sample": threshold_sample, **KATO})
    train = build_config(TrainConfig, {"epochs": 4, "batch_size": 32, "optimizer": {"name": "adam", "lr": 0.01}})
    return unit.run(cfg, RecordingEncoder(), train, data or _data(n=400), seed=seed, ctx=PLAIN)


def test_pusb_predicts_a_prior_fraction_positive():
    data = _data(n=400)
    m, info = _run("test", data=data)
    # thresholded on the test scores: the predicted-positive fraction of the test set is ~ pi
    test_positive_fraction = (m["recall"] * float(data.y_test.float().mean())) / m["precision"] if m["precision"] else 0
    assert test_positive_fraction == pytest.approx(data.prior, abs=0.02)
    assert info["threshold_sample"] == "test" and "auc" in info["threshold_0_metrics"]
    assert m["auc"] == info["threshold_0_metrics"]["auc"] and m["auc"] > 98
    again, _ = _run("test", data=data)
    assert again == m
    m_u, info_u = _run("unlabeled", data=data)
    assert m_u["auc"] == m["auc"] and info_u["threshold"] != info["threshold"]
    assert m_u["acc"] > 85, m_u


def test_config_checks():
    unit = PU_METHODS.get("pusb")
    with pytest.raises(ConfigError, match="threshold_sample"):
        build_config(unit.config_cls, {"name": "pusb"})
    with pytest.raises(ConfigError, match="threshold_sample"):
        unit.check(build_config(unit.config_cls, {"name": "pusb", "threshold_sample": "train"}))
