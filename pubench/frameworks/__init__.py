"""Contrastive pre-training frameworks (:data:`FRAMEWORKS`: SimCLR, MoCo, CMC; interface
:class:`pubench.frameworks.base.Framework`), the pre-training that runs any of them with
any loss (:mod:`pubench.frameworks.pretrain`), and InfoGraph's graph pre-training
(:mod:`pubench.frameworks.infograph`). They train through the one loop of
:mod:`pubench.train`; nothing here imports :mod:`pubench.pu`."""

from pubench.frameworks.base import FRAMEWORKS, Framework

__all__ = ["FRAMEWORKS", "Framework"]
