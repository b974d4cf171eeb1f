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


def measurements_root() -> Path:
    """The measured figures committed with the code (preflight, gpu-check, packing JSONs):
    ``benchmarks/results/`` of the project; what a fresh clone estimates from."""
    return project_root() / "benchmarks" / "results"
