"""Spec loading and validation: every problem is one clear error naming file, key, problem."""

import pytest
import yaml

from pubench.registry import SpecError, get_spec, load_all, parse_spec
from pubench.registry.spec import deep_merge, match_cell
from tests.conftest import selftest_spec


def _parse(text: str, file: str = "<test>"):
    return parse_spec(yaml.safe_load(text), file)


def _mutate(text: str, fn) -> str:
    data = yaml.safe_load(text)
    fn(data)
    return yaml.safe_dump(data, sort_keys=False)


def test_valid_spec_loads():
    spec = _parse(selftest_spec())
    assert spec.id == "table1-bcl" and spec.rows == ["A", "B"] and spec.cols == ["x", "y"]
    assert spec.cells() == [("A", "x"), ("A", "y"), ("B", "x"), ("B", "y")]
    assert spec.reported_cell("B", "y", "score").mean is None
    assert spec.tiers["smoke"].deviations == ["no sleep"]


BAD = [
    ("unknown top key", lambda d: d.update(colour=1), "colour", "unknown key"),
    ("missing id", lambda d: d.pop("id"), "id", "missing"),
    ("bad id", lambda d: d.update(id="tbl1-bcl"), "id", "does not read"),
    ("id/paper mismatch", lambda d: d.update(paper="pucl"), "id", "does not end with its paper"),
    ("unknown paper", lambda d: d.update(paper="xyz"), "paper", "unknown paper"),
    ("kind mismatch", lambda d: d.update(kind="figure"), "kind", "must be 'table'"),
    ("metric direction not bool", lambda d: d["metrics"]["score"].update(higher_is_better="yes"),
     "metrics.score.higher_is_better", "expected bool"),
    ("duplicate rows", lambda d: d.update(rows=["A", "A"]), "rows", "duplicate"),
    ("cell unknown row", lambda d: d["reported"]["cells"][0].update(row="Z"), "reported.cells[0].row", "not one of the rows"),
    ("cell mean missing", lambda d: d["reported"]["cells"][0].pop("mean"), "reported.cells[0].mean", "missing"),
    ("null cell without note", lambda d: d["reported"]["cells"][2].pop("note"), "reported.cells[2].note", "needs a note"),
    ("mean is a string", lambda d: d["reported"]["cells"][0].update(mean="1.0"), "reported.cells[0].mean", "expected float"),
    ("seeds unstated", lambda d: d["reported"].pop("seeds"), "reported", "must state 'seeds'"),
    ("missing tier", lambda d: d["tiers"].pop("smoke"), "tiers", "missing tier 'smoke'"),
    ("tier-wide row of no name", lambda d: d["tiers"]["smoke"].update(tier_wide=["Q"]), "tiers.smoke.tier_wide",
     "'Q' is neither a row nor a row group"),
    ("tier-wide row with its own override", lambda d: d["tiers"]["smoke"].update(rows={"A": {"value": 3.0}},
                                                                                  tier_wide=["A"]),
     "tiers.smoke.tier_wide", "'A' is not at the tier-wide params alone: 'rows.A' names it"),
    ("unknown row override", lambda d: d["experiment"]["rows"].update(Q={}), "experiment.rows.Q", "not one of the rows"),
    ("unavailable pattern matches nothing", lambda d: d["tiers"]["reduced"].update(unavailable={"Q|*": "why"}),
     "tiers.reduced.unavailable.Q|*", "matches no cell"),
    ("claim unknown kind", lambda d: d.update(claims=[{"kind": "best", "rows": ["A"], "text": "t"}]),
     "claims[0].kind", "unknown claim kind"),
    ("missing task", lambda d: d["experiment"].pop("task"), "experiment.task", "missing"),
    ("curves on a table", lambda d: d.update(curves=[{"title": "c", "y": "a.b", "ylabel": "y"}]), "curves",
     "only a figure"),
    ("curve claim names no curve", lambda d: d.update(claims=[{"kind": "curve_rises", "curve": "c", "rows": ["A"],
                                                                "text": "t"}]), "claims[0].curve", "not the title"),
    ("curve named by another claim kind", lambda d: d.update(claims=[{"kind": "best_row", "curve": "c",
                                                                       "rows": ["A"], "text": "t"}]),
     "claims[0].curve", "only a curve_rises claim"),
]


