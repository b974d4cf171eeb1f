"""Budget ladder reports (``pubench ladder report``, issue 61): for each ladder of
``experiments/_ladders.yaml`` (:mod:`pubench.registry.ladders`), per step the pair's difference,
its interval and test, the paper's difference beside it and the regime of the pair's block, and
the trend test, as the file's header fixes them:

* ``d = sign x (better - worse)`` per seed, ``sign`` +1 where the metric is higher-is-better, so
  d > 0 is the claim's direction; per step its mean, the 95% t interval and the one-sided
  p-value of d > 0, paired by seed index on equal splits (Welch otherwise), the claim's own test
  (:func:`pubench.report.stats.compare_cells`), over seeds ``0..seeds-1``.
* The regime of each block holding the pair in its column, checked from the step's records
  (:mod:`pubench.report.regime` on a :class:`~pubench.report.collect.TableResult` of the step):
  the pair's cells from the step; a row the axis leaves unchanged (no axis key, or 0 of it: an
  untrained encoder) from the base tier; any other row the block reads was not run at the step,
  and the block is not testable there.
* The trend: per seed, the least-squares slope of d over log2(factor) over the steps where both
  cells have that seed (at least two); a one-sided one-sample t-test over those seeds of mean
  slope > 0. ``closes toward the paper`` at p < 0.05, ``moves away from the paper`` where the
  opposite one-sided p < 0.05, else ``flat``; ``not testable`` with fewer than 2 such seeds.

A step that has not run reads "not run", never inferred. The report is its own file,
``reports/ladders/<id>.md`` with its plot ``<id>.png``: a ladder spans the base tier and several
``custom`` variants, so it belongs to no single tier's report, and the verdict pages link it
(:func:`ladder_section`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from pubench.registry.ladders import Ladder, describe_seeds, fmt_factor, ladder_claims, load_ladders, step_overrides, \
    unchanged_by, value_at
from pubench.registry.spec import CUSTOM, Spec
from pubench.report.collect import PIPELINE_CHECK_TIERS, CellStats, TableResult, collect, sample_std
from pubench.report.regime import UNTESTED, RegimeVerdict, block_verdicts
from pubench.report.stats import ALPHA, PairTest, _one_sided_p, _t_sf, compare_cells, outcome_text, \
    paired_values
from pubench.utils.student_t import t_ppf

CLOSES, AWAY, FLAT, NOT_TESTABLE = "closes toward the paper", "moves away from the paper", "flat", "not testable"
FOLDER = "ladders"  # under the reports root
#: the ladder regime rule's revision after results: a block row the ladder does not run was "not testable" at a step
#: until then, and is read from records run at the step's setting where they exist (docs/reports.md)
BORROWED_REVISION = "rule revised 2026-12-07, after results"


@dataclass(frozen=True)
class Step:
    """One factor of a ladder: each pair row's setting and values over the ladder's seeds, the
    pair's test, the per-seed differences, and the regime of the pair's blocks."""

    factor: float
    settings: dict[str, str]                 # row -> "train.epochs=16" (the base tier's value at factor 1)
    cells: dict[str, CellStats | None]       # row -> its values at this step, seeds 0..N-1
    test: PairTest | None                    # better vs worse (None: a cell without records)
    d_by_seed: dict[int, float]              # seed -> d, where both cells ran it on the same split
    ci: tuple[float, float] | None           # 95% interval of the mean d
    p: float | None                          # one-sided p of d > 0
    regime: tuple[RegimeVerdict, ...] = ()
    near_one_class: dict[str, int] = field(default_factory=dict)  # row -> near-one-class seeds (binary metrics only)
    machines: tuple[str, ...] = ()          # the devices that made the records this step reads ("cpu (AMD EPYC)")
    borrowed: tuple[str, ...] = ()          # block rows the ladder does not run, read from records run at this setting

    @property
    def ran(self) -> bool:
        return any(c is not None for c in self.cells.values())

    def status(self, seeds: int) -> str:
        """``done`` (every seed of both cells), ``not run``, or which seeds each cell has."""
        have = {r: (0 if c is None else c.n) for r, c in self.cells.items()}
        if all(n == seeds for n in have.values()):
            return "done"
        if not self.ran:
            return "not run"
        return "partial: " + ", ".join(f"{r} {n} of {seeds}" for r, n in have.items())


@dataclass(frozen=True)
class Trend:
    verdict: str
    slope: float | None = None        # mean per-seed slope of d per doubling of the factor
    p: float | None = None            # one-sided p of mean slope > 0
    p_away: float | None = None       # one-sided p of mean slope < 0
    slopes: dict[int, float] = field(default_factory=dict)
    reason: str = ""

    @property
    def n(self) -> int:
        return len(self.slopes)


@dataclass(frozen=True)
class LadderResult:
    ladder: Ladder
    spec: Spec
    steps: tuple[Step, ...]
    trend: Trend
    paper_d: float | None             # the paper's difference, signed like d (None: a number not printed)
    fmt: str                          # the metric's format

    @property
    def pipeline_check(self) -> bool:
        return self.ladder.tier in PIPELINE_CHECK_TIERS


# ---- statistics ---------------------------------------------------------------------------
def _restricted(cell: CellStats | None, seeds: int) -> CellStats | None:
    if cell is None:
        return None
    keep = {k: v for k, v in cell.by_seed.items() if k < seeds}
    return CellStats(keep, {k: cell.splits[k] for k in keep}) if keep else None


def interval(a: list[float], b: list[float], paired: bool, sign: float) -> tuple[float, float] | None:
    """The 95% t interval of the mean of ``sign x (a - b)`` (paired: of the per-seed differences;
    else Welch's); None with fewer than 2 values."""
    if paired:
        d = [sign * (x - y) for x, y in zip(a, b)]
        if len(d) < 2:
            return None
        mean, half = statistics.fmean(d), t_ppf(0.975, len(d) - 1) * sample_std(d) / math.sqrt(len(d))
        return mean - half, mean + half
    if len(a) < 2 or len(b) < 2:
        return None
    from pubench.report.stats import welch_df

    sa, sb = sample_std(a), sample_std(b)
    se = math.sqrt(sa ** 2 / len(a) + sb ** 2 / len(b))
    mean = sign * (statistics.fmean(a) - statistics.fmean(b))
    half = t_ppf(0.975, welch_df(sa, sb, len(a), len(b))) * se if se > 0 else 0.0
    return mean - half, mean + half


def slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of y over x."""
    mx, my = statistics.fmean(x for x, _ in points), statistics.fmean(y for _, y in points)
    sxx = math.fsum((x - mx) ** 2 for x, _ in points)
    return math.fsum((x - mx) * (y - my) for x, y in points) / sxx


def trend_test(steps: list[Step] | tuple[Step, ...], seeds: int) -> Trend:
    """The header's trend test over ``steps`` (see the module's docstring)."""
    slopes = {}
    for s in range(seeds):
        points = [(math.log2(st.factor), st.d_by_seed[s]) for st in steps if s in st.d_by_seed]
        if len(points) >= 2:
            slopes[s] = slope(points)
    if len(slopes) < 2:
        return Trend(NOT_TESTABLE, slopes=slopes, reason=f"{len(slopes)} seed(s) with both cells done at 2 steps or "
                                                         "more; the test needs 2")
    values = list(slopes.values())
    mean = statistics.fmean(values)
    sd = sample_std(values)
    if sd <= 1e-12 * max(abs(v) for v in values) or sd == 0:  # every seed the same slope: no spread to test
        p, p_away = (0.0 if mean > 0 else 1.0), (0.0 if mean < 0 else 1.0)
    else:
        t = mean / (sd / math.sqrt(len(values)))
        p, p_away = _t_sf(t, len(values) - 1), _t_sf(-t, len(values) - 1)
    verdict = CLOSES if p < ALPHA else AWAY if p_away < ALPHA else FLAT
    return Trend(verdict, mean, p, p_away, slopes)


# ---- a step's table -----------------------------------------------------------------------
def _part(res: TableResult, row: str, col: str, seeds: int) -> dict:
    """The parts of ``res`` a regime check reads for one cell, restricted to seeds 0..seeds-1."""
    cell = (row, col)
    stats = {k: c for k, v in res.stats.items() if k[:2] == cell and (c := _restricted(v, seeds)) is not None}
    done = set().union(*(c.by_seed for c in stats.values()))
    return {
        "stats": stats,
        "seeds_done": {cell: len(done)} if done else {},
        "degenerate": {cell: d} if (d := {s: w for s, w in res.degenerate.get(cell, {}).items() if s < seeds}) else {},
        "discrimination": {cell: d} if (d := {s: w for s, w in res.discrimination.get(cell, {}).items()
                                              if s < seeds}) else {},
        "rates": {cell: d} if (d := {s: w for s, w in res.rates.get(cell, {}).items() if s < seeds}) else {},
    }


def _step_table(spec: Spec, tier: str, parts: list[dict]) -> TableResult:
    merged = {k: {} for k in ("stats", "seeds_done", "degenerate", "discrimination", "rates")}
    for p in parts:
        for k in merged:
            merged[k].update(p[k])
    return TableResult(spec, tier, **merged)


def _blocks(spec: Spec, ladder: Ladder):
    return [b for b in spec.regime if (ladder.better in b.rows or ladder.worse in b.rows) and ladder.col in b.cols]


def _needed(block) -> list[str]:
    """The rows a block's check reads."""
    return list(block.reference) + ([block.baseline] if block.check == "trained" and block.baseline else [])


