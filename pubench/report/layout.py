"""Paper-shaped table layout shared by the markdown and LaTeX renderers.

A spec renders as blocks: one per metric (when it has several) and per column group
(the panels of a figure, the blocks of a table), each with the spec's rows in order and
a header line before each row group.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from pubench.registry.spec import CUSTOM, ReportedCell, Spec, match_cell
from pubench.report.oneclass import NEAR_ONE_CLASS, RECALL_0, RECALL_LOW, SPECIFICITY_0, SPECIFICITY_LOW
from pubench.report.stats import significance_mark

DASH = "—"
BOLD_MARK = "(bold)"  # how specs record a number the paper prints in bold
DEGENERATE_MARK = "◊"
DEGENERATE_LEGEND = (
    f"◊k: k of the cell's seeds ended as a near-one-class classifier at its threshold: test recall under "
    f"{NEAR_ONE_CLASS:.0%} (almost no test positive called positive) or test specificity under {NEAR_ONE_CLASS:.0%} "
    "(almost every test negative called positive), read from the record's accuracy, precision and recall. Their "
    "accuracy is mostly a class share, not what the method learned; they are averaged in as they are."
)
_KIND_ORDER = (RECALL_0, RECALL_LOW, SPECIFICITY_0, SPECIFICITY_LOW)


@dataclass
class Block:
    title: str | None
    metric: str
    cols: list[str]
    lines: list[tuple[str, str]]  # ("group", name) or ("row", name)


def blocks(spec: Spec) -> list[Block]:
    """The blocks of the table, each with the lines it prints: a row only where it has a cell in
    the block's columns (run, derived or reported; a figure's panel holds its own rows, not
    the rows its spec excludes there), a group line only above rows it keeps."""
    col_sets = list(spec.col_groups.items()) or [(None, spec.cols)]
    lines: list[tuple[str, str]] = []
    if spec.row_groups:
        for g, rows in spec.row_groups.items():
            lines.append(("group", g))
            lines += [("row", r) for r in rows]
        grouped = {r for rows in spec.row_groups.values() for r in rows}
        lines += [("row", r) for r in spec.rows if r not in grouped]
    else:
        lines = [("row", r) for r in spec.rows]
    reported = {(c.row, c.col) for c in spec.reported}
    out = []
    for metric, m in spec.metrics.items():
        for g, cols in col_sets:
            parts = [p for p in (m.label if len(spec.metrics) > 1 else None, g) if p]
            kept = [x for x in lines if x[0] == "group" or any(_has_cell(spec, x[1], c, reported) for c in cols)]
            kept = [x for i, x in enumerate(kept)  # a group line only above a row it keeps
                    if x[0] == "row" or (i + 1 < len(kept) and kept[i + 1][0] == "row")]
            out.append(Block(" — ".join(parts) or None, metric, list(cols), kept or lines))
    return out


def _has_cell(spec: Spec, row: str, col: str, reported: set[tuple[str, str]]) -> bool:
    """Whether (row, col) is a cell of the table: run, derived from run cells, or printed by the paper."""
    if (row, col) in reported:
        return True
    sources = spec.derived_cols.get(col, [col])
    return any(c not in spec.derived_cols and not spec.is_excluded(row, c) for c in sources)


def column_chunks(cols: list[str], widths: dict[str, float], label: float, target: float,
                  sep: float = 0.0) -> list[list[str]]:
    """The fewest column chunks of about equal size whose estimated widths (``label`` for the row
    names, ``widths[c] + sep`` per column) fit ``target``: how LaTeX and the site split a wide
    table, each chunk repeating the row names."""
    n = len(cols)
    for k in range(1, n + 1):
        size = -(-n // k)
        parts = [cols[i:i + size] for i in range(0, n, size)]
        if all(label + sum(widths[c] + sep for c in p) <= target for p in parts):
            return parts
    return [[c] for c in cols]


def fmt(x: float | None, spec_fmt: str) -> str:
    return DASH if x is None else format(x, spec_fmt)


def fmt_reported(c: ReportedCell | None, spec_fmt: str, footnote: str = "", bold=("**", "**")) -> str:
    """A reported cell as the paper prints it: ``mean ± std`` or a dash. A bold mark bolds the
    mean (``bold`` = the markup around it: markdown by default); any other mark (e.g. ✓)
    follows the number after a space."""
    if c is None or c.mean is None:
        return DASH + footnote
    text = format(c.mean, spec_fmt)
    if c.mark == BOLD_MARK:
        text = f"{bold[0]}{text}{bold[1]}"
    if c.std is not None:
        text += f" ± {format(c.std, spec_fmt)}"
    if c.mark and c.mark != BOLD_MARK:
        text += f" {c.mark}"
    return text + footnote


def fmt_ours(mean: float, std: float | None, n: int, spec_fmt: str) -> str:
    """``mean ± std (n)``; a single seed has no std: ``mean (1)``."""
    spread = "" if std is None else f" ± {format(std, spec_fmt)}"
    return f"{format(mean, spec_fmt)}{spread} ({n})"


def degenerate_mark(res, row: str, col: str, metric: str) -> str:
    """``◊k`` when k of the cell's seeds are near-one-class classifiers (``TableResult.degenerate``), else ``""``."""
    k = res.degenerate_seeds(row, col, metric)
    return f"{DEGENERATE_MARK}{k}" if k else ""


