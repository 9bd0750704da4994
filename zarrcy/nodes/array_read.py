"""Reading an Array (docs/ARCHITECTURE.md "A sharded read"): selections are normalised
by :mod:`zarrcy.indexing`, projected onto the chunk grid, and each touched stored chunk
(shard) becomes one task: a whole chunk is fetched and decoded (straight into the
output when it covers it), a sharded one reaches the codec's ``decode_partial`` /
``decode_points`` / ``read_point`` with its selection intact.

Each public read method is an API entry point: it makes the call's execution context
(:meth:`ArrayBase._context`; or uses the one given as ``context=``, e.g. by
``zarrcy.convert``) and passes it to every task, which passes it to the codecs.  How
many tasks run at once is the context's decision (``ExecContext.map``)."""

from __future__ import annotations

import bisect
import itertools
from typing import Any, Callable, Iterable

import numpy as np

import zarrcy.chunk_cache as chunk_cache
from zarrcy._kernels import _rectilinear
from zarrcy.byte_range import RangeRequest
from zarrcy.codecs.sharding.projection import slice_runs
from zarrcy.execution import FEW_ITEMS, ExecContext
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
from zarrcy.storage import StorePath

__all__ = ["ArrayReads"]

_NOT_A_POINT = object()
#: ``_cached_chunk``: this chunk is not cached (cache off, no version token, vlen data)
_UNCACHED: Any = object()


