"""Stale records: records of a spec whose cell's config or the spec's version changed since
they were written (a new job id now names that cell and seed). Reports leave them out and
``verify`` fails while a table holds them; ``pubench prune`` removes them once their cells
have been rerun (or to drop them on purpose)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pubench.registry.spec import Spec
from pubench.store.store import ResultStore


@dataclass
class Stale:
    """The stale files of one spec at one tier, by why they are stale."""

    spec_id: str
    tier: str
    files: dict[Path, str] = field(default_factory=dict)  # path -> reason


def stale_files(spec: Spec, tier: str, store: ResultStore) -> Stale:
    """Every record and failure record of ``spec`` at ``tier`` that no current job names:
    another spec version, a cell whose resolved params changed, or a cell the spec no longer has."""
    out = Stale(spec.id, tier)
    folder = store.folder(tier, spec.id)
    if not folder.is_dir() or tier not in spec.tiers:
        return out
    cells = set(spec.cells())
    current: dict[tuple[str, str], dict] = {}
    for path in sorted(folder.glob("*.json")):
        rec, _ = ResultStore.read_file(path, failed=path.name.endswith(".failed.json"))
        if rec is None:
            continue  # corrupt: `pubench run` quarantines those
        job = rec["job"]
        cell = (job["row"], job["col"])
        if job.get("spec_version") != spec.version:
            out.files[path] = f"spec version {job.get('spec_version')} (now {spec.version})"
        elif cell not in cells:
            out.files[path] = f"cell {cell[0]}|{cell[1]} no longer in the spec"
        else:
            if cell not in current:
                current[cell] = spec.resolve(tier, *cell)["params"]
            if job.get("params") != current[cell]:
                out.files[path] = "the cell's config changed"
    return out
