"""Zarr arrays: numpy-style reads and writes over a store (docs/ARCHITECTURE.md).

This is the one place (with nodes/group.py) where stores and codecs meet.  Reads and writes
are split into per-stored-chunk tasks (per shard when sharded) that run on the shared
thread pool; every hot step inside a task (decompression, byte shuffling, index
arithmetic) runs in C with the GIL released, so tasks overlap.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import itertools
import math
import operator
import threading
from typing import Any, Callable

import numpy as np

from zarrcy.config import at_fork_reset as _at_fork_reset
from zarrcy.config import executor as _executor
from zarrcy.config import get as _config_get
from zarrcy.config import named_pool as _named_pool
from zarrcy._kernels import _grid, _rectilinear, _vlen
from zarrcy.byte_range import ByteRequest, RangeRequest
from zarrcy.chunk_grid import RegularChunkGrid
from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid
from zarrcy.codecs._base import ArrayArrayCodec, ArraySpec, BytesBytesCodec
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.errors import (
    REOPEN_HINT,
    CastError,
    CastTypeError,
    CorruptChunkError,
    MetadataError,
    NodeNotFoundError,
    OutOfRangeError,
    ReadOnlyError,
    ZarrcyError,
    expected,
)
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
from zarrcy.document.array import ArrayMetadataLike
from zarrcy.nodes.base import META_KEY, Node, node_api, write_metadata
from zarrcy.nodes.base import prefix as _prefix
from zarrcy.storage import Store, StorePath
from zarrcy.v2.metadata import read_consolidated

__all__ = ["Array", "ArrayConfig", "Attributes", "StoreValue"]

_SCRATCH = threading.local()
_NOT_A_POINT = object()


class RectilinearChunksError(NotImplementedError, AttributeError):
    """``chunks``/``shards`` of a rectilinear grid (chunks differ in shape): a
    NotImplementedError as in zarr-python 3.4, and an AttributeError so duck-typed
    ``getattr(a, "chunks", None)`` (dask's ``from_array``) treats it as absent."""


# the one ByteGetter/ByteSetter implementation (zarrcy.byte_access) over a store key
StoreValue = StorePath


def _check_chunk_bytes(metadata: Any, where: str) -> None:
    """Refuse arrays whose decoded chunk (shard when sharded) exceeds
    ``zarrcy.config(max_chunk_bytes=...)``: reads and writes hold up to one whole chunk
    per thread, so a hostile ``chunk_shape`` must fail here, before any allocation."""
    limit = int(_config_get("max_chunk_bytes"))
    grid = metadata.chunk_grid
    rect = isinstance(grid, RectilinearChunkGrid)
    cs = grid.max_chunk_shape(tuple(metadata.shape))  # a rectilinear grid: the largest edge per axis
    n = metadata.data_type.dtype.itemsize
    for c in cs:
        n *= c
    if n > limit:
        p = f"{where}.chunk_grid.configuration.{'chunk_shapes' if rect else 'chunk_shape'}"
        raise MetadataError(
            expected(p, f"a chunk of at most max_chunk_bytes={limit} bytes (zarrcy.config), not {n}", list(cs)), p
        )


# One lock per stored object (chunk or shard) being written in this process, keyed by
# ``store.lock_key(key)`` -- the object itself, not the path string: two Array objects
# over the same store, or over two paths to one file (a symlinked root or directory),
# share it.  Writes are read-modify-write (partial chunks, partial shards, the shard
# append strategy): without this, two threads writing different parts of one shard lose
# updates (rewrite) or tear the shard (append).  Other processes are not covered (see
# the README "Guarantees").
_OBJECT_LOCKS: dict[Any, list] = {}
_OBJECT_LOCKS_GUARD = threading.Lock()


@_at_fork_reset
def _reset_after_fork() -> None:
    """Forked child: locks held by the parent's other threads would stay held forever;
    the writes they guarded do not exist here.  Scratch buffers go too (per thread)."""
    global _OBJECT_LOCKS_GUARD, _SCRATCH
    _OBJECT_LOCKS_GUARD = threading.Lock()
    _OBJECT_LOCKS.clear()
    _SCRATCH = threading.local()


class _object_lock:
    __slots__ = ("k", "entry")

    def __init__(self, store: Store, key: str) -> None:
        self.k = store.lock_key(key)

    def __enter__(self) -> None:
        with _OBJECT_LOCKS_GUARD:
            entry = _OBJECT_LOCKS.get(self.k)
            if entry is None:
                entry = _OBJECT_LOCKS[self.k] = [threading.Lock(), 0]
            entry[1] += 1
        self.entry = entry
        entry[0].acquire()

    def __exit__(self, *exc: Any) -> None:
        entry = self.entry
        entry[0].release()
        with _OBJECT_LOCKS_GUARD:
            entry[1] -= 1
            if entry[1] == 0 and _OBJECT_LOCKS.get(self.k) is entry:  # (a fork may have reset it)
                del _OBJECT_LOCKS[self.k]


@dataclasses.dataclass(frozen=True)
class ArrayConfig:
    """Per-Array runtime settings (zarr-python's ``ArrayConfig``): ``order`` is kept for
    compatibility (reads return C-ordered arrays); ``write_empty_chunks`` overrides
    ``zarrcy.config(write_empty_chunks=...)`` for this Array object."""

    order: str = "C"
    write_empty_chunks: bool = False


class Array(Node):
    """A Zarr v3 array.  Obtain one with :func:`zarrcy.open_array` / :func:`zarrcy.create_array`."""

    def __init__(self, store: Store, path: str, metadata: ArrayMetadataLike, *, read_only: bool = False) -> None:
        self.store = store
        self.path = path
        self.read_only = read_only or store.read_only
        self._set_metadata(metadata)

    def _set_metadata(self, metadata: ArrayMetadataLike) -> None:
        _check_chunk_bytes(metadata, _prefix(self.path) + META_KEY)
        self.metadata = metadata
        self._pipeline = CodecPipeline.from_codecs(metadata.codecs, metadata.spec)
        self._stored_limit = self._pipeline.stored_size_limit()
        grid = metadata.chunk_grid
        self._grid = grid
        if isinstance(grid, RectilinearChunkGrid):
            # ext-chunk-grid-rectilinear.md: chunks differ in shape; ``_chunk_shape`` is
            # the largest (the pipeline above, scratch bounds), each chunk's codec shape
            # is its full edge lengths and gets its own (cached) pipeline
            self._rect: RectilinearChunkGrid | None = grid
            self._chunk_shape = tuple(metadata.spec.shape)
            self._axis_grids: tuple[Any, ...] = tuple(grid.tables(a) for a in range(grid.ndim))
            # per axis: chunk index -> (origin, edge), filled as chunks are touched
            # (bounded; a binary search per axis per chunk otherwise costs ~10% of a read)
            self._extents: tuple[dict[int, tuple[int, int]], ...] = tuple({} for _ in range(grid.ndim))
            # the run tables as Python lists, for single-element reads (bisect)
            self._runs: tuple[tuple[list[int], list[int], list[int]], ...] | None = tuple(
                (o.tolist(), f.tolist(), e.tolist()) for o, f, e in self._axis_grids)
        else:
            self._rect = None
            self._runs = None
            self._chunk_shape = tuple(grid.chunk_shape)
            self._axis_grids = self._chunk_shape
        self._pipelines: dict[tuple[int, ...], CodecPipeline] = {self._chunk_shape: self._pipeline}
        self._encode_key = metadata.chunk_key_encoding.encode_chunk_key
        self._prefix = _prefix(self.path)
        dt = metadata.data_type.dtype
        self._dtype = dt
        self._fill = np.asarray(metadata.fill_value, dtype=dt)
        # variable-length elements (string: StringDType, bytes: object) have no fixed bytes:
        # fill checks compare values, and a chunk's stored size does not follow from its shape
        self._vlen = dt.kind in "OT"
        self._fill_bytes = None if self._vlen else np.frombuffer(self._fill.tobytes(), dtype=np.uint8)
        if self._vlen:
            self._stored_limit = max(self._stored_limit, int(_config_get("max_chunk_bytes")))
        self._shape = tuple(metadata.shape)
        self._ndim = len(self._shape)
        fmt = metadata.zarr_format
        self._meta_key = self._prefix + (META_KEY if fmt == 3 else ".zarray" if fmt == 2 else "meta")
        # partial reads and writes reach the codec with the chunk's selection intact
        # (sharding, also behind a transpose); single-element reads go straight to it
        self._partial = self._pipeline.supports_partial_decode

    # -- properties ------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.metadata.shape)

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self.metadata.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def shards(self) -> tuple[int, ...] | None:
        """Shard shape if the array is sharded (the stored-object grid), else None.
        NotImplementedError for a rectilinear shard grid (as zarr-python 3.4): see
        :attr:`write_chunk_sizes`."""
        inner = self._inner_chunk_shape()
        if inner is not None and self._rect is not None:
            raise RectilinearChunksError(
                "shards: the shard grid is rectilinear (shards differ in shape); use write_chunk_sizes"
            )
        return self._chunk_shape if inner is not None else None

    @property
    def chunks(self) -> tuple[int, ...]:
        """The (inner) chunk shape: the unit of encoding, as in zarr-python 3.
        NotImplementedError for an unsharded rectilinear array (as zarr-python 3.4):
        see :attr:`read_chunk_sizes`."""
        inner = self._inner_chunk_shape()
        if inner is None and self._rect is not None:
            raise RectilinearChunksError(
                "chunks: the chunk grid is rectilinear (chunks differ in shape); use read_chunk_sizes"
            )
        return inner if inner is not None else self._chunk_shape

    @property
    def write_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """Per axis, the sizes of the stored chunks (shards when sharded) clipped to the
        array (dask's ``chunks`` convention), for regular and rectilinear grids."""
        return tuple(self._grid.axis_chunk_sizes(a, s) for a, s in enumerate(self._shape))

    @property
    def read_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """Per axis, the sizes of the chunks read (inner chunks when sharded: they tile
        the array regularly, since they divide every shard edge), clipped to the array."""
        inner = self._inner_chunk_shape()
        if inner is None:
            return self.write_chunk_sizes
        inner_grid = RegularChunkGrid(inner)  # inner chunks tile the array regularly
        return tuple(inner_grid.axis_chunk_sizes(a, s) for a, s in enumerate(self._shape))

    def _inner_chunk_shape(self) -> tuple[int, ...] | None:
        inner = self._pipeline.array_bytes.inner_chunk_shape
        return inner if inner is not None and not self._pipeline.array_array else None

    @property
    def fill_value(self) -> Any:
        return self.metadata.fill_value

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        return self.metadata.dimension_names

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Stored chunks (shards when sharded) per axis: the chunk grid's ``grid_shape``."""
        return self._grid.grid_shape(self._shape)

    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """:attr:`grid_shape` under zarr-python's name."""
        return self._grid.grid_shape(self._shape)

    @property
    def nchunks(self) -> int:
        return self._grid.nchunks(self._shape)

    @property
    def nchunks_initialized(self) -> int:
        """Number of stored chunks (shards when sharded) that exist in the store."""
        decode = self.metadata.chunk_key_encoding.decode_chunk_key
        n = 0
        plen = len(self._prefix)
        grid = self.grid_shape
        for key in self.store.list_prefix(self._prefix):
            coords = decode(key[plen:])
            if coords is not None and len(coords) == len(grid) and all(0 <= c < g for c, g in zip(coords, grid)):
                n += 1
        return n

    def _set_attributes(self, attributes: dict) -> None:
        self._check_writable()
        self._check_node_exists()
        self._write_metadata(self.metadata.with_changes(attributes=attributes, validate=False))

    def _write_metadata(self, metadata: ArrayMetadataLike) -> None:
        write_metadata(self.store, self._prefix, metadata)
        self._set_metadata(metadata)

    def _check_node_exists(self) -> None:
        """NodeNotFoundError if this array's metadata document is gone (its directory
        deleted while this object was live): reads would show fill values and writes
        would recreate chunks without metadata.  One ``exists`` per data write and per
        read that found only fill values -- never one per chunk."""
        if self.store.exists(self._meta_key):
            return
        if self._meta_key.endswith(".zarray"):  # v2 nodes may live only in consolidated .zmetadata
            consolidated = read_consolidated(self.store)
            if consolidated is not None and self._meta_key in consolidated:
                return
        raise NodeNotFoundError(
            f"{self.store.url}: no array at path '/{self.path}' any more ({self._meta_key} was deleted)"
        )

    def _may_be_all_fill(self, out: np.ndarray) -> bool:
        """False if ``out`` (C-contiguous, non-empty) certainly holds something other than
        the fill value: its first, middle and last elements are compared (O(1); a read
        whose samples are all fill then costs one ``exists`` probe, never a scan)."""
        flat = out.reshape(-1)
        n = flat.size
        for i in (0, n // 2, n - 1):
            v = flat[i : i + 1]
            if self._fill_bytes is None:
                if not bool(v[0] == self._fill):
                    return False
            elif v.tobytes() != self._fill.tobytes():
                return False
        return True

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{self.store.url}/{self.path}: array {REOPEN_HINT}")

    def __repr__(self) -> str:
        return f"<zarrcy.Array {self.store.url!s} /{self.path} shape={self.shape} dtype={self.dtype}>"

    @property
    def info(self) -> str:
        m = self.metadata
        lines = [
            f"Type               : Array",
            f"Path               : /{self.path}",
            f"Store              : {self.store.url}",
            f"Data type          : {m.data_type.to_json()}",
            f"Shape              : {self.shape}",
            f"Chunk shape        : {self._info_chunks()}",
            f"Shard shape        : {self._info_shards()}",
            f"Fill value         : {m.fill_value!r}",
            f"Codecs             : {[c.to_dict() for c in m.codecs]}",
            f"No. bytes          : {self.nbytes}",
            f"Chunks initialized : {self.nchunks_initialized}/{self.nchunks}",
        ]
        return "\n".join(lines)

    def _info_chunks(self) -> Any:
        if self._rect is not None and self._inner_chunk_shape() is None:
            return f"<variable> {self._rect.to_dict()['configuration']['chunk_shapes']}"
        return self.chunks

    def _info_shards(self) -> Any:
        if self._rect is not None and self._inner_chunk_shape() is not None:
            return f"<variable> {self._rect.to_dict()['configuration']['chunk_shapes']}"
        return self.shards

    # -- pickling: (store URL, path, read_only) --------------------------------------
    def __reduce__(self):
        # the store object pickles itself (root / URL + storage options), so remote
        # credentials and options travel with the array (Dask workers, processes)
        return (node_api().reopen_array, (self.store, self.path, self.read_only))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self[...]
        return a if dtype is None else a.astype(dtype, copy=False)

    # -- reading -----------------------------------------------------------------------
    def __getitem__(self, selection: Any) -> Any:
        if type(selection) is tuple and len(selection) == self._ndim and self._ndim:
            value = self._read_point(selection)
            if value is not _NOT_A_POINT:
                return value
        try:
            sel = normalize_basic(selection, self.shape)
        except _VectorizedSelection:
            return self.get_coordinate_selection(selection)
        return self._finish(self._read(sel), sel)

    def _read_point(self, selection: tuple) -> Any:
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
        with chunk_errors(key):
            if self._partial:
                return pipeline.read_point(StorePath(self.store, key), local)
            data = self._get_stored(key)
            if data is None:
                # a missing chunk: is the array itself still there?  (sharded point reads
                # skip this check: they cannot tell a missing shard from a fill value)
                self._check_node_exists()
                return self._fill[()]
            scratch = self._scratch(cshape)
            pipeline.decode_into(data, scratch)
            value = scratch[tuple(local)]
            return value.copy() if isinstance(value, np.generic) else value  # str/bytes: immutable

    def get_orthogonal_selection(self, selection: Any) -> Any:
        sel = normalize_orthogonal(selection, self.shape)
        return self._finish(self._read(sel), sel)

    def get_coordinate_selection(self, selection: Any) -> np.ndarray:
        coords, out_shape = normalize_vectorized(selection, self.shape)
        out = self._read_points(coords)
        if out.size and self._may_be_all_fill(out):
            self._check_node_exists()
        return out.reshape(out_shape)

    def get_block_selection(self, selection: Any) -> Any:
        sel = normalize_blocks(selection, self.shape, self._axis_grids)
        return self._finish(self._read(sel), sel)

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

    def _chunk_geometry(self, coords: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(codec shape, valid shape) of a chunk: the grid's ``chunk_extent`` (a chunk's
        codec shape is its declared shape; only the last chunk along an axis may extend
        past the array), and its part inside the array."""
        if self._rect is None:
            origin, cs = self._grid.chunk_extent(coords)
        else:
            # per-axis extents cached as chunks are touched (bounded; a binary search
            # per axis per chunk otherwise costs ~10% of a read)
            o_l = []
            cs_l = []
            for a, c in enumerate(coords):
                cache = self._extents[a]
                ext = cache.get(c)
                if ext is None:
                    ext = self._rect.axis_extent(a, c)
                    if len(cache) < 1 << 16:
                        cache[c] = ext
                o_l.append(ext[0])
                cs_l.append(ext[1])
            origin, cs = tuple(o_l), tuple(cs_l)
        return cs, tuple(min(e, s - o) for o, e, s in zip(origin, cs, self._shape))

    def _pipeline_of_key(self, key: str) -> CodecPipeline:
        """The pipeline of the chunk stored at ``key`` (a rectilinear chunk's shape
        follows from its coordinates; keys that name no chunk get the largest)."""
        coords = self.metadata.chunk_key_encoding.decode_chunk_key(key[len(self._prefix):])
        if coords is None or len(coords) != self._ndim or any(c < 0 for c in coords):
            return self._pipeline
        return self._pipeline_for(self._chunk_geometry(tuple(coords))[0])

    def _pipeline_for(self, shape: tuple[int, ...]) -> CodecPipeline:
        """The codec pipeline of chunks of ``shape`` (one per distinct rectilinear chunk
        shape, resolved once and cached; the regular grid has one)."""
        p = self._pipelines.get(shape)
        if p is None:
            spec = self.metadata.spec
            p = CodecPipeline.from_codecs(self.metadata.codecs, ArraySpec(shape, spec.dtype, spec.fill_value, spec.data_type))
            if len(self._pipelines) >= 1024:  # hostile grids: many distinct edges per axis
                self._pipelines = {self._chunk_shape: self._pipeline}
            self._pipelines[shape] = p
        return p

    def _read(self, sel: BasicSelection) -> np.ndarray:
        out = np.empty(sel.out_shape, dtype=self._dtype)
        if out.size == 0:
            return out
        projections = iter_chunk_projections(sel, self._axis_grids)
        self._run(lambda p: self._keyed(lambda q: self._read_chunk(q, out), p, _proj_coords), projections)
        if self._may_be_all_fill(out):
            self._check_node_exists()
        return out

    def _run(self, fn, items) -> None:
        """Run ``fn`` over items: inline for one item, else on the pool with a bounded
        window so at most ~2 tasks per thread are in flight (bounded memory)."""
        it = iter(items)
        first = next(it, None)
        if first is None:
            return
        second = next(it, None)
        if second is None or _config_get("threads") == 1:
            fn(first)
            if second is not None:
                fn(second)
                for item in it:
                    fn(item)
            return
        threads = _config_get("threads")
        io = getattr(self.store, "io_concurrency", 0)
        if io > threads:
            # a latency-bound store: keep ``io`` chunk/shard reads in flight (their decoding
            # releases the GIL; nested parallel loops use the CPU pool, caller-runs)
            ex, window = _named_pool("tasks", io), 2 * io
        else:
            ex, window = _executor(), max(2, 2 * threads)
        pending: list = []
        try:
            for item in itertools.chain((first, second), it):
                pending.append(ex.submit(fn, item))
                if len(pending) >= window:
                    pending.pop(0).result()
            for f in pending:
                f.result()
        except BaseException:
            for f in pending:
                f.cancel()
            raise

    def _keyed(self, fn: Any, item: Any, coords_of: Any) -> None:
        """``fn(item)``; a CorruptChunkError/CastError from the chunk's codecs is re-raised
        (same class) naming the chunk's key, ``coords_of(item)`` -> its chunk coordinates."""
        with chunk_errors(lambda: self._key(coords_of(item))):
            fn(item)

    def _scratch(self, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """A per-thread decode buffer of one chunk (bounded memory: one chunk per thread)."""
        local = _SCRATCH.__dict__
        shape = self._chunk_shape if shape is None else shape
        k = (shape, self._dtype.str)
        buf = local.get("buf")
        if buf is None or local.get("key") != k:
            buf = np.empty(shape, dtype=self._dtype)
            local["buf"], local["key"] = buf, k
        return buf

    def _key(self, coords: tuple[int, ...]) -> str:
        return self._prefix + self._encode_key(coords)

    def _get_stored(self, key: str) -> Any:
        """A whole stored chunk, read with a size cap: a hostile (e.g. sparse, huge)
        object is refused after reading at most ``stored_size_limit() + 1`` bytes."""
        limit = self._stored_limit
        data = self.store.get(key, RangeRequest(0, limit + 1))
        if data is not None and len(data) > limit:
            raise CorruptChunkError(
                expected(key, f"a stored chunk of at most {limit} bytes for chunk shape {self._chunk_shape}", "more"), key=key
            )
        return data

    def _decode(self, key: str, data, pipeline: CodecPipeline | None = None) -> np.ndarray:
        if pipeline is None:
            pipeline = self._pipeline if self._rect is None else self._pipeline_of_key(key)
        with chunk_errors(key):
            return pipeline.decode(data)

    def _read_chunk(self, p: ChunkProjection, out: np.ndarray) -> None:
        key = self._key(p.chunk_coords)
        osel = p.out_selection
        cshape, valid = self._chunk_geometry(p.chunk_coords)
        pipeline = self._pipeline if cshape is self._chunk_shape else self._pipeline_for(cshape)
        if p.is_complete or not self._partial:
            data = self._get_stored(key)
            if data is None:
                ortho_set(out, osel, self._fill)
                return
            if p.is_complete and valid == cshape and all(isinstance(s, slice) for s in osel):
                # a fully covered interior chunk decodes straight into the caller's array
                target = out[osel + (Ellipsis,)]  # always a view, even when 0-d
                if target.shape != cshape:
                    target = target.reshape(cshape)  # only unit dims differ: a view
                with chunk_errors(key):
                    if target.flags.c_contiguous:
                        pipeline.decode_into(data, target)
                    else:
                        # strided destination: decode into this thread's reusable scratch
                        # chunk (no per-chunk allocation), then one strided copy
                        scratch = self._scratch(cshape)
                        pipeline.decode_into(data, scratch)
                        np.copyto(target, scratch)
                return
            chunk = self._decode(key, data, pipeline)
            ortho_set(out, osel, ortho_get(chunk, p.chunk_selection))
            return
        # partial decode (sharding): the selection reaches the codec intact (steps,
        # index arrays); a plain region of the output is decoded into in place
        target = out[osel + (Ellipsis,)] if all(isinstance(s, slice) for s in osel) else None
        with chunk_errors(key):
            piece = pipeline.decode_partial(StorePath(self.store, key), p.chunk_selection, target)
        if piece is None:
            ortho_set(out, osel, self._fill)
        elif target is None:
            ortho_set(out, osel, piece)

    def _read_points(self, coords: np.ndarray) -> np.ndarray:
        """Vectorised read of points (coords: (ndim, N) int64, in bounds)."""
        ndim, n = coords.shape
        out = np.empty(n, dtype=self._dtype)
        if n == 0:
            return out
        if ndim == 0:
            out[...] = self._read(normalize_basic((), ()))
            return out
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
                    piece = pipeline.decode_points(StorePath(self.store, key), local)
                out[idx] = self._fill if piece is None else piece
                return
            data = self._get_stored(key)
            if data is None:
                out[idx] = self._fill
            else:
                out[idx] = self._decode(key, data, pipeline)[tuple(local)]

        self._run(lambda idx: self._keyed(task, idx, lambda i: tuple(int(x) for x in chunk_coords[:, i[0]])), groups)
        return out

    def _locate_points(self, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(chunk coordinates, in-chunk coordinates or None) of points ``coords``
        ((ndim, N) int64): regular grids divide (in-chunk coordinates are then computed
        per chunk by the caller), rectilinear axes search their runs in the kernel."""
        if self._rect is None:
            return coords // np.asarray(self._chunk_shape, dtype=np.int64)[:, None], None
        chunk_coords = np.empty_like(coords)
        in_chunk = np.empty_like(coords)
        for a, tables in enumerate(self._axis_grids):
            chunk_coords[a], in_chunk[a] = _rectilinear.locate(*tables, np.ascontiguousarray(coords[a]))
        return chunk_coords, in_chunk

    # -- writing -----------------------------------------------------------------------
    def __setitem__(self, selection: Any, value: Any) -> None:
        try:
            sel = normalize_basic(selection, self.shape)
        except _VectorizedSelection:
            self.set_coordinate_selection(selection, value)
            return
        self._write(sel, value)

    def set_orthogonal_selection(self, selection: Any, value: Any) -> None:
        self._write(normalize_orthogonal(selection, self.shape), value)

    def set_block_selection(self, selection: Any, value: Any) -> None:
        self._write(normalize_blocks(selection, self.shape, self._axis_grids), value)

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

    def _write(self, sel: BasicSelection, value: Any) -> None:
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
        self._run(lambda p: self._keyed(lambda q: self._write_chunk(q, v), p, _proj_coords), projections)

    def _store_chunk(self, key: str, chunk: np.ndarray, pipeline: CodecPipeline | None = None) -> None:
        """Encode and store a full chunk; erase it instead when it is all fill value."""
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
        data = pipeline.encode(chunk)
        if data is None:
            if self.store.supports_deletes:
                self.store.erase(key)
            elif self.store.exists(key):  # append-only store (zip): an all-fill stored form
                self.store.set(key, pipeline.encode_empty())
        else:
            self.store.set(key, data)

    def _write_chunk(self, p: ChunkProjection, value: np.ndarray) -> None:
        key = self._key(p.chunk_coords)
        with _object_lock(self.store, key):
            self._write_chunk_locked(key, p, value)

    def _write_chunk_locked(self, key: str, p: ChunkProjection, value: np.ndarray) -> None:
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
            self._store_chunk(key, chunk, pipeline)
            return
        if pipeline.supports_partial_encode:
            # the selection reaches the codec intact: only touched inner chunks change
            with chunk_errors(key):
                pipeline.encode_partial(StorePath(self.store, key), p.chunk_selection, piece)
            return
        data = self._get_stored(key)
        if data is None:
            chunk = np.full(cshape, self._fill, dtype=self._dtype)
        else:
            chunk = np.array(self._decode(key, data, pipeline))  # writable copy
        ortho_set(chunk, p.chunk_selection, piece)
        self._store_chunk(key, chunk, pipeline)

    def set_coordinate_selection(self, selection: Any, value: Any) -> None:
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
            with _object_lock(self.store, key):
                if self._partial:  # sharded: only the inner chunks holding the points change
                    with chunk_errors(key):
                        pipeline.encode_points(StorePath(self.store, key), np.stack(local), v[idx])
                    return
                data = self._get_stored(key)
                chunk = np.full(cshape, self._fill, self._dtype) if data is None else np.array(self._decode(key, data, pipeline))
                chunk[local] = v[idx]
                self._store_chunk(key, chunk, pipeline)

        self._run(lambda idx: self._keyed(task, idx, lambda i: tuple(int(x) for x in chunk_coords[:, i[0]])),
                  [order[a:b] for a, b in zip(starts.tolist(), ends.tolist())])

    # -- resizing ----------------------------------------------------------------------
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
        keys = []
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

    # -- zarr-python API parity (issue 14): keep these together ------------------------
    def _codec_parts(self) -> tuple[tuple[Any, ...], Any, tuple[Any, ...]]:
        """(filters, serializer, compressors) as zarr-python reports them: for a sharded
        array, those of the inner chunks; for a Zarr v2 array, numcodecs objects (and no
        serializer)."""
        m = self.metadata
        if getattr(m, "zarr_format", 3) == 2:
            import numcodecs

            filters = tuple(numcodecs.get_codec(dict(f)) for f in (getattr(m, "filters", None) or ()))
            comp = getattr(m, "compressor", None)
            return filters, None, (numcodecs.get_codec(dict(comp)),) if comp else ()
        codecs = tuple(m.codecs)
        if self._inner_chunk_shape() is not None:  # sharded (also on a rectilinear shard grid)
            codecs = tuple(self._pipeline.array_bytes.codecs)  # type: ignore[attr-defined]
        filters = tuple(c for c in codecs if isinstance(c, ArrayArrayCodec))
        compressors = tuple(c for c in codecs if isinstance(c, BytesBytesCodec))
        rest = [c for c in codecs if not isinstance(c, (ArrayArrayCodec, BytesBytesCodec))]
        return filters, (rest[0] if rest else None), compressors

    @property
    def filters(self) -> tuple[Any, ...]:
        """The array -> array codecs (of the inner chunks when sharded)."""
        return self._codec_parts()[0]

    @property
    def serializer(self) -> Any:
        """The array -> bytes codec (of the inner chunks when sharded)."""
        return self._codec_parts()[1]

    @property
    def compressors(self) -> tuple[Any, ...]:
        """The bytes -> bytes codecs (of the inner chunks when sharded)."""
        return self._codec_parts()[2]

    @property
    def config(self) -> "ArrayConfig":
        """Runtime settings of this Array object (zarr-python's ``ArrayConfig``)."""
        cfg = self.__dict__.get("_array_config")
        if cfg is None:
            cfg = ArrayConfig(write_empty_chunks=bool(_config_get("write_empty_chunks")))
        return cfg

    @property
    def order(self) -> str:
        return self.config.order

    def with_config(self, config: Any = None, **kwargs: Any) -> "Array":
        """A new Array object over the same stored array with other runtime settings
        (``{"write_empty_chunks": bool, "order": "C" | "F"}``)."""
        cfg = config if isinstance(config, ArrayConfig) else dataclasses.replace(self.config, **{**(config or {}), **kwargs})
        if cfg.order not in ("C", "F"):
            raise ValueError(f"config.order: expected 'C' or 'F', received {cfg.order!r}")
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._array_config = cfg
        return new

    def _write_empty_chunks(self) -> bool:
        cfg = self.__dict__.get("_array_config")
        return bool(_config_get("write_empty_chunks")) if cfg is None else cfg.write_empty_chunks

    def nbytes_stored(self) -> int:
        """Bytes stored for this array: its metadata and every chunk (or shard)."""
        return sum(self.store.getsize(k) or 0 for k in self.store.list_prefix(self._prefix))

    def info_complete(self) -> str:
        """:attr:`info` plus what needs listing the store: bytes stored, storage ratio."""
        stored = self.nbytes_stored()
        ratio = self.nbytes / stored if stored else 0.0
        return "\n".join([self.info, f"No. bytes stored   : {stored}", f"Storage ratio      : {ratio:.1f}"])

    def update_attributes(self, new_attributes: dict) -> "Array":
        """Merge ``new_attributes`` into the attributes (one metadata write); return self."""
        self.attrs.update(new_attributes)
        return self

    def get_basic_selection(self, selection: Any = Ellipsis) -> Any:
        return self[selection]

    def set_basic_selection(self, selection: Any, value: Any) -> None:
        self[selection] = value

    def _mask_coords(self, mask: Any) -> tuple[np.ndarray, ...]:
        m = np.asarray(mask)
        if m.dtype != np.bool_ or m.shape != self.shape:
            raise IndexError(f"mask selection: expected a boolean array of shape {self.shape}, "
                             f"received {m.dtype} of shape {m.shape}")
        return np.nonzero(m)

    def get_mask_selection(self, mask: Any) -> np.ndarray:
        """The elements where ``mask`` (a boolean array of the array's shape) is True, in C order."""
        return self.get_coordinate_selection(self._mask_coords(mask))

    def set_mask_selection(self, mask: Any, value: Any) -> None:
        """Set the elements where ``mask`` is True (``value``: a scalar or one value per True)."""
        self.set_coordinate_selection(self._mask_coords(mask), value)


class chunk_errors:
    """``with chunk_errors(key):`` around a chunk's codec calls: a CorruptChunkError or
    CastError raised inside is re-raised as the same class with the message prefixed by
    the chunk's key and ``.key`` set (the cause kept), unless it names a key already.
    ``key`` may be a callable, evaluated only when an error occurs."""

    __slots__ = ("key",)

    def __init__(self, key: str | Callable[[], str]) -> None:
        self.key = key

    def __enter__(self) -> None:
        return None

    def __exit__(self, tp: Any, e: BaseException | None, tb: Any) -> bool:
        if not isinstance(e, (CorruptChunkError, CastError)) or getattr(e, "key", None) is not None:
            return False
        key = self.key if isinstance(self.key, str) else self.key()
        new = copy.copy(e)
        new.args = (f"{key}: {e}",)
        new.key = key  # type: ignore[union-attr]  # CastError gets the attribute here
        raise new from e


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


def _proj_coords(p: ChunkProjection) -> tuple[int, ...]:
    return p.chunk_coords


def _c_contiguous(x: np.ndarray) -> np.ndarray:
    """C-contiguous without changing the shape (np.ascontiguousarray makes 0-d 1-d)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else np.array(x, order="C")


class _OIndex:
    __slots__ = ("array",)

    def __init__(self, array: Array) -> None:
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
