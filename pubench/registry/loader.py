"""Load and validate every spec under ``experiments/`` (YAML only: no torch import).

A spec file is read with its notes file merged in (``<id>.notes.yaml``: :mod:`pubench.registry.notes`),
its structure validated (:class:`pubench.registry.schema.SpecFile`),
its param layers expanded (presets, ``experiments/_presets``; PU data sets,
``pubench/data/pu_datasets.yaml``), and the references across fields checked here (a claim's
rows exist, a tier that changes something lists its deviations, ...). Every problem is a
:class:`SpecError`: ``file: dotted.key: problem``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import is_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pubench.paths import experiments_root as experiments_root  # where the specs are (re-exported)
from pubench.registry import cache, notes
from pubench.registry import spec as spec_module
from pubench.registry.catalogue import class_counts, expand_pu_datasets
from pubench.registry.shared import expand_shared, expand_shared_list
from pubench.registry.presets import expand_presets
from pubench.registry.priors import PriorError, datasets_named, has_prior_tokens
from pubench.registry.spec import (
    CLAIM_KINDS,
    ID_RE,
    TIERS,
    Claim,
    Curve,
    Metric,
    RegimeBlock,
    ReportedCell,
    Revision,
    Spec,
    SpecError,
    Tier,
    UnknownSpec,
    match_cell,
    match_name,
)
from pubench.utils.yamlio import parse_mapping, read_text

# every dataclass of a parsed spec (Claim, Tier, Revision, ...), one added later included
cache.register(*(c for c in vars(spec_module).values()
                 if isinstance(c, type) and is_dataclass(c) and c.__module__ == spec_module.__name__))

if TYPE_CHECKING:
    from pubench.registry.schema import ReportedCellModel, SpecFile

LAYER_KEYS = ("params", "rows", "cols", "cells")


def _spec_inputs() -> str:
    """Fingerprint of what a parsed spec depends on besides its own file: the presets, the
    shared texts, the PU data set catalogue, the data set table (class counts) and the
    code that parses, expands and validates (``pubench/registry``, ``pubench/utils``)."""
    from pubench.registry.catalogue import catalogue_path
    from pubench.registry.shared import shared_path
    from pubench.registry.presets import presets_folder

    pkg = Path(__file__).resolve().parents[1]
    folder = presets_folder()
    files = [*pkg.joinpath("registry").glob("*.py"), *pkg.joinpath("utils").glob("*.py"), pkg / "errors.py",
             *pkg.joinpath("data").glob("*.py"), catalogue_path(),
             *(sorted(folder.glob("*.yaml")) if folder.is_dir() else []),
             *([shared_path()] if shared_path().is_file() else [])]
    return cache.files_fingerprint(files, salt=f"{folder}|{shared_path()}")


def load_spec(path: str | Path, check_unit_names: bool = True, inputs: str | None = None) -> Spec:
    """Parse and validate one spec file, its notes file (``<id>.notes.yaml``) merged in; every
    unit name must be registered or planned (``experiments/_planned.yaml``). A file parsed before
    with the same content, notes, presets, catalogue and code comes from the cache
    (:mod:`pubench.registry.cache`). ``inputs``: :func:`_spec_inputs`, when the caller loads many
    specs at once."""
    path = Path(path)
    text, notes_text = read_text(path), notes.notes_text(path)
    key = cache.key_of("spec", str(path), inputs or _spec_inputs(), text,
                       *([notes_text] if notes_text is not None else []))
    spec = cache.get("specs", key, Spec)
    if spec is None:
        spec = _parse_file(path, text, notes_text)
        spec._reasons.clear()  # reason sentences read the other spec files: never cached with this one
        # the resolved cells apart, one entry per tier: most commands read one tier, `list` none
        cache.put("specs", key, replace(spec, designed=None, _resolved={}))
        for tier, cells in spec._resolved.items():
            cache.put("resolved", cache.key_of(key, tier), [[*cell, *texts] for cell, texts in cells.items()])
    else:
        spec.precomputed = functools.partial(_precomputed, key)
    spec.designed = designed_tiers
    if check_unit_names:
        from pubench.registry.units import check_names

        check_names(spec.raw, str(path))
    return spec


def _parse_file(path: Path, text: str, notes_text: str | None) -> Spec:
    """The spec of the file ``path`` (its ``text``) with its notes (``notes_text``) merged in; a
    problem of a key the notes hold is named in the notes file."""
    from pubench.registry.changes import check_whys

    try:
        spec = parse_spec(notes.read_raw(path, text, notes_text), str(path))
        spec.precompute()  # every cell resolved once: the whys are checked against the tiers' changes
        check_whys(spec)
        return spec
    except SpecError as e:
        raise notes.locate(e, path, notes_text) from None


def _precomputed(key: str, tier: str) -> dict[tuple[str, str], tuple[str, str]] | None:
    """The resolved cells at ``tier`` of the cached spec under ``key`` (:meth:`Spec.precompute`)."""
    rows = cache.get("resolved", cache.key_of(key, tier), list[list[str]])
    if rows is None or not all(isinstance(r, list) and len(r) == 4 and all(isinstance(x, str) for x in r)
                               for r in rows):
        return None  # missing, or a foreign entry: the cells are resolved again
    return {(row, col): (text, canonical) for row, col, text, canonical in rows}


def expand_layer(layer: dict[str, Any], file: str, where: str) -> dict[str, Any]:
    """A layer's params/rows/cols/cells with presets and PU data set references expanded."""
    out = {}
    for key in LAYER_KEYS:
        if layer.get(key) is not None:
            out[key] = expand_pu_datasets(expand_presets(layer[key], file, f"{where}.{key}"), file, f"{where}.{key}")
    return out


