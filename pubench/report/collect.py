"""Collectors: join the result store with a spec's reported cells.

Only records whose params equal the cell's current resolved config (and whose spec
version matches) are aggregated; older ones are counted as stale and left out. So are the
records of seeds nobody registered (a seed index beyond the cell's registered seeds at the
tier: its ``seeds`` and ``more_seeds``, :func:`registered_seeds`; e.g. ``run --seeds 10``
at a tier of 3): they are listed apart (:attr:`TableResult.unregistered`) and no claim,
regime check or verdict reads them until a ``more_seeds`` entry registers them. Corrupt
records never reach a report (``ResultStore.scan``). Values are kept per seed index, with
the data split each seed ran on, so claim checks can pair the seeds of two cells that saw
the same split (:mod:`pubench.report.stats`).
"""

from __future__ import annotations

import functools

import math
import statistics
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pubench.numerics import is_fast
from pubench.registry.spec import CUSTOM, ReportedCell, Spec
from pubench.report.compute import Compute, of_records
from pubench.report.oneclass import class_rates, near_one_class, separation
from pubench.report.oneclass import one_class as degenerate_classifier  # noqa: F401 (the exact case, for callers)
from pubench.store.store import ResultStore
from pubench.utils.hashing import canonical_json
from pubench.utils.plaindata import value_at


def sample_std(xs) -> float:
    """The sample standard deviation (ddof 1) in floats: ``statistics.stdev`` computes it in exact
    fractions, which a report of every table calls ten thousand times (1.7 s); this agrees with
    it to a unit in the last place, far below any printed digit (reports are byte-identical)."""
    xs = list(xs)
    n = len(xs)
    mean = math.fsum(xs) / n
    dev = [x - mean for x in xs]
    ss = math.fsum(d * d for d in dev) - math.fsum(dev) ** 2 / n
    return math.sqrt(max(ss, 0.0) / (n - 1))


class Spread:
    """Mean and sample standard deviation (ddof=1; ``None`` for a single value, which has no
    spread to show) of a subclass's ``values`` (a tuple of floats: a field or a property)."""

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def std(self) -> float | None:
        return sample_std(self.values) if self.n > 1 else None


@dataclass(frozen=True)
class CellStats(Spread):
    """One cell's metric over seeds: the value of each seed index and the data split it ran on
    (``splits[k]``: equal keys mean the same split, e.g. the job's data seed). Mean and sample
    standard deviation (ddof=1; ``None`` for a single seed, which has no spread to show)."""

    by_seed: Mapping[int, float]
    splits: Mapping[int, Hashable]

    @property
    def values(self) -> tuple[float, ...]:
        return tuple(self.by_seed[k] for k in sorted(self.by_seed))


@dataclass(frozen=True)
class CurveSeries:
    """One curve (a spec's ``curves`` entry) of one cell over seeds: per seed index its points
    (x, y) read from the record's info, and the data split the seed ran on."""

    by_seed: Mapping[int, tuple[tuple[float, float], ...]]
    splits: Mapping[int, Hashable]

    def pointwise(self) -> list[tuple[float, float, float | None, int]]:
        """(x, mean, sample std or None, n) at every x some seed has, in order of x."""
        at: dict[float, list[float]] = {}
        for pts in self.by_seed.values():
            for x, y in pts:
                at.setdefault(x, []).append(y)
        return [(x, statistics.fmean(v), sample_std(v) if len(v) > 1 else None, len(v))
                for x, v in sorted(at.items())]

    def end(self, last: bool) -> CellStats | None:
        """The curve's last (else first) point of each seed, as a cell over seeds."""
        vals = {k: (pts[-1] if last else pts[0])[1] for k, pts in self.by_seed.items() if pts}
        return CellStats(vals, {k: self.splits[k] for k in vals}) if vals else None


