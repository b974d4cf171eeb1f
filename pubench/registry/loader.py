"""Load and validate every spec under ``experiments/`` (YAML only: no torch import)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from pubench.registry.spec import (
    CLAIM_KINDS,
    ID_RE,
    PAPERS,
    TIERS,
    Claim,
    Metric,
    ReportedCell,
    Spec,
    SpecError,
    Tier,
    UnknownSpec,
    deep_merge,
    match_cell,
)

TOP_KEYS = {
    "id", "paper", "kind", "title", "caption", "version", "source", "metrics", "rows", "cols",
    "row_groups", "col_groups", "reported", "decisions", "claims", "experiment", "tiers", "include",
    "derived_cols", "methods_in",
}
LAYER_KEYS = {"params", "rows", "cols", "cells"}


def experiments_root() -> Path:
    """``$PUBENCH_EXPERIMENTS``, else ``experiments/`` of the source checkout."""
    env = os.environ.get("PUBENCH_EXPERIMENTS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "experiments"


class _Checker:
    """Small typed getters that raise SpecError with the file and the dotted key."""

    def __init__(self, file: str):
        self.file = file

    def fail(self, key: str, problem: str) -> None:
        raise SpecError(self.file, key, problem)

    def get(self, d: dict, key: str, typ: type | tuple, where: str = "", required: bool = True, default=None):
        full = f"{where}.{key}" if where else key
        if key not in d or d[key] is None:
            if required:
                self.fail(full, "missing")
            return default
        v = d[key]
        if typ is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if isinstance(v, bool) and typ is not bool and (typ is int or typ is float):
            self.fail(full, f"expected {typ.__name__}, got a boolean")
        if not isinstance(v, typ):
            names = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
            self.fail(full, f"expected {names}, got {type(v).__name__} {v!r}")
        return v

    def str_list(self, d: dict, key: str, where: str = "", required: bool = True) -> list[str]:
        v = self.get(d, key, list, where, required, default=[])
        full = f"{where}.{key}" if where else key
        for i, x in enumerate(v):
            if not isinstance(x, str):
                self.fail(f"{full}[{i}]", f"expected a string, got {x!r}")
        return v


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise SpecError(str(path), "(yaml)", str(e).replace("\n", " ")) from None
    except UnicodeDecodeError as e:
        raise SpecError(str(path), "(encoding)", f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise SpecError(str(path), "(file)", e.strerror or str(e)) from None
    if not isinstance(data, dict):
        raise SpecError(str(path), "(top level)", "expected a mapping")
    return data


def _with_includes(path: Path, data: dict[str, Any], seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    includes = data.pop("include", None) or []
    if isinstance(includes, str):
        includes = [includes]
    merged: dict[str, Any] = {}
    for inc in includes:
        ipath = (path.parent / inc).resolve()
        if ipath in seen:
            raise SpecError(str(path), "include", f"include cycle through {inc}")
        if not ipath.exists():
            raise SpecError(str(path), "include", f"file not found: {inc}")
        merged = deep_merge(merged, _with_includes(ipath, read_yaml(ipath), seen + (ipath,)), keep_nulls=True)
    return deep_merge(merged, data, keep_nulls=True)


def _drop_null_entries(raw: dict[str, Any]) -> dict[str, Any]:
    """``cols: {SVHN: null}`` in a spec removes the entry an include provided; other nulls
    stay, as deletions applied when a cell's config is resolved."""
    layers = [raw.get("experiment")] + list((raw.get("tiers") or {}).values())
    for layer in layers:
        if isinstance(layer, dict):
            for key in ("rows", "cols", "cells"):
                if isinstance(layer.get(key), dict):
                    layer[key] = {k: v for k, v in layer[key].items() if v is not None}
    return raw


def load_spec(path: str | Path, check_unit_names: bool = True) -> Spec:
    """Parse and validate one spec file; every unit name must be registered or planned
    (``experiments/_planned.yaml``)."""
    path = Path(path)
    raw = _drop_null_entries(_with_includes(path, read_yaml(path), (path.resolve(),)))
    spec = parse_spec(raw, str(path))
    if check_unit_names:
        from pubench.registry.units import check_names

        check_names(raw, str(path))
    return spec


