"""STORE: atomic JSON result records, one per job."""

from pubench.store.store import ResultStore, slug

__all__ = ["ResultStore", "slug"]
