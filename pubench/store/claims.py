"""Claims: a job is claimed atomically before it runs, so runners sharing a store (two
local runs, SLURM array tasks, a local run beside a SLURM array) never run it twice.

A claim is ``<folder>/.claims/<job id>.claim``, created with ``O_CREAT | O_EXCL`` (atomic
on local filesystems and NFSv3+), holding the claimer's host, pid, process start time and
the claim time. While the job runs, a heartbeat thread touches the file every
``HEARTBEAT_S`` seconds. A claim is stale, and taken over, when its process is dead
(same host: no such pid, or a pid with another start time) or when its heartbeat stopped
for ``STALE_S`` seconds (another host: the job hit its time limit, or the node died).
Taking over goes through a short-lived ``.takeover`` lock so two runners never both
replace one stale claim.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEARTBEAT_S = 30.0
STALE_S = 600.0
TAKEOVER_STALE_S = 60.0


def _proc_start(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot (Linux), None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            stat = f.read()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(pid: int, start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        pass
    now = _proc_start(pid)
    return start is None or now is None or now == start


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

        threading.Thread(target=beat, name=f"claim-{self.job_id}", daemon=True).start()

    def release(self) -> None:
        if self._stop is not None:
            self._stop.set()
        try:
            holder = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return
        if holder.get("pid") == os.getpid() and holder.get("host") == socket.gethostname():
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
            data = json.loads(p.read_text())
            data["heartbeat_unix"] = p.stat().st_mtime
            return data
        except FileNotFoundError:
            return None
        except (OSError, ValueError):  # half-written by a claimer that died mid-write: stale once old
            try:
                return {"host": None, "pid": None, "heartbeat_unix": p.stat().st_mtime}
            except FileNotFoundError:
                return None

    @staticmethod
    def is_live(holder: dict[str, Any], now: float | None = None) -> bool:
        now = time.time() if now is None else now
        if now - float(holder.get("heartbeat_unix", 0)) > STALE_S:
            return False
        if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
            return _alive(holder["pid"], holder.get("proc_start"))
        return holder.get("host") is not None or now - float(holder.get("heartbeat_unix", 0)) < 5.0

    def holder(self, job_id: str) -> dict[str, Any] | None:
        """The live claim on ``job_id`` (None when unclaimed or stale)."""
        h = self.read(job_id)
        return h if h is not None and self.is_live(h) else None

    def live_ids(self) -> set[str]:
        if not self.folder.is_dir():
            return set()
        return {p.stem for p in self.folder.glob("*.claim") if self.holder(p.stem)}

    def _create(self, job_id: str, extra: dict[str, Any] | None) -> Claim | None:
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path(job_id), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return None
        with os.fdopen(fd, "w") as f:
            json.dump(self._me(extra), f)
            f.flush()
            os.fsync(f.fileno())
        return Claim(self.path(job_id), job_id)

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
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
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
