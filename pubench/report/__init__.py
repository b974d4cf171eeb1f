"""REPORT: collectors (mean ± std over seeds, delta vs reported), markdown/LaTeX/PNG rendering.

The names below load their module on first use (a command that needs one renderer does not
import the others, nor scipy)."""

import importlib

# light (no scipy), and imported here so that `collect` names the function, not its module
from pubench.report.collect import CellStats, TableResult, collect

_WHERE = {
    "claim_checks": "checks", "column_checks": "checks", "render_latex": "latex", "render_markdown": "markdown",
    "render_reported_markdown": "markdown", "write_index": "write", "write_report": "write",
}

__all__ = [
    "CellStats", "TableResult", "claim_checks", "collect", "column_checks", "render_latex",
    "render_markdown", "render_reported_markdown", "write_index", "write_report",
]


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"pubench.report.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'pubench.report' has no attribute {name!r}")
