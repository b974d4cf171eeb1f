"""PU classifiers and risks (uPU, nnPU, PvU, vPU, ...): :data:`PU_METHODS` holds the
end-to-end methods (interface: :class:`pubench.pu.base.PUMethod`), :mod:`pubench.pu.risks`
the risks, :mod:`pubench.pu.objective` classifiers trained with them.

``pu`` builds on :mod:`pubench.train` (the loop, optimizers, augmentations); ``train``
never imports ``pu``."""

from pubench.pu.base import PU_METHODS, PUMethod

__all__ = ["PU_METHODS", "PUMethod"]