def with_ladder_seeds(spec: Spec, ladder: Ladder) -> Spec:
    """``spec`` with the ladder's seeds registered for its pair's cells at its tier (a ladder is a
    pre-registration: its seeds are read at every step, the base tier's and its variants')."""
    from dataclasses import replace

    base = spec.tiers[ladder.tier]
    entries = tuple({"cells": f"{row}|{ladder.col}", "seeds": ladder.seeds, "date": ladder.registered,
                     "why": f"budget ladder {ladder.id}"} for row in (ladder.better, ladder.worse))
    return replace(spec, tiers={**spec.tiers, ladder.tier: replace(base, more_seeds=base.more_seeds + entries)})


class _Results:
    """The tables a ladder reads, each collected once: the base tier, and each (row, factor) variant."""

    def __init__(self, spec: Spec, ladder: Ladder, store):
        self.spec, self.ladder, self.store, self._memo = with_ladder_seeds(spec, ladder), ladder, store, {}
        self.plain_spec, self._devices = spec, {}

    def machines(self, row: str, factor: float) -> set[str]:
        """The devices that made the records of ``row``'s cell at ``factor`` (the ladder's seeds, canonical
        numerics): ``cpu (AMD EPYC)``."""
        from pubench.jobs.ladder import step_jobs
        from pubench.numerics import resolve
        from pubench.report.compute import device_label

        tier = CUSTOM if step_overrides(self.plain_spec, self.ladder, row, factor) else self.ladder.tier
        if tier not in self._devices:  # job id -> device, one scan of the folder for every step
            scan = self.store.scan(tier, self.spec.id, fields=("job", "machine", "info.accelerator"))
            self._devices[tier] = {r["job"]["id"]: device_label(r) for r in scan.records}
        by_id = self._devices[tier]
        return {by_id[j.id] for j in step_jobs(self.plain_spec, self.ladder, row, factor, resolve()) if j.id in by_id}

    def of(self, row: str, factor: float) -> TableResult:
        sets = tuple(step_overrides(self.spec, self.ladder, row, factor))
        if sets not in self._memo:
            self._memo[sets] = collect(self.spec, self.ladder.tier, self.store) if not sets else \
                collect(self.spec.with_variant(self.ladder.tier, sets), CUSTOM, self.store)
        return self._memo[sets]


