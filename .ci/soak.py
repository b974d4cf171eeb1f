"""The store soak (issue 55, item 4): local runners and SLURM submissions work one store for
ten minutes of smoke jobs while a chaos loop kills, stops and restarts them at random.

Jobs: the smoke tier of ``table9-bcl`` (a spec of the soak's own, 4 rows x 3 columns), whose
task ``soak`` (a unit package installed into the scratch folder, as a user's own package
is) sleeps 0.25-1.75 s and appends each execution's start and end, with its process, to the
jobs' run log. The jobs come in waves of :data:`WAVE_SEEDS` seeds (24 jobs): every runner runs
``pubench run table9-bcl --tier smoke --seeds K`` for the wave's K, and once the store holds
every job of the wave but WAVE_LEFT the next starts (K += 2), so the soak never runs dry.

Workers: ``--runners`` local runners (``--jobs 1``, ``--jobs 1``, ``--jobs 2``, ...; one
restarted a moment after it ends) and, where a SLURM cluster can be started (root, the
daemons or apt: tests/slurmcluster.py), a submission of the wave with ``--executor slurm``
now and then (array tasks of 4 jobs, 2 at a time). Chaos, every 1-8 s: SIGKILL of a
runner, or of one of a ``--jobs 2`` runner's workers; SIGTERM of a runner; SIGSTOP of a
runner, continued 1-15 s later; scancel of an array task.

When the time is up the chaos stops, every stopped runner is continued, the runners finish
their wave and SLURM its tasks, and one clean run finishes what was interrupted (a user's
rerun). Then:

* lost: jobs of the waves without exactly one valid ok record, and records seen during the
  soak that are gone or changed at its end;
* duplicates: jobs that ran twice: two executions at once, an execution started after the
  job's record was written, a record replaced by a second one, or two ``ok`` lines in the
  runners' logs;
* ``pubench verify`` of a sample of the records (bit for bit), and no failure record, claim,
  temp file or process left.

Exit 0 when there are no duplicates and nothing is lost and verify passes; the figures go to
stdout and, with ``--json``, to a file. docs/reliability.md holds the committed run's.

Usage: python .ci/soak.py [--seconds 600] [--runners 3] [--seed N] [--scratch DIR] [--no-slurm] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC_ID = "table9-bcl"
ROWS, COLS = ("A", "B", "C", "D"), ("x", "y", "z")
WAVE_SEEDS = 2
#: the next wave starts once at most this many jobs of the current one are left (a stopped
#: runner may hold one for 15 s: the others go on meanwhile, with the next wave's jobs)
WAVE_LEFT = 3
#: the mean seconds between chaos actions, and how long a stopped runner stays stopped
CHAOS_EVERY_S = (1.0, 8.0)
STOPPED_S = (1.0, 15.0)
#: how long the runners and SLURM get to finish their wave after the chaos, and the final run
SETTLE_S = 300

SPEC = f"""\
id: {SPEC_ID}
paper: bcl
kind: table
title: Store soak
caption: Smoke jobs of the store soak (.ci/soak.py).
version: 1
source: .ci/soak.py
metrics:
  score: {{label: Score, higher_is_better: true}}
rows: {list(ROWS)}
cols: {list(COLS)}
reported:
  seeds: 1
  pm: null
  cells: []
experiment:
  task: soak
  params: {{value: 0.0, sleep: 1.0}}
  rows: {{{", ".join(f"{r}: {{row: {r}, value: {i}.0}}" for i, r in enumerate(ROWS))}}}
  cols: {{{", ".join(f"{c}: {{col: {c}}}" for c in COLS)}}}
tiers:
  paper: {{seeds: 1}}
  reduced: {{seeds: 1}}
  smoke: {{seeds: 1}}
