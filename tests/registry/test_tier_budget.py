"""Nothing runs at a budget it was not given (issue 54, item 3): at a tier whose overrides name
rows (a ``rows`` entry, or a ``cells`` pattern whose row part is not ``*``), every row the tier
runs is named by one of them or ``inherits`` another row's; otherwise ``validate``, ``expand``
and ``run`` refuse the spec with one line naming the tier."""

from __future__ import annotations

import pytest

from pubench.cli import main
from pubench.registry import load_all
from pubench.registry.loader import load_spec, rows_not_named, spec_paths
from pubench.registry.spec import SpecError
from tests.conftest import selftest_spec

#: a reduced tier that gives row A a budget by name and says nothing about B
NAMES_A_ONLY = selftest_spec(rows=("A", "B")).replace(
    "reduced: {seeds: 2}",
    "reduced:\n    seeds: 2\n    cells: {\"A|*\": {sleep: 0.0}}\n    deviations: [A sleeps no more]")


def test_a_row_no_override_names_is_refused_by_validate_with_its_line(tmp_registry, tmp_path, capsys):
    path = tmp_path / "table1-bcl.yaml"
    path.write_text(NAMES_A_ONLY)
    assert main(["validate", str(path)]) == 2
    out = capsys.readouterr().out.strip()
    line = next(i for i, text in enumerate(NAMES_A_ONLY.splitlines(), 1) if text.strip() == "reduced:")
    assert out.startswith(f"{path}:{line}: tiers.reduced: row(s) 'B' are named by none of this tier's row overrides "
                          "('A|*')"), out
    assert "inherits: {B: ROW}" in out and len(out.splitlines()) == 1


@pytest.mark.parametrize("command", [["expand", "table1-bcl", "--tier", "paper"],
                                     ["run", "table1-bcl", "--tier", "paper", "--dry-run"]])
def test_expand_and_run_refuse_the_spec_too(tmp_registry, capsys, command):
    tmp_registry(NAMES_A_ONLY)
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "tiers.reduced: row(s) 'B' are named by none" in err and len(err.strip().splitlines()) == 1


def test_naming_the_row_or_inheriting_another_makes_it_valid(tmp_registry):
    named = NAMES_A_ONLY.replace('cells: {"A|*": {sleep: 0.0}}', 'cells: {"A|*": {sleep: 0.0}}\n    rows: {B: {}}')
    assert load_spec(tmp_registry(named)).resolve("reduced", "B", "x")["params"] == {"value": 2.0}
    inherits = NAMES_A_ONLY.replace('cells: {"A|*": {sleep: 0.0}}',
                                    'cells: {"A|*": {sleep: 0.0}}\n    inherits: {B: A}')
    spec = load_spec(tmp_registry(inherits))
    # B keeps its own experiment config and takes A's overrides at this tier (not at the others)
    assert spec.resolve("reduced", "B", "x")["params"] == {"value": 2.0, "sleep": 0.0}
    assert spec.resolve("paper", "B", "x")["params"] == {"value": 2.0}


@pytest.mark.parametrize("inherits,problem", [
    ("{B: Q}", "'Q' is not one of the rows"),
    ("{B: B}", "inherits itself or another row"),
    ("{Q: A}", "'Q' is not one of the rows"),
])
def test_a_wrong_inherits_is_refused(tmp_registry, inherits, problem):
    text = NAMES_A_ONLY.replace('cells: {"A|*": {sleep: 0.0}}', f'cells: {{"A|*": {{sleep: 0.0}}}}\n    '
                                                                   f'inherits: {inherits}')
    with pytest.raises(SpecError, match="tiers.reduced.inherits"):
        try:
            load_spec(tmp_registry(text))
        except SpecError as e:
            assert problem in e.problem
            raise


def test_a_tier_whose_overrides_name_no_row_needs_nothing(tmp_registry):
    tier_wide = NAMES_A_ONLY.replace('cells: {"A|*": {sleep: 0.0}}', 'cells: {"*|*": {sleep: 0.0}}')
    assert load_spec(tmp_registry(tier_wide)).resolve("reduced", "B", "y")["params"] == {"value": 2.0, "sleep": 0.0}


def test_every_committed_spec_names_every_row_it_runs_at_every_tier():
    """The committed specs load under the rule (eight of them name, in their reduced or smoke
    tier, the rows whose budget is the tier-wide overrides: no resolved config moved,
    tests/jobs/test_resolved_configs.py)."""
    for spec in load_all().values():
        for tier in spec.tiers.values():
            running = sorted({r for r, c in spec.cells() if spec.unavailable_reason(tier.name, r, c) is None})
            assert rows_not_named(tier, spec.rows, running) == [], (spec.id, tier.name)
    assert len(spec_paths()) == len(load_all())
