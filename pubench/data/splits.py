"""PU / PNU splits as data, recorded in every result (issue 5, item 2).

:func:`make_split` turns original class ids into what training sees::

    labels = {positive: [0, 1, 8, 9]}                       # binarization (negative: default all other classes)
    split  = {kind: pu, n_labeled: 1000, scheme: single_training_set}   # or scheme: case_control
           | {kind: pnu, labeled_fraction: 0.01}            # PNU (stratified by the binary class unless stratified: false)
           | {kind: none}                                   # no labels seen (self-supervised / multi-class)

and returns a :class:`Split`. Every draw uses the ``numpy.random.Generator`` passed in (the
job's data seed), so every method of a row sees the same split, and the split's
``checksum`` proves it.

Rows of the Split (``y_true``, ``observed``) are *training examples*; ``Split.index`` maps
each to its row of the data set (``images.x[split.index]``). For a single training set
it is every (kept) row once; for case-control it is the labeled positives followed by the
unlabeled sample, so a labeled positive also appears, unlabeled, in the unlabeled sample
(two independent samples: X_L ~ p(x | y=1), X_U ~ p(x)).

Schemes (see docs/data.md for the decisions):

* ``single_training_set`` (001 Sec. 5, "single data set" of Bekker & Davis): n_P of the
  training positives are drawn uniformly (SCAR) and labeled, every other training row
  is unlabeled. Prior = positive fraction of the unlabeled rows, 001 A.1.1:
  ``pi* = (P* - n_P) / (P* + N* - n_P)``.
* ``case_control`` (003 Sec. 3, 004 Sec. 3): the labeled set is n_P positives drawn
  uniformly from the positives; the unlabeled set is the whole training set (or, with
  ``n_unlabeled``, a uniform sample of that size from it). Prior = its positive fraction,
  ``P / (P + N)`` for the whole set. If the data hold rows with unknown labels (``y < 0``,
  STL-10's ``unlabeled`` split concatenated to ``train``), those rows alone form the
  unlabeled set and the prior must be given (``split.prior``).

Optional split keys: ``n_unlabeled`` (size of the unlabeled set; drawn uniformly),
``unlabeled_prior`` (with ``n_unlabeled``: draw the unlabeled set with exactly this
positive fraction, as 003's Fig. 10 ablations do), ``prior`` (the prior to use instead of
the exact one, e.g. a KM2 estimate; the exact one stays in ``counts``), ``stratified``
(pnu), ``unlabeled_split`` (recorded only: which data split the task used for X_U).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from pubench.utils.lazy import lazy
from pubench.utils.priors import exact_prior  # noqa: F401  (part of the splits API)

np = lazy("numpy")  # loaded on first use: importing this module stays cheap (issue 34)
torch = lazy("torch")

SPLIT_KINDS = ("pu", "pnu", "none")
SCHEMES = ("single_training_set", "case_control")
_KEYS = {
    "pu": {"kind", "n_labeled", "scheme", "n_unlabeled", "unlabeled_prior", "prior", "unlabeled_split"},
    "pnu": {"kind", "labeled_fraction", "n_labeled", "stratified", "prior", "unlabeled_split"},
    "none": {"kind", "prior", "unlabeled_split"},
}


@dataclass
class Split:
    """A realized split. Rows are training examples; ``index`` maps them to data-set rows."""

    y_true: torch.Tensor  # int64 (m,): 1 positive, 0 negative (binarized); -1 label unknown; original ids if not binarized
    observed: torch.Tensor  # int64 (m,): PU 1 labeled positive / 0 unlabeled; PNU 1 / 0 labeled, -1 unlabeled; none: -1
    prior: float | None  # class prior for risks / losses: positive fraction of the unlabeled set (None: multi-class)
    counts: dict  # realized counts (and the exact / population priors)
    definition: dict  # the resolved labels + split config
    checksum: str  # sha256 over (index, observed, y_true)
    index: torch.Tensor = None  # int64 (m,): data-set row of each training example

    def __len__(self) -> int:
        return int(self.y_true.shape[0])

    @property
    def labeled(self) -> torch.Tensor:
        """Boolean mask of labeled training examples (PU: the labeled positives)."""
        kind = self.definition["split"]["kind"]
        return self.observed == 1 if kind == "pu" else self.observed >= 0 if kind == "pnu" else \
            torch.zeros_like(self.observed, dtype=torch.bool)

    def record(self) -> dict:
        """What a result record carries: definition, counts, prior, checksum."""
        return {"definition": self.definition, "counts": self.counts, "prior": self.prior,
                "checksum": self.checksum}


# ---------------------------------------------------------------------------- labels
def resolve_labels(labels: dict | None, classes: list[str] | None = None) -> dict | None:
    """``{positive: [ids], negative: [ids] | None}``; class names are looked up in ``classes``."""
    if labels is None:
        return None
    if not isinstance(labels, dict) or "positive" not in labels:
        raise ValueError(f"labels must be {{positive: [...], negative: [...] (optional)}}, got {labels!r}")
    extra = set(labels) - {"positive", "negative"}
    if extra:
        raise ValueError(f"unknown key(s) in labels: {sorted(extra)}")

    def ids(v, what):
        if v is None:
            return None
        out = []
        for c in v:
            if isinstance(c, str) and not c.lstrip("-").isdigit():
                if classes is None or c not in classes:
                    raise ValueError(f"labels.{what}: unknown class name {c!r}" +
                                     (f" (classes: {classes})" if classes else ""))
                out.append(classes.index(c))
            else:
                out.append(int(c))
        if len(set(out)) != len(out) or any(i < 0 for i in out):
            raise ValueError(f"labels.{what} must list distinct class ids >= 0, got {v!r}")
        return sorted(out)

    pos, neg = ids(labels["positive"], "positive"), ids(labels.get("negative"), "negative")
    if not pos:
        raise ValueError("labels.positive is empty")
    if neg is not None and set(pos) & set(neg):
        raise ValueError(f"labels: classes {sorted(set(pos) & set(neg))} are both positive and negative")
    return {"positive": pos, "negative": neg}


def binarize(y: torch.Tensor, positive: list[int], negative: list[int] | None = None) -> torch.Tensor:
    """1 for classes in ``positive``, 0 for the others (or only for ``negative`` when given),
    -1 for rows with an unknown label (``y < 0``) or a class in neither list."""
    y = torch.as_tensor(y, dtype=torch.int64)
    pos = torch.isin(y, torch.as_tensor(list(positive), dtype=torch.int64))
    if negative is None:
        neg = (y >= 0) & ~pos
    else:
        neg = torch.isin(y, torch.as_tensor(list(negative), dtype=torch.int64))
    out = torch.full_like(y, -1)
    out[neg] = 0
    out[pos] = 1
    return out


def restrict(images, labels: dict | None, classes: list[str] | None = None):
    """The rows of an ImageSet whose class is in ``positive`` or ``negative`` (test sets of
    definitions that use only some classes, e.g. CIFAR-0 dog vs cat), and the rows of an
    unknown class (``y < 0``: STL-10's unlabeled split, the case-control pool that
    :func:`make_split` draws from); unchanged when ``negative`` is not given."""
    lab = resolve_labels(labels, classes or images.classes)
    if lab is None or lab["negative"] is None:
        return images
    keep = torch.nonzero((binarize(images.y, lab["positive"], lab["negative"]) >= 0) | (images.y < 0)).squeeze(1)
    return images.take(keep, note=f"classes {lab['positive']} vs {lab['negative']} only")


# ---------------------------------------------------------------------------- splits
def _choice(rng: np.random.Generator, pool: np.ndarray, k: int) -> np.ndarray:
    """k distinct elements of pool, drawn uniformly, returned sorted."""
    if k == len(pool):
        return np.sort(pool)
    return np.sort(rng.choice(pool, size=k, replace=False))


def _count(v: Any, what: str, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) and not (isinstance(v, float) and v.is_integer()):
        raise ValueError(f"split.{what} must be an integer, got {v!r}")
    v = int(v)
    if v < lo:
        raise ValueError(f"split.{what} must be >= {lo}, got {v}")
    return v


def _fraction(v: Any, what: str, lo_open: bool = True) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"split.{what} must be a number in (0, 1], got {v!r}")
    v = float(v)
    if not (0.0 < v <= 1.0 if lo_open else 0.0 <= v <= 1.0):
        raise ValueError(f"split.{what} must be in {'(0, 1]' if lo_open else '[0, 1]'}, got {v}")
    return v


def _largest_remainder(total: int, weights: np.ndarray) -> np.ndarray:
    """Integers proportional to ``weights`` summing to ``total`` (ties: lower index first)."""
    quota = total * weights / weights.sum()
    base = np.floor(quota).astype(np.int64)
    rest = total - int(base.sum())
    order = np.lexsort((np.arange(len(weights)), -(quota - base)))
    base[order[:rest]] += 1
    return base


def make_split(y: torch.Tensor, labels: dict | None, split: dict | None, rng: np.random.Generator,
               classes: list[str] | None = None, prior: float | None = None) -> Split:
    """Build the split of the data set with labels ``y`` (see the module docstring).

    ``y``: original class ids (int64, negative = unknown label). ``labels``: binarization
    or None (multi-class; only ``kind: none``). ``classes``: class names, to allow names in
    ``labels``. ``prior``: the class prior to use instead of the exact one (a spec's
    ``data.prior``, e.g. a printed or estimated value; same as ``split.prior``). Raises
    ValueError on any inconsistent request (unknown kind or key, more labeled positives
    than positives, a prior that cannot be computed, ...). Each kind draws its rows in its
    own function (:data:`KIND_SPLITS`); the prior is resolved after (:func:`_resolve_prior`).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("make_split needs a numpy.random.Generator (the job's data seed)")
    split = dict(split or {"kind": "none"})
    kind = split.get("kind")
    if kind not in SPLIT_KINDS:
        raise ValueError(f"unknown split kind {kind!r}; expected one of {list(SPLIT_KINDS)}")
    extra = set(split) - _KEYS[kind]
    if extra:
        raise ValueError(f"unknown key(s) for split kind {kind!r}: {sorted(extra)}; allowed: {sorted(_KEYS[kind])}")
    lab = resolve_labels(labels, classes)
    if lab is None and kind != "none":
        raise ValueError(f"split kind {kind!r} needs a binarization (labels: {{positive: [...]}}); "
                         "a multi-class data set only allows kind: none")
    rows = _rows(y, lab)
    given_prior, sp = None, split.get("prior")
    if sp is not None and prior is not None and float(sp) != float(prior):
        raise ValueError(f"two different priors given: split.prior = {sp}, prior = {prior}")
    if (sp if sp is not None else prior) is not None:
        given_prior = _fraction(sp if sp is not None else prior, "prior", lo_open=False)
    resolved: dict[str, Any] = {"kind": kind}
    index, observed, prior_exact = KIND_SPLITS[kind](rows, split, rng, resolved)
    prior, how = _resolve_prior(rows, kind, resolved, prior_exact, given_prior)
    counts = rows.counts
    index_t = torch.from_numpy(np.ascontiguousarray(index, dtype=np.int64))
    y_true = torch.from_numpy(np.ascontiguousarray(rows.ybin[index], dtype=np.int64))
    observed_t = torch.from_numpy(np.ascontiguousarray(observed, dtype=np.int64))
    return Split(y_true=y_true, observed=observed_t, prior=None if prior is None else float(prior),
                 counts={k: (int(v) if isinstance(v, (np.integer,)) else v) for k, v in counts.items()},
                 definition={"labels": lab, "split": resolved, "prior": how},
                 checksum=split_checksum(index_t, observed_t, y_true), index=index_t)


