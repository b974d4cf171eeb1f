"""The PU data sets of the papers, defined once (``pubench/data/pu_datasets.yaml``).

``data: {pu_dataset: NAME, n_labeled: N, ...overrides}`` in a spec becomes the entry's data
block (:func:`data_block`) with ``split.n_labeled = N`` and the overrides deep-merged on top
(a ``null`` deletes a key of the entry). The priors a spec asks the loader to compute
(``exact``, ``data.prior``) are :mod:`pubench.registry.priors`; the class counts ``exact``
needs come from the data set table (:func:`class_counts`).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pubench.registry.spec import SpecError, deep_merge

REF_KEY = "pu_dataset"


def catalogue_path() -> Path:
    return Path(__file__).resolve().parents[1] / "data" / "pu_datasets.yaml"


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime: int):
    from pydantic import ValidationError

    from pubench.registry.schema import CatalogueModel
    from pubench.utils.validation import first_problem
    from pubench.utils.yamlio import read_yaml

    try:
        return CatalogueModel.model_validate(read_yaml(Path(path)))
    except ValidationError as e:
        raise SpecError(path, *first_problem(e, CatalogueModel)) from None


def catalogue():
    """The validated catalogue (:class:`pubench.registry.schema.CatalogueModel`)."""
    path = catalogue_path()
    if not path.exists():
        raise SpecError(str(path), "(file)", "no PU data set catalogue (a spec names a pu_dataset)")
    return _load(str(path), path.stat().st_mtime_ns)


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def lookup(name: str):
    """(printed name, entry) by the printed name or an alias, case and punctuation ignored;
    ``KeyError`` with the closest name otherwise."""
    entries = catalogue().datasets
    key = _norm(name)
    for printed, entry in entries.items():
        if key == _norm(printed) or key in {_norm(a) for a in entry.aliases}:
            return printed, entry
    close = difflib.get_close_matches(name, list(entries), n=1)
    raise KeyError(f"unknown PU data set {name!r}" + (f"; did you mean {close[0]!r}?" if close else
                                                       f" (known: {', '.join(entries)})"))


def data_block(name: str, n_labeled: int | None = None) -> dict[str, Any]:
    """The task ``data`` params of PU data set ``name``: each key only where the entry has it."""
    _, e = lookup(name)
    split = {"kind": "pu", **e.split.model_dump(exclude_none=True)}
    if n_labeled is not None:
        split["n_labeled"] = n_labeled
    labels: dict[str, Any] = {"positive": list(e.positive)}
    if e.negative is not None:
        labels["negative"] = list(e.negative)
    prior = e.prior if isinstance(e.prior, float) else None
    out = {"dataset": e.dataset, "input_size": e.input_size, "labels": labels, "prior": prior, "split": split,
           "train_split": e.train_split, "test_split": e.test_split, "n_test": e.n_test, "validation": e.validation,
           "test_sampling": e.test_sampling}
    return {k: v for k, v in out.items() if v is not None}


def expand_pu_datasets(node: Any, file: str, where: str) -> Any:
    """``node`` with every ``data: {pu_dataset: ...}`` reference replaced by its data block."""
    if isinstance(node, list):
        return [expand_pu_datasets(v, file, f"{where}[{i}]") for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return node
    if REF_KEY in node:
        raise SpecError(file, f"{where}.{REF_KEY}", "a pu_dataset reference belongs in a `data` mapping")
    out = {}
    for k, v in node.items():
        here = f"{where}.{k}"
        if k == "data" and isinstance(v, dict) and REF_KEY in v:
            v = _expand_ref(v, file, here)
        out[k] = expand_pu_datasets(v, file, here)
    return out


def _expand_ref(ref: dict[str, Any], file: str, where: str) -> dict[str, Any]:
    rest = dict(ref)
    name, n_labeled = rest.pop(REF_KEY), rest.pop("n_labeled", None)
    if not isinstance(name, str):
        raise SpecError(file, f"{where}.{REF_KEY}", f"expected the name of a PU data set, got {name!r}")
    if n_labeled is not None and (isinstance(n_labeled, bool) or not isinstance(n_labeled, int)):
        raise SpecError(file, f"{where}.n_labeled", f"expected int, got {n_labeled!r}")
    if n_labeled is not None and "n_labeled" in (rest.get("split") or {}):
        raise SpecError(file, f"{where}.n_labeled", "given twice (also as split.n_labeled)")
    try:
        block = data_block(name, n_labeled)
    except KeyError as e:
        raise SpecError(file, f"{where}.{REF_KEY}", str(e.args[0])) from None
    return deep_merge(block, rest, keep_nulls=True)


def class_counts(names: Iterable[str]) -> dict[str, list[int]]:
    """Images per class of the training split of each data set in ``names`` that the data set
    table gives them for (:attr:`pubench.data.base.Dataset.class_counts`; a name no data set
    registers, e.g. a planned one, has none). Imports only the modules registering them."""
    from pubench.data import DATASETS
    from pubench.registry.units import known

    out = {}
    for name in sorted(names):
        counts = getattr(DATASETS.get(name), "class_counts", None) if name in known("dataset") else None
        if counts is not None:
            out[name] = list(counts)
    return out
