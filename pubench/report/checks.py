"""Claim checks: does the reproduction tell the paper's story?

* Generic, per metric and column (within each row group): is the best row ours the same
  as the paper's, and how well do the row rankings agree (Kendall tau)?
* Spec claims (``claims:`` in the YAML): ``best_row`` (a row is best in each column),
  ``order`` (rows rank in the given order), ``greater`` (row a beats row b), ``best_col`` and
  ``col_order`` (the same along a row), ``curve_rises`` (a figure curve of a cell ends above its
  start: its last point against its first, per seed). A claim is the conjunction of the pairwise comparisons
  it makes; each is a one-sided t-test over seeds (:mod:`pubench.report.stats`), and the claim
  is as strong as its weakest link.
* Each claim's plain outcome is then read against the evidence around it: a claim whose
  pairs lie in a block that is not in regime (:mod:`pubench.report.regime`) reads
  ``not in regime``, one that fails only where the paper's gap is below what our seeds can
  detect (:mod:`pubench.report.power`) reads ``underpowered``; the plain result is kept
  (``test_status``, ``outcome_text``) and printed beside it. No label hides a significant
  failure (:func:`qualify`), and at the paper tier no block relabels a claim.
* A claim revised after results (``revised:`` in the spec) is checked as it was first
  registered too; the original counts, the revision is shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


from pubench.registry.spec import Claim, Revision
from pubench.report.collect import TableResult
from pubench.report.power import PairPower, pair_power
from pubench.report.regime import CURRENT, FIRST, OUT, PAPER, POWER, UNTESTED, RegimeMap, RegimeVerdict
from pubench.report.stats import (FAILS, kendall_tau, HOLDS, HOLDS_NS, NOT_TESTABLE, TIE, WEAKNESS, PairTest, compare_cells,
                                  outcome_text, weakest)

NOT_IN_REGIME, UNDERPOWERED, REGIME_UNKNOWN = "not in regime", "underpowered", "regime unknown"


@dataclass
class ColumnCheck:
    """One comparison line: a column (methods in rows) or a row (``methods_in: cols``)."""

    group: str | None
    col: str
    metric: str
    best_ours: str | None
    best_paper: str | None
    tau: float | None
    n_rows: int

    @property
    def best_match(self) -> bool | None:
        if self.best_ours is None or self.best_paper is None:
            return None
        return self.best_ours == self.best_paper


_COUNTED = {HOLDS: "hold", HOLDS_NS: "hold (n.s.)", NOT_TESTABLE: "not testable", TIE: "tie", FAILS: "fail"}
#: Every status a claim can read, from the most to the least supportive (reports count them in this order).
STATUSES = (HOLDS, HOLDS_NS, TIE, FAILS, UNDERPOWERED, REGIME_UNKNOWN, NOT_IN_REGIME, NOT_TESTABLE)


@dataclass
class ClaimCheck:
    """A spec claim tested on our seeds: ``tests`` holds one :class:`PairTest` per pairwise
    comparison the claim makes whose two cells have results; the claim's plain outcome and
    p-value are those of its weakest link (:func:`pubench.report.stats.weakest`).
    ``powers[i]`` are the power figures of ``tests[i]`` and ``out_of_regime[i]`` the verdicts
    of the blocks, not in regime, its cells lie in. ``status`` reads the plain outcome against
    them (:func:`qualify`)."""

    claim: Claim
    tests: list[PairTest]
    paper_status: str  # what the reported means say: holds | tie | fails | n/a
    powers: list[PairPower] = field(default_factory=list)
    out_of_regime: list[list[RegimeVerdict]] = field(default_factory=list)
    #: per pair, the verdicts of its blocks whose regime is not established (over the margin without significance, or
    #: not testable): under the current rule the claim reads ``regime unknown`` there (empty at the paper tier)
    power_limited: list[list[RegimeVerdict]] = field(default_factory=list)
    #: per pair, at the paper tier, the verdicts of its blocks not in regime: findings about the paper's setup
    findings: list[list[RegimeVerdict]] = field(default_factory=list)
    #: this check is of a claim as first registered, which ``revision`` changed after results
    revision: Revision | None = None
    #: whether the check counts in a report's tallies: a claim revised after results does not (its original does)
    counted: bool = True
    #: per pair, the out-of-regime verdicts under the regime rule as first registered (``regime.FIRST``)
    first_rule_out: list[list[RegimeVerdict]] | None = None

    @property
    def weakest_link(self) -> PairTest | None:
        return weakest(self.tests) if self.tests else None

    @property
    def test_status(self) -> str:
        """The plain outcome: holds | holds, not significant | tie | fails | not testable."""
        return self.weakest_link.outcome if self.tests else NOT_TESTABLE

    @property
    def status(self) -> str:
        """The plain outcome, or ``not in regime`` / ``regime unknown`` / ``underpowered`` where those explain it
        (:func:`qualify`), under the current regime rule."""
        return qualify(self)[0]

    @property
    def first_rule_status(self) -> str:
        """The status under the regime rule as first registered (out-of-regime pairs set aside, blocks short of
        power read as in regime); equal to :attr:`status` where the rule revision changes nothing for the claim."""
        if self.first_rule_out is None:
            return self.status
        return qualify(self, self.first_rule_out, [])[0]

    @property
    def rule_changed(self) -> bool:
        return self.first_rule_status != self.status

    @property
    def decisive(self) -> int | None:
        """The index of the pair that decides ``status`` (its weakest pair; where some pairs are
        out of regime and an in-regime pair fails, the weakest in-regime pair)."""
        return qualify(self)[1]

    @property
    def decisive_link(self) -> PairTest | None:
        return None if self.decisive is None else self.tests[self.decisive]

    @property
    def decisive_power(self) -> PairPower | None:
        i = self.decisive
        return None if i is None or i >= len(self.powers) else self.powers[i]

    @property
    def outcome_text(self) -> str:
        """The plain result of the whole claim (its weakest pair), with its p-value."""
        return outcome_text(self.weakest_link) if self.tests else f"{NOT_TESTABLE} (no results)"

    @property
    def test_text(self) -> str:
        """The plain result of the deciding pair, with its p-value."""
        return outcome_text(self.decisive_link) if self.tests else f"{NOT_TESTABLE} (no results)"

    @property
    def regime_blocks(self) -> list[str]:
        """``block: col, col`` per block with out-of-regime verdicts its pairs lie in (each column once)."""
        by: dict[str, dict[str, None]] = {}
        for vs in self.out_of_regime:
            for v in vs:
                by.setdefault(v.block.name, {})[v.col] = None
        return [f"{b}: {', '.join(cols)}" for b, cols in by.items()]

    @property
    def finding_blocks(self) -> list[str]:
        """``block: col, col`` per block whose reference loses to its baseline at the paper's own config."""
        return _blocks(self.findings)

    @property
    def power_blocks(self) -> list[str]:
        return _blocks(self.power_limited)

    @property
    def significant_out_of_regime(self) -> list[PairTest]:
        """Pairs set aside (out of regime, or regime unknown) that fail significantly (printed beside the label)."""
        return _significant_aside(self, self.out_of_regime, self.power_limited)

    @property
    def detail(self) -> str:
        """How many links, by outcome, and the ones that do not hold significantly (first few);
        then the blocks out of regime and the pairs too weak for the paper's gap."""
        if not self.tests:
            return "no pair of compared cells has results"
        counts = {o: sum(t.outcome == o for t in self.tests) for o in WEAKNESS}
        text = f"{len(self.tests)} pair(s): " + ", ".join(f"{k} {_COUNTED[o]}" for o, k in counts.items() if k)
        weak = sorted((t for t in self.tests if t.outcome != HOLDS), key=lambda t: -WEAKNESS[t.outcome])
        if len(self.tests) > 1 and weak:
            text += "; " + "; ".join(f"{t.where}: {t.better} vs {t.worse} {outcome_text(t)}" for t in weak[:4])
            text += f"; {len(weak) - 4} more" if len(weak) > 4 else ""
        blocks = self.regime_blocks
        if blocks:
            n_out = sum(bool(v) for v in self.out_of_regime)
            text += f"; {n_out} pair(s) out of regime ({'; '.join(blocks)})"
        if self.power_limited and any(self.power_limited):
            n_unknown = sum(bool(v) for v in self.power_limited)
            text += f"; {n_unknown} pair(s) where the regime is not established ({'; '.join(self.power_blocks)})"
        if self.findings and any(self.findings):
            text += (f"; finding at the paper's own configuration, the reference does not beat its baseline in "
                     f"{'; '.join(self.finding_blocks)}")
        weak_power = sum(p.underpowered for p in self.powers)
        if weak_power:
            text += f"; {weak_power} pair(s) with the paper's gap below our MDD"
        return text


