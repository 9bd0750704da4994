"""The ``sharding_indexed`` codec (../shared/specs/v3-codec-sharding-indexed.rst).

Configuration keys (the JSON keys, verbatim):

* ``chunk_shape`` -- inner chunk shape; must evenly divide the shard shape, same rank;
* ``codecs`` -- codec chain of the inner chunks (required in metadata);
* ``index_codecs`` -- codec chain of the index (default ``bytes`` little-endian +
  ``crc32c``); must have a fixed encoded size;
* ``index_location`` -- ``"start"`` or ``"end"`` (default ``"end"``).

Binary layout written by zarrcy: inner chunks back to back in C order of the inner
chunk grid (readers accept any order, gaps and shared bytes), index at the start or end.
Inner chunks whose bytes all equal the fill value are not stored (index entry
``2^64-1``); a shard without any stored inner chunk is not written at all.  With
``zarrcy.config(write_empty_chunks=True)`` every inner chunk is stored (as zarr-python).

Index arithmetic, validation, selection mapping and range coalescing are Cython kernels
(``zarrcy._kernels._sharding``); this module only orchestrates.

Threading: inner chunks are decoded/encoded in parallel on the shared pool
(``zarrcy.config.executor()``) with a *caller-runs* scheme, see :func:`_run`.

Writes (default ``zarrcy.config(shard_write_strategy="rewrite")``) replace the whole
shard object atomically (``setter.set``): readers and crashes see the old shard or the
new one, never a mix.  ``encode_partial`` reuses the encoded bytes of untouched inner
chunks verbatim (they are copied, never decoded).  The opt-in ``"append"`` strategy
(runtime configuration only, never metadata, as the spec requires) appends new inner
chunks and a new index in place on stores with partial writes; see
:meth:`ShardingCodec._append` for what a crash can leave and how readers detect it.

Partial reads of an ``end`` index cannot know the shard's size, so an entry that points
into the index is only caught by whole-shard reads (and by the append path, which
learns the size); entries past the end are caught when their ranges come back short.
Shard-index cache (``zarrcy.config(shard_index_cache=bytes)``): another writer may
replace a shard at any time, so a cached index is only used with a check that the shard
is still the version it came from -- a stat token (``Store.version``: LocalStore,
MemoryStore) or, on object stores, the ETag of the index GET sent as ``If-Match`` with
the data request itself (``Store.get_ranges_if_version``).  A failed check drops the
cached index, re-reads it and retries (at most ``_STALE_RETRIES`` times, then
StoreError): the bytes of one version are never decoded with another's index.
"""

from __future__ import annotations

import threading
from concurrent.futures import wait as _wait_futures
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Literal, Sequence

import crc32c as _crc32c
import numpy as np

from zarrcy._kernels import _sharding as K
from zarrcy.byte_range import RangeRequest, SuffixRequest
from zarrcy.codecs._base import ArrayBytesCodec, ArraySpec, ByteGetter, ByteSetter, Codec
from zarrcy.config import executor as _executor
from zarrcy.config import get as _config_get
from zarrcy.errors import CorruptChunkError, MetadataError, StoreError, expected

__all__ = ["ShardingCodec", "IndexLocation", "clear_index_cache"]

IndexLocation = Literal["start", "end"]
WriteStrategy = Literal["rewrite", "append"]
SENTINEL = K.SENTINEL_U64
_KEYS = ("chunk_shape", "codecs", "index_codecs", "index_location")
_DEFAULT_INNER = [{"name": "bytes", "configuration": {"endian": "little"}}]
_DEFAULT_INDEX = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
# below this many decoded bytes per call, inner chunks are processed inline
_PARALLEL_MIN_BYTES = 1 << 17  # two 64 KiB inner chunks already pay for a second thread

# shard-index cache: (store url, key, layout) -> (version token, validated index), bounded
# by bytes, oldest entries dropped first
_INDEX_CACHE: dict[Any, tuple[Any, np.ndarray]] = {}
_INDEX_CACHE_BYTES = [0]
_INDEX_CACHE_LOCK = threading.Lock()
# re-reads of a shard's index after a conditional data read found the shard changed
_STALE_RETRIES = 3


class _Stale(Exception):
    """Internal: the shard is no longer the version its index was read from."""


def _index_cache_put(key: Any, token: Any, flat: np.ndarray) -> None:
    limit = int(_config_get("shard_index_cache"))
    if flat.nbytes > limit:
        return
    with _INDEX_CACHE_LOCK:
        old = _INDEX_CACHE.pop(key, None)
        if old is not None:
            _INDEX_CACHE_BYTES[0] -= old[1].nbytes
        while _INDEX_CACHE and _INDEX_CACHE_BYTES[0] + flat.nbytes > limit:  # drop the oldest
            _INDEX_CACHE_BYTES[0] -= _INDEX_CACHE.pop(next(iter(_INDEX_CACHE)))[1].nbytes
        _INDEX_CACHE[key] = (token, flat)
        _INDEX_CACHE_BYTES[0] += flat.nbytes


def clear_index_cache() -> None:
    """Forget every cached shard index (benchmarks measuring cold reads; tests)."""
    with _INDEX_CACHE_LOCK:
        _INDEX_CACHE.clear()
        _INDEX_CACHE_BYTES[0] = 0


_SCRATCH = threading.local()


def _scratch(spec: ArraySpec) -> np.ndarray:
    """A per-thread decode buffer for one inner chunk of ``spec``."""
    k = (spec.shape, spec.dtype.str)
    d = _SCRATCH.__dict__
    buf = d.get(k)
    if buf is None:
        if len(d) > 8:
            d.clear()
        buf = d[k] = np.empty(spec.shape, dtype=spec.dtype)
    return buf

_FAULT_TEXT = {
    K.IndexFault.FAULT_HALF_EMPTY: "exactly one of offset/nbytes is 2^64-1 (the empty marker needs both)",
    K.IndexFault.FAULT_OVERFLOW: "offset + nbytes overflows uint64",
    K.IndexFault.FAULT_PAST_END: "points past the end of the shard",
    K.IndexFault.FAULT_INTO_INDEX: "overlaps the shard index",
}


def _codecs_from_json(value: Any, path: str) -> tuple[Codec, ...]:
    from zarrcy.codecs import codec_from_dict

    if not isinstance(value, list) or not value:
        raise MetadataError(expected(path, "a non-empty array of codecs", value), path)
    return tuple(codec_from_dict(item, f"{path}[{i}]") for i, item in enumerate(value))


