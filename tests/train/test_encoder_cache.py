"""The pre-trained encoder cache: a hit gives exactly the numbers a miss gives."""

import functools

import pytest

from pubench.tasks import TASKS
from pubench.train import encoder_cache
from pubench.train.context import PLAIN

from tests.tasks.test_image_tasks import _params, fake_data  # noqa: F401 - a fixture


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "1")  # tests run with it off by default (conftest)
    return tmp_path / "cache" / "encoders"


def test_second_probe_reuses_the_encoder_and_matches_a_fresh_run(fake_data, cache_dir, monkeypatch):  # noqa: F811
    task = functools.partial(TASKS.get("contrastive_probe").run, ctx=PLAIN)
    seeds = {"data": 1, "init": 2}
    first = task(_params(), seeds)
    assert first.info["encoder_cache"]["hit"] is False and len(list(cache_dir.glob("*.pt"))) == 1
    again = task(_params(), seeds)
    assert again.info["encoder_cache"]["hit"] is True
    assert again.metrics == first.metrics
    other = task(_params(downstream={"name": "pupl", "orientation": "nearest_positive_mean", "normalize": True,
                                     "epochs": 3, "batch_size": 64,
                                     "optimizer": {"name": "adam", "lr": 0.01}}), seeds)  # same encoder
    assert other.info["encoder_cache"]["hit"] is True
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "0")
    fresh = task(_params(), seeds)
    assert fresh.metrics == first.metrics and fresh.info["encoder_cache"]["hit"] is False


def test_key_changes_with_params_seeds_and_code(monkeypatch):
    from pubench.numerics import resolve

    num = resolve()
    k = encoder_cache.encoder_key({"a": 1}, {"s": 1}, num)
    assert k == encoder_cache.encoder_key({"a": 1}, {"s": 1}, num)
    assert k != encoder_cache.encoder_key({"a": 2}, {"s": 1}, num) != encoder_cache.encoder_key({"a": 1}, {"s": 2}, num)
    monkeypatch.setattr(encoder_cache, "code_fingerprint", lambda: "other")
    assert k != encoder_cache.encoder_key({"a": 1}, {"s": 1}, num)


# ---- every spec that shares encoders or prefixes: a hit is a cache-off run, bit for bit ----
def _sharing(spec_id: str, tier: str = "smoke"):
    """Two jobs of ``spec_id`` whose second takes what the first leaves in a cache: the same
    pre-training (an encoder-cache hit), or an earlier epoch of the same run (a prefix)."""
    import collections

    from pubench.jobs import expand
    from pubench.registry import get_spec
    from pubench.utils.hashing import config_hash

    jobs = [j for j in expand(get_spec(spec_id), tier, 1).jobs if j.task == "contrastive_probe"]
    groups = collections.defaultdict(list)
    for j in jobs:
        pre = dict(j.params["pretrain"])
        eval_at = pre.pop("eval_at_epoch", None)
        groups[config_hash({"d": j.params["data"], "m": j.params["model"], "p": pre, "s": j.seeds})].append(
            (eval_at or 0, j))
    for members in groups.values():
        if len(members) > 1:
            members.sort(key=lambda m: m[0])
            return members[0][1], members[1][1]
    raise AssertionError(f"{spec_id}: no two jobs share a pre-training at tier {tier}")


SHARING_SPECS = ["fig4-punce", "table3-punce", "fig14-pupl", "table2-pupl", "fig5-pupl"]


def test_the_sharing_specs_are_all_listed():
    """Every spec whose jobs share an encoder or a prefix is tested below."""
    from pubench.registry import load_all

    found = []
    for sid in load_all():
        try:
            _sharing(sid)
        except AssertionError:
            continue
        found.append(sid)
    assert sorted(found) == sorted(SHARING_SPECS)


@pytest.mark.parametrize("spec_id", SHARING_SPECS)
def test_a_cache_hit_job_equals_the_same_job_with_the_cache_off(spec_id, shared_image_root, tmp_path, monkeypatch):
    import json

    from pubench.executors.worker import execute_job
    from pubench.store import ResultStore

    monkeypatch.setenv("PUBENCH_DATA", str(shared_image_root))
    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "cache"))
    first, second = _sharing(spec_id)
    on, off = tmp_path / "on", tmp_path / "off"
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "1")
    assert execute_job(first, on) == "ok" and execute_job(second, on) == "ok"
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "0")
    assert execute_job(second, off) == "ok"
    hit, fresh = (json.loads(ResultStore(r).path(second).read_text()) for r in (on, off))
    reused = hit["info"]["encoder_cache"]["hit"] or hit["info"]["pretrain"].get("prefix_cache", {}).get(
        "started_at_epoch")
    assert reused, hit["info"]["encoder_cache"]
    assert hit["metrics"] == fresh["metrics"]
    assert hit["info"]["pretrain"]["loss"] == fresh["info"]["pretrain"]["loss"]
