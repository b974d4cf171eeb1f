"""``pubench verify``: do stored records reproduce? Rerun a sample into a scratch store.

Each sampled record's job (its own config, seeds and numerics profile, hence its own job
id) is rerun with the encoder cache off, into a temporary store, and every metric is
compared with the stored value:

* ``identical``: every metric equal to the last bit;
* ``within``: not identical, but every metric within ``sigmas`` x the cell's seed standard
  deviation (over the cell's other stored seeds);
* ``outside``: some metric further away; ``failed``: the rerun did not produce a record;
* ``not here``: this machine cannot run the record's numerics (a CUDA record on a CPU
  machine): listed, neither passing nor failing.

Bit for bit is promised on the record's own CPU (or GPU) model only: a record made on
another model (``machine.cpu_model``, ``machine.gpu``) is rerun and its verdict shown,
marked ``other CPU``, but not judged. Measured 2026-12-07: records made on AMD EPYC hosts,
rerun on an Intel Xeon one under the same pinned numerics, reproduce bit for bit for some
tables and only within the seed spread, or outside it, for most training jobs
(benchmarks/results/verify-after-speedups-2026-12-07.md).

Metrics that measure wall-clock time (named by the record's ``info.wall_clock_metrics``,
e.g. WConPU's ``time``) are left out of the comparison: they never repeat to the bit.

A verification passes when no rerun is outside or failed, every record made under the
canonical numerics reproduced identically, and the store holds no stale (config or
spec version changed) or corrupt record of the table.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pubench import paths
from pubench.jobs.plan import Job
from pubench.registry.spec import CUSTOM, Spec, match_cell
from pubench.store.store import ResultStore

IDENTICAL, WITHIN, OUTSIDE, FAILED, NOT_HERE = "identical", "within", "outside", "failed", "not here"


@dataclass
class Check:
    name: str
    job_id: str
    canonical: bool
    verdict: str
    diffs: dict[str, tuple[float, float | None, float]] = field(default_factory=dict)  # metric -> (stored, rerun, tol)
    note: str = ""
    made_on: str | None = None  # the record's machine model when it is not this machine's: not judged
    device: str = "cpu"

    @property
    def judged(self) -> bool:
        return self.verdict == FAILED or (self.verdict != NOT_HERE and self.made_on is None)

    @property
    def ok(self) -> bool:
        if not self.judged:
            return True
        return self.verdict == IDENTICAL or (self.verdict == WITHIN and not self.canonical)


@dataclass
class Verification:
    spec_id: str
    tier: str
    records: int
    stale: int
    corrupt: int
    checks: list[Check]

    @property
    def passed(self) -> bool:
        return bool(self.records) and not self.stale and not self.corrupt and all(c.ok for c in self.checks)

    @property
    def judged_here(self) -> bool:
        """Whether any rerun could be judged on this machine (else a pass says nothing)."""
        return any(c.judged for c in self.checks)

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in (IDENTICAL, WITHIN, OUTSIDE, FAILED, NOT_HERE)}
        for c in self.checks:
            out[c.verdict] += 1
        return out


def _current_records(spec: Spec, tier: str, records: list[dict[str, Any]]) -> tuple[list[dict], int]:
    """The records whose config is the one the spec gives their cell now, and how many are stale.
    At the custom tier a record's config is its variant's (``run --set``) or its added row's
    (``run --add-row``), rebuilt from the spec as it is now."""
    if tier == CUSTOM:
        views: dict[str, Spec | None] = {}  # one view per variant, not per record
        keep = [r for r in records if r["job"].get("spec_version") == spec.version and "numerics" in r["job"]
                and _custom_params(spec, r["job"], views) == r["job"]["params"]]
        return keep, len(records) - len(keep)
    current = {cell: spec.resolve(tier, *cell)["params"] for cell in spec.cells()}
    keep = [r for r in records if r["job"].get("spec_version") == spec.version and "numerics" in r["job"]
            and current.get((r["job"]["row"], r["job"]["col"])) == r["job"]["params"]]
    return keep, len(records) - len(keep)


def _custom_params(spec: Spec, job: dict[str, Any], views: dict[str, Spec | None]) -> dict[str, Any] | None:
    """The params the spec gives a custom record's cell now (None when it gives none: the base
    tier, cell or baseline row is gone, or an override no longer applies); ``views`` keeps the
    spec's view of each variant met so far."""
    from pubench.errors import PubenchError
    from pubench.utils.hashing import canonical_json

    key = canonical_json(job.get("variant"))
    if key not in views:
        views[key] = _variant_view(spec, job)
    if views[key] is None:
        return None
    try:
        return views[key].resolve(CUSTOM, job["row"], job["col"])["params"]
    except (PubenchError, KeyError, ValueError):
        return None