def info_path(info: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path of a record's info (``pu_method.pseudo_label_acc``), None if absent."""
    return value_at(info, path)


def curve_points(info: Mapping[str, Any], curve) -> tuple[tuple[float, float], ...]:
    """The (x, y) points of a spec curve in one record's info: ``y`` a list of numbers, ``x``
    ``epoch`` (1, 2, ...) or a list of the same length; null or non-finite entries skipped."""
    ys = info_path(info, curve.y)
    if not isinstance(ys, list):
        return ()
    xs = list(range(1, len(ys) + 1)) if curve.x == "epoch" else info_path(info, curve.x)
    if not isinstance(xs, list) or len(xs) != len(ys):
        return ()
    return tuple((float(x), float(y)) for x, y in zip(xs, ys) if _finite(x) and _finite(y))


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass
class TableResult:
    spec: Spec
    tier: str
    stats: dict[tuple[str, str, str], CellStats]  # (row, col, metric)
    seeds_done: dict[tuple[str, str], int]
    failed: dict[tuple[str, str], str] = field(default_factory=dict)  # cell -> last error line
    stale: int = 0
    corrupt: int = 0  # unreadable records left out
    dirty: int = 0    # records written from a tree with uncommitted code/spec changes (--allow-dirty)
    numerics: dict[str, int] = field(default_factory=dict)  # numerics profile -> records aggregated
    fast_profile: int = 0  # records of the opt-in fast numerics profile: left out, never compared with these
    compute: Compute = field(default_factory=Compute)  # what the aggregated records took
    compute_all: Compute = field(default_factory=Compute)  # every record of the tier: stale and failed too
    degenerate: dict[tuple[str, str], dict[int, str]] = field(default_factory=dict)  # cell -> seed -> why
    checks: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # claim/column checks, once
    curves: dict[tuple[str, str, str], CurveSeries] = field(default_factory=dict)  # (curve title, row, col)
    #: cell -> seed -> how well its test predictions separate the classes, in %: (the record's AUC or None, the
    #: balanced accuracy its acc/precision/recall give), for ``two_classes`` regime checks
    discrimination: dict[tuple[str, str], dict[int, tuple[float | None, float]]] = field(default_factory=dict)
    #: cell -> seed -> (test recall, test specificity) as fractions (:func:`pubench.report.oneclass.class_rates`;
    #: specificity NaN at recall 0), what the reports' one_class_why lines measure beside the spec's reason
    rates: dict[tuple[str, str], dict[int, tuple[float, float]]] = field(default_factory=dict)
    #: (row, col, metric) -> every run of the cell's config at the tier, in every spec that runs it
    #: (:func:`pubench.report.pooled.pooled_spreads`; filled where a store is at hand: write_report, the site)
    pooled: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    #: cell -> the seed indices of its records at the current config that no registration covers
    #: (:func:`registered_seeds`): left out of everything above, listed apart until registered
    unregistered: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    #: where the rows of a table with rows added were read (:func:`baselines_text`); None otherwise
    baselines: str | None = None

    def curve(self, title: str, row: str, col: str) -> CurveSeries | None:
        return self.curves.get((title, row, col))

    @functools.cached_property
    def binary(self) -> dict[tuple[str, str], set[int]]:
        """cell -> the seeds whose records carry binary metrics (the keys of :attr:`rates`)."""
        return {cell: set(seeds) for cell, seeds in self.rates.items()}

    def degenerate_seeds(self, row: str, col: str, metric: str) -> int:
        """How many of the cell's seeds ended as a near-one-class classifier (recall or specificity
        under 5%, :func:`pubench.report.oneclass.near_one_class`), for a metric read at the threshold
        (accuracy, precision, recall, F1); 0 for the others (AUC ranks)."""
        return len(self.degenerate.get((row, col), {})) if metric in THRESHOLD_METRICS else 0

    @property
    def marks_degenerate(self) -> bool:
        """Whether any cell carries the near-one-class mark (and the report needs its legend)."""
        return bool(self.degenerate) and any(m in THRESHOLD_METRICS for m in self.spec.metrics)

    def get(self, row: str, col: str, metric: str) -> CellStats | None:
        return self.stats.get((row, col, metric))

    def reported(self, row: str, col: str, metric: str) -> ReportedCell | None:
        return self.spec.reported_cell(row, col, metric)

    @property
    def pipeline_check(self) -> bool:
        """Whether the tier only checks the pipeline (smoke: seconds of training), so that its
        numbers are never compared with the paper's (no delta)."""
        base = self.spec.variant[0] if self.spec.variant is not None else self.tier  # a variant of smoke is one too
        return base in PIPELINE_CHECK_TIERS

    def delta(self, row: str, col: str, metric: str) -> float | None:
        """Reproduced minus reported, signed so that a positive delta is better than reported
        (None at a pipeline-check tier)."""
        s, r = self.get(row, col, metric), self.reported(row, col, metric)
        if s is None or r is None or r.mean is None or self.pipeline_check:
            return None
        sign = 1.0 if self.spec.metrics[metric].higher_is_better else -1.0
        return sign * (s.mean - r.mean)

    @property
    def cells_done(self) -> int:
        return len(self.seeds_done)


def unregistered_line(res: TableResult, cells: int = 10) -> str | None:
    """The one line a report lists the unregistered seeds' records in (None: there are none),
    at most ``cells`` cells named."""
    if not res.unregistered:
        return None
    n = sum(len(seeds) for seeds in res.unregistered.values())
    named = [f"{r}|{c} seed{'s' if len(seeds) > 1 else ''} {seed_ranges(seeds)}"
             for (r, c), seeds in list(res.unregistered.items())[:cells]]
    more = f" and {len(res.unregistered) - cells} more cell(s)" if len(res.unregistered) > cells else ""
    return (f"{n} record(s) of seeds no registration covers (beyond the tier's seeds and its more_seeds entries) are "
            f"listed apart, read by no claim, regime check or verdict until registered: {'; '.join(named)}{more}")


def seed_ranges(seeds) -> str:
    """``(2, 3, 4, 7)`` -> ``"2-4, 7"``."""
    runs: list[list[int]] = []
    for k in sorted(seeds):
        if runs and k == runs[-1][-1] + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


THRESHOLD_METRICS = frozenset({"acc", "precision", "recall", "f1"})
PIPELINE_CHECK_TIERS = frozenset({"smoke"})  # tiers whose numbers are never compared with the paper


def _derived(spec: Spec, values: dict[tuple[str, str, str], dict[int, float]],
             splits: dict[tuple[str, str], dict[int, Hashable]]) -> dict:
    """A derived column (e.g. the paper's Mean): per seed, the mean over its source cols
    (seeds present in all of them), then mean ± std over those seeds. Its split key per seed
    is the tuple of its sources' keys."""
    out = {}
    for dcol, sources in spec.derived_cols.items():
        for row in spec.rows:
            for metric in spec.metrics:
                per_col = [values.get((row, c, metric), {}) for c in sources]
                common = set.intersection(*(set(v) for v in per_col)) if per_col else set()
                if common:
                    out[(row, dcol, metric)] = CellStats(
                        {k: statistics.fmean(v[k] for v in per_col) for k in sorted(common)},
                        {k: tuple(splits[(row, c)][k] for c in sources) for k in sorted(common)})
    return out


def cell_seed_key(job: dict[str, Any]) -> tuple:
    """What makes two jobs the same cell and seed of the same config (numerics aside)."""
    return (job["row"], job["col"], job["seed_index"], job["spec_version"], canonical_json(job["params"]))


def numerics_label(num: dict[str, Any] | None) -> str:
    if not num:
        return "unrecorded"
    fast = ", fast (channels_last, torch.compile)" if is_fast(num) else ""
    return f"{num.get('device')}, {num.get('threads')} thread(s), {num.get('isa')}, torch {num.get('torch')}{fast}"


def select_records(spec: Spec, tier: str, records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The records a report aggregates, and how many are stale (config or spec version
    changed, or no numerics recorded). One record per (cell, seed) of a registered seed
    (:func:`registered_seeds`): when the same job was run under several numerics profiles,
    the canonical CPU one wins, else the latest. Records of the opt-in fast profile are never
    among them (:func:`classify_records`)."""
    chosen, left_out = classify_records(spec, tier, records)
    return chosen, sum(why == STALE for _, why in left_out)


STALE, SUPERSEDED, UNREGISTERED, FAST_PROFILE = "stale", "superseded", "unregistered", "fast profile"


def registered_seeds(spec: Spec, tier: str, row: str, col: str) -> int:
    """How many seeds (indices ``0..n-1``) of the cell are registered at ``tier``: the tier's
    ``seeds``, or a ``more_seeds`` entry's; a variant's (tier ``custom``) are its base tier's,
    as ``pubench run --set`` runs them; a row added to the table runs its baseline cell's."""
    base = spec.variant[0] if spec.variant is not None and tier == CUSTOM else tier
    return spec.tiers[base].seeds_of(*spec.baseline_cell(row, col))


def classify_records(spec: Spec, tier: str, records: list[dict[str, Any]]
                     ) -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], str]]]:
    """:func:`select_records` with the records it leaves out and why: ``stale`` (config or spec
    version changed, or no numerics recorded), ``fast profile`` (``pubench run --fast-numerics``:
    channels_last and torch.compile give other numbers, and a table, its claims and every
    comparison read one profile's records, never that one's beside the canonical ones),
    ``unregistered`` (a current record of a seed index beyond the cell's registered seeds,
    :func:`registered_seeds`) or ``superseded`` (the same cell and seed under a preferred
    numerics profile)."""
    current = {cell: spec.resolve(tier, *cell)["params"] for cell in spec.cells()}
    registered = {cell: registered_seeds(spec, tier, *cell) for cell in current}
    chosen: dict[tuple, dict[str, Any]] = {}
    left_out: list[tuple[dict[str, Any], str]] = []
    for rec in records:
        job = rec["job"]
        cell = (job["row"], job["col"])
        if job["spec_version"] != spec.version or current.get(cell) != job["params"] or "numerics" not in job:
            left_out.append((rec, STALE))
            continue
        if is_fast(job["numerics"]):
            left_out.append((rec, FAST_PROFILE))
            continue
        if job["seed_index"] >= registered[cell]:
            left_out.append((rec, UNREGISTERED))
            continue
        key = (job["row"], job["col"], job["seed_index"])
        if key not in chosen:
            chosen[key] = rec
        elif _preference(rec) > _preference(chosen[key]):
            left_out.append((chosen[key], SUPERSEDED))
            chosen[key] = rec
        else:
            left_out.append((rec, SUPERSEDED))
    return list(chosen.values()), left_out


