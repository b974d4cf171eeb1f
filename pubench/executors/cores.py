"""Machine-wide core slots: however many runners share a machine, the jobs running at
once never ask for more threads than it has cores.

One lock file per usable core under ``$PUBENCH_CORE_SLOTS`` (default
``<tmp>/pubench-cores-<uid>``); a job holds ``threads`` of them (``fcntl.flock``) while it
runs. The kernel drops a dead process's locks, so a killed runner never leaves a core
taken. ``PUBENCH_CORE_SLOTS=off`` turns the slots off (e.g. inside a SLURM allocation,
where the scheduler already gives each task its cores).
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
    held: list[int] = []
    try:
        while True:
            for i in random.sample(range(total), total):
                fd = os.open(folder / f"core-{i}", os.O_CREAT | os.O_RDWR, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                held.append(fd)
                if len(held) == want:
                    break
            if len(held) == want:
                break
            for fd in held:  # never sit on part of what we need: another runner may need those
                os.close(fd)
            held.clear()
            time.sleep(poll_s * (0.5 + random.random()))
        yield want
    finally:
        for fd in held:
            os.close(fd)