def parse_spec(raw: dict[str, Any], file: str) -> Spec:
    """Validate ``raw`` (a spec file's content) and build its :class:`Spec`, section by section
    in the order its problems are reported: the structure, the id, the rows and columns, the
    experiment, each tier, the derived columns, the curves, the reported texts, cells and
    claims, the regime blocks, then (for a spec with prior tokens) every cell's resolution."""
    model = _validated(raw, file)
    _check_ids(model, file)
    _check_axes(model, file)
    experiment = _experiment(model, raw, file)
    tiers = {name: _tier(name, model, raw, file) for name in TIERS}
    _check_derived_cols(model, file)
    curves = _curves(model, file)
    decisions = expand_shared_list(model.decisions, file, "decisions")
    pm = expand_shared(model.reported.pm, file, "reported.pm")
    reported_notes = expand_shared_list(model.reported.notes, file, "reported.notes")
    expanded = {**raw, **({"decisions": decisions} if "decisions" in raw else {}),
                "reported": {**raw["reported"], "pm": pm,
                             **({"notes": reported_notes} if "notes" in raw["reported"] else {})},
                "experiment": experiment, "tiers": {n: {**raw["tiers"][n], **tiers[n].layer} for n in TIERS}}
    reported, claims = _reported_cells(model, file), _claims(model, file, curves)
    counts = class_counts(datasets_named([experiment, *(t.layer for t in tiers.values())]))
    spec = Spec(
        id=model.id, paper=model.paper, kind=model.kind, title=model.title, caption=model.caption,
        version=model.version, source=model.source,
        metrics={n: Metric(n, m.label, m.higher_is_better, m.format) for n, m in model.metrics.items()},
        rows=list(model.rows), cols=list(model.cols), row_groups=model.row_groups, col_groups=model.col_groups,
        reported_seeds=model.reported.seeds, pm=pm, reported=reported, reported_notes=reported_notes, decisions=decisions,
        claims=claims, experiment=experiment, exclude=list(model.experiment.exclude), tiers=tiers,
        path=file, raw=expanded, derived_cols={k: list(v.mean_of) for k, v in model.derived_cols.items()},
        curves=curves, regime=_regime(model, file), designed=designed_tiers, class_counts=counts,
    )
    _check_priors(spec, file)
    return spec


def _validated(raw: dict[str, Any], file: str) -> SpecFile:
    """``raw`` as the schema's model (:class:`pubench.registry.schema.SpecFile`)."""
    from pydantic import ValidationError

    from pubench.registry.schema import SpecFile
    from pubench.utils.validation import first_problem

    try:
        return SpecFile.model_validate(raw)
    except ValidationError as e:
        raise SpecError(file, *first_problem(e, SpecFile)) from None


def _check_axes(model: SpecFile, file: str) -> None:
    """Rows and columns named once each; every group member a row (column) of the spec."""
    rows, cols = model.rows, model.cols
    for key, items in (("rows", rows), ("cols", cols)):
        dup = {x for x in items if items.count(x) > 1}
        if dup:
            raise SpecError(file, key, f"duplicate entries {sorted(dup)}")
    for key, groups, items in (("row_groups", model.row_groups, rows), ("col_groups", model.col_groups, cols)):
        for g, members in groups.items():
            for x in members:
                if x not in items:
                    raise SpecError(file, f"{key}.{g}", f"{x!r} is not one of the {key.split('_')[0]}s")


def _experiment(model: SpecFile, raw: dict[str, Any], file: str) -> dict[str, Any]:
    """The ``experiment`` block: its task, its layer expanded, its seed axes and the cells it
    shares with another spec (``seeds_from``), checked against the rows and columns."""
    rows, cols = model.rows, model.cols
    experiment = {"task": model.experiment.task, **expand_layer(raw["experiment"], file, "experiment")}
    if "init_seed_from" in raw["experiment"]:
        experiment["init_seed_from"] = list(model.experiment.init_seed_from)
        if {"row", "row_group"} <= set(experiment["init_seed_from"]):
            raise SpecError(file, "experiment.init_seed_from", "name row or row_group, not both (row_group: the "
                                                               "rows of a group share the init seed)")
    if model.experiment.seeds_from is not None:
        src = model.experiment.seeds_from
        where = "experiment.seeds_from"
        if src.spec == model.id:
            raise SpecError(file, f"{where}.spec", "names this spec itself")
        for key, mapping, names in (("rows", src.rows, rows), ("cols", src.cols, cols)):
            for name, other in mapping.items():
                if name not in names:
                    raise SpecError(file, f"{where}.{key}.{name}", f"not one of the {key}")
                if not other.strip():
                    raise SpecError(file, f"{where}.{key}.{name}", f"name the {key[:-1]} of {src.spec}")
        experiment["seeds_from"] = {"spec": src.spec, "rows": dict(src.rows), "cols": dict(src.cols)}
    _check_layer(experiment, file, "experiment", rows, cols)
    return experiment