def _setting(spec: Spec, ladder: Ladder, row: str, factor: float) -> str:
    sets = step_overrides(spec, ladder, row, factor)
    if sets:
        return sets[0]
    key = ladder.axis[row]
    return f"{key}={value_at(spec.resolve(ladder.tier, row, ladder.col)['params'], key)!r}"


def _step(spec: Spec, ladder: Ladder, factor: float, results: _Results) -> Step:
    m = spec.metrics[ladder.metric]
    sign = 1.0 if m.higher_is_better else -1.0
    n = ladder.seeds
    cells = {r: _restricted(results.of(r, factor).get(r, ladder.col, ladder.metric), n) for r in ladder.rows}
    better, worse = cells[ladder.better], cells[ladder.worse]
    test = ci = p = None
    d_by_seed: dict[int, float] = {}
    if better is not None and worse is not None:
        test = compare_cells(better, worse, higher_is_better=m.higher_is_better, fmt=m.fmt,
                             labels=(ladder.better, ladder.worse, ladder.col))
        a, b, paired = paired_values(better, worse)
        if paired:
            common = sorted(set(better.by_seed) & set(worse.by_seed))
            d_by_seed = {k: sign * (better.by_seed[k] - worse.by_seed[k]) for k in common}
        ci = interval(a, b, paired, sign)
        if test.n >= 2:
            p = _one_sided_p(a, b, paired, m.higher_is_better, test.diff)
    regime, borrowed = [], []
    for block in _blocks(spec, ladder):
        parts, missing = [], []
        for row in dict.fromkeys([*ladder.rows, *_needed(block)]):
            if row in ladder.rows:
                parts.append(_part(results.of(row, factor), row, ladder.col, n))
            elif factor == 1 or unchanged_by(spec, ladder, row, factor):
                parts.append(_part(results.of(row, 1), row, ladder.col, n))
            elif len(ladder.keys()) == 1 and (part := _part(results.of(row, factor), row, ladder.col, n))["seeds_done"]:
                parts.append(part)  # the row run at this step's setting anyway (another ladder's pair, a --set run)
                borrowed.append(row)
            else:
                missing.append(row)
        table = _step_table(spec, ladder.tier, parts)
        for v in block_verdicts(table, block):
            if v.col != ladder.col:
                continue
            if missing:
                v = replace(v, verdict=UNTESTED, reason=f"{', '.join(missing)} not run at this step (the ladder runs "
                                                        "its pair; the axis scales this row too)")
            regime.append(v)
    near = {}
    for r in ladder.rows:  # only where the records carry binary metrics (a classifier's)
        res = results.of(r, factor)
        if any(s < n for s in res.rates.get((r, ladder.col), {})):
            near[r] = sum(1 for s in res.degenerate.get((r, ladder.col), {}) if s < n)
    machines = tuple(sorted(set().union(*(results.machines(r, factor) for r in ladder.rows))))
    return Step(factor, {r: _setting(spec, ladder, r, factor) for r in ladder.rows}, cells, test, d_by_seed, ci, p,
                tuple(regime), near, machines, tuple(dict.fromkeys(borrowed)))


