"""zarr-python codec pipeline backed by zarrcy's codecs.

```python
import zarr, zarrcy.zarr_plugin   # importing registers the class (so does the entry point)
zarr.config.set({"codec_pipeline.path": "zarrcy.zarr_plugin.ZarrcyCodecPipeline"})
```

zarr-python keeps its stores and indexing; whole chunks are decoded and encoded by
zarrcy's pipeline on worker threads with the GIL released in the kernels.  Sharded
arrays on stores with synchronous IO (local, memory) are read and written by zarrcy's
own sharding codec: one index read, coalesced range reads of only the inner chunks
selected, parallel decode; a write re-encodes only the touched inner chunks and stores
the shard once.  Elsewhere (async-only stores, boolean-mask reads, orthogonal writes,
``write_empty_chunks=True``) zarr-python's sharding codec runs, with its inner chunks
again decoded/encoded by this class (it builds its inner pipeline from the configured
class).  Zarr v2 arrays (zarr-python's ``V2Codec``: numcodecs filters + compressor) run
through the chain zarrcy's own v2 arrays use (blosc, zstd, gzip natively; other
numcodecs codecs inside zarrcy's pipeline).

zarr-python's own ``BatchedCodecPipeline`` serves, for that call, whatever zarrcy must
not or cannot run, so enabling the plugin never makes an array unreadable: an unknown
codec or data type, variable-length object data, the pickle codec, codec classes other
than zarr-python's (a user's ``codecs.<name>`` configuration), a generic datetime64 in
non-native byte order (numpy copies those without swapping), and sharded *writes* whose
``subchunk_write_order`` zarrcy's writer does not produce ("colexicographic"; zarrcy
writes "morton" -- zarr-python's default -- and C order byte for byte as zarr-python).  Each reason is logged once per process on the
``zarrcy.zarr_plugin`` logger (a logging warning, never a ``warnings`` warning) and
counted: :func:`fallback_counts`.  zarr-python's per-array
``sharding_coalesce_max_gap_bytes`` / ``sharding_coalesce_max_bytes`` set zarrcy's
coalescing of inner-chunk reads (in the call's execution context).

Each call zarr-python makes (``read``, ``write``, ``decode_batch``, ``encode_batch``) is
an API entry point: it makes one :class:`zarrcy.execution.ExecContext` whose thread
budget is zarr-python's ``codec_pipeline.max_workers`` (default: the CPU count) and
runs its chunks through it -- one thread hop for the call, then the context's workers,
never more busy threads than that budget.

Uses zarr-python's codec-pipeline interface (``zarr.abc.codec.CodecPipeline``) via its
default implementation, overriding ``decode_batch``/``encode_batch`` and, for chains
without a partial codec, ``read``/``write``: all chunks of one call are fetched
concurrently, then decoded (straight into the output when a chunk is wholly selected)
or merged and encoded in a few worker-thread groups rather than one thread hop per
chunk -- that per-chunk hop costs more than decoding a small (inner) chunk.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import threading
from typing import Any, Callable, Iterable

import numpy as np
from zarr.core.codec_pipeline import BatchedCodecPipeline
from zarr.registry import register_pipeline

try:  # zarr-python internals the read/write fast paths reuse (3.4); without them: the default paths
    from zarr.abc.codec import GetResult
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest, _store_supports_sync_io
    from zarr.core.chunk_utils import _merge_chunk_array, chunk_is_empty, scatter_chunk
    from zarr.core.codec_pipeline import _resolve_max_workers
    from zarr.core.common import concurrent_map
    from zarr.core.config import config as zarr_config

    _FAST = True
except ImportError:  # pragma: no cover
    _FAST = False

from zarrcy.byte_access import ByteSetter
from zarrcy.byte_range import SuffixRequest, resolve
from zarrcy.codecs._base import ArraySpec
from zarrcy.config import override as _config_override
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.errors import UnknownExtensionError, ZarrcyError
from zarrcy.execution import ExecContext
from zarrcy.metadata.data_type import parse_data_type

__all__ = ["ZarrcyCodecPipeline", "fallback_counts", "reset_fallback_counts"]


_log = logging.getLogger("zarrcy.zarr_plugin")
_reported: set[str] = set()
_fallbacks: dict[str, int] = {}
_fallback_lock = threading.Lock()


def _fallback(reason: str) -> None:
    """Count one call that zarr-python's own pipeline serves, and log the reason the
    first time it occurs in this process (logging, not ``warnings``: a user's
    ``-W error`` must not turn a supported fallback into a failure)."""
    with _fallback_lock:
        _fallbacks[reason] = _fallbacks.get(reason, 0) + 1
        first = reason not in _reported
        _reported.add(reason)
    if first:
        _log.warning("zarrcy codec pipeline: %s; zarr-python's own pipeline handles it "
                     "(reported once per reason)", reason)


def fallback_counts() -> dict[str, int]:
    """Calls served by zarr-python's pipeline since the start (or the last reset), by reason."""
    with _fallback_lock:
        return dict(_fallbacks)