@dataclass
class _Rows:
    """The data set's rows as a split sees them: the binarization ``lab`` (None:
    multi-class), binarized labels ``ybin`` (-1: a class outside it, or unknown),
    ``unknown`` labels, the ``kept`` rows (of a class the binarization names), and the
    ``counts`` the split records, filled as it is drawn."""

    lab: dict | None
    ybin: np.ndarray
    unknown: np.ndarray
    kept: np.ndarray
    counts: dict[str, Any]

    @property
    def rows(self) -> np.ndarray:
        return np.nonzero(self.kept)[0]

    @property
    def pos_rows(self) -> np.ndarray:
        return np.nonzero(self.kept & (self.ybin == 1))[0]

    @property
    def neg_rows(self) -> np.ndarray:
        return np.nonzero(self.kept & (self.ybin == 0))[0] if self.lab is not None else np.zeros(0, dtype=np.int64)


def _rows(y: torch.Tensor, lab: dict | None) -> _Rows:
    y_np = torch.as_tensor(y, dtype=torch.int64).numpy()
    n = len(y_np)
    unknown = y_np < 0
    if lab is not None:
        ybin = binarize(torch.from_numpy(y_np), lab["positive"], lab["negative"]).numpy()
        kept = ~((ybin == -1) & ~unknown)  # drop rows of classes outside positive/negative
    else:
        ybin = y_np.copy()
        kept = np.ones(n, dtype=bool)
    out = _Rows(lab, ybin, unknown, kept, {})
    n_pos, n_neg = len(out.pos_rows), len(out.neg_rows)
    out.counts.update(n=n, n_excluded=int(n - len(out.rows)), n_unknown=int(unknown.sum()))
    if lab is not None:
        out.counts.update(n_pos=n_pos, n_neg=n_neg, prior_population=n_pos / max(1, n_pos + n_neg))
    return out


