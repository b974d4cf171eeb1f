"""Near-one-class classifiers in reports (recall or specificity under 5%): detected from the recorded
metrics, marked in every renderer; the exact one-class case is the extreme of it."""

import numpy as np
import pytest
import yaml

from pubench.jobs import expand
from pubench.registry import parse_spec
from pubench.report import collect, render_latex
from pubench.report.collect import degenerate_classifier
from pubench.report.oneclass import NEAR_ONE_CLASS, class_rates, near_one_class
from pubench.report.html import report_body
from pubench.report.markdown import render_markdown
from pubench.store import ResultStore
from pubench.train.metrics import binary_metrics, multiclass_metrics
from tests.conftest import selftest_spec

Y = np.array([1, 1, 1, 0, 0, 0, 0, 0])


def _naive(scores, y) -> str | None:
    """Counts, one example at a time."""
    tp = sum(1 for s, t in zip(scores, y) if s > 0 and t == 1)
    tn = sum(1 for s, t in zip(scores, y) if s <= 0 and t == 0)
    return "recall 0" if tp == 0 else "specificity 0" if tn == 0 else None


@pytest.mark.parametrize("scores, expected", [
    ([-1.0] * 8, "recall 0"),                                   # all negative
    ([2.0] * 8, "specificity 0"),                               # all positive
    ([1, 1, 1, -1, -1, -1, -1, -1], None),                      # perfect
    ([1, -1, 1, 1, -1, -1, -1, -1], None),                      # one error each way
    ([1, 1, 1, 1, -1, -1, -1, -1], None),                       # recall 100, some true negatives
    ([-1, -1, -1, 1, 1, -1, -1, -1], "recall 0"),               # no true positive, some false positives
    ([1, -1, -1, 1, 1, 1, 1, 1], "specificity 0"),              # every negative called positive, positives missed
])
def test_degenerate_classifier_cases(scores, expected):
    scores = np.asarray(scores, dtype=float)
    assert _naive(scores, Y) == expected
    assert degenerate_classifier(binary_metrics(scores, Y)) == expected


def test_degenerate_classifier_matches_counts_on_random_classifiers():
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(500):
        n = int(rng.integers(2, 40))
        y = rng.integers(0, 2, n)
        if len(set(y)) < 2:
            continue
        scores = rng.normal(size=n) + rng.normal() * 3  # a random shift makes one-class outputs common
        want = _naive(scores, y)
        seen.add(want)
        assert degenerate_classifier(binary_metrics(scores, y)) == want
    assert seen == {None, "recall 0", "specificity 0"}


def test_records_without_binary_metrics_are_never_degenerate():
    assert degenerate_classifier(multiclass_metrics(np.eye(3), np.arange(3))) is None
    assert degenerate_classifier({"score": 1.0}) is None


def _store(tmp_path, metric: str):
    text = selftest_spec(seeds=3).replace("score: {label: Score, higher_is_better: true}",
                                   f"{metric}: {{label: M, higher_is_better: true}}")
    spec = parse_spec(yaml.safe_load(text), "<t>")
    store = ResultStore(tmp_path)
    for job in expand(spec, "paper", 3).jobs:
        scores = np.array([-1.0] * 8) if (job.row, job.col) == ("A", "x") and job.seed_index < 2 \
            else np.array([1, -1, 1, 1, -1, -1, -1, -1.0])
        store.write_ok(job, binary_metrics(scores, Y), {}, {})
    return collect(spec, "paper", store)


def test_reports_mark_one_class_seeds_in_threshold_metrics(tmp_path):
    res = _store(tmp_path, "acc")
    assert res.degenerate == {("A", "x"): {0: "recall 0", 1: "recall 0"}}
    assert res.degenerate_seeds("A", "x", "acc") == 2 and res.degenerate_seeds("A", "y", "acc") == 0
    md = render_markdown(res)
    assert "66.67 ± 7.22 (3) ◊2 / 1.00" in md  # A|x: two of its three seeds are all negative (62.5, 62.5, 75)
    assert md.count("◊2") == 1 and "◊k: k of the cell's seeds" in md
    assert ("Near-one-class classifiers (◊, test recall or specificity under 5%): 2 record(s) of 12 with binary "
            "metrics in 1 cell(s) (recall 0: 2)") in md
    tex = render_latex(res)
    assert "(3) \\ensuremath{\\diamond}2}" in tex and "◊" not in tex
    html = report_body(res, None, [], "spec.html")
    assert "◊2" in html and "Near-one-class classifiers" in html


