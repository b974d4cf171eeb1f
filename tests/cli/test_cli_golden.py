"""The read-only commands print what they printed before they were made fast (issue 34).

``tests/golden/cli/`` holds the output of each command below on the committed store
(``results/``) and specs, captured from the code before the speed-up. Each command runs as
``python -m pubench ...`` in a fresh process, the way a user types it. A change that is
meant to change an output (a spec edit) regenerates the files on purpose:
``PUBENCH_REGEN_GOLDEN=1 pytest tests/cli/test_cli_golden.py`` (review the diff).

The outputs that read the committed store (status, compare, crossref, reports) are compared
only while the store is the one they were made from (``STORE.sha256``: a hash of every
committed record): new results change them on purpose, and until they are regenerated those
cases skip with that reason instead of failing. The spec-only outputs (list, show, expand,
coverage) are always compared.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "cli"

#: golden file -> the command's arguments
COMMANDS = {
    "list.txt": ["list"],
    "show-table2-punce.json": ["show", "table2-punce", "--json"],
    "show-fig5-bcl.json": ["show", "fig5-bcl", "--json"],
    "show-table1-pucl.json": ["show", "table1-pucl", "--json"],
    "show-table2-punce.md": ["show", "table2-punce"],
    "status.json": ["status", "--json"],
    "status.txt": ["status"],
    "status-fig5-bcl-paper.json": ["status", "fig5-bcl", "--tier", "paper", "--json"],
    "coverage.json": ["coverage", "--json"],
    "coverage.txt": ["coverage"],
    "expand-fig5-bcl-paper.json": ["expand", "fig5-bcl", "--tier", "paper", "--json"],
    "expand-table2-punce-reduced.json": ["expand", "table2-punce", "--tier", "reduced", "--json"],
    "expand-table1-pucl-smoke.json": ["expand", "table1-pucl", "--tier", "smoke", "--json"],
    "expand-table1-punce-reduced.txt": ["expand", "table1-punce", "--tier", "reduced"],
    "crossref.json": ["crossref", "--json"],
    "compare-reduced.txt": ["compare", "--baseline", "results", "--tier", "reduced"],
}
#: report files written by `pubench report <ids>` into a scratch $PUBENCH_REPORTS
REPORT_IDS = ["fig5-bcl", "table2-punce", "fig3-pucl", "table1-pupl"]
REPORT_FILES = ["paper/fig5-bcl.md", "paper/fig5-bcl.tex", "reduced/table2-punce.md", "reduced/table2-punce.tex",
                "reduced/fig3-pucl.md", "reduced/table1-pupl.md", "README.md"]


#: outputs that depend on the committed results, not only on the specs
STORE_DEPENDENT = ("status", "compare", "crossref", "report")


def store_hash() -> str:
    import hashlib

    h = hashlib.sha256()
    for p in sorted((ROOT / "results").rglob("*.json")):
        if ".checkpoints" in p.parts:
            continue
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _store_unchanged(name: str) -> None:
    if not name.startswith(STORE_DEPENDENT):
        return
    stamp = GOLDEN / "STORE.sha256"
    if os.environ.get("PUBENCH_REGEN_GOLDEN"):
        stamp.write_text(store_hash() + "\n")
        return
    if not stamp.exists() or stamp.read_text().strip() != store_hash():
        pytest.skip("the committed store changed since these golden outputs were made: regenerate them on purpose "
                    "(PUBENCH_REGEN_GOLDEN=1) once the new results are reviewed")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBENCH_") or k in ("PUBENCH_CORE_SLOTS",)}
    # a data root that holds nothing, the same path everywhere: coverage (its "data here" column, the
    # paths it names) must not depend on this checkout's ./data
    env.update(PUBENCH_HOME=str(ROOT), PUBENCH_REPORTS=str(tmp_path / "reports"),
               PUBENCH_CACHE=str(tmp_path / "cache"), PUBENCH_DATA="/nonexistent/pubench-data", PYTHONPATH=str(ROOT))
    return env


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PUBENCH_REGEN_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; make it with PUBENCH_REGEN_GOLDEN=1"
    want = path.read_text(encoding="utf-8")
    assert text == want, f"{name}: output differs from the golden file (PUBENCH_REGEN_GOLDEN=1 to accept on purpose)"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_read_only_command_output_unchanged(name, tmp_path):
    _store_unchanged(name)
    out = subprocess.run([sys.executable, "-m", "pubench", *COMMANDS[name]], cwd=ROOT, env=_env(tmp_path),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    _check(name, out.stdout)


def test_report_files_unchanged(tmp_path):
    _store_unchanged("report")
    out = subprocess.run([sys.executable, "-m", "pubench", "report", *REPORT_IDS], cwd=ROOT,
                         env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    for rel in REPORT_FILES:
        text = (tmp_path / "reports" / rel).read_text(encoding="utf-8")
        _check("report/" + rel.replace("/", "__"), text.replace(str(tmp_path), "<tmp>"))
