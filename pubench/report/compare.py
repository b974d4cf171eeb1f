"""Compare two result stores cell by cell: the nightly regression check.

A cell's metric is flagged when the new mean leaves the baseline's by more than its
tolerance, ``max(sigmas x SE, rel_tol x |baseline|, abs_tol)``:

* ``SE`` is the standard error of the difference of the two means,
  ``s x sqrt(1/n_base + 1/n_new)``, with ``s`` the seed standard deviation pooled over the
  stores that have one (a rerun with one seed is judged against the spread the baseline
  itself shows). It carries each metric's own scale: an MSE of 0.0007 whose seeds vary by
  4e-5 gets a tolerance of about 1e-4, an accuracy whose seeds vary by a point one of a few
  points.
* ``rel_tol`` (``--rel-tol``, default 0) flags relative changes whatever the spread.
* ``abs_tol`` is a floor for cells with no spread (one seed on each side, or a
  deterministic metric): by default the resolution the spec prints the metric at (half a
  unit of its last printed digit: ``.2f`` -> 0.005; ``.3g`` of 0.000731 -> 5e-7), so a change
  that would show in the paper-style table is flagged and one that would not is not;
  ``--abs-tol`` replaces it (in the metric's units, for every metric).
"""

from __future__ import annotations

import math
import re
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


_FORMAT = re.compile(r"^[^.]*\.(\d+)([efgEFG%])$")


def print_resolution(fmt: str, value: float) -> float:
    """Half a unit of the last digit ``format(value, fmt)`` prints (0 when unknown)."""
    m = _FORMAT.match(fmt or "")
    if not m:
        return 0.0
    digits, kind = int(m.group(1)), m.group(2).lower()
    if kind == "f":
        return 0.5 * 10.0 ** -digits
    if kind == "%":
        return 0.5 * 10.0 ** -(digits + 2)
    if value == 0 or not math.isfinite(value):
        return 0.0
    exponent = math.floor(math.log10(abs(value)))
    significant = digits if kind == "g" else digits + 1
    return 0.5 * 10.0 ** (exponent - max(1, significant) + 1)


def tolerance(base_std: float | None, base_n: int, new_std: float | None, new_n: int, base_mean: float,
              sigmas: float, rel_tol: float, floor: float) -> float:
    """The tolerance of one cell's metric (see the module docstring)."""
    spreads = [(s, n) for s, n in ((base_std, base_n), (new_std, new_n)) if s is not None and n > 1]
    if spreads:
        pooled = math.sqrt(sum(s * s * (n - 1) for s, n in spreads) / sum(n - 1 for _, n in spreads))
        se = pooled * math.sqrt(1 / base_n + 1 / new_n)
    else:
        se = 0.0
    return max(sigmas * se, rel_tol * abs(base_mean), floor)


def compare_stores(specs: dict[str, Spec], tier: str, baseline: ResultStore, current: ResultStore,
                   sigmas: float = 3.0, abs_tol: float | None = None, rel_tol: float = 0.0) -> list[CellDiff]:
    """Every cell with results in both stores; ``abs_tol`` None: each metric's print resolution."""
    out = []
    for sid, spec in specs.items():
        base, new = collect(spec, tier, baseline), collect(spec, tier, current)
        for (row, col, metric), s_new in sorted(new.stats.items()):
            s_base = base.get(row, col, metric)
            if s_base is None or col in spec.derived_cols:
                continue
            m = spec.metrics[metric]
            floor = print_resolution(m.fmt, s_base.mean) if abs_tol is None else abs_tol
            tol = tolerance(s_base.std, s_base.n, s_new.std, s_new.n, s_base.mean, sigmas, rel_tol, floor)
            out.append(CellDiff(sid, row, col, metric, s_base.mean, s_base.std or 0.0, s_base.n, s_new.mean,
                                s_new.std or 0.0, s_new.n, tol,
                                (s_new.mean < s_base.mean) if m.higher_is_better else (s_new.mean > s_base.mean)))
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
