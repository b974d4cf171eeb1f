"""Job expansion, identity hashes and seed derivation."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pubench.jobs import Job, expand
from pubench.registry import parse_spec
from pubench.registry.spec import SpecError
from pubench.utils.hashing import canonical_json, config_hash, derive_seed
from tests.conftest import selftest_spec

ROOT = Path(__file__).resolve().parents[2]


def _spec(text=None):
    return parse_spec(yaml.safe_load(text or selftest_spec()), "<test>")


def test_hash_ignores_key_order():
    a = {"x": 1, "y": {"b": 2.0, "a": [1, 2]}}
    b = {"y": {"a": [1, 2], "b": 2.0}, "x": 1}
    assert canonical_json(a) == canonical_json(b)
    assert config_hash(a) == config_hash(b)
    assert config_hash(a) != config_hash({**a, "x": 2})
    assert config_hash({"lr": 1.0}) != config_hash({"lr": 1})  # YAML's 1 and 1.0 are different configs


def test_seed_derivation_is_stable_across_processes():
    """Golden values: a change here silently changes every split. Another process, with
    another string hash seed, derives the same seed (``derive_seed`` never uses ``hash()``)."""
    code = ("from pubench.utils.hashing import derive_seed\n"
            "print(derive_seed('data', 'table1-punce', {'dataset': 'mnist'}, 0))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                           env={**os.environ, "PYTHONHASHSEED": "123"}).stdout
    assert derive_seed("data", "table1-punce", {"dataset": "mnist"}, 0) == int(other) == 466628363
    assert derive_seed("a", 1) == 324999076  # sha256(b'["a",1]')[:4] & 0x7FFFFFFF
    assert derive_seed("a", 1) != derive_seed("a", 2)


def test_expand_counts_and_names():
    plan = expand(_spec(), "paper", seeds=3)
    assert len(plan.jobs) == 4 * 3
    assert len({j.id for j in plan.jobs}) == 12
    assert plan.jobs[0].name == "table1-bcl/A|x/seed=0"
    assert expand(_spec(), "paper").seeds == 2  # the tier's default
    with pytest.raises(ValueError):
        expand(_spec(), "paper", seeds=0)


def test_more_seeds_runs_the_named_cells_longer_and_changes_no_job_id():
    """A pre-registered ``more_seeds`` entry: ``run`` without --seeds gives its cells more seed
    indices, the other cells the tier's; every job id is the one the plain tier gives."""
    d = yaml.safe_load(selftest_spec())
    plain = {j.id for j in expand(parse_spec(d, "<a>"), "paper").jobs}
    d["tiers"]["paper"]["more_seeds"] = [{"cells": "A|x", "seeds": 4, "date": "2026-11-29", "why": "a close claim"}]
    plan = expand(parse_spec(d, "<b>"), "paper")
    per_cell = {}
    for j in plan.jobs:
        per_cell.setdefault((j.row, j.col), []).append(j.seed_index)
    assert per_cell.pop(("A", "x")) == [0, 1, 2, 3]
    assert all(v == [0, 1] for v in per_cell.values())
    assert plain < {j.id for j in plan.jobs}
    assert len(expand(parse_spec(d, "<b>"), "paper", seeds=1).jobs) == 4  # --seeds wins everywhere
    d["tiers"]["paper"]["more_seeds"][0]["cells"] = "Z|*"
    with pytest.raises(SpecError, match="more_seeds.0.cells.*matches no cell"):
        parse_spec(d, "<c>")


def test_job_id_stable_under_yaml_key_order():
    d = yaml.safe_load(selftest_spec())
    d2 = dict(reversed(list(d.items())))
    d2["experiment"] = dict(reversed(list(d["experiment"].items())))
    ids1 = [j.id for j in expand(parse_spec(d, "<a>"), "paper", 2).jobs]
    ids2 = [j.id for j in expand(parse_spec(d2, "<b>"), "paper", 2).jobs]
    assert ids1 == ids2


