"""Result store: atomic records, failure records, done-ness."""

import json
import os
import time

import pytest
import yaml

from pubench.jobs import expand
from pubench.registry import parse_spec
from pubench.store import ResultStore
from pubench.utils.io import atomic_write_json
from tests.conftest import selftest_spec


@pytest.fixture
def jobs():
    return expand(parse_spec(yaml.safe_load(selftest_spec()), "<t>"), "paper", 2).jobs


def test_ok_record_holds_everything(tmp_path, jobs):
    store = ResultStore(tmp_path)
    path = store.write_ok(jobs[0], {"score": 1.5}, {"n": 3}, {"wall_s": 0.1})
    rec = json.loads(path.read_text())
    assert rec["status"] == "ok" and rec["metrics"] == {"score": 1.5} and rec["info"] == {"n": 3}
    assert rec["job"]["id"] == jobs[0].id and rec["job"]["params"] == jobs[0].params
    assert rec["job"]["seeds"] == jobs[0].seeds
    for key in ("git_sha", "git_dirty", "python", "torch", "numpy", "host"):
        assert key in rec["provenance"]
    assert store.done_ids("paper", "table1-bcl") == {jobs[0].id}
    assert path.parent == tmp_path / "paper" / "table1-bcl"


def test_failure_record_is_not_done_and_is_replaced_by_success(tmp_path, jobs):
    store = ResultStore(tmp_path)
    try:
        raise RuntimeError("boom")
    except RuntimeError as e:
        fpath = store.write_failure(jobs[1], e, {"wall_s": 0.0})
    rec = json.loads(fpath.read_text())
    assert rec["status"] == "failed" and rec["error"]["type"] == "RuntimeError"
    assert "boom" in rec["error"]["traceback_tail"]
    assert store.done_ids("paper", "table1-bcl") == set()
    assert store.failed_ids("paper", "table1-bcl") == {jobs[1].id}
    assert store.records("paper", "table1-bcl") == []
    store.write_ok(jobs[1], {"score": 2.0}, {}, {})
    assert not fpath.exists()
    assert store.done_ids("paper", "table1-bcl") == {jobs[1].id}


def test_atomic_write_leaves_old_file_or_nothing(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    atomic_write_json(target, {"v": 1})

    def crash(src, dst):
        raise OSError("killed during rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        atomic_write_json(target, {"v": 2})
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temp file left behind


def test_stale_temp_files_are_ignored_and_cleaned(tmp_path, jobs):
    store = ResultStore(tmp_path)
    folder = store.folder("paper", "table1-bcl")
    folder.mkdir(parents=True)
    stale = folder / ".tmp-abc123"
    stale.write_text('{"half": ')  # what a SIGKILL mid-write leaves
    live = folder / ".tmp-def456"
    live.write_text('{"being": ')  # another writer, right now
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert store.done_ids("paper", "table1-bcl") == set()
    assert store.records("paper", "table1-bcl") == []
    assert store.clean_temps("paper", "table1-bcl") == 1
    assert list(folder.iterdir()) == [live]  # a live writer's temp is left alone
