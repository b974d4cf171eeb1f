"""``pubench export``: the aggregated results as one tidy table (csv, parquet or json) for pandas.

One row per cell and metric of every exported spec and tier
(:func:`pubench.report.frame.cells_frame`): ours ``mean``, ``std``, ``n``, the paper's
``reported`` / ``reported_std``, ``delta`` (> 0: better than reported), ``tier``, the spec's
``version`` and the ``regime`` verdict covering the cell where the spec has one.

Variants run with ``pubench run --set`` (tier ``custom``, results/custom/<id>/) are exported
too, one block of rows per variant, with ``tier`` = ``custom`` and ``variant`` naming the base
tier and the overrides (``reduced + data.M=100``); ``variant`` is empty for the spec's tiers.
Rows added with ``pubench run --add-row`` are exported the same way, their own rows only
(``variant`` = ``reduced + added rows: MyPU``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from pubench import paths
from pubench.cli._common import FMT, TIER_CHOICES, UsageError, baselines_option, specs
from pubench.registry.spec import CUSTOM

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
    baselines_option(s)
    s.set_defaults(fn=cmd_export)


def export_frame(ids: list[str] | None, tiers: list[str] | None):
    """The cells frame of every chosen spec and tier that has results (None when nothing has)."""
    import pandas as pd

    from pubench.report.collect import variants
    from pubench.report.frame import cells_frame
    from pubench.store import ResultStore

    store = ResultStore(paths.results_root(), memo=True)
    frames = []
    for spec in specs(ids).values():
        for tier in tiers or [*spec.tiers, CUSTOM]:
            if tier == CUSTOM:  # one block per variant; the cells it did not run have n = 0 like any tier's
                for v in variants(spec, store):
                    frame = cells_frame(spec=v, tier=CUSTOM, store=store).assign(variant=v.variant_label)
                    if v.added:  # the added rows only: the paper's rows are their base tier's, exported there
                        axis = "col" if v.methods_in == "cols" else "row"
                        frame = frame[frame[axis].isin([r.name for r in v.added])]
                    frames.append(frame)
                continue
            if tier not in spec.tiers or not store.scan(tier, spec.id).done:
                continue
            frames.append(cells_frame(spec=spec, tier=tier, store=store).assign(variant=None))
    if not frames:
        return None
    return pd.concat(frames, ignore_index=True)


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
        hint = run_first_hint(args.ids, tiers if tiers == [CUSTOM] else [t for t in tiers if t != CUSTOM])
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