def _none_split(r: _Rows, split: dict, rng: np.random.Generator, resolved: dict):
    """Kind ``none``: every kept row, none labeled. ``(index, observed, exact prior)``."""
    index = r.rows
    r.counts.update(n_train=len(index), n_labeled=0, n_unlabeled=len(index))
    return index, np.full(len(index), -1, dtype=np.int64), r.counts["prior_population"] if r.lab is not None else None


def _pu_split(r: _Rows, split: dict, rng: np.random.Generator, resolved: dict):
    """Kind ``pu``: n_P labeled positives (SCAR) and the unlabeled set of the scheme."""
    n_l = _count(split.get("n_labeled"), "n_labeled")
    scheme = split.get("scheme", "single_training_set")
    if scheme not in SCHEMES:
        raise ValueError(f"unknown split scheme {scheme!r}; expected one of {list(SCHEMES)}")
    rows, ybin, unknown = r.rows, r.ybin, r.unknown
    candidates = np.nonzero(r.kept & (ybin == 1) & ~unknown)[0]
    if n_l > len(candidates):
        raise ValueError(f"split.n_labeled = {n_l} but the data hold only {len(candidates)} positives "
                         f"(classes {r.lab['positive']})")
    labeled = _choice(rng, candidates, n_l)
    if scheme == "single_training_set":
        unl = _draw_unlabeled(rng, np.setdiff1d(rows, labeled, assume_unique=True), ybin, unknown, split)
        index = np.sort(np.concatenate([labeled, unl]))
        observed = np.isin(index, labeled).astype(np.int64)
    else:  # case_control: the unlabeled set is the rows of unknown label, if any, else the whole set
        unl = _draw_unlabeled(rng, rows[unknown[rows]] if unknown[rows].any() else rows, ybin, unknown, split)
        index = np.concatenate([labeled, unl])
        observed = np.concatenate([np.ones(len(labeled), np.int64), np.zeros(len(unl), np.int64)])
    resolved.update(scheme=scheme, n_labeled=n_l)
    for k in ("n_unlabeled", "unlabeled_prior", "unlabeled_split"):
        if split.get(k) is not None:
            resolved[k] = split[k]
    r.counts.update(n_train=len(index), n_labeled=len(labeled), n_unlabeled=len(unl),
                    n_overlap=int(np.isin(unl, labeled).sum()))
    return index, observed, _unlabeled_counts(r.counts, ybin, unknown, unl)


