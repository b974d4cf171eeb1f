"""The spec of one paper table or figure: reported cells plus runnable experiment configs.

A spec is data (YAML under ``experiments/<paper>/<id>.yaml``); see ``docs/specs.md`` for
the format. ``pubench.registry.loader`` validates a file (its schema:
``pubench.registry.schema``), expands its presets and PU data sets and builds a :class:`Spec`;
any problem raises :class:`SpecError` naming the file, the key and the problem.

Resolution of a cell's config at a tier is a deep merge, later layers winning::

    experiment.params < experiment.rows[row] < experiment.cols[col] < experiment.cells["row|col"]
      < tiers[tier].params < tiers[tier].rows[row] < tiers[tier].cols[col] < tiers[tier].cells["row|col"]
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pubench.errors import PubenchError
from pubench.errors import SpecError as SpecError  # the registry's error, defined with the others
from pubench.registry.priors import evaluate_priors
from pubench.utils.hashing import canonical_json

PAPERS = {
    "pucl": "000 Contrastive Learning with Negative Sampling Correction (PUCL)",
    "punce": "001 Positive Unlabeled Contrastive Learning (puNCE)",
    "bcl": "002 Bayesian Self-Supervised Contrastive Learning (BCL)",
    "pupl": "003 Understanding Contrastive Representation Learning from PU Data (puCL/puNCE/puPL)",
    "wconpu": "004 Weighted Contrastive Learning with Hard Negative Mining for PU Learning (WConPU)",
}
TIERS = ("paper", "reduced", "smoke")
#: The tier of a variant of a spec's cells (``pubench run --set key.path=value``): results/custom/<id>/
CUSTOM = "custom"
ID_RE = re.compile(r"^(table|fig)(\d+)([a-z]?)-([a-z]+)$")
#: The most seeds a tier, a cell or ``--seeds`` may ask for: a typo such as 1000000000000 must
#: not expand forever.
MAX_SEEDS = 1000
CLAIM_KINDS = ("best_row", "order", "greater", "best_col", "col_order", "curve_rises")


class UnknownSpec(PubenchError, LookupError):
    """No spec with that id."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    higher_is_better: bool
    fmt: str = ".2f"


@dataclass(frozen=True)
class ReportedCell:
    row: str
    col: str
    metric: str
    mean: float | None
    std: float | None = None
    note: str | None = None
    mark: str | None = None  # e.g. a significance dagger exactly as printed


@dataclass(frozen=True)
class Revision:
    """A change to a claim or a regime block after the spec had records: when, what it was
    (``None``: it did not exist; else a :class:`Claim` or :class:`RegimeBlock`), and why (the
    sentence the loader renders from the entry's facts, :mod:`pubench.registry.revisions`)."""

    date: str
    was: Any
    why: str
    commit: str | None = None


@dataclass(frozen=True)
class Claim:
    kind: str  # best_row | order | greater | best_col | col_order | curve_rises
    text: str
    metric: str
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    curve: str | None = None  # curve_rises: the title of the spec's curve (its last point beats its first)
    revised: tuple[Revision, ...] = ()
    #: revisions that re-registered the claim with a version bump before that version's records
    #: (``counted: revised``): the claim as it is now is the one counted; kept as its history
    history: tuple[Revision, ...] = ()

    @property
    def original(self) -> "Claim | None":
        """The claim as first registered, where a revision changed it (None: unrevised, or added later)."""
        return self.revised[0].was if self.revised else None


@dataclass(frozen=True)
class Curve:
    """A figure panel from lists in each record's ``info`` (``curves:`` of a spec)."""

    title: str
    y: str
    x: str
    xlabel: str
    ylabel: str
    fmt: str
    cols: tuple[str, ...]


@dataclass(frozen=True)
class RegimeBlock:
    """A block of rows whose methods mean something only once its reference works (``regime:``
    in a spec; checked by :mod:`pubench.report.regime`). ``check``: ``trained`` (the one
    ``reference`` row beats ``baseline`` by at least ``margin`` in ``metric``) or
    ``two_classes`` (the reference rows' seeds are not near-one-class at a rate above ``max_share``,
    None: the regime rule's default bound; :mod:`pubench.report.regime`).
    ``cols`` are the columns checked (never derived ones); ``why``: tier -> written reason."""

    name: str
    check: str
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    reference: tuple[str, ...]
    group: str | None = None
    baseline: str | None = None
    margin: float = 0.0
    metric: str | None = None
    max_share: float | None = None
    why: tuple[tuple[str, str], ...] = ()
    auc_margin: float = 5.0  # two_classes: the reference rows' test AUC must beat chance (50) by this much
    revised: tuple[Revision, ...] = ()

    def why_at(self, tier: str) -> str | None:
        return dict(self.why).get(tier)


