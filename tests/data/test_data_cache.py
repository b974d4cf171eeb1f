"""Decoded data go to the cache folder, never into the data root (issue 61): a data root that
several users or nodes share read-only works, and nothing is written into it; a raw folder
that is not the prepared copy is read as the prepared copy or refused with the command that
prepares it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pubench.cli import main
from pubench.paths import data_cache
from tests.data.test_data_images import fake_mnist
from tests.data.test_graphs_data import write_gin, write_tu

REPO = Path(__file__).resolve().parents[2]

LOAD = """
import json, sys
from pubench.data.graphs import load_graphs
from pubench.data.images import load_images
root = sys.argv[1]
out = {"mnist": len(load_images("mnist", "train", root)), "mnist_again": len(load_images("mnist", "train", root)),
       "ptc_mr": len(load_graphs("ptc_mr", root)), "ptc_mr_again": len(load_graphs("ptc_mr", root))}
print(json.dumps(out))
"""


def _read_only_run(root: Path, env: dict) -> subprocess.CompletedProcess:
    """:data:`LOAD` in a process that cannot write ``root``: a read-only bind mount of it in
    a mount namespace of its own when this is root (file modes do not stop root), else the
    folder's write bits cleared."""
    cmd = [sys.executable, "-c", LOAD, str(root)]
    if os.geteuid() == 0:
        if shutil.which("unshare") is None:
            pytest.skip("running as root without unshare: no way to make a folder read-only for this process")
        script = f'mount --bind "{root}" "{root}" && mount -o remount,ro,bind "{root}" "{root}" && exec "$@"'
        probe = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", "true"], capture_output=True)
        if probe.returncode != 0:
            pytest.skip(f"no read-only bind mount here: {probe.stderr.decode().strip()}")
        return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *cmd], env=env, capture_output=True,
                              text=True, timeout=300)
    modes = {p: p.stat().st_mode for p in [root, *root.rglob("*")]}
    try:
        for p in modes:
            p.chmod(modes[p] & ~0o222)
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_a_read_only_data_root_works_and_its_decoded_copies_go_to_the_cache_folder(tmp_path):
    root = tmp_path / "shared"
    fake_mnist(root)
    write_tu(root / "tu" / "PTC_MR", prefix="PTC_MR")
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PUBENCH_DATA_CACHE": str(cache)}
    before = sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*"))
    out = _read_only_run(root, env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"mnist": 20, "mnist_again": 20, "ptc_mr": 3,
                                                                "ptc_mr_again": 3}
    assert sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*")) == before
    written = sorted(str(p.relative_to(cache)) for p in cache.rglob("*.pt"))
    folder = data_cache(root).name
    assert len(written) == 2 and all(w.startswith(folder + "/") for w in written), written
    assert any("/graphs/tu/PTC_MR/" in w for w in written) and any("/mnist-train-" in w for w in written)


def test_the_cache_folder_is_per_data_root_and_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("PUBENCH_DATA_CACHE")
    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "c"))
    a, b = data_cache(tmp_path / "a"), data_cache(tmp_path / "b")
    assert a.parent == b.parent == tmp_path / "c" / "data" and a != b and a.name.startswith("a-")
    assert data_cache(tmp_path / "a" / ".." / "a") == a  # the resolved path names the folder
    monkeypatch.setenv("PUBENCH_DATA_CACHE", str(tmp_path / "d"))
    assert data_cache(tmp_path / "a").parent == tmp_path / "d"


def _table2_pucl_dd_run(root: Path, monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.setenv("PUBENCH_DATA", str(root))
    monkeypatch.setenv("PUBENCH_RESULTS", str(root.parent / "results"))
    code = main(["run", "table2-pucl", "--tier", "reduced", "--only", "InfoGraph|DD", "--seeds", "1",
                 "--no-progress"])
    return code, capsys.readouterr().err


def test_a_dd_folder_with_only_the_gin_copy_is_refused_with_the_prepare_command(tmp_path, monkeypatch, capsys):
    """The GIN copy of DD read otherwise than the TU files (77.76 for the record's 75.47):
    ``pubench run`` stops before any job, one line, exit status 2, naming the command."""
    root = tmp_path / "data"
    write_gin(root / "gin" / "DD" / "DD.txt")
    code, err = _table2_pucl_dd_run(root, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, err
    assert "nothing was run" in lines[0] and "pubench prepare dd --from ../shared/data" in lines[0]
    assert "DD_A.txt" in lines[0]
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*.json"))
