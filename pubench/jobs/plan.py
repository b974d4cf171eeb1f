"""JOBS: a spec x tier x seeds expands into seeded jobs, one per (cell, seed).

A job's id is the hash of the canonical JSON of what determines its result: the task,
the fully resolved params, the derived seeds, the spec version and the numerics profile
(device, threads, pinned CPU code paths, torch version: ``pubench.numerics``). Key order
never matters; the tier, the executor and output paths are not part of it.

Seeds come from named parts (see :func:`derive_seeds`), in two streams:

* ``data``: the data split / simulated data. It depends on the spec (or the one its
  ``experiment.seeds_from`` names), the cell's ``params["data"]`` and the seed index, not on
  the method, so every method (row) that shares a data config sees the same split.
* ``init``: model initialisation and data order; it depends on the spec, the cell and
  the seed index (or on the axes ``experiment.init_seed_from`` names: the row, the column,
  the row's group). A cell that ``experiment.seeds_from`` maps onto another spec's cell (the
  same experiment in two tables) takes that cell's seeds, so both tables show one set of numbers.
"""

from __future__ import annotations

from dataclasses import InitVar, asdict, dataclass, field
from functools import cached_property
from typing import Any

from pubench.errors import PubenchError, shorten
from pubench.registry.overrides import apply_overrides
from pubench.numerics import Numerics, resolve
from pubench.registry.spec import CUSTOM, MAX_SEEDS, Spec, match_cell
from pubench.utils.hashing import canonical_json, canonical_json_of_parts, derive_seed, text_hash


@dataclass(frozen=True)
class Job:
    spec_id: str
    spec_version: int
    tier: str
    row: str
    col: str
    seed_index: int
    task: str
    params: dict[str, Any] = field(hash=False)
    seeds: dict[str, int] = field(hash=False)
    numerics: dict[str, Any] = field(hash=False, default_factory=lambda: resolve().to_dict())
    #: a variant of a cell (``--set``, tier ``custom``): ``{"base_tier": ..., "set": [key.path=value, ...]}``;
    #: a row added to the table (``--add-row``): ``{"base_tier": ..., "row": {name, like, set, inherits, replaces}}``
    variant: dict[str, Any] | None = field(hash=False, default=None)
    #: ``canonical_json(params)`` where the caller has it (:func:`expand`: once per cell, for
    #: every seed); computed on first use otherwise. Not a field: no record holds it
    params_encoded: InitVar[str | None] = None

    @property
    def identity(self) -> dict[str, Any]:
        """What the job id hashes: everything that changes the result, nothing else; a variant
        (tier ``custom``) is marked, so its id differs from every tier's even where its params
        equal theirs, and an added row by its name."""
        out = {"task": self.task, "params": self.params, "seeds": self.seeds, "spec_version": self.spec_version,
               "numerics": self.numerics}
        if self.variant is None:
            return out
        return out | {"custom": True} | ({"added_row": self.variant["row"]["name"]} if "row" in self.variant else {})

    @cached_property
    def id(self) -> str:
        """``config_hash(self.identity)``, with ``params`` encoded once (:attr:`params_json`)."""
        encoded = {k: self.params_json if k == "params" else canonical_json(v) for k, v in self.identity.items()}
        return text_hash(canonical_json_of_parts(encoded))

    @cached_property
    def params_json(self) -> str:
        """The canonical JSON of ``params`` (what a record's config is compared by)."""
        return canonical_json(self.params)

    def __post_init__(self, params_encoded: str | None) -> None:
        if params_encoded is not None:
            self.__dict__["params_json"] = params_encoded  # what cached_property stores: computed by the caller

    def cell_seed_key(self) -> tuple:
        """:func:`pubench.report.collect.cell_seed_key` of this job, without building its dict."""
        return (self.row, self.col, self.seed_index, self.spec_version, self.params_json)

    @property
    def name(self) -> str:
        return f"{self.spec_id}/{self.row}|{self.col}/seed={self.seed_index}"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self) | {"id": self.id, "name": self.name}
        if out["variant"] is None:  # records of the spec's own tiers read as they always have
            del out["variant"]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Job":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def derive_seeds(spec_id: str, row: str, col: str, params: dict[str, Any], seed_index: int,
                 init_axes: tuple[str, ...] = ("row", "col"), row_group: str | None = None,
                 data_spec: str | None = None) -> dict[str, int]:
    """``init_axes`` names the cell axes the init seed depends on: ``("row",)`` gives every
    column of a row the same initialisation (e.g. one pre-trained encoder, two probes);
    ``("row_group", "col")`` gives the rows of one group (``row_group``; a row in no group
    is its own group) the same one per column (e.g. three probes of one pre-trained encoder).
    ``data_spec``: the spec whose splits the data seed draws (default ``spec_id``)."""
    if "row_group" in init_axes:
        row_part: str | None = f"group:{row_group if row_group is not None else row}"
    else:
        row_part = row if "row" in init_axes else None
    return {
        "data": derive_seed("data", data_spec or spec_id, params.get("data"), seed_index),
        "init": derive_seed("init", spec_id, row_part, col if "col" in init_axes else None, seed_index),
    }


