"""Writing an Array: values converted with numpy's assignment rules, each touched stored
chunk (shard) written under a per-object lock (whole chunks encoded directly, partial
ones read-modify-written, or through the codec's ``encode_partial`` / ``encode_points``
when sharded; all-fill chunks erased), and ``resize`` / ``append``.  Each public write
method makes the call's execution context (or uses ``context=``) and passes it down, as
the read path does."""

from __future__ import annotations

import itertools
import math
import operator
import random
import threading
import time
from typing import Any

import numpy as np

import zarrcy.chunk_cache as chunk_cache
from zarrcy._kernels import _grid, _vlen
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.config import at_fork_reset as _at_fork_reset
from zarrcy.config import get as _config_get
from zarrcy.errors import CastError, CastTypeError, OutOfRangeError, WriteConflictError, ZarrcyError
from zarrcy.execution import ExecContext
from zarrcy.indexing import (
    BasicSelection,
    ChunkProjection,
    _VectorizedSelection,
    iter_chunk_projections,
    normalize_basic,
    normalize_blocks,
    normalize_orthogonal,
    normalize_vectorized,
    ortho_get,
    ortho_set,
)
from zarrcy.nodes.array_base import ArrayBase, _proj_coords, chunk_errors
from zarrcy.storage import Store, StorePath

__all__ = ["ArrayWrites"]

# One lock per stored object (chunk or shard) being written in this process, keyed by
# ``store.lock_key(key)`` -- the object itself, not the path string: two Array objects
# over the same store, or over two paths to one file (a symlinked root or directory),
# share it.  Writes are read-modify-write (partial chunks, partial shards, the shard
# append strategy): without this, two threads writing different parts of one shard lose
# updates (rewrite) or tear the shard (append).  Inside it, ``store.write_lock(key)``
# excludes the writers of the object in other processes (LocalStore: an advisory file
# lock; see the README "Guarantees").
_OBJECT_LOCKS: dict[Any, list] = {}


_OBJECT_LOCKS_GUARD = threading.Lock()


@_at_fork_reset
def _reset_after_fork() -> None:
    """Forked child: locks held by the parent's other threads would stay held forever;
    the writes they guarded do not exist here (scratch buffers: array_base)."""
    global _OBJECT_LOCKS_GUARD
    _OBJECT_LOCKS_GUARD = threading.Lock()
    _OBJECT_LOCKS.clear()


class _object_lock:
    __slots__ = ("store", "key", "k", "entry", "outer")

    def __init__(self, store: Store, key: str) -> None:
        self.store, self.key = store, key
        self.k = store.lock_key(key)

    def __enter__(self) -> None:
        with _OBJECT_LOCKS_GUARD:
            entry = _OBJECT_LOCKS.get(self.k)
            if entry is None:
                entry = _OBJECT_LOCKS[self.k] = [threading.Lock(), 0]
            entry[1] += 1
        self.entry = entry
        entry[0].acquire()
        try:
            self.outer = self.store.write_lock(self.key)
            self.outer.__enter__()
        except BaseException:
            self._release()
            raise

    def __exit__(self, *exc: Any) -> None:
        try:
            self.outer.__exit__(*exc)
        finally:
            self._release()

    def _release(self) -> None:
        entry = self.entry
        entry[0].release()
        with _OBJECT_LOCKS_GUARD:
            entry[1] -= 1
            if entry[1] == 0 and _OBJECT_LOCKS.get(self.k) is entry:  # (a fork may have reset it)
                del _OBJECT_LOCKS[self.k]


#: read-modify-writes of one object that an object store's conditional write refused
#: (another writer got in between) are run again this many times in all, with
#: exponential backoff and jitter (5 ms .. 1 s; about 15 s in all), then the
#: WriteConflictError reaches the caller
CONFLICT_ATTEMPTS = 24


def _rmw(store: Store, key: str, body: Any) -> None:
    """``body()`` -- a read-modify-write of ``key``'s object -- under the object's
    locks; run again from the read when a conditional write loses to another writer."""
    pause = 0.005
    for attempt in range(CONFLICT_ATTEMPTS):
        try:
            with _object_lock(store, key):
                body()
            return
        except WriteConflictError as e:
            if attempt == CONFLICT_ATTEMPTS - 1:
                raise WriteConflictError(f"{key}: still changed by other writers after {CONFLICT_ATTEMPTS} attempts "
                                         f"of this write ({e})") from e
        time.sleep(pause * (0.5 + random.random()))
        pause = min(pause * 2, 1.0)


