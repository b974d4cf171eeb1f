"""No file pubench reads from a store, a cache or the data root runs code (issue 55).

The metadata cache is JSON, tensors load with ``weights_only=True``, records and claims are
JSON, CIFAR's pickled batches go through an unpickler that admits only what they hold, and TU
graph sets are cached by pubench (torch-geometric's own processed folder unpickles). A planted
pickle whose loading would create a file is a miss or a one-line error, never run."""

from __future__ import annotations

import ast
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import record_reliability
from tests.executors.test_faults import _Payload, _one_clear_line
from tests.data.test_graphs_data import tiny  # noqa: F401 - a fixture

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "experiments" / "bcl" / "fig4-bcl.yaml"  # 8 smoke jobs of a second or two each


def _plant(path: Path, marker: Path) -> None:
    """A pickle whose loading creates ``marker``: in torch's format where pubench expects a
    ``.pt`` file, a bare pickle elsewhere."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".pt":
        torch.save({"format": 2, "key": path.stem, "x": _Payload(marker)}, path)
    else:
        path.write_bytes(pickle.dumps({"x": _Payload(marker)}))


def _pubench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pubench", *args], env=os.environ, capture_output=True, text=True,
                          timeout=600)


def test_planted_pickles_in_every_cache_and_store_folder_never_run(tmp_registry, tmp_path, monkeypatch):
    """fig4-bcl run once, its caches filled by list, status and report; then every metadata
    cache entry (and the same name as the old ``.pickle``), an encoder- and a prefix-cache
    entry, a preflight figure, an ok record, a claim and the checkpoint folders of the jobs
    left to run are replaced by pickles that would create a file. list, status, report and the
    resumed run each succeed or stop with one line; the file is never created, every job ends
    with one ok record."""
    tmp_registry(SPEC.read_text())
    cache = tmp_path / "cache"
    monkeypatch.setenv("PUBENCH_CACHE", str(cache))
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "1")
    monkeypatch.delenv("PUBENCH_META_CACHE", raising=False)
    run = ("run", "fig4-bcl", "--tier", "smoke", "--no-progress")
    commands = [("list",), ("status",), ("report", "fig4-bcl", "--tier", "smoke", "--quiet"), run]
    folder = tmp_registry.root / "results" / "smoke" / "fig4-bcl"
    for args in [run, *commands[:-1]]:
        done = _pubench(*args)
        assert done.returncode == 0, (args, done.stderr)
        for rec in folder.glob("*.json"):  # older than a scan's racy window: the scan cache remembers them
            os.utime(rec, (time.time() - 60, time.time() - 60))
    records = sorted(folder.glob("*.json"))
    assert len(records) == 8

    marker = tmp_path / "pwned"
    meta = sorted((cache / "meta").rglob("*.json"))
    assert {p.parent.name for p in meta} >= {"specs", "resolved", "units", "scans", "plots"}
    for p in meta:
        _plant(p, marker)
        _plant(p.with_suffix(".pickle"), marker)  # what a cache of pubench before issue 55 holds
    _plant(cache / "encoders" / f"{'0' * 24}.pt", marker)
    _plant(cache / "prefixes" / f"{'0' * 24}.pt", marker)
    _plant(cache / "preflight" / "cpu" / f"{'0' * 16}.json", marker)
    _plant(records[0], marker)  # a record: counted as corrupt, quarantined and rerun
    for rec in records[4:]:  # jobs to run again, each with a checkpoint folder and the last with a claim
        rec.unlink()
        job_id = rec.stem.rsplit("--", 1)[1]
        _plant(tmp_registry.root / "results" / ".checkpoints" / job_id / "bcl_score_density.0.pt", marker)
    claim = folder / ".claims" / f"{job_id}.claim"
    _plant(claim, marker)
    os.utime(claim, (time.time() - 600, time.time() - 600))  # unreadable and old: stale, taken over

    for args in commands:
        out = _pubench(*args)
        assert out.returncode == 0 or (out.returncode == 2 and _one_clear_line(out.stderr)), (args, out.stderr)
        assert "Traceback" not in out.stderr, (args, out.stderr)
        assert not marker.exists(), args
    recs = [json.loads(p.read_text()) for p in folder.glob("*.json")]
    assert len(recs) == 8 and all(r["status"] == "ok" for r in recs)
    assert not (tmp_registry.root / "results" / ".checkpoints").exists() or \
        not list((tmp_registry.root / "results" / ".checkpoints").rglob("*.pt"))
    specs = list((cache / "meta" / "specs").glob("*.json"))
    assert specs and all(json.loads(p.read_bytes()) for p in specs)  # each planted entry missed and was rewritten
    record_reliability("security", "pickles planted in every cache and store folder, then list, status, report "
                                   "and a resumed run", {"files": len(meta) * 2 + 5 + 4, "payload_ran": False,
                                                         "records_ok": len(recs)})


def test_the_meta_cache_round_trips_specs_and_refuses_foreign_entries(tmp_path, monkeypatch):
    """Every committed spec comes back from the cache equal to a fresh parse, with the same
    resolved configs in the same key order; a pickle, an unknown tag or a value of the wrong
    type under an entry's name is a miss."""
    from pubench.registry import cache, loader

    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path))
    monkeypatch.delenv("PUBENCH_META_CACHE", raising=False)
    cache._memo.clear()
    fresh = {p.stem: loader.load_spec(p) for p in loader.spec_paths()}
    cache._memo.clear()
    cached = {p.stem: loader.load_spec(p) for p in loader.spec_paths()}
    assert len(fresh) > 30
    for spec_id, spec in fresh.items():
        hit = cached[spec_id]
        assert hit == spec and hit.precomputed is not None, spec_id
        for tier in ("smoke", "paper"):
            for row, col in spec.cells():
                want, got = spec.resolve_with_json(tier, row, col), hit.resolve_with_json(tier, row, col)
                assert got == want and json.dumps(got[0]) == json.dumps(want[0]), (spec_id, tier, row, col)

    marker = tmp_path / "pwned"
    entry = next((tmp_path / "meta" / "specs").glob("*.json"))
    key = entry.stem
    for blob in (pickle.dumps(_Payload(marker)), b'{"!": "Popen", "fields": {"args": ["touch", "x"]}}',
                 b'["a list, not a spec"]', b'{"!": "tuple", "items": ' + b"[" * 100_000):
        entry.write_bytes(blob)
        cache._memo.clear()
        assert cache.get("specs", key, loader.Spec) is None
    assert not marker.exists()


