"""The rule revisions of experiments/_verdicts.yaml (issue 60, item 5): each change of how records become
verdicts is an entry {id, date, commit, was, now, why}, dated by the commit that made it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"id", "date", "commit", "was", "now", "why"}


def _entries() -> list[dict]:
    return yaml.safe_load((ROOT / "experiments" / "_verdicts.yaml").read_text(encoding="utf-8"))["rule_revisions"]


def test_every_rule_revision_says_what_it_was_and_is():
    entries = _entries()
    assert entries
    for e in entries:
        assert set(e) == KEYS, e.get("id")
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", e["date"]) and re.fullmatch(r"[0-9a-f]{7,40}", e["commit"]), e["id"]
        assert all(isinstance(e[k], str) and e[k].strip() for k in KEYS), e["id"]
    assert len({e["id"] for e in entries}) == len(entries)
    assert [e["date"] for e in entries] == sorted(e["date"] for e in entries)


def test_a_rule_revision_is_dated_by_its_commit():
    try:
        shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True,
                                 text=True, check=True).stdout.strip() != "false"
    except (OSError, subprocess.CalledProcessError):
        shallow = True
    if shallow:
        pytest.skip("needs the repository's full git history")
    for e in _entries():
        day = subprocess.run(["git", "show", "-s", "--format=%cd", "--date=short", e["commit"]], cwd=ROOT,
                             capture_output=True, text=True, check=False).stdout.strip()
        assert day == e["date"], f"{e['id']}: commit {e['commit']} is of {day or 'no date (unknown commit)'}"
