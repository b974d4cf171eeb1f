"""Regime checks (pubench.report.regime) on fake stores: the spec key, the verdicts (in regime, not in
regime, not testable) of both checks, and how claims read with them and with the power figures:
"not in regime" and "underpowered" with the plain result kept."""

import textwrap

import pytest
import yaml

from pubench.jobs import expand
from pubench.registry import SpecError, parse_spec
from pubench.report import claim_checks, collect
from pubench.report.checks import NOT_IN_REGIME, REGIME_UNKNOWN, UNDERPOWERED
from pubench.report.regime import FIRST, IN, OUT, UNTESTED, RegimeMap, regime_verdicts
from pubench.report.regime import POWER as POWER_LIMITED
from pubench.report.stats import FAILS, HOLDS, HOLDS_NS, NOT_TESTABLE
from pubench.store import ResultStore
from tests.conftest import selftest_spec

# A (the plain method), B (a variant of it), U (the same network untrained); x: A trained well above U,
# y: A barely above U, z: U has no results.
TRAINED = """regime:
  - block: methods
    rows: [A, B]
    check: trained
    reference: A
    baseline: U
    margin: 10
    why: {paper: "the paper tier is the regime by construction", reduced: "the reduced tier trains briefly"}
"""
CLAIMS = """claims:
  - {kind: greater, rows: [B, A], cols: [x], text: "B beats A on x"}
  - {kind: greater, rows: [B, A], cols: [y], text: "B beats A on y"}
  - {kind: greater, rows: [B, A], cols: [x, y], text: "B beats A on x and y"}
  - {kind: greater, rows: [A, B], cols: [x, y], text: "A beats B on x and y"}
  - {kind: greater, rows: [B, A], cols: [z], text: "B beats A on z"}
"""
VALUES = {
    ("A", "x"): [50.0, 52.0, 51.0], ("B", "x"): [53.0, 54.5, 54.0], ("U", "x"): [30.0, 31.0, 30.5],
    ("A", "y"): [33.0, 35.0, 32.0], ("B", "y"): [32.0, 35.5, 31.0], ("U", "y"): [30.0, 31.0, 30.5],
    ("A", "z"): [40.0, 41.0, 42.0], ("B", "z"): [39.0, 41.5, 41.0],
}


def _spec(extra: str, rows=("A", "B", "U"), cols=("x", "y", "z")):
    return parse_spec(yaml.safe_load(selftest_spec(rows=rows, cols=cols, extra=extra, seeds=3)), "<t>")


def _store(tmp_path, spec, values, metrics=lambda v: {"score": v}, tier="paper") -> ResultStore:
    store = ResultStore(tmp_path)
    for job in expand(spec, tier, 3).jobs:
        v = values.get((job.row, job.col))
        if v is not None and job.seed_index < len(v) and v[job.seed_index] is not None:
            store.write_ok(job, metrics(v[job.seed_index]), {}, {})
    return store


# ---- the spec key ------------------------------------------------------------------------


def test_regime_blocks_parse_with_defaults():
    spec = _spec(TRAINED)
    (b,) = spec.regime
    assert (b.name, b.check, b.rows, b.reference, b.baseline, b.margin, b.metric) == \
        ("methods", "trained", ("A", "B"), ("A",), "U", 10.0, "score")
    assert b.cols == ("x", "y", "z") and b.why_at("paper") and b.why_at("smoke") is None
    two = _spec("regime:\n  - {block: PU, rows: [A, B], check: two_classes, reference: [B]}\n")
    assert two.regime[0].max_share is None and two.regime[0].reference == ("B",)  # the rule's default bound


def test_default_columns_are_where_the_reference_and_baseline_run():
    data = yaml.safe_load(selftest_spec(rows=("A", "B", "U"), cols=("x", "y", "z"), extra=TRAINED, seeds=3))
    data["experiment"]["exclude"] = ["U|z"]
    spec = parse_spec(data, "<t>")
    assert spec.regime[0].cols == ("x", "y")


