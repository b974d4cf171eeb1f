"""Budget ladders (issue 61; pubench/registry/ladders.py, pubench/report/ladders.py, `pubench
ladder`): on a smoke table of the selftest task with a planted trend, a planted flat line and a
planted fall, the trend verdicts, the report section and its plot, the regime per step, the
verdict page's line, the cost printed before anything runs, the registered running order, job
ids equal to those `pubench run --set` plans, and one-line errors for a bad ladders file."""

from __future__ import annotations

import json
import math
import textwrap

import pytest
import yaml

from pubench.cli import main
from pubench.jobs import expand
from pubench.numerics import resolve
from pubench.registry import get_spec
from pubench.jobs.ladder import step_jobs
from pubench.registry.ladders import load_ladders, step_overrides
from pubench.registry.spec import CUSTOM, SpecError
from pubench.report.ladders import AWAY, CLOSES, FLAT, NOT_TESTABLE, ladder_result, render_markdown, render_plot, \
    trend_test
from pubench.store import ResultStore

SPEC = textwrap.dedent("""\
    id: table1-bcl
    paper: bcl
    kind: table
    title: Test
    caption: A test table.
    version: 1
    source: tests
    metrics:
      score: {label: Score, higher_is_better: true}
    rows: [A, B, C, D]
    cols: [x, y, z]
    reported:
      seeds: 3
      pm: std over 3 runs
      cells:
        - {row: A, col: x, mean: 1.0, std: 0.1}
        - {row: B, col: x, mean: 2.0}
        - {row: A, col: y, mean: 1.0}
        - {row: B, col: y, mean: 1.5}
    experiment:
      task: selftest
      params: {value: 0.0}
      rows:
        A: {value: 1.0}
        B: {value: 2.0}
        D: {value: 3.0}
    tiers:
      paper: {seeds: 2}
      reduced: {seeds: 2}
      smoke:
        seeds: 3  # the base tier registers the seeds its regime rows (C) are read at
        params: {sleep: 0.0}
        deviations: [no sleep]
    claims:
      - {kind: greater, rows: [B, A], cols: [x], text: "B beats A on x"}
      - {kind: greater, rows: [B, A], cols: [y], text: "B beats A on y"}
      - {kind: greater, rows: [B, A], cols: [z], text: "B beats A on z"}
    regime:
      # C has the axis key at 0 (an untrained encoder's epochs): read from the base tier at every step
      - {block: "B trained", rows: [A, B, C], check: trained, reference: B, baseline: C, margin: 0.5, metric: score}
      # D's value scales with the factor and no ladder runs it: not testable at the steps above 1x
      - {block: "D trained", rows: [A, B, C, D], cols: [x], check: trained, reference: D, baseline: C, margin: 0.5,
         metric: score}
    """)


def _ladder(lid: str, col: str, claim: str, factors=(1, 2, 4), seeds: int = 3, axis: str = "value") -> dict:
    return {"id": lid, "registered": "2026-12-07", "spec": "table1-bcl", "tier": "smoke", "claim": claim,
            "pair": {"better": "B", "worse": "A", "col": col, "metric": "score"}, "axis": axis,
            "factors": list(factors), "seeds": seeds, "why": "a test"}


LADDERS = [_ladder("planted-trend", "x", "B beats A on x"), _ladder("planted-flat", "y", "B beats A on y"),
           _ladder("planted-fall", "z", "B beats A on z")]


@pytest.fixture
def registry(tmp_registry):
    tmp_registry(SPEC)
    (tmp_registry.root / "experiments" / "_ladders.yaml").write_text(yaml.safe_dump({"ladders": LADDERS},
                                                                                    allow_unicode=True))
    return tmp_registry


# per (ladder, seed): the planted d at 1x, 2x, 4x (x = log2 factor = 0, 1, 2)
NOISE = [[0.1, -0.2, 0.05], [-0.1, 0.0, 0.2], [0.0, 0.15, -0.1]]
FLAT_NOISE = [[0.3, -0.2, 0.1], [-0.4, 0.2, 0.1], [0.1, 0.3, -0.3]]
PLANTED = {
    "x": lambda s, i: 1.0 + 2.0 * i + NOISE[s][i],       # +2 per doubling, toward the paper
    "y": lambda s, i: 1.0 + FLAT_NOISE[s][i],            # no trend
    "z": lambda s, i: 1.0 - 1.5 * i + NOISE[s][i],       # -1.5 per doubling, away from the paper
}