def test_cache_values_keep_their_types():
    from pubench.registry import cache

    value = {"a": (1, [2.5, None]), 3: {"!": True}, (4, "x"): b"\x00\xff", "s": {1, 2}, "f": frozenset({"q"}),
             "nan": float("inf"), "date": __import__("datetime").date(2026, 11, 29)}
    back = cache.loads(cache.dumps(value))
    assert back == value and type(back["a"]) is tuple and type(back["f"]) is frozenset
    with pytest.raises(TypeError, match="cannot hold a _Payload"):
        cache.dumps(_Payload(Path("x")))


def _cifar_batch(n: int = 3) -> dict:
    """A batch as the canonical files hold one (a Python 2 pickle: its keys read as bytes)."""
    g = np.random.default_rng(0)
    return {b"batch_label": b"training batch 1 of 5", b"labels": [int(v) for v in g.integers(0, 10, n)],
            b"data": g.integers(0, 256, (n, 3072), dtype=np.uint8), b"filenames": [b"x_%d.png" % i for i in range(n)]}


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_the_cifar_unpickler_reads_a_genuine_batch(tmp_path, protocol):
    from pubench.data.images import _unpickle

    batch = _cifar_batch()
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps(batch, protocol=protocol))
    got = _unpickle(path)
    assert sorted(got) == ["batch_label", "data", "filenames", "labels"]
    assert np.array_equal(got["data"], batch[b"data"]) and got["data"].dtype == np.uint8
    assert got["labels"] == batch[b"labels"] and got["filenames"] == batch[b"filenames"]
    # NumPy 1 wrote numpy.core where NumPy 2 writes numpy._core: the canonical files name the former
    path.write_bytes(pickle.dumps(batch, protocol=2).replace(b"numpy._core.", b"numpy.core."))
    assert np.array_equal(_unpickle(path)["data"], batch[b"data"])


def test_the_cifar_unpickler_refuses_anything_else(tmp_path):
    from pubench.data.images import _unpickle, load_images

    marker = tmp_path / "pwned"
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in [f"data_batch_{k}" for k in range(1, 6)] + ["test_batch", "batches.meta"]:
        (folder / name).write_bytes(pickle.dumps({**_cifar_batch(), b"label_names": [b"c"] * 10}))
    (folder / "data_batch_3").write_bytes(pickle.dumps({b"data": _Payload(marker), b"labels": []}))
    with pytest.raises(ValueError) as err:
        _unpickle(folder / "data_batch_3")
    message = str(err.value)
    assert "\n" not in message and "data_batch_3: not a CIFAR batch" in message and "refused pathlib.Path.touch" in \
        message.replace("pathlib._local", "pathlib"), message
    with pytest.raises(ValueError, match="data_batch_3: not a CIFAR batch"):
        load_images("cifar10", "train", tmp_path)
    for blob in (b"", b"not a pickle", pickle.dumps([1, 2, 3]), pickle.dumps(np.array([object()], dtype=object))):
        (folder / "data_batch_3").write_bytes(blob)
        with pytest.raises(ValueError, match="not a CIFAR batch"):
            _unpickle(folder / "data_batch_3")
    assert not marker.exists()


