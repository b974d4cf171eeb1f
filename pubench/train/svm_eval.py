"""SVM evaluation of frozen graph embeddings, as InfoGraph / HCL do (``evaluate_embedding.py``).

``svm_cv``: stratified ``folds``-fold cross-validation over the whole data set (shuffled
with ``seed``); in each fold an RBF ``sklearn.svm.SVC`` (default ``gamma="scale"``,
features as they are, no scaling, as in the InfoGraph code) whose ``C`` is chosen from
``C`` by a ``GridSearchCV`` with an inner ``inner_folds``-fold stratified split
(unshuffled, sklearn's default for ``cv=5``) on the training folds, then refit on
all training folds and scored on the held-out fold. The result is the mean accuracy
over the folds (in %), with the std over folds. Deterministic given ``seed``: the
only randomness is the outer split (``SVC`` without ``probability`` is deterministic).

InfoGraph's code uses ``random_state=None`` (unseeded folds); seeding them is our
change, so a result can be rerun exactly.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np

DEFAULT_C = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)  # InfoGraph / HCL grid


def svm_cv(
    x: np.ndarray,
    y: np.ndarray,
    *,
    seed: int,
    folds: int = 10,
    C: Sequence[float] = DEFAULT_C,
    inner_folds: int = 5,
) -> dict[str, Any]:
    """``{"acc": mean over folds (%), "acc_std": std over folds (%), "fold_acc": [...], "C": [...]}``."""
    from sklearn.metrics import accuracy_score
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.svm import SVC

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y)
    if x.ndim != 2 or len(x) != len(y):
        raise ValueError(f"x must be (n, d) and y (n,); got {x.shape}, {y.shape}")
    if not np.isfinite(x).all():
        raise FloatingPointError("embeddings contain non-finite values")
    if folds < 2 or inner_folds < 2 or not C:
        raise ValueError("need folds >= 2, inner_folds >= 2 and a non-empty C grid")
    outer = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    accs, chosen = [], []
    for train, test in outer.split(x, y):
        inner = StratifiedKFold(n_splits=inner_folds)
        search = GridSearchCV(SVC(), {"C": [float(c) for c in C]}, cv=inner, scoring="accuracy", n_jobs=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning of the large-C fits
            search.fit(x[train], y[train])
        accs.append(accuracy_score(y[test], search.predict(x[test])))
        chosen.append(float(search.best_params_["C"]))
    accs = np.asarray(accs) * 100.0
    return {
        "acc": float(accs.mean()),
        "acc_std": float(accs.std(ddof=1)) if len(accs) > 1 else 0.0,
        "fold_acc": [round(float(a), 4) for a in accs],
        "C": chosen,
    }