def reset_fallback_counts() -> None:
    with _fallback_lock:
        _fallbacks.clear()
        _reported.clear()


class _NoPipeline(Exception):
    """zarrcy cannot run this chain (the message is the reason)."""


def _zarrcy_spec(spec: Any, data_type: Any) -> ArraySpec:
    np_dtype = np.dtype(spec.dtype.to_native_dtype())
    if np_dtype.kind == "O":  # zarr-python's variable-length bytes: its own codec (its object chunks
        raise _NoPipeline("variable-length object data type")  # may hold 0-d arrays, not bytes)
    if np_dtype.fields is not None and data_type is not None and np_dtype != data_type.dtype:
        # zarr-python's records keep the byte order (and layout) of the user's fields; zarrcy's
        # codecs see native packed records: the chunks would be copied as bytes between the two
        raise _NoPipeline("record fields in non-native byte order or a padded layout")
    if np_dtype.byteorder not in "=|":  # (StringDType has no byte order to change)
        if np_dtype.kind in "Mm" and np.datetime_data(np_dtype)[0] == "generic":
            # numpy copies between byte orders of generic datetime64/timedelta64 without
            # swapping: zarr-python's non-native output buffers would get swapped values
            raise _NoPipeline("non-native byte order of a generic datetime64/timedelta64 (Zarr v2)")
        np_dtype = np_dtype.newbyteorder("=")
    if spec.fill_value is None:  # Zarr v2 "fill_value": null -- missing chunks are zarr-python's to fill
        fill = np.zeros((), dtype=np_dtype)[()]
    else:
        fill = np.asarray(spec.fill_value, dtype=np_dtype)[()]
    return ArraySpec(tuple(spec.shape), np_dtype, fill, data_type)


def _zarrcy_pipeline(codecs_json: str, spec: Any) -> CodecPipeline:
    """zarrcy's resolved pipeline for zarr-python codecs (as JSON) and chunk spec, or
    _NoPipeline (with the reason)."""
    try:
        data_type = parse_data_type(spec.dtype.to_json(zarr_format=3))
        return CodecPipeline.from_codecs(json.loads(codecs_json), _zarrcy_spec(spec, data_type))
    except (ZarrcyError, TypeError, ValueError, AttributeError, KeyError) as e:
        raise _NoPipeline(_reason(e)) from None


def _reason(e: BaseException) -> str:
    if isinstance(e, _NoPipeline):
        return str(e)
    if isinstance(e, UnknownExtensionError):
        return str(e).split(": ", 1)[-1]  # "expected a known codec, received 'x'": no array path
    return f"{type(e).__name__}: {e}"


def _zarrcy_pipeline_v2(codec: Any, spec: Any) -> CodecPipeline:
    """A Zarr v2 array (zarr-python's ``V2Codec``: numcodecs filters + compressor): the
    chain zarrcy's own v2 arrays use (zarrcy/v2/codecs.py): blosc, zstd and gzip run
    natively, other compressors and filters through numcodecs inside zarrcy's pipeline."""
    from zarrcy.v2.codecs import v2_codecs
    from zarrcy.v2.dtypes import parse_v2_dtype

    try:
        filters = [f.get_config() for f in (codec.filters or ())]
        comp = codec.compressor.get_config() if codec.compressor is not None else None
        if any(c.get("id") == "pickle" for c in [*filters, comp or {}]):
            raise _NoPipeline("the pickle codec (zarr-python guards its use)")
        dt_json = spec.dtype.to_json(zarr_format=2)
        data_type = parse_v2_dtype(dt_json["name"] if isinstance(dt_json, dict) else dt_json, filters=filters or None)
        if data_type.vlen is not None or data_type.stored_dtype.kind == "O":
            raise _NoPipeline("variable-length object data type (Zarr v2)")
        order = getattr(spec.config, "order", "C") or "C"
        chain = v2_codecs(data_type, order, filters or None, comp, len(spec.shape))
        return CodecPipeline.from_codecs(chain, _zarrcy_spec(spec, data_type.v3))
    except (ZarrcyError, TypeError, ValueError, AttributeError, KeyError) as e:
        raise _NoPipeline(_reason(e)) from None


