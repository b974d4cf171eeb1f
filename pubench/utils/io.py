"""Atomic file writes: a reader never sees a half-written file."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

TMP_PREFIX = ".tmp-"


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to a temp file in the same folder, fsync it, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=True, allow_nan=True) + "\n")


def remove_stale_temps(folder: str | Path, min_age_s: float = 300.0) -> int:
    """Delete temp files a killed writer left behind; returns how many. Only temps older than
    ``min_age_s`` go: a live writer (another run, a SLURM worker) holds its temp for
    milliseconds, so it is never pulled from under it."""
    n, now = 0, time.time()
    for p in Path(folder).rglob(f"{TMP_PREFIX}*"):
        try:
            if now - p.stat().st_mtime < min_age_s:
                continue
            p.unlink()
        except FileNotFoundError:  # renamed or removed meanwhile
            continue
        n += 1
    return n
