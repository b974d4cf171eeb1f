"""``pubench coverage``: what the registry holds and what the code can run, honestly.

For each table: its cells, the values the paper reports, and per tier the cells that can
run: not marked unavailable by the spec and every unit they name (task, dataset,
backbone, loss, framework, downstream, pu_method) implemented. Units the code lacks are
listed with the cells they block: a method that does not exist is missing, never faked.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from typing import Any

from tabulate import tabulate

from pubench.registry.spec import PAPERS, TIERS, Spec
from pubench.registry.units import TASK_REGISTRY, _registry, implemented, planned_reason, units


def data_missing(name: str) -> str | None:
    """Why dataset ``name`` is not under the data root here (None if it is)."""
    from pubench.paths import data_root

    root = data_root()
    try:
        from pubench.data import graphs

        if name in graphs.SPECS:
            graphs.find_source(graphs.SPECS[name], root)
            return None
    except FileNotFoundError as e:
        return str(e)
    except ImportError:  # pragma: no cover - the graph module is part of the package
        pass
    from pubench.data import DATASETS, images

    if name in DATASETS and DATASETS.get(name).modality == "text":
        return DATASETS.get(name).availability(root)
    try:
        return images.availability(name, "train", root)
    except (KeyError, ValueError):
        return f"no loader checks data for {name!r}"


def config_error(task: str, params: dict) -> str | None:
    """Why the task rejects this config (its ``validate``), or None if it accepts it."""
    fn = getattr(_registry(TASK_REGISTRY).get(task), "validate", None)
    if fn is None:
        return None
    try:
        fn(params)
    except Exception as e:  # noqa: BLE001 - any rejection means "not runnable"
        return f"{type(e).__name__}: {e}".splitlines()[0][:160]
    return None


class _Verdicts:
    """:func:`config_error` of each (task, config), remembered across calls in the cache
    (:mod:`pubench.registry.cache`) under the fingerprint of the units' and utils' source: the
    tasks' checks import torch and every unit, a second's work that the next call skips.
    Where a task cannot be imported (no torch here), its configs are counted as unchecked."""

    def __init__(self):
        from pathlib import Path

        from pubench.registry import cache
        from pubench.registry.units import UNIT_PACKAGES

        pkg = Path(__file__).resolve().parent
        files = [f for p in (*UNIT_PACKAGES, "utils") for f in pkg.joinpath(p).rglob("*.py")]
        self.key = cache.files_fingerprint(files, salt="verdicts")
        self.known = cache.get("verdicts", self.key, dict[tuple[str, str], str | None]) or {}
        self.added = False
        self.unchecked = 0

    def __call__(self, task: str, params: dict, params_json: str) -> str | None:
        hit = self.known.get((task, params_json), self)
        if hit is not self:
            return hit
        try:
            why = config_error(task, params)
        except (ImportError, KeyError):  # its module cannot load here (a name the spec check passed)
            why = "ImportError"
        if why and why.split(":")[0] in ("ImportError", "ModuleNotFoundError"):
            self.unchecked += 1
            return None
        self.known[(task, params_json)] = why
        self.added = True
        return why

    def save(self) -> None:
        from pubench.registry import cache

        if self.added:
            cache.put("verdicts", self.key, self.known)


def figure_audit(specs: dict[str, Spec]) -> dict[str, Any] | None:
    """The figure audit (``experiments/_figures.yaml``) checked against the registry: how many
    figures the papers have, how many are registered, and each one left out with its reason;
    None when there is no audit file."""
    from pubench.registry.figures import check_figures, figures_path, load_figures

    entries = load_figures()
    if not entries:
        return None
    check_figures(entries, specs, str(figures_path()))
    return {"audited": len(entries), "registered": sum(f.spec is not None for f in entries),
            "left_out": [{"paper": f.paper, "figure": f.figure, "why": f.why} for f in entries if f.spec is None]}


def coverage(specs: dict[str, Spec], figures: dict[str, Any] | None = None) -> dict[str, Any]:
    """Cells, reported values and runnable cells per spec and tier; ``figures``: the figure
    audit (:func:`figure_audit`) to report with it (the whole registry's only)."""
    have = implemented()
    verdicts = _Verdicts()
    here: dict[str, str | None] = {}
    tables, missing = [], defaultdict(lambda: {"cells": 0, "tables": set()})
    rejected: dict[str, dict[str, Any]] = {}
    unavailable: dict[tuple[str, str], dict[str, Any]] = {}
    for sid, spec in specs.items():
        runnable = {t: 0 for t in TIERS}
        data_here = 0
        table_missing = set()
        for row, col in spec.cells():
            for tier in TIERS:
                cfg, params_json = spec.resolve_with_json(tier, row, col)
                lacking = {(k, n) for k, n in units(cfg["task"], cfg["params"]) if n not in have[k]}
                if tier == "paper":
                    for u in lacking:
                        missing[u]["cells"] += 1
                        missing[u]["tables"].add(sid)
                    table_missing |= lacking
                why_not = spec.unavailable_reason(tier, row, col)
                if why_not and not lacking:
                    u = unavailable.setdefault((tier, why_not), {"cells": 0, "tables": set()})
                    u["cells"] += 1
                    u["tables"].add(sid)
                if lacking or why_not:
                    continue
                why = verdicts(cfg["task"], cfg["params"], params_json)
                if why:
                    r = rejected.setdefault(why, {"cells": 0, "tables": set(), "tiers": set()})
                    r["cells"] += 1
                    r["tables"].add(sid)
                    r["tiers"].add(tier)
                    continue
                runnable[tier] += 1
                if tier == "paper":
                    names = [n for k, n in units(cfg["task"], cfg["params"]) if k == "dataset"]
                    for n in names:
                        if n not in here:
                            here[n] = data_missing(n)
                    data_here += all(here[n] is None for n in names)
        tables.append({
            "id": sid, "paper": spec.paper, "cells": len(spec.cells()),
            "values": len(spec.cells()) * len(spec.metrics),
            "reported": sum(c.mean is not None for c in spec.reported),
            "runnable": runnable,
            "paper_data_here": data_here,
            "missing": sorted(f"{k}:{n}" for k, n in table_missing),
        })
    total = {
        "tables": len(tables),
        "cells": sum(t["cells"] for t in tables),
        "values": sum(t["values"] for t in tables),
        "reported": sum(t["reported"] for t in tables),
        "runnable": {tier: sum(t["runnable"][tier] for t in tables) for tier in TIERS},
        "paper_data_here": sum(t["paper_data_here"] for t in tables),
    }
    missing_units = [
        {"kind": k, "name": n, "cells": v["cells"], "tables": sorted(v["tables"]), "why": planned_reason(k, n)}
        for (k, n), v in sorted(missing.items(), key=lambda kv: (-kv[1]["cells"], kv[0]))
    ]
    rejected_configs = [{"error": k, "cells": v["cells"], "tables": sorted(v["tables"]), "tiers": sorted(v["tiers"])}
                        for k, v in sorted(rejected.items(), key=lambda kv: -kv[1]["cells"])]
    unavailable_cells = [{"tier": t, "reason": w, "cells": v["cells"], "tables": sorted(v["tables"])}
                         for (t, w), v in sorted(unavailable.items(), key=lambda kv: (kv[0][0], -kv[1]["cells"]))]
    verdicts.save()
    out = {"tables": tables, "total": total, "missing_units": missing_units, "rejected_configs": rejected_configs,
           "unavailable_cells": unavailable_cells, "figures": figures,
           "implemented": {k: sorted(v) for k, v in have.items()},
           "datasets_missing_here": {n: why for n, why in sorted(here.items()) if why}}
    if verdicts.unchecked:  # counted as runnable: the spec runs them, only the task's check could not run here
        out["unchecked_configs"] = verdicts.unchecked
    return out


def render_coverage(cov: dict[str, Any]) -> str:
    rows = [[t["id"], t["cells"], t["values"], t["reported"], t["runnable"]["paper"], t["paper_data_here"],
             t["runnable"]["reduced"], t["runnable"]["smoke"], len(t["missing"])] for t in cov["tables"]]
    tot = cov["total"]
    rows.append(["TOTAL", tot["cells"], tot["values"], tot["reported"], tot["runnable"]["paper"],
                 tot["paper_data_here"], tot["runnable"]["reduced"], tot["runnable"]["smoke"], ""])
    lines = [tabulate(rows, headers=["table", "cells", "values", "reported", "runnable:paper", "paper:data here",
                                     "runnable:reduced", "runnable:smoke", "missing units"]), ""]
    if cov["datasets_missing_here"]:
        lines.append("Datasets the paper tier needs that are not under the data root here "
                     "(`pubench prepare` says what to place):")
        lines += [textwrap.fill(f"{n}: {' '.join(why.split())}", 110, initial_indent="  ", subsequent_indent="    ",
                                break_long_words=False, break_on_hyphens=False)
                  for n, why in cov["datasets_missing_here"].items()]  # whole: it names the files to place
        lines.append("")
    if cov["missing_units"]:
        lines.append("Units named by specs that the code does not implement yet (cells blocked at paper tier):")
        lines.append(tabulate([[u["kind"], u["name"], u["cells"], ", ".join(u["tables"]), u["why"] or ""]
                               for u in cov["missing_units"]], headers=["kind", "name", "cells", "tables", "planned"]))
        lines.append("")
    if cov["unavailable_cells"]:
        lines.append("Cells a tier does not run although the code has every unit they need, and why:")
        lines.append(tabulate([[u["tier"], u["cells"], ", ".join(u["tables"]), u["reason"]]
                               for u in cov["unavailable_cells"]], headers=["tier", "cells", "tables", "reason"],
                              maxcolwidths=[None, None, 40, 70]))  # wrapped, never cut
        lines.append("")
    if cov["rejected_configs"]:
        lines.append("Cells whose config a task rejects (a feature the code does not support yet, or a spec error):")
        lines.append(tabulate([[r["cells"], ", ".join(r["tiers"]), ", ".join(r["tables"]), r["error"]]
                               for r in cov["rejected_configs"]], headers=["cells", "tiers", "tables", "error"]))
        lines.append("")
    if cov.get("unchecked_configs"):
        lines.append(f"{cov['unchecked_configs']} cell configs were not checked by their task here (its code cannot "
                     "be imported: is torch installed?); they are counted as runnable.")
        lines.append("")
    figs = cov.get("figures")
    if figs:
        lines.append(f"Figures of the five papers: {figs['audited']} (experiments/_figures.yaml), {figs['registered']} "
                     f"registered; the {len(figs['left_out'])} without a spec have no numbers or measured curves of "
                     "their own:")
        lines.append(tabulate([[PAPERS[f["paper"]].split(" ", 1)[0] + " " + f["paper"], f["figure"], f["why"]]
                               for f in figs["left_out"]], headers=["paper", "figure", "why no spec"],
                              maxcolwidths=[None, None, 90]))
        lines.append("")
    share = {x: f"{100 * tot['runnable'][x] / tot['cells']:.0f}%" if tot["cells"] else "-" for x in TIERS}
    lines.append(f"{tot['tables']} tables/figures, {tot['cells']} cells, {tot['reported']} reported values; "
                 f"runnable cells: paper {tot['runnable']['paper']} ({share['paper']}), reduced "
                 f"{tot['runnable']['reduced']} ({share['reduced']}), smoke {tot['runnable']['smoke']} ({share['smoke']})")
    return "\n".join(lines) + "\n"
