"""Collectors and renderers: aggregation, deltas, claim checks, markdown/LaTeX/PNG."""

import pytest
import yaml

from pubench.jobs import expand
from pubench.registry import parse_spec
from pubench.report import claim_checks, collect, column_checks, render_latex, write_report
from pubench.report.collect import CellStats
from pubench.store import ResultStore
from tests.conftest import selftest_spec

CLAIMS = """claims:
  - {kind: best_row, rows: [B], text: "B is best"}
  - {kind: col_order, rows: [A, B], cols: [x, y], text: "y beats x"}
  - {kind: best_col, rows: [A], cols: [x, y], text: "x is A's best"}
  - {kind: greater, rows: [A, B], cols: [x], text: "A beats B on x"}
  - {kind: order, rows: [B, A], text: "B then A"}
"""


def _filled_store(tmp_path, text=None, values=None):
    spec = parse_spec(yaml.safe_load(text or selftest_spec(extra=CLAIMS, seeds=3)), "<t>")
    store = ResultStore(tmp_path)
    values = values or {("A", "x"): [1.0, 1.2, 1.1], ("A", "y"): [3.0, 3.0, 3.0], ("B", "x"): [2.5, 2.7, 2.6],
                        ("B", "y"): [4.0, 4.2, 4.1]}
    for job in expand(spec, "paper", 3).jobs:
        store.write_ok(job, {"score": values[(job.row, job.col)][job.seed_index]}, {}, {})
    return spec, store


def test_cell_stats():
    s = CellStats({2: 3.0, 0: 1.0, 1: 2.0}, {0: 7, 1: 8, 2: 9})
    assert s.n == 3 and s.mean == 2.0 and s.std == pytest.approx(1.0)  # sample std (ddof=1)
    assert s.values == (1.0, 2.0, 3.0)  # in seed-index order
    assert CellStats({0: 5.0}, {0: 7}).std is None  # one seed: no spread


def test_collect_keeps_values_and_splits_by_seed_index(tmp_path):
    spec, store = _filled_store(tmp_path)
    s = collect(spec, "paper", store).get("A", "x", "score")
    jobs = {j.seed_index: j for j in expand(spec, "paper", 3).jobs if (j.row, j.col) == ("A", "x")}
    assert s.by_seed == {0: 1.0, 1: 1.2, 2: 1.1}
    assert s.splits == {k: j.seeds["data"] for k, j in jobs.items()}


def test_collect_aggregates_and_deltas(tmp_path):
    spec, store = _filled_store(tmp_path)
    res = collect(spec, "paper", store)
    assert res.get("A", "x", "score").mean == pytest.approx(1.1)
    assert res.get("A", "x", "score").std == pytest.approx(0.1)
    assert res.delta("A", "x", "score") == pytest.approx(0.1)  # higher is better, 1.1 vs 1.0
    assert res.delta("B", "y", "score") is None  # reported null
    assert res.cells_done == 4 and res.seeds_done[("A", "x")] == 3


def test_delta_sign_follows_direction(tmp_path):
    text = selftest_spec(extra=CLAIMS, seeds=3).replace("higher_is_better: true", "higher_is_better: false")
    spec, store = _filled_store(tmp_path, text)
    res = collect(spec, "paper", store)
    assert res.delta("A", "x", "score") == pytest.approx(-0.1)  # lower is better: 1.1 > 1.0 is worse


def test_stale_records_are_left_out(tmp_path):
    spec, store = _filled_store(tmp_path)
    edited = parse_spec(yaml.safe_load(selftest_spec(extra=CLAIMS, seeds=3).replace("A: {value: 1.0}",
                                                                                    "A: {value: 7.0}")), "<t>")
    res = collect(edited, "paper", store)
    assert res.get("A", "x", "score") is None and res.stale == 6


def test_claim_and_column_checks(tmp_path):
    spec, store = _filled_store(tmp_path)
    res = collect(spec, "paper", store)
    status = {c.claim.text: (c.status, c.paper_status) for c in claim_checks(res)}
    assert status["B is best"] == ("holds", "holds")
    assert status["A beats B on x"] == ("fails", "fails")
    assert status["B then A"][0] == "holds"
    assert status["y beats x"][0] == "holds" and status["x is A's best"][0] == "fails"
    cols = {c.col: c for c in column_checks(res)}
    assert cols["x"].best_ours == "B" and cols["x"].best_paper == "B" and cols["x"].best_match
    assert cols["y"].best_paper is None  # only one reported number in column y