@dataclass
class Tier:
    name: str
    seeds: int
    deviations: list[str]
    layer: dict[str, Any]  # params / rows / cols / cells overrides
    unavailable: dict[str, str]  # "row|col" glob pattern -> reason
    one_class_why: dict[str, str] = field(default_factory=dict)  # "row|col" glob -> why its seeds are near-one-class
    cell_why: dict[str, str] = field(default_factory=dict)  # "row|col" glob -> a measured reason for what the cells show
    #: pre-registered cells that run more seeds: ({cells, seeds, date, why}, ...)
    more_seeds: tuple[dict[str, Any], ...] = ()
    #: row -> the row whose overrides at this tier it takes (``inherits:``; :meth:`Spec.resolve`)
    inherits: dict[str, str] = field(default_factory=dict)
    #: key path or "row|col" pattern -> why the tier changes that (printed with the generated
    #: change lines, :mod:`pubench.registry.changes`)
    why: dict[str, str] = field(default_factory=dict)
    #: rows the tier runs at its tier-wide params alone (``tier_wide:``, row or row-group names
    #: resolved to rows): named for the rule that every row is at its tier's budget
    tier_wide: tuple[str, ...] = ()

    def matched_as(self, row: str) -> str:
        """The row name this tier's ``rows`` and ``cells`` overrides are matched against for ``row``."""
        return self.inherits.get(row, row)

    def seeds_of(self, row: str, col: str) -> int:
        """The seeds a cell runs at this tier: the tier's, or more where a ``more_seeds`` entry says so."""
        return max([self.seeds, *(m["seeds"] for m in self.more_seeds if match_cell(m["cells"], row, col))])


