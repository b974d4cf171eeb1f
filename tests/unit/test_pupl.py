"""puPL (003 Algorithm 2): PU-seeded 2-means recovers two separated Gaussian blobs; the
downstream unit trains a classifier on its pseudo-labels."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from pubench.pu.pupl import PuPL, pu_two_means
from pubench.train import DOWNSTREAM
from pubench.train.probe import DownstreamData
from pubench.utils.config import ConfigError, build_config


pytestmark = pytest.mark.usefixtures("one_thread")



def _blobs(n=600, d=5, sep=6.0, prior=0.4, n_labeled=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = (torch.rand(n, generator=g) < prior).long()
    centre = torch.zeros(2, d)
    centre[1, 0] = sep
    x = centre[y] + torch.randn(n, d, generator=g)
    pos = torch.nonzero(y == 1).squeeze(1)
    labeled = torch.zeros(n, dtype=torch.bool)
    labeled[pos[torch.randperm(len(pos), generator=g)[:n_labeled]]] = True
    return x, y, labeled


def test_recovers_blobs():
    for seed in range(5):
        x, y, labeled = _blobs(seed=seed)
        km = pu_two_means(x, labeled, np.random.default_rng(seed))
        assert km["converged"]
        assert float((km["labels"] == y).float().mean()) > 0.99
        assert bool(km["labels"][labeled].all())
        # centres close to the true means: positive centre ~ (6, 0, ...), negative ~ 0
        assert torch.allclose(km["centers"][1][0], torch.tensor(6.0, dtype=torch.float64), atol=0.3)
        assert km["centers"][0].abs().max() < 0.3


def test_seeding_is_d2_weighted_and_deterministic():
    x, y, labeled = _blobs(seed=1)
    a = pu_two_means(x, labeled, np.random.default_rng(3), max_iter=1)
    b = pu_two_means(x, labeled, np.random.default_rng(3), max_iter=1)
    assert torch.equal(a["centers"], b["centers"]) and torch.equal(a["labels"], b["labels"])
    # D^2 seeding picks negatives (far from mu_P) far more often than their share
    picks = []
    for s in range(200):
        rng = np.random.default_rng(s)
        unl = torch.nonzero(~labeled).squeeze(1)
        mu = x[labeled].double().mean(0)
        d2 = ((x[unl].double() - mu) ** 2).sum(1).numpy()
        j = int(rng.choice(len(unl), p=d2 / d2.sum()))
        picks.append(int(y[unl[j]]))
    assert np.mean(picks) < 0.1


def test_fix_labeled_keeps_positives():
    x, _, labeled = _blobs(sep=0.5, seed=2)  # overlapping: some labeled would move
    free = pu_two_means(x, labeled, np.random.default_rng(0), fix_labeled=False)
    fixed = pu_two_means(x, labeled, np.random.default_rng(0), fix_labeled=True)
    assert bool(fixed["labels"][labeled].all())
    assert free["iterations"] >= 1


def test_errors():
    x, _, labeled = _blobs()
    with pytest.raises(ValueError, match="labeled positive"):
        pu_two_means(x, torch.zeros_like(labeled), np.random.default_rng(0))


class Identity(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.out_dim = d
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return x.flatten(1)


def _as_images(x):
    """Blob features as 1 x 1 x d 'images' (uint8, affine-mapped)."""
    return ((x + 4) * 16).clamp(0, 255).round().to(torch.uint8).view(x.shape[0], 1, 1, -1)


def test_pupl_downstream_end_to_end():
    x, y, labeled = _blobs(seed=4)
    xt, yt, _ = _blobs(n=300, seed=5)
    data = DownstreamData(x_train=_as_images(x), observed=labeled.long(), y_true=y, split_kind="pu", n_classes=2,
                          prior=None, x_test=_as_images(xt), y_test=yt, mean=[0.25], std=[0.0625])
    assert DOWNSTREAM.get("pupl") is PuPL
    cfg = build_config(PuPL.config_cls, {"name": "pupl", "epochs": 30, "batch_size": 64,
                                         "optimizer": {"name": "adam", "lr": 0.05}})
    m, info = PuPL.run(cfg, Identity(5), data, seed=0)
    assert info["pseudo_label_acc_unlabeled"] > 99 and info["kmeans_converged"]
    assert m["acc"] > 98
    m2, _ = PuPL.run(cfg, Identity(5), data, seed=0)
    assert m == m2
    with pytest.raises(ConfigError, match="PU split"):
        data.split_kind = "none"
        PuPL.run(cfg, Identity(5), data, seed=0)
