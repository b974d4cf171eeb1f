"""Where specs, results, reports, logs and data live (each overridable by environment)."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """``$PUBENCH_HOME``, else the source checkout holding ``experiments/``, else the cwd."""
    env = os.environ.get("PUBENCH_HOME")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[1]
    return here if (here / "experiments").is_dir() else Path.cwd()


def experiments_root() -> Path:
    """The registry of specs: ``$PUBENCH_EXPERIMENTS``, else ``experiments/`` of the source checkout."""
    env = os.environ.get("PUBENCH_EXPERIMENTS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "experiments"


def results_root() -> Path:
    return Path(os.environ.get("PUBENCH_RESULTS") or project_root() / "results")


def reports_root() -> Path:
    return Path(os.environ.get("PUBENCH_REPORTS") or project_root() / "reports")


def logs_root() -> Path:
    """SLURM logs and manifests; must be on a filesystem the compute nodes share."""
    return Path(os.environ.get("PUBENCH_LOGS") or project_root() / "slurm_logs")


def slurm_profiles_root() -> Path:
    return Path(os.environ.get("PUBENCH_SLURM_PROFILES") or project_root() / "slurm")


def data_root() -> Path:
    """``$PUBENCH_DATA``, default ``./data``."""
    return Path(os.environ.get("PUBENCH_DATA") or "data")


def cache_root() -> Path:
    """What pubench derives and may rebuild at any time (``$PUBENCH_CACHE``, default
    ``<home>/.cache``): parsed specs, encoders, preflight figures, decoded data."""
    return Path(os.environ.get("PUBENCH_CACHE") or project_root() / ".cache")


def data_cache(root: str | Path) -> Path:
    """Where the decoded copies of the data sets under the data root ``root`` are kept:
    ``$PUBENCH_DATA_CACHE`` (the test suite's own folder), default ``<cache>/data``, then one
    folder per data root (the hash of its resolved path, whose name it keeps beside it), never
    inside the data root: a root several users or nodes share read-only must work, and a
    loader must not write 300 MB into it."""
    import hashlib

    base = Path(os.environ.get("PUBENCH_DATA_CACHE") or cache_root() / "data")
    resolved = str(Path(root).resolve())
    tail = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(resolved).name)[:40] or "root"
    return base / f"{tail}-{hashlib.sha256(resolved.encode()).hexdigest()[:12]}"


def measurements_root() -> Path:
    """The measured figures committed with the code (preflight, gpu-check, packing JSONs):
    ``benchmarks/results/`` of the project; what a fresh clone estimates from."""
    return project_root() / "benchmarks" / "results"
