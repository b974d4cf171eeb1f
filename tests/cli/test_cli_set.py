"""``--set key.path=value`` on ``expand`` and ``run``: a variant of the selected cells under the
tier ``custom``, with job ids that differ from every tier's, stored under results/custom/<id>/."""

import json

import pytest

from pubench.cli import main
from tests.conftest import selftest_spec


def _expand(capsys, *extra):
    assert main(["expand", "table1-bcl", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_expand_set_changes_the_config_and_ids_differ_from_every_tier(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    tier_ids = {c["job_id"] for t in ("paper", "reduced", "smoke") for c in _expand(capsys, "--tier", t)["cells"]}
    v = _expand(capsys, "--tier", "smoke", "--set", "value=7.5", "--set", "sleep=~")
    assert v["tier"] == "custom" and v["variant"] == {"base_tier": "smoke", "set": ["value=7.5", "sleep=~"]}
    assert {c["params"]["value"] for c in v["cells"]} == {7.5} and all("sleep" not in c["params"] for c in v["cells"])
    # a no-op override (the value row A already has) keeps the config, yet the id is a custom one
    noop = _expand(capsys, "--tier", "paper", "--cell", "A|*", "--set", "value=1.0")
    paper = _expand(capsys, "--tier", "paper", "--cell", "A|*")
    assert [c["params"] for c in noop["cells"]] == [c["params"] for c in paper["cells"]]
    ids = {c["job_id"] for c in v["cells"] + noop["cells"]}
    assert len(ids) == 6 and not ids & tier_ids


def test_run_set_stores_a_variant_under_custom(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--set", "value=10", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "custom variant: tier 'smoke' with --set value=10" in out and "4 to run" in out
    folder = tmp_registry.root / "results" / "custom" / "table1-bcl"
    recs = [json.loads(p.read_text()) for p in folder.glob("*.json")]
    assert len(recs) == 4 and not (tmp_registry.root / "results" / "smoke").exists()
    for rec in recs:
        assert rec["job"]["tier"] == "custom" and rec["job"]["params"]["value"] == 10
        assert rec["job"]["variant"] == {"base_tier": "smoke", "set": ["value=10"]}
        assert rec["metrics"]["score"] == pytest.approx(10, abs=1)
    # the ids are those `expand --set` shows; a rerun finds them done; the tier's own jobs are not
    shown = {c["job_id"] for c in _expand(capsys, "--tier", "smoke", "--set", "value=10")["cells"]}
    assert shown == {r["job"]["id"] for r in recs}
    assert main(["run", "table1-bcl", "--tier", "smoke", "--set", "value=10", "--no-progress"]) == 0
    assert "4 already done, 0 to run" in capsys.readouterr().out
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    assert "0 already done, 4 to run" in capsys.readouterr().out
    # records of the spec's own tiers carry no variant key
    own = json.loads(next((tmp_registry.root / "results" / "smoke" / "table1-bcl").glob("*.json")).read_text())
    assert "variant" not in own["job"]


def test_set_errors_and_warnings(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    for argv, needle in ((["run", "table1-bcl", "--set", "novalue"], "expected key.path=value"),
                         (["expand", "table1-bcl", "--set", "value.x=1"], "value is float, not a mapping"),
                         (["run", "table1-bcl", "--set", "value=1", "--executor", "slurm", "--dry-run"],
                          "--executor local only")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err, err
    assert main(["run", "table1-bcl", "--tier", "smoke", "--set", "valeu=2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "warning: --set valeu=2: no cell's config at tier 'smoke' has 'valeu'" in out
    assert "warning: --set: the config of A|x is rejected by task selftest: params: unknown key 'valeu'" in out
    # run: the task's own check refuses the variant before any job starts
    assert main(["run", "table1-bcl", "--tier", "smoke", "--set", "valeu=2", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown key 'valeu'" in err and "nothing was run" in err
    assert not list((tmp_registry.root / "results").rglob("*.json"))


def test_preflight_checks_the_variant_run_set_runs(tmp_registry):
    """``preflight --set``: the cells it checks are the jobs `run --set` runs (same ids)."""
    from pubench.jobs import expand
    from pubench.registry.overrides import OverrideError
    from pubench.numerics import resolve
    from pubench.preflight.plan import select
    from pubench.registry import load_all

    tmp_registry(selftest_spec())
    specs = load_all()
    cells, _ = select(specs, "smoke", ["A|*"], resolve(), ["value=4.5"])
    want = expand(specs["table1-bcl"], "smoke", 1, ["A|*"], overrides=["value=4.5"]).jobs
    assert [c.job.id for c in cells] == [j.id for j in want] and len(cells) == 2
    assert all(c.job.params["value"] == 4.5 and c.job.tier == "custom" for c in cells)
    with pytest.raises(OverrideError):
        select(specs, "smoke", None, resolve(), ["value.x=1"])


def test_status_lists_the_variants(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["status"]) == 0
    assert "custom" not in capsys.readouterr().out
    for value in ("10", "20"):
        assert main(["run", "table1-bcl", "--tier", "smoke", "--set", f"value={value}", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["status", "--tier", "custom", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [{"id": "table1-bcl", "tier": "custom (2 variants)", "seeds": "-", "jobs": 8, "done": 8,
                     "failed": 0, "running": 0, "submitted": 0, "corrupt": 0, "pending": 0,
                     "not_implemented_jobs": 0, "unavailable_cells": 0}]


def test_report_writes_one_report_per_variant_marked_custom(tmp_registry, capsys):
    """`report` over a store with variants: reports/custom/<id>--<base>_<overrides>.md per variant,
    each aggregating only its own records, marked custom with its overrides; the index lists them."""
    tmp_registry(selftest_spec())
    assert main(["report", "--tier", "custom"]) == 2
    assert "run a variant first: `pubench run fig5-bcl --set key.path=value`" in capsys.readouterr().err
    for tier, value in (("reduced", "10"), ("reduced", "20"), ("smoke", "30")):
        assert main(["run", "table1-bcl", "--tier", tier, "--set", f"value={value}", "--only", "A|*",
                     "--no-progress"]) == 0
    assert main(["run", "table1-bcl", "--tier", "reduced", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["report"]) == 0
    reports = tmp_registry.root / "reports"
    assert sorted(p.name for p in (reports / "custom").glob("*.md")) == [
        "table1-bcl--reduced_value=10.md", "table1-bcl--reduced_value=20.md", "table1-bcl--smoke_value=30.md"]
    ten = (reports / "custom" / "table1-bcl--reduced_value=10.md").read_text()
    assert ten.splitlines()[0].endswith("tier `custom` (reduced + value=10)")
    assert "- Tier `custom`: a custom variant (`pubench run --set`) of the `reduced` tier (a smaller configuration) " \
           "with `value=10` on top; 3 deviations from the paper, listed below the results." in ten
    assert "`pubench run --tier reduced --set value=10`" in ten  # the deviation that says what changed
    assert "- A: value 1 -> 10." in ten and "- B: value 2 -> 10." in ten  # the config's changes, generated
    (a_row,) = [line for line in ten.splitlines() if line.startswith("| A ")]
    (x, y) = [float(c.split("±")[0]) for c in a_row.split("|")[2:4]]
    assert x == pytest.approx(10, abs=0.5) and y == pytest.approx(10, abs=0.5)  # only this variant's 2 seeds
    assert "(2) / 1.00 ± 0.10 [+" in a_row
    smoke = (reports / "custom" / "table1-bcl--smoke_value=30.md").read_text()
    assert "read its cells as a check that every cell runs" in smoke and "[+" not in smoke  # no delta: pipeline check
    own = (reports / "reduced" / "table1-bcl.md").read_text()
    assert "custom" not in own.splitlines()[0] and "stale" not in own
    index = (reports / "README.md").read_text()
    assert "[table1-bcl--reduced_value=20](custom/table1-bcl--reduced_value=20.md)" in index
    assert "Test (variant: smoke + value=30)" in index


def test_the_site_has_a_page_per_variant_linked_from_the_spec_page(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "reduced", "--set", "value=10", "--only", "A|*", "--no-progress"]) == 0
    assert main(["run", "table1-bcl", "--tier", "reduced", "--no-progress"]) == 0
    assert main(["site"]) == 0
    site = tmp_registry.root / "reports" / "site"
    page = (site / "custom" / "table1-bcl--reduced_value=10.html").read_text()
    assert "<title>table1-bcl (custom: reduced + value=10)" in page and "`value=10`" not in page
    assert "<code>value=10</code> on top" in page and "<code>pubench run --tier reduced --set value=10</code>" in page
    spec_page = (site / "spec" / "table1-bcl.html").read_text()
    assert 'href="../custom/table1-bcl--reduced_value=10.html"' in spec_page and "variant reduced + value=10" in spec_page
    assert 'href="../reduced/table1-bcl.html"' in spec_page


def test_a_base_tier_deviation_about_an_overridden_key_is_marked(tmp_registry, capsys):
    """Issue 54: `run --set data.M=100` printed the base tier's "M = 40 anchors" as if it applied."""
    text = selftest_spec().replace("deviations: [no sleep]", "deviations: [no sleep, \"value = 0.5 here\"]")
    tmp_registry(text)
    assert main(["run", "table1-bcl", "--tier", "smoke", "--set", "value=7", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "  deviation: no sleep\n" in out
    assert "  deviation: (overridden by `--set value=7`) value = 0.5 here" in out