def test_checks_along_rows_when_methods_are_columns(tmp_path):
    text = selftest_spec(extra="methods_in: cols\n", seeds=3)
    spec, store = _filled_store(tmp_path, text)
    checks = {c.col: c for c in column_checks(collect(spec, "paper", store))}
    assert set(checks) == {"A", "B"}  # one line per row, comparing columns x and y
    assert checks["A"].best_ours == "y" and checks["B"].best_paper is None


def test_kendall_tau(tmp_path):
    rows = ["A", "B", "C"]
    text = selftest_spec(rows=rows, seeds=3).replace(
        "    - {row: B, col: y, mean: null, note: not printed}",
        "    - {row: B, col: y, mean: null, note: not printed}\n    - {row: C, col: x, mean: 3.0}")
    text = text.replace("B: {value: 2.0}", "B: {value: 2.0}\n    C: {value: 3.0}")
    values = {(r, c): [v] * 3 for r, v in zip(rows, (3.0, 2.0, 1.0)) for c in ("x", "y")}
    spec, store = _filled_store(tmp_path, text, values)
    cols = {c.col: c for c in column_checks(collect(spec, "paper", store))}
    assert cols["x"].tau == pytest.approx(-1.0) and cols["x"].n_rows == 3


def test_latex_is_booktabs_and_escaped(tmp_path):
    spec, store = _filled_store(tmp_path)
    res = collect(spec, "paper", store)
    tex = render_latex(res)
    assert "\\toprule" in tex and "\\bottomrule" in tex
    assert "\\pbcell{$1.10 \\pm 0.10$ (3)}{(1.00; $+0.10$)}" in tex  # ours over (paper; delta)
    assert tex.count("\\begin{tabular}{l") == 1  # one table (the other tabulars are the cell macros)
    assert tex.startswith("% table1-bcl") and "\\documentclass" in tex and tex.rstrip().endswith("\\end{document}")
    snippet = render_latex(res, standalone=False)
    assert "\\documentclass" not in snippet and "\\begin{table}" in snippet and "\\pbfit" in snippet


def test_latex_escapes_what_pdflatex_cannot_typeset():
    from pubench.report.latex import escape_tex

    assert escape_tex("a_b & 100% #1 {x} ~ ^ \\ <|>") == \
        "a\\_b \\& 100\\% \\#1 \\{x\\} \\~{} \\^{} \\textbackslash{} \\textless{}\\textbar{}\\textgreater{}"
    assert escape_tex("uPU† ✓ ± ↓") == "uPU\\ensuremath{\\dagger} \\ensuremath{\\surd} \\ensuremath{\\pm} " \
                                      "\\ensuremath{\\downarrow}"
    assert escape_tex("θ_BCL π Δ Α") == "\\ensuremath{\\theta}\\_BCL \\ensuremath{\\pi} \\ensuremath{\\Delta} A"
    assert escape_tex("é") == "é" and escape_tex("中") == "\\texttt{[U+4E2D]}"
    # a markdown code span is typewriter text, not TeX's `quotes'; a lone backtick stays
    assert escape_tex("run `pubench run --set a_b=1` now, odd ` tick") == \
        "run \\texttt{pubench run --set a\\_b=1} now, odd ` tick"


def test_wide_blocks_split_into_column_chunks(tmp_path):
    cols = tuple(f"setting number {i}" for i in range(12))
    spec = parse_spec(yaml.safe_load(selftest_spec(cols=cols, seeds=3)), "<t>")
    store = ResultStore(tmp_path)
    for job in expand(spec, "paper", 3).jobs:
        store.write_ok(job, {"score": 123.456789 + job.seed_index}, {}, {})
    tex = render_latex(collect(spec, "paper", store))
    assert 2 <= tex.count("\\begin{tabular}{l") <= 4  # split, each chunk repeating the row labels
    assert tex.count("\\end{lrbox}\n\\pbfit") == tex.count("\\begin{tabular}{l")  # every chunk shrinks to the page if still wide


