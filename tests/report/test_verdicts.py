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


def test_a_failure_with_a_written_reason_shows_it_with_figures_measured_now(tmp_path):
    """A cell_why reason covering a deciding cell is printed on the verdict page beside the failure,
    with the cell's figures read from the records at render time (not copied into the reason)."""
    raw = yaml.safe_load(selftest_spec(rows=("A", "B"), cols=("x", "y"), extra=CLAIMS, seeds=3))
    raw["tiers"]["reduced"]["cell_why"] = {"A|x": "A is at chance here: its clusters split the wrong way."}
    spec = parse_spec(raw, "<t>")
    store = ResultStore(tmp_path)
    values = {("A", "x"): [1.0, 2.0, 3.0], ("B", "x"): [3.0, 4.1, 5.0],
              ("A", "y"): [1.0, 3.0, 2.0], ("B", "y"): [1.5, 2.7, 2.4]}
    for job in expand(spec, "reduced", 3).jobs:
        store.write_ok(job, {"score": values[(job.row, job.col)][job.seed_index]}, {}, {"wall_s": 36.0})
    verdicts = {v.text: v for v in paper_verdicts("bcl", {spec.id: spec}, store, [spec.id])}
    (failing,) = verdicts["A beats B on x"].evidence
    assert failing.reasons == ("A at x: A is at chance here: its clusters split the wrong way. "
                               "(measured now: A at x: Score 2.00 ± 1.00 (3 seeds))",)
    assert verdicts["B beats A on y, noisy"].evidence[0].reasons == ()
    pages, status = render_pages({spec.id: spec}, store, {"bcl": [spec.id]}, ["bcl"])
    assert "| [1]  " in pages["bcl"] or "| [1] |" in pages["bcl"]
    assert "1. A at x: A is at chance here" in pages["bcl"]
    assert "reduced: fails, Δ" in status and "Why: see the verdict page's reasons." in status


def test_status_shows_every_tier_that_tested_a_claim(tmp_path):
    """The verdict comes from the paper tier; the reduced tier's significant result is printed beside it."""
    raw = yaml.safe_load(selftest_spec(rows=("A", "B"), cols=("x", "y"), extra=CLAIMS, seeds=3))
    spec = parse_spec(raw, "<t>")
    store = ResultStore(tmp_path)
    paper = {("A", "x"): [1.0, 2.0, 3.0], ("B", "x"): [1.2, 2.1, 2.9]}
    reduced = {("A", "x"): [1.0, 2.0, 3.0], ("B", "x"): [3.0, 4.1, 5.0]}
    for tier, values in (("paper", paper), ("reduced", reduced)):
        for job in expand(spec, tier, 3).jobs:
            if (job.row, job.col) in values:
                store.write_ok(job, {"score": values[(job.row, job.col)][job.seed_index]}, {}, {"wall_s": 1.0})
    _, status = render_pages({spec.id: spec}, store, {"bcl": [spec.id]}, ["bcl"])
    line = next(x for x in status.splitlines() if "B beats A on x" in x)
    assert "(paper: holds, not significant, Δ +0.07" in line and "; reduced: holds, Δ +2.03" in line
