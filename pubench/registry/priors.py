"""The class priors a spec asks the loader to compute (pure functions: no file is read).

``prior`` / ``tau_plus`` may be ``exact``: the exact class prior of the unlabeled set of the
cell's split (001 App. A.1.1), from the class counts of the cell's data set (``counts``:
data set -> images per class of its training split, from the data set table,
:attr:`pubench.data.base.Dataset.class_counts`; the loader hands each spec the counts of the
data sets it names); or ``data.prior``: the cell's ``data.prior``. Both are evaluated where
they are written: in ``experiment`` on the cell's paper-tier config, in a tier on that
tier's config (:meth:`pubench.registry.spec.Spec.resolve`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pubench.errors import PubenchError
from pubench.utils.priors import exact_prior

PRIOR_KEYS = ("prior", "tau_plus")
EXACT, DATA_PRIOR = "exact", "data.prior"

ClassCounts = Mapping[str, Sequence[int]]


class PriorError(PubenchError, ValueError):
    """``exact`` or ``data.prior`` cannot be evaluated for this cell."""


def exact_prior_of(data: dict[str, Any], counts: ClassCounts) -> float:
    """The exact positive fraction of the unlabeled set of the split ``data`` describes.

    Single training set (001 A.1.1): (P* - n_P) / (P* + N* - n_P), P* and N* the training
    images of the positive and negative classes; case-control: the split's
    ``unlabeled_prior``, or P* / (P* + N*) when the unlabeled set is the whole training split.
    """
    if not isinstance(data, dict):
        raise PriorError(f"data is a {type(data).__name__}, not a mapping of the data set, its labels and split")
    dataset = data.get("dataset")
    per_class = counts.get(dataset) if isinstance(dataset, str) else None
    labels, split = data.get("labels") or {}, data.get("split") or {}
    if per_class is None:
        raise PriorError(f"no class counts for data set {dataset!r} (its entry in pubench/data records none)")
    if data.get("subset"):
        raise PriorError("a subset's exact prior is the realized split's: write null (computed when the job runs)")
    if not isinstance(labels, dict) or not isinstance(split, dict) or split.get("kind") != "pu" \
            or "positive" not in labels:
        raise PriorError("needs a PU split (split.kind pu) and labels.positive")
    try:
        pos = set(labels["positive"])
        neg = set(labels["negative"]) if labels.get("negative") is not None else set(range(len(per_class))) - pos
        n_pos, n_neg = sum(per_class[c] for c in pos), sum(per_class[c] for c in neg)
    except (TypeError, IndexError) as e:  # not lists of class indices of the data set
        raise PriorError(f"labels.positive / labels.negative must list class indices of {dataset} "
                         f"(0-{len(per_class) - 1}): {e}") from None
    if split.get("scheme") == "single_training_set":
        if not isinstance(split.get("n_labeled"), int):
            raise PriorError("a single-training-set split needs split.n_labeled")
        return exact_prior(n_pos, n_neg, split["n_labeled"])
    if split.get("unlabeled_prior") is not None:
        return split["unlabeled_prior"]
    if split.get("unlabeled_split") or split.get("n_unlabeled", n_pos + n_neg) != n_pos + n_neg:
        raise PriorError("the unlabeled set is not the whole training split: its exact prior is unknown")
    return n_pos / (n_pos + n_neg)


def evaluate_priors(params: dict[str, Any], counts: ClassCounts) -> dict[str, Any]:
    """``params`` with every ``prior`` / ``tau_plus`` token replaced by its value
    (``data.prior`` itself first, so the others may refer to it)."""
    data = params.get("data")
    if isinstance(data, dict) and isinstance(data.get("prior"), str):
        if data["prior"] != EXACT:
            raise PriorError(f"data.prior: {data['prior']!r} is not a number or {EXACT!r}")
        params = {**params, "data": {**data, "prior": exact_prior_of(data, counts)}}
    return _replace(params, params.get("data") or {}, counts, "")


def _replace(node: Any, data: dict[str, Any], counts: ClassCounts, where: str) -> Any:
    if isinstance(node, list):
        return [_replace(v, data, counts, where) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        here = f"{where}.{k}" if where else k
        if k in PRIOR_KEYS and isinstance(v, str):
            if v == EXACT:
                v = exact_prior_of(data, counts)
            elif v == DATA_PRIOR and isinstance(data.get("prior"), (int, float)):
                v = data["prior"]
            else:
                raise PriorError(f"{here}: {v!r} is not a number, {EXACT!r} or {DATA_PRIOR!r}"
                                 + (" (this cell's data has no prior)" if v == DATA_PRIOR else ""))
        out[k] = _replace(v, data, counts, here)
    return out


def has_prior_tokens(node: Any) -> bool:
    """Whether ``node`` (a layer of a spec) holds a ``prior`` / ``tau_plus`` to compute."""
    if isinstance(node, dict):
        return any((k in PRIOR_KEYS and isinstance(v, str)) or has_prior_tokens(v) for k, v in node.items())
    if isinstance(node, list):
        return any(has_prior_tokens(v) for v in node)
    return False


def datasets_named(node: Any) -> set[str]:
    """Every data set name a spec fragment gives as ``data.dataset`` (the data sets whose
    class counts its cells may need)."""
    out: set[str] = set()
    if isinstance(node, dict):
        data = node.get("data")
        if isinstance(data, dict) and isinstance(data.get("dataset"), str):
            out.add(data["dataset"])
        for v in node.values():
            out |= datasets_named(v)
    elif isinstance(node, list):
        for v in node:
            out |= datasets_named(v)
    return out
