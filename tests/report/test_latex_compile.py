"""LaTeX reports compile with a real engine, and wide tables fit the page: no overfull box
above 1 pt, no font that TeX Live's base sets lack (bitmap fallback). Skipped without pdflatex
(Debian: texlive-latex-base texlive-latex-recommended; .ci/run installs them where it can).

The real specs of the widest tables are filled with synthetic records (3 seeds per cell, near
the reported value where there is one) so that every cell prints a number of realistic width.
"""

import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pubench.jobs import expand
from pubench.registry import get_spec
from pubench.report import collect, render_latex
from pubench.store import ResultStore

PDFLATEX = shutil.which("pdflatex")
pytestmark = pytest.mark.skipif(PDFLATEX is None, reason="no pdflatex (Debian: apt-get install texlive-latex-base "
                                                         "texlive-latex-recommended)")
# fig5-bcl is the acceptance case (24 columns); the others are the widest or longest
# of each kind: many columns with long names, six metrics, many rows with long names.
WIDE = ["fig5-bcl", "fig8-pupl", "table2-wconpu", "table3-pupl"]


def _synthetic_store(root: Path, spec, tier="paper", seeds=3) -> ResultStore:
    rng = random.Random(spec.id)
    store = ResultStore(root)
    for job in expand(spec, tier, seeds).jobs:
        metrics = {}
        for m in spec.metrics:
            r = spec.reported_cell(job.row, job.col, m)
            base = r.mean if r is not None and r.mean is not None else rng.choice([0.00123, 0.0456, 12.3, 87.65])
            metrics[m] = base * rng.uniform(0.8, 1.2)
        store.write_ok(job, metrics, {}, {"wall_s": rng.uniform(1, 100)})
    return store


def compile_tex(tex: str, folder: Path, name: str, passes: int = 1) -> tuple[Path, str]:
    """pdflatex in ``folder`` (one pass: a report needs no second); the PDF and the last log.
    Fails on a LaTeX error."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.tex").write_text(tex, encoding="utf-8")
    for _ in range(passes):
        out = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"], cwd=folder,
                             capture_output=True, text=True, timeout=120)
        log = (folder / f"{name}.log").read_text(encoding="utf-8", errors="replace")
        assert out.returncode == 0, "\n".join(line for line in log.splitlines() if line.startswith("!"))[:2000]
    return folder / f"{name}.pdf", log


def overfull(log: str) -> list[float]:
    return [float(x) for x in re.findall(r"Overfull \\[hv]box \(([\d.]+)pt too", log)]


def table_widths(log: str) -> list[tuple[float, float]]:
    """(natural width, line width) of every table, from the report's own \\typeout."""
    return [(float(w), float(lw)) for w, lw in re.findall(r"pubench table: ([\d.]+)pt for ([\d.]+)pt", log)]


@pytest.mark.parametrize("spec_id", WIDE)
def test_standalone_report_compiles_and_fits_the_page(tmp_path, spec_id):
    spec = get_spec(spec_id)
    res = collect(spec, "paper", _synthetic_store(tmp_path / "results", spec))
    assert res.cells_done == len(spec.cells())
    pdf, log = compile_tex(render_latex(res, standalone=True), tmp_path / "tex", spec_id)
    assert pdf.stat().st_size > 10_000
    assert "Rerun" not in log and "undefined" not in log  # clean in one pass
    assert [x for x in overfull(log) if x > 1.0] == []
    assert "mktexpk" not in log and "tcrm" not in log  # only the Type 1 fonts of latex-base
    widths = table_widths(log)
    assert widths and all(w <= 1.05 * lw for w, lw in widths)  # split into chunks; shrunk at most 5%
    assert "Claims" in log or "Claims" in (tmp_path / "tex" / f"{spec_id}.tex").read_text()


def test_snippet_compiles_inside_a_document(tmp_path):
    spec = get_spec("fig5-bcl")
    snippet = render_latex(collect(spec, "paper", _synthetic_store(tmp_path / "results", spec)), standalone=False)
    (tmp_path / "tex").mkdir()
    (tmp_path / "tex" / "fig5.tex").write_text(snippet)
    doc = ("\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\begin{document}\n"
           "Some text.\n\\input{fig5}\n\\input{fig5}\n\\end{document}\n")  # twice: the macros are defined once
    _, log = compile_tex(doc, tmp_path / "tex", "paper", passes=2)  # the snippet's labels are the document's
    assert [x for x in overfull(log) if x > 1.0] == []


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="no pdftoppm (Debian: poppler-utils)")
def test_first_page_renders_to_png(tmp_path):
    spec = get_spec("fig5-bcl")
    res = collect(spec, "paper", _synthetic_store(tmp_path / "results", spec))
    pdf, _ = compile_tex(render_latex(res), tmp_path / "tex", "fig5-bcl")
    subprocess.run(["pdftoppm", "-r", "60", "-png", "-f", "1", "-l", "1", str(pdf), str(tmp_path / "page")],
                   check=True, timeout=60)
    (png,) = tmp_path.glob("page*.png")
    assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 5_000


def test_figure_report_includes_its_plot_before_its_decisions(tmp_path):
    """``pubench report`` of a figure: the .tex includes the PNG written beside it, above the
    tables and long before the decisions, and compiles in one pass without a Rerun warning."""
    from pubench.report import write_report

    spec = get_spec("fig5-bcl")
    _, paths = write_report(spec, "paper", _synthetic_store(tmp_path / "results", spec), tmp_path / "reports")
    tex = (tmp_path / "reports" / "paper" / "fig5-bcl.tex").read_text()
    assert "\\includegraphics" in tex and "{fig5-bcl.png}" in tex
    assert tex.index("\\includegraphics") < tex.index("\\textbf{Table 1.}") < tex.index("Choices the paper leaves")
    assert "\\label{" not in tex
    pdf, log = compile_tex(tex, tmp_path / "reports" / "paper", "fig5-bcl")
    assert "<fig5-bcl.png" in log  # pdflatex read the image
    assert "Rerun" not in log and "LaTeX Warning" not in log
