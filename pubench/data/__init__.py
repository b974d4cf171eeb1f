"""Datasets (image, graph, text), PU/PNU split builders, class priors, the prepare step."""

from pubench.utils.registry import Registry

DATASETS = Registry("dataset", package=__name__)
