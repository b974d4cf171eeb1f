"""Order agreement: how often do our means order the paper's pairs of methods as the paper does?

A claim checks a few statements; this checks every comparison the table prints. For each
pair of methods on one comparison line (methods in rows, the default: two rows of one row
group in one column; ``methods_in: cols``: two columns in one row), per metric, whose two
cells the paper prints with different means and we have results for, the pair **agrees**
when our mean difference has the paper's sign. Pairs are split

* by the paper's gap |a - b| in the metric's units: under 1, 1 to 2, 2 and more
  (:data:`GAP_BINS`; for accuracy in %, points);
* by whether our test of the pair is significant: the one-sided t-test of the direction
  our means show (:func:`pubench.report.stats.compare_cells`'s pairing: by seed index on
  equal splits, Welch otherwise) has p < 0.05, i.e. a two-sided test at 10% as the claims
  use; a pair with a single seed is not tested.

* by the working regime (:mod:`pubench.report.regime`) of the pair's two cells: ``in regime``
  when every regime block covering them passes (and one covers them), ``not in regime`` when
  one of them fails, ``unchecked`` otherwise (no block covers them, or its check had too few
  results). Only pairs in regime say something about the paper's methods.

Derived columns (the paper's Mean) are left out: they repeat their sources. With no
ordering information at all half of the pairs would agree by chance, so the share is read
against 50%; small gaps are where seed noise decides.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass

from pubench.report.collect import TableResult
from pubench.report.regime import IN, OUT, RegimeMap
from pubench.report.stats import ALPHA, _one_sided_p, paired_values

#: (label, lower bound inclusive, upper bound exclusive) of the paper's gap, in metric units.
GAP_BINS = (("< 1", 0.0, 1.0), ("1-2", 1.0, 2.0), (">= 2", 2.0, float("inf")))
ALL = "all"
#: a pair's working regime (see the module's docstring)
REGIMES = ("in regime", "not in regime", "unchecked")


@dataclass(frozen=True)
class OrderedPair:
    """One pair: ``better`` is the paper's better cell of the two (in the metric's direction),
    ``gap`` the paper's difference (> 0), ``ours`` our mean difference in the same direction,
    ``p`` the one-sided p-value of the direction our means show (None: fewer than 2 seeds)."""

    metric: str
    line: str
    better: str
    worse: str
    gap: float
    ours: float
    p: float | None
    regime: str = "unchecked"

    @property
    def agrees(self) -> bool:
        return self.ours > 0

    @property
    def significant(self) -> bool | None:
        return None if self.p is None else self.p < ALPHA

    @property
    def gap_bin(self) -> str:
        return next(label for label, lo, hi in GAP_BINS if lo <= self.gap < hi)


@dataclass(frozen=True)
class Share:
    """``agree`` of ``pairs`` pairs."""

    pairs: int = 0
    agree: int = 0

    def __add__(self, other: Share) -> Share:
        return Share(self.pairs + other.pairs, self.agree + other.agree)

    @property
    def share(self) -> float | None:
        return self.agree / self.pairs if self.pairs else None

    def text(self) -> str:
        return "—" if not self.pairs else f"{self.share:.0%} of {self.pairs}"

    def as_dict(self) -> dict:
        return {"pairs": self.pairs, "agree": self.agree, "share": self.share}


def _share(pairs: list[OrderedPair]) -> Share:
    return Share(len(pairs), sum(p.agrees for p in pairs))


@dataclass
class Agreement:
    """The ordered pairs of one table at one tier, and their shares by gap and significance."""

    spec_id: str
    tier: str
    pairs: list[OrderedPair]

    def split(self, gap: str = ALL) -> dict[str, Share]:
        """For one gap bin (or ``all``): every pair, the significant ones, the not significant
        ones, and those not tested (a single seed)."""
        ps = [p for p in self.pairs if gap == ALL or p.gap_bin == gap]
        return {"pairs": _share(ps), "significant": _share([p for p in ps if p.significant]),
                "not significant": _share([p for p in ps if p.significant is False]),
                "not tested": _share([p for p in ps if p.significant is None])}

    @property
    def overall(self) -> Share:
        return _share(self.pairs)

    def by_regime(self) -> dict[str, Share]:
        return {r: _share([p for p in self.pairs if p.regime == r]) for r in REGIMES}

    def rows(self) -> list[list[str]]:
        """Table rows: gap bin, pairs, agree (share of all), significant, not significant, not tested."""
        out = []
        for label in [b[0] for b in GAP_BINS] + [ALL]:
            s = self.split(label)
            out.append([label, str(s["pairs"].pairs), s["pairs"].text(), s["significant"].text(),
                        s["not significant"].text(), str(s["not tested"].pairs)])
        return out

    def summary(self) -> str:
        """One line: ``61% of 128 pairs ordered as the paper (significant: 80% of 40; n.s.: ...)``."""
        if not self.pairs:
            return "no pair of the paper's cells with both printed numbers has results of ours"
        s = self.split()
        line = (f"{s['pairs'].text()} pairs ordered as the paper (significant: {s['significant'].text()}; "
                f"not significant: {s['not significant'].text()}; not tested: {s['not tested'].pairs})")
        regimes = self.by_regime()
        if regimes["unchecked"].pairs == len(self.pairs):
            return line
        return line + "; " + "; ".join(f"{r}: {regimes[r].text()}" for r in REGIMES if regimes[r].pairs)

    def as_dict(self) -> dict:
        return {"id": self.spec_id, "tier": self.tier, **self.overall.as_dict(),
                "by_regime": {r: v.as_dict() for r, v in self.by_regime().items()},
                "by_gap": {label: {k: v.as_dict() for k, v in self.split(label).items()}
                           for label in [b[0] for b in GAP_BINS] + [ALL]}}


HEADERS = ["paper's gap", "pairs", "ordered as the paper", "significant: as the paper",
           "not significant: as the paper", "not tested"]


def _lines(res: TableResult):
    """(line name, [(method, cell)]) for every comparison line of the table (cf. checks._comparisons)."""
    spec = res.spec
    cols = [c for c in spec.cols if c not in spec.derived_cols]
    if spec.methods_in == "cols":
        for row in spec.rows:
            yield row, [(c, (row, c)) for c in cols]
        return
    groups = list(spec.row_groups.items()) or [(None, spec.rows)]
    for group, rows in groups:
        for col in cols:
            yield (f"{group} / {col}" if group else col), [(r, (r, col)) for r in rows]


def _regime(regimes, *cells) -> str:
    verdicts = [v.verdict for cell in cells for v in regimes.of(*cell)]
    if OUT in verdicts:
        return "not in regime"
    return "in regime" if verdicts and all(v == IN for v in verdicts) else "unchecked"


def agreement(res: TableResult) -> Agreement:
    """The order agreement of one report (computed once per result: markdown, LaTeX, HTML and the
    index all ask)."""
    if "agreement" not in res.checks:
        res.checks["agreement"] = _agreement(res)
    return res.checks["agreement"]


def _agreement(res: TableResult) -> Agreement:
    spec = res.spec
    regimes = RegimeMap(res)
    pairs = []
    for metric, m in spec.metrics.items():
        sign = 1.0 if m.higher_is_better else -1.0
        for line, members in _lines(res):
            for (na, ca), (nb, cb) in itertools.combinations(members, 2):
                ra, rb = res.reported(*ca, metric), res.reported(*cb, metric)
                sa, sb = res.get(*ca, metric), res.get(*cb, metric)
                if None in (ra, rb, sa, sb) or ra.mean is None or rb.mean is None or ra.mean == rb.mean:
                    continue
                if sign * (ra.mean - rb.mean) < 0:  # the paper's better cell first
                    (na, ca, ra, sa), (nb, cb, rb, sb) = (nb, cb, rb, sb), (na, ca, ra, sa)
                a, b, paired = paired_values(sa, sb)
                ours = sign * (statistics.fmean(a) - statistics.fmean(b))
                n = len(a) if paired else min(len(a), len(b))
                p = None
                if n >= 2 and ours == 0.0:
                    p = 1.0  # no direction to test
                elif n >= 2:  # the one-sided p-value of the direction our means show
                    p_paper = _one_sided_p(a, b, paired, m.higher_is_better, ours)
                    p = p_paper if ours > 0 else 1.0 - p_paper
                pairs.append(OrderedPair(metric, line, na, nb, abs(ra.mean - rb.mean), ours, p,
                                         _regime(regimes, ca, cb)))
    return Agreement(spec.id, res.tier, pairs)


def overall(agreements: list[Agreement]) -> dict[str, Share]:
    """Pooled over tables: every pair, per gap bin, and per regime."""
    out = {}
    for label in [b[0] for b in GAP_BINS] + [ALL]:
        out[label] = sum((a.split(label)["pairs"] for a in agreements), Share())
    for r in REGIMES:
        out[r] = sum((a.by_regime()[r] for a in agreements), Share())
    in_regime = [p for a in agreements for p in a.pairs if p.regime == "in regime"]
    for label, _, _ in GAP_BINS:
        out[f"in regime, gap {label}"] = _share([p for p in in_regime if p.gap_bin == label])
    return out


def table_agreements(specs: dict, store, tiers) -> list[Agreement]:
    """The agreement of every spec with results at each of ``tiers`` (``pubench agreement``)."""
    from pubench.report.collect import collect

    out = []
    for tier in tiers:
        for spec in specs.values():
            if tier in spec.tiers:
                res = collect(spec, tier, store)
                if res.cells_done:
                    out.append(agreement(res))
    return out


def render_agreements(ags: list[Agreement]) -> str:
    """Per table and tier one summary line and the split by gap; then per tier the pooled line."""
    from tabulate import tabulate

    lines = []
    for a in ags:
        lines += [f"{a.spec_id} ({a.tier}): {a.summary()}"]
        if a.pairs:
            lines += [tabulate(a.rows(), headers=HEADERS, tablefmt="simple", disable_numparse=True), ""]
    for tier in dict.fromkeys(a.tier for a in ags):
        pooled = overall([a for a in ags if a.tier == tier])
        lines.append(f"all tables ({tier}): {pooled[ALL].text()} pairs ordered as the paper ("
                     + "; ".join(f"gap {label}: {pooled[label].text()}" for label, _, _ in GAP_BINS) + ")")
        if pooled["unchecked"].pairs < pooled[ALL].pairs:
            lines.append(f"  by regime ({tier}): " + "; ".join(f"{r}: {pooled[r].text()}" for r in REGIMES)
                         + " (in regime, by the paper's gap: "
                         + "; ".join(f"{label}: {pooled[f'in regime, gap {label}'].text()}" for label, _, _ in GAP_BINS)
                         + ")")
    return "\n".join(lines) + "\n"


def agreements_json(ags: list[Agreement]) -> dict:
    tiers = dict.fromkeys(a.tier for a in ags)
    return {"tables": [a.as_dict() for a in ags],
            "overall": {t: {k: v.as_dict() for k, v in overall([a for a in ags if a.tier == t]).items()}
                        for t in tiers},
            "gap_bins": [label for label, _, _ in GAP_BINS], "alpha": ALPHA}