def _pnu_split(r: _Rows, split: dict, rng: np.random.Generator, resolved: dict):
    """Kind ``pnu``: a fraction (or a number) of the known rows labeled, stratified by class
    unless ``stratified: false``; every kept row is a training row."""
    frac, n_lab = split.get("labeled_fraction"), split.get("n_labeled")
    if (frac is None) == (n_lab is None):
        raise ValueError("split kind pnu needs exactly one of labeled_fraction, n_labeled")
    stratified = split.get("stratified", True)
    if not isinstance(stratified, bool):
        raise ValueError(f"split.stratified must be true or false, got {stratified!r}")
    rows, ybin = r.rows, r.ybin
    known = np.nonzero(r.kept & ~r.unknown)[0]
    groups = [r.pos_rows, r.neg_rows] if stratified else [known]
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    if frac is not None:
        frac = _fraction(frac, "labeled_fraction")
        take = np.array([math.floor(frac * s + 0.5) for s in sizes], dtype=np.int64)
        resolved["labeled_fraction"] = frac
    else:
        n_lab = _count(n_lab, "n_labeled")
        if n_lab > len(known):
            raise ValueError(f"split.n_labeled = {n_lab} but the data hold only {len(known)} labeled rows")
        take = _largest_remainder(n_lab, sizes.astype(float)) if sizes.sum() else sizes
        resolved["n_labeled"] = n_lab
    resolved["stratified"] = stratified
    labeled = np.sort(np.concatenate([_choice(rng, g, int(k)) for g, k in zip(groups, take)]))
    observed = np.full(len(ybin), -1, dtype=np.int64)
    observed[labeled] = ybin[labeled]
    unl = np.setdiff1d(rows, labeled, assume_unique=True)
    r.counts.update(n_train=len(rows), n_labeled=len(labeled), n_labeled_pos=int((ybin[labeled] == 1).sum()),
                    n_labeled_neg=int((ybin[labeled] == 0).sum()), n_unlabeled=len(unl))
    return rows, observed[rows], _unlabeled_counts(r.counts, ybin, r.unknown, unl)


