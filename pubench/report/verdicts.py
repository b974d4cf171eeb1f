"""Verdict pages: per paper, its main claims, the best evidence at each tier, and what settling
each open one would cost, generated from the store (no hand-typed figure).

The main claims of a paper are the claims of its main tables (``experiments/_verdicts.yaml``;
a claim revised after results counts as first registered, as in the reports). For each claim
and tier with records: the qualified outcome (:mod:`pubench.report.checks`), the deciding
pair's difference Δ (> 0 in the claimed direction), its p-value, its minimum detectable
difference and seeds. The **verdict** is read from the highest tier whose outcome is tested
(paper over reduced): ``holds`` or ``fails`` where significant, else ``open``.

**Cost to settle** an open claim: the seeds at which its deciding pair's observed difference
|Δ| would be detected at the observed spread (80% power, 5% one-sided; :mod:`pubench.report.power`)
times the cells the claim compares, the seeds each cell lacks times the median wall time of
that cell's records at that tier (a cell without records: the median over the claim's cells;
core-hours: one thread per job). A claim not in regime is settled by
a config in regime, not by seeds; one whose difference would need more than 1,000 seeds is
not settled by seeds either.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from pubench.registry.spec import Spec
from pubench.report.agreement import agreement
from pubench.report.checks import NOT_IN_REGIME, ClaimCheck, claim_checks, claim_fmt, describe
from pubench.report.collect import collect
from pubench.report.compute import fmt_hours
from pubench.report.power import MAX_SEEDS, seeds_needed_paired, seeds_needed_welch
from pubench.report.stats import FAILS, HOLDS, NOT_TESTABLE, fmt_p
from pubench.store.store import ResultStore
from pubench.utils.yamlio import parse_mapping, read_text

FILE_NAME = "_verdicts.yaml"
HOLD, FAIL, OPEN = "holds", "fails", "open"
VERDICT_TIERS = ("paper", "reduced")  # best evidence first


@dataclass(frozen=True)
class TierEvidence:
    tier: str
    status: str
    delta: str
    p: str
    mdd: str
    seeds: int
    settle: str  # what deciding it would take at this tier


@dataclass(frozen=True)
class ClaimVerdict:
    spec_id: str
    text: str
    checked: str
    verdict: str
    decided_at: str | None
    evidence: tuple[TierEvidence, ...]


def _entries(experiments: Path) -> dict:
    path = experiments / FILE_NAME
    data = parse_mapping(read_text(path), path) if path.exists() else {}
    return data.get("papers") or {}


def main_tables(experiments: Path) -> dict[str, list[str]]:
    """paper id -> its main tables' spec ids, from ``experiments/_verdicts.yaml``."""
    return {paper: list(entry.get("main") or []) for paper, entry in _entries(experiments).items()}


def paper_titles(experiments: Path) -> dict[str, str]:
    return {paper: entry.get("title") or paper for paper, entry in _entries(experiments).items()}


def _median_walls_h(store: ResultStore, spec: Spec, tier: str, cells: set[tuple[str, str]]) -> dict:
    """cell -> the median wall time of its records at ``tier``, in hours (cells without records absent)."""
    walls: dict[tuple[str, str], list[float]] = {}
    for rec in store.scan(tier, spec.id, fields=("job", "timing")).records:
        cell, wall = (rec["job"]["row"], rec["job"]["col"]), (rec.get("timing") or {}).get("wall_s")
        if cell in cells and isinstance(wall, (int, float)) and not isinstance(wall, bool):
            walls.setdefault(cell, []).append(wall)
    return {cell: statistics.median(w) / 3600 for cell, w in walls.items()}


