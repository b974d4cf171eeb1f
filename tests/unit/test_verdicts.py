"""Verdict pages (pubench.report.verdicts, ``pubench verdicts``): generated from the store, and
docs/status.md is exactly what they generate, so no hand-typed figure can contradict the store."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from pubench import paths
from pubench.jobs import expand
from pubench.registry import load_all, parse_spec
from pubench.report.verdicts import FAIL, HOLD, OPEN, main_tables, paper_titles, paper_verdicts, render_pages
from pubench.store import ResultStore
from tests.conftest import selftest_spec

ROOT = Path(__file__).resolve().parents[2]

CLAIMS = textwrap.dedent("""\
    claims:
      - {kind: greater, rows: [B, A], cols: [x], text: "B beats A on x"}
      - {kind: greater, rows: [A, B], cols: [x], text: "A beats B on x"}
      - {kind: greater, rows: [B, A], cols: [y], text: "B beats A on y, noisy"}
    """)


def test_verdicts_read_significance_and_price_the_open_claim(tmp_path):
    spec = parse_spec(yaml.safe_load(selftest_spec(rows=("A", "B"), cols=("x", "y"), extra=CLAIMS, seeds=3)), "<t>")
    store = ResultStore(tmp_path)
    values = {("A", "x"): [1.0, 2.0, 3.0], ("B", "x"): [3.0, 4.1, 5.0],
              ("A", "y"): [1.0, 3.0, 2.0], ("B", "y"): [1.5, 2.7, 2.4]}
    for job in expand(spec, "reduced", 3).jobs:
        store.write_ok(job, {"score": values[(job.row, job.col)][job.seed_index]}, {}, {"wall_s": 36.0})
    verdicts = {v.text: v for v in paper_verdicts("bcl", {spec.id: spec}, store, [spec.id])}
    assert verdicts["B beats A on x"].verdict == HOLD and verdicts["B beats A on x"].decided_at == "reduced"
    assert verdicts["A beats B on x"].verdict == FAIL
    noisy = verdicts["B beats A on y, noisy"]
    (e,) = noisy.evidence
    assert noisy.verdict == OPEN and e.tier == "reduced" and e.seeds == 3
    # |Δ| = 0.2 at a paired sd of about 0.66: tens of seeds per cell, priced from the records' 36 s
    assert e.settle == "31 seeds per cell to detect |Δ| = 0.2 (56 more jobs, about 0.56 core-hours)"


def test_docs_status_is_what_the_store_generates():
    """docs/status.md quotes only what `pubench verdicts --status` generates from the committed store:
    a stale figure there fails here (regenerate with that command)."""
    tables = main_tables(paths.experiments_root())
    _, status = render_pages(load_all(), ResultStore(paths.results_root(), memo=True), tables, list(tables),
                             paper_titles(paths.experiments_root()))
    assert (ROOT / "docs" / "status.md").read_text() == status, \
        "docs/status.md differs from the store: run `pubench verdicts --status docs/status.md`"


@pytest.mark.parametrize("argv,message", [
    (["verdicts", "nosuchpaper"], "unknown paper(s) nosuchpaper"),
    (["verdicts", "punce", "--status", "x.md"], "--status summarizes every paper"),
])
def test_verdicts_bad_input_is_one_line(argv, message):
    out = subprocess.run([sys.executable, "-m", "pubench", *argv], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_the_cost_to_settle_prices_each_cell_at_its_own_wall_time(tmp_path):
    """A claim over a cheap cell that has more seeds and a slow one that has fewer: the slow
    cell's missing jobs are priced at its own records (a median over both cells' records took
    the cheap cell's 36 s for all of them)."""
    spec = parse_spec(yaml.safe_load(selftest_spec(rows=("A", "B"), cols=("x", "y"), extra=CLAIMS, seeds=6)), "<t>")
    store = ResultStore(tmp_path)
    values = {("A", "y"): [1.0, 3.0, 2.0, 2.0, 1.5, 2.5], ("B", "y"): [1.5, 2.7, 2.4]}
    for job in expand(spec, "reduced", 6).jobs:
        if job.col == "y" and job.seed_index < len(values[(job.row, job.col)]):
            wall = 3600.0 if job.row == "B" else 36.0
            store.write_ok(job, {"score": values[(job.row, job.col)][job.seed_index]}, {}, {"wall_s": wall})
    verdicts = {v.text: v for v in paper_verdicts("bcl", {spec.id: spec}, store, [spec.id])}
    (e,) = verdicts["B beats A on y, noisy"].evidence
    need = int(e.settle.split(" seeds per cell")[0])
    missing_a, missing_b = need - 6, need - 3
    assert e.settle.endswith(f"({missing_a + missing_b} more jobs, about {missing_a * 0.01 + missing_b * 1.0:.2g} "
                             "core-hours)"), e.settle
