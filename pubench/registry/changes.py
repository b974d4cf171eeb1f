"""A tier's changes to the paper's setup, generated from the configs.

The loader resolves every cell at the ``paper`` tier and at each other tier; what a tier
changes is the difference, key by key. :func:`tier_changes` groups it for a reader: one line per
set of rows that share the same changes, each change a key path with the paper's value and the
tier's (``train.epochs 100 -> 5``), the columns named where the values differ between them::

    ResNet18 PN, PvU, uPU, nnPU; AllConv PvU, uPU, nnPU: train.epochs 100 -> 5; train.optimizer.lr 1e-5 -> 0.001
    ResNet18 PN, ..., puNCE: data.split.n_labeled 1000 -> 80 (n_P=1k), 3000 -> 240 (n_P=3k), 10000 -> 800 (n_P=10k)

So the numbers are written once, in the config, and a tier's list can neither omit a change nor
describe one the config does not make. What no config shows (a data copy's provenance, why a
value was chosen) is written by hand: a tier's ``why`` (usually in the spec's notes file) maps a
**key path** (``train.optimizer.lr``; globs allowed, ``*.prior``; a path also names the keys under
it) or a **cell pattern** (``"*vPU|*"``) to a sentence printed with the first line it concerns;
a key that concerns no change of the tier is an error naming it (:func:`check_whys`). The
tier's ``deviations`` keep the whole sentences about what the config cannot show.

``pubench expand ID --tier T --diff`` prints the lines; the reports print them, with the hand-written
deviations after them, as the tier's deviations from the paper (:func:`deviation_lines`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pubench.errors import PubenchError
from pubench.registry.spec import SpecError, match_cell, path_matches

if TYPE_CHECKING:
    from pubench.registry.spec import Spec

#: the paper tier: every other tier is read against it
PAPER = "paper"
_ABSENT = object()


@dataclass(frozen=True)
class Change:
    """One key path's change in a set of rows: ``values`` holds ``(paper, tier, cols)`` per
    distinct pair of printed values (``cols``: the columns where the row set has that pair)."""

    path: str
    values: tuple[tuple[str, str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class ChangeLine:
    """The changes a set of rows shares, with the hand-written whys printed beside them
    (``whys``: ``(key, sentence)`` of the tier's ``why`` entries that concern these changes first)."""

    rows: tuple[str, ...]
    changes: tuple[Change, ...]
    text: str  # "ROWS: path a -> b; ..."
    cells: frozenset[tuple[str, str]]  # the (row, col) cells in which some change of the line applies
    whys: tuple[tuple[str | None, str], ...] = ()  # key None: a cell pattern that covers the whole line

    def full_text(self) -> str:
        """The line with its whys: ``ROWS: changes. Why (KEY): sentence``."""
        return self.text + "." + "".join(f" Why{'' if key is None else f' ({key})'}: {why}" for key, why in self.whys)


# ------------------------------------------------------------------ the difference of two configs
def config_diff(paper: Any, tier: Any, path: tuple[str, ...] = ()) -> list[tuple[str, Any, Any]]:
    """``(dotted path, paper value, tier value)`` for every key whose value differs, in the paper's
    key order then the tier's new keys; a mapping only one side has is one change (a key the other
    lacks reads :data:`_ABSENT`), lists are values."""
    if isinstance(paper, dict) and isinstance(tier, dict):
        out = []
        for key in [*paper, *(k for k in tier if k not in paper)]:
            out += config_diff(paper.get(key, _ABSENT), tier.get(key, _ABSENT), (*path, str(key)))
        return out
    if paper is not tier and (paper is _ABSENT or tier is _ABSENT or type(paper) is not type(tier) or paper != tier):
        return [(".".join(path), paper, tier)]
    return []


def value_text(value: Any, digits: int = 4) -> str:
    """A config value as the change lines print it: ``unset`` for a key one side lacks, numbers
    short (``1e-5``, ``0.3878``), mappings and lists in YAML's flow style."""
    if value is _ABSENT:
        return "unset"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        text = format(value, f".{digits}g")
        mantissa, e, exponent = text.partition("e")
        return mantissa + (f"e{int(exponent)}" if e else "")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {value_text(v, digits)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v, digits) for v in value) + "]"
    return str(value)


