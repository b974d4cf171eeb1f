"""Where a result came from: code version, packages, host."""

from __future__ import annotations

import functools
import platform
import socket
import subprocess
import sys
from pathlib import Path

import pubench


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=Path(pubench.__file__).resolve().parents[1],
            capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def provenance() -> dict[str, object]:
    """Git sha and dirty flag, Python / torch / numpy versions, host (cached per process)."""
    import numpy

    try:
        import torch

        torch_version = torch.__version__
    except ImportError:  # pragma: no cover
        torch_version = None
    sha = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "git_sha": sha,
        "git_dirty": bool(status) if status is not None else None,
        "pubench": pubench.__version__,
        "python": sys.version.split()[0],
        "torch": torch_version,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "host": socket.gethostname(),
    }
