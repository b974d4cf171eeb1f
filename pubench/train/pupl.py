"""Registers DOWNSTREAM ``pupl`` (003 Algorithm 2), implemented in :mod:`pubench.pu.pupl`.

The DOWNSTREAM registry discovers the modules of ``pubench.train``; this import makes
``DOWNSTREAM.get("pupl")`` find the unit that lives with the other PU code.
"""

from pubench.pu.pupl import PuPL, pu_two_means  # noqa: F401