def _blocks(verdicts: list[list[RegimeVerdict]]) -> list[str]:
    by: dict[str, dict[str, None]] = {}
    for vs in verdicts:
        for v in vs:
            by.setdefault(v.block.name, {})[v.col] = None
    return [f"{b}: {', '.join(cols)}" for b, cols in by.items()]


def _significant_aside(check: ClaimCheck, out: list[list], unknown: list[list]) -> list[PairTest]:
    return [t for i, t in enumerate(check.tests)
            if ((i < len(out) and out[i]) or (i < len(unknown) and unknown[i])) and t.outcome == FAILS
            and t.opposite_significant]


def qualify(check: ClaimCheck, out_lists: list[list] | None = None,
            unknown_lists: list[list] | None = None) -> tuple[str, int | None]:
    """A claim's status and the index of its deciding pair, from the per-pair verdicts of the blocks
    not in regime (``out_lists``, default the check's) and of those whose regime is not established
    (``unknown_lists``, default the check's ``power_limited``; pass ``[]`` for the regime rule as first
    registered, under which such a block relabelled nothing).

    * Pairs whose cells lie in a block (column) not in regime are *out*, those in a block whose regime is
      not established (over its margin without significance, or not testable) *unknown*; the others *in*.
      At the paper tier no block sets a pair aside (its verdict is a finding, not a label).
    * A pair that fails significantly anywhere can never leave the claim reading ``underpowered``; one that
      fails significantly in regime makes it ``fails``.
    * If some pair is set aside: an in-regime pair that fails makes the claim ``fails`` (or ``underpowered``,
      below) where the methods work; otherwise the claim reads ``not in regime`` (some pair out) or
      ``regime unknown`` (pairs unknown only), a significant failure there printed beside it, unless no pair
      was testable at all (``not testable``).
    * A claim that fails (over the in-regime pairs when some are set aside) reads ``underpowered``
      only when every failing pair, anywhere, is not significant either way and each in-regime failing
      pair's paper gap is positive but below our minimum detectable difference.
    """
    out_lists = check.out_of_regime if out_lists is None else out_lists
    unknown_lists = check.power_limited if unknown_lists is None else unknown_lists
    if not check.tests:
        return NOT_TESTABLE, None
    idx = range(len(check.tests))
    out = [i for i in idx if i < len(out_lists) and out_lists[i]]
    unknown = [i for i in idx if i not in out and i < len(unknown_lists) and unknown_lists[i]]
    aside = out + unknown
    considered = [i for i in idx if i not in aside] if aside else list(idx)

    def weakest_of(ids):
        return max(ids, key=lambda i: (WEAKNESS[check.tests[i].outcome],
                                       -1.0 if check.tests[i].p is None else check.tests[i].p))

    overall = weakest_of(idx)
    if all(t.outcome == NOT_TESTABLE for t in check.tests):
        return NOT_TESTABLE, overall
    if aside and not (considered and check.tests[weakest_of(considered)].outcome == FAILS):
        return (NOT_IN_REGIME if out else REGIME_UNKNOWN), overall
    w = weakest_of(considered)
    status = check.tests[w].outcome
    if status == FAILS:
        failing = [i for i in considered if check.tests[i].outcome == FAILS]
        if not _significant_aside(check, out_lists, unknown_lists) and all(
                not check.tests[i].opposite_significant and i < len(check.powers) and check.powers[i].underpowered
                for i in failing):
            return UNDERPOWERED, w
    return status, w


