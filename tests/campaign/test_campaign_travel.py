"""What a campaign carries to a machine without the data or git (``pubench campaign pack``):
a data set's files xz-compressed and unpacked there bit for bit (a file whose content is not
what was packed is refused), and the commit the records there name, marked dirty when the
code that travelled is not that commit's."""

from __future__ import annotations

import gzip
import json

import pytest

from pubench.campaign import travel

FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


@pytest.fixture
def tiny_mnist(tmp_path):
    """MNIST's four files, a few bytes each (gzip, as `pubench prepare` places them)."""
    root = tmp_path / "data"
    (root / "MNIST" / "raw").mkdir(parents=True)
    for k, name in enumerate(FILES):
        (root / "MNIST" / "raw" / f"{name}.gz").write_bytes(gzip.compress(bytes(range(k, k + 200)) * 50))
    return root


def test_pack_then_unpack_gives_the_files_bit_for_bit(tiny_mnist, tmp_path):
    folder = tmp_path / ".campaign"
    manifest = travel.pack(["mnist"], folder, tiny_mnist, say=lambda _: None)
    assert sorted(f["rel"] for f in manifest["files"]) == sorted(f"MNIST/raw/{n}" for n in FILES)
    there = tmp_path / "there"
    assert travel.unpack(folder, there, {"mnist"}, say=lambda _: None) == ["mnist"]
    for name in FILES:
        assert (there / "MNIST" / "raw" / name).read_bytes() == gzip.decompress(
            (tiny_mnist / "MNIST" / "raw" / f"{name}.gz").read_bytes())
    assert travel.unpack(folder, there, {"mnist"}, say=lambda _: None) == []  # already there: nothing written
    assert travel.pack(["mnist"], folder, tiny_mnist, say=lambda _: None) == manifest  # packed once


def test_a_packed_file_that_changed_is_refused(tiny_mnist, tmp_path):
    folder = tmp_path / ".campaign"
    manifest = travel.pack(["mnist"], folder, tiny_mnist, say=lambda _: None)
    entry = manifest["files"][0]
    import lzma

    (folder / entry["packed"]).write_bytes(lzma.compress(b"something else"))
    with pytest.raises(ValueError, match="SHA-256 differs"):
        travel.unpack(folder, tmp_path / "there", {"mnist"}, say=lambda _: None)


def test_what_does_not_fit_the_room_is_left_out(tiny_mnist, tmp_path):
    said = []
    manifest = travel.pack(["mnist"], tmp_path / ".campaign", tiny_mnist, room=1, say=said.append)
    assert manifest["files"] == [] and any("left out" in s for s in said)


def test_records_name_the_packed_commit_where_git_is_not(tmp_path, monkeypatch):
    import pubench.store.provenance as prov

    code = tmp_path / "copy"
    (code / "pubench").mkdir(parents=True)
    (code / "pubench" / "x.py").write_text("x = 1\n")
    (code / "pubench" / "__pycache__").mkdir()
    (code / "pubench" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    folder = code / ".campaign"
    folder.mkdir()
    stamp = {"git_sha": "a" * 40, "code_changes": [], "fingerprint": travel.code_fingerprint(code)}
    (folder / "source.json").write_text(json.dumps(stamp))
    monkeypatch.setattr(prov, "provenance", lambda: {"git_sha": None})  # no git there
    assert travel.source_env(folder, code) == {"PUBENCH_SOURCE_SHA": "a" * 40, "PUBENCH_SOURCE_DIRTY": "0"}
    (code / "pubench" / "__pycache__" / "y.pyc").write_bytes(b"\1")  # what does not travel does not count
    assert travel.source_env(folder, code)["PUBENCH_SOURCE_DIRTY"] == "0"
    (code / "pubench" / "x.py").write_text("x = 2\n")
    assert travel.source_env(folder, code)["PUBENCH_SOURCE_DIRTY"] == "1"
    monkeypatch.setattr(prov, "provenance", lambda: {"git_sha": "b" * 40})  # git answers: it decides
    assert travel.source_env(folder, code) == {}


def test_provenance_takes_the_packed_commit_without_git(monkeypatch):
    import pubench.store.provenance as prov

    monkeypatch.setattr(prov, "_git", lambda *args: None)
    monkeypatch.setenv("PUBENCH_SOURCE_SHA", "c" * 40)
    for dirty, want in (("0", False), ("1", True)):
        monkeypatch.setenv("PUBENCH_SOURCE_DIRTY", dirty)
        prov.provenance.cache_clear()
        p = prov.provenance()
        assert p["git_sha"] == "c" * 40 and p["git_dirty"] is want
    prov.provenance.cache_clear()