def test_write_report_files_and_png_for_figures(tmp_path):
    text = selftest_spec("fig1-bcl", extra=CLAIMS, seeds=3)
    spec, store = _filled_store(tmp_path / "r", text)
    res, paths = write_report(spec, "paper", store, tmp_path / "reports")
    assert [p.name for p in paths] == ["fig1-bcl.md", "fig1-bcl.tex", "fig1-bcl.png"]
    assert paths[2].read_bytes()[:4] == b"\x89PNG"


def test_derived_mean_column_is_not_run_and_is_averaged_per_seed(tmp_path):
    text = selftest_spec(cols=("x", "y", "Mean"), seeds=3).replace(
        "experiment:\n", "derived_cols:\n  Mean: {mean_of: [x, y]}\nexperiment:\n")
    spec = parse_spec(yaml.safe_load(text), "<t>")
    assert ("A", "Mean") not in spec.cells() and len(spec.cells()) == 4
    spec2, store = _filled_store(tmp_path, text)
    res = collect(spec2, "paper", store)
    mean = res.get("A", "Mean", "score")
    assert mean.n == 3 and mean.mean == pytest.approx((1.1 + 3.0) / 2)
    assert mean.values == pytest.approx(((1.0 + 3.0) / 2, (1.2 + 3.0) / 2, (1.1 + 3.0) / 2))


def test_compare_flags_cells_outside_tolerance(tmp_path):
    from pubench.report.compare import compare_stores

    spec, base = _filled_store(tmp_path / "base")
    values = {("A", "x"): [1.1, 1.1, 1.1], ("A", "y"): [3.0, 3.0, 3.0], ("B", "x"): [9.0, 9.0, 9.0],
              ("B", "y"): [4.1, 4.1, 4.1]}
    _, new = _filled_store(tmp_path / "new", values=values)
    diffs = {(d.row, d.col): d for d in compare_stores({spec.id: spec}, "paper", base, new, sigmas=3, abs_tol=0.2)}
    assert not diffs[("A", "x")].flagged and not diffs[("A", "y")].flagged
    assert diffs[("B", "x")].flagged and not diffs[("B", "x")].worse  # higher is better: 9.0 > 2.6


def test_compare_tolerance_follows_each_metrics_scale(tmp_path):
    """fig5-bcl's MSE is about 0.0007 with a seed spread of about 5%: a 10% change is
    flagged, a fresh draw of seeds (noise) is not; an absolute floor of 0.5 (the old
    default) could never fire on such a metric."""
    import numpy as np

    from pubench.report.compare import compare_stores, print_resolution

    text = selftest_spec(seeds=5).replace("score: {label: Score, higher_is_better: true}",
                                   "score: {label: MSE, higher_is_better: false, format: '.3g'}")
    rng = np.random.default_rng(0)
    means = {("A", "x"): 7.3e-4, ("A", "y"): 3.1e-3, ("B", "x"): 1.5e-4, ("B", "y"): 6.0e-3}

    def draw(scale=1.0):
        return {c: list(m * scale * (1 + 0.05 * rng.standard_normal(5))) for c, m in means.items()}

    spec, base = _store5(tmp_path / "base", text, draw())
    _, noise = _store5(tmp_path / "noise", text, draw())
    _, worse = _store5(tmp_path / "worse", text, draw(1.10))
    assert not any(d.flagged for d in compare_stores({spec.id: spec}, "paper", base, noise))
    flagged = compare_stores({spec.id: spec}, "paper", base, worse)
    assert all(d.flagged and d.worse for d in flagged), [(d.row, d.col, d.new / d.base, d.tolerance) for d in flagged]
    assert not any(d.flagged for d in compare_stores({spec.id: spec}, "paper", base, worse, abs_tol=0.5))
    assert print_resolution(".3g", 7.3e-4) == pytest.approx(5e-7) and print_resolution(".2f", 80.0) == 0.005


def _store5(root, text, values):
    spec = parse_spec(yaml.safe_load(text), "<t>")
    store = ResultStore(root)
    for job in expand(spec, "paper", 5).jobs:
        store.write_ok(job, {"score": float(values[(job.row, job.col)][job.seed_index])}, {}, {})
    return spec, store


