"""A tier's changes generated from its config (issue 63, :mod:`pubench.registry.changes`): the lines
read the difference of each cell's paper and tier configs, grouped by the rows that share it; the
written whys are keyed by key path or cell pattern and a key that names no change is an error;
revisions render their sentence from their facts (:mod:`pubench.registry.revisions`)."""

from __future__ import annotations

import textwrap

import pytest

from pubench.cli import main
from pubench.registry import SpecError, get_spec
from pubench.registry.changes import config_diff, deviation_lines, tier_changes, value_text
from pubench.registry.notes import notes_path
from pubench.registry.spec import match_cell
from tests.conftest import selftest_spec

ABSENT = config_diff({}, {"a": 1})[0][1]  # the marker of a key one side lacks

# rows A, B, C over columns x, y; the reduced tier changes every cell's `sleep`, A's and B's `value`
# (1 and 2 at the paper tier), and `n` per column for A and B only
SPEC = selftest_spec(rows=("A", "B", "C"), extra="").replace(
    "  reduced: {seeds: 2}",
    textwrap.indent(textwrap.dedent("""\
        reduced:
          seeds: 2
          params: {sleep: 0.0}
          cells:
            "{A,B}|*": {value: 5.0}
            "{A,B}|x": {n: 10}
            "{A,B}|y": {n: 20}
          tier_wide: [C]
          deviations: ["The selftest task reads no data."]
        """), "  "))


def test_a_config_diff_names_each_changed_key_once():
    paper = {"train": {"epochs": 100, "optimizer": {"lr": 1e-5}}, "data": {"prior": 0.4}, "aug": [1, 2]}
    tier = {"train": {"epochs": 5, "optimizer": {"lr": 1e-5}}, "data": {"subset": {"train": 4000}}, "aug": [1]}
    assert config_diff(paper, tier) == [("train.epochs", 100, 5), ("data.prior", 0.4, ABSENT),
                                        ("data.subset", ABSENT, {"train": 4000}), ("aug", [1, 2], [1])]
    assert config_diff({"a": 1}, {"a": 1.0}) == [("a", 1, 1.0)]  # an int that became a float changed the config


@pytest.mark.parametrize("value,text", [(1e-5, "1e-5"), (0.3877551020408163, "0.3878"), (30000, "30000"),
                                        (True, "true"), (None, "null"), (ABSENT, "unset"),
                                        ({"train": 4000, "test": 2000}, "{train: 4000, test: 2000}"),
                                        ([0.5, 1.0], "[0.5, 1]"), ("cifar10_jpeg", "cifar10_jpeg")])
def test_values_print_short(value, text):
    assert value_text(value) == text


def test_a_cell_pattern_may_list_names():
    assert match_cell("ResNet18 {PN,PvU}|*", "ResNet18 PvU", "n_P=1k")
    assert not match_cell("ResNet18 {PN,PvU}|*", "ResNet18 puNCE", "n_P=1k")
    assert match_cell("{A,B}|{x,y}", "B", "y") and not match_cell("{A,B}|x", "C", "x")


def test_the_lines_group_the_rows_that_share_their_changes(tmp_registry):
    tmp_registry(SPEC)
    spec = get_spec("table1-bcl")
    assert [ln.text for ln in tier_changes(spec, "reduced")] == [
        "every row: sleep unset -> 0", "A, B: n unset -> 10 (x), 20 (y)", "A: value 1 -> 5", "B: value 2 -> 5"]
    assert tier_changes(spec, "paper") == []
    assert deviation_lines(spec, "reduced")[-1] == "The selftest task reads no data."


def test_a_line_reads_the_values_of_its_rows_and_columns(tmp_registry):
    tmp_registry(SPEC)
    lines = {ln.rows: ln.text for ln in tier_changes(get_spec("table1-bcl"), "reduced")}
    assert lines[("A", "B", "C")] == "every row: sleep unset -> 0"
    assert lines[("A",)] == "A: value 1 -> 5"
    assert lines[("B",)] == "B: value 2 -> 5"
    assert lines[("A", "B")] == "A, B: n unset -> 10 (x), 20 (y)"


WHYS = textwrap.dedent("""\
    tiers:
      reduced:
        why:
          n: "the per-column n of the test."
          "B|*": "B's own reason."
          "*|x": "a reason of column x."
    """)