BAD = [
    ("rows and group", {"group": "g"}, "regime[0]", "one of them"),
    ("unknown row", {"rows": ["A", "Q"]}, "regime[0].rows", "'Q' is not one of the rows"),
    ("reference outside the block", {"reference": "U"}, "regime[0].reference", "not one of the block's rows"),
    ("no baseline", {"baseline": None}, "regime[0]", "needs `baseline`"),
    ("baseline is the reference", {"baseline": "A"}, "regime[0].baseline", "other than the reference"),
    ("unknown col", {"cols": ["x", "w"]}, "regime[0].cols", "'w' is not one of the cols"),
    ("unknown check", {"check": "works"}, "regime[0].check", "is not one of 'trained' or 'two_classes'"),
    ("unknown tier in why", {"why": {"huge": "t"}}, "regime[0].why.huge", "unknown tier"),
    ("max share on trained", {"max_share": 0.1}, "regime[0].max_share", "only a two_classes"),
    ("negative margin", {"margin": -1}, "regime[0].margin", ""),
    ("unknown group", {"rows": None, "group": "nope"}, "regime[0].group", "not one of the row_groups"),
]


@pytest.mark.parametrize("name, change, key, problem", BAD, ids=[b[0] for b in BAD])
def test_invalid_regime_blocks_name_the_key(name, change, key, problem):
    data = yaml.safe_load(selftest_spec(rows=("A", "B", "U"), extra=TRAINED, seeds=3))
    block = data["regime"][0]
    for k, v in change.items():
        if v is None:
            block.pop(k, None)
        else:
            block[k] = v
    with pytest.raises(SpecError) as err:
        parse_spec(data, "<t>")
    assert err.value.key == key and problem in err.value.problem


def test_a_regime_key_changes_no_job_id():
    with_regime, without = _spec(TRAINED), _spec("")
    ids = [j.id for j in expand(with_regime, "reduced", 2).jobs]
    assert ids == [j.id for j in expand(without, "reduced", 2).jobs]


# ---- verdicts: trained --------------------------------------------------------------------


def test_trained_verdicts_in_not_in_and_not_testable(tmp_path):
    spec = _spec(TRAINED)
    values = {k: v for k, v in VALUES.items()}
    res = collect(spec, "paper", _store(tmp_path, spec, values))
    v = {x.col: x for x in regime_verdicts(res)}
    assert v["x"].verdict == IN and v["x"].gain == pytest.approx(20.5) and v["x"].paired and v["x"].n == 3
    assert v["x"].p < 0.05 and v["x"].text.startswith("in regime: gain +20.50 > 10 (paired, 3 seeds, p")
    assert v["y"].verdict == OUT and v["y"].gain == pytest.approx(2.8333, abs=1e-3)
    assert v["y"].text.startswith("not in regime: gain +2.83 not > 10") and v["y"].p > 0.5
    assert v["z"].verdict == UNTESTED and v["z"].numbers == "no results for U"


def test_trained_margin_is_tested_not_just_the_mean(tmp_path):
    """A gain whose mean is above the margin but within the seeds' noise of it is not in regime:
    the regime is not established for lack of power, which is not a base that does not work."""
    spec = _spec(TRAINED)
    values = {("A", "x"): [41.0, 47.0, 36.0], ("U", "x"): [30.0, 31.0, 30.5]}  # gain 10.83 +- 5.5
    (vx, *_) = regime_verdicts(collect(spec, "paper", _store(tmp_path, spec, values)))
    assert vx.gain > 10 and vx.verdict == POWER_LIMITED and 0.05 < vx.p < 0.5
    assert vx.text.startswith("regime not established (power): gain +10.83 >, not significantly, 10")


def test_trained_with_one_seed_is_not_testable(tmp_path):
    spec = _spec(TRAINED)
    values = {("A", "x"): [60.0], ("U", "x"): [30.0]}
    (vx, *_) = regime_verdicts(collect(spec, "paper", _store(tmp_path, spec, values)))
    assert vx.verdict == UNTESTED and "fewer than 2 seeds" in vx.numbers


def test_lower_is_better_turns_the_gain(tmp_path):
    text = selftest_spec(rows=("A", "B", "U"), extra=TRAINED, seeds=3).replace("higher_is_better: true",
                                                                    "higher_is_better: false")
    spec = parse_spec(yaml.safe_load(text), "<t>")
    values = {("A", "x"): [10.0, 11.0, 10.5], ("U", "x"): [30.0, 31.5, 30.5]}  # A 20 lower: better
    (vx, _) = regime_verdicts(collect(spec, "paper", _store(tmp_path, spec, values)))
    assert vx.verdict == IN and vx.gain == pytest.approx(20.1667, abs=1e-3)


# ---- verdicts: two_classes -------------------------------------------------------------------


