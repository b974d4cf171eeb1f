"""Compare two result stores cell by cell: the nightly regression check.

A cell is flagged when its new mean leaves the baseline by more than
``max(sigmas * pooled_std, abs_tol)`` (pooled over the two runs' seed stds), so a rerun
with fewer seeds is judged against the spread the baseline itself shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tabulate import tabulate

from pubench.registry.spec import Spec
from pubench.report.collect import collect
from pubench.store.store import ResultStore


@dataclass
class CellDiff:
    spec: str
    row: str
    col: str
    metric: str
    base: float
    base_std: float
    base_n: int
    new: float
    new_std: float
    new_n: int
    tolerance: float
    worse: bool

    @property
    def flagged(self) -> bool:
        return abs(self.new - self.base) > self.tolerance


def compare_stores(specs: dict[str, Spec], tier: str, baseline: ResultStore, current: ResultStore,
                   sigmas: float = 3.0, abs_tol: float = 0.0) -> list[CellDiff]:
    out = []
    for sid, spec in specs.items():
        base, new = collect(spec, tier, baseline), collect(spec, tier, current)
        for (row, col, metric), s_new in sorted(new.stats.items()):
            s_base = base.get(row, col, metric)
            if s_base is None or col in spec.derived_cols:
                continue
            pooled = math.sqrt(((s_base.std or 0.0)**2 + (s_new.std or 0.0)**2) / 2)  # one seed: no spread
            higher = spec.metrics[metric].higher_is_better
            out.append(CellDiff(sid, row, col, metric, s_base.mean, s_base.std or 0.0, s_base.n, s_new.mean,
                                s_new.std or 0.0, s_new.n, max(sigmas * pooled, abs_tol),
                                (s_new.mean < s_base.mean) if higher else (s_new.mean > s_base.mean)))
    return out


def render_diffs(diffs: list[CellDiff], only_flagged: bool = False) -> str:
    rows = [[d.spec, f"{d.row}|{d.col}", d.metric, f"{d.base:.4g} ± {d.base_std:.2g} ({d.base_n})",
             f"{d.new:.4g} ± {d.new_std:.2g} ({d.new_n})", f"{d.new - d.base:+.3g}", f"{d.tolerance:.3g}",
             ("WORSE" if d.worse else "better") if d.flagged else "ok"]
            for d in diffs if d.flagged or not only_flagged]
    flagged = sum(d.flagged for d in diffs)
    head = tabulate(rows, headers=["spec", "cell", "metric", "baseline", "now", "Δ", "tolerance", "verdict"],
                    disable_numparse=True) if rows else ""
    return f"{head}\n{len(diffs)} cell(s) compared, {flagged} outside tolerance\n"
