"""Claim checks with statistics: one-sided t-tests per pair, pairing by seed index, weakest link,
single-seed cells, and how outcomes reach the markdown, the LaTeX and the index."""

import math
import os
import re
import statistics
from pathlib import Path

import pytest
import yaml
from scipy.stats import t as student_t

from pubench.jobs import expand
from pubench.registry import parse_spec
from pubench.report import claim_checks, collect, render_latex, render_markdown, write_index, write_report
from pubench.report.collect import CellStats
from pubench.report.layout import fmt_reported
from pubench.report.stats import (FAILS, HOLDS, HOLDS_NS, NOT_TESTABLE, TIE, compare_cells, outcome_text,
                                  pair_text, weakest)
from pubench.registry.spec import ReportedCell
from pubench.store import ResultStore
from tests.conftest import selftest_spec

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _cell(by_seed: dict[int, float], split: str = "same") -> CellStats:
    return CellStats(by_seed, {k: (split, k) for k in by_seed})


def _test(a, b, higher=True, fmt=".2f"):
    return compare_cells(a, b, higher_is_better=higher, fmt=fmt, labels=("A", "B", "x"))


def _naive_paired_p(a: list[float], b: list[float]) -> float:
    """One-sided paired t-test of mean(a - b) > 0, from the textbook formula."""
    d = [x - y for x, y in zip(a, b)]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    return float(student_t.sf(mean / (sd / math.sqrt(n)), n - 1))


