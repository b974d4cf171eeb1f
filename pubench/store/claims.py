"""Claims: a job is claimed atomically before it runs, so runners sharing a store (two
local runs, SLURM array tasks, a local run beside a SLURM array) never run it twice.

A claim is ``<folder>/.claims/<job id>.claim``, holding the claimer's host, pid, process
start time and the claim time. It appears whole: the claimer writes a private temporary file
and hard-links it to the claim's name, which fails when the claim exists (atomic on local
filesystems and NFS), so no runner ever reads a claim half-written by a claimer that is
stopped or slow mid-write (it would count as stale once 5 s old and be taken over: the job
would run twice). Where the filesystem has no hard links, ``O_CREAT | O_EXCL`` and a write.
While the job runs, a heartbeat thread touches the file every
``HEARTBEAT_S`` seconds. A claim is stale, and taken over, when its holder is gone:

* on this host, the holder process decides, never the heartbeat's age: the claim is live
  while a process with its pid *and* its start time exists (a reused pid is another
  process), so a runner that is stopped (Ctrl-Z, SIGSTOP, a paused VM) keeps its claims
  however long it sleeps;
* on another host (whose processes we cannot see), the heartbeat decides: stale once it
  stopped for ``STALE_S`` seconds (the job hit its time limit, or the node died).
Taking over goes through a short-lived ``.takeover`` lock so two runners never both
replace one stale claim.
"""

from __future__ import annotations

import errno
import json
import math
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pubench.errors import StorageError
from pubench.utils.io import loads_json
from pubench.utils.threads import start_helper_thread

HEARTBEAT_S = 30.0
STALE_S = 600.0
TAKEOVER_STALE_S = 60.0


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks since boot) of ``pid`` (Linux), None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], fields[19]


def _proc_start(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot (Linux), None when unknown."""
    stat = _proc_stat(pid)
    return None if stat is None else stat[1]


def _alive(pid: int, start: str | None) -> bool:
    """Whether the claim's holder still runs: its pid exists, is not a zombie (a killed
    worker whose reaper has not reaped it yet, e.g. under a container's init that never
    reaps), and started when the claim says (a reused pid is another process)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        pass
    stat = _proc_stat(pid)
    if stat is None:
        return True
    state, now = stat
    return state not in ("Z", "X") and (start is None or now == start)


_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK}


def _write_synced(path: Path, flags: int, data: dict[str, Any]) -> None:
    """Create ``path`` (``flags``) and write ``data``; a failed write leaves no file behind."""
    fd = os.open(path, flags, 0o666)  # the umask decides the mode
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
    except OSError:
        path.unlink(missing_ok=True)
        raise


def _holder(data: Any, mtime: float) -> dict[str, Any]:
    """A claim file's content as its holder. A field of the wrong type (a damaged or planted
    file: a list, a pid that is text or out of range) reads as unknown, and a claim without a
    host is judged as a half-written one: live for 5 s after its last write."""
    if not isinstance(data, dict):
        return {"host": None, "pid": None, "heartbeat_unix": mtime}
    host, pid, start, since = (data.get(k) for k in ("host", "pid", "proc_start", "claimed_unix"))
    number = isinstance(since, (int, float)) and not isinstance(since, bool) and math.isfinite(since)
    return {**data, "host": host if isinstance(host, str) else None,
            "pid": pid if type(pid) is int and 0 < pid < 2**31 else None,
            "proc_start": start if isinstance(start, str) else None,
            "claimed_unix": since if number else None, "heartbeat_unix": mtime}


@dataclass
class Claim:
    path: Path
    job_id: str
    _stop: threading.Event | None = None

    def start_heartbeat(self, every: float = HEARTBEAT_S) -> None:
        self._stop = threading.Event()

        def beat() -> None:
            while not self._stop.wait(every):
                try:
                    os.utime(self.path)
                except OSError:
                    return

        start_helper_thread(beat, f"claim-{self.job_id}")

    def release(self) -> None:
        if self._stop is not None:
            self._stop.set()
        try:
            holder = loads_json(self.path.read_text())
        except (OSError, ValueError, RecursionError):
            return
        if isinstance(holder, dict) and holder.get("pid") == os.getpid() and holder.get("host") == socket.gethostname():
            self.path.unlink(missing_ok=True)


