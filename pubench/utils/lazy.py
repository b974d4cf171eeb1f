"""A module imported on first use: ``torch = lazy("torch")`` at the top of a module that
only needs torch inside its functions, so importing that module (to read a table of data
sets, a file check) does not load torch (issue 34: `pubench coverage` in about a second)."""

from __future__ import annotations

import importlib
import types
from typing import Any


class LazyModule(types.ModuleType):
    """Stands for module ``name`` until an attribute is read; then imports it and takes its
    namespace (later reads are plain lookups)."""

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # copy, pickle and inspect probe dunders: do not import for them
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)


def lazy(name: str) -> Any:
    return LazyModule(name)