@dataclass
class Spec:
    id: str
    paper: str
    kind: str  # table | figure
    title: str
    caption: str
    version: int
    source: str
    metrics: dict[str, Metric]
    rows: list[str]
    cols: list[str]
    row_groups: dict[str, list[str]]
    col_groups: dict[str, list[str]]
    reported_seeds: int | None
    pm: str | None
    reported: list[ReportedCell]
    reported_notes: list[str]
    decisions: list[str]
    claims: list[Claim]
    experiment: dict[str, Any]
    exclude: list[str]
    tiers: dict[str, Tier]
    derived_cols: dict[str, list[str]] = field(default_factory=dict)  # col -> the cols it averages
    curves: list[Curve] = field(default_factory=list)  # figure panels drawn from lists in the records' info
    regime: list[RegimeBlock] = field(default_factory=list)  # blocks checked before their claims are read

    @property
    def significance(self) -> dict[str, Any] | None:
        """``reported.significance`` (the meaning of the paper's significance marks), or None."""
        return (self.raw.get("reported") or {}).get("significance")

    @property
    def methods_in(self) -> str:
        """Which axis holds the compared methods (``rows`` unless the spec says ``cols``)."""
        return self.raw.get("methods_in", "rows")

    @property
    def init_seed_from(self) -> tuple[str, ...]:
        """Cell axes the init seed depends on (``experiment.init_seed_from``, default row and col)."""
        return tuple(self.experiment.get("init_seed_from", ("row", "col")))
    path: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    #: data set -> images per class of its training split, for every data set the spec names
    #: that has them (the loader takes them from the data set table): ``prior: exact`` reads them
    class_counts: dict[str, list[int]] = field(default_factory=dict, repr=False)
    #: ``() -> {tier: ids of the specs with a config at that tier}``: the registry's view the
    #: sentence of a ``not_designed`` reason needs (the loader sets it; None: "none")
    designed: Callable[[], dict[str, list[str]]] | None = field(default=None, repr=False, compare=False)
    _reasons: dict[tuple[str, str], str] = field(default_factory=dict, repr=False, compare=False)
    #: (base tier, overrides) of the variant this view is (:meth:`with_variant`; rows added with
    #: :meth:`with_added_rows`: no overrides); None for the spec itself
    variant: tuple[str, tuple[str, ...]] | None = field(default=None, repr=False, compare=False)
    #: the rows this view adds to the table (:meth:`with_added_rows`: ``pubench run --add-row``), each
    #: a :class:`pubench.registry.added_rows.AddedRow`; empty for the spec itself
    added: tuple = field(default=(), repr=False, compare=False)
    #: tier -> {(row, col): (the resolved params as JSON, their canonical JSON)}: filled by
    #: :meth:`precompute` or, for a spec from the cache, by :attr:`precomputed`; read by :meth:`resolve`
    _resolved: dict[str, dict[tuple[str, str], tuple[str, str]]] = field(default_factory=dict, repr=False,
                                                                        compare=False)
    #: ``tier -> {(row, col): (JSON, canonical JSON)}`` as :meth:`precompute` made it, read on the
    #: first :meth:`resolve` at that tier (the loader sets it for a cached spec; None: computed)
    precomputed: Callable[[str], dict[tuple[str, str], tuple[str, str]] | None] | None = field(
        default=None, repr=False, compare=False)

    @property
    def seed_spec(self) -> str:
        """The spec whose data seeds this one takes (``experiment.seeds_from.spec``; default itself)."""
        return (self.experiment.get("seeds_from") or {}).get("spec", self.id)

    def shared_cell(self, row: str, col: str) -> tuple[str, str, str] | None:
        """``(spec, row, col)`` of the other spec's cell this one is the same experiment as
        (``experiment.seeds_from``: its row and column both mapped), or None."""
        src = self.experiment.get("seeds_from") or {}
        if row in src.get("rows", {}) and col in src.get("cols", {}):
            return src["spec"], src["rows"][row], src["cols"][col]
        return None

    def with_variant(self, base_tier: str, overrides: list[str] | tuple[str, ...]) -> Spec:
        """This spec with a :data:`CUSTOM` tier: ``base_tier``'s config of every cell with
        ``overrides`` applied (what ``pubench run --tier BASE --set ...`` runs), its seeds and
        unavailable cells, and its deviations plus one saying what the variant changes."""
        if base_tier not in self.tiers:
            raise SpecError(f"{self.id}: a variant of unknown tier {base_tier!r}")
        base, sets = self.tiers[base_tier], tuple(overrides)
        said = f"A custom variant of the `{base_tier}` tier, not a committed config: `pubench run --tier {base_tier}" \
               + "".join(f" --set {o}" for o in sets) + "`."
        # no one_class_why or cell_why carries over: they explain the base tier's measured seeds, not a variant's
        from pubench.registry.overrides import overridden_deviations

        from pubench.registry.overrides import parse_override

        paths = [".".join(parse_override(o)[0]) for o in sets]
        # a why of a key the variant sets no longer explains its value
        whys = {k: v for k, v in base.why.items() if "|" in k or not any(path_matches(k, p) for p in paths)}
        custom = Tier(CUSTOM, base.seeds, [*overridden_deviations(base.deviations, sets), said], base.layer,
                      dict(base.unavailable), inherits=dict(base.inherits), why=whys, tier_wide=base.tier_wide)
        return replace(self, tiers={**self.tiers, CUSTOM: custom}, variant=(base_tier, sets), _reasons={}, _resolved={})

    def with_added_rows(self, base_tier: str, rows: tuple) -> Spec:
        """This spec with rows added (``pubench run --tier BASE --add-row NAME=... --like ROW``; each
        an :class:`~pubench.registry.added_rows.AddedRow`) and a :data:`CUSTOM` tier: an added row's
        config in a column is its baseline row's (``like``) at ``base_tier`` with its own keys on top
        (:func:`pubench.registry.added_rows.overlay`); the spec's own rows keep their configs at
        ``base_tier``. Each added row joins its baseline's block (row group) after the block's last
        row; in a table whose methods are its columns, it is a column."""
        if base_tier not in self.tiers:
            raise SpecError(f"{self.id}: rows added at unknown tier {base_tier!r}")
        base = self.tiers[base_tier]
        said = (f"Rows added to the paper's table, not in the spec (`pubench run --tier {base_tier} --add-row`): "
                + "; ".join(f"`{r.describe()}`" for r in rows) + ". Each runs its baseline's config at this tier "
                "(every override the tier gives that row) with its own keys on top; it has no reported number.")
        custom = Tier(CUSTOM, base.seeds, [*base.deviations, said], base.layer, dict(base.unavailable),
                      more_seeds=base.more_seeds, inherits=dict(base.inherits), why=dict(base.why),
                      tier_wide=base.tier_wide)
        methods = list(self.cols if self.methods_in == "cols" else self.rows)
        groups = {g: list(m) for g, m in (self.col_groups if self.methods_in == "cols" else self.row_groups).items()}
        for r in rows:
            group = next((g for g, members in groups.items() if r.like in members), None)
            after = groups[group][-1] if group else r.like
            while methods.index(after) + 1 < len(methods) and methods[methods.index(after) + 1] in \
                    {x.name for x in rows}:  # after the rows added before it
                after = methods[methods.index(after) + 1]
            methods.insert(methods.index(after) + 1, r.name)
            if group:
                groups[group].append(r.name)
        axes = {"cols": methods, "col_groups": groups} if self.methods_in == "cols" else \
            {"rows": methods, "row_groups": groups}
        return replace(self, **axes, tiers={**self.tiers, CUSTOM: custom}, variant=(base_tier, ()),
                       added=tuple(rows), _reasons={}, _resolved={})

    def added_row(self, row: str, col: str):
        """The :class:`~pubench.registry.added_rows.AddedRow` whose cell (row, col) is, or None."""
        method = col if self.methods_in == "cols" else row
        return next((r for r in self.added if r.name == method), None)

    def cell_of(self, method: str, setting: str) -> tuple[str, str]:
        """(row, col) of a method (a row, or a column where methods are columns) in a setting."""
        return (setting, method) if self.methods_in == "cols" else (method, setting)

    def baseline_cell(self, row: str, col: str) -> tuple[str, str]:
        """The spec's own cell an added row's cell runs like (the cell itself for the spec's own)."""
        added = self.added_row(row, col) if self.added else None
        if added is None:
            return row, col
        return (row, added.like) if self.methods_in == "cols" else (added.like, col)

    @property
    def variant_label(self) -> str | None:
        """``reduced + data.M=100`` for a variant view (:meth:`with_variant`), ``reduced + added rows:
        MyPU`` for rows added (:meth:`with_added_rows`), else None."""
        if self.variant is None:
            return None
        if self.added:
            return f"{self.variant[0]} + added rows: {', '.join(r.name for r in self.added)}"
        return " + ".join([self.variant[0], *self.variant[1]])

    # ---- cells -------------------------------------------------------------------
    def cells(self) -> list[tuple[str, str]]:
        """Every (row, col) the spec runs, in paper order (rows x cols minus excluded)."""
        return [(r, c) for r in self.rows for c in self.cols
                if c not in self.derived_cols and not self.is_excluded(r, c)]

    def is_excluded(self, row: str, col: str) -> bool:
        row, col = self.baseline_cell(row, col)
        return any(match_cell(p, row, col) for p in self.exclude)

    def reported_cell(self, row: str, col: str, metric: str) -> ReportedCell | None:
        index = self.__dict__.get("_reported_index")
        if index is None or index[0] is not self.reported:  # built once per list of reported cells
            index = self.__dict__["_reported_index"] = (self.reported, {})
            for c in reversed(self.reported):  # the first of duplicates wins, as a scan would find it
                index[1][(c.row, c.col, c.metric)] = c
        return index[1].get((row, col, metric))

    def unavailable_reason(self, tier: str, row: str, col: str) -> str | None:
        """Why ``tier`` does not run this cell (None if it does): the spec's sentence, or the
        sentence of its reason key (:data:`REASONS`)."""
        row, col = self.baseline_cell(row, col)
        for pattern, why in self.tiers[tier].unavailable.items():
            if match_cell(pattern, row, col):
                if (why, tier) not in self._reasons:  # a generated sentence asks the registry: once per spec
                    designed = self.designed().get(tier, []) if why in REASONS and self.designed else []
                    self._reasons[(why, tier)] = reason_text(why, tier, designed)
                return self._reasons[(why, tier)]
        return None

    def one_class_reason(self, tier: str, row: str, col: str) -> tuple[str, str] | None:
        """(pattern, reason) of the tier's ``one_class_why`` entry covering the cell, or None."""
        return self._tier_reason("one_class_why", tier, row, col)

    def cell_reason(self, tier: str, row: str, col: str) -> tuple[str, str] | None:
        """(pattern, reason) of the tier's ``cell_why`` entry covering the cell, or None."""
        return self._tier_reason("cell_why", tier, row, col)

    def _tier_reason(self, key: str, tier: str, row: str, col: str) -> tuple[str, str] | None:
        t = self.tiers.get(tier)
        for pattern, why in (getattr(t, key).items() if t else ()):
            if match_cell(pattern, row, col):
                return pattern, why
        return None

    def resolve(self, tier: str, row: str, col: str) -> dict[str, Any]:
        """The fully resolved experiment config of one cell at one tier.

        Computed priors (``exact``, ``data.prior``; :mod:`pubench.registry.priors`) are
        evaluated where they are written: those of ``experiment`` on the cell's paper-tier
        config, those of the tier on the tier's config, from :attr:`class_counts`: no file is
        read.
        """
        hit = self._precomputed(tier, row, col)
        if hit is not None:
            return {"task": self.experiment["task"], "params": json.loads(hit[0])}  # a fresh copy, faster than deepcopy
        return self._resolve(tier, row, col)

    def resolve_with_json(self, tier: str, row: str, col: str) -> tuple[dict[str, Any], str]:
        """:meth:`resolve` and the canonical JSON of the resolved params."""
        hit = self._precomputed(tier, row, col)
        if hit is not None:
            return {"task": self.experiment["task"], "params": json.loads(hit[0])}, hit[1]
        cfg = self._resolve(tier, row, col)
        return cfg, canonical_json(cfg["params"])

    def precompute(self) -> None:
        """Resolve every cell at every tier once (kept as JSON, and its canonical JSON), so that
        :meth:`resolve` only parses a copy. Params that JSON would change (a tuple, a date, a key
        that is not a string) are resolved on each call instead."""
        for tier in self.tiers:
            for row, col in self.cells():
                try:
                    params = self._resolve(tier, row, col)["params"]
                    text = json.dumps(params, allow_nan=False)
                except PubenchError:
                    continue  # raised again when the cell is resolved
                except (TypeError, ValueError):
                    continue  # no JSON for it (a date, a NaN)
                if json.loads(text) == params:
                    self._resolved.setdefault(tier, {})[(row, col)] = (text, canonical_json(params))

    def _precomputed(self, tier: str, row: str, col: str) -> tuple[str, str] | None:
        cells = self._resolved.get(tier)
        if cells is None:
            cells = self._resolved[tier] = (self.precomputed(tier) if self.precomputed else None) or {}
        return cells.get((row, col))

    def _resolve(self, tier: str, row: str, col: str) -> dict[str, Any]:
        if tier == CUSTOM and self.variant is not None and self.added:
            from pubench.registry.added_rows import overlay

            cfg = self._resolve(self.variant[0], *self.baseline_cell(row, col))
            added = self.added_row(row, col)
            if added is None:
                return cfg
            return {"task": cfg["task"], "params": evaluate_priors(overlay(cfg["params"], added.sets),
                                                                   self.class_counts)}
        if tier == CUSTOM and self.variant is not None:
            from pubench.registry.overrides import apply_overrides

            cfg = self._resolve(self.variant[0], row, col)
            return {"task": cfg["task"], "params": apply_overrides(cfg["params"], self.variant[1])}
        params: dict[str, Any] = {}
        t = self.tiers[tier]
        for layer, name in ((self.experiment, row), (t.layer, t.matched_as(row))):
            params = deep_merge(params, layer.get("params") or {})
            params = deep_merge(params, (layer.get("rows") or {}).get(name) or {})
            params = deep_merge(params, (layer.get("cols") or {}).get(col) or {})
            for pattern, over in (layer.get("cells") or {}).items():  # exact keys or globs, in file order
                if match_cell(pattern, name, col):
                    params = deep_merge(params, over)
            params = evaluate_priors(params, self.class_counts)
        return {"task": self.experiment["task"], "params": copy.deepcopy(params)}

    def curve(self, title: str) -> Curve:
        return next(c for c in self.curves if c.title == title)

    def group_of_row(self, row: str) -> str | None:
        for g, rows in self.row_groups.items():
            if row in rows:
                return g
        return None


