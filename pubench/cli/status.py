"""``pubench status``: done / failed / running / submitted / pending jobs per table and tier."""

from __future__ import annotations

import json

from pubench import paths
from pubench.cli._common import FMT, TIER_CHOICES, bounded_int, specs
from pubench.registry.spec import CUSTOM

STATUS_KEYS = ["id", "tier", "seeds", "jobs", "done", "failed", "running", "submitted", "corrupt", "pending",
               "not_implemented_jobs", "unavailable_cells"]


def parser(sub) -> None:
    s = sub.add_parser("status", help="done / failed / running / submitted / pending jobs per table and tier",
                       formatter_class=FMT,
                       description="Per table and tier: its plan (seeds: the tier's, or --seeds; jobs: every cell the "
                                   "tier runs x those seeds), and of those jobs how many are done, failed, running "
                                   "(claimed by a live runner), submitted (queued on SLURM) and pending (the rest: "
                                   "not run yet). The plan is the tier's whole one, not the cells and seeds a run "
                                   "selected with --only or --seeds. Tier custom: what the store holds of variants "
                                   "and rows added (no plan, nothing pending).",
                       epilog="examples:\n  pubench status\n  pubench status fig5-bcl --tier paper\n"
                              "  pubench status table2-punce --tier reduced --seeds 1   # count 1 seed as planned")
    s.add_argument("ids", nargs="*", help="table or figure ids (default: every one with jobs done, failed or in "
                                          "flight)")
    s.add_argument("--tier", action="append", choices=[*TIER_CHOICES, CUSTOM],
                   help="only this tier (repeatable; default: all); custom: the variants run with `pubench run --set`")
    s.add_argument("--seeds", type=bounded_int("--seeds", 1, 1000), help="seeds to count as planned (default: the tier's)")
    s.add_argument("--json", action="store_true", help="machine-readable")
    s.set_defaults(fn=cmd_status)


def cmd_status(args) -> int:
    from tabulate import tabulate

    from pubench.store import ResultStore

    store = ResultStore(paths.results_root())
    rows = []
    for sid, spec in specs(args.ids or None).items():
        for tier in [t for t in args.tier or spec.tiers if t != CUSTOM]:
            row = _status_row(store, spec, tier, args.seeds)
            if args.ids or any(row[4:9]):  # done, failed, running, submitted or corrupt
                rows.append(row)
        if not args.tier or CUSTOM in args.tier:
            row = _custom_row(store, spec)
            if row is not None:
                rows.append(row)
    if args.json:
        print(json.dumps([dict(zip(STATUS_KEYS, r)) for r in rows], indent=1))
    else:
        print(tabulate(rows, headers=[k.replace("_", " ") for k in STATUS_KEYS]) if rows else "no results yet")
        if any(r[9] for r in rows):  # pending
            print("(seeds and jobs: each tier's whole plan, every cell it runs x its seeds (--seeds N counts N), "
                  "not only the cells and seeds a run selected; pending: those jobs not done, failed, running or "
                  "submitted yet)")
    return 0


def _custom_row(store, spec) -> list | None:
    """The row of the variants of ``spec`` (tier ``custom``, ``pubench run --set``), or None when it
    has none: what the store holds (a variant has no plan, so nothing counts as pending)."""
    folder = store.folder(CUSTOM, spec.id)
    if not folder.is_dir():
        return None
    scan = store.scan(CUSTOM, spec.id, fields=("job",))
    done = set(scan.done)
    failed = len(set(scan.failed) - done)
    running = len(store.claims(CUSTOM, spec.id).live_ids() - done)
    if not (done or failed or running or scan.corrupt):
        return None
    from pubench.report.collect import added_row_of, variant_key

    variants = {k for r in scan.records if (k := variant_key(r["job"])) is not None}
    added = {(found[0], found[1].name) for r in scan.records if (found := added_row_of(r["job"])) is not None}
    what = f"{len(variants)} variant{'s' if len(variants) != 1 else ''}" + (
        f", {len(added)} added row{'s' if len(added) != 1 else ''}" if added else "")
    return [spec.id, f"{CUSTOM} ({what})", "-",
            len(done) + failed + running, len(done), failed, running, 0, len(scan.corrupt), 0, 0, 0]


def _status_row(store, spec, tier: str, seeds: int | None) -> list:
    """One row of :data:`STATUS_KEYS`."""
    from pubench.executors import EXECUTORS
    from pubench.jobs import expand
    from pubench.report.collect import cell_seed_key
    from pubench.runner import executor_context, split_unimplemented

    plan = expand(spec, tier, seeds)
    runnable, _ = split_unimplemented(plan.jobs)
    scan = store.scan(tier, spec.id, fields=("job",))  # one pass, only the job of each record
    # done: a valid record of the cell's current config, whatever numerics profile made it
    have = {cell_seed_key(r["job"]) for r in scan.records}
    ids = {j.id for j in runnable}
    done_jobs = {j.id for j in runnable if j.cell_seed_key() in have}
    failed = len((ids & set(scan.failed)) - done_jobs)
    context = executor_context(spec.id, tier)
    claimed = store.claims(tier, spec.id).live_ids()  # running: claimed by a live runner of this store
    active = set().union(*(EXECUTORS.get(n).active_ids(context) for n in EXECUTORS.names()))
    running = len((ids & claimed) - done_jobs)
    submitted = len((ids & active) - claimed - done_jobs)  # queued or running under a scheduler
    pending = len(ids) - len(done_jobs) - failed - running - submitted
    return [spec.id, tier, plan.seeds, len(ids), len(done_jobs), failed, running, submitted, len(scan.corrupt),
            max(0, pending), len(plan.jobs) - len(ids), len(plan.unavailable)]