def _write_planted(registry) -> ResultStore:
    """Records through the store API: A at 50 + a seed offset, B = A + the planted d, at each step; C (the
    untrained baseline) at the base tier only."""
    spec = get_spec("table1-bcl")
    store = ResultStore(registry.root / "results")
    for lad in load_ladders():
        for i, f in enumerate(lad.factors):
            for row in lad.rows:
                for job in step_jobs(spec, lad, row, f, resolve()):
                    a = 50.0 + job.seed_index
                    score = a + PLANTED[lad.col](job.seed_index, i) if row == "B" else a
                    store.write_ok(job, {"score": score}, {}, {"wall_s": 2.0})
    for job in expand(spec, "smoke", 3, ["C|*"], numerics=resolve()).jobs:
        store.write_ok(job, {"score": 0.1 * job.seed_index}, {}, {"wall_s": 2.0})
    return store


def test_planted_trend_closes_flat_line_is_flat_and_fall_moves_away(registry):
    store = _write_planted(registry)
    spec = get_spec("table1-bcl")
    results = {lad.id: ladder_result(spec, lad, store) for lad in load_ladders()}
    trend, flat, fall = results["planted-trend"], results["planted-flat"], results["planted-fall"]
    assert trend.trend.verdict == CLOSES and trend.trend.p < 0.01
    slopes = [(2.0 * 2 + NOISE[s][2] - NOISE[s][0]) / 2 for s in range(3)]  # OLS over x = 0, 1, 2: (y2 - y0) / 2
    assert trend.trend.slope == pytest.approx(sum(slopes) / 3)
    assert flat.trend.verdict == FLAT and 0.05 <= flat.trend.p <= 0.95
    assert fall.trend.verdict == AWAY and fall.trend.p_away < 0.01
    # per step: d, its paired test and interval, the paper's difference (2.0 - 1.0 on x)
    step2 = trend.steps[1]
    assert step2.settings == {"B": "value=4.0", "A": "value=2.0"} and step2.test.paired and step2.test.n == 3
    assert step2.test.diff == pytest.approx(3.0 + sum(NOISE[s][1] for s in range(3)) / 3)
    assert step2.ci[0] < step2.test.diff < step2.ci[1] and step2.p < 0.001
    assert trend.paper_d == pytest.approx(1.0) and flat.paper_d == pytest.approx(0.5)
    # the regime per step: C (value 0: unchanged by the factor) read from the base tier at every step; D scales
    # and no ladder runs it, so its block is not testable above 1x
    for st in trend.steps:
        by_block = {v.block.name: v for v in st.regime}
        assert by_block["B trained"].verdict == "in regime", by_block["B trained"].text
        if st.factor != 1:
            assert by_block["D trained"].verdict == "not testable" and "D not run at this step" in \
                by_block["D trained"].reason
    assert [v.block.name for v in flat.steps[1].regime] == ["B trained"]  # D's block is checked in x only


