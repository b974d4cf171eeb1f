"""What every spec resolves to, pinned: a change of presets, PU data sets or spec layout
that moves any cell's resolved config (and so its job ids) fails here.

``tests/golden/resolved_configs.json`` holds, per spec, tier and cell, the hash of what a
job id hashes except the numerics profile (task, params, the seeds of indices 0..2, spec
version), or the reason the tier does not run the cell. A change that is meant to move
numbers bumps the spec's ``version`` and regenerates the file on purpose:
``PUBENCH_REGEN_GOLDEN=1 pytest tests/jobs/test_resolved_configs.py`` (then review the diff).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pubench.jobs import expand
from pubench.numerics import Numerics
from pubench.registry import load_all
from pubench.utils.hashing import config_hash

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "resolved_configs.json"
SEEDS = 3


def resolved_hashes() -> dict[str, dict[str, dict[str, str]]]:
    out: dict[str, dict[str, dict[str, str]]] = {}
    for sid, spec in sorted(load_all().items()):
        for tier in spec.tiers:
            plan = expand(spec, tier, SEEDS, numerics=Numerics())
            cells: dict[str, list] = {}
            for job in plan.jobs:
                identity = {k: v for k, v in job.identity.items() if k != "numerics"}
                cells.setdefault(f"{job.row}|{job.col}", []).append(identity)
            table = {cell: config_hash(ids, 12) for cell, ids in cells.items()}
            table.update({f"{r}|{c}": "not run" for r, c, _ in plan.unavailable})
            out.setdefault(sid, {})[tier] = dict(sorted(table.items()))
    return out


def test_every_resolved_config_is_pinned():
    now = resolved_hashes()
    if os.environ.get("PUBENCH_REGEN_GOLDEN"):
        GOLDEN.write_text(json.dumps(now, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    pinned = json.loads(GOLDEN.read_text(encoding="utf-8"))
    changed = [f"{sid} {tier} {cell}: {pinned.get(sid, {}).get(tier, {}).get(cell)} -> {h}"
               for sid, tiers in now.items() for tier, cells in tiers.items() for cell, h in cells.items()
               if pinned.get(sid, {}).get(tier, {}).get(cell) != h]
    gone = [f"{sid} {tier} {cell}" for sid, tiers in pinned.items() for tier, cells in tiers.items()
            for cell in cells if cell not in now.get(sid, {}).get(tier, {})]
    assert not changed and not gone, (
        f"{len(changed)} cells resolve differently, {len(gone)} are gone (first: {(changed + gone)[:5]}); if the "
        "change is meant to move numbers, bump the spec's version and regenerate with PUBENCH_REGEN_GOLDEN=1")