#: split kind -> the function that draws it: ``(rows, split, rng, resolved) -> (index, observed, exact prior)``
KIND_SPLITS = {"none": _none_split, "pu": _pu_split, "pnu": _pnu_split}


def _resolve_prior(r: _Rows, kind: str, resolved: dict, prior_exact: float | None,
                   given_prior: float | None) -> tuple[float | None, str]:
    """``(prior, how it was found)``: the given one, else the exact one (recorded in
    ``r.counts`` either way)."""
    counts = r.counts
    empty_u = kind != "none" and counts["n_unlabeled"] == 0
    if empty_u:  # everything labeled (e.g. PNU with labeled_fraction 1.0): the data's positive fraction
        prior_exact = counts["prior_population"]
    if kind != "none" or r.lab is not None:
        counts["prior_exact"] = prior_exact
    if given_prior is not None:
        resolved["prior"] = given_prior
        return given_prior, "given"
    if prior_exact is None and r.lab is not None:
        raise ValueError(f"the unlabeled set holds {counts.get('n_unlabeled_unknown', 0)} rows with unknown labels, "
                         "so its class prior cannot be computed: give split.prior (e.g. the paper's estimate)")
    how = {"none": "positive fraction of the data" if r.lab is not None else "none (multi-class)",
           "empty": "positive fraction of the data (no unlabeled rows)",
           "pnu": "positive fraction of the unlabeled set",
           "pu": "positive fraction of the unlabeled set" + (
               " = 001 A.1.1 (P - n_P)/(P + N - n_P)" if resolved.get("scheme") == "single_training_set"
               and "n_unlabeled" not in resolved else "")}["empty" if empty_u else kind]
    return prior_exact, how


