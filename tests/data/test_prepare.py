"""``pubench prepare``: check-only, copying from a --from folder, checksums, idempotence,
graph data sets (lazy), the offline rule (never touches the network in tests)."""

import dataclasses
import hashlib
import socket

import pytest

from pubench.data import prepare as prep
from pubench.data.images import DATASETS_BY_NAME, cache_path
from tests.data.test_data_images import fake_cifar10_jpeg, fake_mnist


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("PUBENCH_OFFLINE", "1")

    def no_network(*a, **k):
        raise AssertionError("prepare tried the network in a test")

    monkeypatch.setattr(socket, "create_connection", no_network)


def rows_of(*args, **kw) -> dict[str, tuple[str, str]]:
    return {name: (status, detail) for name, status, detail in prep.prepare_rows(*args, **kw)}


def md5(p):
    return hashlib.md5(p.read_bytes()).hexdigest()


def with_checksums_of(monkeypatch, name, folder, **changes):
    """Swap a data set's known checksums for those of the fake files in ``folder`` (and set
    the other ``changes`` of its entry, e.g. the split sizes of the fake files)."""
    ds = DATASETS_BY_NAME[name]
    files = {}
    for split, specs in ds.files.items():
        new = []
        for f in specs:
            src = next((folder / s for s in (f.path, *f.sources) if (folder / s).is_file()), None)
            h = {} if src is None else (
                {"md5": md5(src)} if f.md5 else {"sha256": hashlib.sha256(src.read_bytes()).hexdigest()})
            new.append(dataclasses.replace(f, **h))
        files[split] = tuple(new)
    monkeypatch.setitem(prep.DATASETS_BY_NAME, name, dataclasses.replace(ds, files=files, **changes))


# ---------------------------------------------------------------------------- tiny generated source folder
@pytest.fixture
def fake_source(tmp_path):
    src = tmp_path / "shared"
    fake_mnist(src / "tmp")  # written as MNIST/raw/*.gz; move them to the shared layout mnist/*.gz
    (src / "mnist").mkdir(parents=True)
    for f in (src / "tmp" / "MNIST" / "raw").iterdir():
        f.rename(src / "mnist" / f.name)
    fake_cifar10_jpeg(src / "cifar10-jpeg")
    return src


def test_copy_from_folder_then_idempotent(tmp_path, fake_source, monkeypatch, capsys):
    with_checksums_of(monkeypatch, "mnist", fake_source, sizes={"train": 20, "test": 10})
    with_checksums_of(monkeypatch, "cifar10_jpeg", fake_source, sizes={"train": 12, "test": 12})
    root = tmp_path / "data"
    rows = rows_of(["mnist", "cifar10_jpeg"], source=fake_source, root=root)
    assert rows["mnist"][0] == "copied" and rows["cifar10_jpeg"][0] == "copied"
    assert "train 20, test 10" in rows["mnist"][1] and "reduced tier only" in rows["cifar10_jpeg"][1]
    raw = root / "MNIST" / "raw"
    assert (raw / "train-images-idx3-ubyte.gz").is_file() and (raw / "train-images-idx3-ubyte").is_file()
    assert cache_path("mnist", "train", root).is_file() and cache_path("cifar10_jpeg", "test", root).is_file()

    assert prep.prepare(["mnist", "cifar10_jpeg"], source=fake_source, root=root) == 0
    assert "present" in capsys.readouterr().out
    rows = rows_of(["mnist", "cifar10_jpeg"], source=fake_source, root=root)
    assert rows["mnist"][0] == "present" and rows["cifar10_jpeg"][0] == "present"

    # a damaged file: --check reports it, a run with --from repairs it
    (raw / "train-labels-idx1-ubyte.gz").write_bytes(b"broken")
    assert prep.prepare(["mnist"], root=root, check_only=True) == 1
    rows = rows_of(["mnist"], root=root, check_only=True)
    assert rows["mnist"][0] == "error" and "md5" in rows["mnist"][1]
    assert rows_of(["mnist"], source=fake_source, root=root)["mnist"][0] == "copied"


def test_wrong_checksum_in_source_is_not_copied(tmp_path, fake_source, capsys):
    """The fake MNIST files do not have the canonical md5s: refused, a real failure (exit 1)
    even when no data set was named."""
    root = tmp_path / "data"
    assert prep.prepare(["mnist"], source=fake_source, root=root) == 1
    status, detail = rows_of(["mnist"], source=fake_source, root=root)["mnist"]
    assert status == "error" and "md5" in detail and "train-images-idx3-ubyte.gz" in detail
    assert not (root / "MNIST" / "raw" / "train-images-idx3-ubyte.gz").exists()


def test_from_a_folder_that_lacks_some_data_sets_succeeds(tmp_path, fake_source, monkeypatch, capsys):
    """`prepare --from` places everything the folder holds and exits 0; the data sets it
    lacks are listed (not an error), with a progress line per data set."""
    with_checksums_of(monkeypatch, "mnist", fake_source, sizes={"train": 20, "test": 10})
    with_checksums_of(monkeypatch, "cifar10_jpeg", fake_source, sizes={"train": 12, "test": 12})
    monkeypatch.setattr(prep, "_graph_module", lambda: None)
    assert prep.prepare(None, source=fake_source, root=tmp_path / "data") == 0
    out, err = capsys.readouterr()
    assert "not available" in out and "stl10" in out and "fashion_mnist" in out
    progress = [line for line in err.splitlines() if line.startswith("pubench prepare: [")]
    assert progress[0].startswith("pubench prepare: [1/") and len(progress) == int(progress[0].split("/")[1].split("]")[0])


