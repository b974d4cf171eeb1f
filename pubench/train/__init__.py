"""Training loops by phase: contrastive pre-training frameworks and downstream classifiers."""

from pubench.utils.registry import Registry

FRAMEWORKS = Registry("framework", package=__name__)
DOWNSTREAM = Registry("downstream", package=__name__)
