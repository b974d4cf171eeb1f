"""Near-one-class classifiers: a binary classifier whose test predictions (nearly) ignore a class.

A PU classifier that calls (almost) nothing positive, or (almost) everything, has an
accuracy that is mostly a class share, not what the method learned. A seed is
**near-one-class** when its test recall or its test specificity is below
:data:`NEAR_ONE_CLASS` (5%); the exact one-class case (recall 0 or specificity 0) is the
extreme of it. Reports count such seeds per cell (the ``◊k`` mark), and a regime check
``two_classes`` (:mod:`pubench.report.regime`) reads them.

Records do not store specificity; it follows from accuracy a, precision p and recall r
(fractions): with pi the positive share of the test set, TP = pi r, FP = TP (1 - p) / p,
FN = pi (1 - r), so the errors 1 - a = FN + FP = pi (1 - 2r + r / p) give pi, then
TN = a - pi r and specificity = TN / (1 - pi). Precision 1 means no false positive
(specificity 1); precision 0 means no true positive (recall 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: A seed is near-one-class when its test recall or specificity is below this fraction.
NEAR_ONE_CLASS = 0.05
_EXACT = 1e-6  # a rate this close to 0 is 0 (the record's metrics are rounded floats)

#: What :func:`near_one_class` says, from the most to the least extreme.
RECALL_0, RECALL_LOW = "recall 0", f"recall under {NEAR_ONE_CLASS:.0%} (not 0)"
SPECIFICITY_0, SPECIFICITY_LOW = "specificity 0", f"specificity under {NEAR_ONE_CLASS:.0%} (not 0)"


def class_rates(metrics: Mapping[str, float]) -> tuple[float, float] | None:
    """(recall, specificity) as fractions from a record's ``acc``, ``precision`` and ``recall``
    (in %), or ``None`` when the record has no binary classification metrics."""
    if not {"acc", "precision", "recall"} <= metrics.keys():
        return None
    a, p, r = (metrics[k] / 100.0 for k in ("acc", "precision", "recall"))
    if r <= _EXACT:
        # no true positive: specificity = TN / (1 - pi) with TN = a; pi is not identified without one
        return 0.0, float("nan")
    if p >= 1.0:
        return r, 1.0
    if p <= 0.0:  # cannot happen with r > 0; keep the record out rather than divide by zero
        return None
    pi = (1.0 - a) / (1.0 - 2.0 * r + r / p)
    if not 0.0 < pi < 1.0:
        return None
    spec = (a - pi * r) / (1.0 - pi)
    return r, min(max(spec, 0.0), 1.0)


def near_one_class(metrics: Mapping[str, float]) -> str | None:
    """Why a binary classifier's test predictions (nearly) ignore one class, or ``None``:
    ``recall 0`` / ``recall under 5%`` (almost no test positive called positive),
    ``specificity 0`` / ``specificity under 5%`` (almost every test negative called
    positive). ``None`` too for records without binary metrics."""
    rates = class_rates(metrics)
    if rates is None:
        return None
    recall, spec = rates
    if recall <= _EXACT:
        return RECALL_0
    if not math.isnan(spec) and spec <= _EXACT:
        return SPECIFICITY_0
    if recall < NEAR_ONE_CLASS - _EXACT:  # a rate derived as 4.9999999% is the 5% it was
        return RECALL_LOW
    if not math.isnan(spec) and spec < NEAR_ONE_CLASS - _EXACT:
        return SPECIFICITY_LOW
    return None


def one_class(metrics: Mapping[str, float]) -> str | None:
    """The exact case only: ``recall 0`` or ``specificity 0``, else ``None``."""
    why = near_one_class(metrics)
    return why if why in (RECALL_0, SPECIFICITY_0) else None


#: What :func:`separation` reads, and chance for both: 50 (%).
AUC, BALANCED_ACCURACY, CHANCE = "AUC", "balanced accuracy", 50.0


def separation(metrics: Mapping[str, float], rates: tuple[float, float] | None = None) -> tuple[float | None, float]:
    """How well a binary classifier's test predictions separate the classes, in %: the record's
    ``auc`` (None without one) and the balanced accuracy, (recall + specificity) / 2 from
    :func:`class_rates`. Chance is 50 for both, whatever the class shares: a classifier that
    calls both classes at random passes a near-one-class check, not this one."""
    recall, spec = rates if rates is not None else class_rates(metrics)
    spec = 1.0 if math.isnan(spec) else spec  # recall 0 with the rest unidentified: at best chance
    auc = metrics.get("auc")
    return (float(auc) if isinstance(auc, (int, float)) and math.isfinite(auc) else None), 50.0 * (recall + spec)
