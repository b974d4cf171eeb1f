"""The cross-paper view: the reviewed mapping is valid against the registry, bad names fail
loudly (never matched by similarity), and each cell gets the paper's number and ours."""

import json

import pytest

from pubench.cli import main
from pubench.jobs import expand
from pubench.registry import load_all
from pubench.report.crossref import CrossrefError, crossref, load_crossref, render_crossref
from pubench.store import ResultStore
from tests.conftest import selftest_spec


def test_the_committed_mapping_names_real_cells_of_two_papers_or_more():
    specs = load_all()
    entries = load_crossref(specs)
    assert len(entries) >= 20
    for entry in entries:
        papers = {specs[c.spec_id].paper for c in entry.cells}
        assert len(papers) >= 2, entry.method
        for c in entry.cells:
            spec = specs[c.spec_id]
            assert c.row in spec.rows and c.col in spec.cols and c.metric in spec.metrics
            assert len(c.setting) > 20  # a description of how that paper ran it, not a bare name
    names = {(e.method, e.dataset) for e in entries}
    assert ("nnPU", "CIFAR-10, vehicles vs animals") in names and ("puNCE", "CIFAR-10, vehicles vs animals") in names
    # the number 003 copies from 004 is the same cell value unless the spec notes a difference
    for entry in entries:
        cells = {specs[c.spec_id].paper: specs[c.spec_id].reported_cell(c.row, c.col, c.metric) for c in entry.cells
                 if c.spec_id in ("table2-wconpu", "table4-pupl")}
        if len(cells) == 2 and cells["pupl"] is not None and cells["pupl"].mean is not None:
            same = (cells["pupl"].mean, cells["pupl"].std) == (cells["wconpu"].mean, cells["wconpu"].std)
            assert same or "004" in (cells["pupl"].note or ""), entry


def _two_papers(tmp_registry):
    tmp_registry(selftest_spec("table1-bcl", seeds=3))
    tmp_registry(selftest_spec("table1-pucl", rows=("A", "C"), seeds=3))
    return tmp_registry.root / "experiments" / "_crossref.yaml"


MAPPING = """\
settings:
  bcl-way: "002's way: a longer description of the setting"
entries:
  - method: A
    dataset: x data
    setting: "n = 1"
    note: "a note"
    cells:
      - {spec: table1-bcl, row: A, col: x, setting: bcl-way}
      - {spec: table1-pucl, row: A, col: x, setting: "000's way, written out"}
"""


def test_load_resolves_named_settings(tmp_registry):
    path = _two_papers(tmp_registry)
    path.write_text(MAPPING)
    (entry,) = load_crossref(load_all(), path)
    assert entry.method == "A" and entry.note == "a note"
    assert [c.setting for c in entry.cells] == ["002's way: a longer description of the setting",
                                                "000's way, written out"]
    assert entry.cells[0].metric == "score"  # the spec's only metric


@pytest.mark.parametrize("edit,problem", [
    (("row: A, col: x, setting: bcl-way", "row: a, col: x, setting: bcl-way"), "table1-bcl has no row 'a'"),
    (("spec: table1-pucl", "spec: table1-puc"), "no spec 'table1-puc'"),
    (("row: A, col: x, setting: \"000", "row: A, col: z, setting: \"000"), "table1-pucl has no column 'z'"),
    (("spec: table1-pucl", "spec: table1-bcl"), "names a cell twice"),
    (("spec: table1-pucl, row: A", "spec: table1-bcl, row: B"), "needs cells of at least two papers"),
    (("col: x, setting: bcl-way", "col: x, metric: acc, setting: bcl-way"), "table1-bcl has no metric 'acc'"),
    (("    note: \"a note\"\n", "    notes: \"a note\"\n"), "unknown key(s) ['notes']"),
])
def test_a_wrong_name_fails_with_the_entry_and_the_problem(tmp_registry, edit, problem):
    path = _two_papers(tmp_registry)
    path.write_text(MAPPING.replace(*edit))
    with pytest.raises(CrossrefError) as err:
        load_crossref(load_all(), path)
    assert problem in str(err.value) and "entry 1" in str(err.value)


def _fill(store, spec, tier, value, seeds=3):
    for job in expand(spec, tier, seeds).jobs:
        store.write_ok(job, {"score": value + 0.1 * job.seed_index}, {}, {"wall_s": 1.0})


def test_ours_comes_from_the_highest_tier_with_results(tmp_registry):
    path = _two_papers(tmp_registry)
    path.write_text(MAPPING)
    specs = load_all()
    store = ResultStore(tmp_registry.root / "results")
    _fill(store, specs["table1-bcl"], "smoke", 5.0, seeds=1)
    _fill(store, specs["table1-bcl"], "paper", 0.5)
    entries = load_crossref(specs, path)
    (entry, values), = crossref(entries, specs, store)
    bcl, pucl = values
    assert bcl.tier == "paper" and bcl.ours.mean == pytest.approx(0.6) and bcl.reported.mean == 1.0
    assert bcl.delta == pytest.approx(0.6 - 1.0)  # higher is better: worse than reported
    assert pucl.ours is None and pucl.tier is None and pucl.delta is None
    (_, values), = crossref(entries, specs, store, tier="smoke")
    assert values[0].tier == "smoke" and values[0].ours.n == 1
    text = render_crossref(crossref(entries, specs, store))
    assert "A on x data, n = 1" in text and "0.60 ± 0.10 (3) [paper]" in text and "000's way" in text


def test_cli_crossref(tmp_registry, capsys):
    path = _two_papers(tmp_registry)
    path.write_text(MAPPING)
    assert main(["crossref", "--check"]) == 0
    assert "1 cross-paper entries" in capsys.readouterr().out
    assert main(["crossref", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["cells"][0] | {"setting": None} == {
        "paper": "bcl", "spec": "table1-bcl", "row": "A", "col": "x", "metric": "score", "setting": None,
        "reported": 1.0, "reported_std": 0.1, "ours": None, "ours_std": None, "ours_n": None, "tier": None,
        "delta": None}
    assert main(["crossref", "--method", "nothing-like-this"]) == 2
    capsys.readouterr()
    path.write_text(MAPPING.replace("row: A, col: x, setting: bcl-way", "row: Q, col: x, setting: bcl-way"))
    assert main(["crossref"]) == 2
    err = capsys.readouterr().err
    assert "table1-bcl has no row 'Q'" in err and len(err.strip().splitlines()) == 1


def test_no_mapping_file_means_no_entries(tmp_registry):
    tmp_registry(selftest_spec())
    assert load_crossref(load_all()) == []
