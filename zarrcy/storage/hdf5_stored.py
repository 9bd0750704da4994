"""Where an HDF5 source holds stored data, as Zarr chunk coordinates (issue 23, items 4-5).

An HDF5 dataset may declare a huge shape (``2**50`` elements) and store a single chunk:
the rest reads as the fill value.  Listing its keys (``list_prefix``,
``nchunks_initialized``), planning a conversion and estimating one must therefore follow
the *stored* chunks -- the chunk table (:class:`~zarrcy.storage.hdf5_file.ChunkTable`) --
and never the chunk grid.  This module turns each file part of an array into either

* a sorted array of linear chunk ids (C order) of the array's Zarr chunk grid that hold
  stored data (chunked datasets: their stored HDF5 chunks; virtual datasets: their
  mapped regions; a contiguous dataset never written: none), memory proportional to the
  stored chunks; or
* ``None``: the part is stored whole (allocated contiguous, compact and external
  datasets), every chunk of its extent holds data and is listed lazily.

Storage layer (layer 2).
"""

from __future__ import annotations

import itertools
from typing import Iterator, Sequence

import numpy as np

__all__ = ["part_chunk_ids", "chunk_ids_of_boxes", "range_coords", "unravel_ids", "grid_of", "EXPAND_LIMIT"]

#: at most this many Zarr chunks are expanded from one part's boxes (beyond: the part is
#: treated as stored whole and listed lazily)
EXPAND_LIMIT = 1 << 26


def chunk_ids_of_boxes(lo: np.ndarray, hi: np.ndarray, chunk_shape: Sequence[int],
                       grid: Sequence[int]) -> np.ndarray | None:
    """Sorted unique linear ids (C order in ``grid``) of the chunks of ``chunk_shape``
    that the element boxes ``[lo, hi)`` (int64 arrays of shape ``(n, ndim)``) touch;
    None when that would be more than :data:`EXPAND_LIMIT` chunks."""
    nd = len(grid)
    if lo.shape[0] == 0:
        return np.empty(0, np.int64)
    cs = np.asarray(chunk_shape, dtype=np.int64).reshape(1, nd)
    zlo = lo // cs
    zhi = (hi - 1) // cs  # inclusive
    span = zhi - zlo + 1
    counts = np.prod(span, axis=1, dtype=np.float64)  # (float: no overflow while counting)
    if float(counts.sum()) > EXPAND_LIMIT:
        return None
    gshape = tuple(int(g) for g in grid)
    one = np.all(span == 1, axis=1)
    parts = [np.ravel_multi_index(tuple(zlo[one].T), gshape).astype(np.int64)] if bool(one.any()) else []
    for i in np.flatnonzero(~one):  # boxes over several chunks (chunk shapes that differ)
        axes = [np.arange(int(a), int(b) + 1, dtype=np.int64) for a, b in zip(zlo[i], zhi[i])]
        mesh = np.meshgrid(*axes, indexing="ij")
        parts.append(np.ravel_multi_index(tuple(m.reshape(-1) for m in mesh), gshape).astype(np.int64))
    ids = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return np.unique(ids)


def part_chunk_ids(boxes: tuple[np.ndarray, np.ndarray] | None, offset: Sequence[int],
                   chunk_shape: Sequence[int], grid: Sequence[int]) -> np.ndarray | None:
    """The linear chunk ids of one file part whose stored element boxes (in the part's
    own coordinates) are ``boxes`` (None: stored whole), the part starting at element
    ``offset`` of the array; None when the part is stored whole (or too spread out)."""
    if boxes is None:
        return None
    lo, hi = boxes
    if lo.shape[0] == 0:
        return np.empty(0, np.int64)
    off = np.asarray(offset, dtype=np.int64).reshape(1, -1)
    return chunk_ids_of_boxes(lo + off, hi + off, chunk_shape, grid)


def range_coords(lo: Sequence[int], hi: Sequence[int], chunk_shape: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Coordinates (C order, lazily) of every chunk touching the element box ``[lo, hi)``."""
    if any(h <= l for l, h in zip(lo, hi)):
        return iter(())
    return itertools.product(*(range(l // c, -(-h // c)) for l, h, c in zip(lo, hi, chunk_shape)))


def unravel_ids(ids: np.ndarray, grid: Sequence[int], block: int = 1 << 16) -> Iterator[tuple[int, ...]]:
    """Chunk coordinates of linear ids, a block at a time (bounded memory)."""
    gshape = tuple(int(g) for g in grid)
    if not gshape:
        if ids.shape[0]:
            yield ()
        return
    for s in range(0, ids.shape[0], block):
        cols = np.unravel_index(ids[s: s + block], gshape)
        yield from zip(*(c.tolist() for c in cols))


def grid_of(shape: Sequence[int], chunk_shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(-(-int(s) // int(c)) for s, c in zip(shape, chunk_shape))
