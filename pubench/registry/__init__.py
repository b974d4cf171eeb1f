"""REGISTRY: specs of every paper table and figure, loaded from YAML and validated."""

from pubench.paths import experiments_root
from pubench.registry.loader import get_spec, load_all, load_spec, parse_spec, spec_paths
from pubench.registry.spec import PAPERS, TIERS, Claim, Metric, ReportedCell, Spec, SpecError, UnknownSpec

__all__ = [
    "PAPERS", "TIERS", "Claim", "Metric", "ReportedCell", "Spec", "SpecError", "UnknownSpec",
    "experiments_root", "get_spec", "load_all", "load_spec", "parse_spec", "spec_paths",
]