def test_a_figure_panel_without_results_says_so(tmp_path, monkeypatch):
    import matplotlib.axes

    from pubench.report.plot import render_plot

    spec = parse_spec(yaml.safe_load(selftest_spec("fig1-bcl", extra=CLAIMS, seeds=3)), "<t>")
    said = []
    monkeypatch.setattr(matplotlib.axes.Axes, "text", lambda self, x, y, s, **kw: said.append(s))
    res = collect(spec, "paper", ResultStore(tmp_path / "empty"))
    monkeypatch.setattr(type(res), "reported", lambda self, row, col, metric: None)  # no paper curve either
    render_plot(res, tmp_path / "f.png")
    assert said and set(said) == {"no results at the paper tier"}


CURVES = """curves:
  - {title: "(a) accuracy", y: train.acc, ylabel: "Accuracy (%)"}
  - {title: "(b) density", y: dens.y, x: dens.x, ylabel: Density, cols: [x], format: ".3f"}
claims:
  - {kind: curve_rises, curve: "(a) accuracy", rows: [A], text: "A's accuracy rises over training"}
  - {kind: curve_rises, curve: "(a) accuracy", rows: [B], cols: [x], text: "B's accuracy rises"}
"""


def _curve_store(tmp_path):
    """fig1-bcl with two curves in the records' info: A's accuracy rises by seed-dependent steps,
    B's falls; a density on a fixed grid (column x only)."""
    spec = parse_spec(yaml.safe_load(selftest_spec("fig1-bcl", extra=CURVES, seeds=3)), "<t>")
    store = ResultStore(tmp_path)
    for job in expand(spec, "paper", 3).jobs:
        k = job.seed_index
        acc = [50.0 + (i + 1) * (2.0 + k) for i in range(4)] if job.row == "A" else [60.0 - i - k for i in range(4)]
        acc[1] = None  # a missing epoch is skipped, not drawn as 0
        info = {"train": {"acc": acc}, "dens": {"x": [0.0, 0.5, 1.0], "y": [0.1 * k, 1.0, 0.2]}}
        store.write_ok(job, {"score": 1.0 + k}, info, {})
    return spec, store


def test_curves_are_collected_per_seed_and_averaged_pointwise(tmp_path):
    spec, store = _curve_store(tmp_path)
    res = collect(spec, "paper", store)
    a = res.curve("(a) accuracy", "A", "y")
    assert a.by_seed[0] == ((1.0, 52.0), (3.0, 56.0), (4.0, 58.0))  # x = epoch 1, 2, ...; epoch 2 was null
    x, mean, std, n = a.pointwise()[0]
    assert (x, mean, n) == (1.0, 53.0, 3) and std == pytest.approx(1.0)
    assert a.end(True).by_seed == {0: 58.0, 1: 62.0, 2: 66.0} and a.end(False).splits == a.splits
    assert res.curve("(b) density", "A", "x").pointwise()[1] == (0.5, 1.0, 0.0, 3)
    assert res.curve("(b) density", "A", "y") is None  # the curve's cols: x only


def test_curve_rises_claims_pair_the_two_ends_of_each_run(tmp_path):
    spec, store = _curve_store(tmp_path)
    up, down = claim_checks(collect(spec, "paper", store))
    assert up.status == "holds" and len(up.tests) == 2 and all(t.paired for t in up.tests)
    assert up.weakest_link.diff == pytest.approx(9.0)  # last - first: 3 * (2 + k) on average over k = 0..2
    assert down.status == "fails" and len(down.tests) == 1 and up.paper_status == "n/a"


def test_curves_reach_markdown_html_and_the_plot(tmp_path, monkeypatch):
    import matplotlib.axes

    from pubench.report.html import report_body
    from pubench.report.markdown import render_markdown
    from pubench.report.plot import render_plot

    spec, store = _curve_store(tmp_path / "r")
    res = collect(spec, "paper", store)
    md = render_markdown(res)
    assert "### Curves" in md and "| (a) accuracy | A | x | 1: 53.00 ± 1.00 (3) | 4: 62.00 ± 4.00 (3) | 3 |" in \
        "\n".join(" ".join(line.split()) for line in md.splitlines())
    assert "(a) accuracy: last point > first point of A" in md
    assert "<h3>Curves" in report_body(res, None, [], "spec.html")
    titles = []
    monkeypatch.setattr(matplotlib.axes.Axes, "set_title", lambda self, t, **kw: titles.append(t))
    render_plot(res, tmp_path / "f.png")
    # curve panels first (one per curve and column), then the metric panel of the 2-column axis
    assert titles == ["(a) accuracy — x", "(a) accuracy — y", "(b) density", ""]
