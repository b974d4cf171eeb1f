"""The dataset interface: a data set a spec names in ``params.data.dataset``.

A dataset is an object registered in :data:`DATASETS` (the modules of this package
register theirs; the registry scans the package) that subclasses :class:`Dataset`:

* ``name`` (the registered name) and ``modality`` (``"image"``, ``"graph"`` or ``"text"``:
  which tasks can read it);
* ``availability(root)``: ``None`` when its files are under the data root ``root``
  (``$PUBENCH_DATA``, default ``./data``), else one line naming what to place and the
  ``pubench prepare`` command: jobs never download;
* ``load(...)``: the data (image sets: ``load(split, root)`` -> ``ImageSet``; graph sets:
  ``load(root, features=...)`` -> ``GraphSet``; text sets: ``load(split, root)`` ->
  ``TextSet``); a miss raises ``FileNotFoundError`` with
  the ``availability`` message;
* optional, ``class_counts``: examples per class of the training split (of the whole set where a
  data set has no fixed split, e.g. the TU graphs; class ids as specs use them), or
  ``None`` where they are not recorded; ``prior: exact`` in a spec needs them
  (:mod:`pubench.registry.priors`); ``sizes``: examples per split, checked by ``pubench
  prepare`` (empty: not checked).

Everything about a data set is said in its one entry: a new image data set is one entry of
``pubench/data/images.py`` (its files, reader, split sizes and class counts) plus its reader
function, a new graph data set one of ``pubench/data/graphs.py``, a text data set one of
``pubench/data/text.py``; a new modality a module with its own :class:`Dataset` subclass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from pubench.utils.registry import Registry


class Dataset(ABC):
    name: str
    modality: ClassVar[str]
    # optional (module docstring): class_counts (tuple of ints, or None) and sizes (split -> count)

    @abstractmethod
    def availability(self, root: str | Path | None = None) -> str | None:
        """None when the files are under ``root`` (default: the data root), else what to place."""

    @abstractmethod
    def load(self, *args: Any, **kwargs: Any) -> Any:
        ...


MODALITIES = ("image", "graph", "text")


def _check_dataset(name: str, obj: Any) -> None:
    if not isinstance(obj, Dataset):
        raise TypeError(f"dataset {name!r} must be an instance of pubench.data.base.Dataset")
    if obj.name != name:
        raise TypeError(f"dataset registered as {name!r} is named {obj.name!r}")
    if obj.modality not in MODALITIES:
        raise TypeError(f"dataset {name!r}: modality must be one of {MODALITIES}, got {obj.modality!r}")


DATASETS = Registry("dataset", package="pubench.data", check=_check_dataset)
