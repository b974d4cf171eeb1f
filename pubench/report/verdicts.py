"""Verdict pages: per paper, its main claims, the best evidence at each tier, and what settling
each open one would cost, generated from the store (no hand-typed figure).

The main claims of a paper are the claims of its main tables (``experiments/_verdicts.yaml``;
a claim revised after results counts as first registered, as in the reports). For each claim
and tier with records: the qualified outcome (:mod:`pubench.report.checks`), the deciding
pair's difference Δ (> 0 in the claimed direction), its p-value, its minimum detectable
difference and seeds. The **verdict** is read from the highest tier whose outcome is tested
(paper over reduced): ``holds`` or ``fails`` where significant, else ``open`` (a claim whose
regime is unknown is open). Every tier's outcome is printed beside it, and where the regime
rule's revision (2026-12-07) changes a claim's outcome, its outcome under the rule as first
registered too; the pages count the claims under both rules.

**Reasons** beside an outcome: where the deciding pair's cells carry a written reason (a tier's
``one_class_why`` or ``cell_why``, a regime block's ``why``), the page prints it with the cells'
figures measured at render time.

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
from pubench.report.checks import NOT_IN_REGIME, REGIME_UNKNOWN, ClaimCheck, claim_checks, claim_fmt, describe
from pubench.report.collect import TableResult, collect
from pubench.report.ladders import claim_ladders, ladder_section, steps_text, trend_text
from pubench.report.layout import one_class_measured
from pubench.report.regime import RULE_REVISION, RegimeMap
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
    first_rule_status: str = ""  # the status under the regime rule as first registered, where it differs
    reasons: tuple[str, ...] = ()  # written reasons of the deciding pair's cells, with figures measured now


@dataclass(frozen=True)
class ClaimVerdict:
    spec_id: str
    text: str
    checked: str
    verdict: str
    decided_at: str | None
    evidence: tuple[TierEvidence, ...]
    first_rule_verdict: str = ""  # the verdict under the regime rule as first registered
    first_rule_decided_at: str | None = None


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
    if c.status == REGIME_UNKNOWN:
        return "the regime first: seeds of the block's reference rows (see the report's Regime section)"
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


def _verdict_of(c: ClaimCheck, first_rule: bool = False) -> str:
    status = c.first_rule_status if first_rule else c.status
    if status == HOLDS:
        return HOLD
    if status == FAILS:  # the weakest pair of those the rule keeps: significant the other way, or open
        from pubench.report.checks import qualify
        i = qualify(c, c.first_rule_out, [])[1] if first_rule and c.first_rule_out is not None else c.decisive
        t = None if i is None else c.tests[i]
        if t is not None and t.opposite_significant:
            return FAIL
    return OPEN


def cell_figures(res: TableResult, cell: tuple[str, str], metric: str, fmt: str) -> str:
    """A cell's figures as the store holds them now: the metric's mean ± std over its seeds and the
    mean test AUC (else balanced accuracy) where the records carry binary metrics."""
    stats = res.get(*cell, metric)
    if stats is None:
        return "no records"
    label = res.spec.metrics[metric].label if metric in res.spec.metrics else metric
    text = f"{label} {format(stats.mean, fmt)}" + ("" if stats.std is None else f" ± {format(stats.std, fmt)}")
    text += f" ({stats.n} seed{'s' if stats.n != 1 else ''})"
    aucs = [a for a, _ in res.discrimination.get(cell, {}).values() if a is not None]
    if aucs:
        text += f", test AUC {sum(aucs) / len(aucs):.1f}"
    return text


def claim_reasons(c: ClaimCheck, res: TableResult) -> list[str]:
    """The written reasons covering the cells of the pair that decides ``c`` (and of its failing
    pairs), each with the cells' figures measured from the records now: ``cell_why`` and
    ``one_class_why`` entries of the tier, and the ``why`` of the regime blocks those cells lie in."""
    spec, tier = res.spec, res.tier
    if c.claim.kind == "curve_rises" or not c.tests:
        return []
    picked = [i for i in dict.fromkeys([c.decisive, *(i for i, t in enumerate(c.tests) if t.outcome == FAILS)])
              if i is not None]
    cells = list(dict.fromkeys(cell for i in picked for cell in _cells(c, c.tests[i])))
    fmt = claim_fmt(c.claim, spec)
    by_reason: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for cell in cells:
        for kind, hit in (("cell_why", spec.cell_reason(tier, *cell)), ("one_class_why", spec.one_class_reason(tier, *cell))):
            if hit is not None and (kind == "cell_why" or res.degenerate.get(cell)):
                by_reason.setdefault((kind, hit[1]), []).append(cell)
    out = []
    for (kind, why), where in by_reason.items():
        if kind == "cell_why":
            measured = "; ".join(f"{r} at {col}: {cell_figures(res, (r, col), c.claim.metric, fmt)}" for r, col in where)
        else:
            measured = one_class_measured(res, where)
        out.append(f"{', '.join(f'{r} at {col}' for r, col in where)}: {why.strip()} (measured now: {measured})")
    regime = RegimeMap(res)
    for name, why in dict.fromkeys((v.block.name, v.block.why_at(tier)) for cell in cells for v in regime.of(*cell)
                                   if v.block.why_at(tier)):
        out.append(f"regime block {name}: {why.strip()}")
    return out


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
            evidence, verdict, decided, first_verdict, first_decided = [], OPEN, None, OPEN, None
            for tier, c, res in rows:  # paper first: the highest tier with a tested outcome gives the verdict
                v = _verdict_of(c)
                if decided is None and c.status != NOT_TESTABLE:
                    verdict, decided = v, tier
                if first_decided is None and c.first_rule_status != NOT_TESTABLE:
                    first_verdict, first_decided = _verdict_of(c, first_rule=True), tier
                t, pw = c.decisive_link, c.decisive_power
                fmt = claim_fmt(c.claim, spec)
                evidence.append(TierEvidence(
                    tier, c.status, "—" if t is None else format(t.diff, "+" + fmt),
                    "—" if t is None or t.p is None else fmt_p(t.p_opposite if t.outcome == FAILS else t.p),
                    "—" if pw is None or pw.mdd is None else format(pw.mdd, fmt), 0 if t is None else t.n,
                    _settle(c, res, store, v), c.first_rule_status if c.rule_changed else "",
                    tuple(claim_reasons(c, res))))
            out.append(ClaimVerdict(sid, claim.text, describe(claim, spec), verdict, decided if verdict != OPEN else None,
                                    tuple(evidence), first_verdict,
                                    first_decided if first_verdict != OPEN else None))
    return out


HEADERS = ["table", "claim", "checked", "verdict", "tier", "ours", "Δ", "p", "MDD", "n", "to settle", "why"]


LEGEND = ("Generated by `pubench verdicts` from the committed store; every figure below is recomputed on each "
          "run (docs/reports.md, 'Reading a claim'). The main claims are the claims of the paper's main tables "
          "(experiments/_verdicts.yaml); a claim revised after results counts as first registered. verdict: "
          "holds / fails where significant at the highest tier with a tested outcome (paper over reduced), else "
          "open (regime unknown, not in regime and underpowered outcomes are open); every tier's outcome is its own "
          "row. ours: the outcome under the current regime rule; where the rule's revision of 2026-12-07 changes it, "
          "the outcome under the rule as first registered follows in brackets. Δ: the deciding pair's mean difference, > 0 in the claimed direction; p: its one-sided p (of the "
          "opposite direction for a failure); MDD: what its seeds detect with 80% power; to settle: seeds per "
          "cell at which the observed |Δ| would be detected at the observed spread, and what the missing jobs "
          "cost, each at the median wall time of its cell's records (one core per job); why: the written reasons "
          "covering the deciding cells, listed below the table with the cells' figures measured at render time.")


def verdict_rows(verdicts: list[ClaimVerdict], notes: list[str] | None = None) -> list[list[str]]:
    """The table's rows; each evidence row's reasons are appended to ``notes`` (numbered from 1)
    and referenced in its ``why`` column."""
    rows, notes = [], [] if notes is None else notes
    for v in verdicts:
        first = True
        for e in v.evidence or (TierEvidence("—", "no results", "—", "—", "—", 0, "run it"),):
            refs = []
            for reason in e.reasons:
                if reason not in notes:
                    notes.append(reason)
                refs.append(f"[{notes.index(reason) + 1}]")
            status = e.status + (f" [first rule: {e.first_rule_status}]" if e.first_rule_status else "")
            rows.append([v.spec_id if first else '"', v.text if first else '"', v.checked if first else '"',
                         _verdict_text(v) if first else '"',
                         e.tier, status, e.delta, e.p, e.mdd, str(e.seeds), e.settle, " ".join(refs) or "—"])
            first = False
    return rows


def _verdict_text(v: ClaimVerdict) -> str:
    text = v.verdict + (f" ({v.decided_at})" if v.decided_at else "")
    if (v.first_rule_verdict, v.first_rule_decided_at) != (v.verdict, v.decided_at) and v.first_rule_verdict:
        text += f" [first rule: {v.first_rule_verdict}" + (f" ({v.first_rule_decided_at})"
                                                          if v.first_rule_decided_at else "") + "]"
    return text


def counts_of(verdicts: list[ClaimVerdict], first_rule: bool = False) -> dict[str, int]:
    key = (lambda v: v.first_rule_verdict or v.verdict) if first_rule else (lambda v: v.verdict)
    return {"total": len(verdicts)} | {k: sum(key(v) == k for v in verdicts) for k in (HOLD, FAIL, OPEN)}


def _counts_line(verdicts: list[ClaimVerdict]) -> str:
    now, first = counts_of(verdicts), counts_of(verdicts, first_rule=True)
    text = f"holds {now[HOLD]}, fails {now[FAIL]}, open {now[OPEN]}"
    if now != first:
        text += (f" (under the regime rule as first registered: holds {first[HOLD]}, fails {first[FAIL]}, "
                 f"open {first[OPEN]})")
    return text


def render_paper(paper: str, title: str, verdicts: list[ClaimVerdict], agreements: dict[str, str]) -> str:
    from tabulate import tabulate

    lines = [f"# Verdicts: {paper} ({title})", "", LEGEND, "",
             f"Main claims: {len(verdicts)}; {_counts_line(verdicts)}.", ""]
    if any(e.first_rule_status for v in verdicts for e in v.evidence):
        lines += [f"The {RULE_REVISION} (experiments/_verdicts.yaml, `rule_revisions`).", ""]
    if agreements:
        lines += ["Order agreement with the paper's pairs (`pubench agreement`): "
                  + "; ".join(f"{t}: {a}" for t, a in agreements.items()), ""]
    notes: list[str] = []
    rows = verdict_rows(verdicts, notes)
    lines.append(tabulate(rows, headers=HEADERS, tablefmt="github", disable_numparse=True) if rows else "(no claims)")
    if notes:
        lines += ["", "Reasons beside the outcomes (written in the specs; figures measured now from the records):", ""]
        lines += [f"{i}. {n}" for i, n in enumerate(notes, 1)]
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


def render_status(pages: dict[str, tuple[str, list[ClaimVerdict], dict[str, str]]],
                  ladders: dict[tuple[str, str], list[tuple[str, str, str]]] | None = None) -> str:
    """docs/status.md: the verdict pages' counts, one line per paper and claim (generated)."""
    lines = ["# Research status: what the committed runs show", "",
             "Generated by `pubench verdicts --status docs/status.md` from the committed store: every figure here is "
             "recomputed, and tests/report/test_verdicts.py fails when this file differs from a fresh render. The full "
             "pages, with each tier's evidence and what settling an open claim would cost, are "
             "reports/verdicts/<paper>.md (and the site's verdict pages). The dated history of earlier findings, "
             "each figure as of its date, is docs/history.md.", ""]
    all_verdicts = [v for _, verdicts, _ in pages.values() for v in verdicts]
    lines += ["Each claim's verdict is read from the highest tier with a tested outcome (paper over reduced); the "
              "outcome at every tier that tested it follows, side by side. "
              f"The {RULE_REVISION} (experiments/_verdicts.yaml); all main claims: {_counts_line(all_verdicts)}.", ""]
    for paper, (title, verdicts, agreements) in pages.items():
        lines += [f"## `{paper}`: {title}", "",
                  f"Main claims {len(verdicts)}: {_counts_line(verdicts)}"
                  + (" (order agreement: " + "; ".join(f"{t} {a}" for t, a in agreements.items()) + ")"
                     if agreements else "") + ".", ""]
        for v in verdicts:
            where = "; ".join(f"{e.tier}: {e.status}" + (f" [first rule: {e.first_rule_status}]"
                                                         if e.first_rule_status else "")
                              + f", Δ {e.delta}, {e.p}" for e in v.evidence) or "no results"
            why = " Why: see the verdict page's reasons." if any(e.reasons for e in v.evidence) else ""
            budget = "".join(f" {t}." for better, worse, t in (ladders or {}).get((v.spec_id, v.text), [])
                             if better in v.checked and (worse in v.checked or "best of its rows" in v.checked))
            lines.append(f"- **{_verdict_text(v)}** `{v.spec_id}`: {v.text} [{v.checked}] ({where}).{why}{budget}")
        lines.append("")
    return "\n".join(lines)


def render_pages(specs: dict[str, Spec], store: ResultStore, tables: dict[str, list[str]], papers: list[str],
                 titles: dict[str, str] | None = None) -> tuple[dict[str, str], str]:
    """paper -> its verdict page (markdown), and the one-page summary of ``papers``."""
    summary = {}
    pages = {}
    ladders: dict[tuple[str, str], list[tuple[str, str, str]]] = {}  # claim -> (better, worse, line) per ladder
    for paper in papers:
        title = (titles or {}).get(paper) or paper
        verdicts = paper_verdicts(paper, specs, store, tables[paper])
        agreements = paper_agreements(specs, store, tables[paper])
        pages[paper] = render_paper(paper, title, verdicts, agreements) + ladder_section(verdicts, specs, store)
        summary[paper] = (title, verdicts, agreements)
        for lad, r in claim_ladders(verdicts, specs, store):
            ladders.setdefault((lad.spec, lad.claim), []).append(
                (lad.better, lad.worse, f"Budget ladder {lad.id} ({lad.better} vs {lad.worse}, {steps_text(r)}): "
                                        f"{trend_text(r)}"))
    return pages, render_status(summary, ladders)
