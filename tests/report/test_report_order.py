"""Reports lead with the result (issue 39): the table (and a figure's plot, embedded in the
markdown, the LaTeX and the site) before the claims, regime and power, and those before the
tier's deviations and the spec's decisions; a figure's panels hold their own rows; lines that
coincide are named; smoke results are pipeline checks, never coloured against the paper; the
cross-paper page ranks where tiers differ in scale."""

import re
import textwrap

import pytest

from pubench.jobs import expand
from pubench.registry import load_all
from pubench.report import collect, render_latex, render_markdown, write_report
from pubench.report.html import report_body
from pubench.report.layout import blocks, coinciding
from pubench.store import ResultStore
from tests.conftest import selftest_spec

FIGURE = textwrap.dedent("""\
    id: fig1-bcl
    paper: bcl
    kind: figure
    title: Figure 1
    caption: Two panels.
    version: 1
    source: tests
    metrics:
      score: {label: Score, higher_is_better: true}
    rows: [A, B, C, D]
    cols: ["(a) n=1", "(a) n=2", "(b) n=1", "(b) n=2"]
    row_groups: {"(a) rows": [A, B], "(b) rows": [C, D]}
    col_groups: {"(a) panel": ["(a) n=1", "(a) n=2"], "(b) panel": ["(b) n=1", "(b) n=2"]}
    reported: {seeds: 2, pm: null, cells: []}
    decisions: ["A decision, long prose about choices."]
    experiment:
      task: selftest
      exclude: ["A|(b)*", "B|(b)*", "C|(a)*", "D|(a)*"]
      params: {value: 0.0}
      rows:
        A: {value: 1.0}
        B: {value: 2.0}
        C: {value: 3.0}
        D: {value: 3.0}
    tiers:
      paper: {seeds: 2}
      reduced: {seeds: 2, deviations: [a reduced deviation]}
      smoke: {seeds: 1, params: {sleep: 0.0}, deviations: [no sleep]}
    """)


@pytest.fixture
def figure(tmp_registry):
    tmp_registry(FIGURE)
    spec = load_all()["fig1-bcl"]
    store = ResultStore(tmp_registry.root / "results")
    for job in expand(spec, "reduced", 2).jobs:  # C and D: the same value for every seed (lines that coincide)
        value = {"A": 1.0, "B": 2.0, "C": 3.0, "D": 3.0}[job.row] + 0.1 * job.seed_index
        store.write_ok(job, {"score": value}, {}, {"wall_s": 1.0})
    return spec, store, tmp_registry.root


def test_panels_hold_only_their_rows(figure):
    spec, _, _ = figure
    (a, b) = blocks(spec)
    assert a.lines == [("group", "(a) rows"), ("row", "A"), ("row", "B")]
    assert b.lines == [("group", "(b) rows"), ("row", "C"), ("row", "D")]


def test_markdown_leads_with_the_plot_and_the_table(figure):
    spec, store, _ = figure
    md = render_markdown(collect(spec, "reduced", store))
    order = [md.index(x) for x in ("## Plot", "![fig1-bcl at the reduced tier", "](fig1-bcl.png)",
                                   "## Reported and reproduced", "## Claim checks", "## Coverage",
                                   "## Deviations of tier `reduced` from the paper", "a reduced deviation",
                                   "## Choices the paper leaves open", "A decision")]
    assert order == sorted(order)
    assert "1 deviation from the paper, listed below the results" in md
    assert "in (b) panel: C and D have identical values for every seed" in md


def test_coinciding_rows_are_found_from_the_seeds(figure):
    spec, store, _ = figure
    assert coinciding(collect(spec, "reduced", store)) == [("(b) panel", [["C", "D"]])]


def test_written_reports_embed_the_plot_above_the_decisions(figure):
    spec, store, root = figure
    _, paths = write_report(spec, "reduced", store, root / "reports")
    folder = root / "reports" / "reduced"
    assert (folder / "fig1-bcl.png").read_bytes()[:4] == b"\x89PNG"
    md, tex = (folder / "fig1-bcl.md").read_text(), (folder / "fig1-bcl.tex").read_text()
    assert md.index("](fig1-bcl.png)") < md.index("A decision")
    assert tex.index("\\includegraphics") < tex.index("\\textbf{Table 1.}") < tex.index("A decision")
    assert "\\label{" not in tex


def test_latex_of_a_table_puts_the_table_before_the_deviations(tmp_registry):
    tmp_registry(selftest_spec("table1-bcl", extra="decisions: [a decision]\n"))
    spec = load_all()["table1-bcl"]
    store = ResultStore(tmp_registry.root / "results")
    for job in expand(spec, "smoke", 1).jobs:
        store.write_ok(job, {"score": 0.5}, {}, {"wall_s": 1.0})
    tex = render_latex(collect(spec, "smoke", store))
    assert "\\includegraphics" not in tex
    assert tex.index("\\textbf{Table 1.}") < tex.index("\\paragraph{Order of") < tex.index("Deviations of tier smoke") \
        < tex.index("a decision")
    assert "is a pipeline check" in tex


