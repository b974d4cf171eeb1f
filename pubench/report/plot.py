"""PNG plots for figure specs: one panel per column group, one line per row."""

from __future__ import annotations

import re
from pathlib import Path

from pubench.report.collect import TableResult
from pubench.report.layout import blocks

_NUM = re.compile(r"=\s*([-+0-9.eE]+)\s*$")


def _x(cols: list[str]) -> tuple[list[float], bool]:
    """Numeric x from column names like ``alpha=0.9``; else positions."""
    vals = [_NUM.search(c) for c in cols]
    if all(vals):
        try:
            return [float(v.group(1)) for v in vals], True
        except ValueError:
            pass
    return list(range(len(cols))), False


def render_plot(res: TableResult, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bl = blocks(res.spec)
    fig, axes = plt.subplots(1, len(bl), figsize=(4.2 * len(bl), 3.4), squeeze=False)
    for ax, b in zip(axes[0], bl):
        m = res.spec.metrics[b.metric]
        x, numeric = _x(b.cols)
        positive = []
        for kind, row in b.lines:
            if kind != "row":
                continue
            pts = [(xi, s.mean, s.std or 0.0) for xi, c in zip(x, b.cols) if (s := res.get(row, c, b.metric))]
            if pts:
                xs, ys, es = zip(*pts)
                line = ax.errorbar(xs, ys, yerr=es, marker="o", ms=3, capsize=2, label=row)
                positive += list(ys)
                rep = [(xi, r.mean) for xi, c in zip(x, b.cols)
                       if (r := res.reported(row, c, b.metric)) and r.mean is not None]
                if rep:
                    ax.plot(*zip(*rep), ls="--", marker="x", color=line[0].get_color(), label=f"{row} (paper)")
        if positive and min(positive) > 0 and max(positive) / min(positive) > 100:
            ax.set_yscale("log")
        if not numeric:
            ax.set_xticks(x, b.cols, rotation=45, ha="right", fontsize=7)
        else:
            ax.set_xlabel(b.cols[0].split("=")[0])
        ax.set_title(b.title or "", fontsize=9)
        ax.set_ylabel(m.label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{res.spec.id} ({res.tier} tier): {res.spec.caption}"[:120], fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