class ArrayWrites(ArrayBase):
    """``a[...] = v``, the ``set_*_selection`` methods, ``resize`` and ``append``."""

    def __setitem__(self, selection: Any, value: Any) -> None:
        self.set_basic_selection(selection, value)

    def set_basic_selection(self, selection: Any, value: Any, *, context: ExecContext | None = None) -> None:
        """``a[selection] = value``.  ``context``: run within this execution context (a
        caller that made one for a larger call, e.g. ``zarrcy.convert``)."""
        try:
            sel = normalize_basic(selection, self.shape)
        except _VectorizedSelection:
            self.set_coordinate_selection(selection, value, context=context)
            return
        self._write(sel, value, context)

    def set_orthogonal_selection(self, selection: Any, value: Any, *, context: ExecContext | None = None) -> None:
        self._write(normalize_orthogonal(selection, self.shape), value, context)

    def set_block_selection(self, selection: Any, value: Any, *, context: ExecContext | None = None) -> None:
        self._write(normalize_blocks(selection, self.shape, self._axis_grids), value, context)

    def set_mask_selection(self, mask: Any, value: Any, *, context: ExecContext | None = None) -> None:
        """Set the elements where ``mask`` is True (``value``: a scalar or one value per True)."""
        self.set_coordinate_selection(self._mask_coords(mask), value, context=context)

    def _asarray(self, value: Any) -> np.ndarray:
        """``value`` as an array, converted the way numpy's ``__setitem__`` converts it.

        numpy 2 (NEP 50) converts Python scalars and (nested) sequences straight to the
        target dtype and refuses what does not fit: ``Python integer 300 out of bounds
        for uint8`` (OverflowError), a complex number for a real array (TypeError), NaN
        for an integer array (ValueError).  Those errors are raised here as
        OutOfRangeError / CastTypeError / CastError with numpy's own text (each also
        the builtin numpy raises).  numpy arrays and numpy scalars are cast unsafely,
        as ``ndarray.__setitem__`` does (see _prepare_value)."""
        if isinstance(value, np.ndarray):
            return value if type(value) is np.ndarray else np.asarray(value)  # subclasses (masked...) -> ndarray
        # lists / scalars for string and bytes arrays must not pass through numpy's U<n> /
        # S<n> (they drop trailing NULs): object arrays keep the values, then get checked
        if self._vlen:
            return np.asarray(value, dtype=object)
        if self._dtype.fields is not None:
            # records given as tuples (or a scalar tuple) build the structured dtype, as numpy does
            return np.asarray(value, dtype=self._dtype)
        if self._dtype.kind in _NEP50_KINDS and not isinstance(value, np.generic):
            return _convert_python_value(value, self._dtype)
        return np.asarray(value)

    def _vlen_value(self, v: np.ndarray) -> np.ndarray:
        """Values for a ``string``/``bytes`` array: only str / bytes elements are accepted
        (numpy would turn numbers into their text silently)."""
        utf8 = self._dtype.kind == "T"
        kind = v.dtype.kind
        if kind == "O":
            flat = v.reshape(-1)
            if not (flat.flags.c_contiguous and flat.flags.writeable):
                flat = flat.copy()  # the kernel takes a writable object memoryview
            bad = _vlen.first_wrong_type(flat, utf8)
            if bad >= 0:
                item = v.reshape(-1)[bad]
                raise TypeError(
                    f"cannot store {type(item).__name__} {item!r} in a {'string' if utf8 else 'bytes'} array "
                    f"(expected {'str' if utf8 else 'bytes'} elements)"
                )
            return v.astype(self._dtype) if utf8 else v
        if utf8 and kind in "TU":
            return v.astype(self._dtype, copy=False)
        if not utf8 and kind == "S":
            return v.astype(object)
        raise TypeError(
            f"cannot store values of dtype {v.dtype} in a {'string' if utf8 else 'bytes'} array "
            f"(expected {'str' if utf8 else 'bytes'} values)"
        )

    def _prepare_value(self, value: Any, shape: tuple[int, ...]) -> np.ndarray:
        v = self._asarray(value)
        if self._vlen:
            v = self._vlen_value(v)
        if v.dtype != self._dtype:
            if self._dtype.kind in "iu" and v.dtype.kind == "f" and v.size and not np.all(np.isfinite(v)):
                raise CastError(f"cannot store non-finite values in an array of dtype {self._dtype}")
            v = v.astype(self._dtype)
        try:
            return np.broadcast_to(v, shape)
        except ValueError:
            raise ValueError(
                f"could not broadcast input array from shape {v.shape} into shape {shape}"
            ) from None

    def _write(self, sel: BasicSelection, value: Any, ctx: ExecContext | None) -> None:
        self._check_writable()
        self._check_node_exists()
        # accept values shaped like the final selection (with newaxis dims) too
        v = self._asarray(value)
        if sel.newaxis and v.ndim == len(sel.final_shape):
            v = v.reshape(np.broadcast_shapes(v.shape, sel.final_shape)) if v.shape != sel.final_shape else v
            v = v.reshape(sel.out_shape) if v.size == math.prod(sel.out_shape) else v
        v = self._prepare_value(v, sel.out_shape)
        if math.prod(sel.out_shape) == 0:
            return
        projections = iter_chunk_projections(sel, self._axis_grids)
        ctx = ctx or self._context()
        ctx.map(lambda p: self._keyed(lambda q: self._write_chunk(q, v, ctx), p, _proj_coords), projections)

    def _write_empty_chunks(self) -> bool:
        cfg = self.__dict__.get("_array_config")
        return bool(_config_get("write_empty_chunks")) if cfg is None else cfg.write_empty_chunks

    def _store_chunk(self, key: str, chunk: np.ndarray, pipeline: CodecPipeline | None, ctx: ExecContext) -> None:
        """Encode and store a full chunk; erase it instead when it is all fill value."""
        chunk_cache.forget(StorePath(self.store, key).cache_id)  # the decoded old version (memory)
        if not self._write_empty_chunks() and self.store.supports_deletes:
            c = _c_contiguous(chunk)
            if self._fill_bytes is None:
                empty = bool(np.all(c == self._fill))  # variable-length: compare values
            else:
                empty = _grid.is_constant(c.reshape(-1).view(np.uint8), self._fill_bytes)
            if empty:
                self.store.erase(key)
                return
            chunk = c
        pipeline = self._pipeline if pipeline is None else pipeline
        with ctx.cpu():
            data = pipeline.encode(chunk, ctx)
        if data is None:
            if self.store.supports_deletes:
                self.store.erase(key)
            elif self.store.exists(key):  # append-only store (zip): an all-fill stored form
                self.store.set(key, pipeline.encode_empty())
        else:
            self.store.set(key, data)

    def _write_chunk(self, p: ChunkProjection, value: np.ndarray, ctx: ExecContext) -> None:
        key = self._key(p.chunk_coords)
        _rmw(self.store, key, lambda: self._write_chunk_locked(key, p, value, ctx))

    def _write_chunk_locked(self, key: str, p: ChunkProjection, value: np.ndarray, ctx: ExecContext) -> None:
        piece = ortho_get(value, p.out_selection) if value.ndim else value
        cshape, valid = self._chunk_geometry(p.chunk_coords)
        pipeline = self._pipeline if cshape is self._chunk_shape else self._pipeline_for(cshape)
        if p.is_complete:
            if valid == cshape:
                src = np.broadcast_to(piece, valid) if piece.size != math.prod(valid) else piece.reshape(valid)
                if src.flags.c_contiguous:
                    chunk = src
                else:  # gather the strided block into this thread's scratch chunk
                    chunk = self._scratch(cshape)
                    np.copyto(chunk, src)
            else:
                chunk = np.full(cshape, self._fill, dtype=self._dtype)
                chunk[tuple(slice(0, v) for v in valid)] = np.asarray(piece).reshape(valid) if np.ndim(piece) else piece
            self._store_chunk(key, chunk, pipeline, ctx)
            return
        if pipeline.supports_partial_encode:
            # the selection reaches the codec intact: only touched inner chunks change
            with chunk_errors(key):
                pipeline.encode_partial(StorePath(self.store, key), p.chunk_selection, piece, ctx)
            return
        data = self._get_stored(key)
        if data is None:
            chunk = np.full(cshape, self._fill, dtype=self._dtype)
        else:
            with ctx.cpu():
                chunk = np.array(self._decode(key, data, pipeline, ctx))  # writable copy
        ortho_set(chunk, p.chunk_selection, piece)
        self._store_chunk(key, chunk, pipeline, ctx)

    def set_coordinate_selection(self, selection: Any, value: Any, *, context: ExecContext | None = None) -> None:
        self._check_writable()
        self._check_node_exists()
        coords, out_shape = normalize_vectorized(selection, self.shape)
        v = self._prepare_value(value, out_shape).reshape(-1)
        ndim, n = coords.shape
        if n == 0:
            return
        cs = np.asarray(self._chunk_shape, dtype=np.int64)[:, None]
        chunk_coords, in_chunk = self._locate_points(coords)
        linear = np.ravel_multi_index(tuple(chunk_coords), self.grid_shape)
        order = np.argsort(linear, kind="stable")
        lin_sorted = linear[order]
        starts = np.flatnonzero(np.r_[True, lin_sorted[1:] != lin_sorted[:-1]])
        ends = np.r_[starts[1:], n]
        ctx = context or self._context()

        def task(idx: np.ndarray) -> None:
            cc = tuple(int(x) for x in chunk_coords[:, idx[0]])
            if in_chunk is None:
                local = tuple(coords[:, idx] - cs * np.asarray(cc, dtype=np.int64)[:, None])
                cshape, pipeline = self._chunk_shape, self._pipeline
            else:
                local = tuple(in_chunk[:, idx])
                cshape = self._chunk_geometry(cc)[0]
                pipeline = self._pipeline_for(cshape)
            key = self._key(cc)

            def write() -> None:
                if self._partial:  # sharded: only the inner chunks holding the points change
                    with chunk_errors(key):
                        pipeline.encode_points(StorePath(self.store, key), np.stack(local), v[idx], ctx)
                    return
                data = self._get_stored(key)
                if data is None:
                    chunk = np.full(cshape, self._fill, self._dtype)
                else:
                    with ctx.cpu():
                        chunk = np.array(self._decode(key, data, pipeline, ctx))
                chunk[local] = v[idx]
                self._store_chunk(key, chunk, pipeline, ctx)

            _rmw(self.store, key, write)

        ctx.map(lambda idx: self._keyed(task, idx, lambda i: tuple(int(x) for x in chunk_coords[:, i[0]])),
                  [order[a:b] for a, b in zip(starts.tolist(), ends.tolist())])

    def resize(self, *new_shape: Any, delete_outside: bool = True) -> None:
        """Change the shape (v3-core.rst "Resizing").

        With ``delete_outside`` (the default) no stored chunk ever lies wholly outside
        the shape, even if the process is killed part-way:

        * shrinking erases the chunks wholly outside the new shape *before* the smaller
          metadata is written (a kill in between leaves the old shape with some of the
          doomed chunks already reading as the fill value -- never stale chunks beyond
          the shape);
        * growing first erases any chunk wholly beyond the old shape (left by
          ``delete_outside=False``, an interrupted resize of an older version or another
          implementation), so the new region reads as the fill value.  v3-core.rst lets
          an implementation show such data by default; zarrcy chooses not to, and
          ``delete_outside=False`` keeps (and on growing shows) it.

        Edge chunks keep their data beyond the new shape (v3-core.rst allows it); a
        later grow shows it again, as zarr-python does.
        """
        self._check_writable()
        if len(new_shape) == 1 and isinstance(new_shape[0], (tuple, list)):
            new_shape = tuple(new_shape[0])
        sizes = []
        for s in new_shape:
            # like numpy: only ints and objects with __index__ (resize(10.7) used to truncate)
            if isinstance(s, (bool, np.bool_)):
                raise TypeError(f"resize: expected integer sizes, received {s!r}")
            try:
                sizes.append(operator.index(s))
            except TypeError:
                raise TypeError(f"resize: expected integer sizes, received {s!r}") from None
        new_shape = tuple(sizes)
        self._check_node_exists()
        if len(new_shape) != self.ndim:
            raise ValueError(f"resize: expected {self.ndim} dimensions, received {len(new_shape)}")
        if any(s < 0 for s in new_shape):
            raise ValueError(f"resize: expected non-negative sizes, received {new_shape}")
        old_grid = self.grid_shape
        if self._rect is not None:
            # zarr-python 3.4's rule: growing past the edges appends one chunk covering
            # the new extent; shrinking keeps the edges (the spec allows overflow)
            new_meta = self.metadata.with_changes(shape=new_shape,
                                                  chunk_grid=self._rect.resized(self._shape, new_shape))
        else:
            new_meta = self.metadata.with_changes(shape=new_shape)  # fully validated
        new_grid = new_meta.chunk_grid.grid_shape(new_shape)
        if delete_outside:
            # erase first, then write the metadata (a kill in between leaves no chunk
            # outside the shape that is stored in zarr.json).  Stores without deletes
            # (ZipStore) treat erasing a missing key as a no-op and refuse the rest.
            keep = tuple(min(o, n) for o, n in zip(old_grid, new_grid))
            if any(n < o for n, o in zip(new_grid, old_grid)):
                self._erase_chunks_outside(keep)
            elif any(n > o for n, o in zip(new_grid, old_grid)):
                self._erase_chunks_beyond(old_grid, new_grid)
        self._write_metadata(new_meta)

    # above this many chunk keys in a grown region, list the store instead of erasing blindly
    _BLIND_ERASE_MAX = 4096

    def _erase_chunks_outside(self, grid: tuple[int, ...]) -> None:
        """Erase every stored chunk with a coordinate at or beyond ``grid`` (one listing)."""
        decode = self.metadata.chunk_key_encoding.decode_chunk_key
        plen = len(self._prefix)
        doomed = []
        for key in list(self.store.list_prefix(self._prefix)):
            coords = decode(key[plen:])
            if coords is None or len(coords) != len(grid):
                continue
            if any(c >= g for c, g in zip(coords, grid)):
                doomed.append(key)
        self.store.erase_values(doomed)

    def _erase_chunks_beyond(self, old_grid: tuple[int, ...], new_grid: tuple[int, ...]) -> None:
        """Before growing: erase whatever is stored in the chunks the array gains.  Few
        chunks (an ``append``): erase their keys blindly (erasing a missing key is a
        no-op, and costs no listing of the whole array); many: one listing."""
        n_new = math.prod(new_grid) - math.prod(old_grid)
        if n_new > self._BLIND_ERASE_MAX:
            self._erase_chunks_outside(old_grid)
            return
        keys: list[str] = []
        nd = len(new_grid)
        for d in range(nd):  # the gained region as disjoint slabs: coords[d] >= old, earlier dims < old
            ranges = [range(old_grid[k]) if k < d else range(old_grid[d], new_grid[d]) if k == d else range(new_grid[k])
                      for k in range(nd)]
            if any(len(r) == 0 for r in ranges):
                continue  # an empty slab (itertools.product would first copy 2**40-long ranges)
            keys.extend(self._key(c) for c in itertools.product(*ranges))
        self.store.erase_values(keys)

    def append(self, data: Any, axis: int = 0) -> tuple[int, ...]:
        """Grow along ``axis`` and write ``data`` at the end; return the new shape."""
        data = self._asarray(data)  # numpy's assignment rules, checked before the array grows
        if data.ndim != self.ndim:
            raise ValueError(f"append: expected {self.ndim}-d data, received {data.ndim}-d")
        axis = axis + self.ndim if axis < 0 else axis
        for k in range(self.ndim):
            if k != axis and data.shape[k] != self.shape[k]:
                raise ValueError(f"append: shape mismatch on axis {k}: {data.shape[k]} != {self.shape[k]}")
        old = self.shape[axis]
        new_shape = list(self.shape)
        new_shape[axis] = old + data.shape[axis]
        self.resize(tuple(new_shape))
        sel = tuple(slice(old, None) if k == axis else slice(None) for k in range(self.ndim))
        self[sel] = data
        return self.shape


# numeric, bool and time kinds: Python values are converted with the target dtype (NEP 50)
_NEP50_KINDS = frozenset("biufcmM")


def _convert_python_value(value: Any, dtype: np.dtype) -> np.ndarray:
    """``np.asarray(value, dtype=dtype)`` for Python scalars / sequences, numpy's errors
    re-raised as zarrcy errors with numpy's text (numpy 2's assignment rules)."""
    scalar = value if value is None or isinstance(value, (int, float, complex, str, bytes)) else None
    try:
        return np.asarray(value, dtype=dtype)
    except OverflowError as e:  # "Python integer 300 out of bounds for uint8"
        raise OutOfRangeError(str(e), value=scalar) from None
    except TypeError as e:  # "float() argument must be a string or a real number, not 'complex'"
        raise CastTypeError(str(e), value=scalar) from None
    except ValueError as e:  # "cannot convert float NaN to integer", inhomogeneous sequences
        if isinstance(e, ZarrcyError):
            raise
        raise CastError(str(e)) from None


def _c_contiguous(x: np.ndarray) -> np.ndarray:
    """C-contiguous without changing the shape (np.ascontiguousarray makes 0-d 1-d)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else np.array(x, order="C")