def test_site_page_order_panels_and_collapsed_setup(figure):
    spec, store, _ = figure
    html = report_body(collect(spec, "reduced", store), "fig1-bcl.png", [], "spec.html")
    order = [html.index(x) for x in ('<h2 id="plot">', '<h2 id="results">', '<h2 id="claims">', '<h2 id="coverage">',
                                     '<h2 id="deviations">', '<h2 id="decisions">')]
    assert order == sorted(order)
    assert re.search(r'<details class="setup"><summary><h2 id="deviations">', html)
    assert re.search(r'<details class="setup"><summary><h2 id="decisions">', html)
    tables = re.findall(r'<table class="paper">.*?</table>', html, re.S)
    assert len(tables) == 2 and "C</td>" not in tables[0] and "A</td>" not in tables[1]
    assert "C and D have identical values" in html


def test_wide_panels_are_split_to_fit_the_page(tmp_registry):
    cols = [f"epoch={10 * i}" for i in range(1, 13)]
    tmp_registry(selftest_spec("table1-bcl", cols=tuple(cols)))
    spec = load_all()["table1-bcl"]
    store = ResultStore(tmp_registry.root / "results")
    for job in expand(spec, "paper", 3).jobs:
        store.write_ok(job, {"score": 56.123 + 13.1 * job.seed_index}, {}, {"wall_s": 1.0})
    from pubench.report.html import result_tables

    (t,) = result_tables(collect(spec, "paper", store))
    assert len(t["chunks"]) >= 2 and sum(len(c["cols"]) for c in t["chunks"]) == 12
    html = report_body(collect(spec, "paper", store), None, [], "spec.html")
    assert html.count('<table class="paper">') == len(t["chunks"]) and "columns epoch=10 to" in html


def test_smoke_cells_are_pipeline_checks_not_coloured(tmp_registry):
    tmp_registry(selftest_spec("table1-bcl"))
    spec = load_all()["table1-bcl"]
    store = ResultStore(tmp_registry.root / "results")
    for job in expand(spec, "smoke", 1).jobs:
        store.write_ok(job, {"score": 9.0}, {}, {"wall_s": 1.0})
    res = collect(spec, "smoke", store)
    assert res.pipeline_check and res.delta("A", "x", "score") is None
    html = report_body(res, None, [], "spec.html")
    assert not re.search(r"d-(better|worse|same)", html.split("</p>", 3)[-1].split('<h2 id="claims">')[0])
    assert 'class="cell d-check"' in html and "Δ +" not in html and "pipeline check" in html
    md = render_markdown(res)
    assert "Tier `smoke`: a pipeline check" in md and "[+" not in md


CROSSREF = """\
entries:
  - method: A
    dataset: x data
    setting: "n = 1"
    cells:
      - {spec: table1-bcl, row: A, col: x, setting: "002's way"}
      - {spec: table1-pucl, row: A, col: x, setting: "000's way"}
"""


def test_crossref_ranks_where_tiers_differ_in_scale(tmp_registry):
    from pubench.report.crossref import load_crossref
    from pubench.report.site import write_site

    tmp_registry(selftest_spec("table1-bcl", rows=("A", "B")))
    tmp_registry(selftest_spec("table1-pucl", rows=("A", "B")))
    (tmp_registry.root / "experiments" / "_crossref.yaml").write_text(CROSSREF)
    specs = load_all()
    store = ResultStore(tmp_registry.root / "results")
    for sid in ("table1-bcl", "table1-pucl"):
        for job in expand(specs[sid], "reduced", 2).jobs:  # reduced: far below the paper's 1.0 / 2.0, B above A
            store.write_ok(job, {"score": {"A": -60.0, "B": -50.0}[job.row] + job.seed_index}, {}, {"wall_s": 1.0})
    out = tmp_registry.root / "site"
    write_site(specs, store, out, load_crossref(specs))
    html = (out / "crossref.html").read_text()
    assert "compare the ranks" in html and "our rank" in html and "paper's rank" in html
    row = re.search(r"table1-bcl</a>: A \| x</td>(.*?)</tr>", html).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    # reported 1.0 (paper's rank 2 of 2: B's 2.0 is higher), ours [reduced] rank 2 of 2, no Δ, no colour
    assert cells[:5] == ["1.00 ± 0.10", "2 of 2", "-59.50 ± 0.71 (2) [reduced]", "2 of 2", "—"]
    assert "d-worse" not in row and "d-better" not in row


def test_wide_figure_page_fits_a_1400_px_window(tmp_registry, chromium):
    from pubench.report.site import write_site
    from tests.chromium import Browser

    cols = [f"(c) epoch={10 * i}" for i in range(1, 11)]
    tmp_registry(selftest_spec("fig4-bcl", rows=("init puNCE", "init random"), cols=tuple(cols)))
    specs = load_all()
    store = ResultStore(tmp_registry.root / "results")
    for job in expand(specs["fig4-bcl"], "reduced", 3).jobs:
        store.write_ok(job, {"score": 56.123 + 13.31 * job.seed_index}, {}, {"wall_s": 1.0})
    out = tmp_registry.root / "site"
    write_site(specs, store, out)
    with Browser(chromium, width=1400) as browser:
        visit = browser.visit((out / "reduced" / "fig4-bcl.html").resolve().as_uri())
        assert visit.errors == [] and all(img["ok"] for img in visit.images)
        widths = browser.evaluate("JSON.stringify({win: window.innerWidth, doc: document.documentElement.scrollWidth, "
                                  "right: Math.max(...Array.from(document.querySelectorAll('table.paper'))"
                                  ".map(t => t.getBoundingClientRect().right))})")
    import json

    w = json.loads(widths)
    assert w["right"] <= w["win"] and w["doc"] <= w["win"], w