def _tier(name: str, model: SpecFile, raw: dict[str, Any], file: str) -> Tier:
    """The tier ``name``: its layer expanded and checked, its cell patterns each matching a cell,
    its pre-registered seeds checked, every row it runs named by its overrides."""
    rows, cols = model.rows, model.cols
    t = getattr(model.tiers, name)
    where = f"tiers.{name}"
    layer = expand_layer(raw["tiers"][name], file, where)
    _check_layer(layer, file, where, rows, cols)
    for key, reasons in (("unavailable", t.unavailable), ("one_class_why", t.one_class_why),
                         ("cell_why", t.cell_why)):
        for pattern, why in reasons.items():
            if "|" not in pattern:
                raise SpecError(file, f"{where}.{key}.{pattern}", "pattern must read 'row|col' (globs allowed)")
            if not why.strip():
                raise SpecError(file, f"{where}.{key}.{pattern}", "give the reason")
            if not any(match_cell(pattern, r, c) for r in rows for c in cols):
                raise SpecError(file, f"{where}.{key}.{pattern}", "matches no cell")
    for i, m in enumerate(t.more_seeds):
        if not any(match_cell(m.cells, r, c) for r in rows for c in cols):
            raise SpecError(file, f"{where}.more_seeds.{i}.cells", f"{m.cells!r} matches no cell")
        _check_seen_before(m, model.experiment.seeds_from, file, f"{where}.more_seeds.{i}")
    tier = Tier(name=name, seeds=t.seeds, deviations=list(t.deviations), layer=layer,
                unavailable=dict(t.unavailable), one_class_why=dict(t.one_class_why), cell_why=dict(t.cell_why),
                more_seeds=tuple(m.model_dump(exclude_none=True) for m in t.more_seeds), inherits=dict(t.inherits),
                why=dict(t.why), tier_wide=_tier_wide(t.tier_wide, model, file, f"{where}.tier_wide"))
    running = [r for r in rows if any(not any(match_cell(p, r, c) for p in (*model.experiment.exclude,
                                                                             *t.unavailable))
                                      for c in cols if c not in model.derived_cols)]
    _check_rows_named(tier, file, where, rows, running)
    return tier


def _check_derived_cols(model: SpecFile, file: str) -> None:
    """Each derived column is a column, averaging columns that are not derived themselves."""
    cols = model.cols
    for name, d in model.derived_cols.items():
        where = f"derived_cols.{name}"
        if name not in cols:
            raise SpecError(file, where, "not one of the cols")
        for c in d.mean_of:
            if c not in cols or c in model.derived_cols:
                raise SpecError(file, f"{where}.mean_of", f"{c!r} is not a (non-derived) col")


def _check_priors(spec: Spec, file: str) -> None:
    """A spec with prior tokens (``prior: exact``, ...) resolves every cell at every tier: a
    token that cannot be resolved fails at load, not when a job starts."""
    if not (has_prior_tokens(spec.experiment) or any(has_prior_tokens(t.layer) for t in spec.tiers.values())):
        return
    for tier in TIERS:
        for row, col in spec.cells():
            try:
                spec.resolve(tier, row, col)
            except PriorError as e:
                raise SpecError(file, f"cell {row}|{col} at tier {tier}", str(e)) from None


def _check_ids(model, file: str) -> None:
    m = ID_RE.match(model.id)
    if not m:
        raise SpecError(file, "id", f"{model.id!r} does not read table<N>-<paper> or fig<N>-<paper>")
    if m.group(4) != model.paper:
        raise SpecError(file, "id", f"id {model.id!r} does not end with its paper {model.paper!r}")
    if (model.kind == "table") != (m.group(1) == "table"):
        raise SpecError(file, "kind", f"{model.kind!r} must be 'table' for table ids and 'figure' for fig ids")
    stem = Path(file).stem
    if stem and stem != model.id and not file.startswith("<"):
        raise SpecError(file, "id", f"{model.id!r} differs from the file name {stem!r}.yaml")


def _check_layer(layer: dict[str, Any], file: str, where: str, rows: list[str], cols: list[str]) -> None:
    for key, names in (("rows", rows), ("cols", cols)):
        for name in layer.get(key) or {}:
            if name not in names:
                raise SpecError(file, f"{where}.{key}.{name}", f"not one of the {key}")
    for pattern in layer.get("cells") or {}:
        if "|" not in pattern or not any(match_cell(pattern, r, c) for r in rows for c in cols):
            raise SpecError(file, f"{where}.cells.{pattern}", "expected 'row|col' (globs allowed) matching at least "
                                                              "one cell")