def parse_spec(raw: dict[str, Any], file: str) -> Spec:  # noqa: C901 - a flat list of checks
    ck = _Checker(file)
    unknown = set(raw) - TOP_KEYS
    if unknown:
        ck.fail(sorted(unknown)[0], f"unknown key (allowed: {', '.join(sorted(TOP_KEYS))})")
    sid = ck.get(raw, "id", str)
    m = ID_RE.match(sid)
    if not m:
        ck.fail("id", f"{sid!r} does not read table<N>-<paper> or fig<N>-<paper>")
    paper = ck.get(raw, "paper", str)
    if paper not in PAPERS:
        ck.fail("paper", f"unknown paper {paper!r} (one of {', '.join(PAPERS)})")
    if m.group(4) != paper:
        ck.fail("id", f"id {sid!r} does not end with its paper {paper!r}")
    kind = ck.get(raw, "kind", str)
    if kind not in ("table", "figure") or (kind == "table") != (m.group(1) == "table"):
        ck.fail("kind", f"{kind!r} must be 'table' for table ids and 'figure' for fig ids")
    stem = Path(file).stem
    if stem and stem != sid and not file.startswith("<"):
        ck.fail("id", f"{sid!r} differs from the file name {stem!r}.yaml")

    metrics = _parse_metrics(ck, raw)
    rows = ck.str_list(raw, "rows")
    cols = ck.str_list(raw, "cols")
    for key, items in (("rows", rows), ("cols", cols)):
        if not items:
            ck.fail(key, "empty")
        dup = {x for x in items if items.count(x) > 1}
        if dup:
            ck.fail(key, f"duplicate entries {sorted(dup)}")
    row_groups = _parse_groups(ck, raw, "row_groups", rows)
    col_groups = _parse_groups(ck, raw, "col_groups", cols)

    rep = ck.get(raw, "reported", dict)
    reported_seeds = ck.get(rep, "seeds", int, "reported", required=False)
    pm = ck.get(rep, "pm", str, "reported", required=False)
    if "seeds" not in rep or "pm" not in rep:
        ck.fail("reported", "must state 'seeds' (the paper's seed count) and 'pm' (what ± means), null if the paper does not say")
    cells = _parse_cells(ck, rep, rows, cols, metrics)
    notes = ck.str_list(rep, "notes", "reported", required=False)

    exp = ck.get(raw, "experiment", dict)
    ck.get(exp, "task", str, "experiment")
    _check_layer(ck, exp, "experiment", rows, cols, extra={"task", "exclude", "init_seed_from"})
    axes = ck.str_list(exp, "init_seed_from", "experiment", required=False)
    if set(axes) - {"row", "col"}:
        ck.fail("experiment.init_seed_from", "a subset of [row, col]")
    exclude = ck.str_list(exp, "exclude", "experiment", required=False)

    tiers_raw = ck.get(raw, "tiers", dict)
    tiers = {}
    for t in TIERS:
        if t not in tiers_raw:
            ck.fail("tiers", f"missing tier {t!r} (every spec has paper, reduced and smoke)")
        tiers[t] = _parse_tier(ck, tiers_raw[t], t, rows, cols)
    for t in set(tiers_raw) - set(TIERS):
        ck.fail(f"tiers.{t}", f"unknown tier (one of {', '.join(TIERS)})")

    claims = _parse_claims(ck, raw, rows, cols, metrics)
    if raw.get("methods_in", "rows") not in ("rows", "cols"):
        ck.fail("methods_in", "rows or cols (the axis holding the compared methods)")
    derived = ck.get(raw, "derived_cols", dict, required=False, default={})
    for name, d in derived.items():
        where = f"derived_cols.{name}"
        if name not in cols:
            ck.fail(where, "not one of the cols")
        if not isinstance(d, dict) or set(d) != {"mean_of"}:
            ck.fail(where, "expected {mean_of: [cols]}")
        for c in ck.str_list(d, "mean_of", where):
            if c not in cols or c in derived:
                ck.fail(f"{where}.mean_of", f"{c!r} is not a (non-derived) col")
    return Spec(
        id=sid, paper=paper, kind=kind,
        title=ck.get(raw, "title", str), caption=ck.get(raw, "caption", str),
        version=ck.get(raw, "version", int), source=ck.get(raw, "source", str),
        metrics=metrics, rows=rows, cols=cols, row_groups=row_groups, col_groups=col_groups,
        reported_seeds=reported_seeds, pm=pm, reported=cells, reported_notes=notes,
        decisions=ck.str_list(raw, "decisions", required=False), claims=claims,
        experiment=exp, exclude=exclude, tiers=tiers, path=file, raw=raw,
        derived_cols={k: list(v["mean_of"]) for k, v in derived.items()},
    )


