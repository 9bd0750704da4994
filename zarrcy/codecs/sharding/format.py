"""The shard format (../shared/specs/v3-codec-sharding-indexed.rst "Binary shard format"):
index layout, index encode/decode/validate, fault texts, emptiness of inner chunks.

One :class:`ShardLayout` per (codec, shard spec) holds the format facts that do not
depend on the data: inner-chunk grid, inner and index pipelines, index size -- plus the
declared kernel plan (:class:`ShardKernel`, built once per spec from the inner codecs'
capabilities, or None: the Python path).  The index is a flat ``uint64`` array of
``2 * n`` values ``(offset, nbytes)`` in C order of the inner chunk grid; ``2^64 - 1``
twice marks an inner chunk that is not stored.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence, cast

import crc32c as _crc32c
import numpy as np

from zarrcy._kernels import _sharding as K
from zarrcy.byte_range import RangeRequest, SuffixRequest
from zarrcy.codecs._base import ArraySpec, Codec
from zarrcy.config import get as _config_get
from zarrcy.errors import CorruptChunkError, MetadataError, expected

__all__ = ["SENTINEL", "ShardLayout", "ShardKernel", "flat_bytes", "contiguous", "codecs_from_json"]

SENTINEL = K.SENTINEL_U64
_LITTLE = np.little_endian

FAULT_TEXT: dict[int, str] = {
    K.IndexFault.FAULT_HALF_EMPTY: "exactly one of offset/nbytes is 2^64-1 (the empty marker needs both)",
    K.IndexFault.FAULT_OVERFLOW: "offset + nbytes overflows uint64",
    K.IndexFault.FAULT_PAST_END: "points past the end of the shard",
    K.IndexFault.FAULT_INTO_INDEX: "overlaps the shard index",
}


SUBCHUNK_WRITE_ORDERS = ("morton", "lexicographic")


@functools.lru_cache(maxsize=64)
def morton_order(cps: tuple[int, ...]) -> np.ndarray:
    """C-order linear indices of a ``cps`` grid of inner chunks, sorted by their
    compressed Morton (Z-order) code: bit ``b`` of every axis that still has a bit ``b``
    (axes of ``k`` chunks have ``(k - 1).bit_length()`` bits), axis 0 first, lowest bits
    first.  This is the order zarr-python 3.4 writes inner chunks in by default, so the
    shard bytes match (read-only result, cached per grid)."""
    n = math.prod(cps)
    coords = np.indices(cps, dtype=np.int64).reshape(len(cps), n) if cps else np.zeros((0, 1), np.int64)
    bits = [(c - 1).bit_length() for c in cps]
    code = np.zeros(n, np.int64)
    out_bit = 0
    for b in range(max(bits, default=0)):
        for d, nb in enumerate(bits):
            if b < nb:
                code |= ((coords[d] >> b) & 1) << out_bit
                out_bit += 1
    order = np.argsort(code, kind="stable")
    order.flags.writeable = False
    return order


def write_order(layout: "ShardLayout") -> np.ndarray | None:
    """The physical order of inner chunks for a shard write (None: C order)."""
    mode = _config_get("subchunk_write_order")
    if mode == "lexicographic" or layout.n <= 1:
        return None
    if mode != "morton":
        raise MetadataError(expected("config.subchunk_write_order", f"one of {SUBCHUNK_WRITE_ORDERS}", mode))
    if sum(c > 1 for c in layout.cps) <= 1:
        return None  # one axis of several chunks: its Morton code is the C-order index
    return morton_order(tuple(layout.cps))


#: inner chunks laid out per step (bounded temporaries for indexes of millions of entries)
_LAYOUT_BLOCK = 1 << 18


def lay_out(nbytes: np.ndarray, base: int, flat: np.ndarray, order: np.ndarray | None) -> int:
    """Fill the index ``flat`` (C order of the inner chunks) for inner chunks of sizes
    ``nbytes`` (``SENTINEL``: not stored) placed back to back from ``base`` in the
    physical ``order`` (None: C order); returns the end offset."""
    flat[1::2] = nbytes
    return lay_out_in_place(flat, base, order)


def lay_out_in_place(flat: np.ndarray, base: int, order: np.ndarray | None) -> int:
    """:func:`lay_out` with the sizes already in ``flat[1::2]`` (the index is built in
    its own buffer, no array of sizes beside it); temporaries are bounded by
    ``_LAYOUT_BLOCK`` entries."""
    n = flat.shape[0] // 2
    pos = int(base)
    for lo in range(0, n, _LAYOUT_BLOCK):
        hi = min(n, lo + _LAYOUT_BLOCK)
        if order is None:  # sizes of the block copied out, then the kernel writes the block
            pos = int(K.build_index(flat[2 * lo + 1:2 * hi:2].copy(), pos, flat[2 * lo:2 * hi]))
            continue
        ids = order[lo:hi]
        nb = flat[2 * ids + 1]
        present = nb != SENTINEL
        sizes = np.where(present, nb, np.uint64(0))
        if int(sizes.max()) > ((1 << 62) - pos) // sizes.size:
            raise OverflowError("shard index: shard larger than 2^62 bytes")
        ends = np.cumsum(sizes, dtype=np.uint64) + np.uint64(pos)
        flat[2 * ids[present]] = (ends - sizes)[present]
        flat[2 * ids[~present]] = SENTINEL  # its size is SENTINEL already
        pos = int(ends[-1])
    return pos


def codecs_from_json(value: Any, path: str) -> tuple[Codec, ...]:
    from zarrcy.codecs import codec_from_dict

    if not isinstance(value, list) or not value:
        raise MetadataError(expected(path, "a non-empty array of codecs", value), path)
    return tuple(codec_from_dict(item, f"{path}[{i}]") for i, item in enumerate(value))


def flat_bytes(data: Any) -> memoryview:
    """A 1-d unsigned-byte view of any bytes-like object (``len`` is then its size)."""
    mv = data if isinstance(data, memoryview) else memoryview(data)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def contiguous(a: np.ndarray) -> np.ndarray:
    """C-contiguous ``a`` keeping 0-d arrays 0-d (``np.ascontiguousarray`` makes them 1-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def _uint64_data_type() -> Any:
    from zarrcy.metadata.data_type import parse_data_type

    return parse_data_type("uint64")


class ShardKernel:
    """How the per-inner-chunk kernels run one shard spec: the inner chain's
    :class:`~zarrcy.codecs._native.KernelPlan` (transpose order, byte swap, engine chain;
    declared by the codecs, composed by the inner pipeline) and the kernels' arguments
    that never change for the spec -- built once per spec, never per read."""

    __slots__ = ("plan", "shape", "fill", "_whole", "_cache_whole")

    def __init__(self, plan: Any, chunk_shape: tuple[int, ...], fill: bytes, n: int) -> None:
        self.plan = plan
        self.shape = np.asarray(chunk_shape, np.int64)
        self.fill = fill
        self._whole: Any = None
        # a whole shard's projection and tables are kept (read-only) up to 65,536 inner
        # chunks; larger grids rebuild them per shard
        self._cache_whole = n <= 1 << 16

    def whole(self, build: Any) -> Any:
        """``build()`` once (the whole shard's projection and kernel tables), then the kept result."""
        got = self._whole
        if got is None:
            got = build()
            if self._cache_whole:
                for t in got[1]:
                    t.flags.writeable = False
                self._whole = got
        return got


class ShardLayout:
    """The format facts of one shard spec (nothing here depends on the data), and the
    declared kernel plan of its inner chain (``kernel``: None means the Python path)."""

    __slots__ = (
        "spec", "chunk_shape", "cps", "n", "inner", "inner_spec", "index_pipeline", "start",
        "index_size", "fill_row", "coords", "itemsize", "has_object", "fill", "fill_scalar", "fast_index",
        "has_crc", "inner_limit", "kernel", "cache_key",
    )

    def __init__(self, codec: Any, spec: ArraySpec, path: str) -> None:
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
        self.start = codec.index_location == "start"
        self.cps = tuple(s // c for s, c in zip(shape, cs))
        self.n = n = math.prod(self.cps)
        # the index is held in memory (16 bytes per inner chunk): it counts against
        # max_chunk_bytes with the decoded shard, checked before anything is allocated
        # (issue 12.6: a hostile chunk_shape of 1s must not allocate gigabytes)
        limit = int(_config_get("max_chunk_bytes"))
        need = 16 * n + 4 + spec.nbytes
        if need > limit:
            raise MetadataError(
                expected(
                    f"{cfg}.chunk_shape",
                    f"a shard whose decoded bytes plus index (16 bytes per inner chunk) fit in "
                    f"max_chunk_bytes={limit} (zarrcy.config), not {need} ({n} inner chunks)",
                    list(cs),
                ),
                f"{cfg}.chunk_shape",
            )
        self.inner_spec = ArraySpec(shape=cs, dtype=spec.dtype, fill_value=spec.fill_value, data_type=spec.data_type)
        self.inner = CodecPipeline.from_codecs(list(codec.codecs), self.inner_spec, f"{cfg}.codecs")
        self.inner_limit = self.inner.stored_size_limit()
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
        # the inner chain as the per-inner-chunk kernels run it (transpose? bytes,
        # compressor? crc32c?), declared by the codecs and composed by the pipeline;
        # None: the Python path (numcodecs filters, vlen, nested sharding, ...)
        plan = None if self.has_object else self.inner.kernel_plan
        self.kernel = None if plan is None else ShardKernel(
            plan, cs, np.asarray(spec.fill_value, dtype=spec.dtype).tobytes(), n)
        # what decoded inner chunks of a shard version depend on besides its bytes (the
        # decoded-chunk cache's key, zarrcy/chunk_cache.py); None: not cached.  A string
        # (the repr of plain values: faithful), whose hash Python computes once -- a tuple
        # holding a dataclass is hashed again in every cache lookup
        self.cache_key = None if self.kernel is None else repr(
            ("shard", cs, spec.dtype.str, n, self.start, self.index_size, chain, plan, self.kernel.fill))

    def region(self, i: int) -> tuple[Any, ...]:
        """Slices of inner chunk ``i`` (C-order linear index) within the shard."""
        if not self.cps:
            return (Ellipsis,)
        c: Any = self.coords[i] if self.coords is not None else np.unravel_index(i, self.cps)
        return tuple(slice(int(a) * s, (int(a) + 1) * s) for a, s in zip(c, self.chunk_shape))

    def chunk_name(self, i: int) -> str:
        c = self.coords[i] if self.coords is not None else tuple(int(x) for x in np.unravel_index(i, self.cps))
        return f"shard index entry {i} (inner chunk {tuple(c)})"

    def index_request(self) -> Any:
        return RangeRequest(0, self.index_size) if self.start else SuffixRequest(self.index_size)

    # -- index -----------------------------------------------------------------------
    def decode_index(self, raw: Any) -> np.ndarray:
        """Encoded index bytes -> flat uint64 array of 2n values (not yet validated).

        The recommended little-endian chain on a little-endian machine gives a read-only
        view of ``raw`` (no copy: a large index is held once)."""
        raw = flat_bytes(raw)
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
            if _LITTLE:
                flat = np.frombuffer(raw, np.uint64, count=2 * self.n)
                if flat.ctypes.data % 8 == 0:  # kernels take aligned uint64 buffers
                    return flat
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

    def encode_index_into(self, flat: np.ndarray, out: memoryview) -> None:
        """Write the encoded index of ``flat`` into ``out`` (exactly ``index_size`` bytes)."""
        if self.fast_index:
            payload = 16 * self.n
            K.encode_index(flat, out[:payload])
            if self.index_size == payload + 4:
                out[payload:] = _crc32c.crc32c(out[:payload]).to_bytes(4, "little")
            return
        enc = self.index_pipeline.encode(flat.reshape(self.cps + (2,)))
        if enc is None or len(flat_bytes(enc)) != self.index_size:  # pragma: no cover - codec contract
            raise CorruptChunkError("shard index: index codecs produced an unexpected size")
        out[:] = flat_bytes(enc)

    def seal_index(self, out: memoryview) -> None:
        """``out`` already holds the entries in the stored layout (fast index only):
        append the crc32c when the chain has one."""
        payload = 16 * self.n
        if self.index_size == payload + 4:
            out[payload:] = _crc32c.crc32c(out[:payload]).to_bytes(4, "little")

    def encode_index(self, flat: np.ndarray) -> bytearray:
        out = bytearray(self.index_size)
        self.encode_index_into(flat, memoryview(out))
        return out

    def validate(self, flat: np.ndarray, shard_size: int | None, ids: Sequence[int] | None = None) -> None:
        """Raise CorruptChunkError naming the first bad index entry.

        ``ids``: ``flat`` holds only the entries of these inner chunks (a ranged read of
        the index, ``index_io``), in this order.

        ``shard_size`` None: the size is unknown (partial read of an end index on an
        object store); truncation is then detected when the chunk ranges are read.
        """
        start = self.start
        if shard_size is None:
            lo, hi, size = (self.index_size if start else 0), SENTINEL, SENTINEL
        elif start:
            lo, hi, size = self.index_size, shard_size, shard_size
        else:
            lo, hi, size = 0, shard_size - self.index_size, shard_size
        bad, fault = K.validate_index(flat, lo, hi, size)
        if bad != -1:
            raise CorruptChunkError(
                f"{self.chunk_name(bad if ids is None else ids[bad])}: {FAULT_TEXT[fault]} "
                f"(offset={int(flat[2 * bad])}, nbytes={int(flat[2 * bad + 1])}"
                + (f", shard size {shard_size}, index {self.index_size} bytes at the {'start' if start else 'end'})"
                   if shard_size is not None else ")")
            )

    def check_fetch(self, which: np.ndarray, nbs: np.ndarray) -> None:
        """Hostile-store guard before a range read of inner chunks ``which`` (sizes
        ``nbs``): an entry may claim any size (the shard may be a huge sparse file), so
        refuse one larger than its codecs can produce, and a SUM larger than the touched
        chunks can produce (4,096 entries of 1 MiB each in a 4 KiB shard must not read
        4 GiB).  Single entries up to 1 MiB are left to the usual checks (short read,
        decoded size), which give more specific messages."""
        if not which.size:
            return
        cap = max(self.inner_limit, 1 << 20)
        top = int(nbs.max())
        if top > cap:
            bad = int(np.argmax(nbs > np.uint64(cap)))
            raise CorruptChunkError(
                f"{self.chunk_name(int(which[bad]))}: expected an inner chunk of at most {cap} bytes, "
                f"received nbytes={int(nbs[bad])}"
            )
        total = int(nbs.sum(dtype=np.uint64)) if which.size * cap < (1 << 63) else sum(int(x) for x in nbs)
        bound = which.size * self.inner_limit + (1 << 20)
        if total > bound:
            raise CorruptChunkError(
                f"shard index: expected the {which.size} inner chunks read to total at most {bound} bytes, "
                f"received entries totalling {total} bytes"
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
            self.itemsize, cast(np.ndarray, self.fill_row), out,  # not None without objects
        )
        return out

    def chunk_is_empty(self, chunk: np.ndarray) -> bool:
        return bool(self.empty_flags(contiguous(chunk), chunk.shape)[0])