def row_naming_overrides(layer: dict[str, Any], rows: list[str]) -> list[str]:
    """The overrides of a tier's layer that name rows: its ``rows`` entries and the ``cells``
    patterns whose row part does not match every row (``"MLP [Pun]*|*"``, not ``"*|*"``)."""
    out = [f"rows.{r}" for r in layer.get("rows") or {}]
    for pattern in layer.get("cells") or {}:
        row_part = pattern.partition("|")[0]
        if not all(match_name(r, row_part) for r in rows):
            out.append(pattern)
    return out


def rows_not_named(tier: Tier, rows: list[str], running: list[str]) -> list[str]:
    """The rows of ``running`` (those the tier runs) that none of the tier's row-naming overrides
    (:func:`row_naming_overrides`) matches, at a tier that has some: such a row would run with
    the settings the tier changes for the others (issue 54: a new row trained at the paper's 100
    epochs while its block got 20). A row that ``inherits`` another is matched as that row."""
    naming = row_naming_overrides(tier.layer, rows)
    if not naming:
        return []

    def named(row: str) -> bool:
        name = tier.matched_as(row)
        return name in tier.tier_wide or any(name == n[len("rows."):] if n.startswith("rows.") else
                                             match_name(name, n.partition("|")[0]) for n in naming)

    return [r for r in running if not named(r)]


def _check_seen_before(entry, seeds_from, file: str, where: str) -> None:
    """A ``more_seeds`` entry that extends cells shared with another spec (``experiment.seeds_from``)
    takes that spec's seeds as they are, some perhaps already run and seen: it must say what they
    show (``seen_before``), so the extension's foreseeable outcome is on record beside its reason."""
    if seeds_from is None or (entry.seen_before or "").strip():
        return
    shared = [f"{r}|{c}" for r in seeds_from.rows for c in seeds_from.cols if match_cell(entry.cells, r, c)]
    if shared:
        raise SpecError(file, f"{where}.seen_before", f"missing: {shared[0]} is {seeds_from.spec}'s cell "
                                                      "(experiment.seeds_from); say what its seeds already in the "
                                                      "store show (or that there are none)")


def _check_rows_named(tier: Tier, file: str, where: str, rows: list[str], running: list[str]) -> None:
    for row, other in tier.inherits.items():
        key = f"{where}.inherits.{row}"
        if row not in rows or other not in rows:
            raise SpecError(file, key, f"{row if row not in rows else other!r} is not one of the rows")
        if other in tier.inherits or other == row:
            raise SpecError(file, key, f"{other!r} inherits itself or another row: name a row with its own overrides")
        if row in (tier.layer.get("rows") or {}):
            raise SpecError(file, key, f"{row!r} takes {other!r}'s overrides: give it no `rows` entry of its own")
    for row in tier.tier_wide:
        own = [n for n in row_naming_overrides(tier.layer, rows) if (n == f"rows.{row}" if n.startswith("rows.") else
                                                                     match_name(row, n.partition("|")[0]))]
        if own or row in tier.inherits:
            raise SpecError(file, f"{where}.tier_wide", f"{row!r} is not at the tier-wide params alone: "
                                                        + (f"{own[0]!r} names it" if own else "it inherits a row"))
    lacking = rows_not_named(tier, rows, running)
    if lacking:
        naming = row_naming_overrides(tier.layer, rows)
        shown = ", ".join(repr(n) for n in naming[:4]) + (f" and {len(naming) - 4} more" if len(naming) > 4 else "")
        raise SpecError(file, where, f"row(s) {', '.join(map(repr, lacking[:5]))} are named by none of this tier's "
                                     f"row overrides ({shown}), so they would run with the settings the tier changes "
                                     f"for the other rows: list it in `tier_wide: [{lacking[0]}]` when "
                                     f"the tier-wide params are its budget, give it an override, or take another "
                                     f"row's with `inherits: {{{lacking[0]}: ROW}}`")


def _tier_wide(names: list[str], model: SpecFile, file: str, where: str) -> tuple[str, ...]:
    """A tier's ``tier_wide`` list (row and row-group names) as rows."""
    out: list[str] = []
    for name in names:
        members = model.row_groups.get(name, [name] if name in model.rows else None)
        if members is None:
            raise SpecError(file, where, f"{name!r} is neither a row nor a row group")
        out += [r for r in members if r not in out]
    return tuple(out)


def _table_cells(model, file: str) -> list[tuple[str, ReportedCellModel]]:
    """``reported.table`` as cells, in table order: (where, cell) pairs."""
    from pubench.registry.schema import ReportedCellModel

    metrics = list(model.metrics)
    out = []
    for row, entries in model.reported.table.items():
        for col, entry in entries.items():
            where = f"reported.table.{row}.{col}"
            if isinstance(entry, list):
                if len(entry) != len(metrics):
                    raise SpecError(file, where, f"{len(entry)} entries for the {len(metrics)} metrics "
                                                 f"({', '.join(metrics)}): one each, null where there is no cell")
                per_metric = list(zip(metrics, entry))
            else:
                per_metric = [(None, entry)]
            for i, (metric, e) in enumerate(per_metric):
                if e is not None:
                    at = where if metric is None else f"{where}[{i}]"
                    out.append((at, ReportedCellModel(row=row, col=col, metric=metric, **_entry(e, file, at))))
    return out


