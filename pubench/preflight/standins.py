"""Stand-ins for what a paper-tier cell needs and this machine lacks: synthetic data of the
data set's shape and size, and a randomly initialised text encoder.

* Images: random uint8 images of the data set's shape, every split at its own size with
  its class counts (:data:`IMAGE_SETS`; STL-10's unlabeled split labelled -1, ImageNet as
  the ImageNet-I pool ``pubench prepare imagenet`` links). They are held in memory like
  the real ones, so memory figures are the real job's.
* Graphs: random graphs with the data set's graph, node and edge counts and class counts
  (:data:`pubench.data.graphs.SPECS`), one-hot random node labels of the data set's label
  count where it has node labels, else the loader's degree features.
* Text: random "sentences" of made-up words with SST-2's split sizes, class counts and
  about its sentence lengths.
* ``roberta_large`` without its pretrained weights (never downloaded here): the same
  architecture at random initialisation, with a word-level hashing tokenizer (its BPE
  files come with the weights), about 1 token per word (BPE: about 1.2).

The parent process decides what to replace (:func:`plan`, from the data root's
availability, before any data loads); the worker gives the job a :class:`StandIns` as its
data source (``JobContext(data=...)``, :class:`pubench.data.source.DataSource`): the job
reads every data set through it, so nothing is swapped. Numbers computed on stand-ins are
meaningless; costs and memory are the real job's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from pubench.data.images import ALZHEIMER_CLASSES
from pubench.data.source import DataSource

IMAGENET_DOGS = range(151, 269)
#: distinct random images per split of a synthetic image set (the rest repeat them)
DISTINCT = 4096


def _even(n: int, k: int) -> tuple[int, ...]:
    return tuple(n // k + (c < n % k) for c in range(k))


def _total(counts: tuple[int, ...] | int) -> int:
    return counts if isinstance(counts, int) else sum(counts)


def _imagenet(dog: int, other: int) -> tuple[int, ...]:
    return tuple(dog if c in IMAGENET_DOGS else other for c in range(1000))


@dataclass(frozen=True)
class ImageShape:
    """A data set's image shape and, per split, its size as class counts (``-1``: the
    split's images are unlabelled)."""

    shape: tuple[int, int, int]
    splits: dict[str, tuple[int, ...] | int]
    classes: tuple[str, ...] | None = None  # the loader's class names (specs may name classes); None: "0", "1", ...

    def size(self, split: str) -> int:
        return sum(_total(self.counts(p)) for p in split.split("+"))

    def counts(self, part: str) -> tuple[int, ...] | int:
        if part not in self.splits:
            raise ValueError(f"no split {part!r} (stand-in splits: {', '.join(self.splits)})")
        return self.splits[part]

    def bytes(self, split: str) -> int:
        return self.size(split) * math.prod(self.shape)