def test_report_section_and_plot_render(registry, tmp_path):
    store = _write_planted(registry)
    spec = get_spec("table1-bcl")
    lad = next(lad for lad in load_ladders() if lad.id == "planted-trend")
    r = ladder_result(spec, lad, store)
    text = render_markdown(r, plot="planted-trend.png")
    assert text.startswith("# Budget ladder `planted-trend`: B vs A along value")
    assert "**Trend: closes toward the paper: +" in text and "per doubling" in text
    assert "pipeline check" in text  # the smoke tier's numbers say nothing about the paper
    rows = [line for line in text.splitlines() if line.startswith(("| 1x", "| 2x", "| 4x"))]
    assert len(rows) == 3 and all("| done" in row for row in rows) and all("+1.00" in row for row in rows)
    assert "![d per step of planted-trend](planted-trend.png)" in text
    png = render_plot(r, tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    # through the command: <reports>/ladders/<id>.md and .png
    assert main(["ladder", "report", "planted-trend"]) == 0
    folder = registry.root / "reports" / "ladders"
    assert (folder / "planted-trend.md").read_text() == text and (folder / "planted-trend.png").is_file()


def test_a_step_not_run_reads_not_run_and_the_trend_waits_for_two_steps(registry):
    spec = get_spec("table1-bcl")
    store = ResultStore(registry.root / "results")
    lad = load_ladders()[0]
    for row in lad.rows:  # the base tier's records only
        for job in step_jobs(spec, lad, row, 1, resolve()):
            store.write_ok(job, {"score": 50.0 + (row == "B") + 0.1 * job.seed_index ** 2}, {}, {"wall_s": 2.0})
    r = ladder_result(spec, lad, store)
    assert [st.status(3) for st in r.steps] == ["done", "not run", "not run"]
    assert r.trend.verdict == NOT_TESTABLE
    text = render_markdown(r)
    assert text.count("not run") >= 4 and "**Trend: not testable (0 seed(s)" in text


def test_trend_test_edge_cases():
    from pubench.report.ladders import Step

    def step(f, ds):
        return Step(f, {}, {}, None, dict(enumerate(ds)), None, None)

    same = [step(1, [0.0, 1.0]), step(2, [1.0, 2.0])]  # every seed +1 per doubling: no spread, p = 0
    assert trend_test(same, 2).verdict == CLOSES and trend_test(same, 2).p == 0.0
    still = [step(1, [1.0, 1.0]), step(4, [1.0, 1.0])]
    assert trend_test(still, 2).verdict == FLAT
    one_seed = [step(1, [1.0]), step(2, [3.0])]
    assert trend_test(one_seed, 1).verdict == NOT_TESTABLE
    # slope over log2(factor): 1x -> 4x is two doublings
    t = trend_test([step(1, [0.0, 0.0, 0.0]), step(4, [2.0, 2.2, 1.8])], 3)
    assert t.slope == pytest.approx(1.0) and math.isclose(t.slopes[1], 1.1)


def test_verdict_page_shows_each_ladders_trend_beside_its_claim(registry):
    from pubench.report.verdicts import render_pages

    store = _write_planted(registry)
    (registry.root / "experiments" / "_verdicts.yaml").write_text(
        "papers:\n  bcl: {title: Test, main: [table1-bcl]}\n")
    from pubench.registry import load_all

    pages, status = render_pages(load_all(), store, {"bcl": ["table1-bcl"]}, ["bcl"])
    page = pages["bcl"]
    assert "## Budget ladders" in page and "budget ladder" not in status
    line = next(x for x in page.splitlines() if "[planted-trend]" in x)
    assert line.startswith("- `table1-bcl`: B beats A on x: budget ladder [planted-trend](../ladders/planted-trend.md)")
    assert ": closes toward the paper: +" in line and "per doubling, p " in line
    assert ": flat: " in next(x for x in page.splitlines() if "[planted-flat]" in x)
    assert ": moves away from the paper: -" in next(x for x in page.splitlines() if "[planted-fall]" in x)


def test_ladder_run_prints_the_cost_first_runs_the_missing_steps_with_run_sets_job_ids(registry, capsys,
                                                                                        monkeypatch):
    monkeypatch.setenv("PUBENCH_NO_REEXEC", "1")
    assert main(["run", "table1-bcl", "--tier", "smoke", "--seeds", "3", "--only", "A|x", "--only", "B|x",
                 "--no-progress"]) == 0  # the base tier's records: step 1x is done, and times the others
    capsys.readouterr()
    assert main(["ladder", "run", "planted-trend", "--no-progress"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    first_run = next(i for i, line in enumerate(lines) if line.startswith("== ladder"))
    total = next(i for i, line in enumerate(lines) if line.startswith("total: "))
    assert total < first_run and "18 jobs, 6 done, 12 to run, about" in lines[total] and "core-hours" in lines[total]
    assert "  step 1x: 6 jobs, 6 done, 0 to run" in out
    assert "  step 2x: 6 jobs, 0 done, 6 to run, about" in out
    # the jobs and records are those `pubench run --set` makes: the same ids, job.variant = {base_tier, set}
    store = ResultStore(registry.root / "results")
    spec = get_spec("table1-bcl")
    ran = {r["job"]["id"]: r["job"] for r in store.scan(CUSTOM, "table1-bcl").records}
    for row, value in (("B", 4.0), ("A", 2.0), ("B", 8.0), ("A", 4.0)):
        planned = expand(spec, "smoke", 3, [f"{row}|x"], numerics=resolve(), overrides=[f"value={value}"]).jobs
        assert {j.id for j in planned} <= set(ran)
        assert all(ran[j.id]["variant"] == {"base_tier": "smoke", "set": [f"value={value}"]} for j in planned)
    assert len(ran) == 12
    # the selftest's noise depends on the seed, not the value: d = factor x (2 - 1) + a per-seed constant,
    # the same +1.5 per doubling on every seed (OLS of 1, 2, 4 over 0, 1, 2)
    assert main(["ladder", "report", "planted-trend", "--print"]) == 0
    page = capsys.readouterr().out
    assert "**Trend: closes toward the paper: +1.50 per doubling, p < 0.001 (3 seeds).**" in page
    from pubench.numerics import cpu_model

    assert f"Made on (the records each step reads): 1x, 2x, 4x: cpu ({cpu_model()})." in page
    assert "Bit for bit is promised" not in page
    # a step read from records of another CPU model says so: its numbers compare like seeds, not to the bit
    for path in store.folder(CUSTOM, "table1-bcl").glob("B_*.json"):
        rec = json.loads(path.read_text())
        if rec["job"]["variant"]["set"] == ["value=4.0"]:
            rec["machine"]["cpu_model"] = "Other CPU"
            path.write_text(json.dumps(rec))
    assert main(["ladder", "report", "planted-trend", "--print"]) == 0
    page = capsys.readouterr().out
    two = ", ".join(sorted([f"cpu ({cpu_model()})", "cpu (Other CPU)"]))
    assert f"1x, 4x: cpu ({cpu_model()}); 2x: {two}. Bit for bit is promised" in page, page[-2500:]
    # a block's reference the ladder does not run is read where it ran at a step's setting anyway (another
    # ladder's pair, a --set run): D at 2x only, so the 2x regime reads it and the 4x one still lacks it
    lad = next(x for x in load_ladders() if x.id == "planted-trend")
    sets = step_overrides(spec, lad, "D", 2)
    assert main(["run", "table1-bcl", "--tier", "smoke", "--seeds", "3", "--only", "D|x", "--no-progress",
                 *[a for x in sets for a in ("--set", x)]]) == 0
    capsys.readouterr()
    assert main(["ladder", "report", "planted-trend", "--print"]) == 0
    rows = {line.split("|")[1].strip(): line for line in capsys.readouterr().out.splitlines()
            if line.startswith(("| 2x", "| 4x"))}
    assert "D not run at this step" not in rows["2x"] and "D not run at this step" in rows["4x"]
    assert "D read from records run at this step's setting: rule revised 2026-12-07, after results" in rows["2x"]
    # a second run has nothing left
    assert main(["ladder", "run", "planted-trend"]) == 0
    assert "every step of planted-trend is done" in capsys.readouterr().out


def test_run_set_plans_the_same_job_ids_as_the_ladder(registry, capsys):
    """`pubench run --set` (the command the ladders were run with by hand) plans the ladder's jobs."""
    spec = get_spec("table1-bcl")
    lad = load_ladders()[0]
    for f in lad.factors:
        for row in lad.rows:
            sets = step_overrides(spec, lad, row, f)
            argv = ["run", "table1-bcl", "--tier", "smoke", "--only", f"{row}|x", "--seeds", "3", "--dry-run",
                    "--jobs-list"] + [a for s in sets for a in ("--set", s)]
            assert main(argv) == 0
            out = capsys.readouterr().out
            ids = {j.id for j in step_jobs(spec, lad, row, f, resolve())}
            assert len(ids) == 3 and all(i in out for i in ids), (f, row, out[-1500:])


def test_dry_run_keeps_the_registered_order_every_2x_before_any_4x(registry, capsys):
    assert main(["ladder", "run", "planted-flat", "planted-trend", "--dry-run"]) == 0
    out = capsys.readouterr().out
    runs = [line for line in out.splitlines() if line.startswith("  pubench run ")]
    assert len(runs) == 12  # 2 ladders x 3 steps x 2 rows, nothing done
    steps = [line.rsplit("# ", 1)[1].split(":")[0] for line in runs]
    assert steps == ["planted-trend 1x"] * 2 + ["planted-flat 1x"] * 2 + ["planted-trend 2x"] * 2 + \
        ["planted-flat 2x"] * 2 + ["planted-trend 4x"] * 2 + ["planted-flat 4x"] * 2  # the file's order within a step
    assert "cost unknown (no record of the base cell to time it by)" in out
    assert not ResultStore(registry.root / "results").scan(CUSTOM, "table1-bcl").records  # nothing ran


@pytest.mark.parametrize("change,problem", [
    ({"spec": "table9-bcl"}, "ladders[0].spec: unknown spec: no table or figure 'table9-bcl'"),
    ({"pair": {"better": "E", "worse": "A", "col": "x", "metric": "score"}},
     "ladders[0].pair.better: unknown row 'E' of table1-bcl"),
    ({"pair": {"better": "B", "worse": "A", "col": "w", "metric": "score"}},
     "ladders[0].pair.col: unknown col 'w' of table1-bcl"),
    ({"pair": {"better": "B", "worse": "A", "col": "x", "metric": "acc"}},
     "ladders[0].pair.metric: unknown metric 'acc' of table1-bcl"),
    ({"axis": "train.epochs"}, "ladders[0].axis: unknown axis key 'train.epochs'"),
    ({"axis": {"B": "value", "E": "value"}}, "ladders[0].axis.E: unknown row 'E'"),
    ({"claim": "B beats A everywhere"}, "ladders[0].claim: no claim of table1-bcl reads"),
    ({"factors": [2, 4]}, "ladders[0].factors: expected ascending positive factors, 1 among them"),
    ({"tier": "custom"}, "ladders[0].tier: unknown tier 'custom'"),
    ({"seeds": 0}, "ladders[0].seeds: expected an integer"),
    ({"colour": "red"}, "ladders[0].colour: unknown key"),
])
def test_a_bad_ladder_is_one_line_naming_it(tmp_registry, capsys, change, problem):
    tmp_registry(SPEC)
    path = tmp_registry.root / "experiments" / "_ladders.yaml"
    path.write_text(yaml.safe_dump({"ladders": [_ladder("bad", "x", "B beats A on x") | change]}))
    with pytest.raises(SpecError, match=None) as e:
        load_ladders(path)
    assert problem in str(e.value)
    assert main(["validate", str(path)]) == 2
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1 and problem in out and out.startswith(f"{path}:")
    assert main(["ladder", "list"]) == 2  # every command reading the file refuses it, in one line
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and problem in err


def test_an_int_axis_stays_an_int_and_must_stay_whole(tmp_registry):
    """Epochs are ints: 8 x 2 is `train.epochs=16`, as typed by hand; 5 x 1.5 is refused; floats stay floats."""
    from pubench.registry.ladders import scaled

    assert scaled(8, 2) == 16 and isinstance(scaled(8, 2), int) and repr(scaled(2.0, 2)) == "4.0"
    with pytest.raises(ValueError, match="not a whole number"):
        scaled(5, 1.5)
    tmp_registry(SPEC.replace("B: {value: 2.0}", "B: {value: 3}").replace("A: {value: 1.0}", "A: {value: 1}"))
    path = tmp_registry.root / "experiments" / "_ladders.yaml"
    path.write_text(yaml.safe_dump({"ladders": [_ladder("odd", "x", "B beats A on x", factors=[1, 1.5])]}))
    with pytest.raises(SpecError, match=r"factors: value of B: 3 x 1.5 = 4.5 is not a whole number"):
        load_ladders(path)


def test_bad_command_lines_are_one_line(registry, capsys):
    for argv, message in ((["ladder", "run"], "name the ladder(s) to run"),
                          (["ladder", "run", "nosuch"], "unknown ladder 'nosuch' (one of planted-trend, planted-flat"),
                          (["ladder", "list", "--jobs", "2"], "--jobs goes with `pubench ladder run`"),
                          (["ladder", "run", "planted-flat", "--print"], "--print goes with `pubench ladder report`")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, err


# ---- the committed ladders ------------------------------------------------------------------
def test_the_committed_ladders_file_is_valid_and_reuses_the_committed_4x_records():
    """experiments/_ladders.yaml loads against the registry; wconpu-vs-pico-epochs's WConPU 4x step is the
    2026-11-29 decision's `--set train.epochs=32` variant, whose committed records it reuses (the same ids)."""
    from pubench import paths
    from pubench.registry.ladders import ladders_path

    ladders = {lad.id: lad for lad in load_ladders(ladders_path(paths.project_root() / "experiments"))}
    assert list(ladders) == ["wconpu-vs-pico-epochs", "pucl-simclr-epochs", "pupl-punce-vs-nnpu-epochs",
                            "punce-allconv-vs-nnpu-epochs", "wconpu-vs-nnpu-epochs",
                            "wconpu-vs-nnpu-epochs-10-seeds"]
    lad = ladders["wconpu-vs-pico-epochs"]
    spec = get_spec("table2-wconpu")
    jobs = step_jobs(spec, lad, "WConPU", 4, resolve())
    assert step_overrides(spec, lad, "WConPU", 4) == ["train.epochs=32"]
    store = ResultStore(paths.project_root() / "results")
    committed = {r["job"]["id"]: r["job"] for r in store.scan(CUSTOM, "table2-wconpu", fields=("job",)).records}
    assert {j.id for j in jobs} <= set(committed)
    assert all(committed[j.id]["variant"] == {"base_tier": "reduced", "set": ["train.epochs=32"]} for j in jobs)
    pupl = ladders["pupl-punce-vs-nnpu-epochs"]
    assert [step_overrides(get_spec("table3-pupl"), pupl, r, 2) for r in pupl.rows] == \
        [["pretrain.epochs=12"], ["train.epochs=16"]]


def test_a_ladder_registers_its_seeds_for_its_pair_at_every_step(registry):
    """A ladder is a pre-registration: its seeds of the pair's cells are read at the base tier and in
    its variants even where the tier registers fewer (records of other cells' extra seeds are not)."""
    from pubench.report.collect import registered_seeds
    from pubench.report.ladders import with_ladder_seeds

    spec = get_spec("table1-bcl")
    (lad,) = [x for x in load_ladders(registry.root / "experiments" / "_ladders.yaml", {spec.id: spec})
              if x.id == "planted-trend"]
    lad = type(lad)(**{**lad.__dict__, "seeds": 5})
    seen = with_ladder_seeds(spec, lad)
    assert registered_seeds(spec, "smoke", "B", "x") == 3 and registered_seeds(seen, "smoke", "B", "x") == 5
    assert registered_seeds(seen, "smoke", "A", "x") == 5 and registered_seeds(seen, "smoke", "C", "x") == 3
    variant = seen.with_variant("smoke", ["value=4.0"])
    assert registered_seeds(variant, CUSTOM, "B", "x") == 5


def test_a_ladder_whose_data_are_missing_stops_before_any_step(tmp_path, monkeypatch, capsys):
    """The committed wconpu ladder with an empty data root and store: one line naming the files, exit 2,
    nothing run (it once printed the cost and ran step 1 of nothing, then stopped at step 2's data);
    the dry run says the same line under its plan."""
    monkeypatch.setenv("PUBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("PUBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("PUBENCH_NO_REEXEC", "1")
    assert main(["ladder", "run", "wconpu-vs-nnpu-epochs", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "data missing for 30 job(s) of table2-wconpu (nothing was run): cifar10_jpeg: place" in out
    assert main(["ladder", "run", "wconpu-vs-nnpu-epochs", "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert "data missing for 30 job(s) of table2-wconpu" in captured.err and "== ladder" not in captured.out
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").rglob("*.json"))


def test_the_committed_ladders_pages_do_not_depend_on_which_render_together():
    """`pubench ladder report` renders every ladder with one memoized store: each page is the one its ladder
    gives alone (the table memo once ignored the seeds a ladder registers, so wconpu-vs-nnpu-epochs-10-seeds,
    rendered after the 5-seed wconpu ladders, read nnPU's 7 registered seeds instead of its 10)."""
    from pubench import paths
    from pubench.registry.ladders import ladders_path

    ladders = load_ladders(ladders_path(paths.project_root() / "experiments"))
    shared = ResultStore(paths.project_root() / "results", memo=True)
    together = {lad.id: render_markdown(ladder_result(get_spec(lad.spec), lad, shared)) for lad in ladders}
    for lad in ladders:
        alone = render_markdown(ladder_result(get_spec(lad.spec), lad, ResultStore(paths.project_root() / "results")))
        assert together[lad.id] == alone, lad.id
