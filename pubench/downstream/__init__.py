"""Downstream classifiers on a pre-trained encoder: ``linear_probe``, ``finetune``,
``pupl``. Each module registers its unit in :data:`pubench.train.DOWNSTREAM` (interface:
:class:`pubench.train.base.Downstream`); the registry scans this package."""
