"""STORE: one JSON record per finished job, under ``results/<tier>/<spec>/``.

Record files are named ``<row>__<col>__s<seed>--<job id>.json`` (a failure record ends in
``.failed.json``). Writes are atomic (temp file, fsync, rename), so a killed runner
leaves either a whole record or none. Only ``status: ok`` records count as done; a
failure record is kept for diagnosis and the job is retried on the next run.
"""

from __future__ import annotations

import json
import re
import traceback
from pathlib import Path
from typing import Any, Iterator

from pubench.jobs.plan import Job
from pubench.store.provenance import provenance
from pubench.utils.io import atomic_write_json, remove_stale_temps

SCHEMA_VERSION = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


def slug(text: str, limit: int = 48) -> str:
    return _UNSAFE.sub("_", text).strip("_")[:limit] or "x"


class ResultStore:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    # ---- paths -------------------------------------------------------------------
    def folder(self, tier: str, spec_id: str) -> Path:
        return self.root / tier / spec_id

    def path(self, job: Job, failed: bool = False) -> Path:
        stem = f"{slug(job.row)}__{slug(job.col)}__s{job.seed_index}--{job.id}"
        return self.folder(job.tier, job.spec_id) / (stem + (".failed.json" if failed else ".json"))

    # ---- writing -----------------------------------------------------------------
    def _record(self, job: Job, status: str, timing: dict[str, Any]) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "status": status,
            "job": job.to_dict(),
            "timing": timing,
            "provenance": provenance(),
        }

    def write_ok(self, job: Job, metrics: dict[str, float], info: dict[str, Any], timing: dict[str, Any]) -> Path:
        rec = self._record(job, "ok", timing) | {"metrics": metrics, "info": info}
        path = atomic_write_json(self.path(job), rec)
        self.path(job, failed=True).unlink(missing_ok=True)
        return path

    def write_failure(self, job: Job, exc: BaseException, timing: dict[str, Any]) -> Path:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        rec = self._record(job, "failed", timing) | {
            "error": {"type": type(exc).__name__, "message": str(exc), "traceback_tail": tb[-4000:]}
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

    def done_ids(self, tier: str, spec_id: str) -> set[str]:
        return {self._job_id(p) for p in self._files(tier, spec_id, failed=False)}

    def failed_ids(self, tier: str, spec_id: str) -> set[str]:
        return {self._job_id(p) for p in self._files(tier, spec_id, failed=True)}

    def records(self, tier: str, spec_id: str, failed: bool = False) -> list[dict[str, Any]]:
        out = []
        for p in self._files(tier, spec_id, failed):
            try:
                out.append(json.loads(p.read_text()))
            except (OSError, json.JSONDecodeError) as e:  # never happens with atomic writes; say so if it does
                raise RuntimeError(f"corrupt result record {p}: {e}") from e
        return out

    def tiers(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else []

    def clean_temps(self, tier: str, spec_id: str) -> int:
        folder = self.folder(tier, spec_id)
        return remove_stale_temps(folder) if folder.is_dir() else 0
