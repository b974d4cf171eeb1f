"""Budget ladders (``experiments/_ladders.yaml``, issue 61): a claim's deciding pair of cells
run along one budget axis at factors of a tier's value, each step a ``--set`` variant of that
tier (``pubench run --set``), seeds paired across steps. The file's header fixes the rules (the
per-step test, the regime per step, the trend test, the running order); this module reads and
checks the entries and plans each step's jobs exactly as ``pubench run --set`` plans them
(:func:`pubench.jobs.ladder.step_jobs`: :func:`pubench.jobs.expand` with the same overrides, the
same job ids). The report is
:mod:`pubench.report.ladders`, the command ``pubench ladder``.

A step ``f`` of a cell sets the cell's axis key to its value at the base tier times ``f`` (an
int where the base value is one: ``train.epochs=16``); factor 1 is the base tier's own records.
Read without torch.
"""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pubench.paths import experiments_root
from pubench.registry.spec import CUSTOM, MAX_SEEDS, Spec, SpecError, UnknownSpec
from pubench.utils import plaindata

FILE_NAME = "_ladders.yaml"
REQUIRED = ("id", "registered", "spec", "tier", "claim", "pair", "axis", "factors", "seeds", "why")
OPTIONAL = ("seen_before", "revised")
PAIR_KEYS = ("better", "worse", "col", "metric")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


@dataclass(frozen=True)
class Ladder:
    """One registered ladder: ``better`` vs ``worse`` in column ``col`` and ``metric`` of ``spec``
    at ``tier``, along ``axis`` (row -> the key path it scales: each pair row has one) at
    ``factors`` (ascending, 1 among them), seeds ``0..seeds-1``."""

    id: str
    registered: str
    spec: str
    tier: str
    claim: str
    better: str
    worse: str
    col: str
    metric: str
    axis: dict[str, str]
    factors: tuple[float, ...]
    seeds: int
    why: str
    seen_before: str = ""
    revised: tuple[dict[str, Any], ...] = ()

    @property
    def rows(self) -> tuple[str, str]:
        return self.better, self.worse

    def shared_key(self, row: str) -> str:
        """The key a row outside the pair scales along (a regime block's reference): the axis's one key
        where both pair rows share it; KeyError where they scale different keys (no key to give it)."""
        keys = self.keys()
        if len(keys) != 1:
            raise KeyError(f"{row}: the ladder's rows scale different keys")
        return keys[0]

    @property
    def axis_text(self) -> str:
        """``train.epochs``, or ``A: pretrain.epochs; B: train.epochs`` when the rows scale different keys."""
        keys = [self.axis[r] for r in self.rows]
        return keys[0] if keys[0] == keys[1] else "; ".join(f"{r}: {self.axis[r]}" for r in self.rows)

    def keys(self) -> list[str]:
        return list(dict.fromkeys(self.axis[r] for r in self.rows))


def ladders_path(root: Path | None = None) -> Path:
    return (root or experiments_root()) / FILE_NAME


def fmt_factor(f: float) -> str:
    """``2x``, ``0.5x``."""
    return f"{f:g}x"


def describe_seeds(n: int) -> str:
    """``0-4`` (``0`` for one seed)."""
    return "0" if n == 1 else f"0-{n - 1}"


# ---- reading a config's axis value ------------------------------------------------------
MISSING = object()  # a key path a config does not have


def value_at(params: dict[str, Any], key: str) -> Any:
    """The value at the dotted ``key`` of ``params``; :data:`MISSING` when a part is absent."""
    return plaindata.value_at(params, key, MISSING)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def scaled(value: int | float, factor: float) -> int | float:
    """``value`` x ``factor``: an int where ``value`` is one (epochs, sizes), else a float;
    ValueError when an int would not stay whole."""
    out = value * factor
    if isinstance(value, int):
        if not float(out).is_integer():
            raise ValueError(f"{value} x {factor:g} = {out:g} is not a whole number")
        return int(out)
    return float(out)