def _pair(paper: Any, tier: Any) -> tuple[str, str]:
    """The two values' texts, with every digit where the short forms would print alike."""
    a, b = value_text(paper), value_text(tier)
    return (a, b) if a != b else (value_text(paper, 17), value_text(tier, 17))


# ------------------------------------------------------------------ a tier's changes, grouped
def _running(spec: Spec, tier: str) -> list[tuple[str, str]]:
    """The spec's own cells that ``tier`` runs (rows added by ``--add-row`` have no paper config)."""
    added = {r.name for r in spec.added}
    off = spec.tiers[tier].unavailable
    return [(r, c) for r, c in spec.cells()
            if (c if spec.methods_in == "cols" else r) not in added and not any(match_cell(p, r, c) for p in off)]


def cell_changes(spec: Spec, tier: str, only: list[str] | None = None
                 ) -> dict[tuple[str, str], list[tuple[str, Any, Any]]]:
    """(row, col) -> :func:`config_diff` of the cell's paper config and its config at ``tier``,
    for every cell ``tier`` runs (``only``: those matching one of these ``"row|col"`` patterns);
    a cell whose config does not resolve is left out (``pubench validate`` names it)."""
    out = {}
    for row, col in _running(spec, tier):
        if only and not any(match_cell(p, row, col) for p in only):
            continue
        try:
            paper, there = spec.resolve(PAPER, row, col)["params"], spec.resolve(tier, row, col)["params"]
        except PubenchError:
            continue
        out[(row, col)] = config_diff(paper, there)
    return out


def tier_changes(spec: Spec, tier: str, only: list[str] | None = None) -> list[ChangeLine]:
    """The changes of ``tier`` against the paper's config, one :class:`ChangeLine` per set of rows
    that shares them, in the table's row order (empty at the paper tier), each with the tier's
    ``why`` entries that concern it first; ``only``: the cells matching these patterns."""
    if tier == PAPER or tier not in spec.tiers:
        return []
    diffs = cell_changes(spec, tier, only)
    running = {r for r, _ in _running(spec, tier)}  # "every row" means the table's, whatever `only` selects
    runs: dict[str, list[str]] = {}
    for row, col in diffs:
        runs.setdefault(row, []).append(col)
    # path -> row -> col -> (paper text, tier text)
    by_path: dict[str, dict[str, dict[str, tuple[str, str]]]] = {}
    for (row, col), changes in diffs.items():
        for path, a, b in changes:
            by_path.setdefault(path, {}).setdefault(row, {})[col] = _pair(a, b)
    # per path, rows whose changes agree wherever both run join one cluster: (rows, col -> values)
    items: list[tuple[str, tuple[str, ...], dict[str, tuple[str, str]]]] = []
    for path, rows in by_path.items():
        clusters: list[tuple[list[str], dict[str, tuple[str, str]]]] = []
        for row in (r for r in spec.rows if r in rows):
            mine = rows[row]
            for members, merged in clusters:
                if all(_agree(mine, r, runs[row], rows[r], runs[r]) for r in members):
                    members.append(row)
                    merged.update(mine)
                    break
            else:
                clusters.append(([row], dict(mine)))
        items += [(path, tuple(members), merged) for members, merged in clusters]
    lines: dict[tuple[str, ...], list[tuple[str, dict[str, tuple[str, str]]]]] = {}
    for path, members, merged in items:
        lines.setdefault(members, []).append((path, merged))
    order = {r: i for i, r in enumerate(spec.rows)}
    out = []
    for members in sorted(lines, key=lambda m: (order[m[0]], -len(m), [order[r] for r in m])):
        cols = [c for c in spec.cols if any(c in runs[r] for r in members)]
        changes = tuple(_change(path, merged, cols, spec.col_groups) for path, merged in lines[members])
        cells = frozenset((r, c) for r in members for c in runs[r] if any(c in m for _, m in lines[members]))
        text = f"{rows_text(spec, members, running)}: " + "; ".join(change_text(ch) for ch in changes)
        out.append(ChangeLine(members, changes, text, cells))
    return _with_whys(spec, tier, out)


