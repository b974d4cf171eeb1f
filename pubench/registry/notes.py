"""A spec's notes: ``<id>.notes.yaml`` beside ``<id>.yaml``, the prose the spec does not need to run.

The spec keeps what runs and what is judged: its layout, the experiment, the tiers, the reported
numbers, the claims and the regime blocks with their dated revisions (whose sentences the loader
renders from their facts: :mod:`pubench.registry.revisions`). A spec loads and validates without
its notes. The notes file holds the decisions, the paper's table notes and the prose of the
reasons, each keyed by what it explains, never by a sentence: a tier's ``why`` by the key path or
cell pattern of the config change it explains (the changes themselves are generated from the
configs: :mod:`pubench.registry.changes`), ``one_class_why`` by cell pattern, a regime block's
``why`` by block and tier, and what a revision's facts do not say by block and date::

    # experiments/punce/table2-punce.notes.yaml
    decisions:
      - "Positive class: CIFAR-10 vehicles ..."
      - {shared: punce_puNCE_variant}
    reported:
      notes: ["Bold recoverable ..."]
    tiers:
      reduced:
        why:   # a key path (globs allowed) or a "row|col" pattern -> why the tier changes it
          train.optimizer.lr: "the paper's rate does not move a network in 5 epochs."
          "*vPU|*": "60 steps instead of 1,500; ..."
        one_class_why: {"* PN|*": "..."}
    regime:
      MLP on PU MNIST:
        why: {reduced: "..."}
        revised: {"2026-11-27": "It reads the reference column ..."}   # a `revised` entry's date -> more why

The loader merges the notes into the spec's mapping before it validates it (:func:`merge`), so
a parsed :class:`~pubench.registry.spec.Spec`, its job ids and its reports read the same as one
file holding everything. Every key of a notes file is checked: an unknown key, a regime block or
revision the spec does not have, a key the spec sets too, each stops the load with one line
naming the notes file and the key; a ``why`` key that names no change of its tier's config stops
it too (:func:`pubench.registry.changes.check_whys`). A spec without a notes file needs none.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pubench.registry.spec import SpecError
from pubench.utils.yamlio import key_line, parse_mapping, read_text

SUFFIX = ".notes.yaml"


def is_notes(path: Path) -> bool:
    return path.name.endswith(SUFFIX)


def notes_path(spec_path: Path) -> Path:
    """``<id>.notes.yaml`` beside the spec file ``<id>.yaml``."""
    return spec_path.with_name(spec_path.name.removesuffix(".yaml") + SUFFIX)


def spec_of(notes: Path) -> Path:
    """The spec file ``<id>.yaml`` a notes file ``<id>.notes.yaml`` belongs to."""
    return notes.with_name(notes.name.removesuffix(SUFFIX) + ".yaml")


def notes_text(spec_path: Path) -> str | None:
    """The text of the spec's notes file, None when it has none."""
    path = notes_path(spec_path)
    return read_text(path) if path.is_file() else None


def read_raw(spec_path: Path, text: str | None = None, notes: str | None = None) -> dict[str, Any]:
    """The spec file's mapping with its notes merged in (``text`` / ``notes``: the files' texts,
    read here when not given)."""
    spec_path = Path(spec_path)
    raw = parse_mapping(read_text(spec_path) if text is None else text, spec_path)
    notes = notes_text(spec_path) if notes is None else notes
    if notes is None:
        return raw
    path = notes_path(spec_path)
    return merge(raw, parse_mapping(notes, path), str(path))


def merge(raw: dict[str, Any], notes: dict[str, Any], file: str) -> dict[str, Any]:
    """``raw`` (a spec file's mapping) with ``notes`` (its notes file's, named ``file`` in errors)
    merged in, as a new mapping. Where the spec's own structure is not what the schema asks,
    that part is left as it is: the spec's validation then names the spec's problem."""
    from pydantic import ValidationError

    from pubench.registry.schema import NotesFile
    from pubench.utils.validation import first_problem

    try:
        NotesFile.model_validate(notes)
    except ValidationError as e:
        raise SpecError(file, *first_problem(e, NotesFile)) from None
    out = copy.deepcopy(raw)
    if "decisions" in notes:
        _only_here(out, "decisions", file, "decisions")
        out["decisions"] = list(notes["decisions"])
    if "notes" in (notes.get("reported") or {}) and isinstance(out.get("reported"), dict):
        _only_here(out["reported"], "notes", file, "reported.notes")
        out["reported"]["notes"] = list(notes["reported"]["notes"])
    tiers = out.get("tiers") if isinstance(out.get("tiers"), dict) else {}
    for name, tier_notes in (notes.get("tiers") or {}).items():
        tier = tiers.get(name)
        if not isinstance(tier, dict):
            raise SpecError(file, f"tiers.{name}", f"the spec has no tier {name!r} to add to")
        tier_notes = tier_notes or {}  # `reduced:` with nothing under it: the schema allows an empty tier
        _add_keys(tier, "why", tier_notes.get("why") or {}, file, f"tiers.{name}.why")
        _add_keys(tier, "one_class_why", tier_notes.get("one_class_why") or {}, file, f"tiers.{name}.one_class_why")
        _add_keys(tier, "cell_why", tier_notes.get("cell_why") or {}, file, f"tiers.{name}.cell_why")
    # A malformed spec (a block name that is not a string, a regime that is not a list) is left for the
    # spec's own validation to name: the notes only ever address blocks by string name.
    regime = out.get("regime") if isinstance(out.get("regime"), list) else []
    blocks = {b["block"]: b for b in regime if isinstance(b, dict) and isinstance(b.get("block"), str)}
    for name, block_notes in (notes.get("regime") or {}).items():
        where = f"regime.{name}"
        if name not in blocks:
            raise SpecError(file, where, f"the spec has no regime block {name!r} (blocks: "
                                         f"{', '.join(map(repr, blocks)) or 'none'})")
        _add_keys(blocks[name], "why", block_notes.get("why") or {}, file, f"{where}.why")
        for date, why in (block_notes.get("revised") or {}).items():
            entries = [r for r in blocks[name].get("revised") or [] if isinstance(r, dict) and r.get("date") == date]
            if len(entries) != 1:
                raise SpecError(file, f"{where}.revised.{date}",
                                f"the block has {len(entries) or 'no'} `revised` entries of this date (one, please)")
            if "why" in entries[0]:
                raise SpecError(file, f"{where}.revised.{date}", "the spec's entry gives its why too: keep one")
            entries[0]["why"] = why
    return out


def _only_here(mapping: dict[str, Any], key: str, file: str, where: str) -> None:
    if key in mapping:
        raise SpecError(file, where, "the spec has them too: keep them in one place (the notes)")


def _add_keys(mapping: dict[str, Any], key: str, add: dict[str, str], file: str, where: str) -> None:
    if not add:
        return
    have = mapping.get(key)
    have = dict(have) if isinstance(have, dict) else {}
    for k in add:
        if k in have:
            raise SpecError(file, f"{where}.{k}", "the spec sets it too: keep it in one place (the notes)")
    mapping[key] = {**have, **add}


def locate(e: SpecError, spec_path: Path, notes: str | None) -> SpecError:
    """``e`` (a problem of the merged spec, named in the spec file) named in the notes file where
    the key it names lives there and not in the spec."""
    if notes is None or e.file != str(spec_path) or e.key.startswith("("):
        return e
    in_notes, in_spec = key_line(notes, e.key)[1], key_line(read_text(spec_path), e.key)[1]
    return SpecError(str(notes_path(spec_path)), e.key, e.problem) if in_notes and not in_spec else e
