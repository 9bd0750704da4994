"""Where a conversion's regions lie: each destination array is cut into regions of
whole stored objects (shards, or chunks), regular or on a rectilinear grid
(ext-chunk-grid-rectilinear.md), and the stored objects of an array that a selection
covers -- through the arrays' public metadata only (chunk grid, chunk key encoding)."""

from __future__ import annotations

import itertools
import math
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from zarrcy.array import Array
from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid
from zarrcy.convert.model import ArrayPlan, _prefix

__all__ = ["object_key", "object_shape", "overlapping_objects", "region_selection", "stored_coords", "stored_size"]


def object_shape(a: Array) -> tuple[int, ...]:
    """The shape of ``a``'s stored objects on a regular grid: its shards, else its chunks."""
    grid = a.metadata.chunk_grid
    assert not isinstance(grid, RectilinearChunkGrid)  # (rectilinear grids: stored_coords / overlapping_objects)
    return tuple(grid.chunk_shape)


def object_key(a: Array, coords: tuple[int, ...]) -> str:
    """The store key of ``a``'s stored object (shard or chunk) at grid ``coords``."""
    return _prefix(a.path) + a.metadata.chunk_key_encoding.encode_chunk_key(tuple(coords))


def stored_size(store: Any, key: str) -> int:
    """The stored size of ``key`` (0 when absent), without reading it where the store can."""
    n = store.getsize(key)
    return int(n) if n is not None else 0


def _region_grid(shape: Sequence[int], region: Sequence[int]) -> tuple[int, ...]:
    return tuple(-(-s // r) if s else 0 for s, r in zip(shape, region))


def _region_shape(shape: tuple[int, ...], obj: tuple[int, ...], itemsize: int, target: int, one_object: bool) -> tuple[int, ...]:
    """Whole objects per region: one (sharded) or grown dimension by dimension (last first)
    while the region stays under ``target`` decoded bytes."""
    region = list(obj)
    if one_object or not shape:
        return tuple(region)
    grid = [-(-s // o) if s else 1 for s, o in zip(shape, obj)]
    for d in range(len(shape) - 1, -1, -1):
        per = math.prod(region) * itemsize
        if per <= 0:
            break
        k = max(1, min(grid[d], target // per))
        region[d] = obj[d] * k
        if k < grid[d]:
            break
    return tuple(region)


def _region_selection(plan_shape: tuple[int, ...], region: tuple[int, ...], rid: int) -> tuple[slice, ...]:
    grid = _region_grid(plan_shape, region)
    idx = np.unravel_index(rid, grid) if grid else ()
    return tuple(slice(int(i) * r, min((int(i) + 1) * r, s)) for i, r, s in zip(idx, region, plan_shape))


def region_selection(plan: ArrayPlan, rid: int) -> tuple[slice, ...]:
    """The array selection of region ``rid`` of ``plan`` (regular regions, or the
    per-axis region bounds of a rectilinear destination)."""
    bounds = plan.region_bounds
    if bounds is None:
        return _region_selection(plan.shape, plan.region_shape, rid)
    grid = tuple(len(b) - 1 for b in bounds)
    idx = np.unravel_index(rid, grid) if grid else ()
    return tuple(slice(b[int(i)], b[int(i) + 1]) for i, b in zip(idx, bounds))


def _object_coords(sel: tuple[slice, ...], obj: tuple[int, ...]) -> Iterable[tuple[int, ...]]:
    """Coordinates of the stored objects whose origin lies inside ``sel``."""
    ranges = [range(-(-s.start // o), -(-s.stop // o)) for s, o in zip(sel, obj)]
    return itertools.product(*ranges)


def stored_coords(a: Array, sel: tuple[slice, ...]) -> Iterable[tuple[int, ...]]:
    """Coordinates of the stored objects (chunks, or shards) of ``a`` whose origin lies
    inside ``sel``, for a regular or a rectilinear grid."""
    grid = a.metadata.chunk_grid
    if isinstance(grid, RectilinearChunkGrid):
        # grid_shape(x) per axis = the number of chunks whose origin is < x
        lo = grid.grid_shape(tuple(s.start for s in sel))
        hi = grid.grid_shape(tuple(s.stop for s in sel))
        return itertools.product(*(range(l, h) for l, h in zip(lo, hi)))
    return _object_coords(sel, object_shape(a))


def overlapping_objects(a: Array, sel: tuple[slice, ...]) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """``(coords, part of sel)`` of every stored object of ``a`` that ``sel`` touches."""
    grid = a.metadata.chunk_grid
    if isinstance(grid, RectilinearChunkGrid):
        lo = grid.grid_shape(tuple(s.start + 1 for s in sel))  # the chunk holding start is lo - 1
        hi = grid.grid_shape(tuple(s.stop for s in sel))
        for coords in itertools.product(*(range(l - 1, h) for l, h in zip(lo, hi))):
            region = grid.chunk_region(a.shape, coords)
            yield coords, tuple(slice(max(s.start, r.start), min(s.stop, r.stop)) for s, r in zip(sel, region))
        return
    cs = object_shape(a)
    ranges = [range(s.start // c, -(-s.stop // c)) for s, c in zip(sel, cs)]
    for coords in itertools.product(*ranges):
        yield coords, tuple(slice(max(s.start, i * c), min(s.stop, (i + 1) * c)) for s, i, c in zip(sel, coords, cs))


def _rect_bounds(grid: RectilinearChunkGrid, shape: tuple[int, ...], itemsize: int, target: int,
                 one_object: bool) -> tuple[tuple[int, ...], ...]:
    """Per-axis region bounds on a rectilinear grid (ext-chunk-grid-rectilinear.md): whole
    chunks per region, one (sharded) or grouped as :func:`_region_shape` does (trailing
    axes whole while the region stays under ``target`` decoded bytes, then consecutive
    chunks of one axis, one chunk along the leading axes).  Memory: one bound per chunk
    along each axis (never per chunk of the array)."""
    sizes = [grid.axis_chunk_sizes(a, n) for a, n in enumerate(shape)]
    cuts = [tuple(itertools.accumulate(s, initial=0)) for s in sizes]
    if one_object or not shape or 0 in shape:  # (an empty axis: no regions at all)
        return tuple(cuts)
    ext = [max(s, default=1) for s in sizes]  # the largest chunk: a conservative region size
    for d in range(len(shape) - 1, -1, -1):
        per_unit = math.prod(ext[:d] + ext[d + 1:]) * itemsize  # bytes per index along d
        if per_unit <= 0:
            break
        if per_unit * shape[d] <= target:
            cuts[d], ext[d] = (0, shape[d]), shape[d]
            continue
        groups = [0]
        acc = 0
        for e in sizes[d]:
            if acc and (acc + e) * per_unit > target:
                groups.append(groups[-1] + acc)
                acc = 0
            acc += e
        groups.append(groups[-1] + acc)
        cuts[d] = tuple(groups)
        break
    return tuple(cuts)


def _bounds_plan(bounds: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], int]:
    """``(largest region shape, number of regions)`` of per-axis region bounds."""
    region = tuple(max((b[i + 1] - b[i] for i in range(len(b) - 1)), default=0) for b in bounds)
    return region, math.prod(len(b) - 1 for b in bounds)