#: "MEAN", "MEAN ± STD", either followed by the printed mark
_ENTRY = re.compile(r"(?P<mean>[-+]?[0-9][0-9.eE+-]*)(?:\s*±\s*(?P<std>[0-9][0-9.eE+-]*))?(?:\s+(?P<mark>\S.*))?")


def _entry(entry, file: str, where: str) -> dict[str, Any]:
    """A ``reported.table`` entry as a cell's mean, std, note and mark."""
    if isinstance(entry, (int, float)):
        return {"mean": float(entry)}
    if not isinstance(entry, str):
        return entry.model_dump(exclude_unset=True)
    m = _ENTRY.fullmatch(entry.strip())
    try:
        mean, std = float(m["mean"]), None if m["std"] is None else float(m["std"])
    except (TypeError, ValueError):
        raise SpecError(file, where, f"{entry!r} does not read 'MEAN', 'MEAN ± STD' or either with the printed mark "
                                     "after it (or give {mean, std, note, mark})") from None
    return {"mean": mean, "std": std, **({"mark": m["mark"]} if m["mark"] else {})}


def _reported_cells(model, file: str) -> list[ReportedCell]:
    metrics, rows, cols = list(model.metrics), model.rows, model.cols
    only_metric = metrics[0] if len(metrics) == 1 else None
    out: dict[tuple[str, str, str], ReportedCell] = {}
    cells = [*_table_cells(model, file), *((f"reported.cells[{i}]", c) for i, c in enumerate(model.reported.cells))]
    for where, c in cells:
        if c.row not in rows:
            raise SpecError(file, f"{where}.row", f"{c.row!r} is not one of the rows")
        if c.col not in cols:
            raise SpecError(file, f"{where}.col", f"{c.col!r} is not one of the cols")
        metric = c.metric or only_metric
        if metric is None:
            raise SpecError(file, f"{where}.metric", "missing (the spec has several metrics)")
        if metric not in metrics:
            raise SpecError(file, f"{where}.metric", f"unknown metric {metric!r}")
        if c.mean is None and not c.note:
            raise SpecError(file, f"{where}.note", "a cell with no reported mean needs a note saying why")
        if c.std is not None and c.mean is None:
            raise SpecError(file, f"{where}.std", "a std without a mean")
        if (c.row, c.col, metric) in out:
            raise SpecError(file, where, f"duplicate reported cell ({c.row}, {c.col}, {metric})")
        out[(c.row, c.col, metric)] = ReportedCell(c.row, c.col, metric, c.mean, c.std, c.note, c.mark)
    if model.reported.unreported is None:
        return list(out.values())
    # every other cell is reported as null with the shared note, in row / col / metric order
    excluded = model.experiment.exclude
    return [out.get((r, c, m)) or ReportedCell(r, c, m, None, None, model.reported.unreported)
            for r in rows for c in cols for m in metrics
            if (r, c, m) in out or not any(match_cell(p, r, c) for p in excluded)]


def _curves(model: SpecFile, file: str) -> list[Curve]:
    out: list[Curve] = []
    if model.curves and model.kind != "figure":
        raise SpecError(file, "curves", "only a figure draws curves")
    for i, c in enumerate(model.curves):
        where = f"curves[{i}]"
        if c.title in {x.title for x in out}:
            raise SpecError(file, f"{where}.title", f"duplicate curve title {c.title!r}")
        for x in c.cols or ():
            if x not in model.cols or x in model.derived_cols:
                raise SpecError(file, f"{where}.cols", f"{x!r} is not a (non-derived) col")
        for key, path in (("y", c.y), ("x", c.x)):
            if not path or any(not part for part in path.split(".")):
                raise SpecError(file, f"{where}.{key}", f"{path!r} is not a dotted path into the record's info")
        xlabel = c.xlabel or ("epoch" if c.x == "epoch" else c.x.rsplit(".", 1)[-1])
        cols = tuple(c.cols or (x for x in model.cols if x not in model.derived_cols))
        out.append(Curve(c.title, c.y, c.x, xlabel, c.ylabel, c.format, cols))
    return out


def _claims(model: SpecFile, file: str, curves: list[Curve] = ()) -> list[Claim]:
    titles = {c.title: c for c in curves}
    out = []
    for i, c in enumerate(model.claims):
        where = f"claims[{i}]"
        revised = tuple(
            Revision(r.date, None if r.was is None else _claim(r.was, f"{where}.revised[{j}].was", file, model, titles),
                     _revision_why(r, "claim", f"{where}.revised[{j}]", file, model.version), r.commit)
            for j, r in enumerate(c.revised))
        counted_now = tuple(r.counted == "revised" for r in c.revised)
        out.append(replace(_claim(c, where, file, model, titles),
                           revised=tuple(r for r, now in zip(revised, counted_now) if not now),
                           history=tuple(r for r, now in zip(revised, counted_now) if now)))
    return out


