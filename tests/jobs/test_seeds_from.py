"""``experiment.seeds_from``: a cell that is another spec's cell (the same experiment in two
tables) shares its seeds, is computed once, and shows one set of numbers (issue 36, item 4)."""

import json

import pytest
import yaml

from pubench.cli import main
from pubench.jobs import expand
from pubench.registry import SpecError, load_all, parse_spec
from pubench.store import ResultStore
from tests.conftest import selftest_spec

SHARES = "  seeds_from: {spec: table1-bcl, rows: {B: B}, cols: {x: x}}\n"


def _sharing_spec() -> str:
    """table2-bcl: rows C, B; its B|x is table1-bcl's B|x (same params: row B has value 2.0 in both)."""
    return selftest_spec("table2-bcl", rows=("C", "B")).replace("  task: selftest\n", "  task: selftest\n" + SHARES)


# ---- the committed registry ---------------------------------------------------------------------


def _shared_cells():
    specs = load_all()
    for spec in specs.values():
        for row in spec.rows:
            for col in spec.cols:
                if (shared := spec.shared_cell(row, col)) is not None:
                    yield spec, row, col, specs, shared


def test_committed_shared_cells_are_the_same_experiment_at_every_tier_where_both_run():
    seen = 0
    for spec, row, col, specs, (other_id, srow, scol) in _shared_cells():
        assert other_id in specs, f"{spec.id}: seeds_from names an unknown spec {other_id}"
        other = specs[other_id]
        assert srow in other.rows and scol in other.cols, f"{spec.id} {row}|{col}: {srow}|{scol} is not a cell"
        assert other.init_seed_from == ("row", "col") and not other.experiment.get("seeds_from"), \
            f"{other_id} must derive its init seeds from row and column itself (cell_seeds assumes it)"
        for tier in spec.tiers:
            if spec.unavailable_reason(tier, row, col) or other.unavailable_reason(tier, srow, scol):
                continue
            assert spec.resolve(tier, row, col) == other.resolve(tier, srow, scol), \
                f"{spec.id} {row}|{col} and {other_id} {srow}|{scol} differ at tier {tier}"
            a = expand(spec, tier, 2, [f"{row}|{col}"]).jobs
            b = expand(other, tier, 2, [f"{srow}|{scol}"]).jobs
            assert [(j.task, j.params_json, j.seeds) for j in a] == [(j.task, j.params_json, j.seeds) for j in b]
            seen += 1
    assert seen >= 13  # table3-wconpu's variant V, table4-pupl's 12 baseline rows (CIFAR-III at least)


def test_every_cell_of_a_sharing_spec_draws_the_other_specs_splits():
    specs = load_all()
    t4, t2 = expand(specs["table4-pupl"], "reduced"), expand(specs["table2-wconpu"], "reduced")
    splits = {(json.dumps(j.params.get("data"), sort_keys=True), j.seed_index): j.seeds["data"] for j in t2.jobs}
    for job in t4.jobs:
        assert job.seeds["data"] == splits[(json.dumps(job.params.get("data"), sort_keys=True), job.seed_index)]


@pytest.mark.parametrize("change, key, problem", [
    ({"spec": "table2-bcl"}, "experiment.seeds_from.spec", "names this spec itself"),
    ({"spec": "table1-bcl", "rows": {"Q": "B"}}, "experiment.seeds_from.rows.Q", "not one of the rows"),
    ({"spec": "table1-bcl", "cols": {"x": " "}}, "experiment.seeds_from.cols.x", "name the col of table1-bcl"),
])
def test_invalid_seeds_from_names_the_key(change, key, problem):
    raw = yaml.safe_load(selftest_spec("table2-bcl", rows=("C", "B")))
    raw["experiment"]["seeds_from"] = change
    with pytest.raises(SpecError) as e:
        parse_spec(raw, "<t>")
    assert key in str(e.value) and problem in str(e.value)