#: The registered image data sets' own sizes (torchvision's splits; ImageNet: the ImageNet-I
#: pool of ``pubench prepare imagenet``; Alzheimer: the Kaggle archive; Imagewoof/Imagenette:
#: fast.ai's full-size releases).
IMAGE_SETS: dict[str, ImageShape] = {
    "mnist": ImageShape((1, 28, 28), {
        "train": (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
        "test": (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009)}),
    "fashion_mnist": ImageShape((1, 28, 28), {"train": _even(60000, 10), "test": _even(10000, 10)}),
    "cifar10": ImageShape((3, 32, 32), {"train": _even(50000, 10), "test": _even(10000, 10)}),
    "cifar10_jpeg": ImageShape((3, 32, 32), {"train": _even(50000, 10), "test": _even(10000, 10)}),
    "cifar100": ImageShape((3, 32, 32), {"train": _even(50000, 100), "test": _even(10000, 100)}),
    "stl10": ImageShape((3, 96, 96), {"train": _even(5000, 10), "test": _even(8000, 10), "unlabeled": 100000}),
    "svhn": ImageShape((3, 32, 32), {
        "train": (4948, 13861, 10585, 8497, 7458, 6882, 5727, 5595, 5045, 4659),
        "test": (1744, 5099, 4149, 2882, 2523, 2384, 1977, 2019, 1660, 1595),
        "extra": _even(531131, 10)}),
    "imagenet": ImageShape((3, 224, 224), {"train": _imagenet(260, 25), "val": _imagenet(50, 10)}),
    "imagewoof_imagenette": ImageShape((3, 224, 224), {"train": (9469, 9025), "val": (3925, 3929)},
                                       ("imagenette", "imagewoof")),
    "alzheimer_kaggle": ImageShape((3, 208, 176), {"train": (717, 52, 2560, 1792), "test": (179, 12, 640, 448)},
                                   tuple(ALZHEIMER_CLASSES)),
}
#: node-label counts of the TU sets with node labels (the one-hot width of ``features: auto``)
GRAPH_NODE_LABELS = {"mutag": 7, "ptc_mr": 18, "enzymes": 3, "proteins": 3, "nci1": 37, "dd": 89}
#: SST-2 (GLUE): per split the class counts (negative, positive) and the words per sentence
TEXT_SETS = {"sst2": {"train": ((29780, 37569), (1, 20)), "dev": ((428, 444), (4, 36))}}


# ------------------------------------------------------------------ what a job needs
@dataclass
class Inputs:
    """What :func:`plan` decided for one job: data sets to replace by synthetic ones
    (name -> modality), their memory, and why the job cannot be checked here, if so
    (``skipped_for``: ``memory``, which more memory would mend, or ``data``)."""

    synthetic: dict[str, str] = field(default_factory=dict)
    bytes: int = 0
    skip: str | None = None
    skipped_for: str | None = None

    def describe(self) -> str:
        if not self.synthetic:
            return "real data"
        return "synthetic " + ", ".join(sorted(self.synthetic))


def image_splits(data: dict[str, Any]) -> list[str]:
    """The splits an image job's ``params.data`` loads."""
    split = data.get("split") or {}
    train = data.get("train_split", "train")
    out = [f"{train}+{split['unlabeled_split']}" if split.get("unlabeled_split") else train,
           data.get("test_split", "test")]
    return out + ([data["pretrain_split"]] if data.get("pretrain_split") else [])


def plan(task: str, params: dict[str, Any], max_bytes: int | None = None) -> Inputs:
    """Which of the job's data sets are missing under the data root and get a stand-in;
    ``skip`` says why the job cannot be checked here (no stand-in of that data set, or its
    stand-in would take more than ``max_bytes`` of memory)."""
    from pubench.data import DATASETS
    from pubench.paths import data_root

    data = params.get("data") if isinstance(params, dict) else None
    name = data.get("dataset") if isinstance(data, dict) else None
    out = Inputs()
    if not isinstance(name, str) or name not in DATASETS:
        return out  # no data (bcl_simulation), or a name the task's validation already refused
    ds = DATASETS.get(name)
    if ds.modality == "image":
        from pubench.data.images import availability

        splits = list(dict.fromkeys(image_splits(data)))
        if all(availability(name, p) is None for s in splits for p in s.split("+")):
            return out
        if name in IMAGE_SETS:
            out.bytes = sum(IMAGE_SETS[name].bytes(s) for s in splits)
    elif ds.availability(data_root()) is None:
        return out
    if name not in stand_in_names(ds.modality):
        out.skip, out.skipped_for = f"{name} is not under the data root and has no synthetic stand-in", "data"
        return out
    out.synthetic[name] = ds.modality
    if max_bytes is not None and out.bytes > max_bytes:
        out.skipped_for = "memory"
        out.skip = (f"synthetic {name} takes {out.bytes / 2**30:.1f} GiB, more than this machine's memory "
                    f"budget for it ({max_bytes / 2**30:.1f} GiB; --max-memory)")
    return out


def stand_in_names(modality: str) -> set[str]:
    """The data sets of ``modality`` that have a synthetic stand-in."""
    from pubench.data.graphs import SPECS

    return set({"image": IMAGE_SETS, "graph": SPECS, "text": TEXT_SETS}.get(modality, ()))


# ------------------------------------------------------------------ the stand-ins
def _random_images(n: int, shape: tuple[int, ...], g):
    """``n`` random uint8 images: a block of :data:`DISTINCT` drawn, then repeated (drawing
    gigabytes takes long; the memory is the same)."""
    import torch

    block = torch.randint(0, 256, (min(n, DISTINCT), *shape), generator=g, dtype=torch.uint8)
    return block.repeat((math.ceil(n / len(block)),) + (1,) * len(shape))[:n] if n > len(block) else block


def synthetic_labels(name: str, split: str, g=None):
    """``(labels, class names)`` of ``name``'s ``split``: its class counts in random order
    (-1 for an unlabelled split)."""
    import torch

    spec = IMAGE_SETS[name]
    g = g if g is not None else torch.Generator().manual_seed(0)
    ys = []
    for part in split.split("+"):
        counts = spec.counts(part)
        if isinstance(counts, int):
            ys.append(torch.full((counts,), -1, dtype=torch.long))
        else:
            y = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))
            ys.append(y[torch.randperm(len(y), generator=g)])
    k = max(len(c) for c in spec.splits.values() if not isinstance(c, int))
    return torch.cat(ys), list(spec.classes or (str(c) for c in range(k)))


