"""Where a job's data comes from: :class:`DataSource` reads the data sets under the data
root, and leaves a backbone's pretrained weights to its factory. A job gets its source in
its context (:class:`pubench.train.context.JobContext`): this one, or ``pubench
preflight``'s stand-ins for what the machine lacks (:class:`pubench.preflight.standins.StandIns`,
a subclass). Tasks read data through it only, so nothing swaps a loader. The loaders are
imported when first used: the task registry imports this module (through the job context)
and stays light."""

from __future__ import annotations

import functools
from typing import Any, Callable


class DataSource:
    """The files under the data root (``$PUBENCH_DATA``)."""

    def images(self, name: str, split: str):
        """The ``split`` of image data set ``name`` (:func:`pubench.data.images.load_images`)."""
        from pubench.data import images

        return images.load_images(name, split)

    def graphs(self, name: str, features: str):
        """Graph data set ``name`` with node features ``features`` (:func:`pubench.data.graphs.load_graphs`;
        kept per process: the TU sets are read once by a worker that runs many jobs)."""
        from pubench.paths import data_root

        return _graphs(name, features, str(data_root().resolve()))

    def text(self, dataset: Any, split: str):
        """The ``split`` of text data set ``dataset`` (a :class:`pubench.data.text.GlueTextDataset`)."""
        return dataset.load(split)

    def pretrained(self, name: str, factory: Callable[..., Any]) -> Callable[..., Any]:
        """What builds backbone ``name`` (registered as ``factory``): the factory itself, which
        reads its own pretrained weights."""
        return factory


@functools.lru_cache(maxsize=4)
def _graphs(name: str, features: str, root: str):
    from pubench.data import graphs

    return graphs.load_graphs(name, root, features=features)


#: the real data: what every job outside ``pubench preflight`` reads
REAL = DataSource()