def _parse_metrics(ck: _Checker, raw: dict) -> dict[str, Metric]:
    mraw = ck.get(raw, "metrics", dict)
    if not mraw:
        ck.fail("metrics", "empty")
    out = {}
    for name, m in mraw.items():
        where = f"metrics.{name}"
        if not isinstance(m, dict):
            ck.fail(where, "expected a mapping with label and higher_is_better")
        out[name] = Metric(
            name=name,
            label=ck.get(m, "label", str, where),
            higher_is_better=ck.get(m, "higher_is_better", bool, where),
            fmt=ck.get(m, "format", str, where, required=False, default=".2f"),
        )
    return out


def _parse_groups(ck: _Checker, raw: dict, key: str, items: list[str]) -> dict[str, list[str]]:
    groups = ck.get(raw, key, dict, required=False, default={})
    for g, members in groups.items():
        if not isinstance(members, list):
            ck.fail(f"{key}.{g}", "expected a list")
        for x in members:
            if x not in items:
                ck.fail(f"{key}.{g}", f"{x!r} is not one of the {key.split('_')[0]}s")
    return groups


def _parse_cells(ck: _Checker, rep: dict, rows, cols, metrics) -> list[ReportedCell]:
    cells = ck.get(rep, "cells", list, "reported")
    out, seen = [], set()
    only_metric = next(iter(metrics)) if len(metrics) == 1 else None
    for i, c in enumerate(cells):
        where = f"reported.cells[{i}]"
        if not isinstance(c, dict):
            ck.fail(where, "expected a mapping {row, col, mean, std, note}")
        extra = set(c) - {"row", "col", "metric", "mean", "std", "note", "mark"}
        if extra:
            ck.fail(f"{where}.{sorted(extra)[0]}", "unknown key")
        row, col = ck.get(c, "row", str, where), ck.get(c, "col", str, where)
        if row not in rows:
            ck.fail(f"{where}.row", f"{row!r} is not one of the rows")
        if col not in cols:
            ck.fail(f"{where}.col", f"{col!r} is not one of the cols")
        metric = ck.get(c, "metric", str, where, required=only_metric is None, default=only_metric)
        if metric not in metrics:
            ck.fail(f"{where}.metric", f"unknown metric {metric!r}")
        if "mean" not in c:
            ck.fail(f"{where}.mean", "missing (write null with a note when the paper prints no number)")
        mean = ck.get(c, "mean", float, where, required=False)
        std = ck.get(c, "std", float, where, required=False)
        note = ck.get(c, "note", str, where, required=False)
        if mean is None and not note:
            ck.fail(f"{where}.note", "a cell with no reported mean needs a note saying why")
        if std is not None and mean is None:
            ck.fail(f"{where}.std", "a std without a mean")
        if (row, col, metric) in seen:
            ck.fail(where, f"duplicate reported cell ({row}, {col}, {metric})")
        seen.add((row, col, metric))
        out.append(ReportedCell(row, col, metric, mean, std, note, ck.get(c, "mark", str, where, required=False)))
    return out


def _check_layer(ck: _Checker, layer: dict, where: str, rows, cols, extra=frozenset()) -> None:
    unknown = set(layer) - LAYER_KEYS - set(extra)
    if unknown:
        ck.fail(f"{where}.{sorted(unknown)[0]}", f"unknown key (allowed: {', '.join(sorted(LAYER_KEYS | set(extra)))})")
    ck.get(layer, "params", dict, where, required=False)
    for key, names in (("rows", rows), ("cols", cols)):
        sub = ck.get(layer, key, dict, where, required=False, default={})
        for name, v in sub.items():
            if name not in names:
                ck.fail(f"{where}.{key}.{name}", f"not one of the {key}")
            if not isinstance(v, dict):
                ck.fail(f"{where}.{key}.{name}", "expected a mapping of params")
    for name, v in ck.get(layer, "cells", dict, where, required=False, default={}).items():
        if "|" not in name or not any(match_cell(name, r, c) for r in rows for c in cols):
            ck.fail(f"{where}.cells.{name}", "expected 'row|col' (globs allowed) matching at least one cell")
        if not isinstance(v, dict):
            ck.fail(f"{where}.cells.{name}", "expected a mapping of params")


