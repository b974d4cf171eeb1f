"""SLURM executor through submitit: one job array per submission, submit and return.

Resources come from a profile ``slurm/<profile>.yaml``::

    common:  {slurm_setup: ["export MALLOC_MMAP_MAX_=0"], ...}   # any submitit AutoExecutor parameter
    tiers:
      paper:   {timeout_min: 1440, gpus_per_node: 1, slurm_partition: gpu, slurm_array_parallelism: 64}
      reduced: {...}
      smoke:   {...}

Two profile keys are pubench's, not submitit's: ``checkpoint_every_epochs`` (how often a
job writes its training checkpoint, :mod:`pubench.train.checkpoint`; ``--checkpoint-every``
overrides it) and ``max_num_timeout`` (how many times a job that reaches its time limit is
requeued; submitit's ``slurm_max_num_timeout``). SLURM sends SIGUSR2 ``slurm_signal_delay_s``
seconds before the limit (submitit's ``--signal=USR2@<delay>``): the job finishes its epoch,
writes a checkpoint and an "interrupted" record, and submitit requeues it
(:class:`CheckpointedJob`); the requeued job resumes from the checkpoint.

Each array task runs :func:`execute_job` for one job, or for a chunk of ``jobs_per_task``
short jobs one after the other in one process (:class:`CheckpointedChunk`; the profile key, an
integer or ``auto``: chunks of about two minutes of job time sized from the store's past records
of the same spec and tier, 16 jobs per task at the smoke tier when there are none, else 1), so a
sub-second job does not pay a process start-up and the imports each. ``jobs_per_gpu`` (an
integer, default 1) packs that many jobs at once onto a task's GPU (:class:`PackedChunk`:
concurrent worker processes of the local executor in the task, each job claimed and recorded
as always; a task then holds ``jobs_per_task x jobs_per_gpu`` jobs): the paper tier's small
nets leave most of a GPU idle (docs/gpu.md). Give such a task the CPUs and memory of that
many jobs (``cpus_per_task``, ``mem_gb``). Each job writes its own record to the result store, so the launcher never waits: ``pubench status`` and ``pubench report`` read the
store later. A manifest (job id -> SLURM id -> log paths) goes to the logs folder, which
must be shared with the compute nodes (never /tmp).
"""

from __future__ import annotations

import json
import shlex
import shutil
import socket
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import yaml

from pubench.errors import PubenchError
from pubench.executors.base import EXECUTORS, Executor, ExecutorContext, Submission, job_summary
from pubench.errors import JobInterrupted
from pubench.executors.worker import DEFAULT_CHECKPOINT_EVERY, execute_job
from pubench.jobs.plan import Job
from pubench.utils.io import loads_json
from pubench.utils.io import atomic_write_json

DEFAULT_MAX_NUM_TIMEOUT = 3   # submitit's default
#: ``jobs_per_task: auto``: a chunk holds about this much job time, at most MAX_JOBS_PER_TASK jobs
CHUNK_TARGET_S, MAX_JOBS_PER_TASK, SMOKE_JOBS_PER_TASK = 120.0, 64, 16
SLURM_COMMANDS = ("sbatch", "srun")
ACTIVE_STATES = {"PENDING", "RUNNING", "REQUEUED", "CONFIGURING", "COMPLETING", "SUSPENDED", "RESIZING"}


class ProfileError(PubenchError, ValueError):
    pass


def load_profile(path: str | Path, tier: str) -> dict[str, Any]:
    """The submitit parameters of ``tier`` in a profile file (common merged under the tier's)."""
    path = Path(path)
    if not path.exists():
        raise ProfileError(f"no SLURM profile {path} (profiles: slurm/<name>.yaml)")
    data = yaml.safe_load(path.read_text()) or {}
    tiers = data.get("tiers") or {}
    if tier not in tiers:
        raise ProfileError(f"{path}: tiers.{tier}: missing (the profile has {', '.join(tiers) or 'no tiers'})")
    return {**(data.get("common") or {}), **(tiers[tier] or {})}


