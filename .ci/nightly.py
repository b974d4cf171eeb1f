"""The nightly regression (``.ci/nightly``): tonight's share of the checks, its projected time, its report.

Tonight's share follows from the date alone, so two machines agree on it and a rerun of a
night repeats it:

* ``pubench verify`` of a sample of every committed table, at every tier with records, the
  sample drawn with the date's ordinal as its seed (each night reruns other records);
* one fresh seed of the reduced cells whose rotation day is tonight's weekday, run into a
  scratch store and compared with the committed cells (``pubench compare``). A cell's day is
  a hash of its spec, row and column: it never moves when cells are added or records
  change, so every reduced cell is compared within any 7 consecutive nights;
* two checks of every night (:data:`CHECKS`): the generated-input tests at their thorough
  budget (``pytest -m fuzz``, thousands of cases from the date's seed: a night's cases are
  tried again by its rerun) and the store soak (``.ci/soak.py``: ten minutes of runners and
  a SLURM submission killed, stopped and restarted at random, then no job run twice, none
  lost, ``verify`` of a sample), each charged its measured time.

The projection reads the committed records' ``timing.wall_s``. A record that used a cache
(an encoder or training prefix another job made, or a computation shared with another
job) took less than a fresh run of its job, which is what both checks do (``verify`` turns
the caches off, and tonight's cells need not meet the job that made the cache), so it is
charged its maker's wall time. The jobs of one command run on ``--jobs 2`` workers: a
command's projected time is the longest-first schedule of its jobs on the workers, plus
its start-up.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DAYS = 7
WORKERS = 2
BUDGET_S = 8 * 3600
VERIFY_SAMPLE = 2
#: a command's start-up before its first job: the interpreter, torch and the specs (measured about 10 s on
#: the 2 busy cores, 2026-11-30; counted twice for safety)
COMMAND_START_S = 20.0
#: the fixed checks of every night: name -> (command from the repository root, with {seed} and {scratch};
#: projected seconds: the measured time on the 2 busy cores, 2026-11-29, with a margin)
CHECKS = {
    # 4,400 cases of the 11 generated-input tests: 8.3-9 min with -n 0, 4.1-5.4 min with -n 2 at load 2-4
    "generated inputs (thorough budget)": (
        ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile", "-m", "fuzz",
         "tests"], 900.0),
    # 600 s of chaos, then the runners' last wave, SLURM's queue, the final run and verify: 11.1-11.2 min measured
    "store soak": (["{python}", ".ci/soak.py", "--seconds", "600", "--seed", "{seed}",
                    "--scratch", "{scratch}/soak", "--json", "{scratch}/soak.json"], 1020.0),
}


@dataclass
class Command:
    """One pubench command of the night and the jobs it runs, each with its projected seconds."""

    kind: str               # "verify" | "run"
    tier: str
    spec_id: str
    argv: list[str]
    job_seconds: list[float] = field(default_factory=list)

    @property
    def projected_s(self) -> float:
        return COMMAND_START_S + makespan(self.job_seconds, WORKERS)


@dataclass
class Check:
    """A fixed check of every night (:data:`CHECKS`): a command run from the repository root."""

    name: str
    argv: list[str]
    projected_s: float


@dataclass
class NightPlan:
    date: dt.date
    day: int
    verify: list[Command]
    fresh: list[Command]
    fresh_cells: int
    reduced_cells: int
    sample: int
    checks: list[Check] = field(default_factory=list)

    @property
    def projected_s(self) -> float:
        return sum(c.projected_s for c in self.verify + self.fresh) + sum(c.projected_s for c in self.checks)

    def summary(self) -> str:
        hours = lambda cmds: sum(c.projected_s for c in cmds) / 3600  # noqa: E731
        return (f"nightly {self.date} (rotation day {self.day + 1} of {DAYS}, {self.date:%A}): "
                f"verify {self.sample} record(s) of each of {len(self.verify)} committed tables "
                f"({hours(self.verify):.1f} h); one fresh seed of {self.fresh_cells} of the {self.reduced_cells} "
                f"reduced cells in {len(self.fresh)} tables, compared with the committed ones ({hours(self.fresh):.1f} h); "
                f"{' and '.join(c.name for c in self.checks) or 'no fixed check'} "
                f"({sum(c.projected_s for c in self.checks) / 3600:.1f} h); "
                f"projected {self.projected_s / 3600:.1f} h on {WORKERS} cores from the committed records' wall times "
                f"(budget {BUDGET_S / 3600:.0f} h)")


def makespan(seconds: list[float], workers: int) -> float:
    """The end of the longest-first schedule of ``seconds`` on ``workers`` (how a local run's
    workers take jobs, up to its order)."""
    loads = [0.0] * workers
    for s in sorted(seconds, reverse=True):
        loads[loads.index(min(loads))] += s
    return max(loads)


def rotation_day(spec_id: str, row: str, col: str) -> int:
    """The night of the week (0 = Monday) a reduced cell gets its fresh seed."""
    digest = hashlib.sha256(f"{spec_id}|{row}|{col}".encode()).hexdigest()
    return int(digest, 16) % DAYS


def only_pattern(row: str, col: str) -> str:
    """``--only`` for exactly this cell (glob characters in names matched literally)."""
    def literal(name: str) -> str:
        return "".join(f"[{c}]" if c in "*?[" else c for c in name)

    return f"{literal(row)}|{literal(col)}"


def fresh_seconds(record: dict, makers: dict[str, float]) -> float:
    """What a fresh run of ``record``'s job takes: its wall time, or, where it used a cache or
    another job's computation, that of the job that made it (whichever is longer)."""
    wall = float(record["timing"]["wall_s"])
    info = record.get("info") or {}
    pre = info.get("pretrain") if isinstance(info.get("pretrain"), dict) else {}
    cache = info.get("encoder_cache") if isinstance(info.get("encoder_cache"), dict) else {}
    prefix = pre.get("prefix_cache") if isinstance(pre.get("prefix_cache"), dict) else {}
    shared = info.get("shared_from") if isinstance(info.get("shared_from"), dict) else {}
    if cache.get("hit"):
        wall = max(wall, makers.get(f"encoder:{cache.get('key')}", wall))
    if prefix.get("started_at_epoch"):
        wall = max(wall, makers.get(f"prefix:{prefix.get('key')}", wall))
    if shared:
        wall = max(wall, float((shared.get("timing") or {}).get("wall_s", wall)))
    return wall