def test_data_seed_shared_across_rows_init_seed_not():
    text = selftest_spec().replace("params: {value: 0.0}", "params: {value: 0.0, data: {dataset: d1}}")
    jobs = expand(_spec(text), "paper", 2).jobs
    by = {(j.row, j.col, j.seed_index): j.seeds for j in jobs}
    assert by[("A", "x", 0)]["data"] == by[("B", "x", 0)]["data"]  # same split for every method
    assert by[("A", "x", 0)]["data"] != by[("A", "x", 1)]["data"]  # new split per repetition
    assert by[("A", "x", 0)]["init"] != by[("B", "x", 0)]["init"]


def test_init_seed_shared_along_a_row_when_asked():
    text = selftest_spec().replace("  task: selftest", "  task: selftest\n  init_seed_from: [row]")
    jobs = expand(_spec(text), "paper", 1).jobs
    by = {(j.row, j.col): j.seeds["init"] for j in jobs}
    assert by[("A", "x")] == by[("A", "y")] != by[("B", "x")]


def test_init_seed_shared_within_a_row_group_when_asked():
    text = selftest_spec(rows=("A", "B", "C")).replace(
        "  task: selftest", "  task: selftest\n  init_seed_from: [row_group, col]").replace(
        "reported:", "row_groups: {panel: [A, B]}\nreported:")
    jobs = expand(_spec(text), "paper", 2).jobs
    by = {(j.row, j.col, j.seed_index): j.seeds["init"] for j in jobs}
    assert by[("A", "x", 0)] == by[("B", "x", 0)]   # one group: one init per column and seed
    assert by[("A", "x", 0)] != by[("A", "y", 0)] and by[("A", "x", 0)] != by[("A", "x", 1)]
    assert by[("C", "x", 0)] != by[("A", "x", 0)]   # a row in no group is its own group
    assert len({j.id for j in jobs}) == len(jobs)   # the rows' params still tell their jobs apart


def test_init_seed_from_row_and_row_group_is_rejected():
    text = selftest_spec().replace("  task: selftest", "  task: selftest\n  init_seed_from: [row, row_group]")
    with pytest.raises(Exception, match="row or row_group"):
        _spec(text)


def test_unavailable_cells_are_listed_not_run():
    text = selftest_spec().replace("reduced: {seeds: 2}", "reduced: {seeds: 2, unavailable: {'*|y': no data here}}")
    plan = expand(_spec(text), "reduced")
    assert {(j.row, j.col) for j in plan.jobs} == {("A", "x"), ("B", "x")}
    assert plan.unavailable == [("A", "y", "no data here"), ("B", "y", "no data here")]


def test_only_filter():
    plan = expand(_spec(), "paper", 1, only=["B|*"])
    assert {j.row for j in plan.jobs} == {"B"}


def test_job_roundtrip():
    job = expand(_spec(), "paper", 1).jobs[0]
    assert Job.from_dict(job.to_dict()) == job and Job.from_dict(job.to_dict()).id == job.id


def test_expand_ids_are_the_hash_of_each_jobs_identity():
    """expand encodes a cell's params once for its seeds: the id is still ``config_hash(identity)``,
    for the spec's tiers and for a variant (``--set``), whose identity carries ``custom``."""
    spec = _spec()
    for plan in (expand(spec, "paper", 2), expand(spec, "paper", 2, overrides=["train.epochs=3"])):
        for job in plan.jobs:
            assert job.id == config_hash(job.identity) == Job.from_dict(job.to_dict()).id


def test_every_committed_record_has_the_id_of_its_jobs_identity():
    """Every record under results/ carries the id its job's identity hashes to, recomputed from
    the record alone (``job.id`` against ``Job.from_dict(job)``)."""
    paths = sorted((ROOT / "results").rglob("*.json"))
    assert len(paths) > 1000  # the committed store, not an empty folder
    wrong = []
    for path in paths:
        job = json.loads(path.read_text())["job"]
        if Job.from_dict(job).id != job["id"] or not path.name.endswith(f"--{job['id']}.json"):
            wrong.append(str(path.relative_to(ROOT)))
    assert not wrong, f"{len(wrong)} records: {wrong[:5]}"