def _row_sets(res: TableResult) -> list[tuple[str | None, list[str]]]:
    spec = res.spec
    if spec.row_groups:
        return list(spec.row_groups.items())
    return [(None, spec.rows)]


def _best(values: dict[str, float], higher: bool) -> str | None:
    if len(values) < 2:
        return None
    return (max if higher else min)(values, key=values.get)


def _comparisons(res: TableResult):
    """(group, fixed key, candidates, getter) for every line along which methods compete:
    each column within a row group (methods in rows, the default) or each row (``methods_in: cols``)."""
    spec = res.spec
    if spec.methods_in == "cols":
        cols = [c for c in spec.cols if c not in spec.derived_cols]
        for row in spec.rows:
            yield None, row, cols, lambda c, m, row=row: (res.get(row, c, m), res.reported(row, c, m))
        return
    for group, rows in _row_sets(res):
        for col in spec.cols:
            yield group, col, rows, lambda r, m, col=col: (res.get(r, col, m), res.reported(r, col, m))


def column_checks(res: TableResult) -> list[ColumnCheck]:
    """Per comparison line: the best method ours vs the paper's, and Kendall tau between them."""
    if "columns" not in res.checks:  # every renderer of one result asks: test once
        res.checks["columns"] = _column_checks(res)
    return list(res.checks["columns"])