def cell_marks(res, row: str, col: str, metric: str) -> list[str]:
    """The marks after our number in a cell: the significance mark, then the one-class count."""
    return [m for m in (significance_mark(res, row, col, metric), degenerate_mark(res, row, col, metric)) if m]


def degenerate_summary(res) -> str | None:
    """One line on the near-one-class records of a report, or ``None`` when there are none:
    how many, in how many cells, of how many records with binary metrics, and by kind (the
    exact cases, recall 0 and specificity 0, apart from the others under 5%)."""
    if not res.degenerate:
        return None
    kinds = Counter(why for seeds in res.degenerate.values() for why in seeds.values())
    binary = sum(len(s) for s in res.binary.values())
    of = f" of {binary} with binary metrics" if binary else ""
    return (f"Near-one-class classifiers ({DEGENERATE_MARK}, test recall or specificity under {NEAR_ONE_CLASS:.0%}): "
            f"{kinds.total()} record(s){of} in {len(res.degenerate)} cell(s) ("
            + ", ".join(f"{why}: {kinds[why]}" for why in _KIND_ORDER if kinds[why]) + ")")


def one_class_whys(res) -> list[str]:
    """Per ``one_class_why`` entry of the tier that covers near-one-class seeds: ``ROW|COL (k of n
    seeds near-one-class; measured: ...): why``. The spec's reason is prose written by hand; the
    measured part is recomputed from the records each time (:func:`one_class_measured`), so a
    figure the reason quotes can be read against the store's beside it."""
    t = res.spec.tiers.get(res.tier)
    out = []
    for pattern, why in (t.one_class_why.items() if t else ()):
        cells = [c for c in res.degenerate if match_cell(pattern, *c)]
        if cells:
            k = sum(len(res.degenerate[c]) for c in cells)
            n = sum(len(res.binary.get(c, ())) for c in cells)
            measured = one_class_measured(res, cells)
            out.append(f"`{pattern}` ({k} of {n} seeds near-one-class{'; measured: ' + measured if measured else ''})"
                       f": {why}")
    return out


def _span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.1f}%" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}-{hi:.1f}%"


def one_class_measured(res, cells: list[tuple[str, str]]) -> str:
    """The near-one-class seeds of ``cells``, from their records: how many call too few positives
    (recall side) and too many (specificity side), each side's range of the rate that put it there
    (in %), and their mean test AUC against the mean of the same cells' other seeds: the figures a
    ``one_class_why`` reason most often quotes. Empty when the records carry none."""
    sides = {"recall": [], "specificity": []}
    for c in cells:
        for s, why in res.degenerate[c].items():
            rates = res.rates.get(c, {}).get(s)
            if rates is not None:
                side = "recall" if why in (RECALL_0, RECALL_LOW) else "specificity"
                sides[side].append(100 * rates[side == "specificity"])
    parts = [f"{len(v)} {side}-side ({side} {_span(v)})" for side, v in sides.items() if v]
    auc = {True: [], False: []}
    for c in cells:
        for s, (a, _) in res.discrimination.get(c, {}).items():
            if a is not None:
                auc[s in res.degenerate[c]].append(a)
    if auc[True]:
        mean = sum(auc[True]) / len(auc[True])
        rest = (f" against {sum(auc[False]) / len(auc[False]):.1f} for the other {len(auc[False])} seed(s)"
                if auc[False] else " (no other seed)")
        parts.append(f"test AUC {mean:.1f}{rest}")
    return ", ".join(parts)


def reported_table(spec: Spec) -> tuple[list[Block], dict[str, tuple[int, str]]]:
    """Blocks plus numbered footnotes for every reported-cell note."""
    notes: dict[str, tuple[int, str]] = {}
    for c in spec.reported:
        if c.note and c.note not in {n for _, n in notes.values()}:
            notes[c.note] = (len(notes) + 1, c.note)
    return blocks(spec), notes


CURVES_HEADERS = ["curve", "row", "col", "first point", "last point", "seeds"]


def curve_summary(res) -> list[list[str]]:
    """One line per (curve, row, col) with results: the seeds' mean ± std at the curve's first
    and last x (``x: mean ± std``), for the reports' text (the plot draws the whole curve)."""
    out = []
    for c in res.spec.curves:
        for row in res.spec.rows:
            for col in c.cols:
                series = res.curve(c.title, row, col)
                if series is None:
                    continue
                pts = series.pointwise()
                ends = [f"{format(x, 'g')}: {fmt_ours(m, s, k, c.fmt)}" for x, m, s, k in (pts[0], pts[-1])]
                out.append([c.title, row, col, *ends, str(len(series.by_seed))])
    return out