def synthetic_images(name: str, split: str, seed: int = 0):
    """An :class:`pubench.data.images.ImageSet` of random images of ``name``'s ``split``."""
    import torch

    from pubench.data.images import ImageSet

    g = torch.Generator().manual_seed(seed)
    y, classes = synthetic_labels(name, split, g)
    return ImageSet(_random_images(len(y), IMAGE_SETS[name].shape, g), y, classes,
                    f"synthetic {name} {split} (pubench preflight: random images of the data set's shape and size)")


def synthetic_graphs(name: str, features: str = "auto", seed: int = 0):
    """A :class:`pubench.data.graphs.GraphSet` of random graphs with ``name``'s statistics."""
    import torch
    from torch_geometric.data import Data

    from pubench.data.graphs import SPECS, GraphSet, degree_features

    spec = SPECS[name]
    g = torch.Generator().manual_seed(seed)
    sizes = (torch.rand(spec.graphs, generator=g) + 0.5) * spec.nodes / spec.graphs
    sizes = sizes.round().clamp_min(2).long()
    labels = torch.repeat_interleave(torch.arange(spec.num_classes), torch.tensor(spec.class_counts))
    labels = labels[torch.randperm(spec.graphs, generator=g)]
    width = GRAPH_NODE_LABELS.get(name) if spec.node_labels and features == "auto" else None
    graphs = []
    for n, y in zip(sizes.tolist(), labels.tolist()):
        m = max(1, round(n * spec.edges / spec.nodes))
        u, v = torch.randint(0, n, (2, m), generator=g)
        v = torch.where(u == v, (v + 1) % n, v)
        edges = torch.stack([torch.cat([u, v]), torch.cat([v, u])])
        x = (torch.nn.functional.one_hot(torch.randint(0, width, (n,), generator=g), width).float()
             if width else None)
        graphs.append(Data(x=x, edge_index=edges, y=torch.tensor([y]), num_nodes=n))
    info = {"source": "synthetic (pubench preflight)", "graphs": len(graphs), "class_counts": list(spec.class_counts)}
    if width:
        info["node_features"] = f"one-hot random node label ({width} columns)"
    else:
        info.update(degree_features(graphs, "degree" if features == "degree" else features))
    return GraphSet(spec.name, graphs, int(graphs[0].x.shape[1]), spec.num_classes, info)