class MetricValue(NamedTuple):
    """One metric of one record: a row of the tidy table (:func:`metric_values`,
    :func:`pubench.report.frame.records_frame`)."""

    row: str
    col: str
    seed: int
    metric: str
    value: float
    job_id: str
    split: Hashable  # the job's data seed: equal keys, same data split


def metric_values(records: list[dict[str, Any]]) -> list[MetricValue]:
    """A row per record and finite metric, in record order: what :func:`collect` aggregates
    (the spec's metrics of the selected records) and what the records frame holds."""
    out = []
    for rec in records:
        job = rec["job"]
        for metric, v in rec["metrics"].items():
            if _finite(v):
                out.append(MetricValue(job["row"], job["col"], job["seed_index"], metric, float(v), job.get("id", ""),
                                       job["seeds"]["data"]))
    return out


def _preference(rec: dict[str, Any]) -> tuple:
    num = rec["job"]["numerics"]
    canonical = num.get("device") == "cpu" and num.get("isa") == "avx2" and num.get("threads") == 1
    return (canonical, rec.get("timing", {}).get("end", ""))


#: what a report reads of a record (``ResultStore.scan(..., fields=REPORT_FIELDS)``)
REPORT_FIELDS = ("job", "metrics", "timing", "provenance", "machine", "info.encoder_cache")