def test_planted_files_in_the_data_roots_caches_never_run(tmp_path, tiny):  # noqa: F811
    """The processed caches of the data root: an image set's tensors and a TU graph set's
    folder (``data.pt``, and the ``pre_transform.pt`` torch-geometric's own cache unpickled)."""
    from pubench.data.graphs import SPECS, load_graphs, processed_caches
    from pubench.data.images import cache_path, load_images, root_cache_path
    from tests.data.test_data_images import fake_mnist
    from tests.data.test_graphs_data import check_tiny, write_tu

    marker = tmp_path / "pwned"
    tiny()
    write_tu(tmp_path / "tu" / "TINY")
    load_graphs("tiny", tmp_path)
    for cache in processed_caches(SPECS["tiny"], tmp_path, "tu"):  # the cache folder's, an older version's
        for name in ("data.pt", "pre_transform.pt", "pre_filter.pt"):
            _plant(cache / name, marker)
    check_tiny(load_graphs("tiny", tmp_path))
    assert not marker.exists()

    fake_mnist(tmp_path)
    _plant(cache_path("mnist", "train", tmp_path), marker)
    _plant(root_cache_path("mnist", "train", tmp_path), marker)
    assert len(load_images("mnist", "train", tmp_path)) == 20 and not marker.exists()


def test_an_encoder_cache_entry_that_is_a_pickle_is_a_miss(tmp_path, monkeypatch):
    from pubench.train import encoder_cache

    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path))
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "1")
    marker = tmp_path / "pwned"
    _plant(encoder_cache.cache_root() / "k.pt", marker)
    assert encoder_cache.load("k") is None and not marker.exists()


#: Calls that unpickle whatever they are given (``torch.load`` unless ``weights_only=True``,
#: ``numpy.load`` with ``allow_pickle=True``); the one unpickler allowed is the CIFAR reader's.
UNPICKLERS = {"pickle.load", "pickle.loads", "pickle.Unpickler", "pickle._Unpickler", "dill.load", "dill.loads",
              "joblib.load", "shelve.open", "marshal.load", "marshal.loads", "cloudpickle.load", "cloudpickle.loads"}


def _unpickling(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("pickle", "dill", "marshal", "shelve", "cloudpickle"):
            found += [(node.lineno, f"from {node.module} import {a.name}") for a in node.names
                      if f"{node.module}.{a.name}" in UNPICKLERS]
        elif isinstance(node, ast.ClassDef):
            bases = {ast.unparse(b) for b in node.bases}
            if bases & UNPICKLERS and node.name != "CifarUnpickler":
                found.append((node.lineno, f"class {node.name}({', '.join(sorted(bases))})"))
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            kw = {k.arg: k.value for k in node.keywords}
            safe = isinstance(kw.get("weights_only"), ast.Constant) and kw["weights_only"].value is True
            pickles = isinstance(kw.get("allow_pickle"), ast.Constant) and kw["allow_pickle"].value is True
            if name in UNPICKLERS or (name.endswith("torch.load") and not safe) or (name.endswith(".load") and pickles):
                found.append((node.lineno, ast.unparse(node)[:120]))
    return found


def test_no_unrestricted_unpickling_in_the_package():
    """Every place the package reads a file it did not just write runs no code from it: no
    ``pickle.load``/``loads`` or unpickler outside the CIFAR reader, ``torch.load`` only with
    ``weights_only=True``, ``numpy.load`` never with ``allow_pickle=True``."""
    found = [f"{path.relative_to(REPO)}:{line}: {what}" for path in sorted((REPO / "pubench").rglob("*.py"))
             for line, what in _unpickling(ast.parse(path.read_text()))]
    assert not found, "\n".join(found)
    planted = "import pickle\nfrom pickle import loads\nx = pickle.loads(b)\ny = torch.load(p)\n" \
              "z = np.load(p, allow_pickle=True)\nclass U(pickle.Unpickler): pass\nw = torch.load(p, weights_only=True)\n"
    assert sorted(line for line, _ in _unpickling(ast.parse(planted))) == [2, 3, 4, 5, 6]
