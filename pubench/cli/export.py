"""``pubench export``: the aggregated results as one tidy table (csv, parquet or json) for pandas.

One row per cell and metric of every exported spec and tier
(:func:`pubench.report.frame.cells_frame`): ours ``mean``, ``std``, ``n``, the paper's
``reported`` / ``reported_std``, ``delta`` (> 0: better than reported), ``tier``, the spec's
``version`` and the ``regime`` verdict covering the cell where the spec has one.

Variants run with ``pubench run --set`` (tier ``custom``, results/custom/<id>/) are exported
too, one block of rows per variant, with ``tier`` = ``custom`` and ``variant`` naming the base
tier and the overrides (``reduced + data.M=100``); ``variant`` is empty for the spec's tiers.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pubench import paths
from pubench.cli._common import FMT, TIER_CHOICES, UsageError, specs
from pubench.jobs.plan import CUSTOM

FORMATS = ("csv", "parquet", "json")


def parser(sub) -> None:
    s = sub.add_parser(
        "export", help="the aggregated results, one row per cell and metric, as csv / parquet / json (for pandas)",
        formatter_class=FMT,
        description="Write one tidy table of the aggregated results: a row per cell and metric with ours (mean, "
                    "std, n), the paper's number, the delta (> 0: better than reported), the tier, the spec "
                    "version and the regime verdict. Exports every table with results unless ids are given; "
                    "reads the result store ($PUBENCH_RESULTS), runs nothing.",
        epilog="examples:\n  pubench export --format csv\n"
               "  pubench export table1-bcl --tier reduced --format json --out table1-bcl.json\n"
               "  pubench export --format parquet --out results.parquet   # needs pyarrow\n"
               "read it with pandas.read_csv / read_json(orient='records') / read_parquet")
    s.add_argument("ids", nargs="*", help="table or figure ids (default: every one with results)")
    s.add_argument("--tier", action="append", choices=[*TIER_CHOICES, CUSTOM],
                   help="only this tier (repeatable; default: every tier with results); custom: the variants run "
                        "with `pubench run --set`")
    s.add_argument("--format", default="csv", choices=FORMATS, help="csv (default), parquet (needs pyarrow) or json "
                   "(a list of row objects)")
    s.add_argument("--out", metavar="FILE", help="write here (default: standard output; parquet needs --out)")
    s.set_defaults(fn=cmd_export)


def export_frame(ids: list[str] | None, tiers: list[str] | None):
    """The cells frame of every chosen spec and tier that has results (None when nothing has)."""
    import pandas as pd

    from pubench.report.frame import cells_frame
    from pubench.store import ResultStore

    store = ResultStore(paths.results_root(), memo=True)
    frames = []
    for spec in specs(ids).values():
        for tier in tiers or [*spec.tiers, CUSTOM]:
            if tier == CUSTOM:
                frames += variant_frames(spec, store)
                continue
            if tier not in spec.tiers or not store.scan(tier, spec.id).done:
                continue
            frames.append(cells_frame(spec=spec, tier=tier, store=store).assign(variant=None))
    if not frames:
        return None
    return pd.concat(frames, ignore_index=True)


def variant_frames(spec, store) -> list:
    """A cells frame (plus ``variant``) per variant of ``spec`` in the store's ``custom`` tier:
    records of the spec's current version grouped by base tier and overrides; a cell and seed
    recorded twice (another numerics profile) counts once, the first in file order. No regime
    verdict (the spec's regime blocks judge its own tiers); no delta for a variant of the smoke
    tier (a pipeline check)."""
    import pandas as pd

    from pubench.report.collect import CellStats, metric_values
    from pubench.report.frame import CELL_COLUMNS

    groups: dict[tuple, list] = {}
    for rec in store.scan(CUSTOM, spec.id).records:
        job = rec["job"]
        v = job.get("variant") or {}
        if job["spec_version"] == spec.version:
            groups.setdefault((v.get("base_tier"), tuple(v.get("set") or ())), []).append(rec)
    frames = []
    col_group = {c: g for g, cols in spec.col_groups.items() for c in cols}
    for (base, sets), recs in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        values: dict[tuple, dict[int, float]] = {}
        splits: dict[tuple, dict[int, object]] = {}
        for mv in metric_values(recs):
            if mv.metric in spec.metrics and mv.seed not in values.get((mv.row, mv.col, mv.metric), {}):
                values.setdefault((mv.row, mv.col, mv.metric), {})[mv.seed] = mv.value
                splits.setdefault((mv.row, mv.col, mv.metric), {})[mv.seed] = mv.split
        rows = []
        for row in spec.rows:
            for col in spec.cols:
                for metric, m in spec.metrics.items():
                    if (row, col, metric) not in values:
                        continue
                    st = CellStats(values[(row, col, metric)], splits[(row, col, metric)])
                    r = spec.reported_cell(row, col, metric)
                    delta = None if r is None or r.mean is None or base == "smoke" else \
                        (1.0 if m.higher_is_better else -1.0) * (st.mean - r.mean)
                    rows.append((spec.id, spec.version, CUSTOM, row, spec.group_of_row(row), col, col_group.get(col),
                                 metric, m.higher_is_better, st.mean, st.std, st.n, None if r is None else r.mean,
                                 None if r is None else r.std, delta, False, None, 0))
        frame = pd.DataFrame(rows, columns=list(CELL_COLUMNS)).assign(variant=" + ".join([str(base), *sets]))
        frames.append(frame.astype({"mean": "float64", "std": "float64", "reported": "float64",
                                    "reported_std": "float64", "delta": "float64"}))
    return frames


def _need_parquet_engine() -> None:
    for engine in ("pyarrow", "fastparquet"):
        try:
            __import__(engine)
            return
        except ImportError:
            continue
    raise UsageError("--format parquet needs pyarrow: install it (`pip install pyarrow`), or use --format csv")


def cmd_export(args) -> int:
    if args.format == "parquet":
        _need_parquet_engine()
        if not args.out:
            raise UsageError("--format parquet writes a binary file: give it with --out FILE")
    frame = export_frame(args.ids or None, args.tier)
    if frame is None:
        from pubench.cli.report import run_first_hint

        what = ", ".join(args.ids) if args.ids else "any table"
        tiers = args.tier or list(TIER_CHOICES)
        hint = run_first_hint(args.ids, [t for t in tiers if t != CUSTOM] or list(TIER_CHOICES))
        if CUSTOM in tiers and len(tiers) == 1:
            hint = f"run a variant first: `pubench run {(args.ids or ['fig5-bcl'])[0]} --set key.path=value`"
        raise UsageError(f"no results for {what} at tier(s) {', '.join(tiers)}; {hint}")
    out = Path(args.out) if args.out else None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
    if args.format == "parquet":
        frame.to_parquet(out, index=False)
    elif args.format == "csv":
        text = frame.to_csv(index=False)
        out.write_text(text) if out else sys.stdout.write(text)
    else:
        text = frame.to_json(orient="records", indent=1) + "\n"
        out.write_text(text) if out else sys.stdout.write(text)
    if out is not None:
        print(f"pubench: wrote {len(frame)} row(s) to {out}", file=sys.stderr)
    return 0