def _binary(recall: float, auc: float | None = None) -> dict:
    """Metrics of a test set of 400 positives and 600 negatives with this recall and 90% specificity
    (and, where given, this test AUC)."""
    tp, fp, tn = recall * 400, 60, 540
    out = {"acc": 100 * (tp + tn) / 1000, "precision": 100 * tp / (tp + fp) if tp else 0.0, "recall": 100 * recall}
    return out if auc is None else out | {"auc": auc}


TWO = """regime:
  - {block: PU methods, rows: [A, B], check: two_classes, reference: [A]}
  - {block: lenient, rows: [A, B], check: two_classes, reference: [A, B], max_share: 0.2}
"""


def test_two_classes_verdicts(tmp_path):
    spec = _spec(TWO, rows=("A", "B"), cols=("x", "y", "z"))
    values = {("A", "x"): [0.5, 0.6, 0.55], ("B", "x"): [0.5, 0.6, 0.55],
              ("A", "y"): [0.5, 0.03, 0.6], ("B", "y"): [0.5, 0.6, 0.55],
              ("B", "z"): [0.5, 0.6, 0.55]}
    res = collect(spec, "paper", _store(tmp_path, spec, values, _binary))
    v = {(x.block.name, x.col): x for x in regime_verdicts(res)}
    first = {(x.block.name, x.col): x for x in regime_verdicts(res, FIRST)}
    assert v[("PU methods", "x")].verdict == IN and v[("PU methods", "x")].numbers.startswith("0 of 3 seed(s) of A")
    # 1 of 3 near-one-class: over the bound of 1/5, not significantly (P(X >= 1 | 3, 0.2) = 0.488)
    assert v[("PU methods", "y")].verdict == POWER_LIMITED and v[("PU methods", "y")].near == 1
    assert v[("PU methods", "y")].share_p == pytest.approx(1 - 0.8 ** 3)
    assert v[("PU methods", "y")].text.startswith(
        "regime not established (power): 1 of 3 seed(s) of A near-one-class (bound 20%, binomial p=0.49); "
        "balanced accuracy ")
    # as first registered, one near-one-class seed put the block out
    assert first[("PU methods", "y")].verdict == OUT and first[("PU methods", "y")].text.startswith(
        "not in regime: 1 of 3 seed(s) of A near-one-class (at most 0% allowed); balanced accuracy ")
    assert v[("PU methods", "z")].verdict == UNTESTED and v[("PU methods", "z")].numbers == "no results"
    assert v[("lenient", "y")].verdict == IN and first[("lenient", "y")].verdict == IN  # 1 of 6 seeds, within 20%


def test_two_classes_out_for_one_class_seeds_still_states_its_auc_test_plainly(tmp_path):
    """A block out of regime for a near-one-class seed whose AUC clears the margin significantly
    says so: the sentence once read 'AUC 88.4 >, not significantly, 50 + 5 (19 seeds, p<0.001)'."""
    spec = _spec(TWO, rows=("A", "B"), cols=("x", "y", "z"))
    values = {("A", "x"): [(0.5, 80.0), (0.55, 84.0), (0.03, 78.0)],                # one seed near-one-class
              ("A", "y"): [(0.5, 52.0), (0.02, 66.0), (0.45, 59.0)]}                # and AUC short of significance
    res = collect(spec, "paper", _store(tmp_path, spec, values, lambda v: _binary(*v)))
    v = {x.col: x for x in regime_verdicts(res, FIRST) if x.block.name == "PU methods"}
    assert v["x"].verdict == OUT and v["x"].near == 1 and v["x"].p < 0.05
    assert "AUC 80.7 > 50 + 5 (3 seeds, p=" in v["x"].text and "not significantly" not in v["x"].text
    assert v["y"].verdict == OUT and "AUC 59.0 >, not significantly, 50 + 5 (3 seeds" in v["y"].text


