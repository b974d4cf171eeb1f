"""A campaign's records, carried back in one archive, and brought into a store after checks.

:func:`bundle` writes the ok records a campaign wrote (as they are in the store, under
``results/<tier>/<spec>/``) and the campaign's summary (``campaign.json``) into a tar.gz in
``--out``, split into parts of at most :data:`PART_BYTES` (a GPU machine of this project
returns at most 8 files of 16 MiB), with the summary also beside it as a JSON file; with
them, the checkpoints of the jobs the window stopped (``checkpoints/<job id>/``), so the next
window resumes them instead of starting over. A window rewrites its archive as its jobs end,
each file whole (a temporary file, then a rename).

:func:`import_archives` checks every record before it enters a store: the result schema
(:data:`pubench.store.store.SCHEMA_VERSION`, a valid ``status: ok`` record, its file name
naming its job id), the job id equal to the hash of its config (task, params, seeds, spec
version, numerics), its spec known at that version, its job one that spec expands to at its
tier (same id, same file name), committed code (``provenance.git_dirty`` false, unless
allowed), and not present already with other metrics (the same metrics: already there, left
alone). A record that passes is written byte for byte, atomically; one that fails is named
with its reason and nothing of it is written. A checkpoint is taken only for a job the
archive's summary lists as stopped and the store does not hold, into the store's checkpoint
folder (``<results>/.checkpoints/<job id>/``, where ``pubench campaign pack`` takes it
from); its content is checked when the job resumes from it (it names its job and its code:
:mod:`pubench.train.checkpoint`).
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the largest part written (the compressed archive); a GPU machine returns files of 16 MiB
PART_BYTES = 15 * 2**20
#: a lease returns 8 files: the parts, the summary beside them and the window's measurement
MAX_PARTS = 6
SUMMARY = "campaign.json"
CHECKPOINTS = "checkpoints"
_MEMBER = re.compile(r"^results/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)/([^/]+\.json)$")
_CHECKPOINT = re.compile(r"^checkpoints/([0-9a-f]{8,64})/([A-Za-z0-9_.-]+\.pt)$")
#: JSON records compress 5-10x: the share of a part's limit their raw bytes are counted at
_RECORD_WEIGHT = 0.25


def bundle(records: list[Path], store_root: Path, summary: dict[str, Any], out: Path, name: str,
           checkpoints: dict[str, list[Path]] | None = None) -> list[Path]:
    """The archive part(s) and the summary file written to ``out`` (``name``: the stem), each
    written whole (a temporary file, then a rename: a command stopped meanwhile leaves the last
    whole version). ``checkpoints``: job id -> checkpoint files of stopped jobs, carried back
    under ``checkpoints/<job id>/`` while the parts stay within :data:`MAX_PARTS` (the summary's
    ``checkpoints`` lists the jobs whose checkpoints travelled)."""
    out.mkdir(parents=True, exist_ok=True)
    parts: list[list[tuple[Path, str]]] = [[]]
    used = 0.0

    def place(path: Path, arcname: str, weight: float) -> bool:
        nonlocal used
        if parts[-1] and used + weight > PART_BYTES * 0.95:
            if len(parts) == MAX_PARTS:
                return False
            parts.append([])
            used = 0.0
        parts[-1].append((path, arcname))
        used += weight
        return True

    for p in records:
        if not place(p, f"results/{p.relative_to(store_root).as_posix()}", p.stat().st_size * _RECORD_WEIGHT):
            raise ValueError(f"{len(records)} records need more than {MAX_PARTS} archive parts")
    travelled = []
    for job_id, files in (checkpoints or {}).items():
        size = sum(f.stat().st_size for f in files)
        if size > PART_BYTES * 0.95:
            continue
        saved = ([list(x) for x in parts], used)
        if all(place(f, f"{CHECKPOINTS}/{job_id}/{f.name}", f.stat().st_size) for f in files):
            travelled.append(job_id)
        else:  # this job's checkpoints do not all fit: none of them goes
            parts[:], used = saved
    summary = {**summary, "checkpoints": travelled}
    summary_bytes = (json.dumps(summary, indent=1, sort_keys=True) + "\n").encode()
    written = []
    for k, members in enumerate(parts):
        path = out / (f"{name}.tar.gz" if k == 0 else f"{name}-part{k + 1}.tar.gz")
        tmp = out / f".{path.name}.tmp"
        with tarfile.open(tmp, "w:gz") as tar:
            if k == 0:
                _add_bytes(tar, SUMMARY, summary_bytes)
            for p, arcname in members:
                tar.add(p, arcname=arcname, recursive=False)
        if (size := tmp.stat().st_size) > PART_BYTES:
            tmp.unlink()
            raise ValueError(f"{path.name} would be {size / 2**20:.1f} MiB, over {PART_BYTES / 2**20:.0f} MiB")
        tmp.replace(path)
        written.append(path)
    summary_path = out / f"{name}.json"
    tmp = out / f".{summary_path.name}.tmp"
    tmp.write_bytes(summary_bytes)
    tmp.replace(summary_path)
    return written + [summary_path]


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


@dataclass
class Imported:
    """What :func:`import_archives` did, record by record."""

    written: list[str] = field(default_factory=list)          # record file names
    present: list[str] = field(default_factory=list)          # already there with the same metrics
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (member, why)
    devices: Counter = field(default_factory=Counter)         # "cuda (NVIDIA H200)" -> records written
    summaries: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)      # job ids whose checkpoints were written


def import_archives(paths: list[Path], store, allow_dirty: bool = False, dry_run: bool = False) -> Imported:
    """Check every record of the archives ``paths`` and write those that pass into ``store``
    (:class:`pubench.store.ResultStore`); ``dry_run``: check only."""
    from pubench.report.compute import device_label
    from pubench.utils.io import atomic_write

    result = Imported()
    members: list[tuple[str, bytes]] = []
    stopped_files: list[tuple[str, str, bytes]] = []
    for path in paths:
        try:
            with tarfile.open(path, "r:gz") as tar:
                for m in tar.getmembers():
                    if not m.isfile():
                        continue
                    data = tar.extractfile(m).read()
                    if m.name == SUMMARY:
                        result.summaries.append(json.loads(data))
                    elif (ck := _CHECKPOINT.match(m.name)) is not None:
                        stopped_files.append((ck.group(1), ck.group(2), data))
                    else:
                        members.append((m.name, data))
        except (OSError, tarfile.TarError, ValueError) as e:
            from pubench.errors import UsageError

            raise UsageError(f"{path}: not a campaign archive ({type(e).__name__}: {e})") from None
    expansions: dict[tuple, set[str]] = {}
    for name, data in members:
        rec, why = _checked(name, data, store, allow_dirty, expansions)
        if why is not None:
            result.rejected.append((name, why))
            continue
        from pubench.jobs.plan import Job

        job = Job.from_dict(rec["job"])
        have = store.read(job)
        if have is not None:
            if have.get("metrics") == rec["metrics"]:
                result.present.append(store.path(job).name)
            else:
                result.rejected.append((name, "already in the store with other metrics (kept; compare them with "
                                              f"{store.path(job)})"))
            continue
        if not dry_run:
            atomic_write(store.path(job), lambda f, data=data: f.write(data), binary=True)
            store.path(job, failed=True).unlink(missing_ok=True)
        result.written.append(store.path(job).name)
        result.devices[device_label(rec)] += 1
    _checkpoints(stopped_files, result, store, dry_run)
    return result


def _checkpoints(files: list[tuple[str, str, bytes]], result: Imported, store, dry_run: bool) -> None:
    """Write the stopped jobs' checkpoints of ``files`` ((job id, file name, bytes)) into the
    store's checkpoint folder: only for jobs a summary lists as stopped, not done in the store
    and without checkpoints of their own there."""
    from pubench.train.checkpoint import checkpoint_root
    from pubench.utils.io import atomic_write

    stopped = {j["id"]: j for s in result.summaries for j in s.get("jobs", []) if j.get("status") == "interrupted"}
    root = checkpoint_root(store.root)
    by_job: dict[str, list[tuple[str, bytes]]] = {}
    for job_id, name, data in files:
        by_job.setdefault(job_id, []).append((name, data))
    for job_id, got in sorted(by_job.items()):
        if job_id not in stopped:
            result.rejected.append((f"checkpoints/{job_id}/", "checkpoints of a job the archive's summary does not "
                                                              "list as stopped"))
            continue
        info = stopped[job_id]
        folder = store.folder(info.get("tier") or "paper", info["spec"]) if info.get("spec") else None
        if folder is not None and any(folder.glob(f"*--{job_id}.json")):
            continue  # done meanwhile: its record is what counts
        if (root / job_id).is_dir() and any((root / job_id).glob("*.pt")):
            continue  # the store's own, newer or the same
        if not dry_run:
            for name, data in got:
                atomic_write(root / job_id / name, lambda f, data=data: f.write(data), binary=True)
        result.checkpoints.append(job_id)


def _checked(name: str, data: bytes, store, allow_dirty: bool, expansions: dict) -> tuple[dict | None, str | None]:
    """The record of member ``name`` and None, or None and why it is refused."""
    from pubench.errors import PubenchError
    from pubench.jobs import expand
    from pubench.jobs.plan import Job
    from pubench.numerics import Numerics
    from pubench.registry import get_spec
    from pubench.store.store import SCHEMA_VERSION, record_problem
    from pubench.utils.hashing import config_hash

    match = _MEMBER.match(name)
    if match is None or ".." in name:
        return None, "not a record's path (results/<tier>/<spec>/<file>.json)"
    tier, spec_id, file = match.groups()
    try:
        rec = json.loads(data)
    except ValueError as e:
        return None, f"does not parse ({e})"
    if not isinstance(rec, dict) or rec.get("schema") != SCHEMA_VERSION:
        return None, f"result schema {rec.get('schema') if isinstance(rec, dict) else None!r}, expected {SCHEMA_VERSION}"
    if file.endswith(".failed.json"):
        return None, "a failure record (only ok records are imported)"
    if (why := record_problem(rec, Path(file))) is not None:
        return None, why
    try:
        job = Job.from_dict(rec["job"])
        numerics = Numerics.from_dict(job.numerics)
    except (TypeError, ValueError, PubenchError) as e:
        return None, f"its job does not read as a job ({e})"
    if config_hash(job.identity) != rec["job"]["id"]:
        return None, "its job id is not the hash of its config (task, params, seeds, spec version, numerics)"
    if (job.tier, job.spec_id) != (tier, spec_id):
        return None, f"its job is {job.spec_id} at tier {job.tier}, filed under {spec_id} at {tier}"
    try:
        spec = get_spec(spec_id)
    except PubenchError:
        return None, f"no spec {spec_id!r} here"
    if job.spec_version != spec.version:
        return None, f"spec version {job.spec_version}; {spec_id} is at version {spec.version} here (a stale record)"
    if tier not in spec.tiers:
        return None, f"{spec_id} has no tier {tier!r}"
    key = (spec_id, tier, canonical_numerics(numerics), job.seed_index)
    if key not in expansions:
        try:
            expansions[key] = {j.id for j in expand(spec, tier, job.seed_index + 1, numerics=numerics).jobs}
        except PubenchError as e:
            expansions[key] = set()
            return None, f"{spec_id} does not expand at tier {tier} ({e})"
    if job.id not in expansions[key]:
        return None, f"not a job of {spec_id} at tier {tier} (its cell's config differs from the spec's)"
    if store.path(job).name != file:
        return None, f"filed as {file}, the store names it {store.path(job).name}"
    prov = rec.get("provenance") or {}
    if not allow_dirty and (prov.get("git_dirty") is not False or not prov.get("git_sha")):
        return None, ("ran from code that differs from a commit, or an unknown one (provenance git_sha "
                      f"{prov.get('git_sha')!r}, git_dirty {prov.get('git_dirty')!r}); --allow-dirty takes it")
    return rec, None


def canonical_numerics(numerics) -> str:
    return json.dumps(numerics.to_dict(), sort_keys=True)