def _naive_welch_p(a: list[float], b: list[float]) -> float:
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    t = (statistics.fmean(a) - statistics.fmean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return float(student_t.sf(t, df))


# ---- one pair ---------------------------------------------------------------------------


def test_holds_significant_matches_the_paired_t_formula():
    a, b = [81.0, 83.0, 82.5, 84.0], [80.0, 81.5, 80.0, 82.0]
    r = _test(_cell(dict(enumerate(a))), _cell(dict(enumerate(b))))
    assert r.outcome == HOLDS and r.paired and r.n == 4
    assert r.p == pytest.approx(_naive_paired_p(a, b), rel=1e-10) and r.p < 0.05
    assert r.diff == pytest.approx(statistics.fmean(a) - statistics.fmean(b))
    assert outcome_text(r) == f"holds (p={r.p:.2g})"


def test_holds_not_significant():
    a, b = [81.0, 80.0, 83.0], [80.0, 81.0, 81.0]  # differences 1, -1, 2
    r = _test(_cell(dict(enumerate(a))), _cell(dict(enumerate(b))))
    assert r.outcome == HOLDS_NS and r.p == pytest.approx(_naive_paired_p(a, b)) and r.p > 0.05
    assert outcome_text(r).startswith("holds, not significant (p=")


def test_tie_when_the_means_print_the_same():
    same = _test(_cell({0: 1.0, 1: 2.0}), _cell({0: 1.0, 1: 2.0}))
    assert same.outcome == TIE and same.p is None and same.diff == 0.0
    # consistent but invisible at two decimals: a tie, not a significant win
    close = _test(_cell({0: 1.001, 1: 2.001, 2: 3.001}), _cell({0: 1.0, 1: 2.0, 2: 3.0}))
    assert close.outcome == TIE
    # the same numbers are not a tie when the metric prints more digits
    assert _test(_cell({0: 1.001, 1: 2.001, 2: 3.001}), _cell({0: 1.0, 1: 2.0, 2: 3.0}), fmt=".4f").outcome == HOLDS


def test_fails_says_whether_the_opposite_is_significant():
    strong = _test(_cell({0: 1.0, 1: 1.1, 2: 1.3}), _cell({0: 2.0, 1: 2.05, 2: 2.4}))
    assert strong.outcome == FAILS and strong.diff < 0 and strong.opposite_significant
    assert strong.p_opposite == pytest.approx(_naive_paired_p([2.0, 2.05, 2.4], [1.0, 1.1, 1.3]))
    assert outcome_text(strong) == "fails, opposite significant (p<0.001)"
    weak = _test(_cell({0: 80.0, 1: 81.0, 2: 80.0}), _cell({0: 81.0, 1: 80.0, 2: 81.0}))
    assert weak.outcome == FAILS and not weak.opposite_significant
    assert outcome_text(weak).startswith("fails, opposite not significant (p=")


def test_one_seed_is_not_testable():
    r = _test(_cell({0: 99.0}), _cell({0: 50.0}))
    assert r.outcome == NOT_TESTABLE and r.p is None and r.n == 1 and r.diff == pytest.approx(49.0)
    # two seeds each, but only one index in common: one pair
    assert _test(_cell({0: 9.0, 1: 9.5}), _cell({1: 1.0, 2: 1.5})).outcome == NOT_TESTABLE


def test_lower_is_better_flips_the_direction():
    low, high = _cell({0: 0.10, 1: 0.12, 2: 0.11}), _cell({0: 0.20, 1: 0.25, 2: 0.21})
    r = _test(low, high, higher=False)
    assert r.outcome == HOLDS and r.diff == pytest.approx(0.11)
    assert _test(high, low, higher=False).outcome == FAILS


def test_differences_without_spread_are_deterministic():
    r = _test(_cell({0: 2.0, 1: 3.0, 2: 4.0}), _cell({0: 1.0, 1: 2.0, 2: 3.0}))
    assert r.outcome == HOLDS and r.p == 0.0 and outcome_text(r) == "holds (p<0.001)"
    r = _test(_cell({0: 1.0, 1: 2.0, 2: 3.0}), _cell({0: 2.0, 1: 3.0, 2: 4.0}))
    assert r.outcome == FAILS and r.p == 1.0 and r.p_opposite == 0.0


def test_pairs_only_the_seed_indices_present_in_both():
    a = {0: 10.0, 1: 11.0, 2: 10.5, 3: 12.0}
    b = {1: 10.2, 2: 9.9, 3: 11.1, 4: 30.0}  # index 4 would flip the unpaired comparison
    r = _test(_cell(a), _cell(b))
    assert r.paired and r.n == 3
    assert r.p == pytest.approx(_naive_paired_p([11.0, 10.5, 12.0], [10.2, 9.9, 11.1]))
    assert r.diff == pytest.approx(statistics.fmean([0.8, 0.6, 0.9]))
    assert pair_text(r) == "A vs B in x (paired, 3 seeds)"


def test_different_splits_are_compared_unpaired_with_welch():
    a, b = [10.0, 11.0, 10.5, 12.0], [9.0, 10.1, 9.4]
    r = _test(_cell(dict(enumerate(a)), "split-1"), _cell(dict(enumerate(b)), "split-2"))
    assert not r.paired and r.n == 3
    assert r.p == pytest.approx(_naive_welch_p(a, b), rel=1e-10)
    assert pair_text(r) == "A vs B in x (Welch, n=3)"


def test_weakest_link_orders_outcomes_then_p():
    hs = _test(_cell({0: 2.0, 1: 3.0, 2: 4.0}), _cell({0: 1.0, 1: 2.0, 2: 3.0}))
    ns = _test(_cell({0: 81.0, 1: 80.0, 2: 83.0}), _cell({0: 80.0, 1: 81.0, 2: 81.0}))
    nt = _test(_cell({0: 9.0}), _cell({0: 1.0}))
    tie = _test(_cell({0: 1.0, 1: 2.0}), _cell({0: 1.0, 1: 2.0}))
    fails = _test(_cell({0: 80.0, 1: 81.0, 2: 80.0}), _cell({0: 81.0, 1: 80.0, 2: 81.0}))
    assert weakest([hs, ns]) is ns and weakest([hs, ns, nt]) is nt
    assert weakest([nt, tie, hs]) is tie and weakest([fails, tie, nt, ns, hs]) is fails


# ---- claims over a store ------------------------------------------------------------------

CLAIMS = """claims:
  - {kind: greater, rows: [B, A], cols: [x], text: "B beats A on x"}
  - {kind: greater, rows: [C, A], cols: [x], text: "C beats A on x"}
  - {kind: greater, rows: [C, A], cols: [y], text: "C ties A on y"}
  - {kind: greater, rows: [A, B], cols: [x], text: "A beats B on x"}
  - {kind: best_row, rows: [B], text: "B is best"}
  - {kind: col_order, rows: [A], cols: [x, y], text: "y beats x for A"}
"""
# seed index -> value; B|y ran one seed only
VALUES = {
    ("A", "x"): {0: 1.0, 1: 1.2, 2: 1.1}, ("A", "y"): {0: 3.0, 1: 3.0, 2: 3.0},
    ("B", "x"): {0: 2.5, 1: 2.7, 2: 2.6}, ("B", "y"): {0: 4.0},
    ("C", "x"): {0: 1.0, 1: 1.4, 2: 1.3}, ("C", "y"): {0: 3.0, 1: 3.0, 2: 3.0},
}


def claims_spec(extra: str = CLAIMS, seeds: int = 3):
    text = selftest_spec(rows=("A", "B", "C"), extra=extra, seeds=seeds).replace(
        "    - {row: A, col: x, mean: 1.0, std: 0.1}", '    - {row: A, col: x, mean: 1.0, std: 0.1, mark: "(bold)"}')
    return parse_spec(yaml.safe_load(text), "<t>")


def claims_store(tmp_path, spec, values=VALUES, seeds=3) -> ResultStore:
    store = ResultStore(tmp_path)
    for job in expand(spec, "paper", seeds).jobs:
        v = values.get((job.row, job.col), {}).get(job.seed_index)
        if v is not None:
            store.write_ok(job, {"score": v}, {}, {})
    return store


def test_claim_outcomes_from_records(tmp_path):
    spec = claims_spec()
    checks = {c.claim.text: c for c in claim_checks(collect(spec, "paper", claims_store(tmp_path, spec)))}
    assert checks["B beats A on x"].status == HOLDS and checks["B beats A on x"].outcome_text == "holds (p<0.001)"
    ns = checks["C beats A on x"]
    assert ns.status == HOLDS_NS
    assert ns.weakest_link.p == pytest.approx(_naive_paired_p([1.0, 1.4, 1.3], [1.0, 1.2, 1.1]))
    assert checks["C ties A on y"].status == TIE
    assert checks["A beats B on x"].status == FAILS and checks["A beats B on x"].weakest_link.opposite_significant
    # B|y has one seed: its pairs cannot be tested, so the conjunction cannot be confirmed
    best = checks["B is best"]
    assert best.status == NOT_TESTABLE and best.weakest_link.where == "y"
    assert best.detail.startswith("4 pair(s): 2 hold, 2 not testable")
    assert checks["y beats x for A"].status == HOLDS


def test_a_tested_failure_outweighs_an_untestable_pair(tmp_path):
    spec = claims_spec(CLAIMS + '  - {kind: best_row, rows: [A], text: "A is best"}\n')
    checks = {c.claim.text: c for c in claim_checks(collect(spec, "paper", claims_store(tmp_path, spec)))}
    assert checks["A is best"].status == FAILS


def test_pairing_by_seed_index_with_missing_seeds(tmp_path):
    spec = claims_spec('claims:\n  - {kind: greater, rows: [A, B], cols: [x], text: "A beats B"}\n', seeds=5)
    values = {("A", "x"): {0: 10.0, 1: 11.0, 2: 10.5, 3: 12.0}, ("B", "x"): {1: 10.2, 2: 9.9, 3: 11.1, 4: 30.0}}
    res = collect(spec, "paper", claims_store(tmp_path, spec, values, seeds=5))
    assert res.get("B", "x", "score").mean == pytest.approx(statistics.fmean([10.2, 9.9, 11.1, 30.0]))
    (check,) = claim_checks(res)
    link = check.weakest_link
    assert link.paired and link.n == 3 and check.status == HOLDS
    assert link.p == pytest.approx(_naive_paired_p([11.0, 10.5, 12.0], [10.2, 9.9, 11.1]))


def test_columns_with_different_data_are_not_paired(tmp_path):
    text = selftest_spec(extra='claims:\n  - {kind: col_order, rows: [A], cols: [x, y], text: "y beats x"}\n', seeds=3)
    text = text.replace("  rows:\n    A: {value: 1.0}",
                        "  cols:\n    x: {data: {n_p: 1}}\n    y: {data: {n_p: 2}}\n  rows:\n    A: {value: 1.0}")
    spec = parse_spec(yaml.safe_load(text), "<t>")
    values = {("A", "x"): {0: 1.0, 1: 1.2, 2: 1.1}, ("A", "y"): {0: 1.3, 1: 1.1, 2: 1.5}}
    (check,) = claim_checks(collect(spec, "paper", claims_store(tmp_path, spec, values)))
    assert not check.weakest_link.paired
    assert check.weakest_link.p == pytest.approx(_naive_welch_p([1.3, 1.1, 1.5], [1.0, 1.2, 1.1]))


def test_claim_without_results_is_not_testable(tmp_path):
    spec = claims_spec()
    (check, *_) = claim_checks(collect(spec, "paper", ResultStore(tmp_path)))
    assert check.status == NOT_TESTABLE and check.outcome_text == "not testable (no results)"
    assert check.paper_status == "holds"  # reported B|x 2.0 > A|x 1.0


# ---- rendering ----------------------------------------------------------------------------


def _squeeze(text: str) -> str:
    """Markdown with the column padding of tabulate collapsed."""
    return re.sub(r" {2,}", " ", text)


def test_single_seed_cell_shows_no_std(tmp_path):
    spec = claims_spec()
    res = collect(spec, "paper", claims_store(tmp_path, spec))
    assert res.get("B", "y", "score").std is None and res.get("B", "y", "score").n == 1
    md, tex = render_markdown(res), render_latex(res)
    assert "| 4.00 (1) / — |" in _squeeze(md) and "4.00 ± 0.00" not in md
    assert "\\pbcell{$4.00$ (1)}{(--)}" in tex and "4.00 \\pm" not in tex


def test_bold_mark_is_apart_from_the_number():
    cell = ReportedCell(row="A", col="x", metric="acc", mean=98.29, std=0.08, mark="(bold)")
    assert fmt_reported(cell, ".2f") == "**98.29** ± 0.08"
    assert fmt_reported(cell, ".2f", bold=("\\textbf{", "}")) == "\\textbf{98.29} ± 0.08"
    tick = ReportedCell(row="A", col="x", metric="acc", mean=88.41, std=0.41, mark="✓")
    assert fmt_reported(tick, ".2f") == "88.41 ± 0.41 ✓"


def test_claims_in_markdown_and_latex(tmp_path):
    spec = claims_spec()
    res = collect(spec, "paper", claims_store(tmp_path, spec))
    md = render_markdown(res)
    assert ("| B beats A on x | B > A in x | holds | holds (p<0.001) | B vs A in x (paired, 3 seeds) | +1.50 | 0.00 "
            "| +1.00 | 2 | holds |" in _squeeze(md))
    tex = render_latex(res)
    assert "\\item B \\textgreater{} A in x: \\emph{holds}; test: holds (p\\textless{}0.001); B vs A in x (paired, " \
           "3 seeds), $\\Delta = +1.50$; MDD 0.00, paper gap +1.00, seeds for it 2; paper's numbers: holds." in tex
    assert "\\textbf{1.00}" in tex


def test_index_counts_claims_by_outcome(tmp_path):
    spec = claims_spec()
    store = claims_store(tmp_path / "results", spec)
    write_report(spec, "paper", store, tmp_path / "reports")
    index = write_index({spec.id: spec}, store, tmp_path / "reports").read_text()
    header = next(line for line in index.splitlines() if line.startswith("| tier"))
    row = next(line for line in index.splitlines() if line.startswith("| paper"))
    cells = dict(zip([h.strip() for h in header.split("|")], [c.strip() for c in row.split("|")]))
    assert (cells["claims"], cells["holds"], cells["holds, n.s."], cells["tie"], cells["fails"],
            cells["underpowered"], cells["not in regime"], cells["not testable"]) == ("6", "2", "1", "1", "1", "0", "0",
                                                                                      "1")
    assert cells["paper's order kept"] == "100% of 1"


def test_markdown_golden(tmp_path, monkeypatch):
    """The whole markdown report of ``claims_spec`` over ``VALUES``: every claim outcome, a
    single-seed cell, a bold reported number."""
    monkeypatch.setattr("pubench.store.store.provenance", lambda: {"git_sha": "0" * 40, "git_dirty": False})
    spec = claims_spec()
    text = render_markdown(collect(spec, "paper", claims_store(tmp_path, spec)))
    golden = GOLDEN / "report_selftest.md"
    if os.environ.get("PUBENCH_REGEN_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    assert "1.10 ± 0.10 (3) / **1.00** ± 0.10 [+0.10]" in text


def test_t_tests_equal_scipy_stats():
    """The report's paired and Welch t-tests (scipy.special.stdtr, for speed) give scipy.stats'
    p-values, both directions, over random samples."""
    import random
    import statistics

    from scipy.stats import ttest_ind_from_stats, ttest_rel

    from pubench.report.stats import _paired_p, _welch_p

    rng = random.Random(0)
    for _ in range(300):
        n, m = rng.randint(2, 12), rng.randint(2, 12)
        a = [rng.gauss(50, rng.uniform(0.1, 5)) for _ in range(n)]
        b = [x + rng.gauss(rng.uniform(-3, 3), rng.uniform(0.1, 5)) for x in a]
        c = [rng.gauss(48, rng.uniform(0.1, 5)) for _ in range(m)]
        for alt in ("greater", "less"):
            assert _paired_p(a, b, alt) == pytest.approx(ttest_rel(a, b, alternative=alt).pvalue, abs=1e-12)
            want = ttest_ind_from_stats(statistics.fmean(a), statistics.stdev(a), n, statistics.fmean(c),
                                        statistics.stdev(c), m, equal_var=False, alternative=alt).pvalue
            assert _welch_p(a, c, alt) == pytest.approx(want, abs=1e-12)
