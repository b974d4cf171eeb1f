"""The PU data sets of the papers, defined once (``pubench/data/pu_datasets.yaml``), and the
class priors a spec asks the loader to compute.

* ``data: {pu_dataset: NAME, n_labeled: N, ...overrides}`` in a spec becomes the entry's
  data block (:func:`data_block`) with ``split.n_labeled = N`` and the overrides deep-merged
  on top (a ``null`` deletes a key of the entry).
* ``prior`` / ``tau_plus`` may be ``exact``: the exact class prior of the unlabeled set
  of the cell's split (001 App. A.1.1, from the catalogue's class counts), or
  ``data.prior``: the cell's ``data.prior``. Both are evaluated where they are written: in
  ``experiment`` on the cell's paper-tier config, in a tier on that tier's config.
"""

from __future__ import annotations

import difflib
import functools
import re
from pathlib import Path
from typing import Any

from pubench.errors import PubenchError
from pubench.registry.spec import SpecError, deep_merge
from pubench.utils.priors import exact_prior

REF_KEY = "pu_dataset"
PRIOR_KEYS = ("prior", "tau_plus")
EXACT, DATA_PRIOR = "exact", "data.prior"


def catalogue_path() -> Path:
    return Path(__file__).resolve().parents[1] / "data" / "pu_datasets.yaml"


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime: int):
    from pydantic import ValidationError

    from pubench.registry.loader import read_yaml
    from pubench.registry.schema import CatalogueModel
    from pubench.utils.validation import first_problem

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


# ------------------------------------------------------------------ computed priors
class PriorError(PubenchError, ValueError):
    """``exact`` or ``data.prior`` cannot be evaluated for this cell."""


def exact_prior_of(data: dict[str, Any]) -> float:
    """The exact positive fraction of the unlabeled set of the split ``data`` describes.

    Single training set (001 A.1.1): (P* - n_P) / (P* + N* - n_P), P* and N* the training
    images of the positive and negative classes; case-control: the split's
    ``unlabeled_prior``, or P* / (P* + N*) when the unlabeled set is the whole training split.
    """
    counts = catalogue().class_counts.get(data.get("dataset"))
    labels, split = data.get("labels") or {}, data.get("split") or {}
    if counts is None:
        raise PriorError(f"no class counts for data set {data.get('dataset')!r} in the catalogue")
    if data.get("subset"):
        raise PriorError("a subset's exact prior is the realized split's: write null (computed when the job runs)")
    if split.get("kind") != "pu" or "positive" not in labels:
        raise PriorError("needs a PU split (split.kind pu) and labels.positive")
    pos = set(labels["positive"])
    neg = set(labels["negative"]) if labels.get("negative") is not None else set(range(len(counts))) - pos
    n_pos, n_neg = sum(counts[c] for c in pos), sum(counts[c] for c in neg)
    if split.get("scheme") == "single_training_set":
        if not isinstance(split.get("n_labeled"), int):
            raise PriorError("a single-training-set split needs split.n_labeled")
        return exact_prior(n_pos, n_neg, split["n_labeled"])
    if split.get("unlabeled_prior") is not None:
        return split["unlabeled_prior"]
    if split.get("unlabeled_split") or split.get("n_unlabeled", n_pos + n_neg) != n_pos + n_neg:
        raise PriorError("the unlabeled set is not the whole training split: its exact prior is unknown")
    return n_pos / (n_pos + n_neg)


def evaluate_priors(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with every ``prior`` / ``tau_plus`` token replaced by its value
    (``data.prior`` itself first, so the others may refer to it)."""
    data = params.get("data")
    if isinstance(data, dict) and isinstance(data.get("prior"), str):
        if data["prior"] != EXACT:
            raise PriorError(f"data.prior: {data['prior']!r} is not a number or {EXACT!r}")
        params = {**params, "data": {**data, "prior": exact_prior_of(data)}}
    return _replace(params, params.get("data") or {}, "")


def _replace(node: Any, data: dict[str, Any], where: str) -> Any:
    if isinstance(node, list):
        return [_replace(v, data, where) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        here = f"{where}.{k}" if where else k
        if k in PRIOR_KEYS and isinstance(v, str):
            if v == EXACT:
                v = exact_prior_of(data)
            elif v == DATA_PRIOR and isinstance(data.get("prior"), (int, float)):
                v = data["prior"]
            else:
                raise PriorError(f"{here}: {v!r} is not a number, {EXACT!r} or {DATA_PRIOR!r}"
                                 + (" (this cell's data has no prior)" if v == DATA_PRIOR else ""))
        out[k] = _replace(v, data, here)
    return out
