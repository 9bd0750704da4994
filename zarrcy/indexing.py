"""Selections -> chunk projections (DESIGN.md "Read a[sel]", step 1).

A user selection is normalised into one :class:`DimSelection` per array dimension
(int, slice with positive step, or sorted-or-not int64 index array) plus the positions
of ``np.newaxis`` entries.  Each dimension is projected onto the chunk grid by the
Cython kernel ``_kernels._grid``; :func:`iter_chunk_projections` yields the product.

A grid is given per axis (:data:`AxisGrid`): an ``int`` chunk length (the regular grid,
closed-form arithmetic in ``_grid``) or a rectilinear axis's run tables
``(origin, first_chunk, edge)`` (binary searches in ``_rectilinear``).  The dispatch is
once per axis, never per chunk.

Semantics follow numpy: basic indexing (``a[...]``), orthogonal indexing
(``a.oindex[...]``: one index array or boolean mask per dimension, applied
independently), and vectorised/coordinate indexing (``a.vindex[...]``: integer arrays
broadcast together, or one boolean mask over all dimensions).
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Sequence

import numpy as np

from zarrcy._kernels import _grid, _rectilinear
from zarrcy.ortho import select

__all__ = [
    "DimSelection",
    "BasicSelection",
    "normalize_basic",
    "normalize_orthogonal",
    "normalize_vectorized",
    "normalize_blocks",
    "iter_chunk_projections",
    "ChunkProjection",
    "count_chunks",
    "ortho_get",
    "ortho_set",
]


DimKind = Literal["int", "slice", "array"]


@dataclass(frozen=True, slots=True)
class DimSelection:
    """One dimension's selection.  ``kind`` is "int", "slice" or "array"."""

    kind: DimKind
    dim_len: int
    start: int = 0  # int: the index; slice: start
    stop: int = 0  # slice: stop (clipped)
    step: int = 1
    indices: np.ndarray | None = None  # array: int64, non-negative, in bounds

    @property
    def nitems(self) -> int:
        if self.kind == "int":
            return 1
        if self.kind == "slice":
            return max(0, -(-(self.stop - self.start) // self.step))
        return len(self.index_array)

    @property
    def index_array(self) -> np.ndarray:
        """An "array" selection's int64 indices."""
        if self.indices is None:
            raise TypeError(f"a {self.kind!r} selection has no index array")
        return self.indices

    @property
    def dropped(self) -> bool:
        return self.kind == "int"


@dataclass(frozen=True, slots=True)
class BasicSelection:
    """Normalised selection: one DimSelection per dimension + newaxis positions.

    ``out_shape`` excludes newaxis dims; ``final_shape`` includes them (what the user gets).
    """

    dims: tuple[DimSelection, ...]
    newaxis: tuple[int, ...] = ()

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(d.nitems for d in self.dims if not d.dropped)

    @property
    def final_shape(self) -> tuple[int, ...]:
        shape = list(self.out_shape)
        for pos in self.newaxis:
            shape.insert(pos, 1)
        return tuple(shape)


def _index_int(i: Any, n: int, axis: int) -> int:
    try:
        i = operator.index(i)
    except TypeError:
        raise IndexError(f"index for axis {axis}: expected an integer, received {i!r}") from None
    if i < -n or i >= n:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
    return i + n if i < 0 else i


def _dim_from_slice(s: slice, n: int, axis: int) -> DimSelection:
    if s.step is not None:
        step = operator.index(s.step)
        if step <= 0:
            raise IndexError(f"slice step for axis {axis}: expected a positive step, received {step}")
    # Python ints of any size, clipped to [0, n] as numpy does (``slice.indices``); the
    # step stays unbounded there, so normalise it before the int64 kernel sees it
    start, stop, step = s.indices(n)
    if stop <= start:
        return DimSelection("slice", n, start, start, 1)
    if step >= stop - start:  # one element (numpy: a[5::2**70] == a[5:6])
        return DimSelection("slice", n, start, start + 1, 1)
    return DimSelection("slice", n, start, stop, step)


def _check_uint64(arr: np.ndarray, n: int, axis: int) -> None:
    """uint64 indices beyond int64 would wrap to negatives in the int64 cast: refuse
    them first, naming the real value (numpy: IndexError)."""
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size:
        hi = int(arr.max())
        if hi >= n:
            raise IndexError(f"index {hi} is out of bounds for axis {axis} with size {n}")


def _dim_from_array(a: Any, n: int, axis: int) -> DimSelection:
    arr = np.asarray(a)
    if arr.dtype == bool:
        if arr.ndim != 1 or arr.shape[0] != n:
            raise IndexError(
                f"boolean index for axis {axis}: expected shape ({n},), received shape {arr.shape}"
            )
        idx = np.flatnonzero(arr).astype(np.int64)
        return DimSelection("array", n, indices=idx)
    if arr.ndim != 1:
        raise IndexError(f"index array for axis {axis}: expected 1-d, received {arr.ndim}-d")
    if arr.size and arr.dtype.kind not in "iu":
        raise IndexError(f"index array for axis {axis}: expected integers, received dtype {arr.dtype}")
    _check_uint64(arr, n, axis)
    idx = arr.astype(np.int64, copy=True)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
        if lo < 0:
            idx[idx < 0] += n
    return DimSelection("array", n, indices=idx)


def _is_advanced(x: Any) -> bool:
    return isinstance(x, (list, np.ndarray)) and not isinstance(x, (str, bytes))


def _expand(selection: Any, ndim: int) -> tuple[list[Any], list[int]]:
    """Expand Ellipsis, return (per-dim entries, newaxis positions in the output)."""
    if not isinstance(selection, tuple):
        selection = (selection,)
    n_ellipsis = sum(1 for s in selection if s is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for s in selection if s is not None and s is not Ellipsis)
    if n_real > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {n_real} were indexed")
    entries: list[Any] = []
    newaxis: list[int] = []
    out_pos = 0
    for s in selection:
        if s is Ellipsis:
            for _ in range(ndim - n_real):
                entries.append(slice(None))
                out_pos += 1
        elif s is None:
            newaxis.append(out_pos)
            out_pos += 1
        else:
            entries.append(s)
            if not (isinstance(s, (int, np.integer)) and not isinstance(s, bool)):
                out_pos += 1
    while len(entries) < ndim:
        entries.append(slice(None))
    # newaxis positions are relative to the final output; recompute ignoring dropped dims
    return entries, newaxis


def _dims(entries: Sequence[Any], shape: Sequence[int]) -> tuple[DimSelection, ...]:
    """One DimSelection per (expanded) entry: int, slice, or int array / boolean mask."""
    dims = []
    for axis, (e, n) in enumerate(zip(entries, shape)):
        if isinstance(e, slice):
            dims.append(_dim_from_slice(e, n, axis))
        elif _is_advanced(e):
            dims.append(_dim_from_array(e, n, axis))
        elif isinstance(e, bool):
            raise IndexError(f"index for axis {axis}: expected an integer, slice or array, received {e!r}")
        else:
            dims.append(DimSelection("int", n, _index_int(e, n, axis)))
    return tuple(dims)


def normalize_basic(selection: Any, shape: Sequence[int]) -> BasicSelection:
    """``a[selection]``: ints, slices (positive step), Ellipsis, newaxis; at most one
    integer array / boolean mask among them (then numpy's result equals orthogonal)."""
    ndim = len(shape)
    if isinstance(selection, np.ndarray) and selection.dtype == bool and selection.ndim == ndim and ndim > 1:
        raise _VectorizedSelection
    entries, newaxis = _expand(selection, ndim)
    n_adv = sum(1 for e in entries if _is_advanced(e))
    if n_adv > 1:
        raise _VectorizedSelection
    return BasicSelection(_dims(entries, shape), tuple(newaxis))


class _VectorizedSelection(Exception):
    """Internal signal: a basic-looking selection needs vectorised (numpy fancy) semantics."""


def normalize_orthogonal(selection: Any, shape: Sequence[int]) -> BasicSelection:
    """``a.oindex[selection]``: each entry an int, slice, integer array or boolean mask."""
    ndim = len(shape)
    entries, newaxis = _expand(selection, ndim)
    if newaxis:
        raise IndexError("oindex: np.newaxis is not supported in orthogonal selections")
    return BasicSelection(_dims(entries, shape))


def normalize_vectorized(selection: Any, shape: Sequence[int]) -> tuple[np.ndarray, tuple[int, ...]]:
    """``a.vindex[selection]``: integer arrays broadcast together, or one boolean mask over
    all dimensions.  Returns (coords int64 of shape (ndim, N), result shape)."""
    ndim = len(shape)
    if not isinstance(selection, tuple):
        selection = (selection,)
    if len(selection) == 1 and np.asarray(selection[0]).dtype == bool:
        mask = np.asarray(selection[0])
        if mask.shape != tuple(shape):
            raise IndexError(f"vindex: boolean mask must have the array's shape {tuple(shape)}, received {mask.shape}")
        coords = np.stack(np.nonzero(mask)).astype(np.int64).reshape(ndim, -1)
        return coords, (coords.shape[1],)
    if len(selection) != ndim:
        raise IndexError(f"vindex: expected {ndim} index arrays, received {len(selection)}")
    arrays = []
    for axis, (s, n) in enumerate(zip(selection, shape)):
        if isinstance(s, slice):
            raise IndexError("vindex: slices are not supported; use oindex or basic indexing")
        a = np.asarray(s)
        if a.dtype == bool or (a.size and a.dtype.kind not in "iu"):
            raise IndexError(f"vindex: index for axis {axis}: expected integers, received dtype {a.dtype}")
        _check_uint64(a, n, axis)
        a = a.astype(np.int64)
        if a.size:
            lo, hi = int(a.min()), int(a.max())
            if lo < -n or hi >= n:
                bad = lo if lo < -n else hi
                raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
            if lo < 0:
                a = np.where(a < 0, a + n, a)
        arrays.append(a)
    try:
        b = np.broadcast_arrays(*arrays)
    except ValueError as e:
        raise IndexError(f"vindex: shape mismatch: {e}") from None
    out_shape = b[0].shape
    coords = np.stack([x.reshape(-1) for x in b]) if ndim else np.empty((0, 1), np.int64)
    return coords.astype(np.int64, copy=False), out_shape


# one axis of a chunk grid: a regular chunk length, or rectilinear run tables
AxisGrid = Any  # int | tuple[np.ndarray, np.ndarray, np.ndarray]


def _rect_nblocks(tables: tuple[np.ndarray, np.ndarray, np.ndarray], n: int) -> int:
    if n <= 0:
        return 0
    ch, _ = _rectilinear.locate(*tables, np.array([n - 1], dtype=np.int64))
    return int(ch[0]) + 1


def _rect_block_span(tables: tuple[np.ndarray, np.ndarray, np.ndarray], b0: int, b1: int, n: int) -> tuple[int, int]:
    """Element span ``[lo, hi)`` of chunks ``b0 .. b1 - 1`` of a rectilinear axis, clipped to ``n``."""
    if b1 <= b0:
        return n, n
    st, ln = _rectilinear.chunk_extents(*tables, np.array([b0, b1 - 1], dtype=np.int64))
    return min(int(st[0]), n), min(int(st[1]) + int(ln[1]), n)


def normalize_blocks(selection: Any, shape: Sequence[int], chunk_shape: Sequence[AxisGrid]) -> BasicSelection:
    """``a.blocks[selection]``: ints / step-1 slices over the chunk grid -> element slices."""
    ndim = len(shape)
    entries, newaxis = _expand(selection, ndim)
    if newaxis:
        raise IndexError("blocks: np.newaxis is not supported")
    dims = []
    for axis, (e, n, c) in enumerate(zip(entries, shape, chunk_shape)):
        rect = isinstance(c, tuple)
        nblocks = _rect_nblocks(c, n) if rect else -(-n // c) if n else 0
        if isinstance(e, slice):
            if e.step not in (None, 1):
                raise IndexError(f"blocks: slice step for axis {axis}: expected 1, received {e.step}")
            b0, b1, _ = e.indices(nblocks)
            b1 = max(b0, b1)
        elif _is_advanced(e) or isinstance(e, bool):
            raise IndexError(f"blocks: index for axis {axis}: expected an integer or slice, received {e!r}")
        else:
            b0 = _index_int(e, nblocks, axis)
            b1 = b0 + 1
        if rect:
            lo, hi = _rect_block_span(c, b0, b1, n)
            dims.append(DimSelection("slice", n, lo, hi, 1))
        else:
            dims.append(DimSelection("slice", n, min(b0 * c, n), min(b1 * c, n), 1))
    return BasicSelection(tuple(dims))


# --------------------------------------------------------------------------------------
# projections
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChunkProjection:
    """One stored chunk touched by a selection."""

    chunk_coords: tuple[int, ...]
    chunk_selection: tuple[Any, ...]  # per chunk dim: int, slice or int64 array
    out_selection: tuple[Any, ...]  # per output dim (dropped dims omitted): slice or int64 array
    is_complete: bool  # the selection covers the chunk's whole valid region


def _dim_projection(d: DimSelection, chunk_len: AxisGrid) -> list[tuple[int, Any, Any, bool]]:
    """[(chunk index, chunk selection, out selection or None, covers the chunk's valid part)]"""
    if type(chunk_len) is tuple:
        return _rect_dim_projection(d, chunk_len)
    n = d.dim_len
    if d.kind == "int":
        c, r = divmod(d.start, chunk_len)
        return [(c, r, None, min(chunk_len, n - c * chunk_len) == 1)]
    if d.kind == "slice" and d.step == 1 and d.stop - d.start <= 64 * chunk_len:
        # unit step over few chunks (a box): plain arithmetic, no kernel tables
        a, b = d.start, d.stop
        res_: list[tuple[int, Any, Any, bool]] = []
        for c in range(a // chunk_len, (b - 1) // chunk_len + 1) if b > a else ():
            lo = c * chunk_len
            s0 = a - lo if a > lo else 0
            e0 = b - lo if b - lo < chunk_len else chunk_len
            res_.append((c, slice(s0, e0, 1), slice(lo + s0 - a, lo + e0 - a),
                         s0 == 0 and e0 == min(chunk_len, n - lo)))
        return res_
    if d.kind == "slice":
        ch, cs, ce, os_, oe = _grid.slice_projection(chunk_len, d.start, d.stop, d.step)
        res: list[tuple[int, Any, Any, bool]] = []
        step = d.step
        for c, a, b, o0, o1 in zip(ch.tolist(), cs.tolist(), ce.tolist(), os_.tolist(), oe.tolist()):
            valid = min(chunk_len, n - c * chunk_len)
            complete = step == 1 and a == 0 and b == valid
            res.append((c, slice(a, b, step), slice(o0, o1), complete))
        return res
    ch, bounds, in_chunk, order = _grid.array_projection(d.index_array, chunk_len)
    res = []
    bl = bounds.tolist()
    for j, c in enumerate(ch.tolist()):
        sel = in_chunk[bl[j] : bl[j + 1]]
        out = order[bl[j] : bl[j + 1]]
        res.append((c, sel, out, False))
    return res


def _rect_dim_projection(d: DimSelection, tables: tuple[np.ndarray, np.ndarray, np.ndarray]) -> list[tuple[int, Any, Any, bool]]:
    """:func:`_dim_projection` on a rectilinear axis (ext-chunk-grid-rectilinear.md
    "Indexing"): the same tuples, from the ``_rectilinear`` kernels."""
    origin, first, edge = tables
    n = d.dim_len
    if d.kind == "int":
        ch, loc = _rectilinear.locate(origin, first, edge, np.array([d.start], dtype=np.int64))
        st, ln = _rectilinear.chunk_extents(origin, first, edge, ch)
        return [(int(ch[0]), int(loc[0]), None, min(int(ln[0]), n - int(st[0])) == 1)]
    if d.kind == "slice":
        ch, cs, ce, os_, oe = _rectilinear.slice_projection(origin, first, edge, d.start, d.stop, d.step)
        st, ln = _rectilinear.chunk_extents(origin, first, edge, ch)
        valid = np.minimum(ln, n - st).tolist()
        res: list[tuple[int, Any, Any, bool]] = []
        step = d.step
        for c, a, b, o0, o1, v in zip(ch.tolist(), cs.tolist(), ce.tolist(), os_.tolist(), oe.tolist(), valid):
            res.append((c, slice(a, b, step), slice(o0, o1), step == 1 and a == 0 and b == v))
        return res
    ch, bounds, in_chunk, order = _rectilinear.array_projection(origin, first, edge, d.index_array)
    res = []
    bl = bounds.tolist()
    for j, c in enumerate(ch.tolist()):
        res.append((c, in_chunk[bl[j] : bl[j + 1]], order[bl[j] : bl[j + 1]], False))
    return res


def iter_chunk_projections(sel: BasicSelection, chunk_shape: Sequence[AxisGrid]) -> Iterator[ChunkProjection]:
    per_dim = [_dim_projection(d, c) for d, c in zip(sel.dims, chunk_shape)]
    for combo in itertools.product(*per_dim):
        coords = tuple(p[0] for p in combo)
        csel = tuple(p[1] for p in combo)
        osel = tuple(p[2] for p in combo if p[2] is not None)
        complete = all(p[3] for p in combo)
        yield ChunkProjection(coords, csel, osel, complete)


def count_chunks(sel: BasicSelection, chunk_shape: Sequence[int]) -> int:
    n = 1
    for d, c in zip(sel.dims, chunk_shape):
        if d.kind == "int":
            continue
        if d.kind == "slice":
            k = d.nitems
            if k == 0:
                return 0
            last = d.start + (k - 1) * d.step
            # every chunk of the span is touched when step <= chunk length; otherwise
            # each selected element lies in a chunk of its own
            n *= last // c - d.start // c + 1 if d.step <= c else k
        else:
            n *= len(np.unique(d.index_array // c))
    return n


# ``a`` indexed orthogonally by per-dim ints / slices / int arrays (ints drop their axis)
ortho_get = select


def ortho_set(a: np.ndarray, sel: tuple[Any, ...], value: Any) -> None:
    """``a[sel] = value`` with orthogonal semantics; ``value`` is broadcastable to the
    selection's shape with int-selected axes dropped."""
    full: list[int] = []
    dropped: list[int] = []
    norm: list[Any] = []
    for k, s in enumerate(sel):
        if isinstance(s, np.ndarray):
            n = len(s)
            norm.append(s)
        elif isinstance(s, slice):
            n = len(range(*s.indices(a.shape[k])))
            norm.append(s)
        else:
            norm.append(slice(s, s + 1))
            full.append(1)
            continue
        full.append(n)
        dropped.append(n)
    if not isinstance(value, np.ndarray) and a.dtype.kind in "OT":
        # a str/bytes element: numpy's U<n>/S<n> would drop its trailing NULs
        value = np.asarray(value, dtype=a.dtype)
    value = np.broadcast_to(np.asarray(value), tuple(dropped)).reshape(full)
    n_arr = sum(1 for s in norm if isinstance(s, np.ndarray))
    if n_arr <= 1:
        # "..." keeps this a view assignment: a[()] = x on an object array would store
        # the 0-d array x itself as the element
        a[tuple(norm) + (Ellipsis,)] = value
        return
    parts = [s if isinstance(s, np.ndarray) else np.arange(*s.indices(a.shape[k])) for k, s in enumerate(norm)]
    a[np.ix_(*parts)] = value
