"""What a campaign's queue projects to, window after window, on a GPU not at hand: the
queue's entries with their projected minutes, and the windows it takes if every window
runs as ``pubench campaign --budget B`` plans it (the committed figures' projections adjusted
to the device as a window adjusts them, :func:`pubench.campaign.plan.for_device`; the packing
ratio a window packs by, measured on that GPU or conservative R(N) = 1, or with
``--assume-packing`` the assumed line of ``run --dry-run``; ``--concurrency auto``'s bounds for
a device of the given memory and cores, each window starting what fits and nothing else
finishing early; no window's calibration time counted).

Usage: python benchmarks/campaign_windows.py [--queue FILE] [--budget 9m30s] [--device-name "NVIDIA H200"]
           [--free-gib 139] [--cores 16] [--windows 40] [--assume-packing] [--yaml]

``--yaml`` prints each entry's ``projected_min`` as the queue file states it (the committed
figures' projection, one job at a time). Nothing runs; seconds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from pubench.campaign import concurrency, schedule
    from pubench.campaign import plan as plans
    from pubench.campaign.queue import default_path, load
    from pubench.cli.campaign import duration
    from pubench.numerics import resolve
    from pubench.preflight.packing import campaign_packing, packing
    from pubench.store import ResultStore

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queue", type=Path, default=default_path())
    ap.add_argument("--budget", type=duration, default=duration("9m30s"))
    ap.add_argument("--device-name", default="NVIDIA H200")
    ap.add_argument("--free-gib", type=float, default=139.0)
    ap.add_argument("--cores", type=int, default=16)
    ap.add_argument("--windows", type=int, default=40)
    ap.add_argument("--assume-packing", action="store_true",
                    help="pack by the assumed R(N) of run --dry-run, not by what a window packs by")
    ap.add_argument("--yaml", action="store_true", help="print each entry's projected_min")
    args = ap.parse_args(argv)

    queue = load(args.queue)
    plan = plans.make(queue, queue.tier, resolve(device=queue.device), ResultStore(ROOT / "results"))
    if args.yaml:
        for k, st in enumerate(plan.entries, 1):
            print(f"[{k}] {st.entry.label}: jobs {st.jobs}, pending {st.pending}, projected_min: "
                  f"{st.projected_s / 60:.1f}  (bases: {_bases(plan, k - 1)})")
        return 0
    device = concurrency.Device(queue.device, args.device_name, int(args.free_gib * 2**30))
    pack = packing(queue.device, args.device_name) if args.assume_packing else campaign_packing(queue.device,
                                                                                                 args.device_name)
    for line in plans.for_device(plan, args.device_name):
        print(line)
    budget = schedule.Budget(0.0, args.budget)
    left = args.budget - budget.reserve_s
    pending, done_entries = list(plan.pending), set()
    print(f"{queue.path.name}: {len(pending)} pending job(s), {sum(p.projected_s or 0 for p in pending) / 60:.0f} "
          f"min alone; windows of {args.budget:.0f} s ({left:.0f} s for jobs) on {args.device_name} "
          f"({args.free_gib:g} GiB free, {args.cores} cores); packing {pack.describe(2).split(' (', 1)[1][:-1]}")
    import pubench.executors.cores as cores_mod

    cores_mod.usable_cores = lambda: args.cores  # the GPU machine's cores, not this one's
    for w in range(1, args.windows + 1):
        if not pending:
            break
        choice = concurrency.choose("auto", device, concurrency.reachable(pending, left, args.cores))
        n, _ = schedule.best_count(pending, choice.n, left, pack.slowdown)
        started = schedule.simulate(pending, n, left, pack.slowdown(n))
        ran = [pending[i] for i in started]
        pending = [p for i, p in enumerate(pending) if i not in set(started)]
        left_by_entry = {p.entry for p in pending}
        now_done = [k for k in range(len(plan.entries)) if k not in left_by_entry and k not in done_entries]
        done_entries |= set(now_done)
        bounds = ", ".join(f"{k} {v}" for k, v in choice.bounds.items() if k != "cap")
        print(f"window {w:2d}: {n:2d} at once ({bounds}): {len(ran):3d} job(s), "
              f"{sum(p.projected_s for p in ran) / 60:5.1f} min alone"
              + (f"; completes {', '.join(f'[{k + 1}]' for k in now_done)}" if now_done else ""))
    if pending:
        print(f"after {args.windows} windows: {len(pending)} job(s) left")
    return 0


def _bases(plan, entry: int) -> str:
    from collections import Counter

    return ", ".join(f"{b} {n}" for b, n in Counter(p.basis for p in plan.pending if p.entry == entry).items())


if __name__ == "__main__":
    raise SystemExit(main())