def _figure_with_curves(**claim) -> str:
    return _mutate(selftest_spec("fig1-bcl"), lambda d: d.update(
        curves=[{"title": "loss", "y": "train.loss", "ylabel": "Loss"},
                {"title": "density", "y": "dens.y", "x": "dens.x", "ylabel": "Density", "cols": ["x"]}],
        claims=[{"kind": "curve_rises", "curve": "loss", "rows": ["A"], "text": "t", **claim}]))


def test_figure_curves_load_with_their_defaults():
    spec = _parse(_figure_with_curves())
    loss, dens = spec.curves
    assert (loss.x, loss.xlabel, loss.cols, loss.fmt) == ("epoch", "epoch", ("x", "y"), ".2f")
    assert (dens.x, dens.xlabel, dens.cols) == ("dens.x", "x", ("x",))
    (claim,) = spec.claims
    assert (claim.kind, claim.curve, claim.rows, claim.cols) == ("curve_rises", "loss", ("A",), ("x", "y"))


@pytest.mark.parametrize("mutate, key, problem", [
    (lambda d: d["curves"][1].update(cols=["z"]), "curves[1].cols", "not a (non-derived) col"),
    (lambda d: d["curves"][1].update(title="loss"), "curves[1].title", "duplicate curve title"),
    (lambda d: d["curves"][0].update(y="train..loss"), "curves[0].y", "dotted path"),
    (lambda d: d["claims"][0].update(metric="score"), "claims[0].metric", "reads its curve"),
    (lambda d: d["claims"][0].update(curve="density", cols=["y"]), "claims[0].cols", "not one of the curve's cols"),
])
def test_bad_curves_and_curve_claims(mutate, key, problem):
    with pytest.raises(SpecError) as err:
        _parse(_mutate(_figure_with_curves(), mutate))
    assert (err.value.key, problem in err.value.problem) == (key, True)


@pytest.mark.parametrize("name,mutate,key,problem", BAD, ids=[b[0] for b in BAD])
def test_invalid_spec_names_file_key_problem(name, mutate, key, problem):
    with pytest.raises(SpecError) as err:
        _parse(_mutate(selftest_spec(), mutate), "experiments/bcl/table1-bcl.yaml")
    assert err.value.file == "experiments/bcl/table1-bcl.yaml"
    assert err.value.key == key
    assert problem in err.value.problem
    assert "\n" not in str(err.value)


def test_yaml_syntax_error_is_a_spec_error(tmp_registry):
    path = tmp_registry(selftest_spec())
    path.write_text("id: [unclosed\n")
    with pytest.raises(SpecError, match=r"\(yaml\)"):
        load_all()


def test_file_name_must_match_id(tmp_registry):
    path = tmp_registry(selftest_spec())
    path.rename(path.with_name("table9-bcl.yaml"))
    with pytest.raises(SpecError, match="differs from the file name"):
        load_all()


SCHEMA_BAD = [
    ("unknown key in a tier", lambda d: d["tiers"]["reduced"].update(colour=1), "tiers.reduced.colour",
     "unknown key (allowed: cell_why, cells, cols, deviations, inherits, more_seeds, one_class_why, params, rows, "
     "seeds, tier_wide, unavailable, why)"),
    ("unknown key in a reported cell", lambda d: d["reported"]["cells"][0].update(stdev=0.1),
     "reported.cells[0].stdev", "unknown key (allowed: col, mark, mean, metric, note, row, std)"),
    ("missing metric label", lambda d: d["metrics"]["score"].pop("label"), "metrics.score.label", "missing"),
    ("missing claim rows", lambda d: d.update(claims=[{"kind": "order", "text": "t"}]), "claims[0].rows", "missing"),
    ("seeds not an int", lambda d: d["tiers"]["paper"].update(seeds="two"), "tiers.paper.seeds",
     "expected int, got str 'two'"),
    ("seeds a float", lambda d: d["tiers"]["paper"].update(seeds=2.0), "tiers.paper.seeds", "expected int, got float 2.0"),
    ("a row that is not a string", lambda d: d.update(rows=["A", 3]), "rows[1]", "expected str, got int 3"),
    ("params not a mapping", lambda d: d["experiment"].update(params=[1]), "experiment.params", "expected a mapping"),
    ("unknown tier", lambda d: d["tiers"].update(huge={"seeds": 1}), "tiers.huge", "unknown tier (one of paper"),
    ("methods_in", lambda d: d.update(methods_in="both"), "methods_in", "'both' is not one of 'rows' or 'cols'"),
]


