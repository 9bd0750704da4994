"""The codec pipeline: one chain ``array->array* , array->bytes , bytes->bytes*``
resolved once per array (v3-core.rst "Chunk encoding", "Determination of encoded
representations", "Encoding procedure", "Decoding procedure").

Per-chunk work touches no metadata.  Fast paths decided at construction:

* decode straight into the caller's array: transposes become views of ``out``;
  with the ``bytes`` codec and a C-contiguous target, the innermost compressor
  (gzip, zstd, blosc) writes the decoded bytes directly into ``out``'s memory
  (a big-endian ``bytes`` codec then swaps in place);
* known decoded sizes (``bytes`` + fixed-size codecs) are passed to each
  bytes->bytes codec, which must produce exactly that many bytes;
* an upper bound on the encoded size (when every codec has one) rejects absurdly
  large stored values before any decoding.

A pipeline holds no per-call state and is used by many threads at once.  The call's
:class:`~zarrcy.execution.ExecContext` is an argument of every method (``ctx``); it
reaches the array->bytes codec when that codec declares ``uses_context`` (sharding:
its inner chunks are spread over the call's threads) and every partial method.  A
method called without one (a user calling the pipeline directly) is an entry point and
makes its own.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from zarrcy.codecs._base import (
    ArrayArrayCodec,
    ArrayBytesCodec,
    ArraySpec,
    ByteGetter,
    ByteSetter,
    BytesBytesCodec,
    Codec,
    Selection,
    assign,
    fill_key,
    select,
    selection_shape,
)
from zarrcy.codecs import _native, _region
from zarrcy.codecs.registry import resolve_codecs
from zarrcy.config import at_fork_reset
from zarrcy.errors import CorruptChunkError, expected
from zarrcy.execution import ExecContext

__all__ = ["CodecPipeline"]


_CACHE: dict[Any, "CodecPipeline"] = {}
_CACHE_LOCK = threading.Lock()


@at_fork_reset
def _reset_cache_after_fork() -> None:
    """A forked child starts with a fresh lock (one held by another parent thread at the
    fork would never be released there); the cached pipelines hold no thread state."""
    global _CACHE_LOCK
    _CACHE_LOCK = threading.Lock()


def _json(codec: Codec) -> str:
    """A codec's configuration as comparable text (NaN and -0.0 kept apart)."""
    return json.dumps(codec.to_dict(), sort_keys=True)


