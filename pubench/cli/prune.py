"""``pubench prune``: remove stale records (no current job names them)."""

from __future__ import annotations

from collections import Counter

from pubench import paths
from pubench.cli._common import FMT, TIER_CHOICES, specs


def parser(sub) -> None:
    s = sub.add_parser(
        "prune", help="remove stale records (their cell's config or the spec's version changed)", formatter_class=FMT,
        description="A record is stale when no current job names it: the spec's version or its cell's resolved "
                    "config changed since it was written, or the cell is gone. Reports leave stale records out and "
                    "`verify` fails while a table holds them; remove them once their cells are rerun.",
        epilog="examples:\n  pubench prune --dry-run\n  pubench prune table5-punce --tier reduced")
    s.add_argument("ids", nargs="*", help="restrict to these ids (default: every spec)")
    s.add_argument("--tier", action="append", choices=TIER_CHOICES, help="restrict to this tier (repeatable)")
    s.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    s.set_defaults(fn=cmd_prune)


def cmd_prune(args) -> int:
    from pubench.store import ResultStore
    from pubench.store.prune import stale_files

    store = ResultStore(paths.results_root())
    total = 0
    for sid, spec in specs(args.ids or None).items():
        for tier in args.tier or list(spec.tiers):
            found = stale_files(spec, tier, store)
            if not found.files:
                continue
            total += len(found.files)
            reasons = Counter(found.files.values())
            print(f"{sid} ({tier}): {len(found.files)} stale record(s): "
                  + "; ".join(f"{n} {why}" for why, n in reasons.most_common()))
            if not args.dry_run:
                for path in found.files:
                    path.unlink(missing_ok=True)
    verb = "would remove" if args.dry_run else "removed"
    print(f"pubench: {verb} {total} stale record(s) from {store.root}" if total else "pubench: no stale records")
    return 0