def _claim(c, where: str, file: str, model: SpecFile, titles: dict[str, Curve]) -> Claim:
    """One claim (or a revised claim's earlier form), every name checked against the spec."""
    metrics, rows, cols = list(model.metrics), model.rows, model.cols
    if c.kind not in CLAIM_KINDS:
        raise SpecError(file, f"{where}.kind", f"unknown claim kind {c.kind!r} (one of {', '.join(CLAIM_KINDS)})")
    if c.kind == "curve_rises" or c.curve is not None:
        return _curve_claim(c, where, file, rows, titles, metrics[0])
    metric = c.metric or (metrics[0] if len(metrics) == 1 else None)
    if metric is None:
        raise SpecError(file, f"{where}.metric", "missing (the spec has several metrics)")
    if metric not in metrics:
        raise SpecError(file, f"{where}.metric", f"unknown metric {metric!r}")
    ccols = c.cols or list(cols)
    for r in c.rows:
        if r not in rows:
            raise SpecError(file, f"{where}.rows", f"{r!r} is not one of the rows")
    for x in ccols:
        if x not in cols:
            raise SpecError(file, f"{where}.cols", f"{x!r} is not one of the cols")
    need = {"best_row": 1, "greater": 2}.get(c.kind)
    if need and len(c.rows) != need:
        raise SpecError(file, f"{where}.rows", f"a {c.kind} claim names exactly {need} row(s)")
    if c.kind == "order" and len(c.rows) < 2:
        raise SpecError(file, f"{where}.rows", "an order claim names at least 2 rows")
    if c.kind in ("best_col", "col_order") and len(ccols) < 2:
        raise SpecError(file, f"{where}.cols", f"a {c.kind} claim names at least 2 cols")
    return Claim(c.kind, c.text, metric, tuple(c.rows), tuple(ccols))


def _curve_claim(c, where: str, file: str, rows: list[str], curves: dict[str, Curve], metric: str) -> Claim:
    """A ``curve_rises`` claim: its rows' curve (by title) ends above where it starts, in each listed col."""
    if c.kind != "curve_rises":
        raise SpecError(file, f"{where}.curve", f"only a curve_rises claim names a curve (this one is {c.kind})")
    if c.curve not in curves:
        raise SpecError(file, f"{where}.curve", f"{c.curve!r} is not the title of one of the spec's curves "
                                                f"({', '.join(map(repr, curves)) or 'none'})")
    if c.metric is not None:
        raise SpecError(file, f"{where}.metric", "a curve_rises claim reads its curve, not a metric")
    for r in c.rows:
        if r not in rows:
            raise SpecError(file, f"{where}.rows", f"{r!r} is not one of the rows")
    curve = curves[c.curve]
    for x in c.cols or ():
        if x not in curve.cols:
            raise SpecError(file, f"{where}.cols", f"{x!r} is not one of the curve's cols")
    if not c.rows:
        raise SpecError(file, f"{where}.rows", "a curve_rises claim names at least 1 row")
    return Claim(c.kind, c.text, metric, tuple(c.rows), tuple(c.cols or curve.cols), curve=c.curve)


def _regime(model: SpecFile, file: str) -> list[RegimeBlock]:
    """The ``regime:`` blocks, with their rows (a group's or listed), their columns (listed, or
    every non-derived column where the reference and baseline rows run) and metric resolved;
    every name checked against the spec."""
    from pydantic import ValidationError

    from pubench.registry.schema import RegimeBlockModel

    out: list[RegimeBlock] = []
    for i, b in enumerate(model.regime):
        where = f"regime[{i}]"
        if b.block in {x.name for x in out}:
            raise SpecError(file, f"{where}.block", f"duplicate block name {b.block!r}")
        revised = []
        for j, r in enumerate(b.revised):
            was = None
            if r.was is not None:
                wpath = f"{where}.revised[{j}].was"
                try:
                    old = RegimeBlockModel(**{"block": b.block, **r.was})
                except ValidationError as e:
                    raise SpecError(file, wpath, str(e.errors()[0]["msg"])) from None
                if old.revised:
                    raise SpecError(file, f"{wpath}.revised", "a block as it was has no revisions of its own")
                was = _block(old, wpath, file, model)
            revised.append(Revision(r.date, was, _revision_why(r, "block", f"{where}.revised[{j}]", file, model.version),
                                    r.commit))
        out.append(replace(_block(b, where, file, model), revised=tuple(revised)))
    return out


