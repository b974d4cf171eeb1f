"""Spread across specs: one config, run by several tables with their own seeds.

Several specs run the same config (the same task and resolved params) on their own splits and
seeds, e.g. WConPU's reduced CIFAR-10 cell in table2-wconpu, table3-wconpu, fig3/5-wconpu and
table4/5-wconpu. A cell's own few seeds can be tighter (or wider) than the config's spread over
all of them: printed alone, a "± 0.46" reads as the method's seed spread when the pooled runs
say ± 4.8. The report prints, beside such a cell, every run of the same config at the tier:
their mean, sample std and count, and which specs ran them.

A run shared by two specs (``experiment.seeds_from``: the same job, its record copied) counts
once: runs are told apart by their seeds (data and init).
"""

from __future__ import annotations

from dataclasses import dataclass

from pubench.registry.spec import Spec
from pubench.report.collect import REPORT_FIELDS, Spread, TableResult, registered_seeds
from pubench.store.store import ResultStore

_FIELDS = REPORT_FIELDS  # the fields a report scans: the folders a report of every table reads anyway


@dataclass(frozen=True)
class PooledSpread(Spread):
    """Every run at the tier of one cell's config, for one metric: ``values`` (one per distinct
    run) and ``specs`` ((spec id, runs) of each spec that ran it, this one included)."""

    metric: str
    values: tuple[float, ...]
    specs: tuple[tuple[str, int], ...]


def _tier_index(store: ResultStore, tier: str, specs: dict[str, Spec] | None = None
                ) -> dict[tuple[str, str], dict[tuple, tuple[set[str], dict]]]:
    """(task, canonical params) -> run (its seeds) -> (the specs holding its record, metrics), over
    every spec folder of the tier whose spec is registered, each record under its cell's current
    config (a stale record, made under another config, is left out, as reports leave it out, and so
    is a record of a seed its spec has not registered);
    once per store that memoizes: ``report`` of every table reads it once. ``specs``: the registry
    (default: :func:`~pubench.registry.load_all`; a caller that has it saves parsing it again)."""
    from pubench.registry import load_all

    memo = getattr(store, "_memo", None)
    key = ("pooled-index", tier)
    if memo is not None and key in memo:
        return memo[key]
    specs = specs if specs is not None else load_all()
    index: dict[tuple[str, str], dict[tuple, tuple[set[str], dict]]] = {}
    folder = store.root / tier
    for spec_dir in sorted(folder.iterdir()) if folder.is_dir() else ():
        spec = specs.get(spec_dir.name)
        if spec is None or tier not in spec.tiers:
            continue
        current: dict[tuple[str, str], tuple | None] = {}  # cell -> (task, params, JSON, registered seeds)
        runnable = set(spec.cells())
        for rec in store.scan(tier, spec_dir.name, fields=_FIELDS).records:
            job = rec["job"]
            cell = (job["row"], job["col"])
            if cell not in current:
                cfg, params_json = spec.resolve_with_json(tier, *cell) if cell in runnable else (None, None)
                current[cell] = None if cfg is None else (cfg["task"], cfg["params"], params_json,
                                                          registered_seeds(spec, tier, *cell))
            config = current[cell]
            if config is None or job["task"] != config[0] or job["params"] != config[1]:
                continue
            if job["seed_index"] >= config[3]:
                continue  # a seed nobody registered: listed apart by its own report, pooled nowhere
            run = tuple(sorted((job.get("seeds") or {}).items()))
            index.setdefault((config[0], config[2]), {}).setdefault(run, (set(), rec["metrics"]))[0].add(spec.id)
    if memo is not None:
        memo[key] = index
    return index


def pooled_spreads(res: TableResult, store: ResultStore, metrics: list[str] | None = None,
                   specs: dict[str, Spec] | None = None) -> dict[tuple[str, str, str], PooledSpread]:
    """(row, col, metric) -> the pooled spread of the cell's config, for each cell with results
    whose config another spec also ran at this tier. ``metrics``: default the spec's first;
    ``specs``: the registry, when the caller has it."""
    spec = res.spec
    if spec.variant is not None:  # a variant's config is its own: nothing else runs it
        return {}
    metrics = metrics or list(spec.metrics)[:1]
    index = _tier_index(store, res.tier, specs)
    out = {}
    for row, col in spec.cells():
        if (row, col) not in res.seeds_done or spec.unavailable_reason(res.tier, row, col):
            continue
        cfg, params_json = spec.resolve_with_json(res.tier, row, col)
        runs = index.get((cfg["task"], params_json), {})
        by_spec: dict[str, int] = {}
        for holders, _ in runs.values():
            for spec_id in holders:
                by_spec[spec_id] = by_spec.get(spec_id, 0) + 1
        if len(by_spec) < 2:
            continue
        for metric in metrics:
            values = tuple(m[metric] for _, m in runs.values() if isinstance(m.get(metric), (int, float)))
            if len(values) > res.seeds_done[(row, col)]:
                out[(row, col, metric)] = PooledSpread(metric, values, tuple(sorted(by_spec.items())))
    return out


POOLED_HEADERS = ["cell", "metric", "this table", "every run of its config at this tier", "specs (runs)"]
POOLED_LEGEND = (
    "Cells whose config (the same task and resolved params) other tables also run, each on its own splits and "
    "seeds: this table's seeds beside every run of that config at this tier (a run two tables share counts once). "
    "The pooled std is the config's seed spread; a cell's own few seeds can be tighter or wider than it.")


def pooled_rows(res: TableResult) -> list[list[str]]:
    """One row per cell and metric with a pooled spread (``res.pooled``), numbers at the metric's format."""
    out = []
    for (row, col, metric), p in sorted(res.pooled.items(), key=lambda kv: (res.spec.rows.index(kv[0][0]),
                                                                         res.spec.cols.index(kv[0][1]), kv[0][2])):
        fmt = res.spec.metrics[metric].fmt
        own = res.get(row, col, metric)
        ours = "—" if own is None else (f"{format(own.mean, fmt)} ± {format(own.std, fmt)} ({own.n})"
                                        if own.std is not None else f"{format(own.mean, fmt)} ({own.n})")
        pooled = f"{format(p.mean, fmt)} ± {format(p.std, fmt)} ({p.n})" if p.std is not None else format(p.mean, fmt)
        out.append([f"{row} | {col}", res.spec.metrics[metric].label, ours, pooled,
                    ", ".join(f"{s} ({k})" for s, k in p.specs)])
    return out
