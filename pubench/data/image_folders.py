"""Readers for image data sets stored as folders of image files (one folder per class),
the layout of torchvision's ``ImageFolder``: ``<split folder>/<class>/<image>``.

Used by the folder entries of :mod:`pubench.data.images` (``imagenet``,
``imagewoof_imagenette``, ``alzheimer_kaggle``). Each image is decoded with PIL and
converted to RGB (grayscale scans are replicated to 3 channels, CMYK / palette images
converted), then brought to one fixed size so a split is one uint8 tensor:

* ``short_side_center_crop`` (``size`` S): the shorter side scaled to S (PIL bilinear,
  which low-pass filters when it shrinks), then the central S x S square;
* ``native``: the images are kept as they are and must all have one size (the Alzheimer
  scans, 176 x 208); a task's ``input_size`` resizes them later.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pubench.utils.lazy import lazy

np = lazy("numpy")  # loaded on first use: importing this module stays cheap (issue 34)

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png")
RESIZE_MODES = ("short_side_center_crop", "native")


def class_folders(folder: Path) -> list[str]:
    """The class sub-folders of ``folder``, sorted (ImageFolder's order)."""
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def image_files(folder: Path) -> list[Path]:
    """The image files directly in ``folder``, sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def labeled_files(folder: Path, classes: list[str], label_of: dict[str, int] | None = None
                  ) -> list[tuple[Path, int]]:
    """(file, label) of every image under ``folder/<class>/`` for the given class folders;
    the label is the class's position in ``classes`` unless ``label_of`` maps it."""
    out = []
    for c in classes:
        label = classes.index(c) if label_of is None else label_of[c]
        out += [(p, label) for p in image_files(folder / c)]
    return out


def fit_image(im, mode: str, size: int | None):
    """A PIL RGB image brought to the stored size (see the module docstring)."""
    from PIL import Image

    im = im.convert("RGB")
    if mode == "native":
        return im
    if mode != "short_side_center_crop" or not size:
        raise ValueError(f"resize mode must be one of {RESIZE_MODES} (with a size), got {mode!r} / {size!r}")
    w, h = im.size
    scale = size / min(w, h)
    nw, nh = max(size, round(w * scale)), max(size, round(h * scale))
    if (nw, nh) != (w, h):
        im = im.resize((nw, nh), Image.BILINEAR)
    left, top = (nw - size) // 2, (nh - size) // 2
    return im.crop((left, top, left + size, top + size))


def decode_images(files: Iterable[tuple[Path, int]], mode: str, size: int | None, desc: str
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 (n, 3, H, W), int64 labels) of the listed files, in order."""
    from PIL import Image
    from tqdm import tqdm

    files = list(files)
    labels = np.asarray([lab for _, lab in files], dtype=np.int64)
    x: np.ndarray | None = None
    for i, (path, _) in enumerate(tqdm(files, desc=desc, unit="img", disable=None, leave=False)):
        with Image.open(path) as im:
            arr = np.asarray(fit_image(im, mode, size))
        if x is None:
            x = np.empty((len(files), 3, arr.shape[0], arr.shape[1]), dtype=np.uint8)
        elif arr.shape[:2] != x.shape[2:]:
            raise ValueError(f"{path}: {arr.shape[1]} x {arr.shape[0]} pixels, the first image of {desc} has "
                             f"{x.shape[3]} x {x.shape[2]} (mode {mode!r} keeps the native size)")
        x[i] = np.transpose(arr, (2, 0, 1))
    if x is None:
        raise ValueError(f"{desc}: no image files ({', '.join(IMAGE_SUFFIXES)}) in the class folders")
    return x, labels


def link_sample(src: Path, dst: Path, files: list[Path]) -> None:
    """``dst/<name>`` for each file: a symbolic link to it (a copy where links fail)."""
    import shutil

    dst.mkdir(parents=True, exist_ok=True)
    for f in files:
        target = dst / f.name
        if target.exists() or target.is_symlink():
            continue
        try:
            target.symlink_to(f.resolve())
        except OSError:
            shutil.copy2(f, target)


def build_class_subset(src: Path, dst: Path, classes: list[str], per_class: list[int | None], seed: int) -> int:
    """Fill ``dst/<class>/`` with a seeded uniform sample of ``per_class[i]`` images of
    ``src/<class_i>/`` (None: all of them), as links; every class folder is created, also
    where the sample is empty. Returns the number of images placed."""
    rng = np.random.default_rng(seed)
    placed = 0
    for cls, k in zip(classes, per_class):
        folder = src / cls
        files = image_files(folder) if folder.is_dir() else []
        if k is not None and len(files) > k:
            files = [files[i] for i in sorted(rng.choice(len(files), k, replace=False))]
        (dst / cls).mkdir(parents=True, exist_ok=True)
        link_sample(folder, dst / cls, files)
        placed += len(files)
    return placed