def _column_checks(res: TableResult) -> list[ColumnCheck]:
    out = []
    for metric, m in res.spec.metrics.items():
        for group, key, cands, get in _comparisons(res):
            if res.spec.added:  # rows added to the table have no paper's number: the paper's best is among its own
                cands = [x for x in cands if res.spec.added_row(*res.spec.cell_of(x, key)) is None]
            pairs = {x: get(x, metric) for x in cands}
            ours = {x: s.mean for x, (s, _) in pairs.items() if s is not None}
            paper = {x: r.mean for x, (_, r) in pairs.items() if r is not None and r.mean is not None}
            if not ours and not paper:
                continue
            both = [x for x in cands if x in ours and x in paper]
            tau = None
            if len(both) >= 3:
                t = kendall_tau([ours[x] for x in both], [paper[x] for x in both])
                tau = None if t != t else t  # nan when a side is constant
            out.append(ColumnCheck(group, key, metric, _best(ours, m.higher_is_better),
                                   _best(paper, m.higher_is_better), tau, len(both)))
    return out


Cell = tuple[str, str]  # (row, col)


def _links(claim: Claim, group_rows) -> list[tuple[str, Cell, Cell]]:
    """Every pairwise comparison a claim makes, as (line, better cell, worse cell): per column,
    ``best_row`` pits its row against every other row of its row group and ``order`` / ``greater``
    each consecutive pair; per row, ``best_col`` pits its first column against the others and
    ``col_order`` compares consecutive columns, the later one better."""
    out = []
    if claim.kind in ("best_col", "col_order"):
        for row in claim.rows:
            pairs = ([(claim.cols[0], c) for c in claim.cols[1:]] if claim.kind == "best_col"
                     else [(b, a) for a, b in zip(claim.cols, claim.cols[1:])])
            out += [(row, (row, a), (row, b)) for a, b in pairs]
        return out
    for col in claim.cols:
        pairs = ([(claim.rows[0], r) for r in group_rows(claim.rows[0]) if r != claim.rows[0]]
                 if claim.kind == "best_row" else list(zip(claim.rows, claim.rows[1:])))
        out += [(col, (a, col), (b, col)) for a, b in pairs]
    return out


def _paper_status(links, reported, higher: bool, fmt: str) -> str:
    """The claim on the reported means alone: fails if a link goes the other way, tie if one
    prints equal, holds if all go the claimed way, n/a if no link has both numbers."""
    diffs = [(a, b) for a, b in ((reported(x), reported(y)) for _, x, y in links) if a is not None and b is not None]
    if not diffs:
        return "n/a"
    if any((a < b if higher else a > b) and format(a, fmt) != format(b, fmt) for a, b in diffs):
        return "fails"
    return "tie" if any(format(a, fmt) == format(b, fmt) for a, b in diffs) else "holds"


def claim_fmt(claim: Claim, spec) -> str:
    """The format of the numbers a claim compares: its curve's, else its metric's."""
    return spec.curve(claim.curve).fmt if claim.curve else spec.metrics[claim.metric].fmt


