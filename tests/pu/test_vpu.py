"""vPU (Chen et al. 2020a) trained as its released code does: MixUp pairing, optimizer and
schedule, iterations per epoch, validation hold-out and model selection (tiny synthetic data)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pubench.pu import PU_METHODS
from pubench.pu.data import DownstreamData
from pubench.pu.vpu import FullBatches, halving_factor, vpu_rows
from pubench.train.context import PLAIN
from pubench.train.loop import TrainConfig
from pubench.utils.config import ConfigError, build_config

pytestmark = pytest.mark.usefixtures("one_thread")

RELEASED = {"mix_alpha": 0.3, "lam": 0.03, "iterations_per_epoch": 30, "lr_halving_every": 20,
            "restart_optimizer_at_halving": True, "model_selection": "validation_loss", "validation_fraction": 0.1}
CONSTANT_LR = {"lr_halving_every": 0, "restart_optimizer_at_halving": False}


def _images(y: torch.Tensor, seed: int) -> torch.Tensor:
    """(n, 1, 4, 4) uint8: pixel 0 bright for positives, pixel 1 for negatives, noise elsewhere."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(20, 60, (len(y), 16), generator=g)
    x[torch.arange(len(y)), 1 - y] += 150
    return x.view(-1, 1, 4, 4).to(torch.uint8)