def synthetic_text(name: str, split: str, seed: int = 0):
    """A :class:`pubench.data.text.TextSet` of made-up sentences with ``name``'s sizes."""
    import torch

    from pubench.data.text import TextSet

    counts, (lo, hi) = TEXT_SETS[name][split]
    g = torch.Generator().manual_seed(seed)
    n = sum(counts)
    lengths = torch.randint(lo, hi + 1, (n,), generator=g).tolist()
    words = torch.randint(0, 20000, (sum(lengths),), generator=g).tolist()
    sentences, at = [], 0
    for k in lengths:
        sentences.append(" ".join(f"w{w}" for w in words[at:at + k]))
        at += k
    labels = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))
    return TextSet(sentences, labels[torch.randperm(n, generator=g)], ["negative", "positive"],
                   f"synthetic {name} {split} (pubench preflight)")


class WordHashTokenizer:
    """Stands in for a transformer's tokenizer: ``<s>`` + one id per word or punctuation
    mark (a stable hash into the vocabulary) + ``</s>``, cut at ``max_length``."""

    def __init__(self, vocab_size: int, bos: int = 0, eos: int = 2, reserved: int = 4):
        self.vocab_size, self.bos, self.eos, self.reserved = vocab_size, bos, eos, reserved

    def _id(self, word: str) -> int:
        import zlib

        return self.reserved + zlib.crc32(word.encode("utf-8")) % (self.vocab_size - self.reserved)

    def __call__(self, sentences: list[str], truncation: bool = True, max_length: int = 512) -> dict:
        ids = []
        for s in sentences:
            body = [self._id(w) for w in re.findall(r"\w+|[^\w\s]", s)]
            ids.append([self.bos, *body[:max(0, max_length - 2)], self.eos])
        return {"input_ids": ids}


def roberta_stand_in(factory, notes: list[str]):
    """``factory`` (``roberta_large``), or, when its pretrained weights are not here, the
    same architecture at random initialisation with a :class:`WordHashTokenizer`."""

    def build(in_channels: int = 0, pretrained: bool = True, layers: int | None = None, pooling: str = "first"):
        try:
            return factory(in_channels, pretrained=pretrained, layers=layers, pooling=pooling)
        except FileNotFoundError:
            enc = factory(in_channels, pretrained=False, layers=layers, pooling=pooling)
            enc.tokenizer = WordHashTokenizer(int(enc.model.config.vocab_size))
            notes.append("roberta_large at random initialisation with a word-hash tokenizer (no pretrained weights here)")
            return enc

    build.requires = getattr(factory, "requires", None)
    return build


class StandIns(DataSource):
    """The data source of a preflight check: the stand-ins of ``synthetic`` (name ->
    modality) for those data sets, the real files for the others, and ``roberta_large``'s
    stand-in where its pretrained weights are missing; ``notes`` collects what was replaced."""

    def __init__(self, synthetic: dict[str, str], notes: list[str] | None = None):
        self.synthetic = dict(synthetic)
        self.notes = [] if notes is None else notes
        self.cache: dict[tuple, Any] = {}
        self.notes.extend(f"synthetic {name} ({kind}: {'random images' if kind == 'image' else 'random ' + kind})"
                          for name, kind in sorted(self.synthetic.items()))

    def images(self, name: str, split: str):
        if self.synthetic.get(name) != "image":
            return super().images(name, split)
        if (name, split) not in self.cache:
            self.cache.clear()  # one split at a time in memory besides what the task holds
            self.cache[(name, split)] = synthetic_images(name, split)
        return self.cache[(name, split)]

    def graphs(self, name: str, features: str):
        if self.synthetic.get(name) != "graph":
            return super().graphs(name, features)
        return synthetic_graphs(name, features)

    def text(self, dataset: Any, split: str):
        if self.synthetic.get(dataset.name) != "text":
            return super().text(dataset, split)
        return synthetic_text(dataset.name, split)

    def pretrained(self, name: str, factory: Callable[..., Any]) -> Callable[..., Any]:
        return roberta_stand_in(factory, self.notes) if name == "roberta_large" else factory