def cache_makers(records: list[dict]) -> dict[str, float]:
    """``encoder:<key>`` / ``prefix:<key>`` -> the longest wall time of a record that made that
    cache entry (ran the computation instead of reading it)."""
    makers: dict[str, float] = {}
    for rec in records:
        info = rec.get("info") or {}
        pre = info.get("pretrain") if isinstance(info.get("pretrain"), dict) else {}
        wall = float(rec["timing"]["wall_s"])
        cache = info.get("encoder_cache") if isinstance(info.get("encoder_cache"), dict) else {}
        if cache.get("key") and not cache.get("hit"):
            makers[f"encoder:{cache['key']}"] = max(wall, makers.get(f"encoder:{cache['key']}", 0.0))
        prefix = pre.get("prefix_cache") if isinstance(pre.get("prefix_cache"), dict) else {}
        if prefix.get("key") and not prefix.get("started_at_epoch"):
            makers[f"prefix:{prefix['key']}"] = max(wall, makers.get(f"prefix:{prefix['key']}", 0.0))
    return makers


def committed_records(results: Path) -> dict[tuple[str, str], list[dict]]:
    """(tier, spec id) -> the valid ok records of the store at ``results``."""
    from pubench.store import ResultStore

    store = ResultStore(results)
    out = {}
    for tier in store.tiers():
        for folder in sorted(p for p in (results / tier).iterdir() if p.is_dir() and not p.name.startswith(".")):
            recs = store.scan(tier, folder.name).records
            if recs:
                out[(tier, folder.name)] = recs
    return out