def _flat_bytes(data: Any) -> memoryview:
    """A 1-d unsigned-byte view of any bytes-like object (``len`` is then its size)."""
    mv = data if isinstance(data, memoryview) else memoryview(data)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def _contiguous(a: np.ndarray) -> np.ndarray:
    """C-contiguous ``a`` keeping 0-d arrays 0-d (``np.ascontiguousarray`` makes them 1-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def _uint64_data_type() -> Any:
    try:
        from zarrcy.metadata.data_type import parse_data_type
    except ImportError:  # pragma: no cover - metadata layer not installed
        return None
    return parse_data_type("uint64")


def _check_inner_sizes(layout: "_Layout", which: np.ndarray, nbs: np.ndarray) -> None:
    """Hostile-store guard before a range read: an index entry may claim any size (the
    shard may even be a huge sparse file), so refuse inner chunks larger than their
    codecs can produce.  Entries up to 1 MiB are left to the usual checks (short read,
    decoded size), which give more specific messages and cost nothing to read."""
    cap = max(layout.inner.stored_size_limit(), 1 << 20)
    if int(nbs.max()) > cap:
        bad = int(np.argmax(nbs > np.uint64(cap)))
        raise CorruptChunkError(
            f"{layout.chunk_name(int(which[bad]))}: expected an inner chunk of at most {cap} bytes, "
            f"received nbytes={int(nbs[bad])}"
        )


# ------------------------------------------------------------------------------------
# parallel loop
# ------------------------------------------------------------------------------------


def _run(n: int, fn: Callable[[int], None], parallel: bool) -> None:
    """Call ``fn(i)`` for ``i in range(n)``, on the shared pool when ``parallel``.

    Caller-runs scheme: the calling thread claims items itself, and up to ``threads - 1``
    helper tasks on the shared pool claim items from the same counter.  When the items
    are exhausted, helpers that never started are cancelled; the caller only waits for
    helpers that are *running* (each finishes its current item).  So a call made from a
    task already running on the pool (the array layer runs one task per shard) cannot
    deadlock: it never waits for queued work, and it still gets help from idle workers.
    """
    threads = int(_config_get("threads"))
    if not parallel or n < 2 or threads < 2:
        for i in range(n):
            fn(i)
        return
    lock = threading.Lock()
    nxt = [0]
    errors: list[BaseException] = []

    def worker() -> None:
        while not errors:
            with lock:
                i = nxt[0]
                nxt[0] = i + 1
            if i >= n:
                return
            try:
                fn(i)
            except BaseException as e:  # re-raised in the caller
                errors.append(e)
                return

    try:
        pool = _executor()
        futures = [pool.submit(worker) for _ in range(min(threads, n) - 1)]
    except RuntimeError:  # pool shut down (interpreter exit): run inline
        futures = []
    try:
        worker()
    finally:
        running = [f for f in futures if not f.cancel()]
        _wait_futures(running)
    if errors:
        raise errors[0]


# ------------------------------------------------------------------------------------
# per-shard-spec layout (computed once, cached on the codec)
# ------------------------------------------------------------------------------------


class _Layout:
    """Everything about one shard spec that does not depend on the data."""

    __slots__ = (
        "spec", "chunk_shape", "cps", "n", "inner", "inner_spec", "index_pipeline",
        "index_size", "fill_row", "coords", "itemsize", "has_object", "fill", "fill_scalar", "fast_index", "has_crc",
    )

    def __init__(self, codec: "ShardingCodec", spec: ArraySpec, path: str) -> None:
        from zarrcy.codecs.pipeline import CodecPipeline

        cfg = f"{path}.configuration"
        shape = tuple(int(s) for s in spec.shape)
        cs = codec.chunk_shape
        if len(cs) != len(shape):
            raise MetadataError(
                expected(f"{cfg}.chunk_shape", f"{len(shape)} dimensions (the shard's rank)", list(cs)),
                f"{cfg}.chunk_shape",
            )
        for d, (s, c) in enumerate(zip(shape, cs)):
            if s % c:
                raise MetadataError(
                    expected(f"{cfg}.chunk_shape[{d}]", f"a divisor of the shard shape {list(shape)}", c),
                    f"{cfg}.chunk_shape",
                )
        self.spec = spec
        self.chunk_shape = cs
        self.cps = tuple(s // c for s, c in zip(shape, cs))
        n = 1
        for g in self.cps:
            n *= g
        self.n = n
        self.inner_spec = ArraySpec(shape=cs, dtype=spec.dtype, fill_value=spec.fill_value, data_type=spec.data_type)
        self.inner = CodecPipeline.from_codecs(list(codec.codecs), self.inner_spec, f"{cfg}.codecs")
        index_spec = ArraySpec(
            shape=self.cps + (2,), dtype=np.dtype(np.uint64), fill_value=np.uint64(SENTINEL),
            data_type=_uint64_data_type(),
        )
        self.index_pipeline = CodecPipeline.from_codecs(list(codec.index_codecs), index_spec, f"{cfg}.index_codecs")
        size = self.index_pipeline.compute_encoded_size()
        if size is None:
            raise MetadataError(
                f"{cfg}.index_codecs: expected codecs with a fixed encoded size (no compression), "
                f"received {[c.name for c in codec.index_codecs]!r}",
                f"{cfg}.index_codecs",
            )
        self.index_size = int(size)
        # the recommended index chain (bytes little-endian [+ crc32c]) is handled by the
        # index kernels directly: no pipeline round trip per partial read
        chain = [c.to_dict() for c in self.index_pipeline.codecs]
        names = [c["name"] for c in chain]
        little = chain[0].get("configuration", {}).get("endian") == "little"
        self.fast_index = (names == ["bytes", "crc32c"] or names == ["bytes"]) and little
        # a torn append is only detectable when the index carries a checksum
        self.has_crc = "crc32c" in names
        self.itemsize = spec.dtype.itemsize
        self.has_object = spec.dtype.hasobject
        self.fill = self.fill_scalar = spec.fill_value
        if self.has_object:
            # str/bytes fill (string/bytes data types): a 0-d array, so that numpy never
            # passes it through U<n>/S<n> (np.full, broadcasting), which drop trailing NULs
            self.fill = np.asarray(spec.fill_value, dtype=spec.dtype)
        row = np.full(cs[-1] if cs else 1, spec.fill_value, dtype=spec.dtype)
        self.fill_row = None if self.has_object else row.view(np.uint8).reshape(-1)
        self.coords = [tuple(int(x) for x in c) for c in np.ndindex(*self.cps)] if n <= (1 << 16) else None

    def region(self, i: int) -> tuple[slice, ...]:
        """Slices of inner chunk ``i`` (C-order linear index) within the shard."""
        if not self.cps:
            return (Ellipsis,)
        c = self.coords[i] if self.coords is not None else np.unravel_index(i, self.cps)
        return tuple(slice(int(a) * s, (int(a) + 1) * s) for a, s in zip(c, self.chunk_shape))

    def chunk_name(self, i: int) -> str:
        c = self.coords[i] if self.coords is not None else tuple(int(x) for x in np.unravel_index(i, self.cps))
        return f"shard index entry {i} (inner chunk {tuple(c)})"

    # -- index -----------------------------------------------------------------------
    def decode_index(self, raw: Any) -> np.ndarray:
        """Encoded index bytes -> flat uint64 array of 2n values (not yet validated)."""
        raw = _flat_bytes(raw)
        if len(raw) != self.index_size:
            raise CorruptChunkError(
                f"shard index: expected {self.index_size} bytes, received {len(raw)} (shard truncated?)"
            )
        if self.fast_index:
            payload = 16 * self.n
            if self.index_size == payload + 4:
                stored = int.from_bytes(raw[payload:], "little")
                actual = _crc32c.crc32c(raw[:payload])
                if stored != actual:
                    raise CorruptChunkError(
                        f"shard index: crc32c checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
                    )
            flat = np.empty(2 * self.n, np.uint64)
            K.decode_index(raw[:payload], flat)
            return flat
        try:
            arr = self.index_pipeline.decode(raw)
        except CorruptChunkError as e:
            raise CorruptChunkError(f"shard index: {e}") from e
        flat = np.ascontiguousarray(arr, dtype=np.uint64).reshape(-1)
        if flat.size != 2 * self.n:
            raise CorruptChunkError(f"shard index: expected {2 * self.n} values, received {flat.size}")
        return flat

    def encode_index(self, flat: np.ndarray) -> bytes:
        if self.fast_index:
            payload = 16 * self.n
            out = bytearray(self.index_size)
            K.encode_index(flat, memoryview(out)[:payload])
            if self.index_size == payload + 4:
                out[payload:] = _crc32c.crc32c(memoryview(out)[:payload]).to_bytes(4, "little")
            return bytes(out)
        out = self.index_pipeline.encode(flat.reshape(self.cps + (2,)))
        if out is None or len(out) != self.index_size:  # pragma: no cover - codec contract
            raise CorruptChunkError("shard index: index codecs produced an unexpected size")
        return bytes(out)

    def validate(self, flat: np.ndarray, shard_size: int | None, start: bool) -> None:
        """Raise CorruptChunkError naming the first bad index entry.

        ``shard_size`` None: the size is unknown (partial read of an end index);
        truncation is then detected when the chunk ranges are read.
        """
        if shard_size is None:
            lo, hi, size = (self.index_size if start else 0), SENTINEL, SENTINEL
        elif start:
            lo, hi, size = self.index_size, shard_size, shard_size
        else:
            lo, hi, size = 0, shard_size - self.index_size, shard_size
        bad, fault = K.validate_index(flat, lo, hi, size)
        if bad != -1:
            raise CorruptChunkError(
                f"{self.chunk_name(bad)}: {_FAULT_TEXT[fault]} "
                f"(offset={int(flat[2 * bad])}, nbytes={int(flat[2 * bad + 1])}"
                + (f", shard size {shard_size}, index {self.index_size} bytes at the {'start' if start else 'end'})" if shard_size is not None else ")")
            )

    # -- emptiness -------------------------------------------------------------------
    def empty_flags(self, arr: np.ndarray, chunk_shape: tuple[int, ...]) -> np.ndarray:
        """Per inner chunk of ``arr`` (C-contiguous, C order): 1 if all fill value."""
        shape = arr.shape
        if self.has_object:
            grid = [s // c for s, c in zip(shape, chunk_shape)]
            out = np.empty(int(np.prod(grid)) if grid else 1, np.uint8)
            for k, c in enumerate(np.ndindex(*grid)):
                sl = tuple(slice(a * s, (a + 1) * s) for a, s in zip(c, chunk_shape))
                out[k] = bool(np.all(arr[sl] == self.fill))
            return out
        if not shape:
            shape, chunk_shape = (1,), (1,)
        grid = [s // c for s, c in zip(shape, chunk_shape)]
        out = np.empty(int(np.prod(grid)), np.uint8)
        K.empty_chunks(
            arr.reshape(-1).view(np.uint8), np.asarray(shape, np.int64), np.asarray(chunk_shape, np.int64),
            self.itemsize, self.fill_row, out,
        )
        return out

    def chunk_is_empty(self, chunk: np.ndarray) -> bool:
        return bool(self.empty_flags(chunk, chunk.shape)[0])


# ------------------------------------------------------------------------------------
# selections
# ------------------------------------------------------------------------------------


class _Plan:
    """A selection mapped onto the inner chunks it touches (kernel-computed)."""

    __slots__ = ("out_shape", "m", "linear", "full", "runs", "c_tab", "o_tab", "use_ix")

    def chunk_sel(self, k: int) -> tuple:
        sel = tuple(self.c_tab[r] for r in self.runs[k])
        return np.ix_(*sel) if self.use_ix else (sel or (Ellipsis,))

    def out_sel(self, k: int) -> tuple:
        sel = tuple(self.o_tab[r] for r in self.runs[k])
        return np.ix_(*sel) if self.use_ix else (sel or (Ellipsis,))


def _plan_single(selection: Sequence[Any], layout: _Layout) -> _Plan | None:
    """Shortcut for the commonest partial access: slices inside one inner chunk."""
    lin = 0
    c_tab = []
    o_tab = []
    out_shape = []
    full = True
    for sel, size, c, g in zip(selection, layout.spec.shape, layout.chunk_shape, layout.cps):
        if not isinstance(sel, slice):
            return None
        start, stop, step = sel.indices(size)
        if step != 1 or stop <= start:
            return None
        k = start // c
        if (stop - 1) // c != k:
            return None
        lin = lin * g + k
        c_tab.append(slice(start - k * c, stop - k * c))
        o_tab.append(slice(0, stop - start))
        out_shape.append(stop - start)
        full = full and start == k * c and stop == k * c + c
    p = _Plan()
    p.out_shape = tuple(out_shape)
    p.m = 1
    p.linear = np.array([lin], np.int64)
    p.full = np.array([full])
    p.runs = [list(range(len(c_tab)))]
    p.c_tab = c_tab
    p.o_tab = o_tab
    p.use_ix = False
    return p


def _plan(selection: Sequence[Any], layout: _Layout) -> _Plan:
    shape = layout.spec.shape
    cs = layout.chunk_shape
    ndim = len(shape)
    if len(selection) != ndim:
        raise ValueError(f"selection: expected {ndim} entries (one per dimension), received {len(selection)}")
    if ndim:
        single = _plan_single(selection, layout)
        if single is not None:
            return single
    n_arrays = sum(1 for s in selection if not isinstance(s, slice))
    use_ix = n_arrays >= 2
    counts = np.empty(ndim, np.int64)
    run_chunk: list[np.ndarray] = []
    c_tab: list[Any] = []
    o_tab: list[Any] = []
    full_tab: list[bool] = []
    out_shape = []
    for d, (sel, size, c) in enumerate(zip(selection, shape, cs)):
        if isinstance(sel, slice):
            start, stop, step = sel.indices(size)
            if step != 1:
                raise ValueError(f"selection[{d}]: expected a slice with step 1, received {sel!r}")
            stop = max(start, stop)
            out_shape.append(stop - start)
            nr = 0 if stop <= start else (stop - 1) // c - start // c + 1
            idx, c0, c1, o0 = (np.empty(nr, np.int64) for _ in range(4))
            K.slice_runs(start, stop, c, idx, c0, c1, o0)
            run_chunk.append(idx)
            for a, b, o in zip(c0.tolist(), c1.tolist(), o0.tolist()):
                if use_ix:
                    c_tab.append(np.arange(a, b))
                    o_tab.append(np.arange(o, o + b - a))
                else:
                    c_tab.append(slice(a, b))
                    o_tab.append(slice(o, o + b - a))
                full_tab.append(a == 0 and b == c)
            counts[d] = nr
        else:
            arr = np.asarray(sel)
            if arr.ndim != 1 or arr.dtype.kind not in "iu":
                raise ValueError(f"selection[{d}]: expected a slice or a 1-d integer array, received {sel!r}")
            arr = arr.astype(np.int64, copy=False)
            if arr.size and (arr.min() < 0 or arr.max() >= size):
                raise ValueError(f"selection[{d}]: indices must lie in [0, {size})")
            out_shape.append(arr.size)
            chunk_of = arr // c
            order = np.argsort(chunk_of, kind="stable")
            sorted_chunks = chunk_of[order]
            if arr.size:
                starts = np.flatnonzero(np.r_[True, sorted_chunks[1:] != sorted_chunks[:-1]])
            else:
                starts = np.empty(0, np.int64)
            ends = np.r_[starts[1:], arr.size].astype(np.int64)
            uniq = sorted_chunks[starts] if arr.size else np.empty(0, np.int64)
            run_chunk.append(uniq.astype(np.int64))
            for u, a, b in zip(uniq.tolist(), starts.tolist(), ends.tolist()):
                pos = order[a:b]
                local = arr[pos] - u * c
                c_tab.append(local)
                o_tab.append(pos)
                # full only when the run is exactly 0..c-1 in order (so value[pos] is the chunk)
                full_tab.append(local.size == c and bool((local == np.arange(c)).all()))
            counts[d] = uniq.size
    total = int(np.prod(counts)) if ndim else 1
    linear = np.empty(total, np.int64)
    runs = np.empty((total, ndim), np.int64)
    K.product_runs(
        counts, np.concatenate(run_chunk) if run_chunk else np.empty(0, np.int64),
        np.asarray(layout.cps, np.int64), linear, runs,
    )
    p = _Plan()
    p.out_shape = tuple(out_shape)
    p.m = total
    p.linear = linear
    ft = np.asarray(full_tab, dtype=bool)
    p.full = ft[runs].all(axis=1) if ndim else np.ones(total, bool)
    p.runs = runs.tolist()
    p.c_tab = c_tab
    p.o_tab = o_tab
    p.use_ix = use_ix
    return p


# ------------------------------------------------------------------------------------
# the codec
# ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardingCodec(ArrayBytesCodec):
    """``sharding_indexed``: many inner chunks in one stored object, plus an index."""

    name: ClassVar[str] = "sharding_indexed"

    chunk_shape: tuple[int, ...]
    codecs: tuple[Codec, ...] = ()
    index_codecs: tuple[Codec, ...] = ()
    index_location: IndexLocation = "end"
    _layouts: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        cs = tuple(self.chunk_shape)
        if not all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c > 0 for c in cs):
            raise MetadataError(expected("chunk_shape", "an array of positive integers", list(cs)), "chunk_shape")
        object.__setattr__(self, "chunk_shape", tuple(int(c) for c in cs))
        if not self.codecs:
            object.__setattr__(self, "codecs", _codecs_from_json(_DEFAULT_INNER, "codecs"))
        else:
            object.__setattr__(self, "codecs", tuple(self.codecs))
        if not self.index_codecs:
            object.__setattr__(self, "index_codecs", _codecs_from_json(_DEFAULT_INDEX, "index_codecs"))
        else:
            object.__setattr__(self, "index_codecs", tuple(self.index_codecs))
        if self.index_location not in ("start", "end"):
            raise MetadataError(
                expected("index_location", "one of ('start', 'end')", self.index_location), "index_location"
            )

    # the per-spec layout cache holds pipelines: keep it out of pickles
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_layouts", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_layouts", {})

    # -- JSON --------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str = "codecs[0]") -> "ShardingCodec":
        cfg = f"{path}.configuration"
        if not isinstance(configuration, dict):
            raise MetadataError(expected(cfg, "an object", configuration), cfg)
        for k in configuration:
            if k not in _KEYS:
                raise MetadataError(expected(f"{cfg}.{k}", f"one of the keys {_KEYS}", k), f"{cfg}.{k}")
        if "chunk_shape" not in configuration:
            raise MetadataError(f"{cfg}.chunk_shape: required key is missing", f"{cfg}.chunk_shape")
        cs = configuration["chunk_shape"]
        if (
            not isinstance(cs, list)
            or not all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in cs)
        ):
            raise MetadataError(expected(f"{cfg}.chunk_shape", "an array of positive integers", cs), f"{cfg}.chunk_shape")
        if "codecs" not in configuration:
            raise MetadataError(f"{cfg}.codecs: required key is missing", f"{cfg}.codecs")
        codecs = _codecs_from_json(configuration["codecs"], f"{cfg}.codecs")
        index_codecs = _codecs_from_json(configuration.get("index_codecs", _DEFAULT_INDEX), f"{cfg}.index_codecs")
        loc = configuration.get("index_location", "end")
        if loc not in ("start", "end") or not isinstance(loc, str):
            raise MetadataError(
                expected(f"{cfg}.index_location", "one of ('start', 'end')", loc), f"{cfg}.index_location"
            )
        return cls(chunk_shape=tuple(cs), codecs=codecs, index_codecs=index_codecs, index_location=loc)

    def to_dict(self) -> dict[str, Any]:
        from zarrcy.codecs import codecs_to_json

        return {
            "name": self.name,
            "configuration": {
                "chunk_shape": list(self.chunk_shape),
                "codecs": codecs_to_json(list(self.codecs)),
                "index_codecs": codecs_to_json(list(self.index_codecs)),
                "index_location": self.index_location,
            },
        }

    # -- metadata-time checks ------------------------------------------------------------
    def validate(self, spec: ArraySpec, path: str = "codecs[0]") -> None:
        self._layout(spec, path)

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return None

    def _layout(self, spec: ArraySpec, path: str = "sharding_indexed") -> _Layout:
        fill = spec.fill_value
        try:
            fkey = np.asarray(fill, dtype=spec.dtype).tobytes() if not spec.dtype.hasobject else repr(fill)
        except (TypeError, ValueError):
            fkey = repr(fill)
        key = (tuple(spec.shape), spec.dtype.str, fkey)
        layout = self._layouts.get(key)
        if layout is None:
            layout = _Layout(self, spec, path)
            if len(self._layouts) > 16:  # a codec serves few specs; stay bounded anyway
                self._layouts.clear()
            self._layouts[key] = layout
        return layout

    # -- whole-shard decode ----------------------------------------------------------------
    def _index_of(self, buf: memoryview, layout: _Layout) -> np.ndarray:
        size = buf.nbytes
        isz = layout.index_size
        if size < isz:
            raise CorruptChunkError(f"shard is {size} bytes, shorter than its index ({isz} bytes)")
        start = self.index_location == "start"
        raw = buf[:isz] if start else buf[size - isz:]
        flat = layout.decode_index(raw)
        layout.validate(flat, size, start)
        return flat

    def decode(self, data: bytes | bytearray | memoryview, spec: ArraySpec) -> np.ndarray:
        out = np.empty(spec.shape, dtype=spec.dtype)
        self.decode_into(data, out, spec)
        return out

    def decode_into(self, data: bytes | bytearray | memoryview, out: np.ndarray, spec: ArraySpec) -> bool:
        layout = self._layout(spec)
        if tuple(out.shape) != tuple(spec.shape):
            raise ValueError(expected("sharding_indexed.decode_into out.shape", str(tuple(spec.shape)), out.shape))
        buf = _flat_bytes(data)
        flat = self._index_of(buf, layout)
        offs = flat[0::2].tolist()
        nbs = flat[1::2].tolist()
        inner = layout.inner
        fill = layout.fill
        region = layout.region

        def task(i: int) -> None:
            view = out[region(i)]
            off = offs[i]
            if off == SENTINEL:
                view[...] = fill
            else:
                inner.decode_into(buf[off:off + nbs[i]], view)

        _run(layout.n, task, spec.nbytes >= _PARALLEL_MIN_BYTES)
        return True

    # -- whole-shard encode ------------------------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> bytes | None:
        layout = self._layout(spec)
        arr = _contiguous(np.asarray(chunk, dtype=spec.dtype))
        if arr.shape != tuple(spec.shape):
            raise ValueError(f"sharding_indexed.encode: expected shape {tuple(spec.shape)}, received {arr.shape}")
        if _config_get("write_empty_chunks"):
            todo = list(range(layout.n))
        else:
            empty = layout.empty_flags(arr, layout.chunk_shape)
            todo = np.flatnonzero(empty == 0).tolist()
        if not todo:
            return None
        inner = layout.inner
        region = layout.region
        encoded: list[Any] = [None] * len(todo)

        def task(k: int) -> None:
            encoded[k] = inner.encode(_contiguous(arr[region(todo[k])]))

        _run(len(todo), task, spec.nbytes >= _PARALLEL_MIN_BYTES)
        nbytes = np.full(layout.n, SENTINEL, np.uint64)
        pieces = []
        for i, e in zip(todo, encoded):
            if e is not None:  # a nested shard may still turn out empty
                e = _flat_bytes(e)
                nbytes[i] = len(e)
                pieces.append(e)
        if not pieces:
            return None
        return self._assemble_simple(layout, nbytes, pieces)

    def _assemble_simple(self, layout: _Layout, nbytes: np.ndarray, pieces: list[Any]) -> bytes:
        start = self.index_location == "start"
        flat = np.empty(2 * layout.n, np.uint64)
        K.build_index(nbytes, layout.index_size if start else 0, flat)
        index = layout.encode_index(flat)
        # one allocation, one copy per piece
        return b"".join([index, *pieces] if start else [*pieces, index])

    # -- partial reads -----------------------------------------------------------------------
    def _cache_key(self, getter: Any, layout: _Layout) -> Any:
        return (getter.cache_id, layout.index_size, self.index_location, layout.n)

    def _drop_index(self, getter: Any, layout: _Layout) -> None:
        if getattr(getter, "cache_id", None) is None:
            return
        ck = self._cache_key(getter, layout)
        with _INDEX_CACHE_LOCK:
            old = _INDEX_CACHE.pop(ck, None)
            if old is not None:
                _INDEX_CACHE_BYTES[0] -= old[1].nbytes

    def _fetch_index(self, getter: ByteGetter, layout: _Layout, fresh: bool = False) -> tuple[np.ndarray | None, Any]:
        """``(validated index or None if the shard does not exist, version)``.

        ``version`` is None, or the version (ETag) of the object the index came from:
        then every data read must be conditional on it (:meth:`_read_ranges`).

        * stores with a cheap ``version()`` (LocalStore's (inode, size, mtime),
          MemoryStore's value identity): a cache hit costs one stat instead of a range
          read, checksum and validation; any rewrite changes the token.
        * stores with conditional reads (object stores, ``conditional_reads``): the
          index is cached under the ETag its GET returned, and a hit is checked by the
          data request itself (``If-Match``), so a point read costs ONE request.
          ``fresh``: skip the cache (the cached index was found stale).

        ``zarrcy.config(shard_index_cache=0)`` turns the cache off."""
        use_cache = bool(_config_get("shard_index_cache")) and getattr(getter, "cache_id", None) is not None
        if getattr(getter, "conditional_reads", False):
            ck = self._cache_key(getter, layout) if use_cache else None
            if ck is not None and not fresh:
                hit = _INDEX_CACHE.get(ck)
                if hit is not None:
                    return hit[1], hit[0]
            raw, etag = getter.get_versioned(self._index_request(layout))  # type: ignore[attr-defined]
            flat = self._parse_index(raw, layout)
            if flat is None or etag is None:
                # missing, or a server without (strong) ETags: no cache, unconditional
                # data reads -- two requests per read, as without the cache
                if ck is not None:
                    self._drop_index(getter, layout)
                return flat, None
            if ck is not None:
                _index_cache_put(ck, etag, flat)
            return flat, etag
        version = getattr(getter, "version", None)
        ck = None
        if version is not None and use_cache:
            token = version()
            if token is None:
                return self._read_index(getter, layout), None
            ck = self._cache_key(getter, layout)
            hit = _INDEX_CACHE.get(ck)
            if hit is not None and (hit[0] is token or (type(token) is tuple and hit[0] == token)):
                return hit[1], None
        flat = self._read_index(getter, layout)
        if ck is not None and flat is not None:
            _index_cache_put(ck, token, flat)
        return flat, None

    def _index_request(self, layout: _Layout) -> Any:
        isz = layout.index_size
        return RangeRequest(0, isz) if self.index_location == "start" else SuffixRequest(isz)

    def _read_index(self, getter: ByteGetter, layout: _Layout) -> np.ndarray | None:
        return self._parse_index(getter.get(self._index_request(layout)), layout)

    def _parse_index(self, raw: Any, layout: _Layout) -> np.ndarray | None:
        isz = layout.index_size
        if raw is None:
            return None
        raw = _flat_bytes(raw)
        if len(raw) < isz:
            raise CorruptChunkError(f"shard is {len(raw)} bytes, shorter than its index ({isz} bytes)")
        flat = layout.decode_index(raw)
        layout.validate(flat, None, self.index_location == "start")
        flat.flags.writeable = False  # shared through the cache
        return flat

    @staticmethod
    def _read_ranges(getter: ByteGetter, ranges: list[RangeRequest], version: Any) -> list[Any]:
        """``getter.get_ranges``, conditional on ``version`` when it is not None: bytes of
        one object version are never combined with the index of another (raises
        :class:`_Stale` when the shard is no longer that version)."""
        if version is None:
            return getter.get_ranges(ranges)
        got = getter.get_ranges_if_version(ranges, version)  # type: ignore[attr-defined]
        if got is None:
            raise _Stale
        return got

    def _with_index(self, getter: ByteGetter, layout: _Layout, body: Callable[[Any, Any], Any]) -> Any:
        """``body(index, version)``; when a conditional data read finds the shard
        changed (:class:`_Stale`), drop the cached index, re-read it and run ``body``
        again -- at most ``_STALE_RETRIES`` times, then StoreError."""
        fresh = False
        for _ in range(_STALE_RETRIES + 1):
            flat, version = self._fetch_index(getter, layout, fresh)
            try:
                return body(flat, version)
            except _Stale:
                self._drop_index(getter, layout)
                fresh = True
        where = getattr(getter, "cache_id", None)
        where = f"{where[0]}/{where[1]}: " if isinstance(where, tuple) else ""
        raise StoreError(
            f"{where}the shard changed between its index read and its data read "
            f"{_STALE_RETRIES + 1} times in a row; giving up (no consistent version to read)"
        )

    def read_point(self, getter: ByteGetter, local: Sequence[int], spec: ArraySpec) -> Any:
        """One element at in-shard coordinates ``local`` (in bounds): the index (cached),
        one range read of its inner chunk, a decode into a per-thread scratch chunk."""
        layout = self._layout(spec)
        return self._with_index(getter, layout, lambda flat, version: self._point(getter, layout, local, flat, version))

    def _point(self, getter: ByteGetter, layout: _Layout, local: Sequence[int], flat: Any, version: Any) -> Any:
        if flat is None:
            return layout.fill_scalar
        lin = 0
        rel = []
        for x, c, g in zip(local, layout.chunk_shape, layout.cps):
            q = x // c
            lin = lin * g + q
            rel.append(x - q * c)
        off = int(flat[2 * lin])
        nb = int(flat[2 * lin + 1])
        if off == SENTINEL:
            return layout.fill_scalar
        _check_inner_sizes(layout, np.array([lin]), np.array([nb], np.uint64))
        (raw,) = self._read_ranges(getter, [RangeRequest(off, nb)], version)
        if raw is None:
            raise CorruptChunkError("shard disappeared while its inner chunks were read")
        if len(raw) < nb:
            raise CorruptChunkError(
                f"{layout.chunk_name(lin)}: points past the end of the shard "
                f"(offset={off}, nbytes={nb}, shard ends at {off + len(raw)}; truncated?)"
            )
        scratch = _scratch(layout.inner_spec)
        layout.inner.decode_into(raw, scratch)
        value = scratch[tuple(rel)]
        return value.copy() if isinstance(value, np.generic) else value  # str/bytes elements: immutable

    def _fetch_ranges(
        self, getter: ByteGetter, layout: _Layout, which: np.ndarray, offs: np.ndarray, nbs: np.ndarray,
        version: Any = None,
    ) -> tuple[list[memoryview], np.ndarray, np.ndarray]:
        """Read the bytes of inner chunks ``which`` with one coalesced ``get_ranges`` call.

        Returns (group buffers, group of each chunk, group start offsets).
        """
        m = which.size
        if m:
            _check_inner_sizes(layout, which, nbs)
        g_of = np.zeros(m, np.int64)
        if m == 1:
            ng = 1
            gs = offs.astype(np.uint64)
            ge = gs + nbs
        else:
            order = np.argsort(offs, kind="stable").astype(np.int64)
            gs = np.empty(m, np.uint64)
            ge = np.empty(m, np.uint64)
            ng = K.coalesce(
                offs, nbs, order, int(_config_get("coalesce_gap")), int(_config_get("coalesce_max")), g_of, gs, ge
            )
        starts = gs[:ng].tolist()
        stops = ge[:ng].tolist()
        got = self._read_ranges(getter, [RangeRequest(a, b - a) for a, b in zip(starts, stops)], version) if ng else []
        bufs: list[memoryview] = []
        for g, (raw, a, b) in enumerate(zip(got, starts, stops)):
            if raw is None:
                raise CorruptChunkError("shard disappeared while its inner chunks were read")
            raw = _flat_bytes(raw)
            if len(raw) < b - a:
                avail = a + len(raw)
                members = np.flatnonzero(g_of == g)
                ends = offs[members] + nbs[members]
                bad = int(members[np.argmax(ends > avail)])
                i = int(which[bad])
                raise CorruptChunkError(
                    f"{layout.chunk_name(i)}: points past the end of the shard "
                    f"(offset={int(offs[bad])}, nbytes={int(nbs[bad])}, shard ends at {avail}; truncated?)"
                )
            bufs.append(raw)
        return bufs, g_of, gs[:ng]

    def decode_partial(self, getter: ByteGetter, selection: tuple, spec: ArraySpec) -> np.ndarray:
        layout = self._layout(spec)
        plan = _plan(selection, layout)
        out = np.empty(plan.out_shape, dtype=spec.dtype)
        if out.size == 0:
            return out
        return self._with_index(getter, layout, lambda flat, version: self._partial(getter, layout, plan, flat, version, out))

    def _partial(
        self, getter: ByteGetter, layout: _Layout, plan: _Plan, flat: Any, version: Any, out: np.ndarray
    ) -> np.ndarray:
        if flat is None:
            out[...] = layout.fill
            return out
        if plan.m == 1:  # the common small read: one inner chunk, one range request
            return self._decode_one(getter, layout, plan, flat, out, version)
        lin = plan.linear
        offs = flat[2 * lin]
        nbs = flat[2 * lin + 1]
        present = np.flatnonzero(offs != SENTINEL)
        src: list[Any] = [None] * plan.m
        if present.size:
            p_offs = offs[present]
            p_nbs = nbs[present]
            bufs, g_of, gs = self._fetch_ranges(getter, layout, lin[present], p_offs, p_nbs, version)
            rel = (p_offs - gs[g_of]).tolist()
            for k, g, r, nb in zip(present.tolist(), g_of.tolist(), rel, p_nbs.tolist()):
                src[k] = bufs[g][r:r + nb]
        inner = layout.inner
        fill = layout.fill
        full = plan.full.tolist()
        use_ix = plan.use_ix

        def task(k: int) -> None:
            osel = plan.out_sel(k)
            data = src[k]
            if data is None:
                out[osel] = fill
            elif full[k] and not use_ix and all(isinstance(s, slice) for s in osel):
                inner.decode_into(data, out[osel])
            else:  # partly covered: decode into this thread's scratch chunk, copy the part
                scratch = _scratch(layout.inner_spec)
                inner.decode_into(data, scratch)
                out[osel] = scratch[plan.chunk_sel(k)]

        _run(plan.m, task, present.size * layout.inner_spec.nbytes >= _PARALLEL_MIN_BYTES)
        return out

    def _decode_one(
        self, getter: ByteGetter, layout: _Layout, plan: _Plan, flat: np.ndarray, out: np.ndarray,
        version: Any = None,
    ) -> np.ndarray:
        i = int(plan.linear[0])
        off = int(flat[2 * i])
        nb = int(flat[2 * i + 1])
        osel = plan.out_sel(0)
        if off == SENTINEL:
            out[...] = layout.fill
            return out
        _check_inner_sizes(layout, plan.linear[:1], np.array([nb], np.uint64))
        (raw,) = self._read_ranges(getter, [RangeRequest(off, nb)], version)
        if raw is None:
            raise CorruptChunkError("shard disappeared while its inner chunks were read")
        raw = _flat_bytes(raw)
        if len(raw) < nb:
            raise CorruptChunkError(
                f"{layout.chunk_name(i)}: points past the end of the shard "
                f"(offset={off}, nbytes={nb}, shard ends at {off + len(raw)}; truncated?)"
            )
        if bool(plan.full[0]) and not plan.use_ix and all(isinstance(s, slice) for s in osel):
            layout.inner.decode_into(raw, out[osel])
        else:
            out[osel] = layout.inner.decode(raw)[plan.chunk_sel(0)]
        return out

    # -- partial writes ----------------------------------------------------------------------
    def _merge_touched(
        self, layout: _Layout, plan: _Plan, value: np.ndarray, spec: ArraySpec,
        old_bytes: Callable[[int], Any],
    ) -> list[memoryview | None]:
        """Encoded bytes of every touched inner chunk after the write (None: now empty).

        ``old_bytes(i)`` gives the stored bytes of inner chunk ``i`` (None if it is not
        stored); it is only called for chunks the selection covers partially.
        """
        inner = layout.inner
        cs = layout.chunk_shape
        full = plan.full.tolist()
        lin_l = plan.linear.tolist()
        new_bytes: list[memoryview | None] = [None] * plan.m
        keep_empty = bool(_config_get("write_empty_chunks"))

        def task(k: int) -> None:
            osel = plan.out_sel(k)
            if full[k] and not plan.use_ix:
                chunk = _contiguous(value[osel]).reshape(cs)
            else:
                old = old_bytes(lin_l[k])
                if old is not None:
                    chunk = np.array(inner.decode(old))
                else:
                    chunk = np.full(cs, layout.fill, dtype=spec.dtype)
                chunk[plan.chunk_sel(k)] = value[osel]
            if not keep_empty and layout.chunk_is_empty(chunk):
                return
            enc = inner.encode(chunk)
            new_bytes[k] = None if enc is None else _flat_bytes(enc)

        _run(plan.m, task, plan.m * layout.inner_spec.nbytes >= _PARALLEL_MIN_BYTES)
        return new_bytes

    def encode_partial(
        self, setter: ByteSetter, selection: tuple, value: Any, spec: ArraySpec, *,
        write_strategy: WriteStrategy | None = None,
    ) -> None:
        """Write ``value`` into ``selection`` of the stored shard.

        Default strategy ``"rewrite"``: reads the index and, in one coalesced range read,
        the encoded bytes of every stored inner chunk that survives (untouched ones are
        copied verbatim, partially covered ones are decoded and merged).  Only touched
        inner chunks are encoded.  The new shard replaces the old one with one
        ``setter.set`` (atomic), or ``setter.delete()`` when nothing is left.

        ``write_strategy="append"`` (or ``zarrcy.config(shard_write_strategy="append")``):
        see :meth:`_append`; falls back to ``"rewrite"`` where it does not apply.
        """
        layout = self._layout(spec)
        plan = _plan(selection, layout)
        value = np.broadcast_to(np.asarray(value, dtype=spec.dtype), plan.out_shape)
        if plan.m == 0:
            return
        try:
            self._with_index(
                setter, layout,
                lambda flat, version: self._encode_partial(setter, layout, plan, value, spec, write_strategy, flat, version),
            )
        finally:
            self._drop_index(setter, layout)  # the shard was (or may have been) rewritten

    def _encode_partial(
        self, setter: ByteSetter, layout: _Layout, plan: _Plan, value: np.ndarray, spec: ArraySpec,
        write_strategy: WriteStrategy | None, flat: Any, version: Any,
    ) -> None:
        n = layout.n
        existed = flat is not None
        if flat is None:
            flat = np.full(2 * n, SENTINEL, np.uint64)
        strategy = write_strategy or _config_get("shard_write_strategy")
        if strategy not in ("rewrite", "append"):
            raise ValueError(expected("shard_write_strategy", "'rewrite' or 'append'", strategy))
        if strategy == "append" and existed and self._append(setter, layout, plan, value, spec, flat, version):
            return
        old_off = flat[0::2]
        old_nb = flat[1::2]
        lin = plan.linear
        touched = np.zeros(n, bool)
        touched[lin] = True
        overwritten = np.zeros(n, bool)
        overwritten[lin[plan.full]] = True
        stored = old_off != SENTINEL
        need = np.flatnonzero(stored & ~overwritten)
        bufs: list[memoryview] = []
        g_of = np.empty(0, np.int64)
        gs = np.empty(0, np.uint64)
        if need.size:
            bufs, g_of, gs = self._fetch_ranges(setter, layout, need, old_off[need], old_nb[need], version)
        # where each needed old chunk's bytes are: (group, offset within the group)
        slot = np.full(n, -1, np.int64)
        slot[need] = np.arange(need.size)
        rel = old_off[need] - gs[g_of] if need.size else np.empty(0, np.uint64)

        def old_bytes(i: int) -> Any:
            s_ = slot[i]
            if s_ < 0:
                return None
            r = int(rel[s_])
            return bufs[g_of[s_]][r:r + int(old_nb[i])]

        new_bytes = self._merge_touched(layout, plan, value, spec, old_bytes)
        lin_l = lin.tolist()

        # sizes of the new shard, C order: kept old chunks + re-encoded touched ones
        keep = stored & ~touched
        new_nb = np.full(n, SENTINEL, np.uint64)
        new_nb[keep] = old_nb[keep]
        for k, b in enumerate(new_bytes):
            if b is not None:
                new_nb[lin_l[k]] = len(b)
        if not (new_nb != SENTINEL).any():
            if existed:
                setter.delete()
            return
        start = self.index_location == "start"
        base = layout.index_size if start else 0
        new_flat = np.empty(2 * n, np.uint64)
        end = K.build_index(new_nb, base, new_flat)
        total = end + (0 if start else layout.index_size)
        out = bytearray(total)
        dst = np.frombuffer(out, np.uint8)
        new_off = new_flat[0::2]
        # kept chunks: one kernel call per coalesced group
        kept = np.flatnonzero(keep)
        if kept.size:
            kept_slot = slot[kept]
            kept_group = g_of[kept_slot]
            for g in np.unique(kept_group).tolist():
                sel = kept[kept_group == g]
                bad = K.copy_ranges(
                    bufs[g], rel[slot[sel]].astype(np.uint64), old_nb[sel].astype(np.uint64),
                    dst, new_off[sel].astype(np.uint64),
                )
                if bad != -1:  # pragma: no cover - ranges were validated above
                    raise CorruptChunkError(f"{layout.chunk_name(int(sel[bad]))}: bytes out of range")
        mv = memoryview(out)
        for k, b in enumerate(new_bytes):
            if b is not None:
                o = int(new_off[lin_l[k]])
                mv[o:o + len(b)] = b
        index = layout.encode_index(new_flat)
        if start:
            mv[:layout.index_size] = index
        else:
            mv[total - layout.index_size:] = index
        setter.set(out)

    def _append(
        self, setter: Any, layout: _Layout, plan: _Plan, value: np.ndarray, spec: ArraySpec, flat: np.ndarray,
        version: Any = None,
    ) -> bool:
        """Append-only update of an existing shard; False if the rewrite path must run.

        Applies to an index protected by ``crc32c`` on a store with partial writes
        (``setter.set_partial``).  Reads only the index, the partially covered inner
        chunks and the shard's tail (to learn its size).  The re-encoded touched inner
        chunks are appended at the old end of the object; replaced chunks (and, for an
        ``end`` index, the old index) become dead space.  When dead space would exceed
        ``shard_append_dead_ratio`` of the object, returns False so the caller rewrites
        (compacts) the shard.

        Crash / concurrency behaviour (partial writes are NOT atomic):

        * ``end`` index: ONE partial write of ``new chunks + new index`` at the old end.
          Before it lands readers see the old shard.  A torn write (crash mid-write, or a
          reader racing the writer) leaves the object's last ``index_size`` bytes as a mix
          of chunk and index bytes (or old dead bytes): the index's crc32c fails and
          readers raise CorruptChunkError ("shard index: crc32c checksum mismatch").  A
          torn shard is detected, never misread (up to crc32c's 2^-32 collision chance).
          The previous index is still inside the object but is not recovered
          automatically; a full write of the shard repairs it.
        * ``start`` index: first the new chunks are appended, then the index is
          overwritten in place.  A crash before the second write leaves the old index,
          which still describes the old (intact) chunks: readers see the old shard plus
          unreferenced bytes at the end.  A crash during the index write tears the index:
          crc32c mismatch, CorruptChunkError, as above.
        """
        if not getattr(setter, "supports_partial_writes", False):
            return False
        if not hasattr(setter, "set_partial") or not layout.has_crc:
            return False
        n = layout.n
        isz = layout.index_size
        old_off = flat[0::2]
        old_nb = flat[1::2]
        stored = old_off != SENTINEL
        lin = plan.linear
        partial = lin[~plan.full]
        need = partial[stored[partial]]
        bufs: list[memoryview] = []
        g_of = np.empty(0, np.int64)
        gs = np.empty(0, np.uint64)
        if need.size:
            bufs, g_of, gs = self._fetch_ranges(setter, layout, need, old_off[need], old_nb[need], version)
        slot = {int(i): k for k, i in enumerate(need.tolist())}

        def old_bytes(i: int) -> Any:
            k = slot.get(i)
            if k is None:
                return None
            r = int(old_off[i] - gs[g_of[k]])
            return bufs[g_of[k]][r:r + int(old_nb[i])]

        # the object's size: everything after the last stored chunk is index / dead space
        live_end = int((old_off[stored] + old_nb[stored]).max()) if stored.any() else 0
        if self.index_location == "start":
            live_end = max(live_end, isz)
        tail = setter.get(RangeRequest(live_end, None))
        if tail is None:
            raise CorruptChunkError("shard disappeared during an append write")
        size = live_end + len(_flat_bytes(tail))
        # now that the size is known, the index can be checked against it as well
        layout.validate(flat, size, self.index_location == "start")

        new_bytes = self._merge_touched(layout, plan, value, spec, old_bytes)
        new_flat = flat.copy()
        pos = size
        pieces: list[Any] = []
        for k, i in enumerate(lin.tolist()):
            b = new_bytes[k]
            if b is None:
                new_flat[2 * i] = new_flat[2 * i + 1] = SENTINEL
            else:
                new_flat[2 * i] = pos
                new_flat[2 * i + 1] = len(b)
                pos += len(b)
                pieces.append(b)
        live = new_flat[0::2] != SENTINEL
        if not live.any():
            setter.delete()
            return True
        start = self.index_location == "start"
        new_size = pos if start else pos + isz
        live_bytes = int(new_flat[1::2][live].sum())
        if new_size - live_bytes - isz > float(_config_get("shard_append_dead_ratio")) * new_size:
            return False  # compact: the caller rewrites the shard tightly
        index = layout.encode_index(new_flat)
        if start:
            if pieces:
                setter.set_partial(size, b"".join(pieces))
            setter.set_partial(0, index)  # only after the chunks it points to exist
        else:
            pieces.append(index)
            setter.set_partial(size, b"".join(pieces))
        return True
