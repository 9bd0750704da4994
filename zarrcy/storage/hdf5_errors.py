"""The errors of HDF5 sources (zarrcy/storage/hdf5.py and the modules beside it).
Storage layer (layer 2)."""

from __future__ import annotations

from zarrcy.errors import StoreError

__all__ = ["HDF5SourceError", "SourceChangedError"]


class HDF5SourceError(StoreError, ValueError):
    """The HDF5 source cannot be read as asked (not HDF5, truncated, mismatched files,
    a chunk index pointing outside the file, data outside the file refused...): a
    :class:`StoreError` (the store cannot serve it) that is also a ValueError (bad
    input), as it always was."""


class SourceChangedError(HDF5SourceError):
    """An HDF5 source file was replaced or rewritten while it was being read: what was
    read may mix two versions of it (issue 23, item 2)."""
