"""Rows added to a table without editing its spec: a method of the user's beside the paper's.

``pubench run table2-punce --tier reduced --add-row 'MyPU=pu_method: {name: my_pu}' --like 'MLP nnPU'``
(or ``--overlay mine.yaml``, below) adds a row ``MyPU`` to the table: its config in every
column is the config the named baseline row (``like``) runs with at that tier, everything the
tier gives it included (epochs, batch size, data subset and split, backbone width: every
override that row gets), with the row's own keys set on top (:func:`overlay`). A unit block
the row names anew (``pu_method: {name: my_pu}`` where the baseline's is ``nnpu``) replaces
the baseline's block instead of merging into it: the baseline's hyperparameters belong to its
unit. In a table whose methods are its columns (``methods_in: cols``) the added method is a
column and ``like`` names a column.

The added row's jobs are a variant of the table (:meth:`pubench.registry.spec.Spec.with_added_rows`):
stored in the tier ``custom`` with ``job.variant = {base_tier, row: {name, like, set}}``, so they
never mix with the spec's own records; its report sets it beside the paper's rows, read from
the base tier's records, in the block (row group) of ``like``, with one-sided tests against
each of the block's rows (:mod:`pubench.report.added`).

An overlay file::

    rows:
      MyPU: {like: MLP nnPU, set: {pu_method: {name: my_pu}}}
      MyLoss: {like: infoNCE, set: {pretrain: {loss: {name: my_loss, temperature: 0.5}}}}
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pubench.errors import SpecError, UsageError, shorten

#: the param keys whose mapping is one unit's config: a new ``name`` there replaces the block
UNIT_BLOCKS = ("dataset", "backbone", "loss", "framework", "downstream", "pu_method")


@dataclass(frozen=True)
class AddedRow:
    """A row added to a table: its ``name``, the baseline row it runs like (``like``) and the
    canonical JSON of the params it sets on top of that row's config (``set_json``)."""

    name: str
    like: str
    set_json: str
    #: where the row was given: "" for ``--add-row``, else the overlay file (its problems name its lines)
    source: str = field(default="", compare=False)

    @property
    def sets(self) -> dict[str, Any]:
        return json.loads(self.set_json)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "like": self.like, "set": self.sets}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AddedRow:
        return cls(str(d["name"]), str(d["like"]), canonical(d.get("set") or {}))

    def describe(self) -> str:
        return f"{self.name} (like {self.like}: {flow(self.sets)})"


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def flow(value: Any) -> str:
    """A mapping as one line of YAML flow style (``pu_method: {name: my_pu}``)."""
    import yaml

    return " ".join(yaml.safe_dump(value, default_flow_style=True, sort_keys=True, allow_unicode=True,
                                   width=10**6).strip().removeprefix("{").removesuffix("}").split())


def parse_add_row(text: str, like: str | None) -> AddedRow:
    """``NAME=YAML mapping`` (``--add-row``) with its ``--like`` row. The mapping must be plain
    data (no date, ``!!binary``, ``.nan``, alias that contains itself ...): it becomes canonical
    JSON, the added jobs' ids."""
    from pubench.utils.plaindata import data_problem
    from pubench.utils.yamlio import NotYamlValue, load_value

    name, sep, body = text.partition("=")
    if not sep or not name.strip():
        raise UsageError(f"--add-row {shorten(text, 60)!r}: expected NAME=YAML (e.g. 'MyPU=pu_method: {{name: my_pu}}')")
    shown = shorten(name.strip(), 60)
    if not like:
        raise UsageError(f"--add-row {shown!r}: name the baseline row it runs like with --like ROW")
    try:
        sets = load_value(body) if body.strip() else {}
    except NotYamlValue as e:
        raise UsageError(f"--add-row {shown!r}: {e}") from None
    if not isinstance(sets, dict):
        raise UsageError(f"--add-row {shown!r}: the value must be a mapping of params (e.g. "
                         f"'pu_method: {{name: my_pu}}'), got {shorten(repr(sets), 60)}")
    problem = data_problem(sets)
    if problem is not None:
        key, why = problem
        raise UsageError(f"--add-row {shown!r}: {'' if key == '(top level)' else f'at {shorten(key, 60)!r}: '}{why}")
    return AddedRow(name.strip(), like, canonical(sets))