class CodecPipeline:
    """A resolved codec chain for chunks of ``spec`` (see module docstring)."""

    codecs: tuple[Codec, ...]
    array_array: tuple[ArrayArrayCodec, ...]
    array_bytes: ArrayBytesCodec
    bytes_bytes: tuple[BytesBytesCodec, ...]
    spec: ArraySpec

    def __init__(self, codecs: Iterable[Any], spec: ArraySpec, path: str = "codecs") -> None:
        resolved, specs = resolve_codecs(codecs, spec, path)
        self.codecs = tuple(resolved)
        self.spec = spec
        n_aa = sum(isinstance(c, ArrayArrayCodec) for c in resolved)
        # resolve_codecs checked the order: array->array*, array->bytes, bytes->bytes*
        self.array_array = tuple(c for c in resolved[:n_aa] if isinstance(c, ArrayArrayCodec))
        self._aa_specs = tuple(specs[:n_aa])
        # execution chain: scale_offset immediately followed by cast_value runs fused (one pass)
        from zarrcy.codecs.scale_offset import fuse_pairs

        self._aa_exec = fuse_pairs(self.array_array, self._aa_specs)
        ab = resolved[n_aa]
        assert isinstance(ab, ArrayBytesCodec)
        self.array_bytes = ab
        self._ab_ctx = ab.uses_context  # declared: decode/encode take the call's context
        self._ab_spec = specs[n_aa]
        self.bytes_bytes = tuple(c for c in resolved[n_aa + 1 :] if isinstance(c, BytesBytesCodec))

        # decoded size of each bytes->bytes codec (None = variable), innermost first
        n_elements = math.prod(self._ab_spec.shape)
        size = self.array_bytes.compute_encoded_size(n_elements, self._ab_spec)
        self._ab_size = size
        sizes: list[int | None] = []
        bound = size
        for c in self.bytes_bytes:
            sizes.append(size)
            size = c.compute_encoded_size(size, self._ab_spec) if size is not None else None
            bound = c.max_encoded_size(bound) if bound is not None else None
        self._bb_sizes = tuple(sizes)
        self._encoded_size = size
        self._max_encoded = bound

        from zarrcy.codecs.bytes import BytesCodec

        self._zero_copy = (
            isinstance(self.array_bytes, BytesCodec)
            and not self.array_array
            and not self.bytes_bytes
            and not self.array_bytes._swaps(self._ab_spec.dtype)
        )
        # every array->array codec can give a view of `out` in its encoded form
        self._aa_views = all(c.supports_encoded_view for c in self.array_array)
        # the innermost compressor can write the array's bytes into `out` directly
        self._direct = (
            isinstance(self.array_bytes, BytesCodec)
            and bool(self.bytes_bytes)
            and self._bb_sizes[0] is not None
        )
        # partial reads/writes pass through the array->array codecs (transpose) to an
        # array->bytes codec that reads less than the whole value (sharding)
        full = None
        ok = not self.bytes_bytes
        for aa, s in zip(self.array_array, self._aa_specs):
            if not ok:
                break
            full = tuple(slice(0, n, 1) for n in s.shape)
            ok = aa.encode_selection(full, s) is not None
        self._partial_ok = ok
        # the native engine's view of the chain (issue 21), from the codecs' declared
        # capabilities: the bytes->bytes steps as one engine chain, and the whole chain
        # as the per-inner-chunk kernels' plan (None: Python path)
        self.native_chain = _native.chain_of([c.native_step(self._ab_spec) for c in self.bytes_bytes])
        self.kernel_plan = self._kernel_plan()
        # decode_into(data, strided view) without a chunk-sized copy: the array->bytes
        # codec alone, and it says so (sharding's kernel)
        # a plain chunk with a kernel plan: decoded into a strided region (or through its
        # transpose) in one native call (codecs/_region.py)
        self._region = (
            _region.RegionDecoder(self.kernel_plan, self.spec.shape, self.spec.dtype)
            if self.kernel_plan is not None and self.spec.shape and math.prod(self.spec.shape) > 0 else None
        )
        self.decodes_into_strided = self._region is not None or (
            not self.array_array and not self.bytes_bytes and self.array_bytes.decodes_into_strided(self._ab_spec)
        )

    def _kernel_plan(self) -> _native.KernelPlan | None:
        """``transpose``? , ``bytes`` , [compressor] , [crc32c] over a fixed-size number type."""
        dt = self.spec.dtype
        if self.native_chain is None or len(self.array_array) > 1 or dt.hasobject or dt.fields is not None:
            return None
        order = None
        if self.array_array:
            order = self.array_array[0].native_order(self._aa_specs[0])
            if order is None:
                return None
            if tuple(order) == tuple(range(len(order))):
                order = None
        swap = self.array_bytes.native_swap(self._ab_spec)
        if swap is None:
            return None
        return _native.KernelPlan(None if order is None else tuple(order), swap, self.native_chain)

    @classmethod
    def from_codecs(cls, codecs: Iterable[Any], spec: ArraySpec, path: str = "codecs") -> CodecPipeline:
        """Parse (codec objects or JSON), order-check, validate and resolve ``codecs``.

        Pipelines are immutable, so one is shared by every array with the same (codec
        objects, chunk spec): opening many alike arrays resolves the chain once."""
        if isinstance(codecs, CodecPipeline):
            codecs = codecs.codecs
        key = None
        if isinstance(codecs, tuple) and all(isinstance(c, Codec) for c in codecs):
            # keyed by the codecs' JSON, not object equality: -0.0 == 0.0 and NaN
            # payloads would make distinct configurations compare equal
            try:
                cj = json.dumps([c.to_dict() for c in codecs], sort_keys=True)
                dj = json.dumps(spec.data_type.to_json()) if spec.data_type is not None else spec.dtype.str
                key = (cj, spec.shape, spec.dtype.str, fill_key(spec), dj)
            except (TypeError, ValueError, AttributeError):  # not JSON-able: no caching
                key = None
            hit = _CACHE.get(key) if key is not None else None
            if hit is not None:
                return hit
        pipe = cls(codecs, spec, path)
        if key is not None:
            with _CACHE_LOCK:
                if len(_CACHE) >= 512:
                    _CACHE.pop(next(iter(_CACHE)))
                _CACHE[key] = pipe
        return pipe

    def __repr__(self) -> str:
        return f"CodecPipeline({[c.to_dict() for c in self.codecs]!r}, shape={self.spec.shape}, dtype={self.spec.dtype})"

    def to_json(self) -> list[Any]:
        return [c.to_dict() for c in self.codecs]

    # -- values encoded by the caller ---------------------------------------------------
    def encoded_stage(self, leading: Sequence[Codec]) -> tuple[tuple[Codec, ...], ArraySpec] | None:
        """``(the remaining codecs, their input spec)`` for a writer that applies
        ``leading`` itself: the chain's first array->array codecs (the same
        configurations), each declared :attr:`~ArrayArrayCodec.elementwise`.  The spec
        is theirs after ``leading`` (v3-core.rst "Determination of encoded
        representations": dtype and fill value as those codecs encode them).  Looks
        through an array->bytes codec with an inner chain (sharding) when the outer
        chain has no array->array codec.  None when ``leading`` is not such a prefix."""
        k = len(leading)
        if not k or not all(isinstance(c, ArrayArrayCodec) and c.elementwise for c in leading):
            return None
        if not self.array_array:
            got = self.array_bytes.after_array_codecs(leading, self._ab_spec)
            return None if got is None else ((got[0], *self.bytes_bytes), got[1])
        if len(self.array_array) < k or [_json(c) for c in self.array_array[:k]] != [_json(c) for c in leading]:
            return None
        return self.codecs[k:], (self._aa_specs[k] if k < len(self.array_array) else self._ab_spec)

    # -- sizes --------------------------------------------------------------------------
    def compute_encoded_size(self) -> int | None:
        """Encoded size of a chunk of ``spec.shape``, or None when it varies (compression)."""
        if self.array_array:
            n: int | None = math.prod(self.spec.shape)
            for c, s in zip(self.array_array, self._aa_specs):
                if n is None:
                    return None
                n = c.compute_encoded_size(n, s)
            if n is None:
                return None
        return self._encoded_size

    @property
    def max_encoded_size(self) -> int | None:
        """Largest plausible stored size (None when some codec gives no bound)."""
        return self._max_encoded

    def stored_size_limit(self) -> int:
        """Most bytes a reader fetches for one stored chunk (hostile-store guard): the
        codecs' bound when they give one, else a generous bound linear in the decoded
        chunk (twice its bytes, plus 32 bytes per element for headers and shard
        indexes, plus 64 KiB).  A larger stored value is refused before it is read."""
        if self._max_encoded is not None:
            return int(self._max_encoded)
        n = math.prod(self.spec.shape)
        return 2 * n * self.spec.dtype.itemsize + 32 * n + (1 << 16)

    # -- encode -------------------------------------------------------------------------
    def encode(self, chunk: np.ndarray, ctx: ExecContext | None = None) -> bytes | bytearray | memoryview | None:
        """Encode a chunk of ``spec.shape``/``spec.dtype``; None means "nothing to store"."""
        if tuple(chunk.shape) != tuple(self.spec.shape):
            raise ValueError(expected("chunk shape", str(self.spec.shape), tuple(chunk.shape)))
        if chunk.dtype != self.spec.dtype:
            chunk = chunk.astype(self.spec.dtype)
            if chunk.dtype.byteorder in "<>" and not chunk.dtype.isnative and self.spec.dtype.isnative:
                # numpy: astype between byte orders of *generic* datetime64/timedelta64
                # ("M8"/"m8" without unit) returns the input's byte order unchanged
                chunk = chunk.byteswap().view(chunk.dtype.newbyteorder("="))
        x: Any = chunk
        for c, s in self._aa_exec:
            x = c.encode(x, s)
        if self._ab_ctx:
            b = self.array_bytes.encode(x, self._ab_spec, ctx or ExecContext.for_call())  # type: ignore[call-arg]  # uses_context
        else:
            b = self.array_bytes.encode(x, self._ab_spec)
        if b is None:
            return None
        if self.native_chain is not None and self.bytes_bytes:  # one C call, no GIL
            return _native.encode(self.native_chain, b)
        for c in self.bytes_bytes:
            b = c.encode(b, self._ab_spec)
        if isinstance(b, np.ndarray):
            b = memoryview(np.ascontiguousarray(b).reshape(-1).view(np.uint8))
        return b

    def encode_empty(self) -> bytes | bytearray | memoryview:
        """Stored bytes of an all-fill chunk, for stores without deletes when
        :meth:`encode` returned None (sharding: an index-only shard)."""
        b: Any = self.array_bytes.empty_encoding(self._ab_spec)
        for c in self.bytes_bytes:
            b = c.encode(b, self._ab_spec)
        if isinstance(b, np.ndarray):
            b = memoryview(np.ascontiguousarray(b).reshape(-1).view(np.uint8))
        return b

    # -- decode -------------------------------------------------------------------------
    def _check_encoded(self, data: Any) -> None:
        if data is None:
            raise TypeError("decode: expected stored bytes, received None (missing chunks are the caller's)")
        limit = self._max_encoded
        if limit is not None:
            n = data.nbytes if isinstance(data, (memoryview, np.ndarray)) else len(data)
            if n > limit:
                raise CorruptChunkError(
                    expected("encoded chunk", f"at most {limit} bytes for shape {self.spec.shape} {self.spec.dtype}", n)
                )

    def _decode_bytes(self, data: Any, stop: int, first: int | None = None) -> Any:
        """Run bytes->bytes decoders from index ``first`` (default: the outermost) down
        to index ``stop`` (inclusive)."""
        top = len(self.bytes_bytes) - 1 if first is None else first
        for i in range(top, stop - 1, -1):
            c = self.bytes_bytes[i]
            size = self._bb_sizes[i]
            try:
                if size is not None:
                    data = c.decode_sized(data, size, self._ab_spec)
                else:
                    data = c.decode(data, self._ab_spec)
                    if size is not None:
                        n = data.nbytes if isinstance(data, (memoryview, np.ndarray)) else len(data)
                        if n != size:
                            raise CorruptChunkError(expected(f"{c.to_dict().get('name')} output", f"{size} bytes", n))
            except CorruptChunkError:
                raise
            except (ValueError, RuntimeError, EOFError, OSError, OverflowError) as e:
                # third-party codecs: a decoding failure is a corrupt value (the codec's own
                # exception stays the cause).  MemoryError is not caught: running out of
                # memory says nothing about the stored bytes (sizes are capped before
                # decoding, so hostile values are refused before they can allocate)
                name = c.to_dict().get("name")
                raise CorruptChunkError(expected(f"{name}", "decodable bytes", f"{type(e).__name__}: {e}")) from e
        return data

    def decode(self, data: bytes | bytearray | memoryview, ctx: ExecContext | None = None) -> np.ndarray:
        """Decode to a writable array of ``spec.shape``/``spec.dtype`` (native order)."""
        self._check_encoded(data)
        if not self._aa_views:
            arr = self._decode_generic(data, ctx)
            if arr.dtype != self.spec.dtype:
                arr = arr.astype(self.spec.dtype)
            if not arr.flags.writeable:
                arr = arr.copy()
            return arr
        if self._zero_copy:
            # bytes codec alone, native order: a view of `data` when `data` is writable
            # (e.g. a bytearray from the store); immutable input still needs a copy
            arr = self.array_bytes.decode(data, self._ab_spec)
            if arr.flags.writeable:
                return arr
        # decode into one C-ordered buffer of the encoded shape; the array->array
        # codecs (transposes) then give views of it
        enc = np.empty(self._ab_spec.shape, dtype=self._ab_spec.dtype)
        self._decode_ab_into(data, enc, ctx)
        arr = enc
        for c, s in zip(reversed(self.array_array), reversed(self._aa_specs)):
            arr = c.decode(arr, s)
        return arr

    def decode_into(self, data: bytes | bytearray | memoryview, out: np.ndarray, ctx: ExecContext | None = None) -> None:
        """Decode into ``out`` (writable, ``spec.shape``, possibly a strided view)."""
        if tuple(out.shape) != tuple(self.spec.shape):
            raise ValueError(expected("decode_into out.shape", str(self.spec.shape), tuple(out.shape)))
        self._check_encoded(data)
        region = self._region
        if (region is not None and out.dtype == self.spec.dtype and (self.array_array or not out.flags.c_contiguous)
                and _region.writable_view(out) and region.decode_into(data, out)):
            return
        if not self._aa_views or out.dtype != self.spec.dtype:
            if len(self._aa_exec) == 1:
                # one array->array step that can write into `out` (fused scale_offset+cast_value):
                # no intermediate decoded chunk
                c, s = self._aa_exec[0]
                arr = self._ab_decode(self._decode_bytes(data, 0), ctx)
                if not c.decode_into(arr, out, s):
                    arr = c.decode(arr, s)
                    if tuple(arr.shape) != tuple(self.spec.shape):
                        raise CorruptChunkError(expected("decoded chunk shape", str(self.spec.shape), tuple(arr.shape)))
                    np.copyto(out, arr, casting="unsafe")
                return
            np.copyto(out, self._decode_generic(data, ctx), casting="unsafe")
            return
        target: np.ndarray | None = out
        for c in self.array_array:
            target = c.encoded_view(target) if target is not None else None
        if target is None:  # a reshape of a strided `out`: no view of it exists
            np.copyto(out, self._decode_generic(data, ctx), casting="unsafe")
            return
        self._decode_ab_into(data, target, ctx)

    def _cx(self, ctx: ExecContext | None) -> tuple[ExecContext | None, ...]:
        """The context argument of the array->bytes codec's partial methods: passed only
        to a codec that declares ``uses_context`` (others keep the plain signature)."""
        return (ctx,) if self._ab_ctx else ()

    def _ab_decode(self, b: Any, ctx: ExecContext | None) -> np.ndarray:
        if self._ab_ctx:
            return self.array_bytes.decode(b, self._ab_spec, ctx or ExecContext.for_call())  # type: ignore[call-arg]  # uses_context
        return self.array_bytes.decode(b, self._ab_spec)

    def _decode_ab_into(self, data: Any, target: np.ndarray, ctx: ExecContext | None) -> None:
        """Bytes->bytes decoders, then the array->bytes decoder into ``target`` (encoded shape)."""
        ab = self.array_bytes
        if self._direct and target.flags.c_contiguous and target.flags.writeable:
            dst = target.reshape(-1).view(np.uint8) if target.size else np.empty(0, dtype=np.uint8)
            if self.native_chain is not None:  # every bytes->bytes step in one C call, no GIL
                code = _native.decode_code(self.native_chain, data, dst)
                if code == 0:
                    ab.fix_endian_inplace(target, self._ab_spec)
                    return
                if code not in _native.RETRY_IN_PYTHON:
                    _native.fail(code)
                # else: several gzip members: the codecs below decide
            b = self._decode_bytes(data, 1)
            bb0 = self.bytes_bytes[0]
            try:
                ok = bb0.decode_into(b, dst, self._ab_spec)
            except CorruptChunkError:
                raise
            except (ValueError, RuntimeError, OSError) as e:
                name = bb0.to_dict().get("name")
                raise CorruptChunkError(expected(f"{name}", "decodable bytes", f"{type(e).__name__}: {e}")) from e
            if ok:
                ab.fix_endian_inplace(target, self._ab_spec)
                return
            b = self._decode_bytes(b, 0, 0)
        else:
            b = self._decode_bytes(data, 0)
        if self._ab_ctx:
            done = ab.decode_into(b, target, self._ab_spec, ctx or ExecContext.for_call())  # type: ignore[call-arg]  # uses_context
        else:
            done = ab.decode_into(b, target, self._ab_spec)
        if not done:
            arr = self._ab_decode(b, ctx)
            if tuple(arr.shape) != tuple(target.shape):
                raise CorruptChunkError(expected("decoded chunk shape", str(target.shape), tuple(arr.shape)))
            np.copyto(target, arr, casting="unsafe")

    def _decode_generic(self, data: Any, ctx: ExecContext | None) -> np.ndarray:
        b = self._decode_bytes(data, 0)
        arr = self._ab_decode(b, ctx)
        for c, s in reversed(self._aa_exec):
            arr = c.decode(arr, s)
        if tuple(arr.shape) != tuple(self.spec.shape):
            raise CorruptChunkError(expected("decoded chunk shape", str(self.spec.shape), tuple(arr.shape)))
        return arr

    # -- partial ------------------------------------------------------------------------
    @property
    def supports_partial_decode(self) -> bool:
        """Partial reads decode less than the whole stored value (sharding, possibly
        behind transposes)."""
        return self._partial_ok and self.array_bytes.supports_partial_decode

    @property
    def supports_partial_encode(self) -> bool:
        return self._partial_ok and self.array_bytes.supports_partial_encode

    def _encoded_selections(self, selection: Selection) -> list[Selection] | None:
        """``selection`` as each array->array codec's input and, last, the array->bytes
        codec's; None when some codec cannot carry this selection (``reshape``)."""
        out = [selection]
        for c, s in zip(self.array_array, self._aa_specs):
            enc = c.encode_selection(out[-1], s)
            if enc is None:
                return None
            out.append(enc)
        return out

    def _encoded_selection(self, selection: Selection) -> Selection:
        sels = self._encoded_selections(selection)
        if sels is None:  # pragma: no cover - ints (read_point) always map
            raise NotImplementedError("partial access does not compose for this selection")
        return sels[-1]

    def _encoded_piece(self, piece: np.ndarray, sels: list[Selection], view: bool) -> np.ndarray | None:
        """``piece`` (``sels[0]`` of a decoded chunk) shaped as the array->bytes codec's
        selection ``sels[-1]``: a view to decode into (``view``; None when there is
        none) or the encoded values to write (see ``ArrayArrayCodec.encoded_piece``)."""
        for c, s, sel, enc in zip(self.array_array, self._aa_specs, sels, sels[1:]):
            nxt = c.encoded_piece(piece, sel, enc, s, view)
            if nxt is None:
                return None
            piece = nxt
        return piece

    def read_cached_box(self, getter_of: Callable[[tuple[int, ...]], ByteGetter], box: Sequence[tuple[int, int]],
                        out: np.ndarray) -> bool:
        """The array->bytes codec's :meth:`~zarrcy.codecs._base.ArrayBytesCodec.read_cached_box`
        when nothing comes before it (an array->array codec would move the box)."""
        return not self.array_array and self.array_bytes.read_cached_box(getter_of, box, self._ab_spec, out)

    def read_cached_points(self, getter_of: Callable[[tuple[int, ...]], ByteGetter], coords: np.ndarray,
                           out: np.ndarray) -> bool:
        """:meth:`read_cached_box` for points (``coords``: (ndim, N) int64; 1-d ``out``)."""
        return not self.array_array and self.array_bytes.read_cached_points(getter_of, coords, self._ab_spec, out)

    def decode_partial(
        self, getter: ByteGetter, selection: Selection, out: np.ndarray | None = None, ctx: ExecContext | None = None,
    ) -> np.ndarray | None:
        """Decode only ``selection`` (per dim: int, slice with a positive step, or int64
        index array; ints drop their axis) of the stored value behind ``getter``, into
        ``out`` when given; None if the value is missing (``out`` untouched).

        A selection an array->array codec cannot carry (``reshape``: see its module)
        decodes the whole value, then selects."""
        if not self._partial_ok:
            raise NotImplementedError("this codec chain does not support partial decoding")
        if not self.array_array:
            return self.array_bytes.decode_partial(getter, selection, self._ab_spec, out, *self._cx(ctx))
        sels = self._encoded_selections(selection)
        if sels is None:
            return self._decode_whole_select(getter, selection, out, ctx)
        shape = selection_shape(selection, self.spec.shape)
        if out is None:
            out = np.empty(shape, dtype=self.spec.dtype)
        piece = self._encoded_piece(out, sels, True)
        if piece is not None:
            got = self.array_bytes.decode_partial(getter, sels[-1], self._ab_spec, piece, *self._cx(ctx))
            return None if got is None else out
        # `out` is strided so that a reshape has no view of it: decode into a fresh
        # C-ordered buffer, then copy
        tmp = np.empty(shape, dtype=self.spec.dtype)
        piece = self._encoded_piece(tmp, sels, True)
        if piece is None:  # a transpose before a reshape: not a view even of `tmp`
            return self._decode_whole_select(getter, selection, out, ctx)
        if self.array_bytes.decode_partial(getter, sels[-1], self._ab_spec, piece, *self._cx(ctx)) is None:
            return None
        out[...] = tmp
        return out

    def _decode_whole_select(self, getter: ByteGetter, selection: Selection, out: np.ndarray | None,
                             ctx: ExecContext | None) -> np.ndarray | None:
        data = getter.get()
        if data is None:
            return None
        piece = select(self.decode(data, ctx), selection)
        if out is None:
            return np.array(piece)
        out[...] = piece
        return out

    def encode_partial(self, setter: ByteSetter, selection: Selection, value: np.ndarray,
                       ctx: ExecContext | None = None) -> None:
        """Write ``value`` (shaped like the selection) into ``selection`` of the stored value
        (the whole value read, merged and rewritten when a codec cannot carry the selection)."""
        if not self._partial_ok:
            raise NotImplementedError("this codec chain does not support partial encoding")
        value = np.broadcast_to(np.asarray(value, dtype=self.spec.dtype), selection_shape(selection, self.spec.shape))
        sels = self._encoded_selections(selection)
        if sels is None:
            data = setter.get()
            chunk = np.full(self.spec.shape, self.spec.fill_value, dtype=self.spec.dtype) if data is None \
                else np.array(self.decode(data, ctx))
            assign(chunk, selection, value)
            enc = self.encode(chunk, ctx)
            if enc is None:
                setter.delete()
            else:
                setter.set(enc)
            return
        piece = self._encoded_piece(value, sels, False)
        assert piece is not None
        self.array_bytes.encode_partial(setter, sels[-1], piece, self._ab_spec, *self._cx(ctx))

    def _encoded_coords(self, coords: np.ndarray) -> np.ndarray:
        for c, s in zip(self.array_array, self._aa_specs):
            coords = c.encode_coords(coords, s)
        return np.asarray(coords, dtype=np.int64)

    def decode_points(self, getter: ByteGetter, coords: np.ndarray, ctx: ExecContext | None = None) -> np.ndarray | None:
        """Elements at chunk coordinates ``coords`` ((ndim, k) int64; vindex): only the
        inner chunks holding them are decoded.  None if the stored value is missing."""
        if not self._partial_ok:
            raise NotImplementedError("this codec chain does not support partial decoding")
        return self.array_bytes.decode_points(getter, self._encoded_coords(coords), self._ab_spec, *self._cx(ctx))

    def encode_points(self, setter: ByteSetter, coords: np.ndarray, values: np.ndarray,
                      ctx: ExecContext | None = None) -> None:
        """Write ``values[k]`` at chunk coordinates ``coords[:, k]`` (vindex writes)."""
        if not self._partial_ok:
            raise NotImplementedError("this codec chain does not support partial encoding")
        v = np.asarray(values, dtype=self.spec.dtype)
        for c, s in zip(self.array_array, self._aa_specs):
            v = c.encode_values(v, s)
        self.array_bytes.encode_points(setter, self._encoded_coords(coords), v, self._ab_spec, *self._cx(ctx))

    def read_point(self, getter: ByteGetter, local: Sequence[int], ctx: ExecContext | None = None) -> Any:
        """One element at chunk coordinates ``local`` (fill value if the value is missing)."""
        return self.array_bytes.read_point(getter, self._encoded_selection(tuple(local)), self._ab_spec, *self._cx(ctx))