@pytest.mark.parametrize("name,mutate,key,problem", SCHEMA_BAD, ids=[b[0] for b in SCHEMA_BAD])
def test_schema_errors_name_the_dotted_key_in_one_line(name, mutate, key, problem):
    with pytest.raises(SpecError) as err:
        _parse(_mutate(selftest_spec(), mutate), "experiments/bcl/table1-bcl.yaml")
    assert err.value.key == key and problem in err.value.problem
    assert str(err.value) == f"experiments/bcl/table1-bcl.yaml: {key}: {err.value.problem}" and "\n" not in str(err.value)


def test_json_schema_export_is_committed_and_forbids_unknown_keys():
    """experiments/spec.schema.json is what `pubench schema` prints (regenerate:
    `pubench schema > experiments/spec.schema.json`); editors validate specs with it."""
    import json
    from pathlib import Path

    from pubench.registry.schema import spec_json_schema

    committed = json.loads((Path(__file__).resolve().parents[2] / "experiments" / "spec.schema.json").read_text())
    schema = spec_json_schema()
    assert committed == schema
    assert schema["additionalProperties"] is False
    assert all(d.get("additionalProperties") is False for d in schema["$defs"].values() if d.get("type") == "object")
    assert {"id", "paper", "version", "reported", "experiment", "tiers"} <= set(schema["required"])
    assert schema["$defs"]["ReportedModel"]["required"] == ["seeds", "pm"]  # null allowed, silence not
    assert "seeds" in schema["$defs"]["TierModel"]["required"]
    notes = spec_json_schema(notes=True)  # `pubench schema --notes > experiments/notes.schema.json`
    assert json.loads((Path(__file__).resolve().parents[2] / "experiments" / "notes.schema.json").read_text()) == notes
    assert notes["additionalProperties"] is False and not notes.get("required")
    assert all(d.get("additionalProperties") is False for d in notes["$defs"].values() if d.get("type") == "object")


def test_unreported_cells_are_null_with_the_shared_note():
    text = _mutate(selftest_spec(), lambda d: d["reported"].update(
        unreported="lost in the conversion", cells=[{"row": "B", "col": "x", "mean": 2.0}]))
    spec = _parse(text)
    assert [(c.row, c.col, c.mean, c.note) for c in spec.reported] == [
        ("A", "x", None, "lost in the conversion"), ("A", "y", None, "lost in the conversion"),
        ("B", "x", 2.0, None), ("B", "y", None, "lost in the conversion")]


def test_not_designed_reason_is_generated_from_the_registry(tmp_registry):
    tmp_registry(selftest_spec())
    tmp_registry(selftest_spec("fig2-bcl").replace("  reduced: {seeds: 2}",
                                                   "  reduced: {seeds: 2, unavailable: {'*|*': not_designed}}"))
    tmp_registry(selftest_spec("table2-bcl"))
    why = get_spec("fig2-bcl").unavailable_reason("reduced", "A", "y")
    assert why == "no reduced config designed yet (so far only bcl tables 1-2 have one)"
    assert get_spec("table1-bcl").unavailable_reason("reduced", "A", "y") is None


def test_offline_reason_names_its_data_set():
    """``offline: NAME`` is the sentence every data set missing here shares; a sentence that
    merely contains a colon stays as written."""
    text = _mutate(selftest_spec(), lambda d: d["tiers"]["reduced"].update(
        unavailable={"*|x": "offline: the Alzheimer MRI set", "*|y": "Note: not run"}))
    spec = _parse(text)
    assert spec.unavailable_reason("reduced", "A", "x") == (
        "the Alzheimer MRI set is not available offline here (paper tier only)")
    assert spec.unavailable_reason("reduced", "B", "y") == "Note: not run"


