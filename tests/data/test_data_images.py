"""Image loaders: tiny generated files in the torchvision layout, the .pt cache, offline
misses; real-data checks when ../shared/data exists (the ``data_root`` fixture)."""

import gzip
import io
import pickle
import struct

import numpy as np
import pytest
import torch

from pubench.data import DATASETS
from pubench.data import images as im
from pubench.data.images import (ImageSet, availability, cache_path, concat_images, load_images, read_idx,
                                  root_cache_path)
from pubench.paths import data_cache

NAMES = ["mnist", "fashion_mnist", "cifar10", "cifar10_jpeg", "cifar100", "stl10", "svhn"]


# ---------------------------------------------------------------------------- generators of tiny files
def write_idx(path, arr: np.ndarray, gz=True):
    codes = {np.dtype(np.uint8): 0x08}
    header = bytes([0, 0, codes[arr.dtype], arr.ndim]) + b"".join(struct.pack(">I", d) for d in arr.shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = header + arr.tobytes()
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)


def fake_mnist(root, folder="MNIST", n_train=20, n_test=10, gz=True, seed=0):
    g = np.random.default_rng(seed)
    out = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        x = g.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        y = (np.arange(n) % 10).astype(np.uint8)
        suffix = ".gz" if gz else ""
        write_idx(root / folder / "raw" / f"{prefix}-images-idx3-ubyte{suffix}", x, gz)
        write_idx(root / folder / "raw" / f"{prefix}-labels-idx1-ubyte{suffix}", y, gz)
        out[prefix] = (x, y)
    return out


def jpeg_bytes(img: np.ndarray, quality=95) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def fake_cifar10_jpeg(folder, n=12, seed=0):
    """An npz laid out like ../shared/data/cifar10-jpeg: jpeg, offsets, labels, classes."""
    g = np.random.default_rng(seed)
    # smooth images so JPEG keeps them close to the original
    base = g.integers(0, 256, size=(n, 1, 1, 3)).astype(np.float64)
    ramp = np.linspace(0, 40, 32)[None, :, None, None]
    imgs = np.clip(base + ramp, 0, 255).astype(np.uint8).repeat(32, axis=2)
    blobs = [jpeg_bytes(i) for i in imgs]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs])]).astype(np.int64)
    labels = (np.arange(n) % 10).astype(np.int64)
    classes = np.array(["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"])
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        np.savez(folder / f"{split}.npz", jpeg=np.frombuffer(b"".join(blobs), dtype=np.uint8), offsets=offsets,
                 labels=labels, classes=classes)
    return imgs, labels


# ---------------------------------------------------------------------------- registry / ImageSet
def test_registered_and_callable():
    for name in NAMES:
        assert name in DATASETS
        ds = DATASETS.get(name)
        assert callable(ds) and "train" in ds.splits and "test" in ds.splits


def test_imageset_checks_types():
    with pytest.raises(ValueError, match="uint8"):
        ImageSet(torch.zeros(2, 1, 2, 2), torch.zeros(2, dtype=torch.int64), ["a"], "s")
    with pytest.raises(ValueError, match="int64"):
        ImageSet(torch.zeros(2, 1, 2, 2, dtype=torch.uint8), torch.zeros(3, dtype=torch.int64), ["a"], "s")
    a = ImageSet(torch.zeros(2, 1, 2, 2, dtype=torch.uint8), torch.tensor([0, 1]), ["a", "b"], "A")
    b = ImageSet(torch.ones(3, 1, 2, 2, dtype=torch.uint8), torch.tensor([1, 1, -1]), ["a", "b"], "B")
    c = concat_images(a, b)
    assert len(c) == 5 and c.y.tolist() == [0, 1, 1, 1, -1] and c.source == "A + B"
    assert a.take([1]).y.tolist() == [1]


def test_read_idx_rejects_garbage(tmp_path):
    p = tmp_path / "x.gz"
    with gzip.open(p, "wb") as f:
        f.write(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="not an IDX"):
        read_idx(p)


# ---------------------------------------------------------------------------- MNIST-format loaders
@pytest.mark.parametrize("name,folder", [("mnist", "MNIST"), ("fashion_mnist", "FashionMNIST")])
def test_mnist_format_loader_and_cache(tmp_path, monkeypatch, name, folder):
    data = fake_mnist(tmp_path, folder)
    s = load_images(name, "train", tmp_path)
    assert s.x.shape == (20, 1, 28, 28) and s.x.dtype == torch.uint8 and s.y.dtype == torch.int64
    assert np.array_equal(s.x[:, 0].numpy(), data["train"][0]) and s.y.tolist() == data["train"][1].tolist()
    assert len(s.classes) == 10 and "canonical" in s.source
    t = DATASETS.get(name)("test", tmp_path)
    assert t.x.shape == (10, 1, 28, 28)
    cache = cache_path(name, "train", tmp_path)
    assert cache.is_file() and cache.parent == data_cache(tmp_path) and cache.name.startswith(f"{name}-train-")
    assert not (tmp_path / "processed").exists()  # never into the data root

    # cache hit: the raw files are not read again
    def boom(*a, **k):
        raise AssertionError("reader called on a cache hit")

    monkeypatch.setattr(im, "read_idx", boom)
    again = load_images(name, "train", tmp_path)
    assert torch.equal(again.x, s.x) and torch.equal(again.y, s.y) and again.source == s.source