def read_overlay(path: str | Path) -> list[AddedRow]:
    """The rows an overlay file adds (``rows: {NAME: {like: ROW, set: {...}}}``)."""
    from pubench.utils.yamlio import read_yaml

    file = str(path)
    if not Path(path).is_file():
        raise UsageError(f"--overlay: no such file {file!r}")
    data = read_yaml(Path(path))
    unknown = sorted(set(data) - {"rows"})
    if unknown or not isinstance(data.get("rows"), dict) or not data["rows"]:
        raise OverlayError(file, unknown[0] if unknown else "rows", "an overlay holds `rows: {NAME: {like: ROW, "
                                                                    "set: {...}}}` and nothing else")
    out = []
    for name, entry in data["rows"].items():
        where = f"rows.{name}"
        if not isinstance(entry, dict) or set(entry) - {"like", "set"} or not isinstance(entry.get("like"), str):
            raise OverlayError(file, where, "expected {like: ROW, set: {params it sets}}")
        if not isinstance(entry.get("set", {}), dict):
            raise OverlayError(file, f"{where}.set", "expected a mapping of params")
        out.append(AddedRow(str(name), entry["like"], canonical(entry.get("set") or {}), source=file))
    return out


class OverlayError(SpecError):
    """A problem of a row of an overlay file: printed ``file:line: rows.NAME.key: problem``."""

    def __str__(self) -> str:
        from pubench.utils.yamlio import key_line

        try:
            line, exact = key_line(Path(self.file).read_text(encoding="utf-8"), self.key)
        except (OSError, UnicodeDecodeError):
            line, exact = None, False
        where = f"{self.file}:{line}" if line is not None else self.file
        return f"{where}: {self.key}: {self.problem}" + ("" if exact or line is None else f" (near line {line})")


