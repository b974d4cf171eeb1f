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
    """The result store: ``$PUBENCH_RESULTS``, else ``results/`` of the project (the committed store)."""
    return _folder(os.environ.get("PUBENCH_RESULTS") or project_root() / "results", "the result store",
                   "PUBENCH_RESULTS")


def reports_root() -> Path:
    return _folder(os.environ.get("PUBENCH_REPORTS") or project_root() / "reports", "the reports folder",
                   "PUBENCH_REPORTS")


def committed_results() -> Path:
    """``results/`` of the project: the committed store."""
    return project_root() / "results"


def baselines_root() -> Path:
    """The store whose records of a table's own rows a row added with ``--add-row`` is compared with
    where the result store lacks them: ``$PUBENCH_BASELINES`` (``--baselines DIR``), else the
    committed store."""
    return _folder(os.environ.get("PUBENCH_BASELINES") or committed_results(), "the baselines store",
                   "PUBENCH_BASELINES")


def _folder(value: str | Path, what: str, variable: str) -> Path:
    """``value`` as a folder; a file there is one line naming the variable (exit 2): read as a store,
    it would look empty."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        from pubench.errors import UsageError

        raise UsageError(f"{what} {path} is a file, not a folder: point ${variable} at a folder (a new one is made)")
    return path


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
