"""Report templates: packaged with pubench, replaceable or extendable from $PUBENCH_TEMPLATES,
HTML autoescaped, LaTeX with its own delimiters and escaping."""

import pytest

from pubench.report import collect, render_latex
from pubench.report.html import report_body, report_context
from pubench.report.latex import latex_context
from pubench.report.templating import PACKAGE_TEMPLATES, Tex, html_env, latex_env, render_html, render_tex
from tests.conftest import selftest_results


def test_one_template_per_page_kind_is_packaged():
    names = {p.name for p in PACKAGE_TEMPLATES.glob("*.j2")}
    assert {"base.html.j2", "report.html.j2", "spec.html.j2", "index.html.j2", "crossref.html.j2",
            "report.tex.j2", "snippet.tex.j2"} <= names


def test_latex_values_are_escaped_unless_latex_already():
    env = latex_env()
    out = env.from_string(r"\VAR{a} \VAR{b} \VAR{c|tex} \VAR{xs|join(' & ')}").render(
        a="50% & $x_1$", b=Tex(r"$\pm$"), c="#", xs=["a_b", Tex(r"\textbf{c}")])
    assert out == r"50\% \& \$x\_1\$ $\pm$ \# a\_b & \textbf{c}"


def test_html_is_autoescaped():
    assert html_env().from_string("{{ x }}").render(x="<i>") == "&lt;i&gt;"


@pytest.fixture
def report(tmp_registry):
    spec, store = selftest_results(tmp_registry, "table1-bcl", "paper", 2, lambda job: {"score": 1.0 + job.seed_index})
    return collect(spec, "paper", store)


def test_user_templates_extend_the_packaged_ones(report, tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "base.html.j2").write_text('{% extends "pubench/base.html.j2" %}'
                                       "{% block style %}{{ super() }} body { font-family: Georgia; }{% endblock %}")
    (mine / "report.tex.j2").write_text('\\BLOCK{extends "pubench/report.tex.j2"}'
                                        "\\BLOCK{block preamble}\\documentclass{article}% mine\n"
                                        "\\usepackage{booktabs,graphicx}\n\\BLOCK{include \"macros.tex.j2\"}\n"
                                        "\\BLOCK{endblock}")
    monkeypatch.setenv("PUBENCH_TEMPLATES", str(mine))
    page = render_html("report.html.j2", title="t", nav=[], footer="", **report_context(report, None, [], "x.html"))
    assert "font-family: Georgia" in page and "<h2 id=\"results\">" in page
    tex = render_latex(report)
    assert "\\documentclass{article}% mine" in tex and "\\textbf{Table 1.}" in tex
    monkeypatch.delenv("PUBENCH_TEMPLATES")
    assert "Georgia" not in report_body(report, None, [], "spec.html")
    assert "% mine" not in render_tex("report.tex.j2", **latex_context(report))