def test_a_why_is_printed_once_beside_the_first_line_it_concerns(tmp_registry):
    path = tmp_registry(SPEC)
    notes_path(path).write_text(WHYS, encoding="utf-8")
    lines = tier_changes(get_spec("table1-bcl"), "reduced")
    placed = {ln.rows: ln.whys for ln in lines}
    assert placed[("A", "B")] == (("n", "the per-column n of the test."),)
    assert placed[("B",)] == ((None, "B's own reason."),)  # the line is B's alone: no key to name
    assert ("*|x", "a reason of column x.") in placed[("A", "B", "C")]  # the first line it touches
    full = [ln.full_text() for ln in lines]
    assert "A, B: n unset -> 10 (x), 20 (y). Why (n): the per-column n of the test." in full


@pytest.mark.parametrize("key,problem", [("epochs", "this key path names no change"),
                                         ("Z|*", "matches no cell"),
                                         ("value.*", "names no change")])
def test_a_why_that_names_no_change_is_an_error_naming_it(tmp_registry, key, problem):
    path = tmp_registry(SPEC)
    notes_path(path).write_text(f'tiers:\n  reduced:\n    why: {{"{key}": "x"}}\n', encoding="utf-8")
    with pytest.raises(SpecError) as err:
        get_spec("table1-bcl")
    assert err.value.file == str(notes_path(path)) and err.value.key == f"tiers.reduced.why.{key}"
    assert problem in err.value.problem


def test_a_variant_drops_the_why_of_the_key_it_sets(tmp_registry):
    path = tmp_registry(SPEC)
    notes_path(path).write_text(WHYS, encoding="utf-8")
    variant = get_spec("table1-bcl").with_variant("reduced", ["n=3"])
    assert "n" not in variant.tiers["custom"].why and "B|*" in variant.tiers["custom"].why
    lines = {ln.rows: ln.text for ln in tier_changes(variant, "custom")}
    assert lines[("A", "B", "C")] == "every row: sleep unset -> 0; n unset -> 3"


def test_expand_diff_prints_the_lines_and_the_written_deviations(tmp_registry, capsys):
    path = tmp_registry(SPEC)
    notes_path(path).write_text(WHYS, encoding="utf-8")
    assert main(["expand", "table1-bcl", "--tier", "reduced", "--diff"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# table1-bcl (version 1), tier reduced against the paper tier: 4 line(s) of changes")
    assert "- A, B: n unset -> 10 (x), 20 (y). Why (n): the per-column n of the test." in out
    assert out[-2:] == ["# written deviations (what no config shows)", "- The selftest task reads no data."]
    assert main(["expand", "table1-bcl", "--tier", "reduced", "--diff", "--only", "C|*"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "- C: sleep unset -> 0. Why (*|x): a reason of column x.", "",
        "# written deviations (what no config shows)", "- The selftest task reads no data."]


def test_a_row_at_the_tier_wide_params_is_named_by_tier_wide(tmp_registry):
    tmp_registry(SPEC)
    assert get_spec("table1-bcl").tiers["reduced"].tier_wide == ("C",)
    tmp_registry(SPEC.replace("tier_wide: [C]", "tier_wide: []"))  # C: named by no override of a tier that names rows
    with pytest.raises(SpecError, match=r"row\(s\) 'C' are named by none .*`tier_wide: \[C\]`"):
        get_spec("table1-bcl")


# ------------------------------------------------------------------ revisions rendered from their facts
CLAIM = textwrap.dedent("""\
    claims:
      - kind: greater
        rows: [A, B]
        cols: [x]
        text: "A beats B on x"
        revised: [{date: "2026-11-22", was: {kind: greater, rows: [A, B], text: "A beats B"}, commit: abc1234,
            after: [paper], version: 1, first_records: "2026-11-21"COUNTED}]
    """)


def test_a_claim_revision_counts_its_first_form_unless_it_came_with_a_version_bump(tmp_registry):
    tmp_registry(selftest_spec(extra=CLAIM.replace("COUNTED", "")).replace("version: 1", "version: 2", 1))
    (claim,) = get_spec("table1-bcl").claims
    assert claim.original is not None and claim.history == ()
    assert claim.revised[0].why == (
        "In commit abc1234, after the table's first records at the paper tier (spec version 1, first on 2026-11-21). "
        "The claim as first registered is the one counted; the revision is shown beside it.")
    tmp_registry(selftest_spec(extra=CLAIM.replace("COUNTED", ", counted: revised")).replace("version: 1", "version: 2", 1))
    (claim,) = get_spec("table1-bcl").claims
    assert claim.revised == () and claim.original is None and len(claim.history) == 1
    assert "Registered with the bump from version 1" in claim.history[0].why
    tmp_registry(selftest_spec(extra=CLAIM.replace("COUNTED", ", counted: revised")))  # no bump: version 1 still
    with pytest.raises(SpecError, match=r"claims\[0\]\.revised\[0\]\.counted: the revised form counts only where"):
        get_spec("table1-bcl")