def describe(claim: Claim, spec) -> str:
    """What a claim compares, compactly: ``A > B`` means A is better than B (``<`` when lower
    is better); names the columns (rows) a row (column) claim is limited to."""
    if claim.kind == "curve_rises":
        where = "" if set(claim.cols) == set(spec.curve(claim.curve).cols) else f" in {', '.join(claim.cols)}"
        return f"{claim.curve}: last point > first point of {', '.join(claim.rows)}{where}"
    better = " > " if spec.metrics[claim.metric].higher_is_better else " < "
    if claim.kind in ("best_col", "col_order"):
        what = (f"{claim.cols[0]} best of {', '.join(claim.cols)}" if claim.kind == "best_col"
                else better.join(reversed(claim.cols)))
        return what + (f" in {', '.join(claim.rows)}" if set(claim.rows) != set(spec.rows) else ", per row")
    what = f"{claim.rows[0]} best of its rows" if claim.kind == "best_row" else better.join(claim.rows)
    return what + (f" in {', '.join(claim.cols)}" if set(claim.cols) != set(spec.cols) else "")


def claim_checks(res: TableResult) -> list[ClaimCheck]:
    if "claims" not in res.checks:  # every renderer of one result asks: test once
        res.checks["claims"] = _claim_checks(res)
    return list(res.checks["claims"])


def _claim_checks(res: TableResult) -> list[ClaimCheck]:
    spec = res.spec
    regime, regime_first = RegimeMap(res, rule=CURRENT), RegimeMap(res, rule=FIRST)

    def group_rows(row: str) -> list[str]:
        g = spec.group_of_row(row)
        return spec.row_groups[g] if g else spec.rows

    at_paper = res.tier == PAPER

    def check(claim: Claim, revision: Revision | None = None, counted: bool = True) -> ClaimCheck:
        if claim.kind == "curve_rises":
            c = _curve_check(res, claim)
            c.revision, c.counted = revision, counted
            return c
        m = spec.metrics[claim.metric]
        links = _links(claim, group_rows)
        is_col_claim = claim.kind in ("best_col", "col_order")
        tests, powers, out_of_regime, power_limited, findings, first_out = [], [], [], [], [], []

        def reported(cell, metric=claim.metric):
            r = res.reported(*cell, metric)
            return None if r is None else r.mean

        for where, x, y in links:
            sx, sy = res.get(*x, claim.metric), res.get(*y, claim.metric)
            if sx is not None and sy is not None:
                names = (x[1], y[1]) if is_col_claim else (x[0], y[0])
                tests.append(compare_cells(sx, sy, higher_is_better=m.higher_is_better, fmt=m.fmt,
                                           labels=(*names, where)))
                rx, ry = reported(x), reported(y)
                gap = None if rx is None or ry is None else (rx - ry) * (1.0 if m.higher_is_better else -1.0)
                powers.append(pair_power(sx, sy, gap))
                covering = regime.of(*x) + regime.of(*y)
                outside = [v for v in covering if v.verdict == OUT]
                out_of_regime.append([] if at_paper else outside)
                findings.append(outside if at_paper else [])
                power_limited.append([] if at_paper else [v for v in covering if v.verdict in (POWER, UNTESTED)])
                first_out.append([] if at_paper else
                                 [v for v in regime_first.of(*x) + regime_first.of(*y) if v.verdict == OUT])

        return ClaimCheck(claim, tests, _paper_status(links, reported, m.higher_is_better, m.fmt), powers,
                          out_of_regime, power_limited, findings, revision=revision, counted=counted,
                          first_rule_out=first_out)

    out = [check(claim, counted=not claim.revised) for claim in spec.claims]
    # each claim as first registered, once (a claim split in two has one original), after its last revision
    last = {c.original: i for i, c in enumerate(spec.claims) if c.original is not None}
    for original, i in sorted(last.items(), key=lambda kv: -kv[1]):
        out.insert(i + 1, check(original, revision=spec.claims[i].revised[0]))
    return out


def _curve_check(res: TableResult, claim: Claim) -> ClaimCheck:
    """``curve_rises``: in each (row, col), the curve's last point beats its first, paired by
    seed (the two points of one run). The paper's curves print no numbers: ``n/a``."""
    fmt = res.spec.curve(claim.curve).fmt
    tests = []
    for row in claim.rows:
        for col in claim.cols:
            series = res.curve(claim.curve, row, col)
            first, last = (series.end(False), series.end(True)) if series else (None, None)
            if first is not None and last is not None:
                tests.append(compare_cells(last, first, higher_is_better=True, fmt=fmt,
                                           labels=("last", "first", f"{row} at {col}")))
    return ClaimCheck(claim, tests, "n/a")
