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

from typing import Iterator, Protocol, Sequence

import numpy as np

__all__ = ["array_chunk_ids", "array_chunk_coords", "part_chunk_ids", "chunk_ids_of_boxes", "range_coords", "unravel_ids", "grid_of", "EXPAND_LIMIT"]

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
    """Coordinates (C order, lazily) of every chunk touching the element box ``[lo, hi)``.
    An odometer, not ``itertools.product`` (which first copies each range into a tuple:
    a ``2**40``-chunk axis would not fit in memory)."""
    if any(h <= l for l, h in zip(lo, hi)):
        return
    first = [int(l) // int(c) for l, c in zip(lo, chunk_shape)]
    stop = [-(-int(h) // int(c)) for h, c in zip(hi, chunk_shape)]
    cur = list(first)
    nd = len(cur)
    while True:
        yield tuple(cur)
        d = nd - 1
        while d >= 0:
            cur[d] += 1
            if cur[d] < stop[d]:
                break
            cur[d] = first[d]
            d -= 1
        if d < 0:
            return


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


class _Part(Protocol):
    """One file part of an array (zarrcy/storage/hdf5_file.py ``_Var``)."""

    shape: tuple[int, ...]

    def stored_boxes(self) -> "tuple[np.ndarray, np.ndarray] | None": ...


def part_offsets(shape: Sequence[int], parts: Sequence[_Part], concat_axis: int | None) -> list[tuple[int, ...]]:
    """The element at which each file part starts in the array (concatenated along
    ``concat_axis``)."""
    out, acc = [], 0
    for p in parts:
        off = [0] * len(shape)
        if concat_axis is not None:
            off[concat_axis] = acc
            acc += p.shape[concat_axis]
        out.append(tuple(off))
    return out


def array_chunk_ids(shape: Sequence[int], chunk_shape: Sequence[int], parts: Sequence[_Part],
                    concat_axis: int | None) -> np.ndarray | None:
    """Sorted linear ids of the chunks of an array (its file ``parts`` along
    ``concat_axis``) that hold stored data; None when a part is stored whole."""
    if any(s == 0 for s in shape):
        return np.empty(0, np.int64)
    grid = grid_of(shape, chunk_shape)
    ids = []
    for part, off in zip(parts, part_offsets(shape, parts, concat_axis)):
        got = part_chunk_ids(part.stored_boxes(), off, chunk_shape, grid)
        if got is None:
            return None
        ids.append(got)
    return np.unique(np.concatenate(ids)) if len(ids) > 1 else ids[0]


def array_chunk_coords(shape: Sequence[int], chunk_shape: Sequence[int], parts: Sequence[_Part],
                       concat_axis: int | None) -> Iterator[tuple[int, ...]]:
    """The coordinates of the chunks holding stored data, part after part (a part
    stored whole: every chunk of its extent, lazily; parts never share a chunk: they
    are concatenated along chunk boundaries)."""
    if any(s == 0 for s in shape):
        return
    grid = grid_of(shape, chunk_shape)
    for part, off in zip(parts, part_offsets(shape, parts, concat_axis)):
        ids = part_chunk_ids(part.stored_boxes(), off, chunk_shape, grid)
        if ids is None:
            yield from range_coords(off, [o + n for o, n in zip(off, part.shape)], chunk_shape)
        else:
            yield from unravel_ids(ids, grid)