def plan_night(records: dict[tuple[str, str], list[dict]], date: dt.date, sample: int = VERIFY_SAMPLE) -> NightPlan:
    """Tonight's commands for the committed ``records`` (see the module's docstring)."""
    from pubench.verify import sample_records

    makers = cache_makers([r for recs in records.values() for r in recs])
    seed = date.toordinal()
    verify = []
    for (tier, spec_id), recs in sorted(records.items()):
        chosen = sample_records(recs, sample, seed)
        verify.append(Command("verify", tier, spec_id,
                              ["verify", spec_id, "--tier", tier, "--sample", str(sample), "--sample-seed", str(seed),
                               "--jobs", str(WORKERS), "--no-progress"],
                              [fresh_seconds(r, makers) for r in chosen]))
    day = date.weekday()
    fresh, n_cells, n_tonight = [], 0, 0
    for (tier, spec_id), recs in sorted(records.items()):
        if tier != "reduced":
            continue
        cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for r in recs:
            cells[(r["job"]["row"], r["job"]["col"])].append(r)
        n_cells += len(cells)
        tonight = sorted(cell for cell in cells if rotation_day(spec_id, *cell) == day)
        if not tonight:
            continue
        n_tonight += len(tonight)
        argv = ["run", spec_id, "--tier", "reduced", "--seeds", "1", "--jobs", str(WORKERS), "--no-progress"]
        for row, col in tonight:
            argv += ["--only", only_pattern(row, col)]
        seconds = [fresh_seconds(min(cells[cell], key=lambda r: r["job"]["seed_index"]), makers) for cell in tonight]
        fresh.append(Command("run", "reduced", spec_id, argv, seconds))
    return NightPlan(date, day, verify, fresh, n_tonight, n_cells, sample, checks(date))


def checks(date: dt.date, scratch: Path | str = "SCRATCH") -> list[Check]:
    """Tonight's fixed checks, their seeds the date's ordinal (a rerun of a night repeats it)."""
    fill = {"python": str(ROOT / ".venv" / "bin" / "python"), "seed": str(date.toordinal()), "scratch": str(scratch)}
    return [Check(name, [a.format(**fill) for a in argv], seconds) for name, (argv, seconds) in CHECKS.items()]


# ---- running the night and writing its report ------------------------------------------


