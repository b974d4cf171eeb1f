"""The texts every renderer prints about the evidence behind a claim: the regime verdicts of a
report, a claim's qualified outcome beside its plain test and power figures, the order
agreement, and their legends (plain text; markdown, LaTeX and HTML escape and lay them out)."""

from __future__ import annotations

from dataclasses import dataclass

from pubench.report.checks import NOT_IN_REGIME, REGIME_UNKNOWN, UNDERPOWERED, ClaimCheck
from pubench.report.collect import TableResult
from pubench.report.oneclass import CHANCE, NEAR_ONE_CLASS
from pubench.report.power import MAX_SEEDS, POWER, fmt_seeds
from pubench.report.regime import (DEFAULT_BOUND, FIRST, IN, UNTESTED, RegimeVerdict, original_verdicts, regime_verdicts,
                                   RULE_REVISION, rule_changed, share_bound)
from pubench.report.stats import ALPHA, fmt_p, pair_text

DASH = "—"

CLAIM_STATUS_LEGEND = (
    f"ours: the claim's outcome read against the evidence around it: `{NOT_IN_REGIME}` = some of its pairs lie in "
    "a block (column) whose reference rows do not work at this tier (see Regime), so a result there says nothing "
    "about the paper's methods (a pair that fails where the block is in regime still makes the claim fail); "
    f"`{REGIME_UNKNOWN}` = the same where the block's regime is not established (short of power, or not testable): "
    "the claim counts as open; "
    f"`{UNDERPOWERED}` = it fails only by pairs that are not significant either way (in regime or out) and whose "
    "paper gap is below the difference our seeds can detect; a pair that fails significantly where its block is in "
    "regime makes the claim fail, and one that fails significantly out of regime or where the regime is unknown is "
    "printed beside the label. Where the regime rule's revision of 2026-12-07 changes a claim's outcome, the outcome "
    "under the rule as first registered is printed beside it. At the paper tier no block relabels a claim: a reference below its baseline there is a "
    "finding about the paper's setup, printed beside the outcome. A claim revised after results is shown as first "
    "registered too, and that original is the one counted. test: the plain result of the pair that decides the claim (its weakest pair; "
    "where some pairs are out of regime and an in-regime pair fails, the weakest in-regime one), never hidden by "
    f"the label. MDD: the smallest true difference that pair's test detects with {POWER:.0%} power at "
    f"{ALPHA:g} one-sided, from our seeds' spread (paired differences' sd, or Welch); paper gap: the printed means' "
    "difference in the claimed direction; seeds: how many seeds that gap would need at our spread (capped at "
    f"{MAX_SEEDS})."
)

REGIME_LEGEND = (
    "Each block's methods modify one base that must work before their differences mean anything. trained: the "
    "reference row beats the baseline row (e.g. an untrained encoder) by more than the margin, a one-sided t-test "
    f"over seeds at {ALPHA:g} (paired when the splits match); two_classes: the reference rows' seeds are not "
    f"near-one-class (test recall or specificity under {NEAR_ONE_CLASS:.0%}) at a rate significantly above the "
    f"block's bound ({float(DEFAULT_BOUND):.0%} unless it says: an exact one-sided binomial test at {ALPHA:g}; over the "
    "bound without significance: not established) and their test AUC (else balanced accuracy) beats chance, "
    f"{CHANCE:g}, by more than the block's margin (one-sided one-sample t-test). Regime rule revised 2026-12-07 "
    "(experiments/_verdicts.yaml): as first registered, any near-one-class reference seed put a block out, so more "
    "seeds could only push a block out of regime; its verdict is printed beside the current one where they differ. "
    "regime not established (power): the mean is over the margin (or the share over the bound) without significance; "
    "the claims there read regime unknown. Decided from those rows and the seeds' spread only, never from a claim; "
    "checked the same way at every tier, and at the paper tier a block out of regime is a finding about the paper's "
    "own setup."
)

AGREEMENT_LEGEND = (
    "Of the paper's pairs of methods (per column within a row group, per metric; both numbers printed and "
    "different, ours present), the share our means order as the paper does, by the paper's gap in the metric's "
    f"units and by whether our test of the pair (the direction our means show, one-sided, p < {ALPHA:g}) is "
    "significant; not tested: a cell with one seed. Chance alone orders half of them."
)


def check_text(v: RegimeVerdict) -> str:
    """``trained: SimCLR beats untrained encoder by > 10`` or ``two_classes: nnPU, at most 0%
    near-one-class, AUC > 50 + 5``."""
    b = v.block
    if b.check == "trained":
        return f"trained: {b.reference[0]} beats {b.baseline} by > {b.margin:g}"
    if v.rule == FIRST:
        share = f"at most {share_bound(b, FIRST):.0%} near-one-class"
    else:
        share = f"near-one-class rate not > {share_bound(b):.0%}"
    return f"two_classes: {', '.join(b.reference)}, {share}, AUC > {CHANCE:g} + {b.auc_margin:g}"


