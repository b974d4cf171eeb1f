"""Downstream classifiers on a pre-trained encoder: ``linear_probe``, ``finetune``,
``pupl``, ... Each module registers its unit in :data:`DOWNSTREAM` (interface:
:class:`pubench.downstream.base.Downstream`); the registry scans this package."""

from pubench.downstream.base import DOWNSTREAM, Downstream

__all__ = ["DOWNSTREAM", "Downstream"]