def _revision_why(entry, kind: str, where: str, file: str, version: int) -> str:
    """The sentence of a ``revised`` entry (:func:`pubench.registry.revisions.revision_text`)."""
    from pubench.registry.revisions import revision_text

    if getattr(entry, "counted", "first") == "revised" and (entry.version is None or entry.version >= version):
        raise SpecError(file, f"{where}.counted", f"the revised form counts only where the revision came with a "
                                                  f"version bump: give `version`, the earlier version (below "
                                                  f"{version}) whose records it followed")
    text = revision_text(entry, kind)
    if text is None:
        where_why = " or in the spec's notes file (regime.BLOCK.revised.DATE)" if kind == "block" else ""
        raise SpecError(file, f"{where}.why", f"missing: give the `commit` that made the change (its sentence is "
                                              f"rendered from the entry's facts) or say why here{where_why}")
    return text


def _block(b, where: str, file: str, model: SpecFile) -> RegimeBlock:
    """One regime block (or a revised block's earlier form), with its rows, columns and metric
    resolved and every name checked against the spec."""
    metrics = list(model.metrics)
    # A spec whose methods are its columns (methods_in: cols) lists a block's methods in `rows`
    # / `group` (a col group) and the settings it is checked in in `cols` (rows of the table).
    transposed = model.methods_in == "cols"
    methods, settings = (model.cols, model.rows) if transposed else (model.rows, model.cols)
    groups, group_key = (model.col_groups, "col_groups") if transposed else (model.row_groups, "row_groups")
    derived = {} if transposed else model.derived_cols

    def excluded(method: str, setting: str) -> bool:
        row, col = (setting, method) if transposed else (method, setting)
        return any(match_cell(p, row, col) for p in model.experiment.exclude)

    if (b.group is None) == (b.rows is None):
        raise SpecError(file, where, "give the block's rows as `group` (a row group) or `rows`, one of them")
    if b.group is not None and b.group not in groups:
        raise SpecError(file, f"{where}.group", f"{b.group!r} is not one of the {group_key}")
    rows = list(groups[b.group]) if b.group is not None else list(b.rows)
    for r in rows:
        if r not in methods:
            raise SpecError(file, f"{where}.rows", f"{r!r} is not one of the rows")
    reference = [b.reference] if isinstance(b.reference, str) else list(b.reference)
    if not reference:
        raise SpecError(file, f"{where}.reference", "name at least one row")
    for r in reference:
        if r not in rows:
            raise SpecError(file, f"{where}.reference", f"{r!r} is not one of the block's rows")
    metric = None
    if b.check == "trained":
        if len(reference) != 1:
            raise SpecError(file, f"{where}.reference", "a trained check names exactly one reference row")
        if b.baseline is None or b.margin is None:
            raise SpecError(file, where, "a trained check needs `baseline` (a row) and `margin` (metric units)")
        if b.baseline not in methods or b.baseline in reference:
            raise SpecError(file, f"{where}.baseline", f"{b.baseline!r} is not one of the rows (other than the "
                                                       "reference)")
        if b.max_share is not None:
            raise SpecError(file, f"{where}.max_share", "only a two_classes check has a max_share")
        metric = b.metric or (metrics[0] if len(metrics) == 1 else None)
        if metric is None:
            raise SpecError(file, f"{where}.metric", "missing (the spec has several metrics)")
        if metric not in metrics:
            raise SpecError(file, f"{where}.metric", f"unknown metric {metric!r}")
    else:
        for key in ("baseline", "margin", "metric"):
            if getattr(b, key) is not None:
                raise SpecError(file, f"{where}.{key}", "only a trained check has one")
    needed = reference + ([b.baseline] if b.baseline else [])
    runs = [c for c in settings if c not in derived and all(not excluded(r, c) for r in needed)]
    if b.cols is None:
        cols = runs
    else:
        cols = list(b.cols)
        for c in cols:
            if c not in settings:
                raise SpecError(file, f"{where}.cols", f"{c!r} is not one of the cols")
            if c in derived:
                raise SpecError(file, f"{where}.cols", f"{c!r} is a derived col (it follows its sources)")
            if c not in runs:
                raise SpecError(file, f"{where}.cols", f"the reference or baseline rows do not run in {c!r}")
    if not cols:
        raise SpecError(file, f"{where}.cols", "no column where the reference (and baseline) rows run")
    for tier in b.why:
        if tier not in TIERS:
            raise SpecError(file, f"{where}.why.{tier}", f"unknown tier (one of {', '.join(TIERS)})")
    if b.check != "two_classes" and b.auc_margin is not None:
        raise SpecError(file, f"{where}.auc_margin", "only a two_classes check has an auc_margin")
    return RegimeBlock(
        name=b.block, check=b.check, rows=tuple(rows), cols=tuple(cols), reference=tuple(reference),
        group=b.group, baseline=b.baseline, margin=float(b.margin or 0.0), metric=metric,
        max_share=None if b.max_share is None else float(b.max_share), why=tuple(b.why.items()),
        auc_margin=5.0 if b.auc_margin is None else float(b.auc_margin))


