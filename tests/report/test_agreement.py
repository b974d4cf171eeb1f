"""Order agreement (pubench.report.agreement, `pubench agreement`): which of the paper's pairs our means
order the same way, split by the paper's gap and by our test's significance, on a fake store."""

import json

import pytest
import yaml

from pubench.cli import main
from pubench.jobs import expand
from pubench.registry import parse_spec
from pubench.report import collect
from pubench.report.agreement import agreement, agreements_json, overall
from pubench.store import ResultStore
from tests.conftest import selftest_spec

# rows A, B, C in one column x (A|y, B|y too); the paper: A 80.0, B 79.5, C 77.0 on x; A 60.0, B 63.0 on y
REPORTED = """    - {row: A, col: x, mean: 80.0}
    - {row: B, col: x, mean: 79.5}
    - {row: C, col: x, mean: 77.0}
    - {row: A, col: y, mean: 60.0}
    - {row: B, col: y, mean: 63.0}
    - {row: C, col: y, mean: null, note: not printed}
"""
# ours: on x A > B (agrees, gap 0.5, significant), B < C (C better: disagrees, gap 2.5, n.s.),
# A > C (agrees, gap 3.0, p = 0.09: n.s.); on y B > A (agrees, gap 3.0, one seed of B: not tested)
VALUES = {("A", "x"): [70.0, 71.0, 72.0], ("B", "x"): [68.0, 69.2, 69.9], ("C", "x"): [69.0, 68.0, 71.5],
          ("A", "y"): [50.0, 51.0, 52.0], ("B", "y"): [55.0]}


def _spec(extra: str = ""):
    text = selftest_spec(rows=("A", "B", "C"), extra=extra, seeds=3)
    start = text.index("  cells:\n") + len("  cells:\n")
    end = text.index("experiment:")
    return parse_spec(yaml.safe_load(text[:start] + REPORTED + text[end:]), "<t>")


def _store(root, spec) -> ResultStore:
    store = ResultStore(root)
    for job in expand(spec, "paper", 3).jobs:
        v = VALUES.get((job.row, job.col))
        if v is not None and job.seed_index < len(v):
            store.write_ok(job, {"score": v[job.seed_index]}, {}, {})
    return store


def test_pairs_agree_by_gap_and_significance(tmp_path):
    spec = _spec()
    a = agreement(collect(spec, "paper", _store(tmp_path, spec)))
    pairs = {(p.line, p.better, p.worse): p for p in a.pairs}
    assert set(pairs) == {("x", "A", "B"), ("x", "A", "C"), ("x", "B", "C"), ("y", "B", "A")}
    ab, bc, ac, y = pairs[("x", "A", "B")], pairs[("x", "B", "C")], pairs[("x", "A", "C")], pairs[("y", "B", "A")]
    assert ab.agrees and ab.gap == pytest.approx(0.5) and ab.gap_bin == "< 1" and ab.significant
    assert not bc.agrees and bc.gap == pytest.approx(2.5) and bc.gap_bin == ">= 2" and bc.significant is False
    assert ac.agrees and ac.gap_bin == ">= 2" and ac.ours == pytest.approx(1.5) and ac.significant is False
    assert y.agrees and y.significant is None  # B|y has one seed
    assert (a.overall.pairs, a.overall.agree) == (4, 3)
    big = a.split(">= 2")
    assert (big["pairs"].pairs, big["pairs"].agree) == (3, 2)
    assert (big["not significant"].pairs, big["not significant"].agree) == (2, 1)
    assert big["not tested"].pairs == 1 and a.split("1-2")["pairs"].pairs == 0
    assert a.summary() == ("75% of 4 pairs ordered as the paper (significant: 100% of 1; not significant: 50% of 2; "
                           "not tested: 1)")


