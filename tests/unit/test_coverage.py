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
