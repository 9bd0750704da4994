"""Codecs that carry Zarr v2 / v1 chunks through zarrcy's codec pipeline.

A v2 array becomes the same :class:`~zarrcy.array.Array` machinery as a v3 one; its
chain is built by :func:`v2_codecs`:

* **fast chain** (no filters, a number/bool data type): ``[transpose (order F)] ,
  bytes (the dtype's endian) , [compressor]``.  blosc, zstd and gzip map onto zarrcy's
  native codecs (GIL-free, decode straight into the caller's array); any other
  numcodecs compressor (zlib, lz4, bz2, lzma, ...) runs through
  :class:`NumcodecsBytesCodec` -- zlib's streams there through the native engine
  (libdeflate; ``native_step``), the others through numcodecs.
* **generic chain** (filters, or S/U/V/M/m/structured types): one array->bytes
  :class:`V2ChunkCodec` that reproduces zarr-python 2's chunk procedure exactly
  (v2.rst "Chunks", "filters"): the chunk in its ``order`` -> each filter's
  ``encode`` -> the compressor; decoding runs it backwards and reinterprets the
  buffer as the dtype in ``order``.  Filters see the chunk as zarr-python 2 shows it
  (an ``order``-contiguous array), so any numcodecs filter behaves as there.

Both wrapper codecs are internal: their names (``numcodecs.<id>``, ``zarr_v2_chunk``)
never appear in v3 metadata written by zarrcy (the converter re-encodes such arrays).

**Bounded decoding** (decompression bombs): every numcodecs decode goes through
:func:`~zarrcy.codecs.numcodecs.decode_capped` (shared with zarr-python's v3
``numcodecs.*`` codecs; its module docstring says how each id is bounded) with the most
bytes the chunk can need -- the exact decoded size in the fast chain, a bound derived
from the chunk's bytes in the generic chain, and for variable-length (``|O``) chunks
``zarrcy.codecs._limits.decode_cap`` (``max_vlen_element_bytes`` per element, at most
``max_chunk_bytes``).  A decoder's failure is a CorruptChunkError (its
exception kept as the cause); a MemoryError is not: it passes through unchanged.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Self

import numpy as np

from zarrcy.codecs import _native
from zarrcy.codecs._base import ArrayBytesCodec, ArraySpec, BytesBytesCodec, Codec
from zarrcy.codecs.numcodecs import decode_error, decode_capped
from zarrcy.codecs.numcodecs import chunk_cap as _chunk_cap
from zarrcy.errors import CorruptChunkError, MetadataError, UnknownCodecError, expected

__all__ = ["NumcodecsBytesCodec", "V2ChunkCodec", "numcodecs_codec", "v2_codecs", "native_compressor", "decode_capped"]


def _freeze(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True)


def numcodecs_codec(config: Any, path: str) -> Any:
    """A numcodecs codec object from a v2 codec configuration ``{"id": ..., ...}``."""
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise MetadataError(expected(path, "a codec configuration object with an 'id'", config), path)
    import numcodecs

    if config["id"] not in _registry():
        raise UnknownCodecError(expected(f"{path}.id", "a numcodecs codec installed here", config["id"]), f"{path}.id")
    try:
        return numcodecs.get_codec(dict(config))
    except Exception as e:  # codec constructors raise anything on bad configurations (even SyntaxError)
        raise MetadataError(expected(path, "a valid numcodecs configuration", f"{config!r} ({type(e).__name__}: {e})"), path) from None


def _registry() -> set[str]:
    """Installed numcodecs ids: registered codecs and entry points not loaded yet."""
    import numcodecs.registry as r

    return set(r.codec_registry) | set(getattr(r, "entries", {}) or {})


@dataclass(frozen=True)
class NumcodecsBytesCodec(BytesBytesCodec):
    """A numcodecs compressor as a bytes->bytes codec (internal; see module docstring)."""

    config_json: str  # the numcodecs configuration, canonical JSON (hashable)

    name: ClassVar[str] = "numcodecs"

    @classmethod
    def from_config(cls, config: dict[str, Any], path: str = "compressor") -> NumcodecsBytesCodec:
        c = cls(_freeze(config))
        c.codec(path)  # unknown ids / bad configurations fail now, not per chunk
        return c

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:  # pragma: no cover
        raise MetadataError(f"{path}: numcodecs wrapper codecs are internal to Zarr v2 arrays", path)

    @property
    def config(self) -> dict[str, Any]:
        return json.loads(self.config_json)

    def codec(self, path: str = "compressor") -> Any:
        cached = self.__dict__.get("_codec")
        if cached is None:
            cached = numcodecs_codec(self.config, path)
            object.__setattr__(self, "_codec", cached)
        return cached

    def to_dict(self) -> dict[str, Any]:
        cfg = self.config
        cid = cfg.pop("id")
        return {"name": f"numcodecs.{cid}", "configuration": cfg}

    def encode(self, data: Any, spec: ArraySpec) -> Any:
        return self.codec().encode(np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data)

    def decode(self, data: Any, spec: ArraySpec) -> Any:
        # decoded size unknown here (variable-length chunks): capped from the chunk's shape
        return decode_capped(self.codec(), data, _chunk_cap(spec))

    def native_step(self, spec: ArraySpec | None) -> _native.Step | None:
        """numcodecs' ``zlib`` runs in the native engine (libdeflate's zlib streams)."""
        cfg = self.config
        level = cfg.get("level", 1)
        if cfg.get("id") == "zlib" and set(cfg) <= {"id", "level"} and type(level) is int and 0 <= level <= 9:
            return _native.Step(_native.ZLIB, level)
        return None

    def decode_into(self, data: Any, dst: np.ndarray, spec: ArraySpec) -> bool:
        step = self.native_step(spec)
        chain = _native.chain_of([step]) if step is not None else None
        if chain is None:
            return False
        _native.decode_into(chain, data, dst, "zlib")
        return True

    def decode_sized(self, data: Any, size: int, spec: ArraySpec) -> Any:
        if self.native_step(spec) is not None:
            buf = np.empty(size, dtype=np.uint8)
            if self.decode_into(data, buf, spec):
                return buf
        out = decode_capped(self.codec(), data, size)
        n = out.nbytes if hasattr(out, "nbytes") else len(out)
        if n != size:
            raise CorruptChunkError(expected(f"numcodecs.{self.config.get('id')} output", f"{size} bytes", n))
        return out


@dataclass(frozen=True)
class V2ChunkCodec(ArrayBytesCodec):
    """One whole zarr-python 2 chunk procedure as an array->bytes codec (internal).

    ``stored_dtype`` is the v2 dtype string/descr JSON (with byte order); ``order`` is
    ``"C"`` or ``"F"``; ``filters``/``compressor`` are numcodecs configurations as JSON.
    """

    stored_dtype_json: str
    order: str = "C"
    filters_json: str = "[]"
    compressor_json: str = "null"

    name: ClassVar[str] = "zarr_v2_chunk"

    @classmethod
    def build(cls, stored_dtype_json: Any, order: str, filters: list[dict] | None, compressor: dict | None) -> V2ChunkCodec:
        c = cls(json.dumps(stored_dtype_json), order, json.dumps(filters or [], sort_keys=True), json.dumps(compressor, sort_keys=True))
        c._objects()
        return c

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:  # pragma: no cover
        raise MetadataError(f"{path}: the zarr_v2_chunk codec is internal to Zarr v2 arrays", path)

    def _objects(self) -> tuple[np.dtype, list[Any], Any]:
        cached = self.__dict__.get("_objs")
        if cached is None:
            from zarrcy.v2.dtypes import parse_v2_dtype

            dt = parse_v2_dtype(json.loads(self.stored_dtype_json)).stored_dtype
            filters = [numcodecs_codec(f, f"filters[{i}]") for i, f in enumerate(json.loads(self.filters_json))]
            comp_cfg = json.loads(self.compressor_json)
            comp = numcodecs_codec(comp_cfg, "compressor") if comp_cfg is not None else None
            cached = (dt, filters, comp)
            object.__setattr__(self, "_objs", cached)
        return cached

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "configuration": {
                "dtype": json.loads(self.stored_dtype_json),
                "order": self.order,
                "filters": json.loads(self.filters_json) or None,
                "compressor": json.loads(self.compressor_json),
            },
        }

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return None

    def _filtered_cap(self, spec: ArraySpec) -> int:
        """Most bytes the compressor (and each filter decoder) may produce for a chunk of
        ``spec``: the filters' encoded size of the chunk, estimated from the ratio they
        show on 64 elements (AsType may widen, PackBits shrinks...), never below the
        chunk's bytes, plus compressor-like slack; ``max_chunk_bytes`` for object chunks."""
        dt, filters, _ = self._objects()
        if dt.hasobject:
            return _chunk_cap(replace(spec, dtype=dt))
        nbytes = math.prod(spec.shape) * dt.itemsize
        ratio = self.__dict__.get("_ratio")
        if ratio is None:
            ratio = 1.0
            try:
                x: Any = np.zeros(64, dtype=dt)
                for f in filters:
                    x = f.encode(x)
                ratio = max(1.0, (x.nbytes if hasattr(x, "nbytes") else len(x)) / (64 * dt.itemsize))
            except Exception:  # a filter that cannot encode zeros: assume it keeps the size
                pass
            object.__setattr__(self, "_ratio", ratio)
        n = int(math.ceil(nbytes * ratio))
        return min(_chunk_cap(), n + (n >> 3) + (64 << 10))

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> Any:
        dt, filters, comp = self._objects()
        arr = np.asarray(chunk)
        if arr.dtype != dt:
            arr = arr.astype(dt)
        arr = np.asfortranarray(arr) if self.order == "F" else np.ascontiguousarray(arr)
        x: Any = arr
        for f in filters:
            x = f.encode(x)
        if comp is not None:
            if isinstance(x, np.ndarray) and x.dtype.fields is not None:
                # records as their bytes (memory order): numcodecs' buffers refuse M8/m8 fields
                x = np.ascontiguousarray(x.reshape(-1, order="A")).view(np.uint8)
            x = comp.encode(x)
        if isinstance(x, np.ndarray):  # memory order, as zarr-python 2 stores it
            return memoryview(np.ascontiguousarray(x.reshape(-1, order="A")).view(np.uint8))
        return x

    def decode(self, data: Any, spec: ArraySpec) -> np.ndarray:
        dt, filters, comp = self._objects()
        cap = self._filtered_cap(spec)
        try:
            x: Any = decode_capped(comp, data, cap) if comp is not None else data
            for f in reversed(filters):
                # compressors used as filters are bounded like the compressor; other
                # filters transform their input by a bounded factor (checked below)
                x = decode_capped(f, x, cap)
            if isinstance(x, np.ndarray):
                flat = np.ascontiguousarray(x.reshape(-1, order="A"))
                if flat.dtype != dt:  # zarr-python 2 reinterprets the buffer (a view)
                    flat = flat.view(np.uint8).view(dt)
            else:
                flat = np.frombuffer(x, dtype=dt)
        except (CorruptChunkError, MemoryError):
            raise  # out of memory is not a corrupt chunk (decoders are capped above)
        except Exception as e:  # numcodecs raises anything on corrupt input
            raise decode_error("zarr v2 chunk", e) from e
        n = int(np.prod(spec.shape, dtype=np.int64))
        if flat.size != n:
            raise CorruptChunkError(expected("zarr v2 chunk", f"{n} elements of {dt} for shape {spec.shape}", int(flat.size)))
        arr = flat.reshape(spec.shape, order="F" if self.order == "F" else "C")
        if arr.dtype != spec.dtype:
            arr = arr.astype(spec.dtype)
        # (np.ascontiguousarray would make a 0-d chunk 1-d)
        return arr if arr.flags.c_contiguous else np.array(arr, order="C")


def native_compressor(config: dict[str, Any] | None, itemsize: int) -> Codec | None:
    """zarrcy's own codec equivalent to a numcodecs compressor configuration, or None.

    Equivalent means: decodes every stream numcodecs writes, and what it writes
    numcodecs decodes (byte-identical output is not required).
    """
    if config is None:
        return None
    cid = config.get("id")
    keys = set(config) - {"id"}
    try:
        if cid == "blosc" and keys <= {"cname", "clevel", "shuffle", "blocksize", "typesize"}:
            from zarrcy.codecs.blosc import BloscCodec

            cname = config.get("cname", "lz4")
            if cname not in ("lz4", "lz4hc", "blosclz", "zstd", "zlib"):
                return None
            shuffle = config.get("shuffle", 1)
            return BloscCodec(cname=cname, clevel=int(config.get("clevel", 5)), shuffle=shuffle,
                              typesize=max(1, itemsize), blocksize=int(config.get("blocksize", 0) or 0))
        if cid == "zstd" and keys <= {"level", "checksum"}:
            from zarrcy.codecs.zstd import ZstdCodec

            return ZstdCodec(level=int(config.get("level", 1)), checksum=bool(config.get("checksum", False)))
        if cid == "gzip" and keys <= {"level"}:
            from zarrcy.codecs.gzip import GzipCodec

            return GzipCodec(level=int(config.get("level", 1)))
    except (MetadataError, TypeError, ValueError, OverflowError):
        return None  # an odd configuration: numcodecs itself decides (the wrapper codec)
    return None


