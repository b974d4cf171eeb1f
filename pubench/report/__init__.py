"""REPORT: collectors (mean ± std over seeds, delta vs reported), markdown/LaTeX/PNG rendering."""

from pubench.report.checks import claim_checks, column_checks
from pubench.report.collect import CellStats, TableResult, collect
from pubench.report.latex import render_latex
from pubench.report.markdown import render_markdown, render_reported_markdown
from pubench.report.write import write_index, write_report

__all__ = [
    "CellStats", "TableResult", "claim_checks", "collect", "column_checks", "render_latex",
    "render_markdown", "render_reported_markdown", "write_index", "write_report",
]