def test_mnist_uncompressed_files_work(tmp_path):
    data = fake_mnist(tmp_path, gz=False)
    s = load_images("mnist", "test", tmp_path)
    assert np.array_equal(s.x[:, 0].numpy(), data["t10k"][0])


def test_a_cache_an_older_version_left_in_the_data_root_is_read_not_written(tmp_path, monkeypatch):
    fake_mnist(tmp_path)
    first = load_images("mnist", "train", tmp_path)
    legacy = root_cache_path("mnist", "train", tmp_path)
    legacy.parent.mkdir()
    cache_path("mnist", "train", tmp_path).rename(legacy)
    monkeypatch.setattr(im, "read_idx", lambda *a, **k: (_ for _ in ()).throw(AssertionError("decoded again")))
    assert availability("mnist", "train", tmp_path) is None
    assert torch.equal(load_images("mnist", "train", tmp_path).x, first.x)
    assert not cache_path("mnist", "train", tmp_path).exists()


def test_damaged_cache_is_rebuilt(tmp_path):
    fake_mnist(tmp_path)
    load_images("mnist", "train", tmp_path)
    cache_path("mnist", "train", tmp_path).write_bytes(b"not a torch file")
    assert len(load_images("mnist", "train", tmp_path)) == 20


# ---------------------------------------------------------------------------- cifar10_jpeg
def test_cifar10_jpeg_loader(tmp_path):
    imgs, labels = fake_cifar10_jpeg(tmp_path / "cifar10-jpeg")
    s = load_images("cifar10_jpeg", "train", tmp_path)
    assert s.x.shape == (12, 3, 32, 32) and s.x.dtype == torch.uint8
    assert s.y.tolist() == labels.tolist() and s.classes[0] == "airplane" and len(s.classes) == 10
    assert "lossy" in s.source and "reduced tier only" in s.source
    diff = np.abs(s.x.permute(0, 2, 3, 1).numpy().astype(int) - imgs.astype(int))
    assert diff.mean() < 3  # decoded JPEG is close to the encoded pixels (lossy)
    assert cache_path("cifar10_jpeg", "train", tmp_path).is_file()
    assert len(load_images("cifar10_jpeg", "test", tmp_path)) == 12


# ---------------------------------------------------------------------------- canonical-format readers
def test_cifar10_and_cifar100_pickles(tmp_path):
    g = np.random.default_rng(0)
    d = tmp_path / "cifar-10-batches-py"
    d.mkdir()
    for i, fn in enumerate([f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]):
        with open(d / fn, "wb") as f:
            pickle.dump({"data": g.integers(0, 256, (4, 3072), dtype=np.uint8), "labels": [i % 10] * 4}, f)
    with open(d / "batches.meta", "wb") as f:
        pickle.dump({"label_names": [f"c{i}" for i in range(10)]}, f)
    s = load_images("cifar10", "train", tmp_path)
    assert s.x.shape == (20, 3, 32, 32) and s.y.tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4
    assert load_images("cifar10", "test", tmp_path).y.tolist() == [5] * 4
    d = tmp_path / "cifar-100-python"
    d.mkdir()
    for fn in ("train", "test"):
        with open(d / fn, "wb") as f:
            pickle.dump({"data": g.integers(0, 256, (3, 3072), dtype=np.uint8), "fine_labels": [7, 8, 99]}, f)
    with open(d / "meta", "wb") as f:
        pickle.dump({"fine_label_names": [f"f{i}" for i in range(100)]}, f)
    c = load_images("cifar100", "train", tmp_path)
    assert c.y.tolist() == [7, 8, 99] and len(c.classes) == 100


def test_stl10_binary(tmp_path):
    d = tmp_path / "stl10_binary"
    d.mkdir()
    g = np.random.default_rng(0)
    x = g.integers(0, 256, (3, 3, 96, 96), dtype=np.uint8)
    for stem, n in (("train", 3), ("test", 2)):
        x[:n].tofile(d / f"{stem}_X.bin")
        np.array([1, 10, 3][:n], dtype=np.uint8).tofile(d / f"{stem}_y.bin")
    x[:2].tofile(d / "unlabeled_X.bin")
    (d / "class_names.txt").write_text("\n".join(["airplane", "bird", "car", "cat", "deer", "dog", "horse",
                                                  "monkey", "ship", "truck"]) + "\n")
    s = load_images("stl10", "train", tmp_path)
    assert s.y.tolist() == [0, 9, 2] and s.x.shape == (3, 3, 96, 96)
    assert torch.equal(s.x[0], torch.from_numpy(x[0].transpose(0, 2, 1).copy()))  # column-major binary
    both = load_images("stl10", "train+unlabeled", tmp_path)
    assert both.y.tolist() == [0, 9, 2, -1, -1]
    assert load_images("stl10", "test", tmp_path).y.tolist() == [0, 9]