def paper_difference(spec: Spec, ladder: Ladder) -> float | None:
    m = spec.metrics[ladder.metric]
    a, b = (spec.reported_cell(r, ladder.col, ladder.metric) for r in ladder.rows)
    if a is None or b is None or a.mean is None or b.mean is None:
        return None
    return (1.0 if m.higher_is_better else -1.0) * (a.mean - b.mean)


def ladder_result(spec: Spec, ladder: Ladder, store) -> LadderResult:
    results = _Results(spec, ladder, store)
    steps = tuple(_step(spec, ladder, f, results) for f in ladder.factors)
    return LadderResult(ladder, spec, steps, trend_test(steps, ladder.seeds), paper_difference(spec, ladder),
                        spec.metrics[ladder.metric].fmt)


# ---- text ---------------------------------------------------------------------------------
def _p_text(p: float | None) -> str:
    return "—" if p is None else ("p < 0.001" if p < 0.001 else f"p = {p:.2g}")


def trend_text(r: LadderResult) -> str:
    """``closes toward the paper: +2.31 per doubling, p = 0.012 (5 seeds)``, ``flat: ...``,
    ``not testable (...)``."""
    t = r.trend
    if t.verdict == NOT_TESTABLE:
        return f"{NOT_TESTABLE} ({t.reason})"
    p = t.p_away if t.verdict == AWAY else t.p
    return f"{t.verdict}: {format(t.slope, '+' + r.fmt)} per doubling, {_p_text(p)} ({t.n} seeds)"


