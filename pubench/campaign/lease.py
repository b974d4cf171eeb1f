"""A GPU lease of this project, as its machines are lent (the ``run`` tool's own description,
docs/gpu.md "The lease, step by step"): what one lease allows, and what a campaign window
must fit to use it.

* **Device time**: :data:`DEVICE_TIME_S` in all, the machine's start (:data:`START_S`:
  1 to 3 minutes), the upload, every command, idle time and every failed try included.
* **A command**: at most :data:`COMMAND_LIMIT_S` (``timeout_s`` at most 600); what it left
  under ``$OUT`` comes back even when the limit kills it.
* **A new start** needs :data:`NEW_START_NEEDS_S` of device time left, so after a start of
  up to 3 minutes and one command of up to 10 no second window fits: **one lease = one
  window** (:func:`windows_per_lease`).
* **What travels**: the working tree, tracked files and the folders ``carry`` names, at most
  :data:`TRAVEL_LIMIT` (counted in :data:`BLOCK`-byte blocks); ``../shared`` does not travel;
  no network there.
* **What comes back**: at most :data:`OUT_FILES` files of :data:`OUT_FILE_BYTES` each, at
  most :data:`OUT_DEPTH` folders down, plain names (:func:`out_problems` checks a folder).
* **The image**: :data:`IMAGE_HAS` (torch 2.11), and neither :data:`IMAGE_LACKS`: the
  wheels of ``.whl/`` stand in for them (``make gpu-paper``).

:data:`KINDS` are the machines a lease may bring: their cores, host memory and GPU memory,
as the tool states them, which is what a dry run plans by (``pubench campaign --dry-run
--for KIND``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DEVICE_TIME_S = 15 * 60
START_S = (60, 180)               # a machine's start, least and most seen
COMMAND_LIMIT_S = 600
NEW_START_NEEDS_S = 4 * 60
#: the run call's timeout and the window it holds: the budget counts from the command's start
#: (wheels, unpacking and bundling inside it); the rest is for make and python to start and end
TIMEOUT_S = COMMAND_LIMIT_S
WINDOW_BUDGET_S = 570.0
TRAVEL_LIMIT = 64 * 2**20
BLOCK = 4096
OUT_FILES = 8
OUT_FILE_BYTES = 16 * 2**20
OUT_DEPTH = 2
PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
IMAGE_HAS = ("torch", "numpy", "yaml", "jinja2", "tabulate", "pandas", "scipy", "sklearn", "torch_geometric")
IMAGE_LACKS = ("pydantic", "submitit")
#: what ``pubench campaign --dry-run`` imports (a python without one of them cannot plan a window)
PLAN_NEEDS = ("yaml", "tabulate", "pydantic")
#: and what a window's jobs import besides (the queue's: images, SVM evaluation, simulations)
CAMPAIGN_NEEDS = PLAN_NEEDS + ("torch", "numpy", "scipy", "sklearn")


@dataclass(frozen=True)
class Kind:
    """A machine a lease may bring, as the tool states it."""

    name: str
    gpu: str                  # the name torch and nvidia-smi give its GPU
    gpu_memory_gib: float     # what the tool says is usable
    cores: int
    memory_gib: float
    disk_gib: float

    @property
    def gpu_memory_bytes(self) -> int:
        return int(self.gpu_memory_gib * 2**30)


KINDS = {
    "nvidia-h100-x1": Kind("nvidia-h100-x1", "NVIDIA H100 80GB HBM3", 78.0, 16, 128.0, 64.0),
    "nvidia-h200": Kind("nvidia-h200", "NVIDIA H200", 139.0, 16, 128.0, 64.0),
}
#: the kind a call that names none gets first
DEFAULT_KIND = "nvidia-h100-x1"


def windows_per_lease(start_s: float = START_S[1], command_s: float = COMMAND_LIMIT_S) -> int:
    """Windows one lease holds: a start, then commands of ``command_s`` while the device time
    left allows another; a second start (after the machine went back) needs
    :data:`NEW_START_NEEDS_S` and is a second start's time again."""
    left, windows = DEVICE_TIME_S - start_s, 0
    while left >= command_s:
        left -= command_s
        windows += 1
    return windows


def lines(kind: Kind | None = None) -> list[str]:
    """The lease as a plan says it (each figure the tool's statement)."""
    one = windows_per_lease()
    out = [f"  lease: {DEVICE_TIME_S // 60} min of device time in all (stated): a start of {START_S[0] // 60}-"
           f"{START_S[1] // 60} min (stated), then one command of at most {COMMAND_LIMIT_S} s (stated; run with "
           f"timeout_s {TIMEOUT_S}); {DEVICE_TIME_S // 60} - {START_S[1] // 60} - {COMMAND_LIMIT_S // 60} leaves "
           f"{(DEVICE_TIME_S - START_S[1] - COMMAND_LIMIT_S) // 60} min, under the {NEW_START_NEEDS_S // 60} min a new "
           f"start needs: {one} window per lease"]
    if kind is not None:
        out.append(f"  machine: {kind.name}: {kind.gpu}, {kind.gpu_memory_gib:g} GiB of GPU memory, {kind.cores} CPU "
                   f"cores, {kind.memory_gib:g} GiB of memory (stated)")
    return out


def tree_blocks(paths: list[Path]) -> int:
    """Bytes of ``paths`` counted in whole :data:`BLOCK`-byte blocks (as the travel limit counts)."""
    total = 0
    for p in paths:
        try:
            size = p.stat().st_size
        except OSError:
            continue
        total += -(-size // BLOCK) * BLOCK
    return total


def out_problems(folder: Path) -> list[str]:
    """What in ``folder`` would not come back from a lease (one line each; none: all of it)."""
    problems, files = [], []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            problems.append(f"{rel}: not a plain file")
            continue
        if any(not PLAIN_NAME.match(part) for part in rel.parts):
            problems.append(f"{rel}: not a plain name")
        if p.is_file():
            files.append(p)
            if len(rel.parts) - 1 > OUT_DEPTH:
                problems.append(f"{rel}: more than {OUT_DEPTH} folders down")
            if p.stat().st_size > OUT_FILE_BYTES:
                problems.append(f"{rel}: {p.stat().st_size / 2**20:.1f} MiB, over {OUT_FILE_BYTES / 2**20:.0f} MiB")
    if len(files) > OUT_FILES:
        problems.append(f"{len(files)} files, over {OUT_FILES}")
    return problems
