"""Cross-paper view: one method on one data set as several papers report it, beside ours.

The mapping is ``experiments/_crossref.yaml``, written and reviewed by hand: each entry
names the cells (spec, row, col[, metric]) of every paper that reports the method on the
data set, and how each paper ran it (``setting``). Nothing is matched by name similarity;
:func:`load_crossref` checks every name against the registry and fails with the entry and
the problem. For each cell the view shows the paper's number and ours: the cell of that
spec in the result store at the requested tier, or at the highest tier with results
(paper, then reduced, then smoke).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pubench.errors import PubenchError
from pubench.registry.spec import TIERS, ReportedCell, Spec
from pubench.report.collect import CellStats, TableResult, collect
from pubench.report.layout import DASH, fmt_ours, fmt_reported
from pubench.store.store import ResultStore

FILE_NAME = "_crossref.yaml"


class CrossrefError(PubenchError, ValueError):
    """A crossref entry names something the registry does not have."""


@dataclass(frozen=True)
class CrossCell:
    spec_id: str
    row: str
    col: str
    metric: str
    setting: str


@dataclass(frozen=True)
class CrossEntry:
    method: str
    dataset: str
    setting: str
    note: str | None
    cells: tuple[CrossCell, ...]


@dataclass
class CrossValue:
    """One cell of an entry with its numbers: the paper's and ours (``tier`` = where ours came from)."""

    cell: CrossCell
    spec: Spec
    reported: ReportedCell | None
    ours: CellStats | None
    tier: str | None
    delta: float | None

    @property
    def paper(self) -> str:
        return self.spec.paper


def crossref_path(root: Path | None = None) -> Path:
    from pubench.paths import experiments_root

    return (root or experiments_root()) / FILE_NAME


def _fail(where: str, problem: str) -> None:
    raise CrossrefError(f"{FILE_NAME}: {where}: {problem}")


def _text(d: dict, key: str, where: str, required: bool = True) -> str | None:
    v = d.get(key)
    if v is None and not required:
        return None
    if not isinstance(v, str) or not v.strip():
        _fail(where, f"{key!r} must be a non-empty string")
    return v.strip()


def _cell(raw: Any, where: str, specs: dict[str, Spec], settings: dict[str, str]) -> CrossCell:
    if not isinstance(raw, dict):
        _fail(where, "a cell must be a mapping with spec, row, col")
    unknown = set(raw) - {"spec", "row", "col", "metric", "setting"}
    if unknown:
        _fail(where, f"unknown key(s) {sorted(unknown)}")
    sid = _text(raw, "spec", where)
    spec = specs.get(sid)
    if spec is None:
        _fail(where, f"no spec {sid!r}")
    row, col = str(raw.get("row")), str(raw.get("col"))
    if row not in spec.rows:
        _fail(where, f"{sid} has no row {row!r}")
    if col not in spec.cols:
        _fail(where, f"{sid} has no column {col!r}")
    metric = raw.get("metric")
    if metric is None:
        if len(spec.metrics) != 1:
            _fail(where, f"{sid} has several metrics ({', '.join(spec.metrics)}): name one")
        metric = next(iter(spec.metrics))
    elif metric not in spec.metrics:
        _fail(where, f"{sid} has no metric {metric!r}")
    setting = _text(raw, "setting", where)
    return CrossCell(sid, row, col, metric, settings.get(setting, setting))