def steps_text(r: LadderResult) -> str:
    """``1x done, 2x not run, 4x partly run``."""
    return ", ".join(f"{fmt_factor(st.factor)} " + ("done" if (s := st.status(r.ladder.seeds)) == "done" else s
                                                    if s == "not run" else "partly run") for st in r.steps)


def _num(v: float | None, fmt: str, signed: bool = False) -> str:
    return "—" if v is None else format(v, ("+" if signed else "") + fmt)


def _cell_text(c: CellStats | None, fmt: str) -> str:
    if c is None:
        return "not run"
    return format(c.mean, fmt) + (f" ± {format(c.std, fmt)}" if c.std is not None else "") + f" ({c.n})"


def _regime_text(step: Step) -> str:
    if not step.ran:
        return "—"
    text = "; ".join(f"{v.block.name}: {v.text}" for v in step.regime) or "no regime block holds the pair"
    if step.borrowed:
        text += (f" ({', '.join(step.borrowed)} read from records run at this step's setting: {BORROWED_REVISION}; "
                 "as first written, not testable)")
    return text


def render_markdown(r: LadderResult, plot: str | None = None) -> str:
    """The ladder's report: what it asks and why, the steps, the trend test and the plot."""
    from tabulate import tabulate

    lad, spec, fmt = r.ladder, r.spec, r.fmt
    m = spec.metrics[lad.metric]
    claims = ladder_claims(spec, lad)
    lines = [f"# Budget ladder `{lad.id}`: {lad.better} vs {lad.worse} along {lad.axis_text}", "",
             f"Generated by `pubench ladder report` from the result store; registered {lad.registered} in "
             "`experiments/_ladders.yaml`, before its steps ran, with the rules this page applies (docs/reports.md, "
             "\"Budget ladders\"). A step not run reads \"not run\", never inferred.", ""]
    if r.pipeline_check:
        lines += [f"Tier `{lad.tier}` is a pipeline check: its numbers say nothing about the paper.", ""]
    lines += [
        f"- Claim (`{spec.id}`, tier `{lad.tier}`): {lad.claim}"
        + (f" [{'; '.join(_describe(c, spec) for c in claims)}]" if claims else ""),
        f"- Pair: {lad.better} vs {lad.worse} in {lad.col}, {m.label}; d = {lad.better} − {lad.worse}"
        + ("" if m.higher_is_better else " with the sign turned (lower is better)")
        + ", so d > 0 is the claim's direction (the paper's).",
        f"- Axis: {lad.axis_text} at {', '.join(fmt_factor(f) for f in lad.factors)} the tier's value; seeds "
        f"{describe_seeds(lad.seeds)}, paired across steps; step 1x is the base tier's own records, each other step a "
        f"`--set` variant (tier `custom`).",
        f"- Paper's difference: {_num(r.paper_d, fmt, True)}" + ("" if r.paper_d is not None else
                                                                 f" ({_unprinted(spec, lad)})") + ".",
        f"- Why: {lad.why}",
    ]
    if lad.seen_before:
        lines.append(f"- Seen before registration: {lad.seen_before}")
    for rev in lad.revised:
        lines.append(f"- Revised {rev.get('date')}: " + "; ".join(f"{k}: {v}" for k, v in rev.items() if k != "date"))
    lines += ["", f"**Trend: {trend_text(r)}.**", ""]
    headers = ["step", "setting", lad.better, lad.worse, "d", "95% CI", "p (d > 0)", "test", "n", "paper's d",
               "regime", "near-one-class", "status"]
    rows = []
    for st in r.steps:
        t = st.test
        rows.append([
            fmt_factor(st.factor), "; ".join(f"{x}: {st.settings[x]}" for x in lad.rows)
            if len(set(st.settings.values())) > 1 else next(iter(st.settings.values())),
            _cell_text(st.cells[lad.better], fmt), _cell_text(st.cells[lad.worse], fmt),
            "—" if t is None else format(t.diff, "+" + fmt),
            "—" if st.ci is None else f"[{format(st.ci[0], '+' + fmt)}, {format(st.ci[1], '+' + fmt)}]",
            _p_text(st.p), "—" if t is None else outcome_text(t) + ("" if t.paired else ", Welch"),
            "—" if t is None else str(t.n), _num(r.paper_d, fmt, True), _regime_text(st),
            "—" if not st.near_one_class else ", ".join(f"{x} {k}" for x, k in st.near_one_class.items()),
            st.status(lad.seeds)])
    lines.append(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))
    lines += ["", "d: the mean over the seeds both cells ran (paired by seed index on the same split; Welch where "
              "the splits differ); 95% CI: the t interval of that mean; p (d > 0): one-sided; test: the claim's own "
              "outcome at this step (a failure's p is the opposite direction's). regime: each block holding the pair "
              "in its column, checked from this step's records (a row the axis leaves unchanged, e.g. an untrained "
              "encoder, read from the base tier). near-one-class: per cell, the seeds that ended as a near-one-class classifier (test recall or "
              "specificity under 5%; — where the records carry no binary metrics).", ""]
    by_machines: dict[tuple[str, ...], list[str]] = {}
    for st in r.steps:
        if st.machines:
            by_machines.setdefault(st.machines, []).append(fmt_factor(st.factor))
    if by_machines:
        lines.append("Made on (the records each step reads): " + "; ".join(
            f"{', '.join(steps)}: {', '.join(machines)}" for machines, steps in by_machines.items()) + "."
            + (" Bit for bit is promised on one CPU model only (docs/design.md, \"Numerics\"): across these steps the "
               "computation order differs too, so a step's difference from another is read like one between seeds, "
               "never to the bit." if len(by_machines) > 1 else ""))
        lines.append("")
    t = r.trend
    lines.append("Trend test: per seed, the least-squares slope of d over log2(factor) across its steps with both cells "
                 "done (at least two); a one-sided one-sample t-test over seeds of mean slope > 0: closes toward the "
                 "paper at p < 0.05, moves away where the opposite one-sided p < 0.05, else flat.")
    if t.slopes:
        lines += ["", "Per-seed slopes (d per doubling): "
                  + ", ".join(f"seed {s}: {format(v, '+' + fmt)}" for s, v in sorted(t.slopes.items()))
                  + ("" if t.p is None else f"; one-sided {_p_text(t.p)} for a rise, {_p_text(t.p_away)} for a fall")
                  + "."]
    if plot:
        lines += ["", f"![d per step of {lad.id}]({plot})"]
    return "\n".join(lines) + "\n"