def _variant_view(spec: Spec, job: dict[str, Any]) -> Spec | None:
    """The spec as a custom job's variant (``run --set``) or added row (``run --add-row``) sees
    it now; None when the job has neither or the spec no longer gives it."""
    from pubench.errors import PubenchError
    from pubench.report.collect import added_row_of, variant_key

    try:
        if (variant := variant_key(job)) is not None:
            return spec.with_variant(*variant)
        if (added := added_row_of(job)) is not None:
            return spec.with_added_rows(added[0], (added[1],))
    except (PubenchError, KeyError, ValueError):
        pass
    return None


def _spread(records: list[dict[str, Any]], job: dict[str, Any], metric: str) -> float:
    """Sample std of ``metric`` over the *other* stored seeds of the job's cell, and of its
    variant at the custom tier (0 with fewer than two): the checked record cannot widen its
    own tolerance."""
    vals = [float(r["metrics"][metric]) for r in records
            if r["job"]["row"] == job["row"] and r["job"]["col"] == job["col"] and r["job"]["id"] != job["id"]
            and r["job"].get("variant") == job.get("variant") and metric in r["metrics"]]
    return statistics.stdev(vals) if len(vals) > 1 else 0.0


def used_a_cache(record: dict[str, Any]) -> bool:
    """Whether the record's job took its encoder from the encoder cache, continued a stored
    training prefix, or took the record of the same computation in another spec
    (``info.shared_from``): another job ran part or all of its computation."""
    info = record.get("info") or {}
    pre = info.get("pretrain") if isinstance(info.get("pretrain"), dict) else {}
    return bool((info.get("encoder_cache") or {}).get("hit") or (pre.get("prefix_cache") or {}).get("started_at_epoch")
                or info.get("shared_from"))


def sample_records(records: list[dict[str, Any]], k: int, seed: int) -> list[dict[str, Any]]:
    """``k`` records (all when ``k`` is 0 or larger than the store), the same for the same seed.
    Records whose job used a cache come first (a cache that gave other numbers than a fresh
    run is the likeliest way a record does not reproduce); the rest are drawn at random."""
    ordered = sorted(records, key=lambda r: (r["job"]["row"], r["job"]["col"], r["job"]["seed_index"], r["job"]["id"]))
    if k == 0 or k >= len(ordered):
        return ordered
    cached = [i for i, r in enumerate(ordered) if used_a_cache(r)]
    rng = np.random.default_rng(seed)
    if len(cached) >= k:
        idx = rng.choice(cached, size=k, replace=False)
    else:
        rest = [i for i in range(len(ordered)) if i not in set(cached)]
        idx = cached + list(rng.choice(rest, size=k - len(cached), replace=False))
    return [ordered[i] for i in sorted(idx)]


def _runnable_here(job: Job) -> str | None:
    from pubench import numerics

    num = numerics.Numerics.from_dict(job.numerics)
    if num.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            return "the record was made on a CUDA device; this machine has none"
    if num.torch != numerics.torch_version():
        return f"the record was made with torch {num.torch}; this machine has {numerics.torch_version()}"
    return None


def made_elsewhere(record: dict[str, Any]) -> str | None:
    """The model of the machine that made ``record`` when it is not this machine's (None when the
    same, or when the record names none)."""
    from pubench.report.compute import machine_model, record_device
    from pubench.train.accel import device_name

    model = machine_model(record)
    return model if model and model != device_name(record_device(record)) else None


def compare_metrics(stored: dict[str, float], rerun: dict[str, float] | None, tol: dict[str, float],
                    canonical: bool, name: str, job_id: str, wall_clock: tuple[str, ...] = ()) -> Check:
    if rerun is None:
        return Check(name, job_id, canonical, FAILED, note="the rerun wrote no record")
    diffs, verdict = {}, IDENTICAL
    for m, v in stored.items():
        if m in wall_clock:
            continue
        new = rerun.get(m)
        diffs[m] = (v, new, tol.get(m, 0.0))
        if new is None or not math.isfinite(new):
            verdict = OUTSIDE
        elif new != v:
            if abs(new - v) <= tol.get(m, 0.0):
                verdict = WITHIN if verdict == IDENTICAL else verdict
            else:
                verdict = OUTSIDE
    return Check(name, job_id, canonical, verdict, diffs)


