"""STORE: one JSON record per finished job, under ``results/<tier>/<spec>/``.

Record files are named ``<row>__<col>__s<seed>--<job id>.json`` (a failure record ends in
``.failed.json``). Writes are atomic (temp file, fsync, rename), so a killed runner
leaves either a whole record or none. Only a valid ``status: ok`` record counts as done:
one that does not parse or lacks what a record must hold (its job, its id, finite
metrics) is *corrupt*; ``status`` counts it, ``run`` moves it to ``quarantine/`` and
reruns the job, ``report`` skips it with one warning line. A failure record is kept for
diagnosis and the job is retried on the next run. Claims of running jobs live in
``.claims/`` (``pubench.store.claims``).
"""

from __future__ import annotations

import math
import os
import re
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from pubench.jobs.plan import Job
from pubench.store.provenance import provenance
from pubench.utils.hashing import canonical_json
from pubench.utils.io import atomic_write_json, loads_json, remove_stale_temps

SCHEMA_VERSION = 2
QUARANTINE = "quarantine"
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")
_JOB_KEYS = ("id", "spec_id", "tier", "row", "col", "seed_index", "task", "params", "seeds")
#: the types of what readers take from a record without checking (a planted or damaged record
#: with another type is corrupt, not a traceback in `report`): job fields, then optional parts
_JOB_TYPES = {"id": str, "spec_id": str, "spec_version": int, "tier": str, "row": str, "col": str, "seed_index": int,
              "task": str, "params": dict, "seeds": dict}
_OPTIONAL_JOB_TYPES = {"name": str, "numerics": dict, "variant": (dict, type(None))}
_OPTIONAL_TYPES = {"timing": dict, "provenance": dict, "machine": dict, "info": dict}
_OPTIONAL_TIMING_TYPES = {"wall_s": (int, float), "start": str, "end": str}
#: the parts of those that readers take without checking (the compute summary's device and CPU
#: labels, verify's and the nightly's cache checks)
_OPTIONAL_PART_TYPES = {
    "machine": {"cpu_model": str, "gpu": (str, type(None)), "torch_threads": int},
    "info": {"encoder_cache": dict, "shared_from": dict, "accelerator": dict, "pretrain": dict},
}
_OPTIONAL_NUMERICS_TYPES = {"device": str, "threads": int, "isa": str, "torch": str}


def slug(text: str, limit: int = 48) -> str:
    return _UNSAFE.sub("_", text).strip("_")[:limit] or "x"


_FAILURE_FIELDS = ("job", "error", "timing", "machine", "info")
_RACY_NS = 3_000_000_000  # a file modified this recently may change within its mtime tick: never remembered


def _remembered_shape(entry: Any) -> bool:
    """Whether a scan cache entry reads ``[[mtime_ns, size], record or None, why or None]``:
    one of another shape (a foreign file in the cache folder) is read from its record again."""
    if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], list)):
        return False
    rec, why = entry[1], entry[2]
    if rec is None:
        return isinstance(why, str)
    return isinstance(rec, dict) and isinstance(rec.get("job"), dict) and isinstance(rec["job"].get("id"), str)


