"""How long the read-only commands take, and their peak memory (issue 34).

Usage: python benchmarks/cli.py [--runs 3] [--records 20000] [--baseline PATH] [--only list,status]

Each command runs as ``python -m pubench ...`` in a fresh process (as a user types it), on
the committed store (``results/``) and on a generated store of ``--records`` records (the
committed records, each copied under further seed indices and new job ids until there are
that many: valid records of the current configs, so ``status`` and ``report`` read and
aggregate all of them). Per command: the first run on an empty ``$PUBENCH_CACHE`` (cold:
it fills the spec, unit and plot caches) and the best of ``--runs`` runs after it (warm),
wall-clock seconds and peak RSS, and the ratio of the warm time to ``python -c "import
yaml, json"`` (the floor of any Python command here). ``--baseline PATH`` times another
checkout the same way in the same call (e.g. ``git worktree add /tmp/main-before <sha>``),
so before and after share the machine's load; the load average is printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = {
    "list": ["list"],
    "show": ["show", "table2-punce"],
    "status": ["status"],
    "coverage": ["coverage"],
    "report": ["report"],
}
BIG = ("status", "report")  # the commands timed on the generated store too


def run_once(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit status) of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def measure(argv, cwd, env, runs: int) -> dict:
    cold = run_once(argv, cwd, env)
    warm = [run_once(argv, cwd, env) for _ in range(runs)]
    best = min(warm)
    return {"cold_s": cold[0], "warm_s": best[0], "rss_mb": max(w[1] for w in warm), "rc": best[2]}


def make_big_store(src: Path, dest: Path, n: int) -> int:
    """Copy ``src`` to ``dest`` and add copies of its ok records under new seed indices until
    ``dest`` holds ``n`` ok records."""
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".checkpoints", ".claims", "quarantine"))
    records = sorted(p for p in dest.glob("*/*/*.json") if not p.name.endswith(".failed.json"))
    have, k = len(records), 1
    while have < n:
        for p in records:
            if have >= n:
                break
            rec = json.loads(p.read_text())
            job = rec["job"]
            job["seed_index"] += 1000 * k
            job["id"] = hashlib.sha256(f"{job['id']}/{k}".encode()).hexdigest()[:16]
            stem = p.name.split("__s")[0]
            (p.parent / f"{stem}__s{job['seed_index']}--{job['id']}.json").write_text(
                json.dumps(rec, indent=1, sort_keys=True) + "\n")
            have += 1
        k += 1
    return have


def time_checkout(root: Path, stores: dict[str, Path], runs: int, only: list[str], scratch: Path) -> dict:
    out = {}
    for store_name, store in stores.items():
        cache = scratch / f"cache-{root.name}-{store_name}"
        env = {**os.environ, "PYTHONPATH": str(root), "PUBENCH_HOME": str(root), "PUBENCH_RESULTS": str(store),
               "PUBENCH_REPORTS": str(scratch / f"reports-{root.name}-{store_name}"), "PUBENCH_CACHE": str(cache)}
        env.pop("PUBENCH_META_CACHE", None)
        for name in only:
            if store_name != "committed" and name not in BIG:
                continue
            out[(store_name, name)] = measure([sys.executable, "-m", "pubench", *COMMANDS[name]], root, env, runs)
            print(f"  {root.name:>16} {store_name:>9} {name:<9} {out[(store_name, name)]}", file=sys.stderr, flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="warm runs per command; the best is kept (default 3)")
    ap.add_argument("--records", type=int, default=20000, help="records of the generated store (0: skip it)")
    ap.add_argument("--baseline", type=Path, help="another checkout to time the same way (before/after)")
    ap.add_argument("--only", default=",".join(COMMANDS), help="commands, comma-separated")
    args = ap.parse_args()
    only = [c for c in args.only.split(",") if c]
    scratch = Path(tempfile.mkdtemp(prefix="pubench-bench-cli-"))
    try:
        stores = {"committed": ROOT / "results"}
        if args.records:
            n = make_big_store(ROOT / "results", scratch / "big", args.records)
            stores[f"{n // 1000}k"] = scratch / "big"
        floor = min(run_once([sys.executable, "-c", "import yaml, json"], ROOT, dict(os.environ))[0]
                    for _ in range(max(3, args.runs)))
        checkouts = [("after", ROOT)] + ([("before", args.baseline.resolve())] if args.baseline else [])
        results = {label: time_checkout(root, stores, args.runs, only, scratch) for label, root in checkouts}
        load = os.getloadavg()
        print(f"# pubench CLI, {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
              f"(1 / 5 / 15 min); best of {args.runs} warm runs; `python -c \"import yaml, json\"`: {floor:.3f} s\n")
        head = ["store", "command"]
        for label, _ in checkouts:
            head += [f"{label}: cold s", f"{label}: warm s", f"{label}: peak MB", f"{label}: x floor"]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for key in results["after"]:
            row = list(key)
            for label, _ in checkouts:
                r = results[label].get(key)
                row += ["-"] * 4 if r is None else [f"{r['cold_s']:.2f}", f"{r['warm_s']:.2f}", f"{r['rss_mb']:.0f}",
                                                    f"{r['warm_s'] / floor:.0f}"]
            print("| " + " | ".join(row) + " |")
        bad = [(label, k) for label, _ in checkouts for k, r in results[label].items() if r["rc"] != 0]
        if bad:
            print(f"\nnon-zero exit: {bad}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