def test_two_classes_needs_discrimination_not_only_both_classes_called(tmp_path):
    """Both classes called, at chance: a classifier that guesses passes the near-one-class count,
    not this check (the reference's AUC must beat 50 by the block's auc_margin, 5 by default)."""
    spec = _spec(TWO, rows=("A", "B"), cols=("x", "y", "z"))
    values = {("A", "x"): [(0.5, 49.0), (0.55, 53.0), (0.45, 51.5)],   # both classes, AUC at chance
              ("A", "y"): [(0.5, 80.0), (0.55, 84.0), (0.45, 78.0)],   # AUC well above chance
              ("A", "z"): [(0.5, 52.0), (0.55, 66.0), (0.45, 59.0)]}   # mean 59 > 55, spread too wide to tell
    res = collect(spec, "paper", _store(tmp_path, spec, values, lambda v: _binary(*v)))
    v = {x.col: x for x in regime_verdicts(res) if x.block.name == "PU methods"}
    assert v["x"].near == 0 and v["x"].verdict == OUT and v["x"].separation == pytest.approx(51.1667, abs=1e-3)
    assert "AUC 51.2 not > 50 + 5 (3 seeds" in v["x"].text
    assert v["y"].verdict == IN and v["y"].p < 0.05 and "AUC 80.7 > 50 + 5" in v["y"].text
    assert v["z"].verdict == POWER_LIMITED and v["z"].p > 0.05


def test_two_classes_reads_balanced_accuracy_without_an_auc(tmp_path):
    spec = _spec(TWO, rows=("A", "B"), cols=("x", "y", "z"))
    res = collect(spec, "paper", _store(tmp_path, spec, {("A", "x"): [0.5, 0.6, 0.55]}, _binary))
    (vx, *_) = regime_verdicts(res)
    # recall 50-60%, specificity 90%: balanced accuracy 70-75
    assert vx.separation_kind == "balanced accuracy" and vx.separation == pytest.approx(72.5) and vx.verdict == IN


def test_two_classes_without_binary_metrics_is_not_testable(tmp_path):
    spec = _spec(TWO, rows=("A", "B"), cols=("x", "y", "z"))
    res = collect(spec, "paper", _store(tmp_path, spec, {("A", "x"): [1.0, 2.0, 3.0]}))
    (vx, *_) = regime_verdicts(res)
    assert vx.verdict == UNTESTED and "no binary metrics" in vx.numbers


def test_a_derived_column_follows_its_sources(tmp_path):
    extra = TRAINED + "derived_cols:\n  Mean: {mean_of: [x, y]}\n"
    spec = _spec(extra, cols=("x", "y", "z", "Mean"))
    res = collect(spec, "paper", _store(tmp_path, spec, VALUES))
    rm = RegimeMap(res)
    assert [v.col for v in rm.of("B", "Mean")] == ["x", "y"]
    assert [v.col for v in rm.out_of_regime("B", "Mean")] == ["y"] and rm.out_of_regime("U", "x") == []


# ---- claims read against the regime ------------------------------------------------------------


def test_claims_in_an_out_of_regime_block_read_not_in_regime_and_keep_the_plain_result(tmp_path):
    spec = _spec(TRAINED + CLAIMS)
    res = collect(spec, "reduced", _store(tmp_path, spec, VALUES, tier="reduced"))
    checks = {c.claim.text: c for c in claim_checks(res)}
    x, y = checks["B beats A on x"], checks["B beats A on y"]
    assert x.status == HOLDS == x.test_status and not x.regime_blocks
    # on y A is barely above the untrained encoder: B's loss there is not evidence
    assert y.test_status == FAILS and y.status == NOT_IN_REGIME
    assert y.outcome_text.startswith("fails, opposite not significant (p=") and y.test_text == y.outcome_text
    assert y.regime_blocks == ["methods: y"] and "1 pair(s) out of regime (methods: y)" in y.detail
    # x holds, y out of regime: the claim cannot be confirmed where the methods do not work
    assert checks["B beats A on x and y"].status == NOT_IN_REGIME
    # A loses on x, where the block is in regime: a real failure, whatever y says
    both = checks["A beats B on x and y"]
    assert both.status == FAILS and both.decisive_link.where == "x"
    # z: the regime cannot be tested (no untrained results): unknown since 2026-12-07, the plain outcome beside it
    # (as first registered, an untestable block relabelled nothing and the plain outcome stood)
    z = checks["B beats A on z"]
    assert z.status == REGIME_UNKNOWN and z.test_status == FAILS == z.first_rule_status and not z.regime_blocks


def test_at_the_paper_tier_no_claim_reads_not_in_regime(tmp_path):
    """The paper's own configuration: a reference that does not beat its baseline is a finding
    printed beside the claim, and the claim reads as it tests."""
    spec = _spec(TRAINED + CLAIMS)
    checks = {c.claim.text: c for c in claim_checks(collect(spec, "paper", _store(tmp_path, spec, VALUES)))}
    assert not any(c.status == NOT_IN_REGIME for c in checks.values())
    y = checks["B beats A on y"]
    assert y.status == FAILS == y.test_status and y.finding_blocks == ["methods: y"]
    assert "finding at the paper's own configuration, the reference does not beat its baseline in methods: y" in y.detail
    assert checks["B beats A on x and y"].status == FAILS