def test_resolution_order_and_null_deletes():
    text = _mutate(selftest_spec(), lambda d: d["tiers"]["reduced"].update(
        params={"sleep": 0.5}, cols={"y": {"value": 9.0}}, cells={"A|y": {"sleep": None}}, rows={"B": {}},
        deviations=["d"]))
    spec = _parse(text)
    assert spec.resolve("paper", "A", "y")["params"] == {"value": 1.0}
    assert spec.resolve("reduced", "A", "x")["params"] == {"value": 1.0, "sleep": 0.5}
    assert spec.resolve("reduced", "B", "y")["params"] == {"value": 9.0, "sleep": 0.5}
    assert spec.resolve("reduced", "A", "y")["params"] == {"value": 9.0}


def test_glob_cells_layer_applies_in_file_order():
    text = _mutate(selftest_spec(), lambda d: d["tiers"]["reduced"].update(
        cells={"*|*": {"sleep": 0.1}, "A|*": {"sleep": 0.2}, "*|y": {"data": {"n": None}}}, rows={"B": {}},
        deviations=["d"]))
    spec = _parse(text)
    assert spec.resolve("reduced", "A", "x")["params"] == {"value": 1.0, "sleep": 0.2}
    assert spec.resolve("reduced", "B", "x")["params"] == {"value": 2.0, "sleep": 0.1}
    assert "data" not in spec.resolve("reduced", "B", "y")["params"]  # deleting from nothing creates nothing
    bad = _mutate(selftest_spec(), lambda d: d["experiment"].update(cells={"Z*|*": {}}))
    with pytest.raises(SpecError, match="matching at least one cell"):
        _parse(bad)


def test_glob_cell_patterns():
    assert match_cell("*|STL*", "puNCE", "STL-I")
    assert not match_cell("*|STL*", "puNCE", "CIFAR-I")
    assert match_cell("nnPU|*", "nnPU", "x")


def test_deep_merge_does_not_mutate():
    a = {"x": {"y": 1}}
    b = deep_merge(a, {"x": {"z": 2}})
    assert a == {"x": {"y": 1}} and b == {"x": {"y": 1, "z": 2}}
    assert deep_merge(a, {"q": {"r": None}}) == a
    assert deep_merge(a, {"x": {"y": None}}) == {"x": {}}
    assert deep_merge(a, {"q": {"r": None}}, keep_nulls=True) == {"x": {"y": 1}, "q": {"r": None}}  # YAML includes


#: (table, error) of the cells whose config a task rejects on purpose: features the code
#: does not implement yet. Any other rejection is a spec error (a typo, a stale key) and
#: fails here; an entry that no longer matches a rejection must be removed.
REJECTED_ON_PURPOSE: set[tuple[str, str]] = set()


def test_every_tier_cell_is_runnable_or_says_why():
    """A cell a tier cannot run carries a reason; every other one names implemented units and
    a config its task accepts, or its rejection is one of REJECTED_ON_PURPOSE."""
    from pubench.coverage import coverage

    cov = coverage(load_all())
    for t in cov["tables"]:
        for tier, n in t["runnable"].items():
            assert 0 <= n <= t["cells"]
    rejected = {(table, r["error"]) for r in cov["rejected_configs"] for table in r["tables"]}
    assert all(r["cells"] > 0 for r in cov["rejected_configs"])
    assert not rejected - REJECTED_ON_PURPOSE, f"cells rejected by their task: {sorted(rejected - REJECTED_ON_PURPOSE)}"
    assert not REJECTED_ON_PURPOSE - rejected, f"no longer rejected: {sorted(REJECTED_ON_PURPOSE - rejected)}"


def test_a_typo_in_a_cell_config_is_caught(tmp_registry):
    """A key the task does not know makes the cell rejected, and the check above fails on it."""
    from pubench.coverage import coverage

    tmp_registry(selftest_spec().replace("params: {value: 0.0}", "params: {value: 0.0, vlaue: 1.0}"))
    cov = coverage(load_all())
    assert [(r["tables"], r["error"]) for r in cov["rejected_configs"]] == [
        (["table1-bcl"], "ConfigError: params: unknown key 'vlaue'")]


def test_every_real_spec_is_valid():
    specs = load_all()
    assert "fig5-bcl" in specs
    for spec in specs.values():
        for tier in spec.tiers:
            for row, col in spec.cells():
                assert spec.resolve(tier, row, col)["task"] == spec.experiment["task"]