def report_fields(spec: Spec) -> tuple[str, ...]:
    """:data:`REPORT_FIELDS` and the ``info`` entries the spec's curves read."""
    extra = sorted({f"info.{path.split('.')[0]}" for c in spec.curves for path in (c.y, c.x) if path != "epoch"})
    return REPORT_FIELDS + tuple(f for f in extra if f not in REPORT_FIELDS)


def collect(spec: Spec, tier: str, store: ResultStore) -> TableResult:
    """The table of ``spec`` at ``tier`` from the store's records (once per table for a store
    made with ``memo=True``: the report, the index and the site share it)."""
    memo = getattr(store, "_memo", None)
    if memo is None:
        return _collect(spec, tier, store)
    # the seeds registered count too: a ladder's view of a spec registers more (report/ladders.py)
    seeds = canonical_json({t: [v.seeds, list(v.more_seeds)] for t, v in spec.tiers.items()})
    key = ("collect", spec.path, spec.id, tier, spec.variant, spec.added, seeds)
    if key not in memo:
        memo[key] = _collect(spec, tier, store)
        # the table holds what its readers need: its folder's records need not stay in memory
        # for the rest of a report of every table (a later scan reads the scan cache)
        memo.pop((tier, spec.id, report_fields(spec)), None)
    return memo[key]