def _project(rec: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """The top-level keys ``fields`` names of a record; ``"info.encoder_cache"`` keeps one key
    of a mapping."""
    out: dict[str, Any] = {}
    for f in fields:
        top, _, sub = f.partition(".")
        if top not in rec:
            continue
        if not sub:
            out[top] = rec[top]
        elif isinstance(rec[top], dict) and sub in rec[top]:
            out.setdefault(top, {})[sub] = rec[top][sub]
    return out


def record_problem(rec: Any, path: Path, failed: bool = False) -> str | None:
    """Why a parsed record is not a valid record (None when it is)."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    job = rec.get("job")
    if not isinstance(job, dict) or any(k not in job for k in _JOB_KEYS):
        return "no job description"
    if job["id"] != path.name.split("--")[-1].split(".")[0]:
        return f"job id {job['id']!r} differs from the file name"
    why = (_type_problem("job", job, _JOB_TYPES, required=True) or _type_problem("job", job, _OPTIONAL_JOB_TYPES)
           or _type_problem("", rec, _OPTIONAL_TYPES)
           or _type_problem("timing", rec.get("timing") or {}, _OPTIONAL_TIMING_TYPES)
           or _type_problem("job.numerics", job.get("numerics") or {}, _OPTIONAL_NUMERICS_TYPES)
           or next(filter(None, (_type_problem(part, rec.get(part) or {}, types)
                                 for part, types in _OPTIONAL_PART_TYPES.items())), None))
    if why:
        return why
    if job["seed_index"] < 0 or not all(isinstance(job["seeds"].get(k), int) for k in ("data", "init")):
        return "job seeds out of range"
    try:  # a job is what a spec gave, and specs hold finite numbers only: NaN here was not written by pubench
        canonical_json(job)
    except ValueError:
        return "job holds a number that is not finite"
    if failed:
        error = rec.get("error")
        ok = (rec.get("status") == "failed" and isinstance(error, dict)
              and all(isinstance(error.get(k), str) for k in ("type", "message"))
              and isinstance(error.get("traceback_tail", ""), str))
        return None if ok else "not a failure record"
    if rec.get("status") != "ok":
        return f"status {rec.get('status')!r}, expected 'ok'"
    metrics = rec.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        return "no metrics"
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"metric {k!r} is {v!r}, not a finite number"
    return None


def _type_problem(where: str, part: dict[str, Any], types: dict[str, Any], required: bool = False) -> str | None:
    """The first entry of ``part`` whose type is not the one ``types`` names (a missing entry
    only when ``required``); booleans are not numbers here."""
    for key, want in types.items():
        if key not in part:
            if required:
                return f"{where}.{key} missing"
            continue
        value, wanted = part[key], want if isinstance(want, tuple) else (want,)
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
            return f"{f'{where}.' if where else ''}{key} is a {type(value).__name__}"
    return None


@dataclass
class Scan:
    """What one folder of the store holds: valid records, failures and corrupt files."""

    done: dict[str, Path] = field(default_factory=dict)       # job id -> record path
    failed: dict[str, Path] = field(default_factory=dict)     # job id -> failure record path
    corrupt: list[tuple[Path, str]] = field(default_factory=list)  # (path, why)
    records: list[dict[str, Any]] = field(default_factory=list)    # the valid ok records
    failures: list[dict[str, Any]] = field(default_factory=list)   # the failure records (their job, error, timing, ...)


class ResultStore:
    def __init__(self, root: str | Path, memo: bool = False):
        """``memo``: remember each folder's scan for this object's life (read-only commands,
        which collect one table several times: the report, the index, the site). Never for
        a store being written."""
        self.root = Path(root)
        self._memo: dict[tuple, Scan] | None = {} if memo else None

    # ---- paths -------------------------------------------------------------------
    def folder(self, tier: str, spec_id: str) -> Path:
        return self.root / tier / spec_id

    def path(self, job: Job, failed: bool = False) -> Path:
        stem = f"{slug(job.row)}__{slug(job.col)}__s{job.seed_index}--{job.id}"
        return self.folder(job.tier, job.spec_id) / (stem + (".failed.json" if failed else ".json"))

    def claims(self, tier: str, spec_id: str):
        from pubench.store.claims import ClaimBook

        return ClaimBook(self.folder(tier, spec_id) / ".claims")

    # ---- writing -----------------------------------------------------------------
    def _record(self, job: Job, status: str, timing: dict[str, Any], machine: dict[str, Any] | None) -> dict[str, Any]:
        rec = {
            "schema": SCHEMA_VERSION,
            "status": status,
            "job": job.to_dict(),
            "timing": timing,
            "provenance": provenance(),
        }
        if machine is not None:
            rec["machine"] = machine
        return rec

    def write_ok(self, job: Job, metrics: dict[str, float], info: dict[str, Any], timing: dict[str, Any],
                 machine: dict[str, Any] | None = None) -> Path:
        rec = self._record(job, "ok", timing, machine) | {"metrics": metrics, "info": info}
        path = atomic_write_json(self.path(job), rec)
        self.path(job, failed=True).unlink(missing_ok=True)
        return path

    def write_failure(self, job: Job, exc: BaseException, timing: dict[str, Any],
                      machine: dict[str, Any] | None = None) -> Path:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        message = str(exc) or type(exc).__name__
        rec = self._record(job, "failed", timing, machine) | {
            "error": {"type": type(exc).__name__, "message": message, "traceback_tail": tb[-4000:]}
        }
        return atomic_write_json(self.path(job, failed=True), rec)

    # ---- reading -----------------------------------------------------------------
    def _files(self, tier: str, spec_id: str, failed: bool) -> Iterator[Path]:
        folder = self.folder(tier, spec_id)
        if not folder.is_dir():
            return iter(())
        pattern = "*.failed.json" if failed else "*.json"
        return (p for p in sorted(folder.glob(pattern)) if failed or not p.name.endswith(".failed.json"))

    @staticmethod
    def _job_id(path: Path) -> str:
        return path.name.split("--")[-1].split(".")[0]

    @staticmethod
    def read_file(path: Path, failed: bool = False) -> tuple[dict[str, Any] | None, str | None]:
        """``(record, None)`` when ``path`` holds a valid record (a failure record when
        ``failed``), else ``(None, why)``."""
        try:
            rec = loads_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None, "vanished while reading"
        except (OSError, ValueError, RecursionError) as e:  # ValueError: not JSON, not UTF-8; RecursionError: too deep
            return None, f"does not parse ({type(e).__name__}: {str(e)[:80]})"
        why = record_problem(rec, path, failed)
        return (None, why) if why else (rec, None)

    def read(self, job: Job) -> dict[str, Any] | None:
        """The valid ok record of ``job``, or None."""
        return self.read_file(self.path(job), False)[0]

    def scan(self, tier: str, spec_id: str, fields: tuple[str, ...] | None = None) -> Scan:
        """One pass over a folder. ``fields``: keep only these top-level keys of each valid
        record in ``Scan.records`` (each record is still parsed and checked whole), so a
        command that needs a record's job only does not hold every record's metrics, info
        and provenance."""
        if self._memo is not None:
            key = (tier, spec_id, fields)
            if key not in self._memo:
                self._memo[key] = self._scan(tier, spec_id, fields)
            return self._memo[key]
        return self._scan(tier, spec_id, fields)

    def _scan(self, tier: str, spec_id: str, fields: tuple[str, ...] | None) -> Scan:
        """With ``fields``, what each file gave is remembered across calls (the scan cache,
        :mod:`pubench.registry.cache`, keyed by folder and fields) under the file's size and
        modification time: records are written by rename, so a file whose size and mtime are
        those remembered holds what was read (files modified in the last seconds are read again
        each time, as git does with racy index entries)."""
        out = Scan()
        old, new = (self._remembered(tier, spec_id, fields), {}) if fields is not None else ({}, None)
        now_ns = time.time_ns()
        for failed in (False, True):
            for p in self._files(tier, spec_id, failed=failed):
                entry = None
                if new is not None:
                    try:
                        st = p.stat()
                    except FileNotFoundError:
                        continue
                    stamp = [st.st_mtime_ns, st.st_size]  # lists, not tuples: JSON in the cache, read without tags
                    entry = old.get(p.name)
                    if entry is None or entry[0] != stamp:
                        entry = None
                if entry is None:
                    rec, why = self.read_file(p, failed=failed)
                    if rec is not None and fields is not None:
                        rec = _project(rec, _FAILURE_FIELDS if failed else fields)
                    if new is not None and now_ns - stamp[0] > _RACY_NS:
                        entry = [stamp, rec, why]
                else:
                    _, rec, why = entry
                if entry is not None:
                    new[p.name] = entry
                if rec is None:
                    if why != "vanished while reading":
                        out.corrupt.append((p, why))
                    continue
                if failed:
                    out.failed[rec["job"]["id"]] = p
                    out.failures.append(rec if fields is not None else _project(rec, _FAILURE_FIELDS))
                else:
                    out.done[rec["job"]["id"]] = p
                    out.records.append(rec)
        if new is not None and new != old:
            from pubench.registry import cache

            cache.put("scans", self._scan_key(tier, spec_id, fields), new)
        return out

    def _scan_key(self, tier: str, spec_id: str, fields: tuple[str, ...]) -> str:
        from pubench.registry import cache

        return cache.key_of("scan", str(self.folder(tier, spec_id).resolve()), repr(fields), str(SCHEMA_VERSION))

    def _remembered(self, tier: str, spec_id: str, fields: tuple[str, ...]) -> dict[str, list]:
        from pubench.registry import cache

        entries = cache.get("scans", self._scan_key(tier, spec_id, fields), dict) or {}
        return {name: e for name, e in entries.items() if _remembered_shape(e)}

    def done_ids(self, tier: str, spec_id: str) -> set[str]:
        return set(self.scan(tier, spec_id).done)

    def failed_ids(self, tier: str, spec_id: str) -> set[str]:
        return set(self.scan(tier, spec_id).failed)

    def is_done(self, job: Job) -> bool:
        path = self.path(job)
        if not path.exists():
            return False
        rec, _ = self.read_file(path, failed=False)
        return rec is not None

    def records(self, tier: str, spec_id: str, failed: bool = False) -> list[dict[str, Any]]:
        """Valid records (corrupt files are left out: see :meth:`scan`)."""
        if not failed:
            return self.scan(tier, spec_id).records
        out = []
        for p in self._files(tier, spec_id, failed=True):
            rec, _ = self.read_file(p, failed=True)
            if rec is not None:
                out.append(rec)
        return out

    def tiers(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir()
                      if p.is_dir() and not p.name.startswith(".")) if self.root.is_dir() else []  # not .checkpoints

    # ---- housekeeping ------------------------------------------------------------
    def quarantine(self, paths: list[Path]) -> list[Path]:
        """Move corrupt files to ``<folder>/quarantine/`` (kept for a look, never read again)."""
        moved = []
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        for p in paths:
            dest = p.parent / QUARANTINE / f"{p.name}.{stamp}-{os.getpid()}"
            dest.parent.mkdir(exist_ok=True)
            try:
                os.replace(p, dest)
            except FileNotFoundError:
                continue
            moved.append(dest)
        return moved

    def clean_temps(self, tier: str, spec_id: str) -> int:
        folder = self.folder(tier, spec_id)
        return remove_stale_temps(folder) if folder.is_dir() else 0