def v2_codecs(data_type: Any, order: str, filters: list[dict] | None, compressor: dict | None,
              ndim: int, path: str = "") -> tuple[Codec, ...]:
    """The codec chain (see module docstring) for a v2 array's chunks."""
    from zarrcy.codecs.bytes import BytesCodec
    from zarrcy.codecs.transpose import TransposeCodec

    sd = data_type.stored_dtype
    vlen = getattr(data_type, "vlen", None)
    if vlen is not None:
        # zarr-python's "|O" + [vlen-utf8 | vlen-bytes]: the filter writes exactly the
        # zarr-extensions vlen-utf8 / vlen-bytes chunk layout, so the chain is zarrcy's
        # vlen serializer (elements in ``order``) + the compressor
        if len(filters or ()) != 1:
            p = f"{path}.filters" if path else "filters"
            raise MetadataError(expected(p, f"only the {vlen} object codec for an '|O' array", filters), p)
        from zarrcy.codecs.vlen import VLenBytesCodec, VLenUTF8Codec

        chain: list[Codec] = []
        if order == "F" and ndim > 1:
            chain.append(TransposeCodec(order=tuple(range(ndim - 1, -1, -1))))
        chain.append(VLenUTF8Codec() if vlen == "vlen-utf8" else VLenBytesCodec())
        if compressor is not None:
            native = native_compressor(compressor, 1)
            chain.append(native if native is not None else NumcodecsBytesCodec.from_config(compressor, f"{path}compressor" if not path else f"{path}.compressor"))
        return tuple(chain)
    simple = sd.fields is None and sd.subdtype is None and sd.kind in "biufc"
    if filters or not simple:
        return (V2ChunkCodec.build(data_type.to_json(), order, filters, compressor),)
    chain = []
    if order == "F" and ndim > 1:
        chain.append(TransposeCodec(order=tuple(range(ndim - 1, -1, -1))))
    chain.append(BytesCodec(endian=data_type.endian))
    if compressor is not None:
        native = native_compressor(compressor, sd.itemsize)
        chain.append(native if native is not None else NumcodecsBytesCodec.from_config(compressor, f"{path}compressor" if not path else f"{path}.compressor"))
    return tuple(chain)