def test_a_power_limited_block_reads_regime_unknown_with_its_significant_failure_beside(tmp_path):
    """Over the margin without significance: the regime is not established, so the claim reads
    ``regime unknown`` (open) with its plain, significant failure beside it; as first registered
    (before 2026-12-07) the pairs counted as in regime and the claim failed."""
    spec = _spec(TRAINED + CLAIMS)
    values = dict(VALUES) | {("A", "y"): [41.0, 47.0, 36.0],   # gain over U ~ 10.8 +- 5.5: power-limited
                             ("B", "y"): [38.0, 44.5, 33.2]}   # B below A on every seed: significant
    res = collect(spec, "reduced", _store(tmp_path, spec, values, tier="reduced"))
    assert {v.col: v.verdict for v in regime_verdicts(res)}["y"] == POWER_LIMITED
    checks = {c.claim.text: c for c in claim_checks(res)}
    y = checks["B beats A on y"]
    assert y.weakest_link.opposite_significant and y.status == REGIME_UNKNOWN and y.power_blocks == ["methods: y"]
    assert y.first_rule_status == FAILS and y.rule_changed and y.test_status == FAILS
    assert y.significant_out_of_regime == [y.weakest_link]
    assert "1 pair(s) where the regime is not established (methods: y)" in y.detail
    both = checks["B beats A on x and y"]  # x in regime holds, y unknown: the in-regime pair decides nothing failing
    assert both.status == REGIME_UNKNOWN and both.first_rule_status == FAILS


def test_a_significant_failure_out_of_regime_is_never_underpowered(tmp_path):
    """A claim failing without significance where the block works, and significantly where it does
    not, reads "fails", not "underpowered"."""
    claims = textwrap.dedent("""\
        claims:
          - {kind: greater, rows: [B, A], cols: [x, y], text: "B beats A on x and y"}
        """)
    spec = _spec(TRAINED + claims)  # the paper's gap B - A on x: +1
    values = dict(VALUES) | {("B", "x"): [49.0, 53.0, 50.5],   # B a little below A on x, noisy: n.s.
                             ("B", "y"): [31.0, 33.0, 30.0]}   # 2 below A on every seed, out of regime
    res = collect(spec, "reduced", _store(tmp_path, spec, values, tier="reduced"))
    (c,) = claim_checks(res)
    assert c.significant_out_of_regime and c.decisive_link.where == "x" and not c.decisive_link.opposite_significant
    assert c.decisive_power.underpowered  # alone, the failure on x would read underpowered
    assert c.status == FAILS


def test_a_block_in_regime_leaves_claims_as_they_are(tmp_path):
    spec = _spec(CLAIMS)  # no regime key
    checks = claim_checks(collect(spec, "paper", _store(tmp_path, spec, VALUES)))
    assert all(c.status == c.test_status for c in checks) and not any(c.regime_blocks for c in checks)


def test_no_results_stay_not_testable(tmp_path):
    spec = _spec(TRAINED + CLAIMS)
    checks = claim_checks(collect(spec, "paper", ResultStore(tmp_path)))
    assert all(c.status == NOT_TESTABLE for c in checks)


# ---- claims read against the power ------------------------------------------------------------

POWER = textwrap.dedent("""\
    claims:
      - {kind: greater, rows: [B, A], cols: [x], text: "B beats A, noisy seeds"}
      - {kind: greater, rows: [B, A], cols: [y], text: "B beats A, precise seeds"}
      - {kind: greater, rows: [B, A], cols: [z], text: "B loses significantly"}
    """)


def _power_spec():
    text = selftest_spec(rows=("A", "B"), cols=("x", "y", "z"), extra=POWER, seeds=3)
    text = text.replace("    - {row: B, col: y, mean: null, note: not printed}\n",
                        "    - {row: A, col: y, mean: 1.0}\n    - {row: B, col: y, mean: 2.0}\n"
                        "    - {row: A, col: z, mean: 1.0}\n    - {row: B, col: z, mean: 1.5}\n")
    return parse_spec(yaml.safe_load(text), "<t>")  # paper gap B - A: 1.0 on x and y, 0.5 on z


def test_a_failure_below_the_detectable_difference_reads_underpowered(tmp_path):
    spec = _power_spec()
    values = {("A", "x"): [10.0, 14.0, 8.0], ("B", "x"): [9.0, 15.0, 7.5],   # differences -1, +1, -0.5: sd ~1
              ("A", "y"): [10.0, 11.0, 12.0], ("B", "y"): [9.9, 11.1, 11.85],  # -0.1, +0.1, -0.15: sd 0.13
              ("A", "z"): [10.0, 11.0, 12.0], ("B", "z"): [8.0, 9.1, 9.9]}     # B 2 below, consistently
    checks = {c.claim.text: c for c in claim_checks(collect(spec, "paper", _store(tmp_path, spec, values)))}
    noisy = checks["B beats A, noisy seeds"]
    assert noisy.test_status == FAILS and not noisy.weakest_link.opposite_significant
    assert noisy.decisive_power.paper_gap == pytest.approx(1.0) and noisy.decisive_power.mdd > 1.0
    assert noisy.status == UNDERPOWERED and noisy.decisive_power.seeds_needed > 3
    precise = checks["B beats A, precise seeds"]  # our seeds could see a gap of 1: the failure stands
    assert precise.test_status == FAILS and precise.decisive_power.mdd < 1.0 and precise.status == FAILS
    strong = checks["B loses significantly"]  # the opposite is significant: fails, whatever the power
    assert strong.weakest_link.opposite_significant and strong.status == FAILS


def test_holds_not_significant_is_never_relabelled(tmp_path):
    spec = _power_spec()
    values = {("A", "x"): [10.0, 14.0, 8.0], ("B", "x"): [11.0, 13.5, 9.0]}
    (c, *_) = claim_checks(collect(spec, "paper", _store(tmp_path, spec, values)))
    assert c.status == c.test_status == HOLDS_NS and c.decisive_power.underpowered


# ---- reports --------------------------------------------------------------------------------


def test_reports_show_verdicts_qualified_claims_plain_tests_and_power(tmp_path):
    from pubench.report import render_latex, render_markdown, write_index, write_report
    from pubench.report.html import report_body

    spec = _spec(TRAINED + CLAIMS)
    store = _store(tmp_path / "results", spec, VALUES, tier="reduced")
    res = collect(spec, "reduced", store)
    md = " ".join(render_markdown(res).split())
    assert "## Regime" in md
    assert "| methods | trained: A beats U by > 10 | x | in regime | gain +20.50 > 10 (paired, 3 seeds, p" in md
    assert "| methods | trained: A beats U by > 10 | y | not in regime | gain +2.83 not > 10 (paired, 3 seeds, p=0.99) |" in md
    assert md.count("the reduced tier trains briefly") == 1 and "the paper tier is the regime" not in md
    assert "- Why, at tier `reduced`: methods: the reduced tier trains briefly" in md
    assert "| z | not testable | no results for U |" in md
    assert ("| B beats A on y | B > A in y | not in regime (methods: y) | fails, opposite not significant (p="
            in md)
    assert "| MDD | paper gap | seeds for paper gap |" in md
    tex = render_latex(res)
    assert "\\paragraph{Regime}" in tex and "\\emph{not in regime}: gain +2.83 not \\textgreater{} 10" in tex
    assert "\\emph{not in regime (methods: y)}; test: fails, opposite not significant" in tex
    html = report_body(res, None, [], "spec.html")
    assert '<h2 id="regime">Regime</h2>' in html and 'class="badge o-not-in-regime">not in regime (methods: y)' in html
    assert '<span class="badge o-holds-ns">in regime</span>' in html
    write_report(spec, "reduced", store, tmp_path / "reports")
    index = write_index({spec.id: spec}, store, tmp_path / "reports").read_text()
    header = next(line for line in index.splitlines() if line.startswith("| tier"))
    row = next(line for line in index.splitlines() if line.startswith("| reduced"))
    cells = dict(zip([h.strip() for h in header.split("|")], [c.strip() for c in row.split("|")]))
    assert (cells["claims"], cells["holds"], cells["fails"], cells["not in regime"], cells["regime unknown"]) == \
        ("5", "1", "1", "2", "1")
    first = next(line for line in index.splitlines() if "| as first registered" in line)
    assert [c.strip() for c in first.split("|")][1:-1] == \
        ["reduced", "as first registered", "5", "1", "0", "0", "2", "0", "2", "0", "0"]  # z failed then
    assert cells["regime"] == "methods: 1/3 in regime, 1 not testable"


