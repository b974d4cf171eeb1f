"""PU classifiers and risks (uPU, nnPU, vPU, Dist-PU, puPL, ...) and prior estimators."""

from pubench.utils.registry import Registry

PU_METHODS = Registry("pu_method", package=__name__)
