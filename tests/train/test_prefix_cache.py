"""Shared training prefixes (pubench.train.prefix_cache): a run that continues the state an
earlier, shorter run of the same key stored gives the numbers of a run from epoch 0, bit for
bit; a stored later epoch is never used nor overwritten by a shorter run."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
import torch
from torch import nn

from pubench.tasks import TASKS
from pubench.train import prefix_cache
from pubench.train.context import PLAIN
from pubench.train.loop import Step, Trainer, batches
from pubench.train.optim import build_scheduler, schedule_config
from tests.tasks.test_image_tasks import _params, fake_data  # noqa: F401 - a fixture

X = torch.randn(40, 4, generator=torch.Generator().manual_seed(1))
Y = (X[:, 0] > 0).float()
FULL = 6  # the run's length: the schedule spans it whatever epoch a run stops at


@pytest.fixture
def cache_on(tmp_path, monkeypatch):
    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "1")  # tests run with the caches off by default (conftest)
    return tmp_path / "cache" / "prefixes"


def toy_run(stop_at: int, key: str | None) -> dict:
    """Epochs 1..stop_at of a FULL-epoch run: dropout (the global RNG), momentum, a cosine
    schedule over FULL epochs, a shuffling generator; then draws from the global RNGs."""
    torch.manual_seed(0), np.random.seed(0), random.seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    sched = build_scheduler(schedule_config({"name": "cosine"}), opt, 5, FULL)
    gen = torch.Generator().manual_seed(2)
    trainer = Trainer([net], opt, sched, "toy", state={"order": gen}, prefix_key=key, ctx=PLAIN)

    def step(idx, epoch):
        return Step(nn.functional.binary_cross_entropy_with_logits(net(X[idx])[:, 0], Y[idx]), weight=len(idx))

    history = trainer.run(stop_at, lambda e: batches(40, 8, gen), step)
    return {"params": [p.detach().clone() for p in net.parameters()], "loss": [h.mean for h in history],
            "start": trainer.prefix_start, "after": (torch.rand(2), np.random.rand(), random.random())}


def same(a: dict, b: dict) -> bool:
    return (all(torch.equal(x, y) for x, y in zip(a["params"], b["params"])) and a["loss"] == b["loss"]
            and torch.equal(a["after"][0], b["after"][0]) and a["after"][1:] == b["after"][1:])


def test_a_run_continues_a_shorter_one_with_the_numbers_of_a_run_from_epoch_0(cache_on):
    fresh = {e: toy_run(e, None) for e in (2, 4, FULL)}
    assert not cache_on.exists()  # no key, nothing stored
    for e, start in ((2, 0), (4, 2), (FULL, 4)):   # columns in order: each continues the previous
        run = toy_run(e, "k")
        assert run["start"] == start and same(run, fresh[e]), e
    assert len(list(cache_on.glob("*.pt"))) == 1  # one file per key
    again = toy_run(FULL, "k")                     # the stored epoch is the run's own last one
    assert again["start"] == FULL and same(again, fresh[FULL])


def test_a_shorter_run_trains_from_epoch_0_and_keeps_the_later_epoch(cache_on):
    toy_run(4, "k")
    short = toy_run(3, "k")
    assert short["start"] == 0 and same(short, toy_run(3, None))
    assert prefix_cache.load("k", FULL)["epoch"] == 4 and prefix_cache.load("k", 3) is None
    assert toy_run(FULL, "other")["start"] == 0    # another key shares nothing


def test_a_corrupt_entry_is_a_miss_and_is_replaced(cache_on):
    cache_on.mkdir(parents=True)
    (cache_on / "k.pt").write_bytes(b"not a checkpoint")
    run = toy_run(2, "k")
    assert run["start"] == 0 and same(run, toy_run(2, None))
    assert prefix_cache.load("k", FULL)["epoch"] == 2


def test_off_with_the_encoder_cache(cache_on, monkeypatch):
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "0")
    toy_run(2, "k")
    assert not cache_on.exists() and toy_run(4, "k")["start"] == 0


def test_eval_at_epoch_jobs_continue_each_other_with_unchanged_metrics(fake_data, cache_on, monkeypatch):  # noqa: F811
    task = functools.partial(TASKS.get("contrastive_probe").run, ctx=PLAIN)
    seeds = {"data": 1, "init": 2}

    def params(stop_at: int) -> dict:
        p = _params()
        p["pretrain"].update(epochs=3, eval_at_epoch=stop_at)
        return p

    first = task(params(1), seeds)
    assert first.info["pretrain"]["prefix_cache"]["started_at_epoch"] == 0
    third = task(params(3), seeds)
    assert third.info["pretrain"]["prefix_cache"]["started_at_epoch"] == 1
    assert third.info["epochs_run"] == 3 and len(third.info["pretrain"]["loss"]) == 3
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "0")
    fresh = task(params(3), seeds)
    assert fresh.info["pretrain"]["prefix_cache"]["started_at_epoch"] == 0
    assert fresh.metrics == third.metrics and fresh.info["pretrain"]["loss"] == third.info["pretrain"]["loss"]
    # a run without eval_at_epoch declares no prefix
    assert "prefix_cache" not in task(_params(), seeds).info["pretrain"]
