"""Machine-wide core slots: however many runners share a machine, the jobs running at
once never ask for more threads than it has cores.

One lock file per usable core under ``$PUBENCH_CORE_SLOTS`` (default
``<tmp>/pubench-cores-<uid>``); a job holds ``threads`` of them (``fcntl.flock``) while it
runs. The kernel drops a dead process's locks, so a killed runner never leaves a core
taken. ``PUBENCH_CORE_SLOTS=off`` turns the slots off (e.g. inside a SLURM allocation,
where the scheduler already gives each task its cores).

Waiting jobs are served first come, first served: each takes a ticket (a file under
``queue/`` named by its arrival time, locked by its owner) and only the oldest live ticket
may take slots, so a short `verify` started while a `--jobs 2` run goes on gets the next
free core instead of losing every race to the run's next job. A ticket whose owner died is
unlocked and removed by the next waiter that sees it.
"""

from __future__ import annotations

import fcntl
import os
import random
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def slots_folder() -> Path | None:
    env = os.environ.get("PUBENCH_CORE_SLOTS")
    if env and env.lower() in ("0", "off", "no", "false"):
        return None
    return Path(env) if env else Path(tempfile.gettempdir()) / f"pubench-cores-{os.getuid()}"


@contextmanager
def _ticket(folder: Path) -> Iterator[str]:
    """A place in the queue of waiting jobs, held (locked) until the block ends."""
    queue = folder / "queue"
    queue.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid():08d}-{random.getrandbits(32):08x}"
    scratch = queue / f".{name}"
    fd = os.open(scratch, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(scratch, queue / name)  # visible only once locked: a live ticket never looks dead
        try:
            yield name
        finally:
            (queue / name).unlink(missing_ok=True)
    finally:
        os.close(fd)


def _first_in_queue(queue: Path, mine: str) -> bool:
    """Whether no live ticket is older than ``mine``; dead ones (unlockable) are removed."""
    for name in sorted(n for n in os.listdir(queue) if not n.startswith(".")):
        if name >= mine:
            return True
        try:
            fd = os.open(queue / name, os.O_RDWR)
        except FileNotFoundError:  # its owner just finished
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # an older waiter is alive
        else:
            (queue / name).unlink(missing_ok=True)  # its owner died waiting
        finally:
            os.close(fd)
    return True


def _try_take(folder: Path, total: int, want: int) -> list[int] | None:
    """``want`` slot locks, or None (holding none) when fewer are free."""
    held: list[int] = []
    for i in random.sample(range(total), total):
        fd = os.open(folder / f"core-{i}", os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        held.append(fd)
        if len(held) == want:
            return held
    for fd in held:  # never sit on part of what we need: another runner may need those
        os.close(fd)
    return None


@contextmanager
def hold_cores(threads: int, folder: Path | None = None, total: int | None = None,
               poll_s: float = 0.2) -> Iterator[int]:
    """Block until ``threads`` core slots are free, hold them for the ``with`` block.
    Yields the number of slots held (0 when slots are off)."""
    folder = slots_folder() if folder is None else folder
    if folder is None:
        yield 0
        return
    total = total or usable_cores()
    want = max(1, min(threads, total))
    folder.mkdir(parents=True, exist_ok=True)
    held = _try_take(folder, total, want) if not _waiting(folder) else None
    if held is None:
        with _ticket(folder) as mine:
            while True:
                if _first_in_queue(folder / "queue", mine):
                    held = _try_take(folder, total, want)
                    if held is not None:
                        break
                time.sleep(poll_s * (0.5 + random.random()))
    try:
        yield want
    finally:
        for fd in held:
            os.close(fd)


def _waiting(folder: Path) -> bool:
    """Whether any job waits in the queue (then a newcomer queues behind it)."""
    queue = folder / "queue"
    return queue.is_dir() and any(not n.startswith(".") for n in os.listdir(queue))