def overlay(base: dict[str, Any], sets: dict[str, Any], replaced: list[str] | None = None,
            where: str = "") -> dict[str, Any]:
    """``base`` (the baseline row's resolved params) with ``sets`` on top: a deep merge (``null``
    deletes) in which a unit block (:data:`UNIT_BLOCKS`) that names another unit replaces the
    baseline's block; ``replaced`` collects the dotted keys of the blocks replaced."""
    out = dict(base)
    for key, value in sets.items():
        here = f"{where}{key}"
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and key in UNIT_BLOCKS and isinstance(value.get("name"), str) \
                and _name(out.get(key)) != value["name"]:
            if key in out and replaced is not None:
                replaced.append(here)
            out[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = overlay(out[key], value, replaced, f"{here}.")
        else:
            out[key] = copy.deepcopy(value)
    return out


def _name(block: Any) -> str | None:
    if isinstance(block, str):
        return block
    return block.get("name") if isinstance(block, dict) else None


def added_record(spec, row: AddedRow, r: str, c: str) -> dict[str, Any]:
    """What a job of an added row records of its making (``job.variant.row``): its name, baseline
    and own keys, what it inherits that the base tier changed from the paper's config for the
    baseline's cell (dotted key -> value), and the unit blocks its keys replace."""
    base = spec.variant[0]
    like = spec.baseline_cell(r, c)
    at_tier = spec.resolve(base, *like)["params"]
    paper = leaves(spec.resolve("paper", *like)["params"]) if "paper" in spec.tiers else {}
    replaced: list[str] = []
    overlay(at_tier, row.sets, replaced)
    own = {**leaves(row.sets), **dict.fromkeys(replaced)}
    inherits = {k: v for k, v in leaves(at_tier).items() if paper.get(k, _MISSING) != v and not _covered(k, own)}
    return {**row.to_dict(), "inherits": inherits, "replaces": replaced}


def _covered(key: str, own: dict[str, Any]) -> bool:
    return any(key == o or key.startswith(o + ".") or o.startswith(key + ".") for o in own)


def leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> value of every leaf of a nested mapping (a list is a leaf)."""
    if not isinstance(node, dict) or not node:
        return {prefix.rstrip("."): node} if prefix else {}
    out: dict[str, Any] = {}
    for k, v in node.items():
        out.update(leaves(v, f"{prefix}{k}."))
    return out


def block_of(spec, like: str) -> list[str]:
    """The methods an added row running like ``like`` is compared with: the row group (column
    group where methods are columns) holding ``like``, else every method of the table."""
    groups = spec.col_groups if spec.methods_in == "cols" else spec.row_groups
    methods = spec.cols if spec.methods_in == "cols" else spec.rows
    added = {r.name for r in spec.added}
    found = next((members for members in groups.values() if like in members), None)
    return [m for m in (found or methods) if m not in added and m not in spec.derived_cols]


def inheritance(spec, tier: str, row: AddedRow) -> tuple[dict[str, list[Any]], list[str]]:
    """(:func:`budget`, the unit blocks the row's keys replace) of an added row at ``tier``."""
    return budget(spec, tier, row), _replaced(spec, tier, row)


def _replaced(spec, tier: str, row: AddedRow) -> list[str]:
    replaced: list[str] = []
    for c in _settings(spec):
        if spec.unavailable_reason(tier, *spec.cell_of(row.like, c)) is None:
            overlay(spec.resolve(tier, *spec.cell_of(row.like, c))["params"], row.sets, replaced)
            break
    return replaced


def budget(spec, tier: str, row: AddedRow) -> dict[str, dict[str, Any]]:
    """What the added row takes from its baseline at ``tier`` that the tier changed from the
    paper's config: dotted key -> {setting (column; row where methods are columns): value} for
    every setting where the tier changed it (what the tier's overrides give the baseline, e.g.
    ``train.epochs``), for the keys the row neither sets nor replaces."""
    diffs: dict[str, dict[str, Any]] = {}
    for c in _settings(spec):
        cell = spec.cell_of(row.like, c)
        if spec.unavailable_reason(tier, *cell) is not None or spec.is_excluded(*cell):
            continue
        paper = leaves(spec.resolve("paper", *cell)["params"])
        for key, value in leaves(spec.resolve(tier, *cell)["params"]).items():
            if paper.get(key, _MISSING) != value:
                diffs.setdefault(key, {})[c] = value
    own = {**leaves(row.sets), **dict.fromkeys(_replaced(spec, tier, row))}
    return {k: v for k, v in diffs.items() if not _covered(k, own)}


_MISSING = object()


def _settings(spec) -> list[str]:
    """The other axis of the table: its columns (methods in rows), else its rows."""
    axis = spec.rows if spec.methods_in == "cols" else spec.cols
    return [x for x in axis if x not in spec.derived_cols]


def budget_text(values: dict[str, dict[str, Any]], settings: int | None = None, limit: int = 8) -> str:
    """``train.epochs = 20, data.split.n_labeled = 167 / 500 / 1667 (per column), data.dataset =
    cifar10_jpeg (in 3 of 6), ...`` from :func:`budget` (``settings``: how many settings the row runs in)."""
    parts = []
    for key, by in values.items():
        shown = [flow(v) if isinstance(v, dict) else v if isinstance(v, str) else json.dumps(v) for v in by.values()]
        text = f"{key} = {shown[0]}" if len(set(shown)) == 1 else f"{key} = {' / '.join(shown)}"
        if settings and len(by) < settings:
            text += f" (in {', '.join(by)})"
        elif len(set(shown)) > 1:
            text += " (per setting)"
        parts.append(text)
    more = f", and {len(parts) - limit} more (`pubench expand` shows them)" if len(parts) > limit else ""
    return ", ".join(parts[:limit]) + more if parts else "nothing: the tier runs it as the paper does"


def settings_run(spec, tier: str, row: AddedRow) -> int:
    """In how many settings (columns; rows where methods are columns) the added row runs at ``tier``."""
    return sum(spec.unavailable_reason(tier, *spec.cell_of(row.like, c)) is None
               and not spec.is_excluded(*spec.cell_of(row.like, c)) for c in _settings(spec))
