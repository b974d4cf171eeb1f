"""Test metrics in %: ``acc``; for binary tasks also ``precision``, ``recall``, ``f1``,
``auc`` (ROC) and ``ap`` (average precision), the positive class being 1.

Binary predictions threshold the score (logit) at 0. Precision/recall/F1 of a classifier
that predicts no positive are 0 (scikit-learn's ``zero_division=0``). AUC and AP need both
classes in the test set; with one class they are undefined and raise.
"""

from __future__ import annotations

import numpy as np
import torch

from pubench.utils.lazy import lazy

skm = lazy("sklearn.metrics")  # 0.3-2 s to import: loaded by the first metric, not by every job process (issue 34)


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def binary_metrics(scores, y_true) -> dict[str, float]:
    """``scores`` (n,) real-valued (positive = score > 0); ``y_true`` (n,) in {0, 1}."""
    s = _np(scores).astype(np.float64).reshape(-1)
    y = _np(y_true).astype(np.int64).reshape(-1)
    if s.shape != y.shape:
        raise ValueError(f"scores {s.shape} and labels {y.shape} differ")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("binary metrics need labels in {0, 1}")
    if len(np.unique(y)) < 2:
        raise ValueError("the test set holds one class only: AUC / AP are undefined")
    pred = (s > 0).astype(np.int64)
    return {
        "acc": 100.0 * float((pred == y).mean()),
        "precision": 100.0 * float(skm.precision_score(y, pred, zero_division=0)),
        "recall": 100.0 * float(skm.recall_score(y, pred, zero_division=0)),
        "f1": 100.0 * float(skm.f1_score(y, pred, zero_division=0)),
        "auc": 100.0 * float(skm.roc_auc_score(y, s)),
        "ap": 100.0 * float(skm.average_precision_score(y, s)),
    }


def multiclass_metrics(logits, y_true) -> dict[str, float]:
    """``logits`` (n, C); accuracy of the arg-max."""
    pred = _np(logits).argmax(axis=1)
    y = _np(y_true).reshape(-1)
    return {"acc": 100.0 * float((pred == y).mean())}


def evaluate_scores(outputs: torch.Tensor, y_true: torch.Tensor, n_classes: int) -> dict[str, float]:
    """Binary (``n_classes == 2``, ``outputs`` (n,) or (n, 1) scores) or multi-class metrics."""
    if n_classes == 2:
        return binary_metrics(outputs.reshape(-1), y_true)
    return multiclass_metrics(outputs, y_true)