def run_command(argv: list[str], env: dict[str, str], log: Path) -> tuple[int, str, float]:
    t0 = time.time()
    out = subprocess.run([str(ROOT / ".venv" / "bin" / "pubench"), *argv], env=env, cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.write_text(f"$ pubench {shlex.join(argv)}\n{out.stdout}")
    return out.returncode, out.stdout, time.time() - t0


def check_summary(output: str) -> str:
    """The line a fixed check ends with: the soak's verdict, or the tests' generated-input count."""
    keep = [line.strip() for line in output.splitlines()
            if line.startswith("soak ") and ("PASSED" in line or "FAILED" in line) or "generated inputs, " in line]
    last = [line.strip() for line in output.strip().splitlines()[-1:]]
    return "; ".join(keep[-1:] + [x for x in last if x not in keep[-1:]])[:600]


def verify_problems(output: str) -> list[str]:
    """The lines of a ``pubench verify`` output that say what did not reproduce."""
    keep = ("<-- FAIL", "stale record", "corrupt record", "FAIL:")
    return [line.rstrip() for line in output.splitlines() if any(k in line for k in keep)]


def failed_jobs(store: Path) -> list[str]:
    """``name: first line of the error`` of every failure record in ``store``."""
    out = []
    for path in sorted(store.glob("*/*/*.failed.json")):
        try:
            rec = json.loads(path.read_text())
            error = rec.get("error") or {}
            out.append(f"{rec['job']['name']}: {error.get('type', '')}: {error.get('message', '')}".strip()[:300])
        except (OSError, ValueError, KeyError):
            out.append(f"{path}: unreadable failure record")
    return out


def write_report(path: Path, plan: NightPlan, outcomes: dict, elapsed_s: float) -> None:
    """The night's regression report: what moved beyond tolerance, what failed, what passed."""
    failed_verify = {k: v for k, v in outcomes["verify"].items() if v["rc"] != 0}
    lines = [f"# Nightly regression {plan.date}", "",
             f"{plan.summary()}.", "",
             f"Took {elapsed_s / 3600:.2f} h (projected {plan.projected_s / 3600:.2f} h).", "",
             "## Moved beyond tolerance", ""]
    moved = outcomes["compare"]["flagged"]
    lines += ([f"`pubench compare` flagged {len(moved)} cell metric(s) of tonight's fresh seeds against the "
               "committed cells:", "", "```", *moved, "```"] if moved
              else [f"Nothing: {outcomes['compare']['summary'] or 'no cell compared'}."])
    lines += ["", "## Failed", ""]
    problems = []
    for (tier, spec_id), v in sorted(failed_verify.items()):
        problems.append(f"- `pubench verify {spec_id} --tier {tier}` (exit {v['rc']}):")
        problems += [f"  - `{line.strip()}`" for line in v["problems"]] or ["  - see its log"]
    for spec_id, v in sorted(outcomes["run"].items()):
        if v["rc"] != 0:
            problems.append(f"- `pubench run {spec_id}` (fresh seed, exit {v['rc']})")
    problems += [f"- job `{line}`" for line in outcomes["failed_jobs"]]
    checks = outcomes.get("checks", {})
    problems += [f"- {name} (exit {v['rc']}): {v['summary'] or 'see its log'}" for name, v in checks.items() if v["rc"]]
    if outcomes["compare"]["rc"] not in (0, 1):
        problems.append(f"- `pubench compare` (exit {outcomes['compare']['rc']}): see its log")
    lines += problems or ["Nothing."]
    passed = len(outcomes["verify"]) - len(failed_verify)
    lines += ["", "## Passed", "",
              f"- verify: {passed} of {len(outcomes['verify'])} tables reproduced their sampled records",
              f"- fresh seeds: {plan.fresh_cells} cells in {len(plan.fresh)} tables",
              *[f"- {name}: {v['summary']}" for name, v in checks.items() if not v["rc"]],
              "", "Logs of every command: `logs/` beside this report.", ""]
    path.write_text("\n".join(lines))


def run_night(plan: NightPlan, scratch: Path) -> int:
    logs = scratch / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    fresh_store = scratch / "results"
    env = {**os.environ, "PUBENCH_PROGRESS": "0"}
    fresh_env = {**env, "PUBENCH_RESULTS": str(fresh_store), "PUBENCH_REPORTS": str(scratch / "reports")}
    outcomes: dict = {"verify": {}, "run": {}, "compare": {"rc": 0, "flagged": [], "summary": ""}}
    t0 = time.time()
    shared = ROOT.parent / "shared" / "data"
    if shared.is_dir():  # the jobs read $PUBENCH_DATA; the lossy CIFAR-10 copy exists only there
        rc, _, took = run_command(["prepare", "--from", str(shared)], env, logs / "prepare.log")
        print(f"nightly: prepare --from {shared}: {'ok' if rc == 0 else f'exit {rc}'}, {took:.0f} s", flush=True)
    for c in plan.verify:
        rc, out, took = run_command(c.argv, env, logs / f"verify-{c.tier}-{c.spec_id}.log")
        outcomes["verify"][(c.tier, c.spec_id)] = {"rc": rc, "problems": verify_problems(out)}
        print(f"nightly: verify {c.spec_id} ({c.tier}): {'ok' if rc == 0 else f'FAILED (exit {rc})'}, "
              f"{took:.0f} s (projected {c.projected_s:.0f} s)", flush=True)
    for c in plan.fresh:
        rc, _, took = run_command(c.argv, fresh_env, logs / f"run-{c.spec_id}.log")
        outcomes["run"][c.spec_id] = {"rc": rc}
        print(f"nightly: fresh seed of {len(c.job_seconds)} cell(s) of {c.spec_id}: "
              f"{'ok' if rc == 0 else f'exit {rc}'}, {took:.0f} s (projected {c.projected_s:.0f} s)", flush=True)
    if plan.fresh:
        ids = [c.spec_id for c in plan.fresh]
        rc, out, _ = run_command(["compare", *ids, "--baseline", str(ROOT / "results"), "--tier", "reduced",
                                  "--only-flagged"], fresh_env, logs / "compare.log")
        body = out.strip().splitlines()
        outcomes["compare"] = {"rc": rc, "flagged": body[:-1] if rc == 1 else [], "summary": body[-1] if body else ""}
    outcomes["failed_jobs"] = failed_jobs(fresh_store)
    outcomes["checks"] = {}
    for c in checks(plan.date, scratch):
        t = time.time()
        out = subprocess.run(c.argv, cwd=ROOT, env={**env, "PUBENCH_FUZZ_SEED": str(plan.date.toordinal())},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        name = "check-" + "".join(ch if ch.isalnum() else "-" for ch in c.name)
        (logs / f"{name}.log").write_text(f"$ {shlex.join(c.argv)}\n{out.stdout}")
        outcomes["checks"][c.name] = {"rc": out.returncode, "summary": check_summary(out.stdout)}
        print(f"nightly: {c.name}: {'ok' if out.returncode == 0 else f'FAILED (exit {out.returncode})'}, "
              f"{time.time() - t:.0f} s (projected {c.projected_s:.0f} s)", flush=True)
    report = scratch / "report.md"
    write_report(report, plan, outcomes, time.time() - t0)
    print(f"nightly: report {report}")
    bad = (any(v["rc"] for v in outcomes["verify"].values()) or any(v["rc"] for v in outcomes["run"].values())
           or outcomes["compare"]["rc"] != 0 or outcomes["failed_jobs"]
           or any(v["rc"] for v in outcomes["checks"].values()))
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="bash .ci/nightly runs it after `make install`")
    p.add_argument("--date", type=dt.date.fromisoformat, default=dt.date.today(),
                   help="the night whose share to run (default: today), YYYY-MM-DD")
    p.add_argument("--scratch", type=Path, default=None, help="where the fresh store, the logs and report.md go "
                   "(default: a new temporary folder)")
    p.add_argument("--plan", action="store_true", help="print the plan and its projection; run nothing")
    args = p.parse_args(argv)
    sample = int(os.environ.get("PUBENCH_VERIFY_SAMPLE") or VERIFY_SAMPLE)
    plan = plan_night(committed_records(ROOT / "results"), args.date, sample)
    print(plan.summary(), flush=True)
    if plan.projected_s > BUDGET_S:
        print(f"nightly: warning: tonight's share is projected over the {BUDGET_S / 3600:.0f} h budget", flush=True)
    if args.plan:
        for c in plan.verify + plan.fresh:
            print(f"  {c.projected_s / 60:6.1f} min  pubench {shlex.join(c.argv)}")
        for c in plan.checks:
            print(f"  {c.projected_s / 60:6.1f} min  {shlex.join(c.argv)}")
        return 0
    if args.scratch is None:
        import tempfile

        args.scratch = Path(tempfile.mkdtemp(prefix="pubench-nightly-"))
    print(f"nightly: scratch folder {args.scratch}", flush=True)
    return run_night(plan, args.scratch)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