def _extending(cells: str, seen_before: str | None = None) -> dict:
    raw = yaml.safe_load(_sharing_spec())
    entry = {"cells": cells, "seeds": 5, "date": "2026-12-07", "why": "a pre-registered test"}
    raw["tiers"]["reduced"]["more_seeds"] = [entry | ({"seen_before": seen_before} if seen_before else {})]
    return raw


def test_more_seeds_in_a_shared_cell_must_say_what_the_seeds_already_there_show():
    """Extending a cell that is another spec's takes that spec's seeds as they are, some perhaps run
    and seen before the entry (issue 60: table3-wconpu's V gained seeds 3-9 that way, two of them
    one-class): the entry says what they show, or the spec does not load."""
    with pytest.raises(SpecError) as e:
        parse_spec(_extending("*|x"), "<t>")
    assert "tiers.reduced.more_seeds.0.seen_before" in str(e.value) and "B|x is table1-bcl's cell" in str(e.value)
    assert len(str(e.value).splitlines()) == 1
    spec = parse_spec(_extending("*|x", "table1-bcl held B|x seeds 0-1, both two-class"), "<t>")
    assert spec.tiers["reduced"].seeds_of("B", "x") == 5
    assert spec.tiers["reduced"].more_seeds[0]["seen_before"].startswith("table1-bcl held")
    unshared = parse_spec(_extending("C|*"), "<t>")  # C's cells are this spec's own: nothing to state
    assert "seen_before" not in unshared.tiers["reduced"].more_seeds[0]


def test_committed_extensions_of_shared_cells_say_what_was_there():
    stated = [(spec.id, m["cells"]) for spec in load_all().values() for t in spec.tiers.values()
              for m in t.more_seeds if m.get("seen_before")]
    assert ("table3-wconpu", "V: WConPU|CIFAR-10") in stated  # the rest are checked as the registry loads


# ---- runs ------------------------------------------------------------------------------------


def _records(root, spec_id):
    store = ResultStore(root / "results")
    return {(r["job"]["row"], r["job"]["col"], r["job"]["seed_index"]): r for r in store.records("smoke", spec_id)}


def test_a_shared_cell_takes_the_other_tables_record_and_runs_nothing(tmp_registry, capsys):
    tmp_registry(selftest_spec("table1-bcl"))
    tmp_registry(_sharing_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["run", "table2-bcl", "--tier", "smoke", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "1 job(s) took the records of the same computation in table1-bcl" in out
    one, two = _records(tmp_registry.root, "table1-bcl"), _records(tmp_registry.root, "table2-bcl")
    shared = two[("B", "x", 0)]
    assert shared["metrics"] == one[("B", "x", 0)]["metrics"]
    assert shared["info"]["shared_from"]["job"] == one[("B", "x", 0)]["job"]["id"]
    assert shared["timing"]["wall_s"] == 0.0 and "timing" in shared["info"]["shared_from"]
    # a cell that is not mapped runs itself, with its own init seed
    assert "shared_from" not in two[("B", "y", 0)]["info"]
    assert two[("B", "y", 0)]["metrics"] != one[("B", "y", 0)]["metrics"]
    # verify reruns the shared record from scratch first: the same computation, the same numbers
    assert main(["verify", "table2-bcl", "--tier", "smoke", "--sample", "1"]) == 0
    assert "B|x" in capsys.readouterr().out


def test_without_the_other_tables_record_the_shared_cell_computes_the_same_numbers(tmp_registry, capsys):
    tmp_registry(selftest_spec("table1-bcl"))
    tmp_registry(_sharing_spec())
    assert main(["run", "table2-bcl", "--tier", "smoke", "--no-progress"]) == 0
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    assert "took the records" not in capsys.readouterr().out
    one, two = _records(tmp_registry.root, "table1-bcl"), _records(tmp_registry.root, "table2-bcl")
    assert "shared_from" not in two[("B", "x", 0)]["info"]
    assert two[("B", "x", 0)]["metrics"] == one[("B", "x", 0)]["metrics"]