def test_reports_say_underpowered(tmp_path):
    from pubench.report import render_markdown

    spec = _power_spec()
    values = {("A", "x"): [10.0, 14.0, 8.0], ("B", "x"): [9.0, 15.0, 7.5]}
    md = " ".join(render_markdown(collect(spec, "paper", _store(tmp_path, spec, values))).split())
    assert "| B beats A, noisy seeds | B > A in x | underpowered | fails, opposite not significant (p=" in md
    assert "1 pair(s) with the paper's gap below our MDD" in md


def test_latex_with_regime_and_power_compiles(tmp_path):
    import shutil

    if shutil.which("pdflatex") is None:
        pytest.skip("no pdflatex (Debian: apt-get install texlive-latex-base texlive-latex-recommended)")
    from pubench.report import render_latex
    from tests.report.test_latex_compile import compile_tex, overfull

    spec = _spec(TRAINED + CLAIMS)
    tex = render_latex(collect(spec, "reduced", _store(tmp_path / "results", spec, VALUES, tier="reduced")))
    pdf, log = compile_tex(tex, tmp_path / "tex", "regime")
    assert pdf.exists() and not [w for w in overfull(log) if w > 1.0]


def test_site_index_shows_regime_and_order_per_tier(tmp_path):
    from pubench.report.site import write_site

    spec = _spec(TRAINED + CLAIMS)
    store = _store(tmp_path / "results", spec, VALUES, tier="reduced")
    index = write_site({spec.id: spec}, store, tmp_path / "site").read_text()
    assert "methods: 1/3 in regime, 1 not testable" in index and "<th>paper's order kept</th>" in index
    assert '<span class="muted">reduced</span> 100% of 1' in index  # B over A in x, as the paper orders them
    assert "2 not in regime" in index  # the claims summary badge
    page = (tmp_path / "site" / "reduced" / f"{spec.id}.html").read_text()
    assert 'id="regime"' in page and 'id="order"' in page


def test_a_table_whose_methods_are_columns_is_checked_transposed():
    """methods_in: cols (table1-punce): a block's rows name method columns, its cols the
    settings (table rows) it is checked in; the cells are read transposed."""
    from pubench.registry import get_spec

    s = get_spec("table1-punce")
    assert s.methods_in == "cols"
    [mnist, cifar] = s.regime
    assert mnist.reference == ("infoNCE",) and mnist.baseline == "untrained encoder"
    assert mnist.cols == ("MNIST n_P=1k", "MNIST n_P=3k", "MNIST n_P=10k") and "puNCE" in mnist.rows
    assert cifar.cols[0] == "CIFAR n_P=1k"


# ---- order agreement by regime ----------------------------------------------------------------


def test_agreement_splits_pairs_by_the_regime_of_their_cells(tmp_path):
    """The paper's one pair (B over A on x) is 'in regime' where A beats its untrained U by the
    margin, 'not in regime' where it does not, and 'unchecked' without a regime block."""
    from pubench.report.agreement import agreement, overall

    for extra, values, want in (
            (TRAINED, VALUES, "in regime"),
            (TRAINED, {**VALUES, ("U", "x"): [45.0, 46.0, 44.0]}, "not in regime"),
            ("", VALUES, "unchecked")):
        spec = _spec(extra)
        folder = tmp_path / want.replace(" ", "-")
        a = agreement(collect(spec, "paper", _store(folder, spec, values)))
        (pair,) = a.pairs
        assert (pair.better, pair.worse, pair.agrees, pair.regime) == ("B", "A", True, want)
        assert a.by_regime()[want].pairs == 1 and overall([a])[want].agree == 1
        assert (f"; {want}: 100% of 1" in a.summary()) == (want != "unchecked")


# ---- near-one-class seeds a spec explains (one_class_why) ---------------------------------------