def _settle(c: ClaimCheck, res, store: ResultStore, verdict: str) -> str:
    if verdict != OPEN:
        return "decided"
    if c.status == NOT_IN_REGIME:
        return "a config in regime (see the report's Regime section), not seeds"
    t, pw = c.decisive_link, c.decisive_power
    if t is None or t.outcome == NOT_TESTABLE or pw is None or pw.sd is None:
        return "at least 2 seeds per cell"
    target = abs(t.diff)
    if pw.paired:
        need = seeds_needed_paired(pw.sd, target)
    else:
        need = seeds_needed_welch(pw.sd, pw.sd, target)
    if need is None or need > MAX_SEEDS:
        return f"more than {MAX_SEEDS} seeds at the observed spread (|Δ| = {target:.3g})"
    cells = {cell for test in c.tests for cell in _cells(c, test)}
    missing_per_cell = {cell: max(0, need - res.seeds_done.get(cell, 0)) for cell in cells}
    # each cell's missing jobs at its own cost: a claim over a fast block and a slow one needs the slow one's seeds
    walls = _median_walls_h(store, res.spec, res.tier, cells)
    fallback = statistics.median(walls.values()) if walls else None
    cost = "" if fallback is None else \
        f", about {fmt_hours(sum(n * walls.get(cell, fallback) for cell, n in missing_per_cell.items()))} core-hours"
    return f"{need} seeds per cell to detect |Δ| = {target:.3g} ({sum(missing_per_cell.values())} more jobs{cost})"


def _cells(c: ClaimCheck, test) -> list[tuple[str, str]]:
    """The two cells a pair compares (rows or columns named by the test, at its line)."""
    if c.claim.kind in ("best_col", "col_order"):
        return [(test.where, test.better), (test.where, test.worse)]
    if c.claim.kind == "curve_rises":
        return []
    return [(test.better, test.where), (test.worse, test.where)]


def _verdict_of(c: ClaimCheck) -> str:
    t = c.decisive_link
    if c.status == HOLDS:
        return HOLD
    if c.status == FAILS and t is not None and t.opposite_significant:
        return FAIL
    return OPEN


def paper_verdicts(paper: str, specs: dict[str, Spec], store: ResultStore, tables: list[str]) -> list[ClaimVerdict]:
    out = []
    for sid in tables:
        spec = specs.get(sid)
        if spec is None:
            continue
        by_claim: dict[object, list[tuple[str, ClaimCheck, object]]] = {}
        for tier in VERDICT_TIERS:
            if tier not in spec.tiers:
                continue
            res = collect(spec, tier, store)
            if not res.seeds_done:
                continue
            for c in claim_checks(res):
                if c.counted:
                    by_claim.setdefault(c.claim, []).append((tier, c, res))
        counted = [c.original if c.original is not None else c for c in spec.claims]
        for claim in dict.fromkeys(counted):
            rows = by_claim.get(claim, [])
            evidence, verdict, decided = [], OPEN, None
            for tier, c, res in rows:  # paper first: the highest tier with a tested outcome gives the verdict
                v = _verdict_of(c)
                if decided is None and c.status != NOT_TESTABLE:
                    verdict, decided = v, tier
                t, pw = c.decisive_link, c.decisive_power
                fmt = claim_fmt(c.claim, spec)
                evidence.append(TierEvidence(
                    tier, c.status, "—" if t is None else format(t.diff, "+" + fmt),
                    "—" if t is None or t.p is None else fmt_p(t.p_opposite if t.outcome == FAILS else t.p),
                    "—" if pw is None or pw.mdd is None else format(pw.mdd, fmt), 0 if t is None else t.n,
                    _settle(c, res, store, v)))
            out.append(ClaimVerdict(sid, claim.text, describe(claim, spec), verdict, decided if verdict != OPEN else None,
                                    tuple(evidence)))
    return out


HEADERS = ["table", "claim", "checked", "verdict", "tier", "ours", "Δ", "p", "MDD", "n", "to settle"]


LEGEND = ("Generated by `pubench verdicts` from the committed store; every figure below is recomputed on each "
          "run (docs/reports.md, 'Reading a claim'). The main claims are the claims of the paper's main tables "
          "(experiments/_verdicts.yaml); a claim revised after results counts as first registered. verdict: "
          "holds / fails where significant at the highest tier with a tested outcome (paper over reduced), else "
          "open. Δ: the deciding pair's mean difference, > 0 in the claimed direction; p: its one-sided p (of the "
          "opposite direction for a failure); MDD: what its seeds detect with 80% power; to settle: seeds per "
          "cell at which the observed |Δ| would be detected at the observed spread, and what the missing jobs "
          "cost, each at the median wall time of its cell's records (one core per job).")


