"""The state every Array operation shares (docs/ARCHITECTURE.md, layer 6): the codec
pipeline(s) built from the metadata, chunk geometry from the chunk grid, stored-chunk
access with a size cap, the execution context of each call (:meth:`ArrayBase._context`),
per-thread scratch chunks, and :class:`chunk_errors`, which names a failing chunk's key.

:class:`zarrcy.Array` is ``ArrayBase`` + the read path (``array_read.ArrayReads``) +
the write path and resizing (``array_write.ArrayWrites``) + the properties and
zarr-python API of ``nodes/array.py``.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from typing import Any, Callable, Iterable, Literal

import numpy as np

from zarrcy._kernels import _rectilinear
from zarrcy.byte_range import RangeRequest
from zarrcy.chunk_grid import RegularChunkGrid
from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid
from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.config import at_fork_reset as _at_fork_reset
from zarrcy.config import get as _config_get
from zarrcy.document.array import ArrayMetadataLike
from zarrcy.execution import ExecContext
from zarrcy.errors import (
    REOPEN_HINT,
    CastError,
    CorruptChunkError,
    MetadataError,
    NodeNotFoundError,
    ReadOnlyError,
    expected,
)
from zarrcy.indexing import ChunkProjection
from zarrcy.nodes.base import META_KEY, Node, write_metadata
from zarrcy.nodes.base import prefix as _prefix
from zarrcy.storage import Store
from zarrcy.v2.metadata import read_consolidated

__all__ = ["ArrayBase", "ArrayConfig", "chunk_errors"]

_SCRATCH = threading.local()


@_at_fork_reset
def _reset_scratch_after_fork() -> None:
    """Forked child: scratch buffers are per thread, and the parent's threads are gone."""
    global _SCRATCH
    _SCRATCH = threading.local()


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


@dataclasses.dataclass(frozen=True)
class ArrayConfig:
    """Per-Array runtime settings (zarr-python's ``ArrayConfig``): ``order`` is kept for
    compatibility (reads return C-ordered arrays); ``write_empty_chunks`` overrides
    ``zarrcy.config(write_empty_chunks=...)`` for this Array object."""

    order: str = "C"
    write_empty_chunks: bool = False


class ArrayBase(Node):
    """An array's state and the chunk-level operations reads and writes share."""

    metadata: ArrayMetadataLike
    read_only: bool
    _grid: RegularChunkGrid | RectilinearChunkGrid
    _rect: RectilinearChunkGrid | None
    _pipeline: CodecPipeline
    _pipelines: dict[tuple[int, ...], CodecPipeline]
    _stored_limit: int
    _chunk_shape: tuple[int, ...]
    _axis_grids: tuple[Any, ...]
    _extents: tuple[dict[int, tuple[int, int]], ...]
    _runs: tuple[tuple[list[int], list[int], list[int]], ...] | None
    _encode_key: Callable[[tuple[int, ...]], str]
    _prefix: str
    _dtype: np.dtype
    _fill: np.ndarray
    _fill_bytes: np.ndarray | None
    _vlen: bool
    _shape: tuple[int, ...]
    _ndim: int
    _meta_key: str
    _partial: bool
    _box_reads: bool
    _array_config: ArrayConfig  # set by Array.with_config only

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
        # boxes and points of a regular grid of shards may be served from cached inner
        # chunks in one call (``read_cached_box`` / ``read_cached_points``) before the
        # shard-by-shard path
        self._box_reads = self._partial and self._rect is None and self._ndim > 0

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
    def grid_shape(self) -> tuple[int, ...]:
        """Stored chunks (shards when sharded) per axis: the chunk grid's ``grid_shape``."""
        return self._grid.grid_shape(self._shape)

    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """:attr:`grid_shape` under zarr-python's name."""
        return self._grid.grid_shape(self._shape)

    def _inner_chunk_shape(self) -> tuple[int, ...] | None:
        inner = self._pipeline.array_bytes.inner_chunk_shape
        return inner if inner is not None and not self._pipeline.array_array else None

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

    def _context(self) -> ExecContext:
        """The execution context of one API call on this array (threads, pools, I/O
        concurrency of its store, coalescing, caches: :mod:`zarrcy.execution`).  Made by
        the public read and write methods only; everything below gets it passed."""
        return ExecContext.for_call(self.store.io_concurrency)

    def _keyed(self, fn: Any, item: Any, coords_of: Any) -> None:
        """``fn(item)``; a CorruptChunkError/CastError from the chunk's codecs is re-raised
        (same class) naming the chunk's key, ``coords_of(item)`` -> its chunk coordinates."""
        with chunk_errors(lambda: self._key(coords_of(item))):
            fn(item)

    def _scratch(self, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """A per-thread decode buffer of one chunk (bounded memory: one chunk per thread)."""
        local = _SCRATCH.__dict__
        shape = self._chunk_shape if shape is None else shape
        k = (shape, self._dtype)  # the dtype, not .str: ml_dtypes types and records share "|V<n>"
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
        return self._check_stored(key, self.store.get(key, RangeRequest(0, self._stored_limit + 1)))

    def _check_stored(self, key: str, data: Any) -> Any:
        """``data`` (read with ``RangeRequest(0, _stored_limit + 1)``), refused when it
        is more than the limit."""
        limit = self._stored_limit
        if data is not None and len(data) > limit:
            raise CorruptChunkError(
                expected(key, f"a stored chunk of at most {limit} bytes for chunk shape {self._chunk_shape}", "more"), key=key
            )
        return data

    def _decode(self, key: str, data: Any, pipeline: CodecPipeline | None = None,
                ctx: ExecContext | None = None) -> np.ndarray:
        if pipeline is None:
            pipeline = self._pipeline if self._rect is None else self._pipeline_of_key(key)
        with chunk_errors(key):
            return pipeline.decode(data, ctx)


    def _mask_coords(self, mask: Any) -> tuple[np.ndarray, ...]:
        m = np.asarray(mask)
        if m.dtype != np.bool_ or m.shape != self.shape:
            raise IndexError(f"mask selection: expected a boolean array of shape {self.shape}, "
                             f"received {m.dtype} of shape {m.shape}")
        return np.nonzero(m)

    def _locate_points(self, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(chunk coordinates, in-chunk coordinates or None) of points ``coords``
        ((ndim, N) int64): regular grids divide (in-chunk coordinates are then computed
        per chunk by the caller), rectilinear axes search their runs in the kernel."""
        if self._rect is None:
            return coords // np.asarray(self._chunk_shape, dtype=np.int64)[:, None], None
        chunk_coords = np.empty_like(coords)
        in_chunk = np.empty_like(coords)
        for a, (origin, first, edge) in enumerate(self._axis_grids):
            chunk_coords[a], in_chunk[a] = _rectilinear.locate(origin, first, edge, np.ascontiguousarray(coords[a]))
        return chunk_coords, in_chunk

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

    def __exit__(self, tp: Any, e: BaseException | None, tb: Any) -> Literal[False]:
        if not isinstance(e, (CorruptChunkError, CastError)) or getattr(e, "key", None) is not None:
            return False
        key = self.key if isinstance(self.key, str) else self.key()
        new = copy.copy(e)
        new.args = (f"{key}: {e}",)
        new.key = key  # type: ignore[union-attr]  # CastError gets the attribute here
        raise new from e


def _proj_coords(p: ChunkProjection) -> tuple[int, ...]:
    return p.chunk_coords
