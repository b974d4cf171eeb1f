"""Collectors: join the result store with a spec's reported cells.

Only records whose params equal the cell's current resolved config (and whose spec
version matches) are aggregated; older ones are counted as stale and left out. Values are
kept per seed index, with the data split each seed ran on, so claim checks can pair the
seeds of two cells that saw the same split (:mod:`pubench.report.stats`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

from pubench.registry.spec import ReportedCell, Spec
from pubench.store.store import ResultStore


@dataclass(frozen=True)
class CellStats:
    """One cell's metric over seeds: the value of each seed index and the data split it ran on
    (``splits[k]``: equal keys mean the same split, e.g. the job's data seed). Mean and sample
    standard deviation (ddof=1; ``None`` for a single seed, which has no spread to show)."""

    by_seed: Mapping[int, float]
    splits: Mapping[int, Hashable]

    @property
    def values(self) -> tuple[float, ...]:
        return tuple(self.by_seed[k] for k in sorted(self.by_seed))

    @property
    def n(self) -> int:
        return len(self.by_seed)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def std(self) -> float | None:
        return statistics.stdev(self.values) if self.n > 1 else None


@dataclass
class TableResult:
    spec: Spec
    tier: str
    stats: dict[tuple[str, str, str], CellStats]  # (row, col, metric)
    seeds_done: dict[tuple[str, str], int]
    failed: dict[tuple[str, str], str] = field(default_factory=dict)  # cell -> last error line
    stale: int = 0

    def get(self, row: str, col: str, metric: str) -> CellStats | None:
        return self.stats.get((row, col, metric))

    def reported(self, row: str, col: str, metric: str) -> ReportedCell | None:
        return self.spec.reported_cell(row, col, metric)

    def delta(self, row: str, col: str, metric: str) -> float | None:
        """Reproduced minus reported, signed so that a positive delta is better than reported."""
        s, r = self.get(row, col, metric), self.reported(row, col, metric)
        if s is None or r is None or r.mean is None:
            return None
        sign = 1.0 if self.spec.metrics[metric].higher_is_better else -1.0
        return sign * (s.mean - r.mean)

    @property
    def cells_done(self) -> int:
        return len(self.seeds_done)


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


def collect(spec: Spec, tier: str, store: ResultStore) -> TableResult:
    values: dict[tuple[str, str, str], dict[int, float]] = {}
    splits: dict[tuple[str, str], dict[int, Hashable]] = {}  # cell -> seed index -> data seed
    stale = 0
    current = {cell: spec.resolve(tier, *cell)["params"] for cell in spec.cells()}
    for rec in store.records(tier, spec.id):
        job = rec["job"]
        cell = (job["row"], job["col"])
        if job["spec_version"] != spec.version or current.get(cell) != job["params"]:
            stale += 1
            continue
        splits.setdefault(cell, {})[job["seed_index"]] = job["seeds"]["data"]
        for metric, v in rec["metrics"].items():
            if metric in spec.metrics and math.isfinite(v):
                values.setdefault((*cell, metric), {})[job["seed_index"]] = float(v)
    failed = {}
    for rec in store.records(tier, spec.id, failed=True):
        job = rec["job"]
        cell = (job["row"], job["col"])
        if cell not in splits and current.get(cell) == job["params"]:
            failed[cell] = f"{rec['error']['type']}: {rec['error']['message']}".splitlines()[0][:200]
    stats = {k: CellStats(v, {s: splits[k[:2]][s] for s in v}) for k, v in values.items()}
    stats.update(_derived(spec, values, splits))
    return TableResult(spec, tier, stats, {c: len(s) for c, s in splits.items()}, failed, stale)