def verdict_rows(verdicts: list[ClaimVerdict]) -> list[list[str]]:
    rows = []
    for v in verdicts:
        first = True
        for e in v.evidence or (TierEvidence("—", "no results", "—", "—", "—", 0, "run it"),):
            rows.append([v.spec_id if first else '"', v.text if first else '"', v.checked if first else '"',
                         (v.verdict + (f" ({v.decided_at})" if v.decided_at else "")) if first else '"',
                         e.tier, e.status, e.delta, e.p, e.mdd, str(e.seeds), e.settle])
            first = False
    return rows


def counts_of(verdicts: list[ClaimVerdict]) -> dict[str, int]:
    return {"total": len(verdicts)} | {k: sum(v.verdict == k for v in verdicts) for k in (HOLD, FAIL, OPEN)}


def render_paper(paper: str, title: str, verdicts: list[ClaimVerdict], agreements: dict[str, str]) -> str:
    from tabulate import tabulate

    counts = counts_of(verdicts)
    lines = [f"# Verdicts: {paper} ({title})", "", LEGEND, "",
             f"Main claims: {len(verdicts)}; holds {counts[HOLD]}, fails {counts[FAIL]}, open {counts[OPEN]}.", ""]
    if agreements:
        lines += ["Order agreement with the paper's pairs (`pubench agreement`): "
                  + "; ".join(f"{t}: {a}" for t, a in agreements.items()), ""]
    rows = verdict_rows(verdicts)
    lines.append(tabulate(rows, headers=HEADERS, tablefmt="github", disable_numparse=True) if rows else "(no claims)")
    return "\n".join(lines) + "\n"


def paper_agreements(specs: dict[str, Spec], store: ResultStore, tables: list[str]) -> dict[str, str]:
    """tier -> the order agreement of the paper's main tables pooled, as text."""
    from pubench.report.agreement import overall

    out = {}
    for tier in VERDICT_TIERS:
        ags = [agreement(collect(specs[s], tier, store)) for s in tables if s in specs and tier in specs[s].tiers
               and collect(specs[s], tier, store).seeds_done]
        if ags:
            out[tier] = overall(ags)["all"].text()
    return out


def render_status(pages: dict[str, tuple[str, list[ClaimVerdict], dict[str, str]]]) -> str:
    """docs/status.md: the verdict pages' counts, one line per paper and claim (generated)."""
    lines = ["# Research status: what the committed runs show", "",
             "Generated by `pubench verdicts --status docs/status.md` from the committed store: every figure here is "
             "recomputed, and tests/unit/test_verdicts.py fails when this file differs from a fresh render. The full "
             "pages, with each tier's evidence and what settling an open claim would cost, are "
             "reports/verdicts/<paper>.md (and the site's verdict pages). The dated history of earlier findings, "
             "each figure as of its date, is docs/history.md.", ""]
    for paper, (title, verdicts, agreements) in pages.items():
        counts = {k: sum(v.verdict == k for v in verdicts) for k in (HOLD, FAIL, OPEN)}
        lines += [f"## `{paper}`: {title}", "",
                  f"Main claims {len(verdicts)}: holds {counts[HOLD]}, fails {counts[FAIL]}, open {counts[OPEN]}"
                  + (" (order agreement: " + "; ".join(f"{t} {a}" for t, a in agreements.items()) + ")"
                     if agreements else "") + ".", ""]
        for v in verdicts:
            best = v.evidence[0] if v.evidence else None  # the highest tier with results
            where = "no results" if best is None else f"{best.tier}: {best.status}, Δ {best.delta}, {best.p}"
            lines.append(f"- **{v.verdict}** `{v.spec_id}`: {v.text} [{v.checked}] ({where})")
        lines.append("")
    return "\n".join(lines)


def render_pages(specs: dict[str, Spec], store: ResultStore, tables: dict[str, list[str]], papers: list[str],
                 titles: dict[str, str] | None = None) -> tuple[dict[str, str], str]:
    """paper -> its verdict page (markdown), and the one-page summary of ``papers``."""
    summary = {}
    pages = {}
    for paper in papers:
        title = (titles or {}).get(paper) or paper
        verdicts = paper_verdicts(paper, specs, store, tables[paper])
        agreements = paper_agreements(specs, store, tables[paper])
        pages[paper] = render_paper(paper, title, verdicts, agreements)
        summary[paper] = (title, verdicts, agreements)
    return pages, render_status(summary)
