"""A cache hit equals a fresh run (issue 33): rerun, with the encoder and prefix caches off,
every committed record that took its encoder from the encoder cache or started from a stored
prefix, into a scratch store, and compare each rerun's metrics with the committed record's.

    python benchmarks/cache_off_rerun.py rerun TREE SCRATCH   # TREE: a clean worktree of the commit
    python benchmarks/cache_off_rerun.py compare SCRATCH      # prints identical / moved, per spec

``rerun`` resumes (jobs already in SCRATCH are skipped) and runs two jobs at a time at the
canonical numerics. Wall-clock metrics (the record's ``info.wall_clock_metrics``) are left out
of the comparison.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = {"fig5-pupl": 0, "table3-punce": 1, "fig14-pupl": 2, "table2-pupl": 3, "fig4-punce": 4}


def cache_hit(record: dict) -> bool:
    info = record.get("info", {})
    pre = info.get("pretrain") if isinstance(info.get("pretrain"), dict) else {}
    return bool((info.get("encoder_cache") or {}).get("hit") or (pre.get("prefix_cache") or {}).get("started_at_epoch"))


def rerun(tree: Path, scratch: Path) -> None:
    sys.path.insert(0, str(tree))
    import pubench
    from pubench import numerics

    assert Path(pubench.__file__).resolve().is_relative_to(tree), pubench.__file__
    env = numerics.process_env(numerics.resolve())
    if any(os.environ.get(k) != v for k, v in env.items()) or os.environ.get("PUBENCH_ENCODER_CACHE") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **env, "PUBENCH_ENCODER_CACHE": "0"})
    from pubench.executors.local import LocalExecutor
    from pubench.jobs.plan import Job

    jobs = [Job.from_dict(r["job"]) for p in sorted(glob.glob(str(tree / "results/*/*/*.json")))
            if not p.endswith(".failed.json") and cache_hit(r := json.load(open(p)))]
    jobs.sort(key=lambda j: (ORDER.get(j.spec_id, 9), j.row, j.col, j.seed_index))
    print(f"{len(jobs)} jobs to rerun into {scratch}", flush=True)
    counts = LocalExecutor(scratch, n_jobs=2, progress=False).run(
        jobs, desc="cache-off", on_done=lambda j, s: print(f"{s} {j.name}", flush=True))
    print(dict(counts), flush=True)


def compare(scratch: Path, committed: Path = ROOT / "results") -> None:
    same, moved, total = Counter(), [], Counter()
    for p in sorted(glob.glob(str(committed / "*/*/*.json"))):
        if not p.endswith(".failed.json") and cache_hit(json.load(open(p))):
            total[Path(p).parent.name] += 1
    for p in sorted(scratch.glob("*/*/*.json")):
        if p.name.endswith(".failed.json"):
            continue
        fresh, kept = json.load(open(p)), json.load(open(committed / p.relative_to(scratch)))
        wall = set(kept.get("info", {}).get("wall_clock_metrics", ()))
        a = {k: v for k, v in kept["metrics"].items() if k not in wall}
        b = {k: v for k, v in fresh["metrics"].items() if k not in wall}
        if a == b:
            same[p.parent.name] += 1
        else:
            moved.append((fresh["job"]["name"], {k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)}))
    for spec in sorted(total, key=lambda s: ORDER.get(s, 9)):
        n_moved = sum(n.startswith(spec + "/") for n, _ in moved)
        print(f"{spec}: {same[spec] + n_moved} of {total[spec]} cache-hit records rerun with the caches off: "
              f"{same[spec]} identical, {n_moved} moved")
    print(f"identical {sum(same.values())}, moved {len(moved)}, not rerun {sum(total.values()) - sum(same.values()) - len(moved)}")
    for name, diff in moved:
        print(" ", name, diff)


if __name__ == "__main__":
    if sys.argv[1:2] == ["rerun"]:
        rerun(Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve())
    elif sys.argv[1:2] == ["compare"]:
        compare(Path(sys.argv[2]).resolve())
    else:
        raise SystemExit(__doc__)