def step_overrides(spec: Spec, ladder: Ladder, row: str, factor: float) -> list[str]:
    """The ``--set`` overrides of ``row``'s cell at ``factor`` (``["train.epochs=16"]``), as
    ``pubench run --set`` takes them; ``[]`` at factor 1 (the base tier's own records)."""
    if factor == 1:
        return []
    key = ladder.axis[row] if row in ladder.axis else ladder.shared_key(row)
    base = value_at(spec.resolve(ladder.tier, row, ladder.col)["params"], key)
    return [f"{key}={scaled(base, factor)!r}"]


def unchanged_by(spec: Spec, ladder: Ladder, row: str, factor: float) -> bool:
    """Whether ``factor`` leaves ``row``'s config in the ladder's column as it is at the base
    tier: it has none of the ladder's axis keys, or each is 0 (an untrained encoder's epochs).
    Such a row's records are the base tier's at every step (a regime block's baseline)."""
    params = spec.resolve(ladder.tier, row, ladder.col)["params"]
    for key in ladder.keys():
        v = value_at(params, key)
        if v is MISSING:
            continue
        if not _number(v) or v * factor != v:
            return False
    return True


def cell_pattern(row: str, col: str) -> str:
    """The ``--only`` pattern selecting exactly this cell (glob characters in the names escaped)."""
    def esc(s: str) -> str:
        return "".join(f"[{c}]" if c in "*?[" else c for c in s)

    return f"{esc(row)}|{esc(col)}"


def run_command(ladder: Ladder, row: str, overrides: list[str]) -> str:
    """The ``pubench run`` line that runs one cell of one step."""
    import shlex

    return (f"pubench run {ladder.spec} --tier {ladder.tier} --only {shlex.quote(cell_pattern(row, ladder.col))}"
            + "".join(f" --set {shlex.quote(o)}" for o in overrides) + f" --seeds {ladder.seeds}")


def ladder_claims(spec: Spec, ladder: Ladder) -> list:
    """The spec's claims the ladder is about: those whose text (or first registered text) is the
    ladder's ``claim``; where several share the text (one claim checked in several blocks), those
    that compare the ladder's pair."""
    same = [c for c in spec.claims if ladder.claim in (c.text, c.original.text if c.original else None)]
    both = [c for c in same if ladder.better in c.rows and ladder.worse in c.rows]
    one = [c for c in same if ladder.better in c.rows]
    return both or one or same


# ---- loading and checking ---------------------------------------------------------------
def load_ladders(path: Path | None = None, specs: dict[str, Spec] | None = None) -> list[Ladder]:
    """Every ladder of the file, in its order ([] when the file is absent), each checked against
    its spec (``specs``: the registry, when the caller has it loaded). A problem is a
    :class:`SpecError` naming the entry's key and what is wrong, e.g. an unknown row."""
    from pubench.utils.yamlio import read_yaml

    path = path or ladders_path()
    if not path.exists():
        return []
    raw = read_yaml(path)
    where = str(path)
    extra = sorted(set(raw) - {"ladders"})
    if extra:
        raise SpecError(where, extra[0], "unknown key (the file holds `ladders:`, a list)")
    entries = raw.get("ladders") or []
    if not isinstance(entries, list):
        raise SpecError(where, "ladders", "expected a list of ladders")
    out: list[Ladder] = []
    seen: set[str] = set()
    cache: dict[str, Spec] = dict(specs or {})
    for i, entry in enumerate(entries):
        ladder = _parse(where, f"ladders[{i}]", entry, cache)
        if ladder.id in seen:
            raise SpecError(where, f"ladders[{i}].id", f"duplicate ladder id {ladder.id!r}")
        seen.add(ladder.id)
        out.append(ladder)
    return out


def get_ladder(ladder_id: str, ladders: list[Ladder]) -> Ladder:
    from pubench.errors import UsageError

    for lad in ladders:
        if lad.id == ladder_id:
            return lad
    known = ", ".join(lad.id for lad in ladders) or f"none: {ladders_path()} holds no ladder"
    raise UsageError(f"unknown ladder {ladder_id!r} (one of {known})")