def _data(n: int = 400, frac_labeled: float = 0.3, scheme: str = "single_training_set", seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    y = (torch.rand(n, generator=g) < 0.5).long()
    yt = (torch.rand(200, generator=g) < 0.5).long()
    observed = ((y == 1) & (torch.rand(n, generator=g) < frac_labeled)).long()
    prior = float((y[observed == 0] == 1).float().mean())
    return DownstreamData(x_train=_images(y, seed + 1), observed=observed, y_true=y, split_kind="pu", n_classes=2,
                          prior=prior, x_test=_images(yt, seed + 2), y_test=yt, mean=[0.2], std=[0.25],
                          pu_scheme=scheme)


class RecordingEncoder(nn.Module):
    """Flatten + Linear(16, 16) at identity; records every input seen in train mode."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        with torch.no_grad():
            self.lin.weight.copy_(torch.eye(16))
            self.lin.bias.zero_()
        self.out_dim = 16
        self.train_inputs: list[torch.Tensor] = []

    def forward(self, x):
        if self.training:
            self.train_inputs.append(x.detach().clone())
        return self.lin(x.flatten(1))


def _train(epochs: int = 3, batch_size: int = 16, lr: float = 0.01, **opt):
    optimizer = {"name": "adam", "lr": lr, "betas": [0.5, 0.99], **opt}
    return build_config(TrainConfig, {"epochs": epochs, "batch_size": batch_size, "optimizer": optimizer})


def _run(data=None, train=None, encoder=None, seed=0, **cfg):
    unit = PU_METHODS.get("vpu")
    config = build_config(unit.config_cls, {"name": "vpu", **RELEASED, **cfg})
    enc = encoder or RecordingEncoder()
    metrics, info = unit.run(config, enc, train or _train(), data or _data(), seed=seed, ctx=PLAIN)
    return metrics, info, enc


def test_halving_factor_matches_released_schedule():
    # released code: `if epoch % 20 == 19: lr /= 2` at the start of the epoch
    factors = [halving_factor(e, 20) for e in range(60)]
    assert factors[:19] == [1.0] * 19 and factors[19:39] == [0.5] * 20 and factors[39:59] == [0.25] * 20
    assert factors[59] == 0.125
    assert all(halving_factor(e, 0) == 1.0 for e in range(60))


def test_full_batches_are_shuffled_drop_last_passes():
    gen = torch.Generator().manual_seed(0)
    stream = FullBatches(10, 4, gen)
    got = [stream.next() for _ in range(6)]
    assert all(len(b) == 4 for b in got)
    for k in range(0, 6, 2):  # two full batches per pass of 10 (the last 2 dropped), no repeat within a pass
        both = torch.cat(got[k:k + 2])
        assert len(set(both.tolist())) == 8
    short = FullBatches(3, 8, gen).next()  # fewer examples than the batch: repeats, every example used
    assert len(short) == 8 and set(short.tolist()) == {0, 1, 2}


@pytest.mark.parametrize("scheme", ["single_training_set", "case_control"])
def test_vpu_rows_hold_out_a_pu_validation_set(scheme):
    observed = torch.tensor([1] * 20 + [0] * 80)
    rows = vpu_rows(observed, scheme, 0.1, torch.Generator().manual_seed(0))
    tp, tx, vp, vx = rows["train_p"], rows["train_x"], rows["val_p"], rows["val_x"]
    assert (len(tp), len(vp)) == (18, 2)
    assert set(tp.tolist()).isdisjoint(vp.tolist()) and bool((observed[tp] == 1).all() and (observed[vp] == 1).all())
    assert set(tx.tolist()).isdisjoint(vx.tolist())
    if scheme == "single_training_set":  # the data sample is every training example
        assert (len(tx), len(vx)) == (90, 10) and set(vp.tolist()) <= set(vx.tolist())
        assert set(tx.tolist()) | set(vx.tolist()) == set(range(100))
    else:  # case-control: the unlabeled sample
        assert (len(tx), len(vx)) == (72, 8) and bool((observed[tx] == 0).all() and (observed[vx] == 0).all())
    none = vpu_rows(observed, scheme, 0.0, torch.Generator().manual_seed(0))
    assert len(none["val_p"]) == 0 and len(none["val_x"]) == 0 and len(none["train_p"]) == 20
    with pytest.raises(ConfigError, match="scheme"):
        vpu_rows(observed, None, 0.1, torch.Generator())


def test_mixup_pairs_each_data_example_with_a_permuted_positive():
    bs = 16
    _, info, enc = _run(train=_train(epochs=1, batch_size=bs), iterations_per_epoch=4, mix_alpha=50.0,
                        **CONSTANT_LR)
    calls = enc.train_inputs
    assert len(calls) == 2 * 4  # one forward of P + U and one of the mixed batch per iteration
    for pu, mixed in zip(calls[0::2], calls[1::2]):
        xp, xu, xm = pu[:bs].flatten(1), pu[bs:].flatten(1), mixed.flatten(1)
        assert xm.shape == xu.shape
        partners, mus = [], []
        for i in range(bs):
            d = xu[i] - xp                                   # (bs, 16): candidate positive partners
            r = xm[i] - xp
            mu = (r * d).sum(1) / (d * d).sum(1).clamp(min=1e-12)
            resid = (r - mu[:, None] * d).norm(dim=1)
            j = int(resid.argmin())
            assert float(resid[j]) < 1e-4
            partners.append(j)
            mus.append(float(mu[j]))
        assert sorted(partners) == list(range(bs))           # a permutation of the positive batch
        assert max(mus) - min(mus) < 1e-4                    # one coefficient per batch
        assert 0.3 < mus[0] < 0.7                            # Beta(50, 50) is concentrated at 1/2


def test_iterations_per_epoch_and_batches():
    _, info, enc = _run(train=_train(epochs=3, batch_size=8), iterations_per_epoch=5, **CONSTANT_LR)
    assert info["iterations_per_epoch"] == 5 and info["steps"] == 15
    assert len(enc.train_inputs) == 2 * 15
    assert all(c.shape[0] == 16 for c in enc.train_inputs[0::2]) and all(c.shape[0] == 8 for c in enc.train_inputs[1::2])


def test_optimizer_betas_and_lr_halving():
    _, info, _ = _run(train=_train(epochs=5, batch_size=8, lr=0.01), iterations_per_epoch=2, lr_halving_every=2)
    assert info["optimizer"] == {"name": "adam", "betas": [0.5, 0.99]}
    assert info["lr_per_epoch"] == pytest.approx([0.01, 0.005, 0.005, 0.0025, 0.0025])
    # restarting Adam at a halving (the released code builds a new one) changes the run from there on
    _, kept, _ = _run(train=_train(epochs=5, batch_size=8, lr=0.01), iterations_per_epoch=2, lr_halving_every=2,
                      restart_optimizer_at_halving=False)
    assert kept["lr_per_epoch"] == info["lr_per_epoch"]
    assert kept["loss_per_epoch"][0] == info["loss_per_epoch"][0]
    assert kept["loss_per_epoch"][1:] != info["loss_per_epoch"][1:]


def test_selects_the_epoch_with_the_lowest_validation_loss():
    # a large learning rate makes the validation loss move up and down
    _, info, _ = _run(train=_train(epochs=8, batch_size=16, lr=0.3), iterations_per_epoch=3, **CONSTANT_LR,
                      validation_fraction=0.2)
    val = info["val_loss_per_epoch"]
    assert len(val) == 8 and info["selected_epoch"] == min(range(8), key=val.__getitem__)
    assert info["selected_epoch"] < 7  # not the last epoch here (the rate is too large to settle)
    assert info["model_selection"] == "lowest validation variational loss"
    # the restored model is that epoch's: its validation loss, recomputed, is the minimum
    assert info["val_loss_selected"] == pytest.approx(min(val), abs=1e-6)
    assert info["n_val_positives"] >= 1 and info["n_val_data_sample"] >= 1
    _, last, _ = _run(train=_train(epochs=3, batch_size=16), iterations_per_epoch=3, model_selection="last_epoch",
                      validation_fraction=0.0)
    assert last["selected_epoch"] == 2 and last["val_loss_per_epoch"] is None and last["n_val_positives"] == 0
    assert "last epoch" in last["model_selection"]


def test_vpu_learns_and_is_deterministic():
    data = _data(n=600)
    train = _train(epochs=10, batch_size=32, lr=0.01)
    m, info, _ = _run(data=data, train=train, iterations_per_epoch=10)
    assert m["auc"] > 98 and m["acc"] > 85, m
    assert info["prior_used"] is None and "single training set" in info["data_sample"]
    again, _, _ = _run(data=data, train=train, iterations_per_epoch=10)
    assert again == m
    cc, info, _ = _run(data=_data(n=600, scheme="case_control"), train=train, iterations_per_epoch=10)
    assert cc["auc"] > 98 and "case-control" in info["data_sample"]


def test_config_checks():
    unit = PU_METHODS.get("vpu")
    with pytest.raises(ConfigError, match="missing"):
        build_config(unit.config_cls, {"name": "vpu", "mix_alpha": 0.3, "lam": 0.03})
    for bad, match in (({"mix_alpha": 0.0}, "mix_alpha"), ({"iterations_per_epoch": 0}, "iterations_per_epoch"),
                       ({"validation_fraction": 1.0}, "validation_fraction"),
                       ({"model_selection": "last_epoch"}, "validation_fraction"),
                       ({"model_selection": "best_test"}, "model_selection"),
                       ({"lr_halving_every": 0}, "restart_optimizer_at_halving")):
        with pytest.raises(ConfigError, match=match):
            unit.check(build_config(unit.config_cls, {"name": "vpu", **RELEASED, **bad}))
    cfg = build_config(unit.config_cls, {"name": "vpu", **RELEASED})
    cosine = build_config(TrainConfig, {"epochs": 1, "batch_size": 8, "optimizer": {"name": "adam", "lr": 1e-3},
                                        "schedule": {"name": "cosine"}})
    with pytest.raises(ConfigError, match="schedule"):
        unit.check_train(cfg, cosine)
    with pytest.raises(ConfigError, match="scheme"):
        d = _data()
        d.pu_scheme = None
        _run(data=d)
