"""Our significance marks (``reported.significance``, e.g. 004's ✓): a one-sided paired
t-test of the paper's method against every other row of a column, shown beside our number."""

from __future__ import annotations

from scipy.stats import ttest_rel

from pubench.registry import get_spec
from pubench.report.collect import CellStats, TableResult
from pubench.report.latex import render_latex
from pubench.report.markdown import render_markdown
from pubench.report.stats import significance_mark


def cell(values, split="s"):
    return CellStats(dict(enumerate(values)), {k: (split, k) for k in range(len(values))})


def result(stats):
    spec = get_spec("table2-wconpu")
    return TableResult(spec, "paper", stats, {(r, c): 5 for (r, c, _) in stats})


WCONPU = [97.1, 97.3, 97.2, 97.0, 97.4]


def test_table2_wconpu_declares_the_papers_marks():
    sig = get_spec("table2-wconpu").significance
    assert sig["mark"] == "✓" and sig["better"] == "WConPU" and sig["test"] == "paired_t" and sig["level"] == 0.95


def test_mark_when_the_paired_one_sided_test_is_significant():
    close = [97.0, 97.35, 97.05, 97.1, 97.3]       # slightly below, not significantly
    far = [95.3, 95.2, 95.5, 95.4, 95.3]
    res = result({("WConPU", "CIFAR-10", "acc"): cell(WCONPU), ("PiCO", "CIFAR-10", "acc"): cell(far),
                  ("puNCE", "CIFAR-10", "acc"): cell(close)})
    assert significance_mark(res, "PiCO", "CIFAR-10", "acc") == "✓"
    p_close = ttest_rel(WCONPU, close, alternative="greater").pvalue
    assert p_close >= 0.05 and significance_mark(res, "puNCE", "CIFAR-10", "acc") == ""
    assert significance_mark(res, "WConPU", "CIFAR-10", "acc") == ""          # the reference row itself
    assert significance_mark(res, "nnPU", "CIFAR-10", "acc") == ""            # no results
    md = render_markdown(res)
    assert "95.34 ± 0.11 (5) ✓ / 95.64 ± 0.12 ✓" in md                        # ours beside the paper's
    assert "✓: '✓ denotes that our WConPU" in md
    tex = render_latex(res)                                                  # LaTeX: both marks as \surd
    assert r"$95.34 \pm 0.11$ (5) \ensuremath{\surd}}{(95.64 \ensuremath{\surd}; $-0.30$)" in tex


def test_no_mark_against_the_claimed_direction_or_without_pairing():
    res = result({("WConPU", "SVHN", "acc"): cell(WCONPU),
                  ("PiCO", "SVHN", "acc"): cell([98.0, 98.1, 98.2, 98.0, 98.1]),          # PiCO better
                  ("VPU", "SVHN", "acc"): cell([90.0, 90.1, 90.2, 90.1, 90.0], split="other")})
    assert significance_mark(res, "PiCO", "SVHN", "acc") == ""
    assert significance_mark(res, "VPU", "SVHN", "acc") == ""                  # different splits: not paired


def test_specs_without_significance_have_no_marks():
    spec = get_spec("table3-wconpu")
    assert spec.significance is None
    res = TableResult(spec, "paper", {("V: WConPU", "CIFAR-10", "acc"): cell(WCONPU),
                                      ("I: w/o L_con", "CIFAR-10", "acc"): cell([80.0, 81, 82, 80, 81])}, {})
    assert significance_mark(res, "I: w/o L_con", "CIFAR-10", "acc") == ""