def variant_key(job: dict[str, Any]) -> tuple[str, tuple[str, ...]] | None:
    """(base tier, overrides) of a job run with ``--set`` (:attr:`Spec.variant`'s shape), else None
    (a row added with ``--add-row`` too: :func:`added_row_of`)."""
    v = job.get("variant")
    return None if not v or "row" in v else (v.get("base_tier"), tuple(v.get("set") or ()))


def added_row_of(job: dict[str, Any]):
    """(base tier, :class:`~pubench.registry.added_rows.AddedRow`) of a job of a row added with
    ``--add-row``, else None."""
    from pubench.registry.added_rows import AddedRow

    v = job.get("variant")
    if not v or not isinstance(v.get("row"), dict):
        return None
    try:
        return v.get("base_tier"), AddedRow.from_dict(v["row"])
    except (KeyError, TypeError):
        return None


def of_variant(scan, variant: tuple[str, tuple[str, ...]]):
    """``scan`` with only the records (ok and failed) of ``variant``."""
    from dataclasses import replace

    return replace(scan, records=[r for r in scan.records if variant_key(r["job"]) == variant],
                   failures=[r for r in scan.failures if variant_key(r["job"]) == variant])


def scan_of(spec: Spec, tier: str, store: ResultStore):
    """The store's scan of ``spec`` at ``tier`` with what a report reads; for a variant view,
    only that variant's records (the custom folder holds every variant); for rows added to the
    table, the base tier's records of the spec's own rows and the custom records of the added ones."""
    scan = store.scan(tier, spec.id, fields=report_fields(spec))  # one pass: ok, failed and corrupt records
    if spec.added:
        from dataclasses import replace

        base, _ = base_records(spec, store)
        mine = {(spec.variant[0], r.name) for r in spec.added}

        def ours(rec):
            found = added_row_of(rec["job"])
            return found is not None and (found[0], found[1].name) in mine

        added = [r for r in scan.records if ours(r)]
        return replace(base, records=base.records + added, failures=base.failures + [r for r in scan.failures if ours(r)],
                       corrupt=base.corrupt + scan.corrupt,
                       done={**base.done, **{r["job"]["id"]: scan.done[r["job"]["id"]] for r in added
                                             if r["job"]["id"] in scan.done}})
    return scan if spec.variant is None else of_variant(scan, spec.variant)


def baselines_store(store: ResultStore) -> ResultStore | None:
    """The store the rows of a table with rows added are read from where ``store`` lacks them
    (:func:`pubench.paths.baselines_root`: ``--baselines DIR``, else the committed store), or None
    when it is ``store`` itself or does not exist."""
    from pubench import paths

    root = paths.baselines_root()
    if not root.is_dir() or root.resolve() == store.root.resolve():
        return None
    found = getattr(store, "_baselines", None)  # one per store object: its memo of scans is the store's
    if found is None or found.root != root:
        found = ResultStore(root, memo=store._memo is not None)
        store._baselines = found
    return found