def verdict_text(v: RegimeVerdict) -> str:
    """The verdict as printed: at the paper tier an out-of-regime verdict is a finding."""
    return f"{v.verdict} (a finding: the paper's own config)" if v.finding else v.verdict


def regime_rows(res: TableResult, verdicts: list[RegimeVerdict] | None = None) -> list[list[str]]:
    """Per block and column: block, check, column, verdict, the numbers; a block revised after
    results is followed by its verdicts as first registered."""
    if verdicts is None:
        verdicts = regime_verdicts(res)
        originals = original_verdicts(res)
        changed = {(now.block.name, now.col): first for first, now in rule_changed(res)}
        verdicts = [v for b in res.spec.regime for v in
                    [*(y for x in verdicts if x.block.name == b.name
                       for y in (x, changed.get((x.block.name, x.col))) if y is not None),
                     *(x for x in originals if x.block.name == b.name)]]
    return [[v.block.name + (" (as first registered)" if v.original else "")
             + (" (regime rule as first registered)" if v.rule == FIRST else ""), check_text(v), v.col,
             verdict_text(v), v.numbers] for v in verdicts]


def regime_whys(res: TableResult) -> list[str]:
    """``block: reason`` for every block whose spec writes a reason for this tier."""
    return [f"{b.name}: {b.why_at(res.tier)}" for b in res.spec.regime if b.why_at(res.tier)]


def regime_revisions(res: TableResult) -> list[str]:
    """``block: added after results, DATE: why`` for every block a revision after results changed."""
    out = []
    for b in res.spec.regime:
        for r in b.revised:
            how = "added after results" if r.was is None else "revised after results (its first form is shown too)"
            out.append(f"{b.name}: {how}, {r.date}: {r.why}")
    if rule_changed(res):
        out.append(RULE_REVISION)
    return out


REGIME_HEADERS = ["block", "check", "column", "verdict", "numbers"]


def regime_summary(res: TableResult) -> list[str]:
    """Per block, how many of its columns are in regime at this tier: ``All Conv PU methods: 2/3 in
    regime`` (``, 1 not testable`` where some are); empty without blocks."""
    by: dict[str, list[RegimeVerdict]] = {}
    for v in regime_verdicts(res):
        by.setdefault(v.block.name, []).append(v)
    out = []
    for name, vs in by.items():
        n_in, n_untested = sum(v.verdict == IN for v in vs), sum(v.verdict == UNTESTED for v in vs)
        out.append(f"{name}: {n_in}/{len(vs)} in regime" + (f", {n_untested} not testable" if n_untested else ""))
    return out


@dataclass(frozen=True)
class ClaimRow:
    """One claim's printed fields (plain text)."""

    status: str
    test: str
    pair: str
    delta: str
    mdd: str
    paper_gap: str
    seeds: str
    paper: str
    detail: str


def claim_title(c: ClaimCheck) -> str:
    """A claim's text, marked where it was revised after results: the original is the one counted."""
    if c.revision is not None:
        return (f"{c.claim.text} [as first registered, the claim counted; revised after results on "
                f"{c.revision.date}: {c.revision.why}]")
    if c.claim.revised:
        r = c.claim.revised[0]
        how = "added after results" if r.was is None else "revised after results"
        return f"{c.claim.text} [{how} on {r.date}; not counted" + (", its original is" if r.was else "") + "]"
    return c.claim.text


def claim_row(c: ClaimCheck, fmt: str) -> ClaimRow:
    w, pw = c.decisive_link, c.decisive_power
    status = c.status
    blocks = c.regime_blocks if status == NOT_IN_REGIME else c.power_blocks if status == REGIME_UNKNOWN else []
    if blocks:
        status += f" ({'; '.join(blocks)})"
        sig = c.significant_out_of_regime
        if sig:
            status += "; fails significantly there: " + ", ".join(f"{t.where} ({fmt_p(t.p_opposite)})" for t in sig)
    if c.rule_changed:
        status += f" [regime rule as first registered: {c.first_rule_status}]"
    if c.finding_blocks:
        status += f"; finding: reference not above its baseline at the paper's config in {'; '.join(c.finding_blocks)}"
    if c.revision is not None:
        status = f"as first registered: {status}"
    elif c.claim.revised:
        status = f"revised after results, not counted: {status}"
    mdd = DASH if pw is None or pw.mdd is None else format(pw.mdd, fmt)
    gap = DASH if pw is None or pw.paper_gap is None else format(pw.paper_gap, "+" + fmt)
    seeds = DASH if pw is None else fmt_seeds(pw.seeds_needed)
    return ClaimRow(status, c.test_text, DASH if w is None else pair_text(w),
                    DASH if w is None else format(w.diff, "+" + fmt), mdd, gap, seeds, c.paper_status, c.detail)
