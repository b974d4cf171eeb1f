"""The unit name index (``pubench/registry/unit_index.json``) names what the registries
register, so listing and validating specs needs no import of torch (issue 34)."""

from __future__ import annotations

import json
import os

from pubench.registry import units


def test_committed_index_names_every_registered_unit():
    now = units.build_index()
    if os.environ.get("PUBENCH_REGEN_GOLDEN"):
        units.INDEX_PATH.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    committed = units.committed_index()
    assert committed is not None, f"no {units.INDEX_PATH}; make it with PUBENCH_REGEN_GOLDEN=1"
    assert committed["names"] == now["names"], (
        "the unit index differs from the registries (a unit added, renamed or removed): regenerate it with "
        "PUBENCH_REGEN_GOLDEN=1 pytest tests/registry/test_unit_index.py")


def test_committed_index_was_made_from_this_source():
    """A stale fingerprint costs every fresh clone's first read-only command an import of every
    unit (torch included): about 1 GB and 20-60 s of a cold `pubench coverage` (issue 52)."""
    committed = units.committed_index()
    assert committed is not None and committed.get("fingerprint") == units.source_fingerprint(), (
        "the unit packages changed since the unit index was made: regenerate it with "
        "PUBENCH_REGEN_GOLDEN=1 pytest tests/registry/test_unit_index.py")


def test_known_names_match_the_registries():
    for kind in units.KINDS:
        assert units.known(kind) == frozenset(units.registered_names(kind)), kind


def test_a_changed_source_rebuilds_the_index(tmp_path, monkeypatch):
    """A fingerprint the committed index was not made from: the names come from the registries."""
    monkeypatch.setenv("PUBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(units, "source_fingerprint", lambda: "edited")
    units._index.cache_clear()
    try:
        assert set(units._index()) == set(units.KINDS)
        assert list((tmp_path / "meta" / "units").glob("*.json")), "the rebuilt index is cached"
    finally:
        units._index.cache_clear()