def store_label(root) -> str:
    """A store as a report names it: the committed one as such, another by its folder."""
    from pathlib import Path

    from pubench import paths

    root = Path(root)
    if root.resolve() == paths.committed_results().resolve():
        return "the committed store (results/ of the checkout)"
    return f"{root}"


def own_label(store: ResultStore) -> str:
    """The store a report reads, as it names it beside the baselines store."""
    from pubench import paths

    if store.root.resolve() == paths.committed_results().resolve():
        return store_label(store.root)
    return "this store ($PUBENCH_RESULTS)" if store.root.resolve() == paths.results_root().resolve() else \
        f"this store ({store.root})"


def base_records(spec: Spec, store: ResultStore):
    """The base tier's scan a table with rows added (:meth:`Spec.with_added_rows`) reads its own rows
    from: ``store``'s records, and for each (cell, seed) it holds no record of at the spec's
    version, the baselines store's (:func:`baselines_store`); and ``{store label: (cells, records)}``
    taken from each."""
    from dataclasses import replace

    tier, fields = spec.variant[0], report_fields(spec)
    own = store.scan(tier, spec.id, fields=fields)

    def key(rec):
        job = rec["job"]
        return job["row"], job["col"], job["seed_index"]

    def counts(records):
        current = [key(r) for r in records if r["job"].get("spec_version") == spec.version]
        return len({k[:2] for k in current}), len(current)

    mine = {key(r) for r in own.records if r["job"].get("spec_version") == spec.version}
    sources = {own_label(store): counts(own.records)}
    other = baselines_store(store)
    if other is None:
        return own, sources
    theirs = other.scan(tier, spec.id, fields=fields)
    taken = [r for r in theirs.records if key(r) not in mine]
    sources[store_label(other.root)] = counts(taken)
    failures = [r for r in theirs.failures if key(r) not in mine]
    done = {**{r["job"]["id"]: theirs.done[r["job"]["id"]] for r in taken if r["job"]["id"] in theirs.done}, **own.done}
    return replace(own, records=own.records + taken, failures=own.failures + failures, done=done), sources


def baselines_text(spec: Spec, store: ResultStore) -> str | None:
    """Where the rows a table's added rows are compared with were read, in one sentence (None for a
    table without added rows)."""
    if not spec.added:
        return None
    from pubench import paths

    _, sources = base_records(spec, store)
    found = [f"{records} record(s) of {cells} cell(s) from {label}" for label, (cells, records) in sources.items()
             if records]
    return (f"The paper's rows at tier `{spec.variant[0]}`, the added rows' baselines: "
            + ("; ".join(found) if found else "no record in this store nor in the baselines store")
            + f". A seed of a cell is read from this store where it has it, else from the baselines store, "
            f"{store_label(paths.baselines_root())} (`--baselines DIR` names another).")


def variants(spec: Spec, store: ResultStore) -> list[Spec]:
    """A view of ``spec`` per variant the store's ``custom`` tier holds records of at the spec's
    current version, in a stable order: one per ``pubench run --set`` variant
    (:meth:`Spec.with_variant`), then one per base tier with rows added (``--add-row``,
    :meth:`Spec.with_added_rows`) holding every added row run there (a name defined twice: the
    definition of its latest record)."""
    records = [r for r in store.scan(CUSTOM, spec.id, fields=("job", "timing")).records
               if r["job"].get("spec_version") == spec.version]
    keys = {variant_key(r["job"]) for r in records}
    views = [spec.with_variant(base, sets) for base, sets in sorted(k for k in keys if k and k[0] in spec.tiers)]
    latest: dict[str, dict[str, tuple[str, Any]]] = {}
    for rec in records:
        found = added_row_of(rec["job"])
        if found is None or found[0] not in spec.tiers:
            continue
        base, row = found
        end = (rec.get("timing") or {}).get("end") or ""
        if end >= latest.setdefault(base, {}).get(row.name, ("", None))[0]:
            latest[base][row.name] = (end, row)
    methods = spec.cols if spec.methods_in == "cols" else spec.rows
    for base in sorted(latest):
        rows = tuple(row for _, (_, row) in sorted(latest[base].items())
                     if row.like in methods and row.name not in spec.rows and row.name not in spec.cols)
        if rows:
            views.append(spec.with_added_rows(base, rows))
    return views