class ArrayReads(ArrayBase):
    """``a[...]``, ``oindex``, ``vindex``, ``blocks`` and the ``get_*_selection`` methods."""

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self[...]
        return a if dtype is None else a.astype(dtype, copy=False)

    def __getitem__(self, selection: Any) -> Any:
        return self.get_basic_selection(selection)

    def _read_point(self, selection: tuple, ctx: ExecContext | None) -> Any:
        """``a[i, j, ...]`` with one integer per dimension: the latency path.  Decodes the
        one chunk (inner chunk when sharded) holding the element into a per-thread
        scratch buffer, with none of the general selection machinery."""
        coords = []
        local = []
        runs = self._runs  # None: the regular grid
        edges: list[int] = []  # a rectilinear chunk's shape
        for axis, (i, n, c) in enumerate(zip(selection, self._shape, self._chunk_shape)):
            if type(i) is not int:
                if isinstance(i, np.integer) and not isinstance(i, np.bool_):
                    i = int(i)
                else:
                    return _NOT_A_POINT
            if i < 0:
                i += n
            if i < 0 or i >= n:
                raise IndexError(f"index {i - n if i < 0 else i} is out of bounds for axis {axis} with size {n}")
            if runs is None:
                q = i // c
                coords.append(q)
                local.append(i - q * c)
            else:  # the run holding i (ext-chunk-grid-rectilinear.md "Indexing"), then divide
                origin, first, edge = runs[axis]
                r = bisect.bisect_right(origin, i) - 1
                e = edge[r]
                q, rem = divmod(i - origin[r], e)
                coords.append(first[r] + q)
                local.append(rem)
                edges.append(e)
        key = self._prefix + self._encode_key(tuple(coords))
        cshape = self._chunk_shape if runs is None else tuple(edges)
        pipeline = self._pipeline if runs is None else self._pipeline_for(cshape)
        if ctx is None:
            ctx = ExecContext.for_point()
        with chunk_errors(key):
            if self._partial:
                return pipeline.read_point(StorePath(self.store, key), local, ctx)
            chunk = self._cached_chunk(key, pipeline, ctx)
            if chunk is not _UNCACHED:
                if chunk is None:
                    self._check_node_exists()
                    return self._fill[()]
                return chunk[tuple(local)].copy()
            data = self._get_stored(key)
            if data is None:
                # a missing chunk: is the array itself still there?  (sharded point reads
                # skip this check: they cannot tell a missing shard from a fill value)
                self._check_node_exists()
                return self._fill[()]
            scratch = self._scratch(cshape)
            pipeline.decode_into(data, scratch, ctx)
            value = scratch[tuple(local)]
            return value.copy() if isinstance(value, np.generic) else value  # str/bytes: immutable

    def _read_in_few_shards(self, selection: tuple, ctx: ExecContext | None) -> Any:
        """``a[sel]`` for slices (positive steps) and ints touching at most
        :data:`~zarrcy.execution.FEW_ITEMS` shards of a sharded array on the regular
        grid, none of them whole: the latency path of small partial reads.  Each shard's
        codec gets its shard-local selection and its region of the output directly, in
        turn (as ``ExecContext.map`` runs few partial shards; each kernel call spreads
        its inner chunks over the budget), with none of the general selection machinery
        (its normalisation, the chunk projections, the task map).  Anything else (index
        arrays, Ellipsis, negative steps, more or whole shards, empty slices, the
        decoded-chunk cache) returns ``_NOT_A_POINT``: the general path."""
        dims: list[list[tuple[int, Any, Any]]] = []  # per dimension: (shard, local, out) pieces
        oshape = []
        m = 1
        whole_everywhere = True  # every dimension has a piece covering its whole shard extent
        for i, n, c in zip(selection, self._shape, self._chunk_shape):
            if type(i) is slice:
                a, b, st = i.indices(n)
                if st < 1 or b <= a:
                    return _NOT_A_POINT
                k = (b - a - 1) // st + 1  # selected
                last = a + (k - 1) * st
                if last // c - a // c >= FEW_ITEMS:
                    return _NOT_A_POINT
                qs, starts, stops, o0, o1 = slice_runs(c, a, k, st)
                pieces = [(q, slice(s0, s1, st), slice(p0, p1))
                          for q, s0, s1, p0, p1 in zip(qs, starts, stops, o0, o1)]
                whole = st == 1 and any(s0 == 0 and s1 == min(c, n - q * c)
                                        for q, s0, s1 in zip(qs, starts, stops))
                m *= len(pieces)
                if m > FEW_ITEMS:
                    return _NOT_A_POINT
                dims.append(pieces)
                oshape.append(k)
                whole_everywhere = whole_everywhere and whole
            elif type(i) is int and -n <= i < n:
                i = i + n if i < 0 else i
                q = i // c
                dims.append([(q, i - q * c, None)])
                whole_everywhere = whole_everywhere and min(c, n - q * c) == 1
            else:
                return _NOT_A_POINT
        if whole_everywhere or chunk_cache.enabled():  # whole shards; cached boxes: their own paths
            return _NOT_A_POINT
        out = np.empty(tuple(oshape), dtype=self._dtype)
        ctx = ctx or self._context()
        pipeline = self._pipeline

        def shard(combo: tuple[tuple[int, Any, Any], ...]) -> None:
            key = self._prefix + self._encode_key(tuple(p[0] for p in combo))
            target = out[tuple(p[2] for p in combo if p[2] is not None)]  # a view
            with chunk_errors(key):
                piece = pipeline.decode_partial(StorePath(self.store, key), tuple(p[1] for p in combo), target, ctx)
            if piece is None:
                target[...] = self._fill

        # partial shards: the context decides (in turn, each kernel spreading its inner
        # chunks; on an I/O-bound store, concurrently)
        ctx.map(shard, list(itertools.product(*dims)), _always)
        return self._read_done(out)

    def get_basic_selection(self, selection: Any = Ellipsis, *, context: ExecContext | None = None) -> Any:
        """``a[selection]``.  ``context``: run within this execution context (a caller
        that made one for a larger call, e.g. ``zarrcy.convert``); default: a new one."""
        if type(selection) is tuple and len(selection) == self._ndim and self._ndim:
            value = self._read_point(selection, context)
            if value is not _NOT_A_POINT:
                return value
            if self._box_reads:
                value = self._read_in_few_shards(selection, context)
                if value is not _NOT_A_POINT:
                    return value
        try:
            sel = normalize_basic(selection, self.shape)
        except _VectorizedSelection:
            return self.get_coordinate_selection(selection, context=context)
        return self._finish(self._read(sel, context or self._context()), sel)

    def get_orthogonal_selection(self, selection: Any, *, context: ExecContext | None = None) -> Any:
        sel = normalize_orthogonal(selection, self.shape)
        return self._finish(self._read(sel, context or self._context()), sel)

    def get_coordinate_selection(self, selection: Any, *, context: ExecContext | None = None) -> np.ndarray:
        coords, out_shape = normalize_vectorized(selection, self.shape)
        out = self._read_points(coords, context or self._context())
        if out.size and self._may_be_all_fill(out):
            self._check_node_exists()
        return out.reshape(out_shape)

    def get_block_selection(self, selection: Any, *, context: ExecContext | None = None) -> Any:
        sel = normalize_blocks(selection, self.shape, self._axis_grids)
        return self._finish(self._read(sel, context or self._context()), sel)

    def get_mask_selection(self, mask: Any, *, context: ExecContext | None = None) -> np.ndarray:
        """The elements where ``mask`` (a boolean array of the array's shape) is True, in C order."""
        return self.get_coordinate_selection(self._mask_coords(mask), context=context)

    @property
    def oindex(self) -> "_OIndex":
        return _OIndex(self)

    @property
    def vindex(self) -> "_VIndex":
        return _VIndex(self)

    @property
    def blocks(self) -> "_Blocks":
        return _Blocks(self)

    def _finish(self, out: np.ndarray, sel: BasicSelection) -> Any:
        if sel.newaxis:
            out = out.reshape(sel.final_shape)
        if out.ndim == 0:
            return out[()]
        return out

    def _read(self, sel: BasicSelection, ctx: ExecContext) -> np.ndarray:
        out = np.empty(sel.out_shape, dtype=self._dtype)
        if out.size == 0:
            return out
        if self._box_reads and chunk_cache.enabled():
            box = _box_of(sel)
            if box is not None and self._pipeline.read_cached_box(self._store_path_of, box, out):
                return self._read_done(out)  # every touched chunk was cached: one copy
        projections: Iterable[ChunkProjection] = iter_chunk_projections(sel, self._axis_grids)
        task = lambda p: self._keyed(lambda q: self._read_chunk(q, out, ctx), p, _proj_coords)  # noqa: E731
        # a partial shard read spreads its inner chunks over the budget itself: the
        # context runs a few of them in turn rather than as Python tasks
        ctx.map(task, projections, _partial_shard if self._partial else None)
        return self._read_done(out)

    def _store_path_of(self, coords: tuple[int, ...]) -> StorePath:
        return StorePath(self.store, self._key(coords))

    def _read_done(self, out: np.ndarray) -> np.ndarray:
        if self._may_be_all_fill(out):
            self._check_node_exists()
        return out

    def _read_chunk(self, p: ChunkProjection, out: np.ndarray, ctx: ExecContext) -> None:
        key = self._key(p.chunk_coords)
        osel = p.out_selection
        cshape, valid = self._chunk_geometry(p.chunk_coords)
        pipeline = self._pipeline if cshape is self._chunk_shape else self._pipeline_for(cshape)
        if p.is_complete or not self._partial:
            chunk = _UNCACHED if self._partial else self._cached_chunk(key, pipeline, ctx)
            if chunk is not _UNCACHED:
                ortho_set(out, osel, self._fill if chunk is None else ortho_get(chunk, p.chunk_selection))
                return
            data = self._get_stored(key)
            if data is None:
                ortho_set(out, osel, self._fill)
                return
            if p.is_complete and valid == cshape and all(isinstance(s, slice) for s in osel):
                # a fully covered interior chunk decodes straight into the caller's array
                target = out[osel + (Ellipsis,)]  # always a view, even when 0-d
                if target.shape != cshape:
                    target = target.reshape(cshape)  # only unit dims differ: a view
                with chunk_errors(key), ctx.cpu():
                    if target.flags.c_contiguous or pipeline.decodes_into_strided:
                        # (sharding's kernel scatters straight into a strided region)
                        pipeline.decode_into(data, target, ctx)
                    else:
                        # strided destination: decode into this thread's reusable scratch
                        # chunk (no per-chunk allocation), then one strided copy
                        scratch = self._scratch(cshape)
                        pipeline.decode_into(data, scratch, ctx)
                        np.copyto(target, scratch)
                return
            with ctx.cpu():
                chunk = self._decode(key, data, pipeline, ctx)
                ortho_set(out, osel, ortho_get(chunk, p.chunk_selection))
            return
        # partial decode (sharding): the selection reaches the codec intact (steps,
        # index arrays); a plain region of the output is decoded into in place
        target = out[osel + (Ellipsis,)] if all(isinstance(s, slice) for s in osel) else None
        with chunk_errors(key):
            piece = pipeline.decode_partial(StorePath(self.store, key), p.chunk_selection, target, ctx)
        if piece is None:
            ortho_set(out, osel, self._fill)
        elif target is None:
            ortho_set(out, osel, piece)

    def _cached_chunk(self, key: str, pipeline: Any, ctx: ExecContext | None) -> Any:
        """The decoded (read-only) unsharded chunk ``key`` through the decoded-chunk
        cache (``zarrcy.chunk_cache``: keyed by the stored object's version token, so
        never stale), None when it is not stored, or ``_UNCACHED``."""
        if self._vlen or not chunk_cache.enabled():
            return _UNCACHED
        sp = StorePath(self.store, key)
        cid = sp.cache_id
        quick = sp.cache_token()  # unpinned: enough for a hit
        if quick is not None:
            (got,) = chunk_cache.get_many((cid, quick, self._chunk_cache_key(pipeline)), (0,), count_misses=False)
            if got is not None:
                return got
        limit = self._stored_limit
        with sp.snapshot() as snap:
            data: Any = None
            if sp.conditional_reads:  # the bytes and their strong ETag in one GET
                data, token = sp.get_versioned(RangeRequest(0, limit + 1))
                if data is None:
                    return None
            elif snap.exists is False:
                return None
            else:
                token = snap.cache_token
            if token is None:
                return _UNCACHED
            prefix = (cid, token, self._chunk_cache_key(pipeline))
            (got,) = chunk_cache.get_many(prefix, (0,))
            if got is not None:
                return got
            if data is None:
                data = snap.get(RangeRequest(0, limit + 1))
                if data is None:
                    return None
        with (ctx or self._context()).cpu():
            chunk = self._decode(key, self._check_stored(key, data), pipeline, ctx)
        chunk.flags.writeable = False
        chunk_cache.put_many(prefix, (0,), (chunk,))
        return chunk

    def _chunk_cache_key(self, pipeline: Any) -> str:
        """What a decoded chunk depends on besides the stored bytes (per chunk shape; a
        string: its hash is computed once)."""
        shape = tuple(pipeline.spec.shape)
        keys: dict[tuple[int, ...], str] = self.__dict__.setdefault("_cache_keys", {})
        got = keys.get(shape)
        if got is None:
            got = keys[shape] = repr(("chunk", shape, self._dtype.str, self._fill.tobytes(), repr(pipeline.codecs)))
        return got

    def _read_points(self, coords: np.ndarray, ctx: ExecContext) -> np.ndarray:
        """Vectorised read of points (coords: (ndim, N) int64, in bounds)."""
        ndim, n = coords.shape
        out = np.empty(n, dtype=self._dtype)
        if n == 0:
            return out
        if ndim == 0:
            out[...] = self._read(normalize_basic((), ()), ctx)
            return out
        if self._box_reads and chunk_cache.enabled() and self._pipeline.read_cached_points(
                self._store_path_of, coords, out):
            return out  # every touched inner chunk was cached: one gather
        cs = np.asarray(self._chunk_shape, dtype=np.int64)[:, None]
        chunk_coords, in_chunk = self._locate_points(coords)
        grid = np.asarray(self.grid_shape, dtype=np.int64)
        linear = np.ravel_multi_index(tuple(chunk_coords), tuple(grid))
        order = np.argsort(linear, kind="stable")
        lin_sorted = linear[order]
        starts = np.flatnonzero(np.r_[True, lin_sorted[1:] != lin_sorted[:-1]])
        ends = np.r_[starts[1:], n]
        groups = [(order[a:b]) for a, b in zip(starts.tolist(), ends.tolist())]

        def task(idx: np.ndarray) -> None:
            cc = tuple(int(x) for x in chunk_coords[:, idx[0]])
            if in_chunk is None:
                local = coords[:, idx] - cs * np.asarray(cc, dtype=np.int64)[:, None]
                pipeline = self._pipeline
            else:
                local = in_chunk[:, idx]
                pipeline = self._pipeline_for(self._chunk_geometry(cc)[0])
            key = self._key(cc)
            if self._partial:
                # the points reach the codec as they are: only the inner chunks holding
                # them are decoded (sharding)
                with chunk_errors(key):
                    piece = pipeline.decode_points(StorePath(self.store, key), local, ctx)
                out[idx] = self._fill if piece is None else piece
                return
            chunk = self._cached_chunk(key, pipeline, ctx)
            if chunk is _UNCACHED:
                data = self._get_stored(key)
                if data is not None:
                    with ctx.cpu():
                        chunk = self._decode(key, data, pipeline, ctx)
                else:
                    chunk = None
            out[idx] = self._fill if chunk is None else chunk[tuple(local)]

        ctx.map(lambda idx: self._keyed(task, idx, lambda i: tuple(int(x) for x in chunk_coords[:, i[0]])), groups)
        return out



