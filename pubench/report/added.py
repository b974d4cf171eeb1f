"""Rows added to a table (``pubench run --add-row``) against the rows of their block.

An added row (:mod:`pubench.registry.added_rows`) runs like one of the paper's rows and joins
that row's block (row group; column group where the methods are columns). Per column and
metric its report gives our mean, its rank among the block's rows with results there (1 =
best in the metric's direction), a one-sided t-test of "the added row beats B" for every row
B of the block (:func:`pubench.report.stats.compare_cells`: paired by seed index where both
ran on the same data split, as an added row does with its block since it inherits their data
config; Welch otherwise), and the regime verdict of the block it joins at this tier
(:mod:`pubench.report.regime`). There is no multiplicity correction: each line is one
comparison, read on its own.
"""

from __future__ import annotations

from pubench.registry.added_rows import block_of
from pubench.report.collect import TableResult
from pubench.report.evidence import verdict_text
from pubench.report.layout import DASH, fmt_ours
from pubench.report.regime import RegimeMap
from pubench.report.stats import compare_cells, outcome_text

HEADERS = ["added row", "column", "ours", "rank in block", "vs", "Δ (> 0: added better)",
           "one-sided test: added better", "regime of the block"]
LEGEND = ("Each row added to the table (`pubench run --add-row`) against every row of the block it joins (that of "
          "the row it runs like). rank: 1 = the best mean of the block's rows with results in the column, ties share "
          "a rank. Δ: the difference of the means, signed so that > 0 is the added row better. test: one-sided "
          "t-test over seeds of \"the added row beats it\": paired by seed index where both ran on the same data "
          "split (an added row inherits its block's data), Welch otherwise; holds (p) = significant at 5%; fails "
          "gives the p of the opposite direction; no correction for the many comparisons. regime: the verdict of "
          "the block at this tier (Regime section); out of regime, a difference says little about the methods.")


def added_rows_table(res: TableResult) -> list[list[str]]:
    """One line per added row, column (and metric, where the spec has several) and row of its
    block (:data:`HEADERS`); empty for a table without added rows."""
    spec = res.spec
    if not spec.added:
        return []
    regime = RegimeMap(res) if spec.regime else None
    settings = [x for x in (spec.rows if spec.methods_in == "cols" else spec.cols) if x not in spec.derived_cols]
    out = []
    for row in spec.added:
        block = block_of(spec, row.like)
        for setting in settings:
            cell = spec.cell_of(row.name, setting)
            for metric, m in spec.metrics.items():
                ours = res.get(*cell, metric)
                if ours is None:
                    continue
                others = {b: s for b in block if (s := res.get(*spec.cell_of(b, setting), metric)) is not None}
                sign = 1.0 if m.higher_is_better else -1.0
                rank = 1 + sum(format(s.mean, m.fmt) != format(ours.mean, m.fmt) and sign * (s.mean - ours.mean) > 0
                               for s in others.values())
                where = setting + (f" ({metric})" if len(spec.metrics) > 1 else "")
                verdicts = regime.of(*cell) if regime else []
                regime_text = "; ".join(f"{v.block.name}: {verdict_text(v)}" for v in verdicts) or DASH
                head = [row.name, where, fmt_ours(ours.mean, ours.std, ours.n, m.fmt), f"{rank} of {len(others) + 1}"]
                if not others:
                    out.append(head + [DASH, DASH, "no row of its block has results here", regime_text])
                for b, s in others.items():
                    t = compare_cells(ours, s, higher_is_better=m.higher_is_better, fmt=m.fmt,
                                      labels=(row.name, b, setting))
                    test = f"{outcome_text(t)}, {'paired' if t.paired else 'Welch'}, n={t.n}"
                    out.append(head + [b, format(t.diff, "+" + m.fmt), test, regime_text])
    return out
