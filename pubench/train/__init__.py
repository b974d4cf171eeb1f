"""Training: the one loop (:mod:`pubench.train.loop`), optimizers and schedules,
augmentations, metrics, contrastive pre-training frameworks (:data:`FRAMEWORKS`) and the
graph trainer; the interface of the downstream classifiers (:data:`DOWNSTREAM`, units in
:mod:`pubench.downstream`). Nothing here imports :mod:`pubench.pu`."""

from pubench.train.base import DOWNSTREAM, FRAMEWORKS, Downstream, Framework

__all__ = ["DOWNSTREAM", "FRAMEWORKS", "Downstream", "Framework"]