"""

UNITS = '''"""The store soak's task (.ci/soak.py): sleeps, and logs each execution's start and end."""

import os
import time

import numpy as np

from pubench.tasks.base import TASKS, Task
from pubench.utils.result import Result


def _log(event, params, seeds):
    path = os.environ.get("PUBENCH_SOAK_JOURNAL")
    if path:  # one write of one line, O_APPEND: lines of concurrent processes never interleave
        key = f"{params['row']}|{params['col']}|{seeds['init']}"
        where = "slurm" if os.environ.get("SLURM_JOB_ID") else "local"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{time.time():.6f} {os.getpid()} {event} {where} {key}\\n".encode())
        finally:
            os.close(fd)


@TASKS.register("soak")
class Soak(Task):
    info_keys = ("seeds",)
    test_config = {"value": 1.0, "row": "A", "col": "x", "sleep": 0.0}

    @classmethod
    def validate(cls, params):
        return params

    @classmethod
    def run(cls, params, seeds, ctx=None):  # ctx: the job's context (pubench.train.context), unused
        _log("start", params, seeds)
        time.sleep(float(params["sleep"]) * (0.25 + (seeds["init"] % 7) / 4.0))
        noise = np.random.default_rng(seeds["init"]).normal(0.0, 0.1)
        _log("end", params, seeds)
        return Result({"score": float(params["value"]) + float(noise)}, {"seeds": seeds})
'''

PROFILE = """\
common: {slurm_setup: []}
tiers:
  smoke: {timeout_min: 10, cpus_per_task: 1, mem_gb: 1, slurm_partition: cpu, slurm_array_parallelism: 2,
          jobs_per_task: 4}
"""


def say(text: str) -> None:
    print(f"soak {time.strftime('%H:%M:%S')}: {text}", flush=True)


# ---- the scratch registry, store and unit package --------------------------------------------
def setup(scratch: Path) -> dict[str, str]:
    """The soak's folders, spec, task package and SLURM profile; the environment of its commands."""
    for name in ("experiments/soak", "results", "reports", "logs", "cache", "cores", "profiles", "runs"):
        (scratch / name).mkdir(parents=True, exist_ok=True)
    (scratch / "experiments" / "soak" / f"{SPEC_ID}.yaml").write_text(SPEC)
    (scratch / "experiments" / "_planned.yaml").write_text("pu_method: {}\n")
    site = scratch / "site"
    (site / "pubench_soak_units").mkdir(parents=True, exist_ok=True)
    (site / "pubench_soak_units" / "__init__.py").write_text("")
    (site / "pubench_soak_units" / "units.py").write_text(UNITS)
    meta = site / "pubench_soak_units-0.1.dist-info"
    meta.mkdir(exist_ok=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: pubench-soak-units\nVersion: 0.1\n")
    (meta / "entry_points.txt").write_text("[pubench.units]\nsoak = pubench_soak_units.units\n")
    (scratch / "profiles" / "default.yaml").write_text(PROFILE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBENCH_")}
    env.update(PYTHONPATH=f"{ROOT}{os.pathsep}{site}", PUBENCH_HOME=str(ROOT),
               PUBENCH_EXPERIMENTS=str(scratch / "experiments"), PUBENCH_RESULTS=str(scratch / "results"),
               PUBENCH_REPORTS=str(scratch / "reports"), PUBENCH_LOGS=str(scratch / "logs"),
               PUBENCH_CACHE=str(scratch / "cache"), PUBENCH_CORE_SLOTS=str(scratch / "cores"),
               PUBENCH_SLURM_PROFILES=str(scratch / "profiles"), PUBENCH_SOAK_JOURNAL=str(scratch / "journal.log"),
               PUBENCH_NO_MALLOC_TUNING="1", PUBENCH_ENCODER_CACHE="0", PYTHONUNBUFFERED="1")
    return env


def pubench(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pubench", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


# ---- what the store holds, watched while the soak runs ------------------------------------------
class Watcher(threading.Thread):
    """Polls the store's ok records: the first version of each (its inode and the end of the
    run that wrote it) and every later replacement of one (a job that ran again)."""

    def __init__(self, folder: Path, every_s: float = 0.2):
        super().__init__(daemon=True)
        self.folder, self.every_s = folder, every_s
        self.first: dict[str, dict] = {}        # job id -> {end_unix, name, bytes, inode: the latest seen}
        self.replaced: Counter = Counter()      # job id -> replacements seen
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.poll()
            self.halt.wait(self.every_s)

    def poll(self) -> None:
        if not self.folder.is_dir():
            return
        for entry in os.scandir(self.folder):
            name = entry.name
            if not name.endswith(".json") or name.endswith(".failed.json") or name.startswith("."):
                continue
            job_id = name.split("--")[-1].split(".")[0]
            try:
                inode = entry.inode()
                seen = self.first.get(job_id)
                if seen is None:
                    data = Path(entry.path).read_bytes()
                    rec = json.loads(data)
                    end = dt.datetime.fromisoformat(rec["timing"]["end"]).timestamp()
                    self.first[job_id] = {"inode": inode, "end_unix": end, "name": name, "bytes": data}
                elif inode != seen["inode"]:
                    self.replaced[job_id] += 1
                    seen["inode"] = inode
            except (OSError, ValueError, KeyError, TypeError):
                continue  # renamed meanwhile, or a record that is not whole yet: the next poll sees it


# ---- runners, SLURM and the chaos ----------------------------------------------------------------
class Soak:
    def __init__(self, scratch: Path, env: dict[str, str], runners: int, rng: random.Random, cluster=None):
        self.scratch, self.env, self.rng, self.cluster = scratch, env, rng, cluster
        self.jobs_per_runner = [2 if i % 3 == 2 else 1 for i in range(runners)]
        self.procs: list[subprocess.Popen | None] = [None] * runners
        self.restart_at = [0.0] * runners
        self.stopped: dict[int, float] = {}    # pid -> when to continue it
        self.seeds = WAVE_SEEDS
        self.started = 0
        self.exits: Counter = Counter()
        self.n: Counter = Counter()
        self.logs: list[Path] = []
        self.submitting: subprocess.Popen | None = None

    # -- the waves
    def wave_done(self) -> bool:
        folder = self.scratch / "results" / "smoke" / SPEC_ID
        if not folder.is_dir():
            return False
        seeds = [int(m.group(1)) for p in os.scandir(folder)
                 if (m := re.search(r"__s(\d+)--[0-9a-f]+\.json$", p.name))]
        return sum(s < self.seeds for s in seeds) >= len(ROWS) * len(COLS) * self.seeds - WAVE_LEFT

    def argv(self, jobs: int) -> list[str]:
        return [sys.executable, "-m", "pubench", "run", SPEC_ID, "--tier", "smoke", "--seeds", str(self.seeds),
                "--jobs", str(jobs)]

    # -- local runners
    def launch(self, i: int) -> None:
        log = self.scratch / "runs" / f"runner-{self.started:05d}.log"
        self.logs.append(log)
        with open(log, "w") as out:
            out.write(f"$ {' '.join(self.argv(self.jobs_per_runner[i])[1:])}\n")
            out.flush()
            self.procs[i] = subprocess.Popen(self.argv(self.jobs_per_runner[i]), env=self.env, cwd=ROOT, stdout=out,
                                             stderr=subprocess.STDOUT, start_new_session=True)
        self.started += 1

    def reap(self, now: float, restart: bool = True) -> None:
        for i, p in enumerate(self.procs):
            if p is not None and p.poll() is not None:
                self.exits[p.returncode] += 1
                self.stopped.pop(p.pid, None)
                self.procs[i] = None
                self.restart_at[i] = now + self.rng.uniform(0.0, 2.0)
            if restart and self.procs[i] is None and now >= self.restart_at[i]:
                self.launch(i)

    def live(self) -> list[subprocess.Popen]:
        return [p for p in self.procs if p is not None and p.poll() is None]

    def workers(self, p: subprocess.Popen) -> list[int]:
        """The worker processes of runner ``p`` (its children running pubench's worker)."""
        try:
            kids = Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()
        except OSError:
            return []
        out = []
        for pid in map(int, kids):
            with contextlib.suppress(OSError):
                if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    out.append(pid)
        return out

    def signal(self, pid: int, sig: int) -> bool:
        try:
            os.kill(pid, sig)
            return True
        except ProcessLookupError:
            return False

    def continue_due(self, now: float, every: bool = False) -> None:
        for pid, when in list(self.stopped.items()):
            if every or now >= when:
                self.signal(pid, signal.SIGCONT)
                del self.stopped[pid]

    # -- SLURM
    def submit(self) -> None:
        """``run --executor slurm`` of the wave, in the background (one at a time)."""
        if self.submitting is None:
            log = self.scratch / "runs" / f"slurm-submit-{self.started:05d}.log"
            self.logs.append(log)
            with open(log, "w") as out:
                self.submitting = subprocess.Popen([*self.argv(1)[:-2], "--executor", "slurm"], env=self.env, cwd=ROOT,
                                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            self.submit_log = log

    def submitted(self, wait: bool = False) -> None:
        if self.submitting is None or (self.submitting.poll() is None and not wait):
            return
        rc = self.submitting.wait()
        text = self.submit_log.read_text(errors="replace")
        self.n["slurm submissions" if rc == 0 else "slurm submissions refused"] += 1
        self.n["slurm jobs submitted"] += sum(int(m) for m in re.findall(r"submitted (\d+) job", text))
        self.submitting = None

    def scancel(self) -> None:
        running = subprocess.run(["squeue", "-h", "-t", "R", "-o", "%i"], env=self.cluster.env, capture_output=True,
                                 text=True, timeout=30).stdout.split()
        if running:
            subprocess.run(["scancel", self.rng.choice(running)], env=self.cluster.env, capture_output=True, timeout=30)
            self.n["scancels"] += 1

    # -- the chaos
    def chaos(self, now: float) -> None:
        live = [p for p in self.live() if p.pid not in self.stopped]
        actions = ["kill", "kill worker", "term", "stop"] + (["slurm", "scancel"] if self.cluster else [])
        action = self.rng.choices(actions, weights=[3, 2, 3, 3] + ([1, 1] if self.cluster else []))[0]
        if action == "slurm":
            self.submit()
        elif action == "scancel":
            self.scancel()
        elif live:
            p = self.rng.choice(live)
            if action == "kill worker":
                pids = self.workers(p)
                if pids and self.signal(self.rng.choice(pids), signal.SIGKILL):
                    self.n["worker SIGKILLs"] += 1
            elif action == "kill" and self.signal(p.pid, signal.SIGKILL):
                self.n["SIGKILLs"] += 1
            elif action == "term" and self.signal(p.pid, signal.SIGTERM):
                self.n["SIGTERMs"] += 1
            elif action == "stop" and self.signal(p.pid, signal.SIGSTOP):
                self.n["SIGSTOPs"] += 1
                self.stopped[p.pid] = now + self.rng.uniform(*STOPPED_S)

    def run(self, seconds: float) -> None:
        t_end = time.time() + seconds
        next_chaos = time.time() + self.rng.uniform(*CHAOS_EVERY_S)
        last_report = time.time()
        if self.cluster:
            self.submit()
        while time.time() < t_end:
            now = time.time()
            if self.wave_done():
                self.seeds += WAVE_SEEDS
                self.n["waves"] += 1
            self.continue_due(now)
            self.reap(now)
            self.submitted()
            if now >= next_chaos:
                self.chaos(now)
                next_chaos = now + self.rng.uniform(*CHAOS_EVERY_S)
            if now - last_report >= 60:
                say(f"{int(seconds - (t_end - now))} s: wave of {self.seeds} seeds, "
                    + ", ".join(f"{k} {v}" for k, v in sorted(self.n.items())))
                last_report = now
            time.sleep(0.1)

    def settle(self) -> None:
        """Continue every stopped runner; let the runners end (they finish their wave and exit)
        and SLURM empty its queue; whatever still runs after SETTLE_S is terminated."""
        self.continue_due(0, every=True)
        self.submitted(wait=True)
        deadline = time.time() + SETTLE_S
        while time.time() < deadline and (self.live() or (self.cluster and self.cluster.queued())):
            self.reap(time.time(), restart=False)
            time.sleep(0.5)
        for p in self.live():
            p.terminate()
            self.n["SIGTERMs at the end"] += 1
        for p in self.procs:
            if p is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(60)
        self.reap(time.time(), restart=False)
        if self.cluster:
            self.cluster.drain(timeout=120)


# ---- the checks ---------------------------------------------------------------------------------
def journal(path: Path) -> dict[str, list[dict]]:
    """key (row|col|init seed) -> its executions: {pid, where (local, slurm), start, end (None: never ended)}."""
    runs: dict[str, list[dict]] = defaultdict(list)
    if not path.exists():
        return runs
    for line in path.read_text().splitlines():
        t, pid, event, where, key = line.split(" ", 4)
        if event == "start":
            runs[key].append({"pid": int(pid), "where": where, "start": float(t), "end": None})
        else:
            open_runs = [r for r in runs[key] if r["pid"] == int(pid) and r["end"] is None]
            if open_runs:
                open_runs[-1]["end"] = float(t)
    return runs


def ok_lines(logs: list[Path]) -> Counter:
    """Job name -> the runners' ``ok`` progress lines naming it (``[i/n] ok      <name>``)."""
    n: Counter = Counter()
    for log in logs:
        with contextlib.suppress(OSError):
            for m in re.finditer(r"^\s*\[\d+/\d+\] ok\s+(\S.*?)\s*$", log.read_text(errors="replace"), re.M):
                n[m.group(1)] += 1
    return n


def leftover_processes(env: dict[str, str]) -> list[int]:
    """The processes still running with this soak's environment (runners, workers, array tasks)."""
    mine = f"PUBENCH_SOAK_JOURNAL={env['PUBENCH_SOAK_JOURNAL']}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            with contextlib.suppress(OSError):
                if mine in (proc / "environ").read_bytes().split(b"\0"):
                    found.append(int(proc.name))
    return found


def check(scratch: Path, env: dict[str, str], seeds: int, watcher: Watcher, logs: list[Path], sample: int,
          sample_seed: int) -> dict:
    """The soak's figures: jobs, lost, duplicates (and why), leftovers, verify."""
    sys.path[:0] = [str(ROOT), env["PYTHONPATH"].split(os.pathsep)[-1]]
    os.environ.update({k: v for k, v in env.items() if k.startswith("PUBENCH_")})
    from pubench.jobs import expand
    from pubench.registry import get_spec
    from pubench.store import ResultStore

    jobs = expand(get_spec(SPEC_ID), "smoke", seeds=seeds).jobs
    folder = scratch / "results" / "smoke" / SPEC_ID
    store = ResultStore(scratch / "results")
    figures: dict = {"jobs": len(jobs)}
    lost, duplicates = [], defaultdict(list)
    runs, oks = journal(Path(env["PUBENCH_SOAK_JOURNAL"])), ok_lines(logs)
    for job in jobs:
        files = [p for p in folder.glob(f"*--{job.id}.json")]
        valid = [p for p in files if store.read_file(p)[0] is not None]
        seen = watcher.first.get(job.id)
        if len(valid) != 1 or len(files) != 1:
            lost.append(f"{job.name}: {len(valid)} valid ok record(s) of {len(files)}")
        elif seen is not None and (seen["name"] != files[0].name or (not watcher.replaced[job.id]
                                                                      and files[0].read_bytes() != seen["bytes"])):
            lost.append(f"{job.name}: its record changed")
        key = f"{job.params['row']}|{job.params['col']}|{job.seeds['init']}"
        done = sorted((r for r in runs.get(key, []) if r["end"] is not None), key=lambda r: r["start"])
        for a, b in zip(done, done[1:]):
            if b["start"] < a["end"]:
                duplicates[job.name].append(f"two executions at once (pids {a['pid']}, {b['pid']})")
        if seen is not None:
            # timing.end is in whole seconds: the run that wrote the record may have started after it
            later = [r for r in runs.get(key, []) if r["start"] > seen["end_unix"] + 1.0]
            if later:
                duplicates[job.name].append(f"{len(later)} execution(s) started after its record was written")
        if watcher.replaced[job.id]:
            duplicates[job.name].append(f"its record replaced {watcher.replaced[job.id]} time(s)")
        if oks[job.name] > 1:
            duplicates[job.name].append(f"{oks[job.name]} ok lines in the runners' logs")
    every = [r for v in runs.values() for r in v]
    figures.update(lost=len(lost), duplicates=len(duplicates), executions=len(every),
                   executions_cut_short=sum(r["end"] is None for r in every),
                   executions_by_slurm=sum(r["where"] == "slurm" for r in every),
                   lost_jobs=lost[:20], duplicate_jobs={k: v for k, v in list(duplicates.items())[:20]})
    figures["failure_records_left"] = len(list(folder.glob("*.failed.json")))
    figures["claims_left"] = len(list((folder / ".claims").glob("*"))) if (folder / ".claims").is_dir() else 0
    figures["temp_files_left"] = len([p for p in folder.rglob("*") if p.name.startswith(".tmp")])
    figures["processes_left"] = len(leftover_processes(env))
    verify_env = {k: v for k, v in env.items() if k != "PUBENCH_SOAK_JOURNAL"}
    out = pubench(verify_env, "verify", SPEC_ID, "--tier", "smoke", "--sample", str(sample), "--sample-seed",
                  str(sample_seed), "--no-progress", timeout=900)
    (scratch / "runs" / "verify.log").write_text(out.stdout + out.stderr)
    figures["verify"] = {"rc": out.returncode, "sample": sample,
                         "last_line": (out.stdout.strip().splitlines() or [""])[-1]}
    return figures


# ---- the soak ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=600, help="how long the chaos lasts (default 600)")
    p.add_argument("--runners", type=int, default=3, help="local runners at once (default 3: --jobs 1, 1, 2)")
    p.add_argument("--seed", type=int, default=None, help="the chaos's random seed (default: random, printed)")
    p.add_argument("--scratch", type=Path, default=None, help="the soak's folder (default: a new temporary one)")
    p.add_argument("--no-slurm", action="store_true", help="no SLURM cluster, local runners only")
    p.add_argument("--verify-sample", type=int, default=8, help="records `pubench verify` reruns (default 8)")
    p.add_argument("--json", type=Path, default=None, help="write the figures to this file too")
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="pubench-soak-"))
    env = setup(scratch)
    say(f"scratch {scratch}, seed {seed}, {args.seconds:.0f} s of chaos, {args.runners} runners "
        f"(--jobs {', '.join(str(2 if i % 3 == 2 else 1) for i in range(args.runners))})")
    t0 = time.time()
    with contextlib.ExitStack() as stack:
        cluster, why = None, "--no-slurm"
        if not args.no_slurm:
            sys.path.insert(0, str(ROOT))
            from tests.slurmcluster import Unavailable, running_cluster

            try:
                (scratch / "slurm").mkdir()
                cluster = stack.enter_context(running_cluster(scratch / "slurm"))
                env["SLURM_CONF"] = str(cluster.conf)
                why = ""
            except Unavailable as e:
                why = str(e)
        say(f"SLURM: {'a single-node cluster, submissions of each wave now and then' if cluster else why}")
        watcher = Watcher(scratch / "results" / "smoke" / SPEC_ID)
        watcher.start()
        soak = Soak(scratch, env, args.runners, random.Random(seed), cluster)
        try:
            soak.run(args.seconds)
        finally:
            soak.continue_due(0, every=True)
        chaos_s = time.time() - t0
        say(f"chaos over after {chaos_s:.0f} s; the runners and SLURM finish their wave")
        soak.settle()
    final = pubench(env, "run", SPEC_ID, "--tier", "smoke", "--seeds", str(soak.seeds), "--jobs", "2",
                    timeout=SETTLE_S)
    (scratch / "runs" / "final-run.log").write_text(final.stdout + final.stderr)
    soak.logs.append(scratch / "runs" / "final-run.log")
    m = re.search(r"(\d+) already done, (\d+) to run", final.stdout)
    watcher.poll()
    watcher.halt.set()
    figures = check(scratch, env, soak.seeds, watcher, soak.logs, args.verify_sample, seed)
    figures.update(date=dt.date.today().isoformat(), seed=seed, chaos_s=round(chaos_s), wall_s=round(time.time() - t0),
                   runners=args.runners, runner_starts=soak.started, runner_exits=dict(sorted(soak.exits.items())),
                   slurm=bool(cluster), waves=soak.n["waves"] + 1, seeds=soak.seeds,
                   final_run={"rc": final.returncode, "left_to_it": int(m.group(2)) if m else None},
                   **{k.replace(" ", "_"): v for k, v in sorted(soak.n.items()) if k != "waves"})
    ok = (figures["duplicates"] == 0 and figures["lost"] == 0 and figures["verify"]["rc"] == 0
          and final.returncode == 0 and not figures["failure_records_left"] and not figures["claims_left"]
          and not figures["processes_left"])
    figures["ok"] = ok
    print(json.dumps(figures, indent=1), flush=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    say(f"{'PASSED' if ok else 'FAILED'}: {figures['jobs']} jobs in {figures['waves']} waves, "
        f"{figures['executions']} executions ({figures['executions_by_slurm']} by SLURM, "
        f"{figures['executions_cut_short']} cut short), {soak.n['SIGKILLs'] + soak.n['worker SIGKILLs']} SIGKILLs, "
        f"{soak.n['SIGTERMs']} SIGTERMs, {soak.n['SIGSTOPs']} SIGSTOPs, {soak.n['slurm submissions']} SLURM submissions, "
        f"{soak.n['scancels']} scancels; duplicates {figures['duplicates']}, lost {figures['lost']}, "
        f"verify {'ok' if figures['verify']['rc'] == 0 else 'FAILED'}; {figures['wall_s']} s; logs in {scratch / 'runs'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