#: Reason keys a tier's ``unavailable`` may give instead of a sentence; the sentence is
#: generated (``{tier}``, ``{designed}``: the specs that have a config at that tier).
REASONS = {
    "not_designed": "no {tier} config designed yet (so far only {designed} have one)",
}
#: Reason keys with an argument, written ``"key: ARG"`` (``offline: STL-10``): the sentence
#: names the argument (``{arg}``), e.g. the data set a cell needs.
REASONS_WITH_ARG = {
    "offline": "{arg} is not available offline here (paper tier only)",
}


def reason_text(why: str, tier: str, designed: list[str]) -> str:
    """The sentence of an ``unavailable`` reason (a key of :data:`REASONS`, ``"key: ARG"`` of
    :data:`REASONS_WITH_ARG`, or the sentence itself); ``designed``: the ids of the specs with a
    config at ``tier``."""
    key, sep, arg = why.partition(":")
    if sep and key in REASONS_WITH_ARG and arg.strip():
        return REASONS_WITH_ARG[key].format(arg=arg.strip())
    if why not in REASONS:
        return why
    return REASONS[why].format(tier=tier, designed=compact_ids(designed))


def compact_ids(ids: list[str]) -> str:
    """``[table1-punce, table2-punce, fig5-bcl]`` -> ``"punce tables 1-2 and fig5-bcl"``:
    per paper (in :data:`PAPERS` order), tables then figures; number runs as ranges."""
    groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for i in ids:
        m = ID_RE.match(i)
        if m:
            groups.setdefault((m.group(4), m.group(1)), []).append((int(m.group(2)), m.group(2) + m.group(3)))
    parts = []
    for paper in PAPERS:
        for kind, plural in (("table", "tables"), ("fig", "figs")):
            items = sorted(groups.get((paper, kind), []))
            if len(items) == 1:
                parts.append(f"{kind}{items[0][1]}-{paper}")
            elif items:
                parts.append(f"{paper} {plural} {_ranges(items)}")
    if not parts:
        return "none"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _ranges(items: list[tuple[int, str]]) -> str:
    runs: list[list[tuple[int, str]]] = []
    for n, label in items:
        if runs and label == str(n) and runs[-1][-1][1] == str(runs[-1][-1][0]) and n == runs[-1][-1][0] + 1:
            runs[-1].append((n, label))
        else:
            runs.append([(n, label)])
    return ", ".join(r[0][1] if len(r) == 1 else f"{r[0][1]}-{r[-1][1]}" for r in runs)


