"""The sentence of a ``revised`` entry, rendered from its facts.

A claim or regime block changed after the spec had records carries ``revised: [{date, was,
commit, issue, after, version, first_records, why}]`` (docs/specs.md, 'Claims and regime blocks
are fixed before results'). The facts say when, in which commit and issue, and after which
records; the sentence a report prints is made from them here, so a spec loads and reads whole
without its notes file, and ``why`` (in the entry, or for a block in the notes) adds only what
the facts do not say::

    {date: "2026-11-27", was: null, commit: c054930, issue: 36, after: [reduced]}
    -> "In commit c054930 (issue 36), after the table's first records at the reduced tier. Claims
        read against it from then on; their plain test results stay printed beside the label."
"""

from __future__ import annotations

from typing import Any


def revision_text(entry: Any, kind: str) -> str | None:
    """The sentence of one ``revised`` entry (a :class:`~pubench.registry.schema.BlockRevisionModel`
    or :class:`~pubench.registry.schema.ClaimRevisionModel`) of a ``kind`` ``"block"`` or
    ``"claim"``; None when it records neither a commit nor a why."""
    if entry.commit is None:
        return entry.why
    where = f"In commit {entry.commit}" + (f" (issue {entry.issue})" if entry.issue else "")
    out = [f"{where}, after {records_text(entry)}."]
    if kind == "block":
        out.append("Claims read against it from then on; their plain test results stay printed beside the label."
                   if entry.was is None else "Its first form keeps verdict rows of its own.")
    elif getattr(entry, "counted", "first") == "revised":
        out.append(f"Registered with the bump from version {entry.version}, before any record of the new version: "
                   "the claim as it is now is the one counted.")
    else:
        out.append("Shown, not counted." if entry.was is None else
                   "The claim as first registered is the one counted; the revision is shown beside it.")
    if entry.why:
        out.append(entry.why)
    return " ".join(out)


def records_text(entry: Any) -> str:
    """``the table's first records at the reduced tier (spec version 2, first on 2026-11-23)``."""
    tiers = list(entry.after or [])
    at = "" if not tiers else f" at the {' and '.join(tiers)} tier{'s' if len(tiers) > 1 else ''}"
    extra = [*([f"spec version {entry.version}"] if entry.version else []),
             *([f"first on {entry.first_records}"] if entry.first_records else [])]
    return f"the table's first records{at}" + (f" ({', '.join(extra)})" if extra else "")
