"""Rank Pruning (Northcutt et al. 2017) for PU learning: confident counts, pruning and the
re-weighted loss against naive loops, and the method on tiny data."""

from __future__ import annotations

import pytest
import torch

from pubench.pu import PU_METHODS
from pubench.pu.rank_pruning import (MIN_KEPT, confident_noise_rate, inverse_noise_rate, prune_mask,
                                     stratified_folds, weighted_logistic_risk)
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError, build_config
from tests.reference import naive_risks as naive
from tests.pu.test_vpu import RecordingEncoder, _data

pytestmark = pytest.mark.usefixtures("one_thread")


def _case(seed: int, n: int = 200):
    g = torch.Generator().manual_seed(seed)
    y = torch.rand(n, generator=g) < 0.4
    observed = (y & (torch.rand(n, generator=g) < 0.5)).long()
    prob = torch.where(y, 0.5 + 0.5 * torch.rand(n, generator=g), 0.6 * torch.rand(n, generator=g)).double()
    return prob, observed


@pytest.mark.parametrize("seed", range(4))
def test_noise_rates_and_pruning_match_naive(seed):
    prob, observed = _case(seed)
    rho1 = confident_noise_rate(prob, observed)
    assert rho1 == pytest.approx(naive.rank_pruning_rho1(prob.tolist(), observed.tolist()), abs=1e-12)
    pi0 = inverse_noise_rate(observed, rho1)
    assert pi0 == pytest.approx(naive.rank_pruning_pi0(observed.tolist(), rho1), abs=1e-12)
    keep = prune_mask(prob, observed, pi0)
    assert keep.tolist() == naive.rank_pruning_keep(prob.tolist(), observed.tolist(), pi0)
    assert bool(keep[observed == 1].all())            # labeled positives are never pruned (pi_1 = 0)


def test_noise_rate_special_cases():
    observed = torch.tensor([1, 1, 0, 0, 0, 0])
    # perfectly ranked: no unlabeled example reaches the labeled mean -> no positives hidden in U
    assert confident_noise_rate(torch.tensor([0.9, 0.8, 0.1, 0.2, 0.1, 0.3]), observed) == 0.0
    assert inverse_noise_rate(observed, 0.0) == 0.0
    # half of the confident positives are unlabeled
    rho1 = confident_noise_rate(torch.tensor([0.9, 0.9, 0.9, 0.95, 0.1, 0.1]), observed)
    assert rho1 == pytest.approx(0.5)
    # pi_0 = rho1 P(y=1) / P(s=0) with P(s=1) = 1/3: P(y=1) = 2/3, pi_0 = 0.5
    assert inverse_noise_rate(observed, rho1) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="labeled"):
        confident_noise_rate(torch.tensor([0.5, 0.4]), torch.tensor([0, 0]))


def test_pruning_keeps_at_least_min_kept_unlabeled():
    prob = torch.linspace(0, 1, 30).double()
    observed = torch.zeros(30, dtype=torch.long)
    observed[-3:] = 1
    keep = prune_mask(prob, observed, 0.99)
    assert int(keep[observed == 0].sum()) == MIN_KEPT
    assert bool(keep[:MIN_KEPT].all()) and not bool(keep[MIN_KEPT:27].any())  # the largest g go first
    assert bool(prune_mask(prob, observed, 0.0).all())


@pytest.mark.parametrize("seed", range(3))
def test_weighted_logistic_risk_matches_naive(seed):
    g = torch.Generator().manual_seed(seed)
    z = 3 * torch.randn(15, generator=g, dtype=torch.float64)
    t = (torch.rand(15, generator=g) < 0.5).long()
    w = torch.where(t == 1, torch.tensor(1.7, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
    got = float(weighted_logistic_risk(z, t, w))
    assert got == pytest.approx(naive.weighted_bce(z.tolist(), t.tolist(), w.tolist()), abs=1e-12)
    plain = torch.nn.functional.binary_cross_entropy_with_logits(z, t.double())
    assert float(weighted_logistic_risk(z, t, torch.ones_like(z))) == pytest.approx(float(plain))


def test_stratified_folds_partition_each_kind():
    observed = torch.tensor([1] * 7 + [0] * 20)
    folds = stratified_folds(observed, 3, torch.Generator().manual_seed(0))
    assert sorted(torch.cat(folds).tolist()) == list(range(27))
    assert sorted(int(observed[f].sum()) for f in folds) == [2, 2, 3]


def _run(data, **cfg):
    unit = PU_METHODS.get("rank_pruning")
    config = build_config(unit.config_cls, {"name": "rank_pruning", "cv_folds": 3, **cfg})
    train = build_config(TrainConfig, {"epochs": 4, "batch_size": 32, "optimizer": {"name": "adam", "lr": 0.01}})
    return unit.run(config, RecordingEncoder(), train, data, seed=0, ctx=PLAIN)


def test_rank_pruning_learns_and_estimates_the_hidden_positives():
    data = _data(n=400)
    m, info = _run(data)
    assert m["auc"] > 98 and m["acc"] > 85, m
    assert info["prior_used"] is None and len(info["rho1_per_fold"]) == 3
    # true P(s=0|y=1) is ~0.7 (30% of the positives are labeled); the pruned count ~ the positives in U
    assert info["rho1"] == pytest.approx(0.7, abs=0.1)
    hidden = int(((data.y_true == 1) & (data.observed == 0)).sum())
    assert info["n_pruned"] == pytest.approx(hidden, rel=0.25)
    again, _ = _run(data)
    assert again == m


def test_config_checks():
    unit = PU_METHODS.get("rank_pruning")
    with pytest.raises(ConfigError, match="cv_folds"):
        build_config(unit.config_cls, {"name": "rank_pruning"})
    with pytest.raises(ConfigError, match="cv_folds"):
        unit.check(build_config(unit.config_cls, {"name": "rank_pruning", "cv_folds": 1}))