def sbatch_parameters(params: dict[str, Any]) -> dict[str, Any]:
    """submitit's generic names -> sbatch names, as submitit's AutoExecutor converts them."""
    rename = {"timeout_min": "time", "tasks_per_node": "ntasks_per_node", "name": "job_name"}
    out: dict[str, Any] = {}
    for k, v in params.items():
        if k == "mem_gb":
            out["mem"] = f"{v}GB"
        elif k.startswith("slurm_"):
            out[k[len("slurm_"):]] = v
        else:
            out[rename.get(k, k)] = v
    return out


def numerics_setup(params: dict[str, Any], numerics_profile=None) -> dict[str, Any]:
    """``params`` with ``slurm_setup`` exporting the numerics environment (every variable
    of :func:`pubench.numerics.process_env` for the canonical profile: the libraries read
    them when they load, so the batch script must set them before Python starts)."""
    from pubench import numerics

    env = numerics.process_env(numerics_profile)
    exports = [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    have = list(params.get("slurm_setup") or [])
    return {**params, "slurm_setup": have + [e for e in exports if e not in have]}


class CheckpointedJob:
    """:func:`execute_job` as submitit runs it, checkpointable in submitit's sense: on
    SLURM's pre-timeout signal the job stops at an epoch boundary with a checkpoint (the
    worker), then submitit's own handler runs, calls :meth:`checkpoint` and requeues the
    same call, which resumes from the checkpoint."""

    def __call__(self, job: dict, results_root: str, claim: bool = True, force: bool = False,
                 checkpoint_every: int | None = None) -> str:
        import signal

        try:
            return execute_job(job, results_root, claim, force, checkpoint_every)
        except JobInterrupted as exc:
            handler = signal.getsignal(exc.signum)  # the worker put submitit's handler back
            if exc.signum != signal.SIGTERM and callable(handler):
                handler(exc.signum, None)  # submitit: checkpoint() -> requeue -> exit
            raise

    def checkpoint(self, *args: Any, **kwargs: Any):
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self, *args, **kwargs)


class PackedChunk(CheckpointedJob):
    """Jobs sharing one array task's GPU, ``lanes`` at once: the local executor's worker
    processes inside the task (core slots off: the scheduler gave the task its cores). A stop
    signal (SLURM's pre-timeout SIGUSR2, SIGTERM) stops every lane at its next epoch boundary
    with a checkpoint, within ``stop_grace_s``; then submitit requeues the task, whose finished
    jobs are skipped and whose stopped ones resume."""

    def __init__(self, lanes: int, stop_grace_s: float = 60.0):
        self.lanes = lanes
        self.stop_grace_s = stop_grace_s

    def __call__(self, jobs: list[dict], results_root: str, claim: bool = True, force: bool = False,
                 checkpoint_every: int | None = None) -> dict[str, int]:
        import os
        import signal

        from pubench.executors.local import LocalExecutor
        from pubench.executors.worker import STOP_SIGNALS

        os.environ["PUBENCH_CORE_SLOTS"] = "off"
        ex = LocalExecutor(results_root, n_jobs=self.lanes, progress=False, force=force,
                           checkpoint_every=checkpoint_every)
        ex.stop_signals, ex.stop_grace_s = STOP_SIGNALS, self.stop_grace_s
        try:
            return dict(ex.run([Job.from_dict(j) for j in jobs]))
        except JobInterrupted as exc:
            handler = signal.getsignal(exc.signum)  # the local executor put submitit's handler back
            if exc.signum != signal.SIGTERM and callable(handler):
                handler(exc.signum, None)  # submitit: checkpoint() -> requeue -> exit
            raise


class CheckpointedChunk(CheckpointedJob):
    """Several short jobs in one array task, one after the other. A requeued chunk is the
    same call: its finished jobs are in the store and are skipped, the interrupted one
    resumes from its checkpoint."""

    def __call__(self, jobs: list[dict], results_root: str, claim: bool = True, force: bool = False,
                 checkpoint_every: int | None = None) -> list[str]:
        return [super(CheckpointedChunk, self).__call__(job, results_root, claim, force, checkpoint_every)
                for job in jobs]