def test_lower_is_better_turns_both_orders(tmp_path):
    spec = parse_spec(yaml.safe_load(_spec_text_lower()), "<t>")
    a = agreement(collect(spec, "paper", _store(tmp_path, spec)))
    pairs = {(p.line, p.better, p.worse): p for p in a.pairs}
    # the paper, lower better: C 77.0 < B 79.5 < A 80.0 on x, A 60.0 < B 63.0 on y; ours: B 69.03 < C 69.5 < A 71.0
    assert set(pairs) == {("x", "B", "A"), ("x", "C", "A"), ("x", "C", "B"), ("y", "A", "B")}
    assert pairs[("x", "B", "A")].agrees and pairs[("x", "B", "A")].significant
    assert pairs[("x", "C", "A")].agrees and pairs[("x", "C", "A")].significant is False  # p = 0.09
    assert not pairs[("x", "C", "B")].agrees and pairs[("x", "C", "B")].ours == pytest.approx(-0.4667, abs=1e-3)
    assert pairs[("y", "A", "B")].agrees and pairs[("y", "A", "B")].gap == pytest.approx(3.0)


def _spec_text_lower() -> str:
    text = selftest_spec(rows=("A", "B", "C"), seeds=3).replace("higher_is_better: true", "higher_is_better: false")
    start = text.index("  cells:\n") + len("  cells:\n")
    return text[:start] + REPORTED + text[text.index("experiment:"):]


def test_methods_in_cols_pairs_columns_within_a_row(tmp_path):
    spec = _spec("methods_in: cols\n")
    a = agreement(collect(spec, "paper", _store(tmp_path, spec)))
    assert {(p.line, p.better, p.worse) for p in a.pairs} == {("A", "x", "y"), ("B", "x", "y")}


def test_row_groups_keep_pairs_inside_a_group(tmp_path):
    spec = _spec("row_groups: {g1: [A, B], g2: [C]}\n")
    a = agreement(collect(spec, "paper", _store(tmp_path, spec)))
    assert {(p.line, p.better, p.worse) for p in a.pairs} == {("g1 / x", "A", "B"), ("g1 / y", "B", "A")}


def test_pooled_over_tables(tmp_path):
    spec = _spec()
    a = agreement(collect(spec, "paper", _store(tmp_path, spec)))
    pooled = overall([a, a])
    assert (pooled["all"].pairs, pooled["all"].agree) == (8, 6) and pooled["< 1"].pairs == 2
    data = agreements_json([a])
    assert data["tables"][0]["pairs"] == 4 and data["overall"]["paper"]["all"]["share"] == 0.75


def test_cli_agreement_text_and_json(tmp_registry, capsys):
    path = tmp_registry(_spec_text())
    spec = parse_spec(yaml.safe_load(path.read_text()), str(path))
    _store(tmp_registry.root / "results", spec)
    assert main(["agreement", "--tier", "paper"]) == 0
    out = capsys.readouterr().out
    assert "table1-bcl (paper): 75% of 4 pairs ordered as the paper" in out
    assert "all tables (paper): 75% of 4 pairs ordered as the paper (gap < 1: 100% of 1; gap 1-2: —; " \
           "gap >= 2: 67% of 3)" in out
    assert main(["agreement", "table1-bcl", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (t,) = data["tables"]
    assert (t["id"], t["tier"], t["pairs"], t["agree"]) == ("table1-bcl", "paper", 4, 3)
    assert t["by_gap"][">= 2"]["not significant"] == {"pairs": 2, "agree": 1, "share": 0.5}
    assert data["gap_bins"] == ["< 1", "1-2", ">= 2"]
    assert main(["agreement", "--tier", "smoke"]) == 2
    assert "no results for any table at tier(s) smoke" in capsys.readouterr().err


def _spec_text() -> str:
    text = selftest_spec(rows=("A", "B", "C"), seeds=3)
    start = text.index("  cells:\n") + len("  cells:\n")
    return text[:start] + REPORTED + text[text.index("experiment:"):]
