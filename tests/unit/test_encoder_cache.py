"""The pre-trained encoder cache: a hit gives exactly the numbers a miss gives."""

import pytest

from pubench.tasks import TASKS
from pubench.train import encoder_cache


from tests.unit.test_image_tasks import _params, fake_data  # noqa: F401 - a fixture


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "1")  # tests run with it off by default (conftest)
    return tmp_path / "cache" / "encoders"


def test_second_probe_reuses_the_encoder_and_matches_a_fresh_run(fake_data, cache_dir, monkeypatch):  # noqa: F811
    task = TASKS.get("contrastive_probe").run
    seeds = {"data": 1, "init": 2}
    first = task(_params(), seeds)
    assert first["info"]["encoder_cache"]["hit"] is False and len(list(cache_dir.glob("*.pt"))) == 1
    again = task(_params(), seeds)
    assert again["info"]["encoder_cache"]["hit"] is True
    assert again["metrics"] == first["metrics"]
    other = task(_params(downstream={"name": "pupl", "orientation": "nearest_positive_mean", "normalize": True,
                                     "epochs": 3, "batch_size": 64,
                                     "optimizer": {"name": "adam", "lr": 0.01}}), seeds)  # same encoder
    assert other["info"]["encoder_cache"]["hit"] is True
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "0")
    fresh = task(_params(), seeds)
    assert fresh["metrics"] == first["metrics"] and fresh["info"]["encoder_cache"]["hit"] is False


def test_key_changes_with_params_seeds_and_code(monkeypatch):
    k = encoder_cache.encoder_key({"a": 1}, {"s": 1})
    assert k == encoder_cache.encoder_key({"a": 1}, {"s": 1})
    assert k != encoder_cache.encoder_key({"a": 2}, {"s": 1}) != encoder_cache.encoder_key({"a": 1}, {"s": 2})
    monkeypatch.setattr(encoder_cache, "code_fingerprint", lambda: "other")
    assert k != encoder_cache.encoder_key({"a": 1}, {"s": 1})