def cell_seeds(spec: Spec, row: str, col: str, params: dict[str, Any], seed_index: int) -> dict[str, int]:
    """A cell's seeds: its data seed from ``spec.seed_spec``'s namespace; a cell that is another
    spec's cell (``experiment.seeds_from.cells``) takes that cell's init seed too (that spec
    derives it from its row and column: tests/jobs/test_seeds_from.py holds it to that)."""
    shared = spec.shared_cell(row, col)
    if shared is not None:
        other, srow, scol = shared
        return derive_seeds(other, srow, scol, params, seed_index)
    return derive_seeds(spec.id, row, col, params, seed_index, spec.init_seed_from, spec.group_of_row(row),
                        data_spec=spec.seed_spec)


@dataclass
class Plan:
    spec: Spec
    tier: str
    seeds: int
    jobs: list[Job]
    unavailable: list[tuple[str, str, str]]  # (row, col, reason)


class PlanError(PubenchError, ValueError):
    """A plan that cannot be made: unknown tier, seeds out of range, --only selecting nothing."""


def expand(spec: Spec, tier: str, seeds: int | None = None, only: list[str] | None = None,
           numerics: Numerics | None = None, overrides: list[str] | None = None, only_option: str = "--only") -> Plan:
    """All jobs of ``spec`` at ``tier`` for seed indices ``0..seeds-1`` (default: the tier's
    seeds, more in the cells its ``more_seeds`` entries name).

    ``only`` keeps cells matching any ``"row|col"`` glob (selecting no cell is an error naming
    ``only_option``, the flag the command took them with: ``--only``, ``expand``'s ``--cell``).
    Cells the tier marks unavailable are listed in ``Plan.unavailable`` with their reason
    instead. ``numerics`` defaults to the canonical profile (``pubench.numerics``).

    ``overrides`` (``key.path=value``, :mod:`pubench.registry.overrides`; ``pubench run --set``)
    make a variant of the cells: each cell's params at ``tier`` with the overrides applied, in
    the tier :data:`CUSTOM` (``Plan.tier``, each job's tier, its folder in the store), with ids
    that differ from every tier's.

    For a spec with rows added (:meth:`Spec.with_added_rows`, ``tier`` :data:`CUSTOM`) only the
    added rows' cells are jobs (the other rows are the base tier's own), each running the seeds of
    the baseline cell it runs like, its record saying what it inherits and sets (``job.variant.row``).
    """
    if tier not in spec.tiers:
        raise PlanError(f"unknown tier {tier!r} (one of {', '.join(spec.tiers)})")
    t = spec.tiers[tier]
    n = t.seeds if seeds is None else seeds
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SEEDS:
        raise PlanError(f"--seeds must be an integer in 1..{MAX_SEEDS}, got {n!r}")
    num = (numerics or resolve()).to_dict()
    jobs, unavailable = [], []
    cells = spec.cells()
    if only:
        cells = [(r, c) for r, c in cells if any(match_cell(p, r, c) for p in only)]
        if not cells:
            shown = " ".join(repr(shorten(p, 60)) for p in only[:5]) + (f" (and {len(only) - 5} more)" if len(only) > 5
                                                                          else "")
            raise PlanError(f"{only_option} {shown} selects no cell of {spec.id}; patterns read "
                            f"'ROW|COL' with * wildcards; rows: {', '.join(spec.rows)}; cols: {', '.join(spec.cols)}")
    for row, col in cells:
        added = spec.added_row(row, col) if spec.added else None
        if spec.added and added is None:
            continue  # a row of the spec itself: the base tier's own jobs
        why = spec.unavailable_reason(tier, row, col)
        if why:
            unavailable.append((row, col, why))
            continue
        cfg, params_json = spec.resolve_with_json(tier, row, col)  # once per cell: every seed's id and key use it
        if overrides:
            cfg = {"task": cfg["task"], "params": apply_overrides(cfg["params"], overrides)}
            params_json = canonical_json(cfg["params"])
        variant = {"base_tier": tier, "set": list(overrides)} if overrides else None
        if added is not None:
            from pubench.registry.added_rows import added_record

            variant = {"base_tier": spec.variant[0], "row": added_record(spec, added, row, col)}
        for k in range(t.seeds_of(*spec.baseline_cell(row, col)) if seeds is None else n):
            job = Job(
                spec_id=spec.id, spec_version=spec.version, tier=CUSTOM if overrides else tier, row=row, col=col,
                seed_index=k, task=cfg["task"], params=cfg["params"],
                seeds=cell_seeds(spec, row, col, cfg["params"], k), numerics=num, variant=variant,
                params_encoded=params_json,
            )
            jobs.append(job)
    return Plan(spec, CUSTOM if overrides else tier, n, jobs, unavailable)