class ZarrcyCodecPipeline(BatchedCodecPipeline):
    """``BatchedCodecPipeline`` whose chunk decode/encode runs through zarrcy."""

    def _json(self) -> str | None:
        cached = self.__dict__.get("_zarrcy_json", False)
        if cached is False:
            try:
                cached = json.dumps([c.to_dict() for c in self])
            except (TypeError, ValueError, AttributeError):
                cached = None
            object.__setattr__(self, "_zarrcy_json", cached)
        return cached

    def _v2_codec(self) -> Any:
        """zarr-python's ``V2Codec`` when this pipeline is a Zarr v2 array's, else None."""
        codecs = list(self)
        if len(codecs) == 1 and type(codecs[0]).__name__ == "V2Codec" and hasattr(codecs[0], "compressor"):
            return codecs[0]
        return None

    def _write_order(self, specs: list[Any]) -> str | None:
        """Why zarrcy must not write this chain's shards (None: it may).  zarr-python
        places a shard's inner chunks in its codec's ``subchunk_write_order`` (default
        "morton"); zarrcy's writer produces "morton" and "lexicographic" ("unordered" is
        C order in zarr-python too), so its shards are byte for byte zarr-python's.  Any
        other order ("colexicographic"): zarr-python writes those shards, unless at most
        one dimension of the shard holds more than one inner chunk (the orders agree)."""
        for c in self:
            order = getattr(c, "subchunk_write_order", None)
            if order is None or order in _ZARRCY_SUBCHUNK_ORDERS:
                continue
            inner = tuple(getattr(c, "chunk_shape", ()) or ())
            for spec in specs:
                shape = tuple(spec.shape)
                if len(inner) != len(shape) or sum(1 for n, k in zip(shape, inner) if -(-n // k) > 1) > 1:
                    return f"sharded writes with subchunk_write_order={order!r} (zarrcy writes morton or C order)"
        return None

    def _order_override(self) -> Any:
        """zarrcy's ``subchunk_write_order`` for this chain's shard writes (this thread)."""
        for c in self:
            order = getattr(c, "subchunk_write_order", None)
            if order in _ZARRCY_SUBCHUNK_ORDERS:
                return _config_override(subchunk_write_order=_ZARRCY_SUBCHUNK_ORDERS[order])
        return _config_override()

    def _pipelines(self, specs: list[Any], writing: bool = False) -> list[CodecPipeline] | None:
        if writing:
            why = self._write_order(specs)
            if why is not None:
                _fallback(why)
                return None
        custom = sorted({f"{type(c).__module__}.{type(c).__qualname__}" for c in self
                         if not type(c).__module__.startswith("zarr.")})
        if custom:  # a codec implementation the user configured (zarr.config "codecs.<name>"): it must run
            _fallback("codec classes other than zarr-python's own: " + ", ".join(custom))
            return None
        v2 = self._v2_codec()
        build: Callable[[Any], CodecPipeline]
        if v2 is not None:
            build = functools.partial(_zarrcy_pipeline_v2, v2)
        else:
            cj = self._json()
            if cj is None:
                _fallback("codecs without a JSON form: " + ", ".join(sorted({type(c).__name__ for c in self})))
                return None
            build = functools.partial(_zarrcy_pipeline, cj)
        # one resolved zarrcy pipeline per distinct chunk spec (zarr-python hands us one
        # spec per chunk; building a pipeline per chunk would cost more than decoding it)
        # (a pipeline, or the reason zarrcy cannot run this spec)
        cache: dict[Any, CodecPipeline | str] | None = self.__dict__.get("_zarrcy_cache")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_zarrcy_cache", cache)
        out: list[CodecPipeline] = []
        for spec in specs:
            try:
                key: Any = (tuple(spec.shape), repr(spec.dtype), repr(spec.fill_value),
                            getattr(spec.config, "order", "C"))
            except Exception:  # noqa: BLE001  (an exotic spec: no caching)
                key = None
            p = cache.get(key) if key is not None else None
            if p is None:
                try:
                    p = build(spec)
                except _NoPipeline as e:
                    p = str(e)
                if key is not None:
                    if len(cache) > 64:
                        cache.clear()
                    cache[key] = p
            if isinstance(p, str):
                _fallback(p)
                return None
            out.append(p)
        return out

    async def decode_batch(self, chunk_bytes_and_specs: Iterable[tuple[Any, Any]]) -> Iterable[Any]:
        items = list(chunk_bytes_and_specs)
        pipes = self._pipelines([s for _, s in items])
        if pipes is None:
            return await super().decode_batch(items)

        ctx = _context()

        def run() -> list[Any]:
            out: list[Any] = []
            for (buf, spec), pipe in zip(items, pipes):
                if buf is None:
                    out.append(None)
                    continue
                arr = pipe.decode(buf.as_numpy_array(), ctx)
                out.append(spec.prototype.nd_buffer.from_numpy_array(arr))
            return out

        return await asyncio.to_thread(run)

    async def encode_batch(self, chunk_arrays_and_specs: Iterable[tuple[Any, Any]]) -> Iterable[Any]:
        items = list(chunk_arrays_and_specs)
        pipes = self._pipelines([s for _, s in items], writing=True)
        if pipes is None:
            return await super().encode_batch(items)

        order = self._order_override
        ctx = _context()

        def run() -> list[Any]:
            out: list[Any] = []
            with order():
                for (nd, spec), pipe in zip(items, pipes):
                    if nd is None:
                        out.append(None)
                        continue
                    data = pipe.encode(_contiguous(nd.as_numpy_array()), ctx)
                    out.append(None if data is None else spec.prototype.buffer.from_bytes(bytes(data)))
            return out

        return await asyncio.to_thread(run)

    # -- whole read/write calls (zarr-python's Array, and the sharding codec's inner chunks)
    async def read(self, batch_info: Iterable[Any], out: Any, drop_axes: tuple[int, ...] = ()) -> Any:
        items = list(batch_info)
        if _FAST and items and self.supports_partial_decode:
            return await self._read_partial(items, out, drop_axes)
        pipes = None if not _FAST or not items else self._pipelines([it[1] for it in items])
        if pipes is None:
            return await super().read(items, out, drop_axes)
        bufs = await concurrent_map([(it[0], it[1].prototype) for it in items], _get,
                                    zarr_config.get("async.concurrency"))
        out_np = _numpy_view(out)
        ctx = _context()

        def one(i: int) -> Any:
            _, spec, chunk_sel, out_sel, _ = items[i]
            buf, pipe = bufs[i], pipes[i]
            if buf is None:
                return scatter_chunk(None, out, chunk_spec=spec, out_selection=out_sel, drop_axes=drop_axes)
            data = buf.as_numpy_array()
            if out_np is not None and not drop_axes and _whole(chunk_sel, pipe.spec.shape):
                target = _basic_view(out_np, out_sel, pipe.spec.shape)
                if target is not None:
                    pipe.decode_into(data, target, ctx)
                    return GetResult(status="present")
            arr = spec.prototype.nd_buffer.from_numpy_array(pipe.decode(data, ctx))
            return scatter_chunk(arr[chunk_sel], out, chunk_spec=spec, out_selection=out_sel, drop_axes=drop_axes)

        return tuple(await _in_groups(ctx, one, len(items), _nbytes(pipes)))

    async def _read_partial(self, items: list[Any], out: Any, drop_axes: tuple[int, ...]) -> Any:
        """Sharded arrays: zarrcy's sharding codec reads each shard's index and only the
        inner chunks selected (coalesced range reads through the store's synchronous IO),
        decoding them in parallel -- instead of zarr-python's per-inner-chunk coroutines."""
        pipes = self._pipelines([it[1] for it in items])
        boxes = [b for b in (_bounding_box(it[2], it[1].shape) for it in items) if b is not None]
        if (pipes is None or not all(p.supports_partial_decode for p in pipes) or len(boxes) != len(items)
                or not all(_store_supports_sync_io(getattr(it[0], "store", None)) for it in items)):
            return await super().read(items, out, drop_axes)

        ctx = _context()

        def one(i: int) -> Any:
            getter, spec, _, out_sel, _ = items[i]
            bbox, rel = boxes[i]
            sync = _SyncGetter(getter, spec.prototype)
            arr = pipes[i].decode_partial(sync, bbox, None, _coalescing(ctx, spec))
            if arr is None or sync.missing:
                return scatter_chunk(None, out, chunk_spec=spec, out_selection=out_sel, drop_axes=drop_axes)
            if rel is not None:
                arr = arr[rel]
            return scatter_chunk(spec.prototype.nd_buffer.from_numpy_array(np.asarray(arr)), out, chunk_spec=spec,
                                 out_selection=out_sel, drop_axes=drop_axes)

        work = sum(math.prod(b.stop - b.start for b in box[0]) * p.spec.dtype.itemsize
                   for box, p in zip(boxes, pipes))
        return tuple(await _in_groups(ctx, one, len(items), work if len(items) > 1 else 0))

    async def _write_partial(self, items: list[Any], value: Any, drop_axes: tuple[int, ...]) -> None:
        """Sharded arrays: zarrcy's sharding codec merges each shard's selection (untouched
        inner chunks copied byte for byte, touched ones encoded in parallel) and stores the
        shard with one synchronous set -- instead of zarr-python's per-inner-chunk path."""
        pipes = self._pipelines([it[1] for it in items], writing=True)
        boxes = [b for b in (_slice_box(it[2], it[1].shape) for it in items) if b is not None]
        if (pipes is None or not all(p.supports_partial_encode for p in pipes) or len(boxes) != len(items)
                or any(getattr(it[1].config, "write_empty_chunks", False) for it in items)
                or not all(_store_supports_sync_io(getattr(it[0], "store", None)) for it in items)):
            return await super().write(items, value, drop_axes)
        scalar = len(value.shape) == 0
        src = _native(value.as_numpy_array())
        ctx = _context()

        def one(i: int) -> None:
            setter, spec, _, out_sel, _ = items[i]
            box = boxes[i]
            shape = tuple(b.stop - b.start for b in box)
            piece = src if scalar else np.asarray(src[out_sel])
            if not scalar and piece.size == math.prod(shape):
                piece = piece.reshape(shape)  # dims dropped by integer selections come back
            # one read of the whole old shard (as zarr-python), not index + inner chunks:
            # the rewrite needs every untouched inner chunk's bytes anyway
            with self._order_override():
                pipes[i].encode_partial(_WholeGetter(setter, spec.prototype), box, piece, ctx)

        work = sum(math.prod(b.stop - b.start for b in box) * p.spec.dtype.itemsize
                   for box, p in zip(boxes, pipes))
        await _in_groups(ctx, one, len(items), work if len(items) > 1 else 0)
        return None

    async def write(self, batch_info: Iterable[Any], value: Any, drop_axes: tuple[int, ...] = ()) -> None:
        items = list(batch_info)
        if _FAST and items and self.supports_partial_encode:
            return await self._write_partial(items, value, drop_axes)
        pipes = None if not _FAST or not items else self._pipelines([it[1] for it in items], writing=True)
        if pipes is None:
            return await super().write(items, value, drop_axes)
        old = await concurrent_map([(None if it[4] else it[0], it[1].prototype) for it in items], _get,
                                   zarr_config.get("async.concurrency"))
        ctx = _context()

        def one(i: int) -> Any:
            _, spec, chunk_sel, out_sel, complete = items[i]
            pipe = pipes[i]
            existing = None
            if old[i] is not None:
                existing = spec.prototype.nd_buffer.from_numpy_array(pipe.decode(old[i].as_numpy_array(), ctx))
            merged = _merge_chunk_array(existing, value, out_sel, spec, chunk_sel, complete, drop_axes)
            if chunk_is_empty(merged, spec):
                return None
            with self._order_override():
                data = pipe.encode(_contiguous(merged.as_numpy_array()), ctx)
            return None if data is None else spec.prototype.buffer.from_bytes(bytes(data))

        encoded = await _in_groups(ctx, one, len(items), _nbytes(pipes))
        await concurrent_map([(it[0], b) for it, b in zip(items, encoded)], _put,
                             zarr_config.get("async.concurrency"))
        return None


#: zarr-python ``subchunk_write_order`` values whose shard layout zarrcy's writer
#: produces -> zarrcy's name ("unordered" is zarr-python's C order too)
_ZARRCY_SUBCHUNK_ORDERS = {"morton": "morton", "lexicographic": "lexicographic", "unordered": "lexicographic"}


def _context() -> ExecContext:
    """The execution context of one call zarr-python makes: its thread budget is
    zarr-python's ``codec_pipeline.max_workers``."""
    return ExecContext.for_call(threads=_resolve_max_workers() if _FAST else None)


def _coalescing(ctx: ExecContext, spec: Any) -> ExecContext:
    """``ctx`` with zarr-python's per-array ``sharding_coalesce_max_gap_bytes`` /
    ``_max_bytes`` as the coalescing of this array's shard reads (same budget)."""
    cfg = spec.config
    gap = getattr(cfg, "sharding_coalesce_max_gap_bytes", None)
    most = getattr(cfg, "sharding_coalesce_max_bytes", None)
    return ctx.with_coalescing(None if gap is None else int(gap), None if most is None else int(most))


class _SyncGetter(ByteSetter):
    """zarrcy's ``ByteGetter`` over a zarr-python ``StorePath`` with synchronous IO."""

    __slots__ = ("path", "prototype", "missing")

    def __init__(self, path: Any, prototype: Any) -> None:
        self.path = path
        self.prototype = prototype
        self.missing = False

    def get(self, byte_range: Any = None) -> Any:
        req: RangeByteRequest | OffsetByteRequest | SuffixByteRequest | None = None
        if byte_range is not None:
            if isinstance(byte_range, SuffixRequest):
                req = SuffixByteRequest(int(byte_range.length))
            elif byte_range.length is None:
                req = OffsetByteRequest(int(byte_range.offset))
            else:
                req = RangeByteRequest(int(byte_range.offset), int(byte_range.offset) + int(byte_range.length))
        buf = self.path.get_sync(prototype=self.prototype, byte_range=req)
        if buf is None:
            self.missing = True
            return None
        return buf.as_numpy_array()

    def get_ranges(self, byte_ranges: Any) -> list[Any]:
        return [self.get(r) for r in byte_ranges]

    def set(self, value: Any) -> None:
        self.path.set_sync(self.prototype.buffer.from_bytes(value))

    def delete(self) -> None:
        self.path.delete_sync()


class _WholeGetter(_SyncGetter):
    """A ``_SyncGetter`` that reads the whole object once and serves every range from it
    (partial shard writes: one read, as zarr-python's)."""

    __slots__ = ("_whole", "_loaded")

    def __init__(self, path: Any, prototype: Any) -> None:
        super().__init__(path, prototype)
        self._whole: Any = None
        self._loaded = False

    def get(self, byte_range: Any = None) -> Any:
        if not self._loaded:
            self._whole = super().get(None)
            self._loaded = True
        data = self._whole
        if data is None or byte_range is None:
            return data
        start, stop = resolve(byte_range, len(data))
        return data[start:stop]

    def set(self, value: Any) -> None:
        super().set(value)
        self._whole, self._loaded = None, False


def _slice_box(sel: Any, shape: tuple[int, ...]) -> tuple[slice, ...] | None:
    """A write selection of ints and step-1 slices as a box of slices; else None."""
    if not isinstance(sel, tuple) or len(sel) != len(shape):
        return None
    box = []
    for s, n in zip(sel, shape):
        if isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= int(s) < n:
            box.append(slice(int(s), int(s) + 1))
        elif isinstance(s, slice) and s.indices(n)[2] == 1:
            start, stop, _ = s.indices(n)
            box.append(slice(start, max(start, stop)))
        else:
            return None
    return tuple(box)


def _bounding_box(sel: Any, shape: tuple[int, ...]) -> tuple[tuple[slice, ...], Any] | None:
    """``sel`` (zarr-python's selection within one shard: ints, slices, integer arrays)
    as (bounding box of step-1 slices, selection relative to it or None when it is the
    whole box), so ``decoded_box[rel]`` equals ``shard[sel]`` with numpy's semantics;
    None for anything else (boolean masks, negative steps): the default path then."""
    if not isinstance(sel, tuple) or len(sel) != len(shape):
        return None
    box: list[slice] = []
    rel: list[Any] = []
    trivial = True
    for s, n in zip(sel, shape):
        if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            i = int(s) + n if s < 0 else int(s)
            if not 0 <= i < n:
                return None
            box.append(slice(i, i + 1))
            rel.append(0)
            trivial = False
        elif isinstance(s, slice):
            start, stop, step = s.indices(n)
            if step < 1:
                return None
            stop = max(start, stop)
            box.append(slice(start, stop))
            rel.append(slice(None) if step == 1 else slice(None, None, step))
            trivial = trivial and step == 1
        elif isinstance(s, np.ndarray) and s.dtype.kind in "iu" and s.size:
            lo, hi = int(s.min()), int(s.max())
            if lo < 0 or hi >= n:
                return None
            box.append(slice(lo, hi + 1))
            rel.append(s - lo)
            trivial = False
        else:
            return None
    return tuple(box), (None if trivial else tuple(rel))


def _contiguous(x: Any) -> np.ndarray:
    """C-contiguous, same shape (np.ascontiguousarray turns a 0-d array into 1-d)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else np.array(x, order="C")


def _native(x: np.ndarray) -> np.ndarray:
    """``x`` in native byte order.  (numpy's astype between byte orders of a *generic*
    datetime64/timedelta64 -- "M8" without unit -- keeps the input's byte order, so
    values given big-endian would be stored swapped.)"""
    if x.dtype.byteorder in "<>" and not x.dtype.isnative:
        return x.byteswap().view(x.dtype.newbyteorder("="))
    return x


def _nbytes(pipes: list[CodecPipeline]) -> int:
    return sum(math.prod(p.spec.shape) * p.spec.dtype.itemsize for p in pipes)


async def _get(getter: Any, prototype: Any) -> Any:
    return None if getter is None else await getter.get(prototype=prototype)


async def _put(setter: Any, data: Any) -> None:
    if data is None:
        await setter.delete()
    else:
        await setter.set(data)


async def _in_groups(ctx: ExecContext, fn: Any, n: int, total_bytes: int) -> list[Any]:
    """``[fn(i) for i in range(n)]``: one thread hop for the call, then the context's
    workers (``ExecContext.map``: within its thread budget).  Too little decoded data in
    all to pay for a hop (a point read): inline, in the event loop's thread."""
    results: list[Any] = [None] * n

    def one(i: int) -> None:
        results[i] = fn(i)

    if not ctx.parallel_worth(total_bytes):
        for i in range(n):
            one(i)
        return results
    await asyncio.to_thread(ctx.map, one, range(n))
    return results


def _numpy_view(out: Any) -> np.ndarray | None:
    try:
        arr = out.as_ndarray_like()  # never a copy (as_numpy_array may copy device memory)
    except Exception:  # noqa: BLE001  (an unusual buffer: generic path)
        return None
    return arr if isinstance(arr, np.ndarray) and arr.flags.writeable else None


def _whole(sel: Any, shape: tuple[int, ...]) -> bool:
    """``sel`` selects the whole chunk, in order (slices 0:n:1)."""
    if not isinstance(sel, tuple) or len(sel) != len(shape):
        return False
    for s, n in zip(sel, shape):
        if not isinstance(s, slice) or s.indices(n) != (0, n, 1):
            return False
    return True


def _basic_view(out: np.ndarray, sel: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """``out[sel]`` as a view of chunk shape, or None when ``sel`` is not basic indexing."""
    if not isinstance(sel, tuple) or not all(isinstance(s, slice) for s in sel):
        return None
    view = out[sel + (Ellipsis,)]  # always a view, even when 0-d (out[()] would be a scalar)
    return view if tuple(view.shape) == tuple(shape) else None


register_pipeline(ZarrcyCodecPipeline)
