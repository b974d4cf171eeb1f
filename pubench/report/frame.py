"""Tidy tables of a report, as pandas DataFrames: what ``pubench export`` writes (csv,
parquet, json) and what an analysis starts from.

* :func:`records_frame`: one row per record and metric (every ok record of the spec and
  tier in the store, each metric it holds): ``spec``, ``spec_version`` (of the record),
  ``tier``, ``row``, ``col``, ``seed`` (the seed index), ``metric``, ``value``, ``job_id``,
  ``split`` (the data seed: equal values, same data split), ``numerics`` (device, threads,
  CPU code path, torch), ``git_dirty``, ``wall_s``, ``aggregated`` (whether the report
  aggregates it) and ``left_out`` (why not: ``stale``, a changed config or spec version;
  ``unregistered``, a seed beyond the cell's registered seeds; ``superseded``, the same cell
  and seed under a preferred numerics profile).
* :func:`cells_frame`: one row per cell and metric, as the report prints it: ours ``mean``,
  ``std``, ``n``, the paper's ``reported`` / ``reported_std``, ``delta`` (> 0 better than
  reported), the ``regime`` verdict covering the cell, the near-one-class seeds, and the
  spec's ``version`` and ``tier``.

pandas is imported here only: the read-only commands (``report``, ``site``) aggregate the
same rows (:func:`pubench.report.collect.metric_values`) without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pubench.registry.spec import Spec
from pubench.report.collect import (TableResult, classify_records, collect, metric_values, numerics_label,
                                    report_fields)
from pubench.store.store import ResultStore

if TYPE_CHECKING:
    import pandas as pd

RECORD_COLUMNS = ("spec", "spec_version", "tier", "row", "col", "seed", "metric", "value", "job_id", "split",
                  "numerics", "git_dirty", "wall_s", "aggregated", "left_out")
CELL_COLUMNS = ("spec", "version", "tier", "row", "row_group", "col", "col_group", "metric", "higher_is_better",
                "mean", "std", "n", "reported", "reported_std", "delta", "derived", "regime", "near_one_class")


def records_frame(spec: Spec, tier: str, store: ResultStore) -> pd.DataFrame:
    """One row per record and metric of ``spec`` at ``tier`` (columns :data:`RECORD_COLUMNS`)."""
    import pandas as pd

    scan = store.scan(tier, spec.id, fields=report_fields(spec))
    chosen, left_out = classify_records(spec, tier, scan.records)
    rows = []
    for recs, why in [(chosen, None)] + [([rec], w) for rec, w in left_out]:
        for rec in recs:
            job = rec["job"]
            extra = (job["spec_version"], numerics_label(job.get("numerics")),
                     bool(rec.get("provenance", {}).get("git_dirty")), rec.get("timing", {}).get("wall_s"))
            for v in metric_values([rec]):
                rows.append((spec.id, extra[0], tier, v.row, v.col, v.seed, v.metric, v.value, v.job_id, v.split,
                             *extra[1:], why is None, why))
    frame = pd.DataFrame(rows, columns=list(RECORD_COLUMNS))
    return frame.sort_values(["aggregated", "row", "col", "seed", "metric"], ascending=[False, True, True, True, True],
                             kind="stable", ignore_index=True)


def _regime_of(verdicts) -> str | None:
    from pubench.report.regime import IN, OUT, POWER, UNTESTED

    if not verdicts:
        return None
    kinds = {v.verdict for v in verdicts}
    return OUT if OUT in kinds else IN if kinds == {IN} else POWER if kinds <= {IN, POWER} else UNTESTED


def cells_frame(res: TableResult | None = None, *, spec: Spec | None = None, tier: str | None = None,
                store: ResultStore | None = None) -> pd.DataFrame:
    """One row per cell and metric of a report (columns :data:`CELL_COLUMNS`): every cell the
    spec has (run or derived) or reports, ours or not. Give a collected ``res``, or ``spec``,
    ``tier`` and ``store``."""
    import pandas as pd

    from pubench.report.regime import RegimeMap

    if res is None:
        res = collect(spec, tier, store)
    spec = res.spec
    regime = RegimeMap(res)
    col_group = {c: g for g, cols in spec.col_groups.items() for c in cols}
    cells = set(spec.cells())
    rows = []
    for row in spec.rows:
        for col in spec.cols:
            derived = col in spec.derived_cols
            for metric, m in spec.metrics.items():
                s, r = res.get(row, col, metric), res.reported(row, col, metric)
                if s is None and r is None and (row, col) not in cells and not derived:
                    continue  # excluded and never printed
                rows.append((spec.id, spec.version, res.tier, row, spec.group_of_row(row), col, col_group.get(col),
                             metric, m.higher_is_better, None if s is None else s.mean, None if s is None else s.std,
                             0 if s is None else s.n, None if r is None else r.mean, None if r is None else r.std,
                             res.delta(row, col, metric), derived, _regime_of(regime.of(row, col)),
                             res.degenerate_seeds(row, col, metric)))
    frame = pd.DataFrame(rows, columns=list(CELL_COLUMNS))
    return frame.astype({"mean": "float64", "std": "float64", "reported": "float64", "reported_std": "float64",
                         "delta": "float64"})