def _draw_unlabeled(rng, pool: np.ndarray, ybin: np.ndarray, unknown: np.ndarray, split: dict) -> np.ndarray:
    n_u, pi_u = split.get("n_unlabeled"), split.get("unlabeled_prior")
    if n_u is None:
        if pi_u is not None:
            raise ValueError("split.unlabeled_prior needs split.n_unlabeled")
        return np.sort(pool)
    n_u = _count(n_u, "n_unlabeled")
    if n_u > len(pool):
        raise ValueError(f"split.n_unlabeled = {n_u} but only {len(pool)} rows can be unlabeled "
                         "(set it to null, or lower it, when a tier subsamples the data)")
    if pi_u is None:
        return _choice(rng, pool, n_u)
    pi_u = _fraction(pi_u, "unlabeled_prior", lo_open=False)
    if unknown[pool].any():
        raise ValueError("split.unlabeled_prior needs known labels for the unlabeled pool")
    n_pos = math.floor(pi_u * n_u + 0.5)
    p, q = pool[ybin[pool] == 1], pool[ybin[pool] == 0]
    if n_pos > len(p) or n_u - n_pos > len(q):
        raise ValueError(f"split: n_unlabeled = {n_u} at unlabeled_prior = {pi_u} needs {n_pos} positives and "
                         f"{n_u - n_pos} negatives; the pool has {len(p)} and {len(q)}")
    return np.sort(np.concatenate([_choice(rng, p, n_pos), _choice(rng, q, n_u - n_pos)]))


def _unlabeled_counts(counts: dict, ybin: np.ndarray, unknown: np.ndarray, unl: np.ndarray) -> float | None:
    up, un, uu = int((ybin[unl] == 1).sum()), int((ybin[unl] == 0).sum()), int(unknown[unl].sum())
    counts.update(n_unlabeled_pos=up, n_unlabeled_neg=un, n_unlabeled_unknown=uu)
    if uu or up + un == 0:
        return None
    return up / (up + un)


def split_checksum(index: torch.Tensor, observed: torch.Tensor, y_true: torch.Tensor) -> str:
    """sha256 over the training rows (data-set indices, in order), what is observed of them
    and their binarized labels: equal iff two methods trained on the same split."""
    h = hashlib.sha256(b"pubench-split-v1")
    for name, t in (("index", index), ("observed", observed), ("y_true", y_true)):
        h.update(name.encode())
        h.update(np.ascontiguousarray(t.numpy(), dtype="<i8").tobytes())
    return h.hexdigest()


# ---------------------------------------------------------------------------- subsets
def subset_indices(y: torch.Tensor, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` row indices (sorted) stratified by class (largest-remainder allocation,
    uniform within each class; unknown labels are one more stratum)."""
    y_np = torch.as_tensor(y, dtype=torch.int64).numpy()
    n = _count(n, "subset size", lo=1)
    if n >= len(y_np):
        return np.arange(len(y_np))
    cls, inv = np.unique(y_np, return_inverse=True)
    sizes = np.bincount(inv, minlength=len(cls))
    take = _largest_remainder(n, sizes.astype(float))
    parts = [_choice(rng, np.nonzero(inv == c)[0], int(k)) for c, k in enumerate(take)]
    return np.sort(np.concatenate(parts))


def subset(images, n: int, rng: np.random.Generator):
    """A stratified, seeded subsample of ``n`` images (reduced tiers); all when n >= len."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError("subset needs a numpy.random.Generator (the job's data seed)")
    if n >= len(images):
        return images
    idx = subset_indices(images.y, n, rng)
    return images.take(idx, note=f"stratified subset of {len(idx)} of {len(images)} (seeded)")


def holdout_indices(y: torch.Tensor, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(kept, held out) sorted row indices; the held-out part is a stratified ``fraction``
    of the rows (e.g. 004's clean validation set, 10% of the training examples)."""
    y = torch.as_tensor(y, dtype=torch.int64)
    fraction = _fraction(fraction, "validation fraction")
    held = subset_indices(y, max(1, math.floor(fraction * len(y) + 0.5)), rng)
    return np.setdiff1d(np.arange(len(y)), held, assume_unique=True), held


def balanced_indices(y_bin: torch.Tensor, rng: np.random.Generator) -> np.ndarray:
    """Sorted rows with as many positives as negatives (the larger class is subsampled
    uniformly); rows with ``y_bin < 0`` are left out. For ``test_sampling: balanced``."""
    y_np = torch.as_tensor(y_bin, dtype=torch.int64).numpy()
    p, q = np.nonzero(y_np == 1)[0], np.nonzero(y_np == 0)[0]
    k = min(len(p), len(q))
    return np.sort(np.concatenate([_choice(rng, p, k), _choice(rng, q, k)]))