def _agree(mine: dict, row: str, my_cols: list[str], theirs: dict, their_cols: list[str]) -> bool:
    """Two rows' changes of one path agree in every column both run."""
    return all(mine.get(c) == theirs.get(c) for c in my_cols if c in their_cols)


def _change(path: str, by_col: dict[str, tuple[str, str]], cols: list[str],
            col_groups: dict[str, list[str]]) -> Change:
    groups: dict[tuple[str, str], list[str]] = {}
    for col in cols:
        if col in by_col:
            groups.setdefault(by_col[col], []).append(col)
    everywhere = len(groups) == 1 and len(next(iter(groups.values()))) == len(cols)
    return Change(path, tuple((a, b, () if everywhere else cols_named(cs, col_groups)) for (a, b), cs in groups.items()))


def cols_named(cols: list[str], col_groups: dict[str, list[str]]) -> tuple[str, ...]:
    """``cols`` with every column group they hold whole named by the group (``MNIST-I`` for its
    four columns), where its first column stood."""
    whole = {c: name for name, members in col_groups.items()
             if len(members) > 1 and all(m in cols for m in members) for c in members}
    out: list[str] = []
    for col in cols:
        name = whole.get(col, col)
        if name not in out:
            out.append(name)
    return tuple(out)


def change_text(change: Change) -> str:
    """``path a -> b``, with the columns where the values differ between them: ``path a1 -> b1
    (C1), a2 -> b2 (C2)``; ``path a1 (C1), a2 (C2) -> b`` where only the paper's values differ."""
    values = change.values

    def where(cols: tuple[str, ...]) -> str:
        return f" ({('; ' if any(', ' in c for c in cols) else ', ').join(cols)})" if cols else ""

    if len(values) > 1 and len({b for _, b, _ in values}) == 1:
        return f"{change.path} " + ", ".join(f"{a}{where(cs)}" for a, _, cs in values) + f" -> {values[0][1]}"
    if len(values) > 1 and len({a for a, _, _ in values}) == 1:
        return f"{change.path} {values[0][0]} -> " + ", ".join(f"{b}{where(cs)}" for _, b, cs in values)
    return f"{change.path} " + ", ".join(f"{a} -> {b}{where(cs)}" for a, b, cs in values)


def rows_text(spec: Spec, rows: tuple[str, ...], running: set[str] | None = None) -> str:
    """Row names as a line of changes starts: ``every row`` (of ``running``, the rows the tier
    runs), ``every row but X, Y`` (at most three left out), else the names, consecutive ones
    sharing their first word once (``ResNet18 PN, PvU, uPU``)."""
    running = [r for r in spec.rows if running is None or r in running]
    left_out = [r for r in running if r not in rows]
    if not left_out and len(rows) > 1:
        return "every row"
    if left_out and len(left_out) <= 3 and len(rows) > 2 * len(left_out):
        return f"every row but {names_text(left_out)}"
    return names_text(list(rows))


def names_text(names: list[str]) -> str:
    """``ResNet18 PN, PvU; AllConv uPU``: consecutive names sharing their first word say it once."""
    groups: list[tuple[str, list[str]]] = []
    for name in names:
        head, sep, rest = name.partition(" ")
        if " " in rest or rest.startswith("("):  # "nnPU (MixUp) (1)": the rest alone would not name it
            head, sep, rest = "", "", name
        if sep and groups and groups[-1][0] == head:
            groups[-1][1].append(rest)
        else:
            groups.append((head if sep else "", [rest if sep else name]))
    parts = [f"{head} {', '.join(rest)}" if head else rest[0] for head, rest in groups]
    return ("; " if any(len(rest) > 1 for _, rest in groups) else ", ").join(parts)


