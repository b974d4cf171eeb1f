"""Datasets (image, graph, text), PU/PNU split builders, class priors, the prepare step.

Data sets register in :data:`DATASETS` (interface: :mod:`pubench.data.base`)."""

from pubench.data.base import DATASETS, Dataset

__all__ = ["DATASETS", "Dataset"]