def match_cell(pattern: str, row: str, col: str) -> bool:
    """``"row|col"`` glob pattern (``*`` wildcards on either side, ``{A,B}`` a list of names:
    ``"ResNet18 {PN,PvU}|*"``) against a cell."""
    prow, _, pcol = pattern.partition("|")
    return match_name(row, prow) and match_name(col, pcol or "*")


def path_matches(key: str, path: str) -> bool:
    """A ``why`` key path names ``path``: the same, or a key above it (globs and ``{a,b}`` lists
    allowed: ``*.prior``, ``pretrain.framework.{negatives,queue}``)."""
    return match_name(path, key) or match_name(path, key + ".*")


def match_name(name: str, pattern: str) -> bool:
    """``name`` against one side of a cell pattern: a glob whose ``{A,B,...}`` parts list the
    names allowed there, so that rows are named rather than picked by the case of a letter."""
    return any(fnmatch.fnmatchcase(name, p) for p in alternatives(pattern))


@functools.lru_cache(maxsize=4096)
def alternatives(pattern: str) -> tuple[str, ...]:
    """``"A {x,y} B"`` -> ``("A x B", "A y B")`` (every ``{...}`` expanded, left to right)."""
    start = pattern.find("{")
    end = pattern.find("}", start + 1)
    if start < 0 or end < 0:
        return (pattern,)
    head, options, tail = pattern[:start], pattern[start + 1:end].split(","), pattern[end + 1:]
    return tuple(head + o.strip() + rest for o in options for rest in alternatives(tail))


def deep_merge(base: dict[str, Any], over: dict[str, Any], keep_nulls: bool = False) -> dict[str, Any]:
    """Recursive dict merge; ``over`` wins; a value of ``None`` in ``over`` deletes the key.

    Deleting from nothing creates nothing: ``{pu_method: {prior: null}}`` merged into a
    config without ``pu_method`` leaves it without one. ``keep_nulls`` keeps ``None``
    values as they are (merging YAML files, where a null is an instruction for later).
    """
    out = dict(base)  # untouched subtrees are shared; resolve() copies its result once
    for k, v in (over or {}).items():
        if v is None and not keep_nulls:
            out.pop(k, None)
        elif isinstance(v, dict):
            merged = deep_merge(out[k] if isinstance(out.get(k), dict) else {}, v, keep_nulls)
            if keep_nulls:
                out[k] = merged
                continue
            if merged or isinstance(out.get(k), dict) or not _only_deletions(v):
                out[k] = merged
        else:
            out[k] = copy.deepcopy(v)
    return out


def _only_deletions(d: dict[str, Any]) -> bool:
    return all(v is None or (isinstance(v, dict) and _only_deletions(v)) for v in d.values())
