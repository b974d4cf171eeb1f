"""Claims and regime blocks are fixed before the results they judge (issue 50): a committed
spec's claims and regime blocks equal those it had at the first commit that added its current
records at each tier, except where a ``revised:`` entry says what they were, when and why.

Read from git history: for each tier, the oldest commit that added any of the spec's current
records is where its claims were fixed. A clone without that history skips, saying so."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from pubench.registry import load_all
from pubench.registry.notes import read_raw

ROOT = Path(__file__).resolve().parents[2]
PROSE = {"revised", "why"}  # a block's `why` is measured prose, free to grow; `revised` is the record itself


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


@lru_cache(maxsize=1)
def _history_ok() -> bool:
    try:
        return _git("rev-parse", "--is-shallow-repository").strip() == "false"
    except (OSError, subprocess.CalledProcessError):
        return False


def _committed_records():
    """(tier, spec id, [record paths]) for every tier folder of the committed store with ok records."""
    out = []
    for folder in sorted((ROOT / "results").glob("*/*")):
        files = sorted(str(p.relative_to(ROOT)) for p in folder.glob("*.json") if not p.name.endswith(".failed.json"))
        tracked = _git("ls-files", "--", *files).split() if files else []
        if tracked and folder.parent.name != "custom":
            out.append((folder.parent.name, folder.name, tracked))
    return out


def _strip(item: dict) -> dict:
    return {k: v for k, v in item.items() if k not in PROSE}


def _fixed_at(spec_path: str, records: list[str]) -> tuple[str, dict]:
    first = _git("log", "--diff-filter=A", "--format=%H", "--reverse", "--", *records).split()[0]
    return first, yaml.safe_load(_git("show", f"{first}:{spec_path}")) or {}


def _changes(base: dict, current: dict) -> list[str]:
    """What differs from ``base`` without a ``revised`` entry that records it."""
    problems = []
    claims = [_strip(c) for c in current.get("claims") or []]
    was = [r.get("was") for c in current.get("claims") or [] for r in c.get("revised") or []]
    for c in base.get("claims") or []:
        if _strip(c) not in claims and _strip(c) not in was:
            problems.append(f"claim {c.get('text')!r} changed or removed without a `revised` entry naming it")
    before = [_strip(c) for c in base.get("claims") or []]
    for c in current.get("claims") or []:
        if _strip(c) not in before and not any(r.get("was") in [*before, None] for r in c.get("revised") or []):
            problems.append(f"claim {c.get('text')!r} is new or changed: a `revised` entry must say what it was")
    blocks = {b["block"]: b for b in base.get("regime") or []}
    now = {b["block"]: b for b in current.get("regime") or []}
    for name in blocks.keys() - now.keys():
        problems.append(f"regime block {name!r} removed after results (keep it, revised)")
    for name, b in now.items():
        old = blocks.get(name)
        if old is not None and _strip(old) == _strip(b):
            continue
        wanted = None if old is None else {k: v for k, v in _strip(old).items() if k != "block"}
        if not any((r.get("was") if r.get("was") is None else {k: v for k, v in r["was"].items() if k != "block"})
                   == wanted for r in b.get("revised") or []):
            problems.append(f"regime block {name!r} {'added' if old is None else 'changed'} after results without a "
                            f"`revised` entry whose `was` is {wanted!r}")
    return problems


def test_claims_and_regime_are_as_they_were_when_the_records_came_or_say_how_they_changed():
    if not _history_ok():
        pytest.skip("needs the repository's full git history (a shallow clone cannot say when records came)")
    specs = load_all()
    problems = []
    for tier, spec_id, records in _committed_records():
        if spec_id not in specs:
            continue
        path = str(Path(specs[spec_id].path).resolve().relative_to(ROOT))
        first, base = _fixed_at(path, records)
        current = read_raw(ROOT / path)  # with its notes file (they hold no claim or block config)
        problems += [f"{spec_id} ({tier}, fixed at {first[:8]}): {p}" for p in _changes(base, current)]
    assert not problems, "\n".join(problems)


def test_the_check_catches_an_unrecorded_change():
    base = {"claims": [{"kind": "greater", "rows": ["A", "B"], "text": "A beats B"}],
            "regime": [{"block": "m", "check": "trained", "reference": "A", "baseline": "U", "margin": 1}]}
    split = {"claims": [{"kind": "greater", "rows": ["A", "B"], "cols": ["x"], "text": "A beats B on x"}],
             "regime": [{"block": "m", "check": "trained", "reference": "A", "baseline": "U", "margin": 2}]}
    problems = _changes(base, split)
    assert len(problems) == 3 and "removed without" in problems[0] and "margin" not in problems[0]
    recorded = {"claims": [dict(split["claims"][0], revised=[{"date": "2026-11-29", "was": base["claims"][0],
                                                              "why": "split"}])],
                "regime": [dict(split["regime"][0], why={"reduced": "prose may change"},
                                revised=[{"date": "2026-11-29", "was": {k: v for k, v in base["regime"][0].items()
                                                                       if k != "block"}, "why": "wider"}])]}
    assert _changes(base, recorded) == []
    added = {"claims": base["claims"], "regime": base["regime"] + [{"block": "n", "check": "two_classes",
                                                                   "reference": ["A"]}]}
    assert len(_changes(base, added)) == 1
    added["regime"][1]["revised"] = [{"date": "2026-11-29", "was": None, "why": "added"}]
    assert _changes(base, added) == []