def test_ranking_metrics_are_not_marked(tmp_path):
    res = _store(tmp_path, "auc")
    assert res.degenerate and res.degenerate_seeds("A", "x", "auc") == 0
    md = render_markdown(res)
    assert "◊2" not in md and "◊k" not in md  # no mark, no legend
    assert "Near-one-class classifiers (◊, test recall or specificity under 5%): 2 record(s)" in md  # coverage


# ---- near one class: the 5% threshold ----------------------------------------------------


def _counts_metrics(tp: int, fn: int, fp: int, tn: int) -> dict[str, float]:
    """The record's metrics (in %) of a confusion matrix, as binary_metrics writes them."""
    n = tp + fn + fp + tn
    return {"acc": 100.0 * (tp + tn) / n, "precision": 100.0 * tp / (tp + fp) if tp + fp else 0.0,
            "recall": 100.0 * tp / (tp + fn)}


@pytest.mark.parametrize("tp, fn, fp, tn, expected", [
    (0, 400, 0, 600, "recall 0"),
    (19, 381, 10, 590, "recall under 5% (not 0)"),      # recall 4.75%
    (20, 380, 10, 590, None),                           # recall exactly 5%: not under it
    (21, 379, 10, 590, None),                           # 5.25%
    (400, 0, 600, 0, "specificity 0"),
    (300, 100, 571, 29, "specificity under 5% (not 0)"),  # specificity 4.83%
    (300, 100, 570, 30, None),                          # specificity exactly 5%
    (2, 398, 0, 600, "recall under 5% (not 0)"),        # precision 1: specificity 1, recall 0.5%
    (200, 200, 300, 300, None),                         # a coin
])
def test_near_one_class_threshold(tp, fn, fp, tn, expected):
    m = _counts_metrics(tp, fn, fp, tn)
    assert near_one_class(m) == expected
    recall, spec = class_rates(m)
    assert recall == pytest.approx(tp / (tp + fn))
    if tp:
        assert spec == pytest.approx(tn / (tn + fp))


def test_near_one_class_matches_counts_on_random_classifiers():
    """Against the confusion matrix counted one example at a time, for classifiers of every bias."""
    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(600):
        n = int(rng.integers(20, 400))
        y = rng.integers(0, 2, n)
        if len(set(y)) < 2:
            continue
        scores = rng.normal(size=n) + 0.5 * (2 * y - 1) + rng.normal() * 4
        pred = scores > 0
        tp, tn = int((pred & (y == 1)).sum()), int((~pred & (y == 0)).sum())
        recall, spec = tp / int((y == 1).sum()), tn / int((y == 0).sum())
        want = recall < NEAR_ONE_CLASS or spec < NEAR_ONE_CLASS
        got = near_one_class(binary_metrics(scores, y))
        seen.add(got)
        assert (got is not None) == want, (recall, spec, got)
        if tp == 0 or tn == 0:
            assert got in ("recall 0", "specificity 0")
    assert {None, "recall 0", "specificity 0"} <= seen and len(seen) >= 4


def test_low_recall_seeds_are_marked_and_counted(tmp_path):
    """A seed with recall 1/3 (33%) is not marked; one with no true positive is."""
    text = selftest_spec().replace("score: {label: Score, higher_is_better: true}", "acc: {label: M, higher_is_better: true}")
    spec = parse_spec(yaml.safe_load(text), "<t>")
    store = ResultStore(tmp_path)
    y = np.array([1] * 40 + [0] * 60)
    for job in expand(spec, "paper", 2).jobs:
        hits = 1 if (job.row, job.col) == ("A", "x") else 20  # recall 2.5% vs 50%
        scores = np.array([1.0] * hits + [-1.0] * (40 - hits) + [-1.0] * 60)
        store.write_ok(job, binary_metrics(scores, y), {}, {})
    res = collect(spec, "paper", store)
    assert res.degenerate == {("A", "x"): {0: "recall under 5% (not 0)", 1: "recall under 5% (not 0)"}}
    assert res.binary[("B", "y")] == {0, 1}
    md = render_markdown(res)
    assert "◊2" in md and "(recall under 5% (not 0): 2)" in md