def load_crossref(specs: dict[str, Spec], path: Path | None = None) -> list[CrossEntry]:
    """The entries of ``_crossref.yaml`` (none when the file is absent), checked against ``specs``:
    every spec, row, column and metric exists, every cell appears once, and an entry spans
    at least two papers."""
    path = path or crossref_path()
    if not path.exists():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise CrossrefError(f"{FILE_NAME}: does not parse: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict) or set(data) - {"settings", "entries"}:
        _fail("(top level)", "expected the keys 'settings' and 'entries' only")
    settings = data.get("settings") or {}
    if not isinstance(settings, dict) or not all(isinstance(v, str) for v in settings.values()):
        _fail("settings", "must map names to descriptions")
    entries = []
    for i, raw in enumerate(data.get("entries") or []):
        where = f"entry {i + 1}"
        if not isinstance(raw, dict):
            _fail(where, "must be a mapping")
        method, dataset = _text(raw, "method", where), _text(raw, "dataset", where)
        where = f"entry {i + 1} ({method} on {dataset})"
        if set(raw) - {"method", "dataset", "setting", "note", "cells"}:
            _fail(where, f"unknown key(s) {sorted(set(raw) - {'method', 'dataset', 'setting', 'note', 'cells'})}")
        cells = tuple(_cell(c, f"{where}, cell {j + 1}", specs, settings) for j, c in enumerate(raw.get("cells") or []))
        keys = [(c.spec_id, c.row, c.col, c.metric) for c in cells]
        if len(set(keys)) != len(keys):
            _fail(where, "names a cell twice")
        if len({specs[c.spec_id].paper for c in cells}) < 2:
            _fail(where, "needs cells of at least two papers")
        entries.append(CrossEntry(method, dataset, _text(raw, "setting", where), _text(raw, "note", where, False),
                                  cells))
    return entries


class _Results:
    """``collect`` once per (spec, tier)."""

    def __init__(self, specs: dict[str, Spec], store: ResultStore):
        self.specs, self.store, self.cache = specs, store, {}

    def get(self, spec_id: str, tier: str) -> TableResult:
        key = (spec_id, tier)
        if key not in self.cache:
            self.cache[key] = collect(self.specs[spec_id], tier, self.store)
        return self.cache[key]


def crossref(entries: list[CrossEntry], specs: dict[str, Spec], store: ResultStore,
             tier: str | None = None) -> list[tuple[CrossEntry, list[CrossValue]]]:
    """Each entry with its cells' numbers; ours from ``tier``, or the highest tier with results."""
    results = _Results(specs, store)
    out = []
    for e in entries:
        values = []
        for c in e.cells:
            spec = specs[c.spec_id]
            ours, used = None, None
            for t in ([tier] if tier else [t for t in TIERS if t in spec.tiers]):
                res = results.get(c.spec_id, t)
                if res.get(c.row, c.col, c.metric) is not None:
                    ours, used = res.get(c.row, c.col, c.metric), t
                    break
            delta = results.get(c.spec_id, used).delta(c.row, c.col, c.metric) if used else None
            values.append(CrossValue(c, spec, spec.reported_cell(c.row, c.col, c.metric), ours, used, delta))
        out.append((e, values))
    return out


def render_crossref(view: list[tuple[CrossEntry, list[CrossValue]]]) -> str:
    """Plain text for the console: one block per entry, one line per paper's cell."""
    from tabulate import tabulate

    lines = []
    for e, values in view:
        lines += ["", f"{e.method} on {e.dataset}, {e.setting}" + (f"  ({e.note})" if e.note else "")]
        rows = []
        for v in values:
            f = v.spec.metrics[v.cell.metric].fmt
            ours = DASH if v.ours is None else f"{fmt_ours(v.ours.mean, v.ours.std, v.ours.n, f)} [{v.tier}]"
            delta = DASH if v.delta is None else format(v.delta, "+" + f)
            rows.append([v.paper, f"{v.cell.spec_id}: {v.cell.row} | {v.cell.col}", fmt_reported(v.reported, f),
                         ours, delta])
        lines.append(tabulate(rows, headers=["paper", "cell", "reported", "ours [tier]", "Δ"],
                              disable_numparse=True))
        settings: dict[str, list[str]] = {}
        for v in values:
            settings.setdefault(v.cell.setting, []).append(f"{v.cell.spec_id} {v.cell.row}")
        lines += [textwrap.fill(f"{', '.join(cells)}: {text}", 110, initial_indent="  - ", subsequent_indent="    ")
                  for text, cells in settings.items()]
    return "\n".join(lines).lstrip("\n") + "\n"


def rank_in_table(res: TableResult, row: str, col: str, metric: str, paper: bool = False) -> tuple[int, int] | None:
    """(rank, of how many) of a cell's method among the methods its table compares it with: the
    rows of its row group in its column (the columns of its column group in its row where the
    spec's methods are columns), by our means (``paper``: by the printed means); 1 = best in the
    metric's direction, ties share the better rank. None when the cell has no number or no rival
    has one. Ranks compare across tiers and papers where values do not (a reduced-tier run is on
    another scale than the paper's)."""
    spec = res.spec
    if spec.methods_in == "cols":
        group = next((cols for cols in spec.col_groups.values() if col in cols), spec.cols)
        rivals = [(row, c) for c in group if c not in spec.derived_cols]
    else:
        g = spec.group_of_row(row)
        rivals = [(r, col) for r in (spec.row_groups[g] if g else spec.rows)]

    def value(r: str, c: str) -> float | None:
        if paper:
            cell = spec.reported_cell(r, c, metric)
            return None if cell is None else cell.mean
        s = res.get(r, c, metric)
        return None if s is None else s.mean

    mine = value(row, col)
    values = [v for r, c in rivals if (v := value(r, c)) is not None]
    if mine is None or len(values) < 2:
        return None
    better = (lambda v: v > mine) if spec.metrics[metric].higher_is_better else (lambda v: v < mine)
    return 1 + sum(better(v) for v in values), len(values)