def test_check_only_writes_nothing(tmp_path, capsys):
    root = tmp_path / "data"
    assert prep.prepare(["mnist", "stl10", "svhn", "sst2"], root=root, check_only=True) == 1
    rows = rows_of(["mnist", "stl10", "svhn", "sst2"], root=root, check_only=True)
    assert {k: v[0] for k, v in rows.items()} == {"mnist": "missing", "stl10": "missing", "svhn": "missing",
                                                    "sst2": "missing"}
    assert "STL-10: not available offline" in rows["stl10"][1]
    assert not root.exists()


def test_unknown_name_and_bad_source(tmp_path):
    with pytest.raises(ValueError, match="did you mean 'mnist'"):
        prep.prepare(["mnsit"], root=tmp_path)
    with pytest.raises(ValueError, match="no such folder"):
        prep.prepare(["mnist"], source=tmp_path / "nope", root=tmp_path)


def test_graphs_skipped_when_module_absent(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(prep, "_graph_module", lambda: None)
    assert prep.prepare(None, root=tmp_path / "data", check_only=True) == 1
    rows = rows_of(None, root=tmp_path / "data", check_only=True)
    assert rows["graphs"][0] == "skipped" and "mnist" in rows and "sst2" in rows
    with pytest.raises(ValueError, match="graphs is not available"):
        prep.prepare(["graphs"], root=tmp_path, check_only=True)


def test_online_respects_offline_flag():
    assert prep.online("https://www.cs.toronto.edu/x") is False
    assert prep.online(None) is False


# ---------------------------------------------------------------------------- the real shared folder
@pytest.fixture
def shared(data_root):
    if data_root is None:
        pytest.skip("../shared/data not present")
    return data_root


def test_real_prepare_mnist_sst2_and_a_graph(shared, tmp_path, capsys):
    root = tmp_path / "data"
    assert prep.prepare(["mnist", "fashion_mnist", "sst2"], root=root, check_only=True) == 1
    capsys.readouterr()
    rows = rows_of(["mnist", "fashion_mnist", "sst2", "mutag"], source=shared, root=root)
    assert [rows[n][0] for n in ("mnist", "fashion_mnist", "sst2", "mutag")] == ["copied"] * 4
    assert "train 60,000, test 10,000 (checksums ok)" in rows["mnist"][1]
    for specs in prep.DATASETS_BY_NAME["mnist"].files.values():
        for f in specs:
            assert md5(root / f.path) == f.md5  # canonical md5s (MANIFEST / torchvision)
    assert prep.prepare(["mnist", "fashion_mnist", "sst2", "mutag"], root=root, check_only=True) == 0
    rows = rows_of(["mnist", "fashion_mnist", "sst2", "mutag"], root=root, check_only=True)
    assert [rows[n][0] for n in ("mnist", "fashion_mnist", "sst2", "mutag")] == ["present"] * 4
    assert "train cached" in rows["mnist"][1]
    # torchvision's own class reads the same layout
    import torchvision

    tv = torchvision.datasets.MNIST(str(root), train=False, download=False)
    assert len(tv) == 10000


def test_real_prepare_reports_the_unavailable(shared, tmp_path, capsys):
    assert prep.prepare(["cifar10", "cifar100", "stl10", "svhn"], source=shared, root=tmp_path / "d") == 1
    assert "4 of 4 not available" in capsys.readouterr().out
    rows = rows_of(["cifar10", "cifar100", "stl10", "svhn"], source=shared, root=tmp_path / "d")
    assert all(rows[n][0] == "missing" for n in ("cifar10", "cifar100", "stl10", "svhn"))
    assert "cifar10_jpeg" in rows["cifar10"][1] and "place" in rows["svhn"][1].lower()


def test_cli_prepare_check(shared, tmp_path, monkeypatch, capsys):
    from pubench.cli import main

    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path / "data"))
    assert main(["prepare", "--check", "mnist"]) == 1
    assert "missing" in capsys.readouterr().out
    assert main(["prepare", "mnist", "--from", str(shared)]) == 0
    assert main(["prepare", "nosuchset"]) == 2


def test_prepare_of_a_graph_set_prints_no_library_noise(data_root, tmp_path):
    """Issue 54: torch_geometric's import printed torch's FutureWarning about torch.jit.script."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if data_root is None:
        pytest.skip("../shared/data not present")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "PUBENCH_DATA": str(tmp_path / "data"),
           "PUBENCH_CACHE": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-m", "pubench", "prepare", "mutag", "--from", str(data_root)], cwd=root,
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "mutag      copied" in out.stdout
    assert "Warning" not in out.stderr and "warnings.warn" not in out.stderr, out.stderr


def test_real_shared_folder_is_a_data_root_as_it_is(shared, tmp_path, monkeypatch):
    """`PUBENCH_DATA=../shared/data` needs no `prepare`: the MNIST loaders also read the shared
    folder's own layout (`mnist/*.gz`, `fashion-mnist/*.gz`); `pubench verify` once failed there
    with "MNIST train split not found"."""
    from pubench.data.images import load_images, read_idx

    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path / "cache"))
    for name, folder in (("mnist", "mnist"), ("fashion_mnist", "fashion-mnist")):
        test = load_images(name, "test", root=shared)
        assert tuple(test.x.shape) == (10000, 1, 28, 28)
        assert (test.x[:, 0].numpy() == read_idx(shared / folder / "t10k-images-idx3-ubyte.gz")).all()
        assert (test.y.numpy() == read_idx(shared / folder / "t10k-labels-idx1-ubyte.gz")).all()