def _always(_: Any) -> bool:
    return True


def _partial_shard(p: ChunkProjection) -> bool:
    """A shard read only in part: its kernel call spreads the inner chunks itself."""
    return not p.is_complete


class _OIndex:
    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, selection: Any) -> Any:
        return self.array.get_orthogonal_selection(selection)

    def __setitem__(self, selection: Any, value: Any) -> None:
        self.array.set_orthogonal_selection(selection, value)


class _VIndex(_OIndex):
    def __getitem__(self, selection: Any) -> Any:
        return self.array.get_coordinate_selection(selection)

    def __setitem__(self, selection: Any, value: Any) -> None:
        self.array.set_coordinate_selection(selection, value)


class _Blocks(_OIndex):
    def __getitem__(self, selection: Any) -> Any:
        return self.array.get_block_selection(selection)

    def __setitem__(self, selection: Any, value: Any) -> None:
        self.array.set_block_selection(selection, value)


def _box_of(sel: BasicSelection) -> list[tuple[int, int]] | None:
    """A selection of unit-step slices and ints as per-dimension ``[start, stop)``; None
    for steps and index arrays."""
    box = []
    for d in sel.dims:
        if d.kind == "slice" and d.step == 1:
            box.append((d.start, d.stop))
        elif d.kind == "int":
            box.append((d.start, d.start + 1))
        else:
            return None
    return box