def _parse_tier(ck: _Checker, t: Any, name: str, rows, cols) -> Tier:
    where = f"tiers.{name}"
    if not isinstance(t, dict):
        ck.fail(where, "expected a mapping")
    _check_layer(ck, t, where, rows, cols, extra={"seeds", "deviations", "unavailable", "slurm"})
    seeds = ck.get(t, "seeds", int, where)
    if seeds < 1:
        ck.fail(f"{where}.seeds", "must be >= 1")
    deviations = ck.str_list(t, "deviations", where, required=False)
    changes = any(t.get(k) for k in LAYER_KEYS)
    if name != "paper" and changes and not deviations:
        ck.fail(f"{where}.deviations", "this tier changes the paper's setup: list the deviations in words")
    unavailable = ck.get(t, "unavailable", dict, where, required=False, default={})
    for pat, why in unavailable.items():
        if "|" not in pat:
            ck.fail(f"{where}.unavailable.{pat}", "pattern must read 'row|col' (globs allowed)")
        if not isinstance(why, str) or not why:
            ck.fail(f"{where}.unavailable.{pat}", "give the reason as a string")
        if not any(match_cell(pat, r, c) for r in rows for c in cols):
            ck.fail(f"{where}.unavailable.{pat}", "matches no cell")
    layer = {k: t[k] for k in LAYER_KEYS if k in t}
    slurm = ck.get(t, "slurm", dict, where, required=False, default={})
    return Tier(name=name, seeds=seeds, deviations=deviations, layer=layer, unavailable=unavailable, slurm=slurm)


def _parse_claims(ck: _Checker, raw: dict, rows, cols, metrics) -> list[Claim]:
    out = []
    for i, c in enumerate(ck.get(raw, "claims", list, required=False, default=[])):
        where = f"claims[{i}]"
        if not isinstance(c, dict):
            ck.fail(where, "expected a mapping")
        kind = ck.get(c, "kind", str, where)
        if kind not in CLAIM_KINDS:
            ck.fail(f"{where}.kind", f"unknown claim kind {kind!r} (one of {', '.join(CLAIM_KINDS)})")
        metric = ck.get(c, "metric", str, where, required=len(metrics) > 1, default=next(iter(metrics)))
        if metric not in metrics:
            ck.fail(f"{where}.metric", f"unknown metric {metric!r}")
        crow = ck.str_list(c, "rows", where)
        ccol = ck.str_list(c, "cols", where, required=False) or list(cols)
        for r in crow:
            if r not in rows:
                ck.fail(f"{where}.rows", f"{r!r} is not one of the rows")
        for x in ccol:
            if x not in cols:
                ck.fail(f"{where}.cols", f"{x!r} is not one of the cols")
        need = {"best_row": 1, "greater": 2}.get(kind)
        if need and len(crow) != need:
            ck.fail(f"{where}.rows", f"a {kind} claim names exactly {need} row(s)")
        if kind == "order" and len(crow) < 2:
            ck.fail(f"{where}.rows", "an order claim names at least 2 rows")
        if kind in ("best_col", "col_order") and len(ccol) < 2:
            ck.fail(f"{where}.cols", f"a {kind} claim names at least 2 cols")
        out.append(Claim(kind, ck.get(c, "text", str, where), metric, tuple(crow), tuple(ccol)))
    return out


def spec_paths(root: Path | None = None) -> list[Path]:
    root = root or experiments_root()
    if not root.is_dir():
        raise SpecError(str(root), "(folder)", "no such folder of specs (set PUBENCH_EXPERIMENTS or run from a "
                                               "pubench checkout)")
    return sorted(p for p in root.glob("*/*.yaml") if not p.parent.name.startswith("_"))


def load_all(root: Path | None = None) -> dict[str, Spec]:
    """Every spec by id; raises SpecError on the first invalid file or a duplicate id."""
    specs: dict[str, Spec] = {}
    for p in spec_paths(root):
        s = load_spec(p)
        if s.paper != p.parent.name:
            raise SpecError(str(p), "paper", f"spec of paper {s.paper!r} lives in folder {p.parent.name!r}")
        if s.id in specs:
            raise SpecError(str(p), "id", f"duplicate id, also in {specs[s.id].path}")
        specs[s.id] = s
    return specs


def get_spec(spec_id: str, root: Path | None = None) -> Spec:
    """One spec by id, with a suggestion on a typo."""
    import difflib

    root = root or experiments_root()
    for p in spec_paths(root):
        if p.stem == spec_id:
            return load_spec(p)
    ids = [p.stem for p in spec_paths(root)]
    close = difflib.get_close_matches(spec_id, ids, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else "; `pubench list` shows them"
    raise UnknownSpec(f"no table or figure {spec_id!r}{hint}")