def _spec(where: str, key: str, spec_id: Any, cache: dict[str, Spec]) -> Spec:
    from pubench.registry.loader import get_spec

    if not isinstance(spec_id, str):
        raise SpecError(where, key, f"expected a spec id, got {spec_id!r}")
    if spec_id not in cache:
        try:
            cache[spec_id] = get_spec(spec_id)
        except UnknownSpec as e:
            raise SpecError(where, key, f"unknown spec: {e}") from None
    return cache[spec_id]


def _text(where: str, key: str, v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise SpecError(where, key, "expected a non-empty text")
    return v


def _one_of(where: str, key: str, v: Any, allowed: list[str], what: str, spec_id: str) -> str:
    if v not in allowed:
        shown = ", ".join(allowed[:30]) + (" ..." if len(allowed) > 30 else "")
        raise SpecError(where, key, f"unknown {what} {v!r} of {spec_id} (one of {shown})")
    return v


def _parse(where: str, at: str, entry: Any, cache: dict[str, Spec]) -> Ladder:
    lid, registered = _head(where, at, entry)
    spec = _spec(where, f"{at}.spec", entry["spec"], cache)
    tiers = [t for t in spec.tiers if t != CUSTOM]
    tier = _one_of(where, f"{at}.tier", entry["tier"], tiers, "tier", spec.id)
    claim = _text(where, f"{at}.claim", entry["claim"])
    texts = [c.text for c in spec.claims] + [c.original.text for c in spec.claims if c.original]
    if claim not in texts:
        raise SpecError(where, f"{at}.claim", f"no claim of {spec.id} reads {claim[:80]!r} (copy a claim's text from "
                                              "its spec)")
    if spec.methods_in == "cols":
        raise SpecError(where, f"{at}.spec", f"{spec.id}'s methods are its columns: a ladder's pair names rows "
                                             "(not supported yet)")
    better, worse, col, metric = _pair(where, at, entry["pair"], spec, tier)
    axis = _axis(where, at, entry["axis"], better, worse)
    factors = entry["factors"]
    if (not isinstance(factors, list) or len(factors) < 2 or not all(_number(f) and f > 0 for f in factors)
            or sorted(set(factors)) != factors or 1 not in factors):
        raise SpecError(where, f"{at}.factors", f"expected ascending positive factors, 1 among them (1 is the base "
                                                f"tier's own records), at least two, got {factors!r}")
    seeds = entry["seeds"]
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise SpecError(where, f"{at}.seeds", f"expected an integer in 1..{MAX_SEEDS}, got {seeds!r}")
    _check_axis_values(where, at, entry, axis, spec, tier, col, factors)
    revised = entry.get("revised") or []
    if not isinstance(revised, list) or not all(isinstance(r, dict) and "date" in r for r in revised):
        raise SpecError(where, f"{at}.revised", "expected a list of dated entries ({date: YYYY-MM-DD, ...})")
    seen_before = entry.get("seen_before") or ""
    if not isinstance(seen_before, str):
        raise SpecError(where, f"{at}.seen_before", "expected a text")
    return Ladder(lid, registered, spec.id, tier, claim, better, worse, col, metric, dict(axis),
                  tuple(factors), seeds, _text(where, f"{at}.why", entry["why"]), seen_before, tuple(revised))


def _head(where: str, at: str, entry: Any) -> tuple[str, str]:
    """An entry's keys checked; its id and registration date."""
    if not isinstance(entry, dict):
        raise SpecError(where, at, "expected a mapping (id, registered, spec, tier, claim, pair, axis, factors, ...)")
    unknown = sorted(set(entry) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise SpecError(where, f"{at}.{unknown[0]}", f"unknown key (known: {', '.join(REQUIRED + OPTIONAL)})")
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        raise SpecError(where, f"{at}.{missing[0]}", "missing key")
    lid = entry["id"]
    if not isinstance(lid, str) or not ID_RE.match(lid):
        raise SpecError(where, f"{at}.id", f"expected lower-case letters, digits, '.', '_' or '-' (a file name), got "
                                           f"{lid!r}")
    registered = entry["registered"]
    if isinstance(registered, datetime.date):
        registered = registered.isoformat()
    try:
        datetime.date.fromisoformat(str(registered))
    except ValueError:
        raise SpecError(where, f"{at}.registered", f"expected a date YYYY-MM-DD, got {registered!r}") from None
    return lid, str(registered)


def _pair(where: str, at: str, pair: Any, spec: Spec, tier: str) -> tuple[str, str, str, str]:
    """The pair's (better, worse, col, metric), each a name of the spec, both cells running at ``tier``."""
    if not isinstance(pair, dict) or sorted(pair) != sorted(PAIR_KEYS):
        raise SpecError(where, f"{at}.pair", f"expected {{{', '.join(PAIR_KEYS)}}}, got "
                                             f"{sorted(pair) if isinstance(pair, dict) else pair!r}")
    better = _one_of(where, f"{at}.pair.better", pair["better"], list(spec.rows), "row", spec.id)
    worse = _one_of(where, f"{at}.pair.worse", pair["worse"], list(spec.rows), "row", spec.id)
    if better == worse:
        raise SpecError(where, f"{at}.pair.worse", "the pair compares two different rows")
    runnable = [c for c in spec.cols if c not in spec.derived_cols]
    if pair["col"] in spec.derived_cols:
        raise SpecError(where, f"{at}.pair.col", f"{pair['col']!r} is derived from {', '.join(spec.derived_cols[pair['col']])}"
                                                 ": name a column that runs")
    col = _one_of(where, f"{at}.pair.col", pair["col"], runnable, "col", spec.id)
    metric = _one_of(where, f"{at}.pair.metric", pair["metric"], list(spec.metrics), "metric", spec.id)
    for row, key in ((better, "better"), (worse, "worse")):
        why = spec.unavailable_reason(tier, row, col)
        if why:
            raise SpecError(where, f"{at}.pair.{key}", f"{row}|{col} does not run at tier {tier!r}: {why}")
    return better, worse, col, metric


def _axis(where: str, at: str, axis: Any, better: str, worse: str) -> dict[str, str]:
    """row -> the key path it scales (one key for both rows, or one per row)."""
    if isinstance(axis, str):
        axis = {better: axis, worse: axis}
    if not isinstance(axis, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in axis.items()):
        raise SpecError(where, f"{at}.axis", "expected a key path (train.epochs) or a mapping row -> key path")
    for row in axis:
        if row not in (better, worse):
            raise SpecError(where, f"{at}.axis.{row}", f"unknown row {row!r}: the axis names the pair's rows "
                                                       f"({better}, {worse})")
    for row in (better, worse):
        if row not in axis:
            raise SpecError(where, f"{at}.axis", f"no axis key for the pair's row {row!r}")
    return axis


def _check_axis_values(where: str, at: str, entry: dict, axis: dict[str, str], spec: Spec, tier: str, col: str,
                       factors: list) -> None:
    """Each row's axis key exists in its config at ``tier`` and holds a positive number every factor scales."""
    for row, key in axis.items():
        akey = f"{at}.axis" if isinstance(entry["axis"], str) else f"{at}.axis.{row}"
        if not key or any(not p for p in key.split(".")):
            raise SpecError(where, akey, f"expected a dotted key path such as train.epochs, got {key!r}")
        base = value_at(spec.resolve(tier, row, col)["params"], key)
        if base is MISSING:
            raise SpecError(where, akey, f"unknown axis key {key!r}: the config of {row}|{col} at tier {tier!r} has no "
                                         "such key (`pubench expand` shows it)")
        if not _number(base) or base <= 0:
            raise SpecError(where, akey, f"axis key {key!r} of {row}|{col} at tier {tier!r} is {base!r}, not a positive "
                                         "number to scale")
        for f in factors:
            try:
                scaled(base, f)
            except ValueError as e:
                raise SpecError(where, f"{at}.factors", f"{key} of {row}: {e}") from None