def verify(spec: Spec, tier: str, sample: int = 4, n_jobs: int = 1, sample_seed: int = 0, progress: bool = False,
           sigmas: float = 2.0, store: ResultStore | None = None, only: list[str] | None = None,
           seeds_from: int = 0) -> Verification:
    """Rerun ``sample`` of the stored records (among those of cells matching ``only`` and of seed
    index ``seeds_from`` and above) and compare each with its record."""
    from pubench.executors.local import LocalExecutor
    from pubench.numerics import Numerics

    store = store or ResultStore(paths.results_root())
    scan = store.scan(tier, spec.id)
    records, stale = _current_records(spec, tier, scan.records)
    eligible = [r for r in records if r["job"]["seed_index"] >= seeds_from
                and (not only or any(match_cell(p, r["job"]["row"], r["job"]["col"]) for p in only))]
    chosen = sample_records(eligible, sample, sample_seed)
    checks: list[Check] = []
    jobs: list[Job] = []
    for r in chosen:
        job = Job.from_dict(r["job"])
        why = _runnable_here(job)
        if why:
            checks.append(Check(job.name, job.id, False, NOT_HERE, note=why))
        else:
            jobs.append(job)
    if jobs:
        old = os.environ.get("PUBENCH_ENCODER_CACHE")
        os.environ["PUBENCH_ENCODER_CACHE"] = "0"  # rerun the whole computation, pre-training included
        try:
            with tempfile.TemporaryDirectory(prefix="pubench-verify-") as scratch:
                LocalExecutor(scratch, n_jobs=n_jobs, progress=progress).run(jobs, desc=f"verify {spec.id}")
                rerun = {r["job"]["id"]: r["metrics"] for r in ResultStore(scratch).scan(tier, spec.id).records}
                failures = {}
                for p in ResultStore(scratch).scan(tier, spec.id).failed.values():
                    failures[ResultStore._job_id(p)] = _first_error_line(p)
        finally:
            if old is None:
                os.environ.pop("PUBENCH_ENCODER_CACHE", None)
            else:
                os.environ["PUBENCH_ENCODER_CACHE"] = old
        by_id = {r["job"]["id"]: r for r in chosen}
        for job in jobs:
            rec = by_id[job.id]
            tol = {m: sigmas * _spread(records, rec["job"], m) for m in rec["metrics"]}
            numerics = Numerics.from_dict(job.numerics)
            check = compare_metrics(rec["metrics"], rerun.get(job.id), tol, numerics.canonical, job.name, job.id,
                                    tuple(rec.get("info", {}).get("wall_clock_metrics", ())))
            check.made_on, check.device = made_elsewhere(rec), numerics.device
            if check.verdict == FAILED and job.id in failures:
                check.note = failures[job.id]
            checks.append(check)
    order = {r["job"]["id"]: i for i, r in enumerate(chosen)}
    checks.sort(key=lambda c: order.get(c.job_id, 0))
    return Verification(spec.id, tier, len(scan.records), stale, len(scan.corrupt), checks)


def _first_error_line(path) -> str:
    rec, _ = ResultStore.read_file(path, failed=True)
    if rec is None:
        return "failure record unreadable"
    return (f"{rec['error']['type']}: {rec['error']['message']}".splitlines() or [""])[0][:200]


def render_verification(v: Verification) -> str:
    from tabulate import tabulate

    rows = []
    for c in v.checks:
        worst = ""
        if c.diffs:
            m, (old, new, tol) = max(c.diffs.items(), key=lambda kv: abs((kv[1][1] or 0.0) - kv[1][0]))
            worst = f"{m}: {old:.6g} -> {new:.6g} (tol {tol:.3g})" if new is not None else f"{m}: missing"
        mark = "" if c.ok else "  <-- FAIL"
        if c.made_on and c.verdict != FAILED:
            mark = f"  (other {'GPU' if c.device == 'cuda' else 'CPU'}, not judged)"
        rows.append([c.name, "yes" if c.canonical else "no", c.verdict + mark, worst or c.note])
    counts = v.counts()
    lines = [f"verify {v.spec_id} at tier {v.tier}: {len(v.checks)} of {v.records} record(s) rerun"]
    if rows:
        lines.append(tabulate(rows, headers=["job", "canonical", "verdict", "largest change"]))
    if v.stale:
        lines.append(f"  {v.stale} stale record(s) (config or spec version changed since): rerun the table and "
                     "remove them")
    if v.corrupt:
        lines.append(f"  {v.corrupt} corrupt record(s): `pubench run` moves them to quarantine and reruns their jobs")
    if not v.records:
        lines.append("  no records to verify")
    from pubench.train.accel import device_name

    for device in sorted({c.device for c in v.checks if c.made_on}):
        elsewhere = [c for c in v.checks if c.made_on and c.device == device]
        lines.append(f"  {len(elsewhere)} record(s) made on {', '.join(sorted({c.made_on for c in elsewhere}))}; this "
                     f"machine is {device_name(device)}: bit for bit is promised on the record's own machine model "
                     "only, so their verdicts are shown, not judged (rerun them on that model to judge them)")
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    label = "FAIL" if not v.passed else "PASS" if v.judged_here or not v.checks else "NOT JUDGED HERE"
    lines.append(f"{label}: {summary or 'nothing rerun'}")
    return "\n".join(lines) + "\n"
