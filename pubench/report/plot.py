"""PNG plots for figure specs: one panel per column group, one line per row.

A panel's x-axis comes from its column names: ``alpha=0.9``, ``(a) n_P=10k`` or ``gamma=0.1, epoch=25`` give
the points ``0.9``, ``10000``, ``25`` on axes named ``alpha``, ``n_P``, ``epoch`` (a leading panel tag
such as ``(a)`` and words before the last, e.g. a data set, are dropped; ``k`` / ``M`` scale by 1e3 / 1e6), with ticks labelled as the
columns write the values. Geometric grids (``n_P = 1k, 3k, 10k``, ``N = 16 .. 512``) are
drawn on a log axis, evenly spaced ones (alpha) and epochs on a linear one, a grid even on
neither (``0.9, 0.99, 0.999, 0.9999``) at evenly spaced positions; every panel spans its
whole grid, points or not. Columns without
a number are drawn at positions. Each panel has its own legend, naming its rows without
the first word every row of the panel shares (rows ``probe PN``, ``probe uPU`` -> ``PN``,
``uPU``), as the papers' legends do. A line with exactly the points of a line drawn before it
(which it would hide) is drawn dotted with open markers and named ``nnPU (= uPU)``.

A spec's ``curves`` (lists each job records in its info: a training curve, a density) come
first, one panel per curve and column, one line per row (the seeds' mean, a band of ± one
std); the metric panels follow, those whose x-axis has more than one column (a single point
says nothing a curve panel does not). Such figures wrap after four panels.
"""

from __future__ import annotations

import math
import re
import statistics
import textwrap
from pathlib import Path

from pubench.report.collect import TableResult
from pubench.report.layout import blocks, caption_parts

_NUM = re.compile(r"^\s*(?:\([^)]*\)\s*)?(?P<name>.*?)\s*=\s*(?P<value>[-+0-9.eE]+)(?P<suffix>[kM]?)\s*$")
_SCALE = {"": 1.0, "k": 1e3, "M": 1e6}
LINEAR_AXES = {"epoch", "epochs"}  # training time reads linearly, even on a doubling grid


def axis_values(cols: list[str]) -> tuple[list[float], str | None, list[str] | None]:
    """(x, axis name, tick labels) from column names like ``(a) n_P=1k``; positions,
    None, None when some column has no number or the names before ``=`` differ."""
    found = [_NUM.match(c) for c in cols]
    if cols and all(found) and len({m.group("name") for m in found}) == 1:
        try:
            xs = [float(m.group("value")) * _SCALE[m.group("suffix")] for m in found]
        except ValueError:
            xs = None
        if xs is not None:
            # 'gamma=0.1, epoch=25' and 'CIFAR-hard gamma=0.1': the axis is the last word (epoch, gamma)
            name = (found[0].group("name").split() or [""])[-1]
            return xs, name, [m.group("value") + m.group("suffix") for m in found]
    return list(range(len(cols))), None, None


def _unevenness(vals: list[float]) -> float:
    """Relative spread of the gaps of a grid (0 for an even one)."""
    gaps = [b - a for a, b in zip(vals, vals[1:])]
    mean = statistics.fmean(gaps)
    return statistics.pstdev(gaps) / mean if mean > 0 else math.inf


def is_geometric(xs: list[float]) -> bool:
    """True for a positive grid of 3+ points whose spacing is more even on a log scale
    than on a linear one (relative spread of the gaps)."""
    if len(xs) < 3 or min(xs) <= 0 or sorted(xs) != xs:
        return False
    return _unevenness([math.log(x) for x in xs]) < _unevenness(xs)


IRREGULAR = 1.0  # gaps spread beyond their mean on both scales: e.g. 0.9, 0.99, 0.999, 0.9999


def is_irregular(xs: list[float]) -> bool:
    """True for a sorted grid of 3+ points that is even neither on a linear nor on a log scale
    (``alpha = 0.9, 0.99, 0.999, 0.9999`` crowds into one end of either): drawn at evenly
    spaced positions, ticks labelled with the values as written."""
    if len(xs) < 3 or sorted(xs) != xs:
        return False
    log = _unevenness([math.log(x) for x in xs]) if min(xs) > 0 else math.inf
    return min(_unevenness(xs), log) > IRREGULAR


def legend_names(rows: list[str]) -> list[str]:
    """Rows without the first word they all share (``init puNCE``, ``init random`` ->
    ``puNCE``, ``random``); unchanged when there is none or only one row."""
    firsts = {r.split(" ", 1)[0] for r in rows}
    if len(rows) < 2 or len(firsts) != 1 or not all(" " in r for r in rows):
        return list(rows)
    return [r.split(" ", 1)[1] for r in rows]


PER_ROW = 4  # panels per row of a figure with curves


