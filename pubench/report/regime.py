"""Regime checks: is a block of the table in the regime where its methods work?

A claim compares methods that modify one working base (a contrastive loss on an encoder that
learns, a PU risk on a classifier that predicts both classes). Where the base does not work
(an encoder barely above an untrained one, a classifier that calls almost nothing positive)
a "fails" is noise, not evidence against the paper. A spec's ``regime:`` blocks
(:class:`pubench.registry.spec.RegimeBlock`) say which rows must work; this module checks
each block per column, at every tier the same way, from the block's reference and
baseline rows and the seeds' spread only, never from the claims under test:

* ``trained``: the reference row beats ``baseline`` (e.g. an untrained encoder) by more
  than ``margin`` in the metric's direction: a one-sided t-test of "gain > margin" over
  seeds (paired by seed index on equal splits, Welch otherwise; :mod:`pubench.report.stats`)
  with p < 0.05. ``in regime`` when it holds; ``regime not established (power)`` when the
  mean gain is over the margin but p >= 0.05 (too few seeds to tell, not a base that does not
  work: such a block relabels no claim); ``not in regime`` when the gain is not over the
  margin; ``not testable`` without 2 seeds in both cells.
* ``two_classes``: the reference rows' seeds with binary metrics in the column must not be
  near-one-class (test recall or specificity under 5%, :mod:`pubench.report.oneclass`) at a rate
  above the block's bound, **and** the reference rows must discriminate: their test AUC (else
  balanced accuracy; :func:`pubench.report.oneclass.separation`) beats chance, 50, by more than
  ``auc_margin`` (default 5 points), a one-sided one-sample t-test over their seeds at p < 0.05.
  ``not testable`` when no seed has binary metrics.

  How the near-one-class seeds are read is the **regime rule**, versioned (``RULES``; dated in
  ``experiments/_verdicts.yaml``, ``rule_revisions``). As first registered (``first``): at most
  ``max_share`` of the seeds (0 unless the block says) may be near-one-class, so with any seed
  collapsing at rate q > 0 a block stays in regime with probability (1 - q)^n: more seeds could only
  push it out. Since 2026-12-07 (``current``): the near-one-class share is tested against a bound
  (the block's ``max_share``, else ``DEFAULT_BOUND`` = 1/5, one of the paper's usual five trials),
  an exact one-sided binomial test of "rate > bound": ``not in regime`` when it is significant
  (p < 0.05); ``regime not established (power)`` when the share is over the bound without
  significance; within the bound the seeds' collapses do not decide, the AUC test does. At a rate
  below the bound more seeds never push a block out; above it they do, given enough seeds.

Under the current rule a claim whose pairs lie in a block whose regime is not established
(over a margin without significance, or not testable) reads ``regime unknown`` and counts as
open (:func:`pubench.report.checks.qualify`); as first registered such a block relabelled no
claim. Reports print the first rule's outcome beside the current one where they differ.

At the paper tier no block relabels a claim: the paper's own configuration is what the paper
claims about, so a reference that loses to its baseline there is a finding about that setup,
printed beside the claims it touches (:attr:`RegimeVerdict.finding`), not a reason to set
them aside.

A derived column (the paper's Mean) follows its sources: not in regime when any source
is, in regime when all are, else not testable.

In a table whose methods are its columns (``methods_in: cols``) a block's ``rows`` are
method columns and its ``cols`` the settings (table rows) it is checked in; the verdicts
read the cells transposed.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from fractions import Fraction

from pubench.registry.spec import RegimeBlock
from pubench.report.collect import TableResult, sample_std
from pubench.report.oneclass import AUC, BALANCED_ACCURACY, CHANCE
from pubench.report.stats import ALPHA, _one_sided_p, _t_sf, fmt_p, paired_values

IN, OUT, UNTESTED = "in regime", "not in regime", "not testable"
#: Over the margin in the mean, not significantly: more seeds would tell; it relabels no claim.
POWER = "regime not established (power)"
#: The tier whose blocks never relabel a claim (its config is the paper's own).
PAPER = "paper"
#: The regime rule's versions: ``first`` as registered with the blocks, ``current`` since its dated revision.
FIRST, CURRENT = "first", "current"
RULES = (FIRST, CURRENT)
#: The current rule's bound on a two_classes reference's near-one-class rate, where a block sets none: one seed in
#: five, one of the paper's usual five trials.
DEFAULT_BOUND = Fraction(1, 5)
#: The dated revision of the rule (in full, with the old rule and its reason: experiments/_verdicts.yaml).
RULE_REVISION = ("regime rule revised 2026-12-07, after results (applied to every block): a two_classes "
                 "reference's near-one-class share is tested against a bound (1/5 unless the block says; exact "
                 "one-sided binomial test) instead of allowing none, and a claim in a block whose regime is not "
                 "established reads regime unknown (open) instead of counting as in regime; the outcome under the "
                 "rule as first registered is printed beside each claim it changes")


def share_bound(block: RegimeBlock, rule: str = CURRENT) -> float:
    """The near-one-class rate a two_classes block allows under ``rule``."""
    if rule == FIRST:
        return block.max_share or 0.0
    return float(DEFAULT_BOUND) if block.max_share is None else block.max_share


def binomial_sf(k: int, n: int, q: float) -> float:
    """P(X >= k) for X ~ Binomial(n, q): the exact one-sided p of "rate > q" after k of n."""
    if k <= 0:
        return 1.0
    if q <= 0.0:
        return 0.0
    if q >= 1.0:
        return 1.0
    return min(1.0, sum(math.comb(n, i) * q ** i * (1.0 - q) ** (n - i) for i in range(k, n + 1)))


@dataclass(frozen=True)
class RegimeVerdict:
    """The verdict of one block in one column at one tier, with its numbers: ``gain`` (mean
    reference minus baseline, > 0 better), ``p`` (one-sided, of gain > margin), ``n`` (paired
    seeds, or the smaller cell's seeds), ``paired``; or ``near`` of ``seeds`` near-one-class
    seeds (two_classes). ``reason`` says why a verdict is not testable."""

    block: RegimeBlock
    tier: str
    col: str
    verdict: str
    gain: float | None = None
    p: float | None = None
    n: int = 0
    paired: bool = False
    near: int | None = None
    seeds: int | None = None
    reason: str = ""
    separation: float | None = None  # two_classes: the reference rows' mean AUC (or balanced accuracy), in %
    separation_kind: str = ""        # which of the two
    original: bool = False           # the verdict of a block as first registered (a revision changed it since)
    rule: str = CURRENT              # the regime rule it was checked under (RULES)
    share_p: float | None = None     # two_classes, current rule: the binomial p of "near-one-class rate > bound"

    @property
    def finding(self) -> bool:
        """Out of regime at the paper's own configuration: a finding about the paper's setup,
        printed beside the claims, never a label over them."""
        return self.verdict == OUT and self.tier == PAPER

    @property
    def numbers(self) -> str:
        """What the verdict rests on, e.g. ``gain +12.31 > 10 (paired, 3 seeds, p=0.012)`` or
        ``2 of 3 seeds near-one-class (at most 0% allowed)``."""
        b = self.block
        if self.verdict == UNTESTED:
            return self.reason
        if b.check == "two_classes":
            bound = share_bound(b, self.rule)
            if self.rule == FIRST:
                allowed = f"at most {bound:.0%} allowed"
            else:
                allowed = f"bound {bound:.0%}" + ("" if self.share_p is None else f", binomial {fmt_p(self.share_p)}")
            text = f"{self.near} of {self.seeds} seed(s) of {', '.join(b.reference)} near-one-class ({allowed})"
            if self.separation is not None:
                # The AUC test's own outcome: a block out for its near-one-class seeds can still
                # separate the classes significantly, and the sentence must not say otherwise.
                over = self.separation - CHANCE > b.auc_margin
                significant = self.p is not None and self.p < ALPHA
                sign = ("> " if significant else ">, not significantly, ") if over else "not > "
                p = f", {fmt_p(self.p)}" if self.p is not None else ", untested"
                text += (f"; {self.separation_kind} {self.separation:.1f} {sign}{CHANCE:g} + {b.auc_margin:g} "
                         f"({self.n} seed{'s' if self.n != 1 else ''}{p})")
            return text
        test = f"paired, {self.n} seeds" if self.paired else f"Welch, n={self.n}"
        sign = ">" if self.verdict == IN else ">, not significantly," if self.verdict == POWER else "not >"
        return f"gain {self.gain:+.2f} {sign} {b.margin:g} ({test}, {fmt_p(self.p)})"

    @property
    def text(self) -> str:
        return f"{self.verdict}: {self.numbers}"


def _cell(res: TableResult, method: str, setting: str) -> tuple[str, str]:
    """The (row, col) of a block's method in one of its settings."""
    return (setting, method) if res.spec.methods_in == "cols" else (method, setting)


def _trained(res: TableResult, b: RegimeBlock, col: str, rule: str = CURRENT) -> RegimeVerdict:
    m = res.spec.metrics[b.metric]
    ref, base = res.get(*_cell(res, b.reference[0], col), b.metric), res.get(*_cell(res, b.baseline, col), b.metric)
    if ref is None or base is None:
        missing = [r for r, s in ((b.reference[0], ref), (b.baseline, base)) if s is None]
        return RegimeVerdict(b, res.tier, col, UNTESTED, reason=f"no results for {', '.join(missing)}", rule=rule)
    a, c, paired = paired_values(ref, base)
    n = len(a) if paired else min(len(a), len(c))
    if n < 2:
        return RegimeVerdict(b, res.tier, col, UNTESTED, n=n, paired=paired,
                             reason="fewer than 2 seeds" + (" in common" if paired else " in a cell"), rule=rule)
    sign = 1.0 if m.higher_is_better else -1.0
    gain = sign * (statistics.fmean(a) - statistics.fmean(c))
    shifted = [x - sign * b.margin for x in a]  # H0: gain <= margin  <=>  (ref - margin) not better than base
    p = _one_sided_p(shifted, c, paired, m.higher_is_better, gain - b.margin)
    verdict = (IN if p < ALPHA else POWER) if gain > b.margin else OUT
    return RegimeVerdict(b, res.tier, col, verdict, gain=gain, p=p, n=n, paired=paired, rule=rule)


def _two_classes(res: TableResult, b: RegimeBlock, col: str, rule: str = CURRENT) -> RegimeVerdict:
    seeds = near = 0
    separations: list[tuple[float | None, float]] = []
    for row in b.reference:
        cell = _cell(res, row, col)
        binary = res.binary.get(cell, set())
        seeds += len(binary)
        near += len(set(res.degenerate.get(cell, {})) & binary)
        separations += [res.discrimination[cell][k] for k in sorted(binary) if k in res.discrimination.get(cell, {})]
    if not seeds:
        why = "no results" if not any(_cell(res, r, col) in res.seeds_done for r in b.reference) \
            else "the records carry no binary metrics (acc, precision, recall)"
        return RegimeVerdict(b, res.tier, col, UNTESTED, reason=why, rule=rule)
    kind = AUC if all(auc is not None for auc, _ in separations) else BALANCED_ACCURACY  # one statistic
    values = [auc if kind == AUC else balanced for auc, balanced in separations]
    mean = statistics.fmean(values)
    gain = mean - CHANCE - b.auc_margin
    p = None
    if len(values) >= 2:
        sd = sample_std(values)
        p = (0.0 if gain > 0 else 1.0) if sd == 0 else _t_sf(gain / (sd / math.sqrt(len(values))), len(values) - 1)
    verdict, share_p = two_classes_verdict(near, seeds, gain, p, share_bound(b, rule), rule)
    return RegimeVerdict(b, res.tier, col, verdict, p=p, near=near, seeds=seeds, n=len(values), separation=mean,
                         separation_kind=kind, rule=rule, share_p=share_p)


def two_classes_verdict(near: int, seeds: int, gain: float, p: float | None, bound: float,
                        rule: str = CURRENT) -> tuple[str, float | None]:
    """A two_classes verdict from ``near`` of ``seeds`` near-one-class seeds, the separation's mean
    ``gain`` over chance + margin and its one-sided ``p`` (None with one seed), under ``rule``;
    and, under the current rule, the binomial p of the near-one-class rate being over ``bound``."""
    if rule == FIRST:
        if near > bound * seeds + 1e-9 or gain <= 0:
            return OUT, None
        return (IN if p is not None and p < ALPHA else POWER), None
    share_p = binomial_sf(near, seeds, bound)
    if share_p < ALPHA or gain <= 0:
        return OUT, share_p
    if near > bound * seeds + 1e-9:  # over the bound, not significantly: more seeds would tell
        return POWER, share_p
    return (IN if p is not None and p < ALPHA else POWER), share_p


def regime_verdicts(res: TableResult, rule: str = CURRENT) -> list[RegimeVerdict]:
    """Every block of the spec in every one of its columns, at the result's tier, under ``rule``."""
    key = f"regime:{rule}"
    if key not in res.checks:  # every renderer of one result asks: check once
        res.checks[key] = [v for b in res.spec.regime for v in block_verdicts(res, b, rule)]
    return list(res.checks[key])


def block_verdicts(res: TableResult, b: RegimeBlock, rule: str = CURRENT) -> list[RegimeVerdict]:
    check = _trained if b.check == "trained" else _two_classes
    return [check(res, b, col, rule) for col in b.cols]


def rule_changed(res: TableResult) -> list[tuple[RegimeVerdict, RegimeVerdict]]:
    """(first rule's verdict, current rule's verdict) of every block and column where the two differ."""
    first = {(v.block.name, v.col): v for v in regime_verdicts(res, FIRST)}
    return [(first[(v.block.name, v.col)], v) for v in regime_verdicts(res, CURRENT)
            if (v.block.name, v.col) in first and first[(v.block.name, v.col)].verdict != v.verdict]


def original_verdicts(res: TableResult) -> list[RegimeVerdict]:
    """The verdicts of every block a revision changed, as it was first registered (shown beside
    the current ones; claims read the current blocks)."""
    return [replace(v, original=True) for b in res.spec.regime for r in b.revised[:1] if r.was is not None
            for v in block_verdicts(res, r.was)]


class RegimeMap:
    """Which verdicts cover a cell: those of the blocks holding its row in its column (a
    derived column: in its source columns)."""

    def __init__(self, res: TableResult, verdicts: list[RegimeVerdict] | None = None, rule: str = CURRENT):
        self.spec = res.spec
        self.verdicts = regime_verdicts(res, rule) if verdicts is None else verdicts
        self._by = {(v.block.name, v.col): v for v in self.verdicts}

    def of(self, row: str, col: str) -> list[RegimeVerdict]:
        row, col = self.spec.baseline_cell(row, col)  # a row added to the table: the block of the row it runs like
        if self.spec.methods_in == "cols":  # the method is the column, the setting the row
            return [self._by[(b.name, row)] for b in self.spec.regime if col in b.rows if (b.name, row) in self._by]
        cols = self.spec.derived_cols.get(col, [col])
        return [self._by[(b.name, c)] for b in self.spec.regime if row in b.rows for c in cols
                if (b.name, c) in self._by]

    def out_of_regime(self, row: str, col: str) -> list[RegimeVerdict]:
        """The verdicts covering a cell whose block does not work there (not those short of power)."""
        return [v for v in self.of(row, col) if v.verdict == OUT]

    def unknown(self, row: str, col: str) -> list[RegimeVerdict]:
        """The verdicts covering a cell whose block's regime is not established (short of power, or not
        testable): under the current rule the claims there read ``regime unknown``."""
        return [v for v in self.of(row, col) if v.verdict in (POWER, UNTESTED)]


def unexplained_one_class(res: TableResult, regime_map: RegimeMap) -> dict[tuple[str, str], int]:
    """Near-one-class seeds per cell that neither a block out of regime (``regime_map``) nor a
    ``one_class_why`` entry of the tier accounts for (issue 36: at most 5% of a table's records)."""
    return {cell: len(seeds) for cell, seeds in res.degenerate.items()
            if not regime_map.out_of_regime(*cell) and not res.spec.one_class_reason(res.tier, *cell)}
