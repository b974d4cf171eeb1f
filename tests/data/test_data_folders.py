"""Folder image loaders (imagenet, imagewoof_imagenette, alzheimer_kaggle): tiny generated
JPEG / PNG files in each release's real layout, labels, resizing, the cache and offline misses."""

import numpy as np
import pytest
import torch

from pubench.data import DATASETS
from pubench.data import images as im
from pubench.data.image_folders import fit_image
from pubench.data.images import availability, cache_path, load_images
from pubench.data.splits import resolve_labels
from pubench.train.context import PLAIN


def write_image(path, rgb, size=(8, 8), fmt="JPEG", gray=False):
    """A flat image of colour ``rgb`` (w x h = ``size``); ``gray``: mode L."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    w, h = size
    arr = np.empty((h, w, 3), dtype=np.uint8)
    arr[:] = rgb
    img = Image.fromarray(arr)
    img = img.convert("L") if gray else img
    img.save(path, format=fmt, **({"quality": 100} if fmt == "JPEG" else {}))


def close(actual, expected, tol=3):
    return bool((actual.int() - torch.as_tensor(expected).int()).abs().max() <= tol)


# ---------------------------------------------------------------------------- fit_image
def test_short_side_center_crop_keeps_the_centre():
    from PIL import Image

    arr = np.zeros((8, 16, 3), dtype=np.uint8)  # h 8, w 16: left quarter red, centre green, right quarter blue
    arr[:, :4] = (255, 0, 0)
    arr[:, 4:12] = (0, 255, 0)
    arr[:, 12:] = (0, 0, 255)
    out = np.asarray(fit_image(Image.fromarray(arr), "short_side_center_crop", 8))
    assert out.shape == (8, 8, 3) and (out == (0, 255, 0)).all()  # the central square, no resize needed
    out = np.asarray(fit_image(Image.fromarray(arr), "short_side_center_crop", 4))
    assert out.shape == (4, 4, 3) and (out[:, 1:3] == (0, 255, 0)).all()  # halved (8 x 4), then the centre
    assert (out[:, 0, 0] > 0).all() and (out[:, 3, 2] > 0).all()  # the edges blend in red / blue: low-pass filtered
    up = np.asarray(fit_image(Image.fromarray(arr[:, 4:12]), "short_side_center_crop", 16))
    assert up.shape == (16, 16, 3)
    gray = Image.fromarray(np.full((5, 7), 77, dtype=np.uint8))
    assert np.asarray(fit_image(gray, "native", None)).shape == (5, 7, 3)
    with pytest.raises(ValueError, match="resize mode"):
        fit_image(gray, "stretch", 4)


# ---------------------------------------------------------------------------- imagenet
def fake_imagenet(root, per_class: dict[int, int], val: dict[int, int]):
    wnids = [f"n{10000000 + 7 * i:08d}" for i in range(im.IMAGENET_CLASSES)]
    for w in wnids:
        (root / "imagenet" / "train" / w).mkdir(parents=True, exist_ok=True)
    for split, counts in (("train", per_class), ("val", val)):
        for cls, n in counts.items():
            for k in range(n):
                write_image(root / "imagenet" / split / wnids[cls] / f"{wnids[cls]}_{k}.JPEG", (cls % 256, 10 * k, 200),
                            size=(10 + k, 8))
    return wnids


def test_imagenet_folder_ids_are_the_sorted_wnids(tmp_path, monkeypatch):
    monkeypatch.setitem(im.DATASETS_BY_NAME["imagenet"].params, "size", 6)
    wnids = fake_imagenet(tmp_path, {0: 2, 151: 3, 268: 1, 999: 2}, {151: 1, 500: 2})
    train = load_images("imagenet", "train", tmp_path)
    assert train.classes == wnids and train.x.shape == (8, 3, 6, 6)
    assert train.y.tolist() == [0, 0, 151, 151, 151, 268, 999, 999]
    assert close(train.x[2, :, 3, 3], (151, 0, 200))  # the colour survives the resize and crop
    val = load_images("imagenet", "val", tmp_path)
    assert val.y.tolist() == [151, 500, 500] and val.classes == wnids
    lab = resolve_labels({"positive": list(range(151, 269))}, train.classes)
    assert lab["positive"] == list(range(151, 269))
    assert cache_path("imagenet", "train", tmp_path).is_file()


def test_imagenet_needs_all_1000_wnid_folders(tmp_path):
    write_image(tmp_path / "imagenet" / "train" / "n01440764" / "a.JPEG", (1, 2, 3))
    write_image(tmp_path / "imagenet" / "val" / "n01440764" / "a.JPEG", (1, 2, 3))
    with pytest.raises(ValueError, match="1000"):
        load_images("imagenet", "train", tmp_path)


# ---------------------------------------------------------------------------- imagewoof / imagenette
def fake_woof_nette(root, n=2, fmt="JPEG"):
    for release, wnids, colour in (("imagenette2", im.IMAGENETTE_WNIDS, 30), ("imagewoof2", im.IMAGEWOOF_WNIDS, 220)):
        for split in ("train", "val"):
            for w in wnids:
                for k in range(n if split == "train" else 1):
                    write_image(root / release / split / w / f"{w}_{k}.{fmt}", (colour, colour, colour), size=(12, 9),
                                fmt=fmt, gray=(k == 1))
        (root / release / f"noisy_{release[:-1]}.csv").write_text("path,noisy_labels_0,is_valid\n")


def test_imagewoof_imagenette_labels_by_release(tmp_path, monkeypatch):
    monkeypatch.setitem(im.DATASETS_BY_NAME["imagewoof_imagenette"].params, "size", 8)
    fake_woof_nette(tmp_path)
    train = load_images("imagewoof_imagenette", "train", tmp_path)
    assert train.classes == ["imagenette", "imagewoof"] and train.x.shape == (40, 3, 8, 8)
    assert train.y.tolist() == [0] * 20 + [1] * 20
    assert close(train.x[train.y == 0], 30) and close(train.x[train.y == 1], 220)  # grayscale files -> 3 channels
    val = load_images("imagewoof_imagenette", "val", tmp_path)
    assert val.y.tolist() == [0] * 10 + [1] * 10
    lab = resolve_labels({"positive": ["imagewoof"], "negative": ["imagenette"]}, train.classes)
    assert lab == {"positive": [1], "negative": [0]}


def test_imagewoof_imagenette_rejects_a_foreign_class_folder(tmp_path):
    fake_woof_nette(tmp_path, n=1)
    write_image(tmp_path / "imagewoof2" / "train" / "n99999999" / "x.JPEG", (0, 0, 0))
    with pytest.raises(ValueError, match="imagewoof2"):
        load_images("imagewoof_imagenette", "train", tmp_path)


def test_imagewoof_imagenette_miss_names_both_releases(tmp_path):
    fake_woof_nette(tmp_path)
    import shutil

    shutil.rmtree(tmp_path / "imagewoof2" / "val")
    assert availability("imagewoof_imagenette", "train", tmp_path) is None
    msg = availability("imagewoof_imagenette", "val", tmp_path)
    assert str(tmp_path / "imagewoof2" / "val") in msg and "imagenette2/val" not in msg and "imagewoof2.tgz" in msg
    with pytest.raises(FileNotFoundError, match="imagewoof2"):
        load_images("imagewoof_imagenette", "val", tmp_path)


# ---------------------------------------------------------------------------- alzheimer
def fake_alzheimer(base, counts=(2, 1, 3, 2), fmt="JPEG", suffix="jpg"):
    for c, (cls, n) in enumerate(zip(im.ALZHEIMER_CLASSES, counts)):
        for split in ("train", "test"):
            for k in range(n):
                write_image(base / split / cls / f"{cls}_{k}.{suffix}", (40 * c,) * 3, size=(6, 7), fmt=fmt, gray=True)


@pytest.mark.parametrize("folder", ["alzheimer", "Alzheimer_s Dataset"])
def test_alzheimer_folders_native_size(tmp_path, folder):
    fake_alzheimer(tmp_path / folder, fmt="PNG", suffix="png")
    train = load_images("alzheimer_kaggle", "train", tmp_path)
    assert train.classes == im.ALZHEIMER_CLASSES and train.x.shape == (8, 3, 7, 6)
    assert train.y.tolist() == [0, 0, 1, 2, 2, 2, 3, 3]
    assert close(train.x[train.y == 2], 80, tol=0)  # PNG: lossless
    lab = resolve_labels({"positive": ["MildDemented", "ModerateDemented", "VeryMildDemented"]}, train.classes)
    assert lab["positive"] == [0, 1, 3]
    assert len(load_images("alzheimer_kaggle", "test", tmp_path)) == 8


def test_alzheimer_mixed_sizes_fail_with_the_file(tmp_path):
    fake_alzheimer(tmp_path / "alzheimer")
    write_image(tmp_path / "alzheimer" / "train" / "NonDemented" / "zz.jpg", (0, 0, 0), size=(9, 9))
    with pytest.raises(ValueError, match="zz.jpg"):
        load_images("alzheimer_kaggle", "train", tmp_path)


# ---------------------------------------------------------------------------- offline misses
@pytest.mark.parametrize("name, expect", [
    ("imagenet", ["imagenet/train/", "no public download", "ImageFolder"]),
    ("imagewoof_imagenette", ["imagenette2/train/", "imagewoof2/train/", "imagenette2.tgz"]),
    ("alzheimer_kaggle", ["alzheimer/train/", "Alzheimer_s Dataset/train/", "Kaggle"]),
])
def test_offline_miss_names_the_folders(tmp_path, name, expect):
    assert name in DATASETS.names()
    with pytest.raises(FileNotFoundError) as e:
        load_images(name, "train", tmp_path)
    msg = str(e.value)
    for part in expect + [str(tmp_path), "Jobs never download"]:
        assert part in msg, (part, msg)
    assert availability(name, "train", tmp_path) == msg
    (tmp_path / name.split("_")[0] / "train").mkdir(parents=True)  # an empty folder is still a miss
    assert availability(name, "train", tmp_path) is not None


# ---------------------------------------------------------------------------- through a task
def test_imagenet_ii_runs_through_contrastive_probe_with_the_fig14_variants(tmp_path, monkeypatch):
    """ImageNet-II's catalogue labels (class names) on the generated folders, resized by the
    task, pre-training and the vpu_probe / nnpu_mixup_probe downstream units of fig14-pupl."""
    from pubench.tasks import TASKS
    from tests.tasks.test_image_tasks import SEEDS, _params

    monkeypatch.setitem(im.DATASETS_BY_NAME["imagewoof_imagenette"].params, "size", 16)
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path))
    fake_woof_nette(tmp_path, n=3)
    data = {"dataset": "imagewoof_imagenette", "labels": {"positive": ["imagewoof"], "negative": ["imagenette"]},
            "train_split": "train", "test_split": "val", "input_size": [3, 12, 12], "prior": 0.5,
            "split": {"kind": "pu", "scheme": "case_control", "n_labeled": 8, "n_unlabeled": 20,
                      "unlabeled_prior": 0.5}}
    for downstream in ({"name": "vpu_probe", "lam": 0.03, "mix_alpha": 0.3},
                       {"name": "nnpu_mixup_probe", "risk": "nnpu", "loss": "sigmoid",
                        "mixup": {"mode": "separate_positive_and_unlabeled", "alpha": 1.0}}):
        p = _params(data=data)
        p["model"]["backbone"]["input_size"] = 12
        p["pretrain"].update(epochs=1, batch_size=8, augment={"name": "crop", "scale": [0.7, 1.0]})
        p["downstream"] = {**downstream, "epochs": 2, "batch_size": 4, "optimizer": {"name": "adam", "lr": 0.01}}
        out = TASKS.get("contrastive_probe").run(p, SEEDS, ctx=PLAIN)
        assert out.info["n_test"] == 20 and "resized (16, 16) -> (12, 12)" in out.info["data_source"]["train"]
        assert out.info["split"]["counts"]["n_labeled"] == 8 and 0 <= out.metrics["acc"] <= 100


# ---------------------------------------------------------------------------- prepare: ImageNet-I's pool
def test_prepare_imagenet_links_the_imagenet_i_pool(tmp_path, monkeypatch):
    from pubench.data import prepare as prep

    src, root = tmp_path / "ilsvrc", tmp_path / "root"
    wnids = [f"n{10000000 + 7 * i:08d}" for i in range(im.IMAGENET_CLASSES)]
    for w in wnids:
        (src / "train" / w).mkdir(parents=True)
        (src / "val" / w).mkdir(parents=True)
    for cls, n in ((150, 4), (151, 5), (200, 2), (268, 4), (269, 4)):
        for k in range(n):
            for split in ("train", "val"):
                write_image(src / split / wnids[cls] / f"{k}.JPEG", (cls % 256, 0, 0))
    monkeypatch.setitem(im.IMAGENET_I_POOL, "dog", 3)
    monkeypatch.setitem(im.IMAGENET_I_POOL, "other", 2)
    monkeypatch.setitem(im.IMAGENET_I_POOL, "val_other", 1)
    monkeypatch.setitem(im.DATASETS_BY_NAME["imagenet"].params, "size", 4)
    rows = {n: (status, detail) for n, status, detail in prep.prepare_rows(["imagenet"], src, root, download=False)}
    status, detail = rows["imagenet"]
    assert status == "copied" and "12 train and 13 val" in detail and "train 12, val 13" in detail, detail
    linked = sorted((root / "imagenet" / "train" / wnids[151]).iterdir())
    assert len(linked) == 3 and all(p.is_symlink() and p.resolve().parent == src / "train" / wnids[151] for p in linked)
    assert len(list((root / "imagenet" / "train").iterdir())) == 1000  # every wnid folder, most of them empty
    train = load_images("imagenet", "train", root)
    assert sorted(set(train.y.tolist())) == [150, 151, 200, 268, 269] and len(train) == 2 + 3 + 2 + 3 + 2
    assert train.y.tolist().count(200) == 2  # a dog class with fewer images than the pool size: all of them
    val = load_images("imagenet", "val", root)  # every dog image, val_other of the others
    assert len(val) == 1 + 5 + 2 + 4 + 1
    again = {n: s for n, s, _ in prep.prepare_rows(["imagenet"], src, root, download=False)}
    assert again["imagenet"] == "present"


def test_prepare_imagenet_from_a_folder_without_ilsvrc_says_so(tmp_path):
    from pubench.data import prepare as prep

    (tmp_path / "src" / "train" / "n01440764").mkdir(parents=True)
    rows = {n: (s, d) for n, s, d in prep.prepare_rows(["imagenet"], tmp_path / "src", tmp_path / "root",
                                                         download=False)}
    assert rows["imagenet"][0] == "missing" and "has no ILSVRC-2012 folders" in rows["imagenet"][1]
