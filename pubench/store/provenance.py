"""Where a result came from: code version, packages, host."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

import pubench


def repo_root() -> Path:
    return Path(pubench.__file__).resolve().parents[1]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=repo_root(),
            capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


#: What decides a job's numbers: the code, the specs and the dependency pins. A change
#: elsewhere (reports, results, docs) does not make a record "dirty".
CODE_PATHS = ("pubench", "experiments", "pyproject.toml")


def code_changes() -> list[str]:
    """Uncommitted changes (tracked or untracked) to the code, specs and pins, as
    ``git status --porcelain`` lines; empty outside a git checkout."""
    out = _git("status", "--porcelain", "--untracked-files=normal", "--", *CODE_PATHS)
    return [line for line in (out or "").splitlines() if line.strip()]


@functools.lru_cache(maxsize=1)
def provenance() -> dict[str, object]:
    """Git sha and whether code or specs had uncommitted changes, Python / torch / numpy
    versions, host (cached per process). Without git, ``PUBENCH_SOURCE_SHA`` and
    ``PUBENCH_SOURCE_DIRTY`` name them."""
    from importlib import metadata

    def version(pkg: str) -> str | None:  # without importing it: a record is also written mid-interrupt
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    sha = _git("rev-parse", "HEAD")
    changes = code_changes()
    if sha is None and os.environ.get("PUBENCH_SOURCE_SHA"):
        # a copy of the source without its git folder (a campaign on a GPU machine): the commit it
        # was copied from, and whether its code was that commit's (pubench.campaign.travel)
        sha = os.environ["PUBENCH_SOURCE_SHA"]
        changes = [] if os.environ.get("PUBENCH_SOURCE_DIRTY") == "0" else ["(the code differs from this commit)"]
    return {
        "git_sha": sha,
        "git_dirty": bool(changes) if sha is not None else None,
        "git_changes": changes[:20] if changes else [],
        "pubench": pubench.__version__,
        "python": sys.version.split()[0],
        "torch": version("torch"),
        "numpy": version("numpy"),
        "platform": platform.platform(),
        "host": socket.gethostname(),
    }