def _unprinted(spec: Spec, lad: Ladder) -> str:
    """Why the paper's difference is not known: the first pair cell without a printed number, and its note."""
    for row in lad.rows:
        cell = spec.reported_cell(row, lad.col, lad.metric)
        if cell is None or cell.mean is None:
            return f"no printed number for {row}" + (f": {cell.note}" if cell is not None and cell.note else "")
    return ""


def _describe(claim, spec) -> str:
    from pubench.report.checks import describe

    return describe(claim, spec)


# ---- plot ---------------------------------------------------------------------------------
def render_plot(r: LadderResult, path: str | Path) -> Path:
    """d per step with its 95% interval (seeds as thin lines), the paper's difference and 0 as
    horizontal lines, the factor on a log2 axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lad = r.ladder
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    xs = [st.factor for st in r.steps]
    for s in range(lad.seeds):
        pts = [(st.factor, st.d_by_seed[s]) for st in r.steps if s in st.d_by_seed]
        if len(pts) >= 2:
            ax.plot(*zip(*pts), color="0.75", lw=0.8, zorder=1, label="a seed" if s == min(r.trend.slopes or [s]) else None)
    done = [st for st in r.steps if st.test is not None]
    if done:
        means = [st.test.diff for st in done]
        lo = [st.test.diff - st.ci[0] if st.ci else 0.0 for st in done]
        hi = [st.ci[1] - st.test.diff if st.ci else 0.0 for st in done]
        ax.errorbar([st.factor for st in done], means, yerr=[lo, hi], fmt="o-", color="C0", capsize=4, zorder=3,
                    label="d (mean, 95% CI)")
    if r.paper_d is not None:
        ax.axhline(r.paper_d, color="C3", ls="--", lw=1.2, label=f"paper's d ({format(r.paper_d, '+' + r.fmt)})")
    ax.axhline(0.0, color="0.4", lw=0.6)
    for st in r.steps:
        if st.test is None:  # said where the step's point would be, at the foot of the panel
            ax.text(st.factor, 0.03, "not run" if not st.ran else "partly run", transform=ax.get_xaxis_transform(),
                    ha="center", fontsize=7, color="0.3")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [fmt_factor(f) for f in xs], fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    ax.minorticks_off()
    ax.set_xlim(min(xs) / 1.25, max(xs) * 1.25)
    ax.set_xlabel(f"{lad.axis_text} (x the {lad.tier} tier's)", fontsize=8)
    ax.set_ylabel(f"d = {lad.better} − {lad.worse}\n{r.spec.metrics[lad.metric].label}", fontsize=8)
    ax.set_title(f"{lad.id} ({lad.spec}, {lad.col})\ntrend: {trend_text(r)}", fontsize=8)
    if ax.get_legend_handles_labels()[0]:  # nothing to name where no step ran and the paper prints no number
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_ladder_report(r: LadderResult, reports_root: Path) -> list[Path]:
    """``<reports>/ladders/<id>.md`` and ``<id>.png``."""
    from pubench.utils.io import write_text_if_changed

    folder = Path(reports_root) / FOLDER
    plot = f"{r.ladder.id}.png"
    return [write_text_if_changed(folder / f"{r.ladder.id}.md", render_markdown(r, plot=plot)),
            render_plot(r, folder / plot)]


# ---- the verdict pages --------------------------------------------------------------------
def claim_ladders(verdicts: list, specs: dict[str, Spec], store, experiments: Path | None = None) -> list:
    """(ladder, its result) for every ladder whose spec and claim text match one of ``verdicts``."""
    from pubench.registry.ladders import ladders_path

    on_page = {(v.spec_id, v.text) for v in verdicts}
    return [(lad, ladder_result(specs[lad.spec], lad, store)) for lad in load_ladders(ladders_path(experiments), specs)
            if (lad.spec, lad.claim) in on_page and lad.spec in specs]


def ladder_section(verdicts: list, specs: dict[str, Spec], store, experiments: Path | None = None) -> str:
    """The verdict page's lines for the ladders of the claims on it (``verdicts``: its
    :class:`~pubench.report.verdicts.ClaimVerdict` list): one per ladder whose spec and claim text
    match a claim there, with its trend and a link to its report; "" when none does."""
    lines = [f"- `{lad.spec}`: {lad.claim}: budget ladder [{lad.id}](../{FOLDER}/{lad.id}.md) "
             f"({lad.better} vs {lad.worse} in {lad.col} along {lad.axis_text}: {steps_text(r)}): {trend_text(r)}"
             for lad, r in claim_ladders(verdicts, specs, store, experiments)]
    if not lines:
        return ""
    return "\n".join(["", "## Budget ladders", "",
                      "A claim's deciding pair rerun at growing budgets (experiments/_ladders.yaml; `pubench ladder "
                      "report`, docs/reports.md \"Budget ladders\"): the trend of its difference d per doubling of the "
                      "budget, tested one-sided toward the paper's direction.", "", *lines]) + "\n"