def test_svhn_mat(tmp_path):
    import scipy.io as sio

    (tmp_path / "svhn").mkdir()
    g = np.random.default_rng(0)
    X = g.integers(0, 256, (32, 32, 3, 4), dtype=np.uint8)
    sio.savemat(tmp_path / "svhn" / "train_32x32.mat", {"X": X, "y": np.array([[10], [1], [2], [9]], dtype=np.uint8)})
    s = load_images("svhn", "train", tmp_path)
    assert s.y.tolist() == [0, 1, 2, 9] and s.x.shape == (4, 3, 32, 32)
    assert torch.equal(s.x[1], torch.from_numpy(X[:, :, :, 1].transpose(2, 0, 1).copy()))


# ---------------------------------------------------------------------------- offline misses
@pytest.mark.parametrize("name,expect", [
    ("mnist", ["MNIST/raw/train-images-idx3-ubyte.gz", "MNIST/raw/train-labels-idx1-ubyte.gz"]),
    ("fashion_mnist", ["FashionMNIST/raw/train-images-idx3-ubyte.gz"]),
    ("cifar10", ["cifar-10-batches-py/data_batch_1", "cifar10_jpeg"]),
    ("cifar10_jpeg", ["cifar10-jpeg/train.npz"]),
    ("stl10", ["stl10_binary/train_X.bin", "not available offline"]),
    ("svhn", ["svhn/train_32x32.mat", "not available offline"]),
])
def test_offline_miss_names_the_files(tmp_path, name, expect):
    with pytest.raises(FileNotFoundError) as e:
        load_images(name, "train", tmp_path)
    msg = str(e.value)
    for part in expect + [str(tmp_path), "pubench prepare --from ../shared/data"]:
        assert part in msg, (part, msg)
    assert availability(name, "train", tmp_path) == msg
    assert not (tmp_path / "processed").exists()


def test_bad_split_and_non_image_name(tmp_path):
    with pytest.raises(ValueError, match="splits"):
        load_images("mnist", "unlabeled", tmp_path)
    from pubench.utils.registry import UnknownName

    with pytest.raises(UnknownName):
        load_images("mnistt", "train", tmp_path)


# ---------------------------------------------------------------------------- real data (../shared/data)
@pytest.fixture
def real_root(shared_image_root):
    return shared_image_root  # one session root: its processed caches are built once (conftest)


def test_real_mnist_counts(real_root):
    tr = load_images("mnist", "train", real_root)
    assert tr.x.shape == (60000, 1, 28, 28)
    assert torch.bincount(tr.y).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    te = load_images("mnist", "test", real_root)
    assert torch.bincount(te.y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert tr.x.float().div(255).mean().item() == pytest.approx(0.1307, abs=1e-4)


def test_real_mnist_split_priors_match_the_specs(real_root):
    """table1-punce / table2-punce print pi* for n_P = 1k, 3k, 10k; the realized split gives them."""
    from pubench.data.splits import make_split

    y = load_images("mnist", "train", real_root).y
    for n_p, pi in ((1000, 0.500135593220339), (3000, 0.4825964912280702), (10000, 0.41016)):
        s = make_split(y, {"positive": [1, 3, 5, 7, 9]}, {"kind": "pu", "n_labeled": n_p,
                                                          "scheme": "single_training_set"}, np.random.default_rng(0))
        assert s.prior == pytest.approx(pi, abs=1e-15) and s.counts["n_labeled"] == n_p


def test_real_fashion_mnist_counts(real_root):
    tr = load_images("fashion_mnist", "train", real_root)
    assert torch.bincount(tr.y).tolist() == [6000] * 10 and tr.classes[7] == "Sneaker"


def test_real_cifar10_jpeg_test_split(real_root):
    te = load_images("cifar10_jpeg", "test", real_root)
    assert te.x.shape == (10000, 3, 32, 32) and te.x.dtype == torch.uint8
    assert torch.bincount(te.y).tolist() == [1000] * 10
    assert te.classes == ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    assert "lossy" in te.source


def test_real_cifar10_jpeg_train_split(real_root):
    tr = load_images("cifar10_jpeg", "train", real_root)
    assert tr.x.shape == (50000, 3, 32, 32)
    assert torch.bincount(tr.y).tolist() == [5000] * 10
    m = tr.x.float().div(255).mean(dim=(0, 2, 3))
    assert torch.allclose(m, torch.tensor([0.4914, 0.4822, 0.4465]), atol=0.01)  # CIFAR-10's channel means