# ------------------------------------------------------------------ the hand-written whys
def _concerns(key: str, line: ChangeLine) -> bool | None:
    """Whether a ``why`` key concerns ``line``: True all of it, None some of it (a cell pattern
    matching some of its cells), False none."""
    if "|" in key:
        hits = [match_cell(key, r, c) for r, c in line.cells]
        return True if all(hits) else (None if any(hits) else False)
    return any(path_matches(key, ch.path) for ch in line.changes)


def _with_whys(spec: Spec, tier: str, lines: list[ChangeLine]) -> list[ChangeLine]:
    """``lines`` with each ``why`` of the tier beside the first line it concerns (a cell pattern:
    the first line all of whose cells it matches, else the first it matches partly)."""
    whys = getattr(spec.tiers[tier], "why", None) or {}
    placed: dict[int, list[tuple[str | None, str]]] = {}
    for key, why in whys.items():
        at = place_of(key, lines)
        if at is not None:
            whole = "|" in key and _concerns(key, lines[at]) is True
            placed.setdefault(at, []).append((None if whole else key, why))
    return [ChangeLine(ln.rows, ln.changes, ln.text, ln.cells, tuple(placed.get(i, ()))) for i, ln in enumerate(lines)]


def place_of(key: str, lines: list[ChangeLine]) -> int | None:
    """The index of the line a ``why`` key is printed with (None: it concerns no line)."""
    verdicts = [_concerns(key, ln) for ln in lines]
    for want in (True, None):
        if want in verdicts:
            return verdicts.index(want)
    return None


def check_whys(spec: Spec) -> None:
    """Every key of every tier's ``why`` concerns a change of that tier's config; else a
    :class:`SpecError` naming the key."""
    for name, tier in spec.tiers.items():
        whys = getattr(tier, "why", None) or {}
        if not whys:
            continue
        where = f"tiers.{name}.why"
        if name == PAPER:
            raise SpecError(spec.path, where, "the paper tier changes nothing: its reasons are decisions")
        lines = tier_changes(spec, name)
        for key, why in whys.items():
            if not str(why).strip():
                raise SpecError(spec.path, f"{where}.{key}", "empty: give the reason, or no entry")
            if "|" in key and not any(match_cell(key, r, c) for r in spec.rows for c in spec.cols):
                raise SpecError(spec.path, f"{where}.{key}", "matches no cell")
            if place_of(key, lines) is None:
                kind = "cell pattern" if "|" in key else "key path"
                raise SpecError(spec.path, f"{where}.{key}",
                                f"this {kind} names no change of the tier's config (its changes: `pubench expand "
                                f"{spec.id} --tier {name} --diff`)")


def deviation_lines(spec: Spec, tier: str) -> list[str]:
    """What a report lists as the tier's deviations from the paper: the generated change lines
    (with their whys), then the tier's written ``deviations``."""
    if tier not in spec.tiers:
        return []
    return [ln.full_text() for ln in tier_changes(spec, tier)] + list(spec.tiers[tier].deviations)


def deviations_lead(spec: Spec, tier: str) -> str | None:
    """The sentence a report prints before the tier's deviations where some are generated (None: none)."""
    if not tier_changes(spec, tier):
        return None
    command = (f"pubench expand {spec.id} --tier {tier} --diff" if spec.variant is None else
               f"pubench expand {spec.id} --tier {spec.variant[0]} --diff, with the variant's options")
    return (f"The config changes are generated from the paper tier's and this tier's resolved configs (`{command}`): "
            "each line names the rows that share them, as key path, paper value -> this tier's value, with the "
            "written why; the tier's written deviations follow them.")