def curve_panels(res: TableResult) -> list[tuple[str, str, str]]:
    """(panel title, curve title, col) of every curve panel, in the spec's order: one per curve
    and column (the column named in the title when the curve spans several)."""
    out = []
    for c in res.spec.curves:
        for col in c.cols:
            out.append((c.title if len(c.cols) == 1 else f"{c.title} — {col}", c.title, col))
    return out


def _draw_curves(ax, res: TableResult, title: str, col: str) -> bool:
    curve = res.spec.curve(title)
    rows = [r for r in res.spec.rows if res.curve(title, r, col)]
    for label, row in zip(legend_names(rows), rows):
        pts = res.curve(title, row, col).pointwise()
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        n = max(p[3] for p in pts)
        line, = ax.plot(xs, ys, lw=1.4, label=f"{label} (n={n})")
        lo = [m - (s or 0.0) for _, m, s, _ in pts]
        hi = [m + (s or 0.0) for _, m, s, _ in pts]
        ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel(curve.xlabel)
    ax.set_ylabel(curve.ylabel, fontsize=8)
    return bool(rows)


def _finish_panel(ax, title: str, drawn: bool, tier: str) -> None:
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    if drawn:
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, f"no results at the {tier} tier", transform=ax.transAxes, ha="center",
                va="center", fontsize=8, color="0.4")


def _draw_block(ax, res: TableResult, b) -> bool:
    """One metric panel: a line per row over the block's columns (ours solid, the paper's dashed)."""
    m = res.spec.metrics[b.metric]
    x, name, ticks = axis_values(b.cols)
    if name is not None and is_irregular(x):
        x = list(range(len(x)))  # positions, ticks as written
    curves = []
    for kind, row in b.lines:
        if kind != "row":
            continue
        pts = [(xi, s.mean, s.std or 0.0) for xi, c in zip(x, b.cols) if (s := res.get(row, c, b.metric))]
        rep = [(xi, r.mean) for xi, c in zip(x, b.cols)
               if (r := res.reported(row, c, b.metric)) and r.mean is not None]
        if pts or rep:
            curves.append((row, pts, rep))
    positive = []
    drawn: dict[tuple, str] = {}  # the points of each line drawn, to name a line that another hides
    for label, (row, pts, rep) in zip(legend_names([c[0] for c in curves]), curves):
        color = None
        if pts:
            xs, ys, es = zip(*pts)
            twin = drawn.setdefault(tuple(pts), label)
            if twin != label:  # the same points as a line already drawn: dotted, open markers, named
                line = ax.errorbar(xs, ys, yerr=es, marker="o", ms=6, mfc="none", ls=":", lw=2, capsize=2,
                                   label=f"{label} (= {twin})")
            else:
                line = ax.errorbar(xs, ys, yerr=es, marker="o", ms=3, capsize=2, label=label)
            color = line[0].get_color()
            positive += list(ys)
        if rep:
            ax.plot(*zip(*rep), ls="--", marker="x", color=color, label=f"{label} (paper)")
    if positive and min(positive) > 0 and max(positive) / min(positive) > 100:
        ax.set_yscale("log")
    if name is None:
        ax.set_xticks(x, b.cols, rotation=45, ha="right", fontsize=7)
    else:
        lo, hi = min(x), max(x)
        if is_geometric(x) and name not in LINEAR_AXES:
            ax.set_xscale("log")
            ax.minorticks_off()
            ax.set_xlim(lo / 1.15, hi * 1.15)
        else:
            pad = 0.04 * (hi - lo or 1.0)
            ax.set_xlim(lo - pad, hi + pad)
        ax.set_xticks(x, ticks, fontsize=7)
        ax.set_xlabel(name)
    ax.set_ylabel(m.label, fontsize=8)
    return bool(curves)


def render_plot(res: TableResult, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = curve_panels(res)
    bl = blocks(res.spec)
    if panels:
        bl = [b for b in bl if len(b.cols) > 1]
    n = len(panels) + len(bl)
    ncols = min(n, PER_ROW) if panels else n
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    for ax, (panel, title, col) in zip(flat, panels):
        _finish_panel(ax, panel, _draw_curves(ax, res, title, col), res.tier)
    for ax, b in zip(flat[len(panels):], bl):
        _finish_panel(ax, b.title or "", _draw_block(ax, res, b), res.tier)
    lost, caption = caption_parts(res.spec.caption)  # a lost caption: its description, said to be one
    caption = f"[described from the text] {caption}" if lost else caption
    title = textwrap.shorten(f"{res.spec.id} ({res.tier} tier): {caption}", width=130, placeholder=" ...")
    fig.suptitle(textwrap.fill(title, width=int(14 * fig.get_figwidth())), fontsize=9)  # ~14 characters an inch at 9 pt
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