def test_one_class_why_explains_cells_and_reports_show_it(tmp_path):
    from pubench.report import render_latex, render_markdown
    from pubench.report.html import report_body
    from pubench.report.regime import unexplained_one_class

    raw = yaml.safe_load(selftest_spec(rows=("A", "B"), cols=("x", "y", "z"), extra=TWO, seeds=3))
    raw["tiers"]["paper"]["one_class_why"] = {"B|y": "measured: B's threshold sits above every score"}
    spec = parse_spec(raw, "<t>")
    values = {("A", "x"): [0.5, 0.6, 0.55], ("B", "x"): [0.5, 0.02, 0.55],
              ("A", "y"): [0.5, 0.6, 0.55], ("B", "y"): [0.0, 0.01, 0.55],
              ("A", "z"): [0.0, 0.6, 0.55], ("B", "z"): [0.0, 0.0, 0.0]}
    res = collect(spec, "paper", _store(tmp_path, spec, values, lambda v: _binary(v, auc=50 + 40 * v)))
    # z: the block is out of regime (its reference A is near-one-class), y: the spec explains B
    assert unexplained_one_class(res, RegimeMap(res)) == {("B", "x"): 1}
    assert spec.one_class_reason("paper", "B", "y") == ("B|y", "measured: B's threshold sits above every score")
    assert spec.one_class_reason("paper", "B", "x") is None and spec.one_class_reason("reduced", "B", "y") is None
    # beside the hand-written reason, what the records measure: B|y's seeds 0 and 1 (recall 0 and 1%, AUC 50
    # and 50.4) against its seed 2 (recall 55%, AUC 72)
    measured = "2 recall-side (recall 0.0-1.0%), test AUC 50.2 against 72.0 for the other 1 seed(s)"
    why = f"`B|y` (2 of 3 seeds near-one-class; measured: {measured}): measured: B's threshold sits above every score"
    assert f"  - Why, at tier `paper`: {why}" in render_markdown(res)
    assert f"\\texttt{{B\\char124{{}}y}} (2 of 3 seeds near-one-class; measured: {measured.replace('%', chr(92) + '%')})" \
        in render_latex(res)
    assert f"Why, at tier paper: <code>B|y</code> (2 of 3 seeds near-one-class; measured: {measured})" in \
        report_body(res, None, [], "spec.html")
    # a variant (tier custom) keeps no measured reason of its base tier
    assert spec.with_variant("paper", ["value=3"]).one_class_reason("custom", "B", "y") is None
    raw["tiers"]["paper"]["cell_why"] = {"B|x": "measured: B is at chance on x"}
    assert parse_spec(raw, "<t>").with_variant("paper", ["value=3"]).cell_reason("custom", "B", "x") is None


@pytest.mark.parametrize("key", ["one_class_why", "cell_why"])
@pytest.mark.parametrize("reasons, problem", [
    ({"B": "why"}, "pattern must read 'row|col'"),
    ({"B|y": " "}, "give the reason"),
    ({"Q|*": "why"}, "matches no cell"),
])
def test_invalid_one_class_why_names_the_key(reasons, problem, key):
    raw = yaml.safe_load(selftest_spec(rows=("A", "B"), cols=("x", "y"), extra="", seeds=3))
    raw["tiers"]["reduced"][key] = reasons
    with pytest.raises(SpecError) as e:
        parse_spec(raw, "<t>")
    assert f"tiers.reduced.{key}.{next(iter(reasons))}" in str(e.value) and problem in str(e.value)


def test_the_measured_part_splits_the_sides_and_compares_auc_with_the_other_seeds():
    from types import SimpleNamespace

    from pubench.report.layout import one_class_measured
    from pubench.report.oneclass import RECALL_0, RECALL_LOW, SPECIFICITY_0

    nan = float("nan")
    res = SimpleNamespace(
        degenerate={("B", "x"): {0: RECALL_0, 1: SPECIFICITY_0}, ("B", "y"): {0: RECALL_LOW, 1: RECALL_0}},
        rates={("B", "x"): {0: (0.0, nan), 1: (1.0, 0.0), 2: (0.5, 0.8)},
               ("B", "y"): {0: (0.032, 0.99), 1: (0.0, nan)}},
        discrimination={("B", "x"): {0: (60.0, 50.0), 1: (70.0, 50.0), 2: (90.0, 65.0)},
                        ("B", "y"): {0: (None, 51.0), 1: (62.0, 50.0)}})
    # AUC: the three near seeds that carry one (60, 70, 62) against x's seed 2 (90)
    assert one_class_measured(res, [("B", "x"), ("B", "y")]) == \
        "3 recall-side (recall 0.0-3.2%), 1 specificity-side (specificity 0.0%), test AUC 64.0 against 90.0 " \
        "for the other 1 seed(s)"
    assert one_class_measured(res, [("B", "y")]) == "2 recall-side (recall 0.0-3.2%), test AUC 62.0 (no other seed)"