def coinciding(res) -> list[tuple[str, list[list[str]]]]:
    """Rows whose lines coincide in a panel of the plot, so that one hides the other: per panel
    (a block's title, or a curve panel's) the groups of rows with identical values for every
    seed in every column of the panel where they have results (at least one column shared,
    no column where only one of them has results)."""
    out = []
    spec = res.spec
    for b in blocks(spec):
        rows = [name for kind, name in b.lines if kind == "row"]
        series = {r: tuple((c, tuple(sorted(s.by_seed.items()))) for c in b.cols
                           if (s := res.get(r, c, b.metric)) is not None) for r in rows}
        if groups := _same(series):
            out.append((b.title or spec.metrics[b.metric].label, groups))
    for c in spec.curves:
        for col in c.cols:
            series = {r: tuple(sorted(s.by_seed.items())) for r in spec.rows if (s := res.curve(c.title, r, col))}
            if groups := _same(series):
                out.append((c.title if len(c.cols) == 1 else f"{c.title} — {col}", groups))
    return out


def _same(series: dict[str, tuple]) -> list[list[str]]:
    by: dict[tuple, list[str]] = {}
    for row, values in series.items():
        if values:
            by.setdefault(values, []).append(row)
    return [rows for rows in by.values() if len(rows) > 1]


def coinciding_text(res) -> str | None:
    """One sentence naming the rows whose lines coincide in the plot (:func:`coinciding`), or None."""
    found = coinciding(res)
    if not found:
        return None
    parts = [f"in {panel}: " + "; ".join(" and ".join(g) for g in groups) for panel, groups in found]
    return ("Lines that coincide hide each other in the plot: " + "; ".join(parts) + " have identical values for "
            "every seed in every column they share (read from the records; the plot labels the hidden line "
            "'= ...').")


def tier_line(spec: Spec, tier: str) -> str:
    """One line on what the tier is and how many deviations it lists (they follow the results)."""
    from pubench.registry.changes import deviation_lines

    n = len(deviation_lines(spec, tier))
    listed = f"{n} deviation{'s' if n != 1 else ''} from the paper, listed below the results"
    if spec.variant is not None and tier == CUSTOM:
        base, sets = spec.variant
        what = {"paper": "the paper's configuration", "smoke": "a pipeline check"}.get(base, "a smaller configuration")
        if spec.added:
            return (f"the `{base}` tier ({what}) with rows added (`pubench run --add-row`): "
                    + ", ".join(f"`{r.name}` (runs like `{r.like}`)" for r in spec.added)
                    + f"; the paper's rows are the `{base}` tier's records; {listed}")
        return (f"a custom variant (`pubench run --set`) of the `{base}` tier ({what}) with "
                + ", ".join(f"`{o}`" for o in sets) + f" on top; {listed}")
    if tier == "paper":
        return "the paper's configuration" + (f", with {listed}" if n else "")
    if tier == "smoke":
        return f"{SMOKE_TEXT}; {listed}"
    return f"a smaller configuration that runs on 2 CPU cores (read the rankings, not the absolute numbers); {listed}"


SMOKE_TEXT = ("a pipeline check (seconds of training): its numbers say nothing about the paper's, and the report "
              "does not compare them with the paper")


_LOST = re.compile(r"^\((caption lost in the text conversion[^)]*)\)\s*(.*)$", re.S)


def caption_parts(caption: str) -> tuple[str | None, str]:
    """(the marker of a caption the text conversion lost, the description after it), or (None,
    the caption): ``(caption lost in the text conversion; described from Sec. 9.3) Downstream
    ...`` -> ``("caption lost ...; described from Sec. 9.3", "Downstream ...")``."""
    m = _LOST.match(caption)
    return (m.group(1), m.group(2)) if m else (None, caption)


def plot_alt(res) -> str:
    """What the plot of a figure shows, in words (alt text, caption)."""
    ours = f"{res.spec.id} at the {res.tier} tier: ours (solid, mean ± std over seeds)"
    if any(c.mean is not None for c in res.spec.reported):
        return f"{ours} and the paper (dashed)"
    return f"{ours}; the paper prints no number of this figure"


def report_stem(spec: Spec) -> str:
    """The report's file name without suffix: the id; for a variant (:meth:`Spec.with_variant`)
    the id, ``--`` and the base tier and overrides as a file name (``table1-bcl--reduced_value=10``;
    a long one ends in a hash of the whole); for rows added (:meth:`Spec.with_added_rows`)
    ``<id>--<base tier>+rows``."""
    if spec.variant is None:
        return spec.id
    if spec.added:  # one report per base tier holds every row added there
        return f"{spec.id}--{spec.variant[0]}+rows"
    from pubench.utils.hashing import config_hash

    slug = re.sub(r"[^A-Za-z0-9.=+-]+", "_", "_".join([spec.variant[0], *spec.variant[1]])).strip("_")
    if len(slug) > 60:
        slug = f"{slug[:48]}-{config_hash(list(spec.variant))[:8]}"
    return f"{spec.id}--{slug}"