class ClaimBook:
    """The claims of one store folder (one spec at one tier)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def path(self, job_id: str) -> Path:
        return self.folder / f"{job_id}.claim"

    @staticmethod
    def _me(extra: dict[str, Any] | None = None) -> dict[str, Any]:
        pid = os.getpid()
        return {"host": socket.gethostname(), "pid": pid, "proc_start": _proc_start(pid),
                "claimed_unix": time.time(), **(extra or {})}

    def read(self, job_id: str) -> dict[str, Any] | None:
        p = self.path(job_id)
        try:
            data = loads_json(p.read_text())
            return _holder(data, p.stat().st_mtime)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError):  # half-written by a claimer that died mid-write: stale once old
            try:
                return _holder(None, p.stat().st_mtime)
            except FileNotFoundError:
                return None

    @staticmethod
    def is_live(holder: dict[str, Any], now: float | None = None) -> bool:
        now = time.time() if now is None else now
        age = now - float(holder.get("heartbeat_unix", 0))
        if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
            return _alive(holder["pid"], holder.get("proc_start"))  # the process decides, not the age
        if holder.get("host") is None:  # half-written by a claimer that died mid-write
            return age < 5.0
        return age <= STALE_S

    @staticmethod
    def describe(holder: dict[str, Any]) -> str:
        """Who holds a claim, since when, and when it would be taken over (for messages)."""
        host, pid = holder.get("host") or "?", holder.get("pid")
        since = holder.get("claimed_unix")
        try:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since)) if since else "an unknown time"
        except (OverflowError, OSError, ValueError):  # a planted claim's time beyond the calendar
            when = "an unknown time"
        if host == socket.gethostname():
            expiry = "taken over when that process ends"
        else:
            left = STALE_S - (time.time() - float(holder.get("heartbeat_unix", 0)))
            expiry = f"taken over if its heartbeat stops for {STALE_S / 60:.0f} min (now {max(0.0, left) / 60:.0f} min left)"
        return f"host {host} pid {pid}, since {when}; {expiry}"

    def holder(self, job_id: str) -> dict[str, Any] | None:
        """The live claim on ``job_id`` (None when unclaimed or stale)."""
        h = self.read(job_id)
        return h if h is not None and self.is_live(h) else None

    def live_ids(self) -> set[str]:
        return set(self.live_holders())

    def live_holders(self) -> dict[str, dict[str, Any]]:
        """Job id -> holder of every live claim."""
        if not self.folder.is_dir():
            return {}
        out = {}
        for p in self.folder.glob("*.claim"):
            h = self.holder(p.stem)
            if h is not None:
                out[p.stem] = h
        return out

    def _create(self, job_id: str, extra: dict[str, Any] | None) -> Claim | None:
        """A new claim file, or None when one exists; a write that fails (disk full, ...)
        leaves no claim behind and raises :class:`~pubench.errors.StorageError`."""
        path = self.path(job_id)
        tmp = self.folder / f".{job_id}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            _write_synced(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, self._me(extra))
            try:
                os.link(tmp, path)
            except FileExistsError:
                return None
            except OSError as exc:
                if exc.errno not in _NO_HARD_LINKS:
                    raise
                return self._create_in_place(path, job_id, extra)
        except OSError as exc:
            raise StorageError.from_os(exc, self.folder) from exc
        finally:
            tmp.unlink(missing_ok=True)
        return Claim(path, job_id)

    def _create_in_place(self, path: Path, job_id: str, extra: dict[str, Any] | None) -> Claim | None:
        """:meth:`_create` on a filesystem without hard links: visible before it is written."""
        try:
            _write_synced(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, self._me(extra))
        except FileExistsError:
            return None
        return Claim(path, job_id)

    def acquire(self, job_id: str, extra: dict[str, Any] | None = None) -> Claim | None:
        """Claim ``job_id``; None when a live claimer holds it. Stale claims are taken over."""
        claim = self._create(job_id, extra)
        if claim is not None:
            return claim
        held = self.read(job_id)
        if held is None:  # released meanwhile
            return self._create(job_id, extra)
        if self.is_live(held):
            return None
        lock = self.folder / f"{job_id}.takeover"
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            try:
                if time.time() - lock.stat().st_mtime > TAKEOVER_STALE_S:
                    lock.unlink(missing_ok=True)  # a taker died mid-takeover; the next attempt proceeds
            except FileNotFoundError:
                pass
            return None
        os.close(fd)
        try:
            again = self.read(job_id)
            if again is not None and (self.is_live(again) or again.get("claimed_unix") != held.get("claimed_unix")):
                return None  # someone else took it over first
            self.path(job_id).unlink(missing_ok=True)
            return self._create(job_id, extra)
        finally:
            lock.unlink(missing_ok=True)