def jobs_per_task(setting: int | str, tier: str, past_walls: list[float]) -> int:
    """Jobs per array task: ``setting`` when an integer; for ``auto``, chunks of about
    :data:`CHUNK_TARGET_S` of job time from the median of ``past_walls`` (1 for jobs of a
    minute or more), :data:`SMOKE_JOBS_PER_TASK` at the smoke tier without past records, else 1."""
    if setting != "auto":
        return int(setting)
    if past_walls:
        median = sorted(past_walls)[len(past_walls) // 2]
        return 1 if median >= 60 else max(1, min(MAX_JOBS_PER_TASK, int(CHUNK_TARGET_S // max(median, 0.5))))
    return SMOKE_JOBS_PER_TASK if tier == "smoke" else 1


@EXECUTORS.register("slurm")
class SlurmExecutor(Executor):
    """Submits jobs as one SLURM job array per call; ``submit`` returns at once."""

    runs_here = False
    #: submitit's in-process cluster and the shipped profile: the contract tests need no SLURM
    test_config = {"cluster": "debug", "profile": Path(__file__).resolve().parents[2] / "slurm" / "default.yaml"}

    def __init__(self, results_root: str | Path, logs_root: str | Path, params: dict[str, Any],
                 cluster: str = "slurm", force: bool = False, numerics=None, spec_id: str = "", tier: str = "",
                 checkpoint_every: int | None = None):
        self.results_root = str(results_root)
        self.logs_root = Path(logs_root)
        params = dict(params)
        every = params.pop("checkpoint_every_epochs", DEFAULT_CHECKPOINT_EVERY)
        self.checkpoint_every = int(every if checkpoint_every is None else checkpoint_every)
        self.max_num_timeout = int(params.pop("max_num_timeout", DEFAULT_MAX_NUM_TIMEOUT))
        if self.checkpoint_every < 0 or self.max_num_timeout < 0:
            raise ProfileError("checkpoint_every_epochs and max_num_timeout must be >= 0")
        self.jobs_per_task = params.pop("jobs_per_task", "auto")
        if self.jobs_per_task != "auto" and not (isinstance(self.jobs_per_task, int) and self.jobs_per_task >= 1):
            raise ProfileError(f"jobs_per_task must be an integer >= 1 or 'auto', got {self.jobs_per_task!r}")
        self.jobs_per_gpu = params.pop("jobs_per_gpu", 1)
        if isinstance(self.jobs_per_gpu, bool) or not (isinstance(self.jobs_per_gpu, int) and self.jobs_per_gpu >= 1):
            raise ProfileError(f"jobs_per_gpu must be an integer >= 1, got {self.jobs_per_gpu!r}")
        self.params = numerics_setup(params, numerics)
        self.cluster = cluster
        self.force = force
        self.spec_id, self.tier = spec_id, tier

    @staticmethod
    def parameters(context: ExecutorContext) -> dict[str, Any]:
        """submitit parameters: the profile's for the tier."""
        if context.profile is None:
            raise ProfileError("no SLURM profile given")
        return {"name": f"pubench-{context.spec_id}", **load_profile(context.profile,
                                                                     context.profile_tier or context.tier)}

    @classmethod
    def from_context(cls, context: ExecutorContext) -> "SlurmExecutor":
        return cls(context.results_root, context.logs_root, cls.parameters(context), cluster=context.cluster,
                   force=context.force, numerics=context.numerics, spec_id=context.spec_id, tier=context.tier,
                   checkpoint_every=context.checkpoint_every)

    @classmethod
    def default_device(cls, context: ExecutorContext) -> str:
        params = cls.parameters(context)
        return "cuda" if params.get("gpus_per_node") or params.get("slurm_gres") else "cpu"

    @classmethod
    def active_ids(cls, context: ExecutorContext) -> set[str]:
        return set(active_job_ids(context.logs_root, context.tier, context.spec_id))

    def unavailable_reason(self) -> str | None:
        """Without ``sbatch`` and ``srun`` submitit would not reach SLURM (its AutoExecutor
        silently falls back to running every job at once as local processes): refuse."""
        if self.cluster != "slurm":
            return None
        missing = [c for c in SLURM_COMMANDS if shutil.which(c) is None]
        if not missing:
            return None
        return (f"--executor slurm: SLURM is not available on this machine ({' and '.join(missing)} not on PATH); "
                "nothing was submitted. Run from a SLURM login node, or run here with --executor local (the default); "
                "--dry-run prints the plan without SLURM")

    def plan(self, jobs: list[Job], every_job: bool = True) -> str:
        if not every_job:
            return "\n".join([job_summary(jobs, config=True), self.dry_run(jobs, self.spec_id, self.tier)])
        lines = []
        for j in jobs:
            lines.append(f"  {j.id}  {j.name}")
            lines.append(f"      {json.dumps(j.params, sort_keys=True)}")
        return "\n".join(lines + [self.dry_run(jobs, self.spec_id, self.tier)])

    def concurrency(self, jobs: list[Job]) -> tuple[int, int, str] | None:
        """Array tasks at once (``slurm_array_parallelism``, at most the tasks) x ``jobs_per_gpu``."""
        if not jobs:
            return None
        tasks = len(self.chunks(jobs, self.tier, self.spec_id))
        at_once = min(tasks, int(self.params.get("slurm_array_parallelism") or tasks))
        gpu = self.params.get("gpus_per_node") or self.params.get("slurm_gres")
        per = self.jobs_per_gpu if gpu else 1
        how = f"{at_once} array task(s) at once (slurm_array_parallelism)"
        if per > 1:
            how += f" x {per} job(s) per GPU (jobs_per_gpu)"
        return at_once * per, per, how
    def submit(self, jobs: list[Job], on_done: Callable[[Job, str], None] | None = None) -> Submission:
        """Submit ``jobs`` as one array and write the manifest; returns at once (the jobs
        finish on the cluster: ``on_done`` is never called)."""
        manifest = self._submit(jobs, self.spec_id, self.tier)
        return Submission(None, f"manifest {manifest}", manifest)

    def wait(self) -> None:
        for handle in getattr(self, "_handles", []):
            handle.result()

    def folder(self, tier: str, spec_id: str) -> Path:
        return self.logs_root / tier / spec_id

    def chunks(self, jobs: list[Job], tier: str, spec_id: str) -> list[list[Job]]:
        """``jobs`` in array tasks of :func:`jobs_per_task` jobs each."""
        walls: list[float] = []
        if self.jobs_per_task == "auto":
            from pubench.store import ResultStore

            for rec in ResultStore(self.results_root).scan(tier, spec_id).records:
                wall = (rec.get("timing") or {}).get("wall_s")
                if isinstance(wall, (int, float)) and not isinstance(wall, bool):
                    walls.append(float(wall))
        k = jobs_per_task(self.jobs_per_task, tier, walls) * self.jobs_per_gpu
        return [jobs[i:i + k] for i in range(0, len(jobs), k)]

    def dry_run(self, jobs: list[Job], spec_id: str, tier: str) -> str:
        """The job plan and the sbatch parameters/script; submits nothing."""
        n_tasks = len(self.chunks(jobs, tier, spec_id))
        packed = (f", {self.jobs_per_gpu} at once on each task's GPU (jobs_per_gpu: concurrent worker processes)"
                  if self.jobs_per_gpu > 1 else "")
        lines = [f"SLURM dry run: {len(jobs)} job(s) of {spec_id} at tier {tier!r}, one array of {n_tasks} task(s) "
                 f"(jobs_per_task: {self.jobs_per_task}){packed}", ""]
        lines += ["sbatch parameters:"] + [f"  {k}: {v}" for k, v in sorted(sbatch_parameters(self.params).items())]
        lines += ["", *self.resilience()]
        folder = self.folder(tier, spec_id) / "%j"
        try:
            from submitit.slurm.slurm import _make_sbatch_string

            script = _make_sbatch_string(
                command=f"python -u -m submitit.core._submit {folder}", folder=str(folder),
                map_count=n_tasks, **sbatch_parameters(self.params),
            )
            lines += ["", "sbatch script (as submitit writes it):", script]
        except Exception as e:  # noqa: BLE001 - private submitit API; the parameters above still stand
            lines += ["", f"(sbatch script preview unavailable: {e})"]
        return "\n".join(lines)

    def resilience(self) -> list[str]:
        """What the dry run says about checkpoints and requeueing."""
        delay = self.params.get("slurm_signal_delay_s", 90)  # submitit's default
        every = (f"every {self.checkpoint_every} epoch(s), " if self.checkpoint_every else "") + \
            "at the end of each training stage and at the epoch boundary after a stop signal"
        return [
            f"checkpoints: {every}; in {self.results_root}/.checkpoints/<job id>/, deleted when the record is written",
            f"pre-timeout signal: SIGUSR2 {delay} s before the time limit (slurm_signal_delay_s); "
            "SIGTERM (preemption, scancel) also checkpoints",
            f"requeue: a job that times out is requeued up to {self.max_num_timeout} time(s) (max_num_timeout) "
            "and resumes from its checkpoint",
        ]

    def task_callable(self, chunk: list[Job]) -> CheckpointedJob:
        """What one array task runs: one job, a chunk in turn, or a chunk ``jobs_per_gpu`` at once
        (finishing its epoch and checkpoint before the pre-timeout signal's delay is over)."""
        if self.jobs_per_gpu > 1 and len(chunk) > 1:
            delay = float(self.params.get("slurm_signal_delay_s", 90))
            return PackedChunk(min(self.jobs_per_gpu, len(chunk)), stop_grace_s=max(15.0, delay - 30.0))
        return CheckpointedJob() if len(chunk) == 1 else CheckpointedChunk()

    def _submit(self, jobs: list[Job], spec_id: str, tier: str) -> Path:
        import submitit

        why = self.unavailable_reason()
        if why:
            raise ProfileError(why)
        folder = self.folder(tier, spec_id)
        # named, never auto-detected: AutoExecutor would fall back to local processes without srun
        ex = submitit.AutoExecutor(folder=folder / "%j", cluster=self.cluster,
                                   slurm_max_num_timeout=self.max_num_timeout)
        ex.update_parameters(**self.params)
        chunks = self.chunks(jobs, tier, spec_id)
        with ex.batch():
            handles = [ex.submit(self.task_callable(chunk), chunk[0].to_dict() if len(chunk) == 1 else
                                 [j.to_dict() for j in chunk], self.results_root, True, self.force,
                                 self.checkpoint_every) for chunk in chunks]
        manifest = {
            "submitted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "submitted_unix": time.time(),
            "cluster": self.cluster, "spec": spec_id, "tier": tier, "params": self.params,
            "checkpoint_every_epochs": self.checkpoint_every, "max_num_timeout": self.max_num_timeout,
            "jobs_per_task": max(map(len, chunks)), "jobs_per_gpu": self.jobs_per_gpu,
            "jobs": [
                {"id": j.id, "name": j.name, "slurm_id": str(h.job_id),
                 "stdout": str(h.paths.stdout), "stderr": str(h.paths.stderr)}
                for chunk, h in zip(chunks, handles) for j in chunk
            ],
        }
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        path = atomic_write_json(folder / f"manifest-{stamp}.json", manifest)
        self._handles = handles  # kept for in-process callers (tests) that want to wait
        return path


def manifest_paths(logs_root: str | Path, tier: str, spec_id: str) -> list[Path]:
    """The submission manifests of ``spec_id`` at ``tier``, oldest first."""
    folder = Path(logs_root) / tier / spec_id
    return sorted(folder.glob("manifest-*.json")) if folder.is_dir() else []


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A submission manifest, or None when the file does not hold one (damaged, or planted in
    a shared log folder): JSON of the shape :meth:`SlurmExecutor._submit` writes."""
    try:
        m = loads_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    ok = (isinstance(m, dict) and isinstance(m.get("jobs"), list) and isinstance(m.get("params", {}), dict)
          and isinstance(m.get("submitted_unix", 0), (int, float))
          and all(isinstance(e, dict) and isinstance(e.get("id"), str) and isinstance(e.get("slurm_id"), str)
                  for e in m["jobs"]))
    return m if ok else None


def read_manifests(logs_root: str | Path, tier: str, spec_id: str) -> list[dict[str, Any]]:
    """The submissions that may still have jobs on the cluster (a cancelled one is left out, as
    is a file that holds no manifest)."""
    manifests = [read_manifest(p) for p in manifest_paths(logs_root, tier, spec_id)]
    return [m for m in manifests if m is not None and not m.get("cancelled_at")]


def cancel_submissions(logs_root: str | Path, results_root: str | Path, tier: str, spec_id: str) -> dict[str, Any]:
    """``scancel`` the job arrays of every live SLURM submission of ``spec_id`` at ``tier`` (the
    manifests :class:`SlurmExecutor` writes), mark the manifests cancelled and release the
    claims of their jobs that no live process of this host holds (a cancelled array task
    records itself as interrupted and releases its claim when SIGTERM reaches it; this removes
    those of tasks killed before that). Finished records are kept.

    Returns ``{"manifests", "arrays", "jobs", "released", "scancel_error"}``; a
    :class:`PubenchError` when there is no submission to cancel or no ``scancel``."""
    from pubench.store.claims import ClaimBook

    live = []
    for p in manifest_paths(logs_root, tier, spec_id):
        m = read_manifest(p)
        if m is None:
            raise PubenchError(f"{p}: unreadable submission manifest (move it away to cancel the others)")
        if m.get("cluster") == "slurm" and not m.get("cancelled_at"):
            live.append((p, m))
    if not live:
        return {"manifests": [], "arrays": [], "jobs": 0, "released": 0, "scancel_error": None}
    if shutil.which("scancel") is None:
        raise PubenchError("scancel is not on PATH: cancel from a SLURM login node (nothing was cancelled)")
    arrays = sorted({str(e["slurm_id"]).split("_")[0] for _, m in live for e in m.get("jobs", [])})
    out = subprocess.run(["scancel", *arrays], capture_output=True, text=True)
    error = " ".join(out.stderr.split())[:300] if out.returncode else None
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for p, m in live:
        atomic_write_json(p, {**m, "cancelled_at": now})
    book = ClaimBook(Path(results_root) / tier / spec_id / ".claims")
    released = 0
    job_ids = {e["id"] for _, m in live for e in m.get("jobs", [])}
    for job_id in sorted(job_ids):
        holder = book.read(job_id)
        if holder is None:
            continue
        here = holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int)
        if here and book.is_live(holder):
            continue  # a runner on this machine holds it (not the cancelled array)
        book.path(job_id).unlink(missing_ok=True)
        released += 1
    return {"manifests": [str(p) for p, _ in live], "arrays": arrays, "jobs": len(job_ids), "released": released,
            "scancel_error": error}


def active_job_ids(logs_root: str | Path, tier: str, spec_id: str) -> dict[str, str]:
    """Job id -> SLURM id of submitted jobs that may still be queued or running.

    Asks ``squeue`` when it exists; without it, a submission counts as active until its
    ``timeout_min`` has passed.
    """
    manifests = [m for m in read_manifests(logs_root, tier, spec_id) if m.get("cluster") == "slurm"]
    if not manifests:
        return {}
    entries = {e["slurm_id"]: e["id"] for m in manifests for e in m["jobs"]}
    if shutil.which("squeue"):
        ids = ",".join(sorted({s.split("_")[0] for s in entries}))
        out = subprocess.run(["squeue", "-h", "-r", "-j", ids, "-o", "%i %T"], capture_output=True, text=True)
        states = dict(line.split()[:2] for line in out.stdout.splitlines() if line.strip())
        return {jid: sid for sid, jid in entries.items() if states.get(sid) in ACTIVE_STATES}
    now = time.time()
    return {
        e["id"]: e["slurm_id"] for m in manifests
        if now - m.get("submitted_unix", 0) < 60 * _minutes(m["params"].get("timeout_min"))
        for e in m["jobs"]
    }


def _minutes(value: Any) -> float:
    """A manifest's ``timeout_min`` (0 when it is not a number)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