def validate_file(path: str | Path) -> Spec:
    """Every check a spec file gets when the registry loads it, on one file that may not be in
    the registry yet (nothing cached, nothing run): the schema, the reported-cell layout and the
    references across fields (:func:`parse_spec`), the unit names (registered or planned), the
    paper folder and id where the file lives under ``experiments/``, another spec with the same
    id, every cell's config resolved at every tier and checked by its task (unknown, missing and
    mistyped keys, at the line that sets them: :mod:`pubench.registry.task_check`). Raises the
    first :class:`SpecError`."""
    import warnings

    from pubench.errors import PubenchError, PubenchWarning
    from pubench.registry.task_check import first_rejection
    from pubench.registry.units import check_names

    path = Path(path)
    if notes.is_notes(path):  # a notes file is checked with its spec
        spec_file = notes.spec_of(path)
        if not spec_file.is_file():
            raise SpecError(str(path), "(file)", f"a notes file without its spec: no {spec_file.name} beside it")
        path = spec_file
    file = str(path)
    spec = _parse_file(path, read_text(path), notes.notes_text(path))
    check_names(spec.raw, file)
    if path.parent.parent.resolve() == experiments_root().resolve() and spec.paper != path.parent.name:
        raise SpecError(file, "paper", f"spec of paper {spec.paper!r} lives in folder {path.parent.name!r}")
    try:
        others = [p for p in spec_paths() if p.stem == spec.id and p.resolve() != path.resolve()]
    except SpecError:  # no registry folder here: nothing to clash with
        others = []
    if others:
        raise SpecError(file, "id", f"duplicate id, also in {others[0]}")
    for tier in spec.tiers:
        for row, col in spec.cells():
            if any(match_cell(p, row, col) for p in spec.tiers[tier].unavailable):
                continue
            try:
                spec.resolve(tier, row, col)
            except PubenchError as e:
                raise SpecError(file, f"cell {row}|{col} at tier {tier}", str(e)) from None
    try:
        rejection = first_rejection(spec)
    except ImportError as e:  # the tasks' checks import torch: the file's own checks passed
        warnings.warn(PubenchWarning(f"{file}: the tasks' parameter checks did not run ({e})"), stacklevel=2)
        rejection = None
    if rejection is not None:
        raise rejection
    return spec


def spec_paths(root: Path | None = None) -> list[Path]:
    root = root or experiments_root()
    if not root.is_dir():
        raise SpecError(str(root), "(folder)", "no such folder of specs (set PUBENCH_EXPERIMENTS or run from a "
                                               "pubench checkout)")
    return sorted(p for p in root.glob("*/*.yaml") if not p.parent.name.startswith("_") and not notes.is_notes(p))


def orphan_notes(root: Path | None = None) -> list[Path]:
    """Notes files (``<id>.notes.yaml``) with no spec ``<id>.yaml`` beside them."""
    root = root or experiments_root()
    return sorted(p for p in root.glob(f"*/*{notes.SUFFIX}") if not notes.spec_of(p).is_file())


def load_all(root: Path | None = None) -> dict[str, Spec]:
    """Every spec by id; raises SpecError on the first invalid file or a duplicate id."""
    specs: dict[str, Spec] = {}
    for p in orphan_notes(root)[:1]:
        raise SpecError(str(p), "(file)", f"a notes file without its spec: no {notes.spec_of(p).name} beside it")
    inputs = _spec_inputs()  # the same for every file: globbing and stat-ing ~60 files once, not per spec
    for p in spec_paths(root):
        s = load_spec(p, inputs=inputs)
        if s.paper != p.parent.name:
            raise SpecError(str(p), "paper", f"spec of paper {s.paper!r} lives in folder {p.parent.name!r}")
        if s.id in specs:
            raise SpecError(str(p), "id", f"duplicate id, also in {specs[s.id].path}")
        specs[s.id] = s
    designed = {t: [sid for sid, s in specs.items() if "*|*" not in s.tiers[t].unavailable] for t in TIERS}
    for s in specs.values():  # the registry is in memory: a reason's sentence reads no file
        s.designed = functools.partial(dict, designed)
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


def designed_tiers(root: Path | None = None) -> dict[str, list[str]]:
    """tier -> ids of the specs that run some cell at that tier (their ``unavailable`` has
    no ``'*|*'``); read from the files' ``tiers`` only, without validation."""
    paths = spec_paths(root)
    return _designed(tuple((str(p), p.stat().st_mtime_ns) for p in paths))


@functools.lru_cache(maxsize=4)
def _designed(stamp: tuple) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {t: [] for t in TIERS}
    for path, _ in stamp:
        for t in _designed_in(Path(path)):
            out[t].append(Path(path).stem)
    return out


def _designed_in(path: Path) -> list[str]:
    """The tiers one file designs (cached by the file's content)."""
    try:
        text = read_text(path)
    except SpecError:
        return []
    key = cache.key_of("designed", text)
    hit = cache.get("designed", key, list[str])
    if hit is not None:
        return hit
    try:
        tiers = parse_mapping(text, path).get("tiers") or {}
    except SpecError:
        return []
    found = [t for t in TIERS if "*|*" not in ((tiers.get(t) or {}).get("unavailable") or {})]
    cache.put("designed", key, found)
    return found