def _collect(spec: Spec, tier: str, store: ResultStore) -> TableResult:
    values: dict[tuple[str, str, str], dict[int, float]] = {}
    splits: dict[tuple[str, str], dict[int, Hashable]] = {}  # cell -> seed index -> data seed
    scan = scan_of(spec, tier, store)
    records, left_out = classify_records(spec, tier, scan.records)
    stale = sum(why == STALE for _, why in left_out)
    fast = sum(why == FAST_PROFILE for _, why in left_out)
    unregistered: dict[tuple[str, str], set[int]] = {}
    for rec, why in left_out:
        if why == UNREGISTERED:
            unregistered.setdefault((rec["job"]["row"], rec["job"]["col"]), set()).add(rec["job"]["seed_index"])
    current = {cell: spec.resolve(tier, *cell)["params"] for cell in spec.cells()}  # failures of the current config
    profiles: dict[str, int] = {}
    dirty = 0
    degenerate: dict[tuple[str, str], dict[int, str]] = {}
    curve_points_: dict[tuple[str, str, str], dict[int, tuple]] = {}
    discrimination: dict[tuple[str, str], dict[int, tuple[float | None, float]]] = {}
    rates_: dict[tuple[str, str], dict[int, tuple[float, float]]] = {}
    for rec in records:
        job = rec["job"]
        cell = (job["row"], job["col"])
        label = numerics_label(job.get("numerics"))
        profiles[label] = profiles.get(label, 0) + 1
        dirty += bool(rec.get("provenance", {}).get("git_dirty"))
        splits.setdefault(cell, {})[job["seed_index"]] = job["seeds"]["data"]
        why = near_one_class(rec["metrics"])
        if why:
            degenerate.setdefault(cell, {})[job["seed_index"]] = why
        if (rates := class_rates(rec["metrics"])) is not None:
            rates_.setdefault(cell, {})[job["seed_index"]] = rates
            discrimination.setdefault(cell, {})[job["seed_index"]] = separation(rec["metrics"], rates)
        for curve in spec.curves:
            if cell[1] in curve.cols and (pts := curve_points(rec.get("info") or {}, curve)):
                curve_points_.setdefault((curve.title, *cell), {})[job["seed_index"]] = pts
    for v in metric_values(records):  # the tidy rows: one per record and metric
        if v.metric in spec.metrics:
            values.setdefault((v.row, v.col, v.metric), {})[v.seed] = v.value
    failed = {}
    failure_records = scan.failures
    for rec in failure_records:
        job = rec["job"]
        cell = (job["row"], job["col"])
        if cell not in splits and current.get(cell) == job["params"] and not is_fast(job.get("numerics")):
            failed[cell] = f"{rec['error']['type']}: {rec['error']['message']}".splitlines()[0][:200]
    stats = {k: CellStats(v, {s: splits[k[:2]][s] for s in v}) for k, v in values.items()}
    stats.update(_derived(spec, values, splits))
    curves = {k: CurveSeries(v, {s: splits[k[1:]][s] for s in v}) for k, v in curve_points_.items()}
    return TableResult(spec, tier, stats, {c: len(s) for c, s in splits.items()}, failed, stale,
                       corrupt=len(scan.corrupt), dirty=dirty, numerics=profiles, compute=of_records(records),
                       compute_all=of_records(scan.records, failure_records), degenerate=degenerate, curves=curves,
                       discrimination=discrimination, rates=rates_, fast_profile=fast,
                       unregistered={cell: tuple(sorted(seeds)) for cell, seeds in sorted(unregistered.items())},
                       baselines=baselines_text(spec, store))
