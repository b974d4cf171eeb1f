"""Atomic file writes: a reader never sees a half-written file. A write that fails (disk
full, read-only, quota) raises :class:`pubench.errors.StorageError`, one line naming the
folder and the system's reason."""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import IO, Any, Callable

from pubench.errors import StorageError, UsageError

TMP_PREFIX = ".tmp-"
#: a JSON escape of a UTF-16 surrogate (``\ud800``): one of a pair, or a lone one
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def loads_json(text: str | bytes) -> Any:
    """``json.loads(text)`` of a file pubench reads back (a record, a claim, a cache entry, a
    manifest); ValueError also where a string holds a lone surrogate (``"\\ud800"``): JSON's
    escapes can say one, but it is no text, and printing or writing it later would fail."""
    value = json.loads(text)
    escape = _SURROGATE_ESCAPE_BYTES if isinstance(text, bytes) else _SURROGATE_ESCAPE
    if escape.search(text):  # rare: only then is the value encoded again to find a lone one
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone surrogate (a \\udXXX escape without its pair): not text") \
                from None
    return value


def atomic_write(path: str | Path, write: Callable[[IO], None], *, binary: bool = False, prefix: str = TMP_PREFIX
                 ) -> Path:
    """Call ``write(f)`` on a temp file in ``path``'s folder, fsync it, then rename it over
    ``path``; the temp file goes if anything fails (a killed writer's is removed by
    :func:`remove_stale_temps`)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=path.parent)
    except OSError as exc:
        raise StorageError.from_os(exc, path.parent) from exc
    try:
        os.fchmod(fd, 0o666 & ~umask())  # mkstemp makes 0600: give what the user's umask gives any new file
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise StorageError.from_os(exc, path.parent) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@functools.lru_cache(maxsize=1)
def umask() -> int:
    """This process's umask (read without changing it where Linux says it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)  # elsewhere: set and restore (before any thread writes)
    os.umask(old)
    return old


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` atomically (:func:`atomic_write`)."""
    return atomic_write(path, lambda f: f.write(text))


def write_text_if_changed(path: str | Path, text: str) -> Path:
    """:func:`atomic_write_text`, unless ``path`` already holds exactly ``text`` (a derived file
    such as a report, rewritten each time the same: no fsync, and its mtime says when it changed)."""
    path = Path(path)
    try:
        if path.read_text(encoding="utf-8") == text:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    return atomic_write_text(path, text)


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


def check_writable(folder: Path, what: str) -> None:
    """:class:`~pubench.errors.UsageError` (one line) when ``folder`` cannot be created or
    written; ``what`` names it for the user (e.g. ``"results ($PUBENCH_RESULTS)"``)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".tmp-probe-"):
            pass
    except OSError as e:
        raise UsageError(f"cannot write the {what} folder {folder}: {e.strerror or e}") from None
