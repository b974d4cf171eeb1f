"""The figure audit (``experiments/_figures.yaml``): every figure of the five papers, with the
spec that registers it or the reason it has none. Read without torch; ``pubench coverage``
and the site list the figures left out, with their reasons.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pubench.paths import experiments_root
from pubench.registry.spec import PAPERS, Spec, SpecError
from pubench.utils.yamlio import read_yaml

FIGURE_RE = re.compile(r"^Fig\. (\d+)$")


@dataclass(frozen=True)
class FigureEntry:
    paper: str
    figure: str            # "Fig. 4", as the paper numbers it
    spec: str | None       # the spec id, or None
    why: str | None        # why there is no spec

    @property
    def number(self) -> int:
        return int(FIGURE_RE.match(self.figure).group(1))


def figures_path() -> Path:
    return experiments_root() / "_figures.yaml"


def load_figures(path: Path | None = None) -> list[FigureEntry]:
    """Every entry of the audit, papers in registry order, figures by number; [] when the file
    is absent. A malformed entry is a :class:`SpecError` naming it."""
    path = path or figures_path()
    if not path.exists():
        return []
    raw = read_yaml(path)
    out = []
    for paper, figs in raw.items():
        if paper not in PAPERS:
            raise SpecError(str(path), str(paper), f"unknown paper (one of {', '.join(PAPERS)})")
        if not isinstance(figs, dict):
            raise SpecError(str(path), paper, "expected a mapping 'Fig. N' -> {spec: ID} or {why: reason}")
        for fig, entry in figs.items():
            where = f"{paper}.{fig}"
            if not FIGURE_RE.match(str(fig)):
                raise SpecError(str(path), where, "figures are written 'Fig. N'")
            if not isinstance(entry, dict) or set(entry) not in ({"spec"}, {"why"}):
                raise SpecError(str(path), where, "expected exactly one of {spec: ID} (registered) or {why: reason}")
            spec, why = entry.get("spec"), entry.get("why")
            if why is not None and (not isinstance(why, str) or not why.strip()):
                raise SpecError(str(path), where, "give the reason the figure has no spec")
            if spec is not None and (not isinstance(spec, str) or not spec.endswith(f"-{paper}")):
                raise SpecError(str(path), where, f"{spec!r} is not a spec id of paper {paper!r}")
            out.append(FigureEntry(paper, str(fig), spec, why))
    order = list(PAPERS)
    return sorted(out, key=lambda f: (order.index(f.paper), f.number))


def check_figures(entries: list[FigureEntry], specs: dict[str, Spec], path: str = "_figures.yaml") -> None:
    """Every figure spec of the registry is listed under its paper, once; every listed spec exists."""
    named = {}
    for f in entries:
        if f.spec is None:
            continue
        if f.spec not in specs:
            raise SpecError(path, f"{f.paper}.{f.figure}", f"no spec {f.spec!r} in the registry")
        if f.spec in named:
            raise SpecError(path, f"{f.paper}.{f.figure}", f"{f.spec} is listed twice (also {named[f.spec]})")
        named[f.spec] = f.figure
    missing = sorted(sid for sid, s in specs.items() if s.kind == "figure" and sid not in named)
    if missing:
        raise SpecError(path, "(figures)", f"figure specs not in the audit: {', '.join(missing)}")

