"""`pubench coverage`: unit discovery in params and honest counts."""

import json

from pubench.cli import main
from pubench.coverage import units
from tests.conftest import selftest_spec


def test_units_found_in_nested_params():
    params = {
        "data": {"dataset": "cifar10"},
        "model": {"backbone": {"name": "resnet18_cifar", "width": 1}},
        "pretrain": {"framework": {"name": "simclr"}, "loss": {"name": "punce", "temperature": 0.5}},
        "downstream": {"name": "linear_probe", "risk": "nnpu"},
        "pu_method": {"name": "nnpu", "loss": "sigmoid"},  # a hyperparameter named loss, not a unit
    }
    assert set(units("contrastive_probe", params)) == {
        ("task", "contrastive_probe"), ("dataset", "cifar10"), ("backbone", "resnet18_cifar"),
        ("framework", "simclr"), ("loss", "punce"), ("downstream", "linear_probe"), ("pu_method", "nnpu")}


def test_coverage_counts_missing_units_and_unavailable(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    tmp_registry.plan("task", "not_a_task")
    text = selftest_spec("table2-bcl").replace("task: selftest", "task: not_a_task")
    text = text.replace("reduced: {seeds: 2}", "reduced: {seeds: 2, unavailable: {'A|*': no data}}")
    tmp_registry(text)
    assert main(["coverage", "--json"]) == 0
    cov = json.loads(capsys.readouterr().out)
    by = {t["id"]: t for t in cov["tables"]}
    assert by["table1-bcl"]["runnable"] == {"paper": 4, "reduced": 4, "smoke": 4}
    assert by["table1-bcl"]["reported"] == 2 and by["table1-bcl"]["cells"] == 4
    assert by["table2-bcl"]["runnable"] == {"paper": 0, "reduced": 0, "smoke": 0}
    assert cov["missing_units"] == [{"kind": "task", "name": "not_a_task", "cells": 4, "tables": ["table2-bcl"],
                                     "why": "planned for a test"}]
    assert cov["total"]["runnable"]["paper"] == 4
    assert main(["coverage"]) == 0
    assert "not_a_task" in capsys.readouterr().out


AUDIT = """\
bcl:
  "Fig. 1": {spec: fig1-bcl}
  "Fig. 2": {why: "an illustration <of nothing>"}
pucl:
  "Fig. 1": {why: "a diagram"}
"""


def test_figure_audit_in_coverage_and_site(tmp_registry, capsys):
    """experiments/_figures.yaml: coverage and the site index list the figures without a spec
    with their reason; a figure spec missing from the audit, or an audited spec that does not
    exist, is an error of one line."""
    tmp_registry(selftest_spec("fig1-bcl"))
    (tmp_registry.root / "experiments" / "_figures.yaml").write_text(AUDIT)
    assert main(["coverage", "--json"]) == 0
    figs = json.loads(capsys.readouterr().out)["figures"]
    assert figs == {"audited": 3, "registered": 1, "left_out": [
        {"paper": "pucl", "figure": "Fig. 1", "why": "a diagram"},
        {"paper": "bcl", "figure": "Fig. 2", "why": "an illustration <of nothing>"}]}
    assert main(["coverage"]) == 0
    out = capsys.readouterr().out
    assert "Figures of the five papers: 3" in out and "002 bcl" in out and "an illustration <of nothing>" in out
    assert main(["coverage", "fig1-bcl", "--json"]) == 0  # one spec: no audit
    assert json.loads(capsys.readouterr().out)["figures"] is None
    assert main(["site"]) == 0
    index = (tmp_registry.root / "reports" / "site" / "index.html").read_text()
    assert "<b>Fig. 2</b>: an illustration &lt;of nothing&gt;" in index and "3 figures, 1 registered" in index
    tmp_registry(selftest_spec("fig3-bcl"))
    assert main(["coverage"]) == 2
    assert "figure specs not in the audit: fig3-bcl" in capsys.readouterr().err
    (tmp_registry.root / "experiments" / "_figures.yaml").write_text(AUDIT + '  "Fig. 2": {spec: fig2-pucl}\n')
    assert main(["coverage"]) == 2
    assert "no spec 'fig2-pucl'" in capsys.readouterr().err


def test_the_real_audit_lists_every_figure_of_the_five_papers():
    """Every figure spec is in the audit under its paper; each figure without a spec says why
    (issue 38: 002 Fig. 4 / 8 and 004 Fig. 3 / 5 / 6 registered, 003 Fig. 9 explained)."""
    from pubench.registry import load_all
    from pubench.registry.figures import check_figures, load_figures

    entries = load_figures()
    check_figures(entries, load_all())
    by = {(f.paper, f.figure): f for f in entries}
    assert len(entries) == 35 and sum(f.spec is not None for f in entries) == 17
    for paper, n in (("pucl", 3), ("punce", 4), ("bcl", 8), ("pupl", 14), ("wconpu", 6)):
        assert [f.number for f in entries if f.paper == paper] == list(range(1, n + 1))
    for key, sid in ((("bcl", "Fig. 4"), "fig4-bcl"), (("bcl", "Fig. 8"), "fig8-bcl"),
                     (("wconpu", "Fig. 3"), "fig3-wconpu"), (("wconpu", "Fig. 5"), "fig5-wconpu"),
                     (("wconpu", "Fig. 6"), "fig6-wconpu")):
        assert by[key].spec == sid
    assert by[("pupl", "Fig. 9")].spec is None and "Gaussian mixture" in by[("pupl", "Fig. 9")].why
