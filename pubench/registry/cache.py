"""A small on-disk cache of what the read-only commands recompute on every call: parsed and
validated specs (:func:`pubench.registry.loader.load_spec`), the unit names of the
registries (:mod:`pubench.registry.units`) and task config verdicts (``pubench coverage``).

Every entry is keyed by the SHA-256 of everything its value depends on (the file's content,
the presets and PU data set catalogue it expands, the source of the code that builds it),
so an edit of any of them misses and rebuilds: nothing is ever invalidated by hand. Entries
live in ``$PUBENCH_CACHE/meta/<kind>/<key>.pickle`` (default ``<home>/.cache``); a writer
writes a temp file and renames it over the entry, so two processes writing one entry at
once (they write the same bytes) leave a whole file, and a reader never sees half of one.
An entry that cannot be read is rebuilt. ``PUBENCH_META_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable

FORMAT = 1  # bump when what an entry holds changes shape


def enabled() -> bool:
    return os.environ.get("PUBENCH_META_CACHE", "1") != "0"


def cache_root() -> Path:
    from pubench.paths import project_root

    return Path(os.environ.get("PUBENCH_CACHE") or project_root() / ".cache") / "meta"


_ROOT = Path(__file__).resolve().parents[2]  # the checkout: fingerprints name files relative to it
_memo: dict[tuple[str, str], bytes] = {}  # this process's entries (pickled: every get is a fresh object)
_stamps: dict[tuple, str] = {}


def files_fingerprint(files: Iterable[Path], salt: str = "") -> str:
    """SHA-256 of the names and contents of ``files`` (memoized on their mtime and size); files
    inside the checkout are named relative to it, so two checkouts of one commit agree."""
    files = sorted(Path(f) for f in files)
    stamp = [salt]
    for f in files:
        try:
            st = f.stat()
            stamp.append((str(f), st.st_mtime_ns, st.st_size))
        except OSError:
            stamp.append((str(f), None, None))
    key = tuple(stamp)
    if key not in _stamps:
        h = hashlib.sha256(f"{FORMAT}|{sys.version_info[:2]}|{salt}".encode())
        for f in files:
            h.update(_name(f).encode() + b"\0")
            try:
                h.update(f.read_bytes())
            except OSError:
                h.update(b"<missing>")
            h.update(b"\0")
        _stamps[key] = h.hexdigest()
    return _stamps[key]


def _name(f: Path) -> str:
    try:
        return f.resolve().relative_to(_ROOT).as_posix()
    except ValueError:
        return str(f)


def key_of(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def get(kind: str, key: str) -> Any | None:
    """The value stored under ``(kind, key)``, or None (missing, unreadable, cache off)."""
    if not enabled():
        return None
    blob = _memo.get((kind, key))
    if blob is None:
        try:
            blob = (cache_root() / kind / f"{key}.pickle").read_bytes()
        except OSError:
            return None
    try:
        value = pickle.loads(blob)  # noqa: S301 - our own files, in our own cache folder
    except Exception:  # noqa: BLE001 - a torn or foreign file is a miss
        return None
    _memo[(kind, key)] = blob
    return value


def put(kind: str, key: str, value: Any) -> None:
    """Store ``value``; a cache folder that cannot be written is no error (the next call recomputes)."""
    if not enabled():
        return
    blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    _memo[(kind, key)] = blob
    folder = cache_root() / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, folder / f"{key}.pickle")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass
