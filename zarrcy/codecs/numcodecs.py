"""zarr-python 3's ``numcodecs.<id>`` codecs in Zarr v3 metadata (not in the core spec).

zarr-python writes a numcodecs codec into a v3 ``codecs`` list as
``{"name": "numcodecs.<id>", "configuration": {<the numcodecs configuration without "id">}}``
(``zarr.codecs.numcodecs``).  zarrcy reads and writes the same, running numcodecs itself:

* bytes -> bytes: ``blosc, lz4, zstd, zlib, gzip, bz2, lzma, shuffle, crc32, crc32c,
  adler32, fletcher32, jenkins_lookup3``;
* array -> array (same shape): ``delta, bitround, quantize, astype`` -- ``delta``
  (``astype``) and ``astype`` (``encode_dtype``) change the encoded data type.

The classes take numcodecs' keyword arguments, as zarr-python's do:
``LZMA(preset=1)``, ``Delta(dtype="int32")``.  ``numcodecs.fixedscaleoffset`` is
:mod:`zarrcy.codecs.scale_offset`'s (read as scale_offset + cast_value).
Prefer zarrcy's native ``blosc``/``zstd``/``gzip`` codecs for new arrays.

**Bounded decoding** (decompression bombs; shared with the Zarr v2 wrappers of
:mod:`zarrcy.v2.codecs`): every numcodecs decode goes through :func:`decode_capped`
with the most bytes the chunk can need (its decoded size when the pipeline knows it,
else ``zarrcy.config(max_chunk_bytes=...)``).  For ids whose stream format the standard
library reads (``zlib``, ``gzip``, ``bz2``, ``lzma``) zarrcy decodes the stream itself
with ``max_length`` (same results as numcodecs, including its handling of several
streams and trailing bytes), ``zstd`` goes through the capped streaming decoder of
:mod:`zarrcy.codecs.zstd`, and ``blosc``/``lz4`` headers state the decoded size, checked
before numcodecs decodes (a chunk that *claims* more than the cap is refused before
anything is allocated).  Any other id (checksums, shuffle, third-party codecs) is
decoded by numcodecs and refused *after* decoding when its output exceeds the cap.

Errors: a decoder's failure on the stored bytes is a :class:`CorruptChunkError` (the
decoder's exception kept as its cause); a ``MemoryError`` is not caught -- running out
of memory says nothing about the stored bytes (as in :mod:`zarrcy.codecs.pipeline`).
"""

from __future__ import annotations

import bz2
import json
import lzma
import zlib
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Self

import numpy as np

from zarrcy.config import get as _config_get
from zarrcy.codecs._base import ArrayArrayCodec, ArraySpec, BytesBytesCodec
from zarrcy.codecs._common import as_uint8, nbytes_of
from zarrcy.codecs.blosc import blosc_header
from zarrcy.codecs.gzip import _zlib_decompress
from zarrcy.codecs.zstd import decompress_capped
from zarrcy.errors import CorruptChunkError, MetadataError, expected
from zarrcy.metadata._parse import config_dict

__all__ = [
    "Blosc", "LZ4", "Zstd", "Zlib", "GZip", "BZ2", "LZMA", "Shuffle", "CRC32", "CRC32C", "Adler32", "Fletcher32",
    "JenkinsLookup3", "Delta", "BitRound", "Quantize", "AsType", "BYTES_BYTES", "ARRAY_ARRAY", "decode_capped",
]

PREFIX = "numcodecs."


def _numcodec(codec_id: str, config: dict[str, Any], path: str) -> Any:
    import numcodecs

    try:
        return numcodecs.get_codec({"id": codec_id, **config})
    except Exception as e:  # numcodecs constructors raise anything on bad configurations
        raise MetadataError(expected(path, f"a valid numcodecs.{codec_id} configuration",
                                     f"{config!r} ({type(e).__name__}: {e})"), path) from None


class _Numcodec:
    """What both kinds share: the configuration (canonical JSON, hashable) and the
    numcodecs object, made once."""

    codec_id: ClassVar[str]
    config_json: str

    def __init__(self, **config: Any) -> None:
        config.pop("id", None)
        object.__setattr__(self, "config_json", json.dumps(config, sort_keys=True))
        self.codec("configuration")  # bad configurations fail now, not per chunk

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        # free-form: numcodecs' constructor checks the keys (below, with the JSON path)
        cfg = dict(config_dict(configuration, path, None))
        if "id" in cfg and cfg["id"] != cls.codec_id:
            raise MetadataError(expected(f"{path}.configuration.id", repr(cls.codec_id), cfg["id"]),
                                f"{path}.configuration.id")
        obj = cls.__new__(cls)
        cfg.pop("id", None)
        object.__setattr__(obj, "config_json", json.dumps(cfg, sort_keys=True))
        obj.codec(f"{path}.configuration")
        return obj

    @property
    def codec_config(self) -> dict[str, Any]:
        return {"id": self.codec_id, **json.loads(self.config_json)}

    def codec(self, path: str = "configuration") -> Any:
        cached = self.__dict__.get("_codec")
        if cached is None:
            cached = _numcodec(self.codec_id, json.loads(self.config_json), path)
            object.__setattr__(self, "_codec", cached)
        return cached

    def to_dict(self) -> dict[str, Any]:
        return {"name": PREFIX + self.codec_id, "configuration": json.loads(self.config_json)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in json.loads(self.config_json).items())})"


#: checksum codecs: a fixed 4-byte checksum beside the data (so they may be shard index codecs)
_CHECKSUM_IDS = frozenset(("crc32", "crc32c", "adler32", "fletcher32"))




def decode_error(what: str, e: BaseException) -> CorruptChunkError:
    return CorruptChunkError(expected(what, "decodable bytes", f"{type(e).__name__}: {e}"))


def chunk_cap() -> int:
    """The most bytes a chunk of unknown decoded size may decode to (``max_chunk_bytes``)."""
    return int(_config_get("max_chunk_bytes"))


def _too_big(what: str, cap: int, got: Any = "more") -> CorruptChunkError:
    return CorruptChunkError(expected(what, f"at most {cap} decoded bytes", got))


def _streams_capped(make: Any, data: Any, cap: int, what: str, errors: tuple[type[BaseException], ...],
                    multi: bool) -> bytes:
    """Decode concatenated streams as ``bz2.decompress``/``lzma.decompress`` do (a
    later stream that does not parse ends the data; an unfinished one is an error),
    but with ``max_length``: never more than ``cap + 1`` bytes of output exist."""
    buf = bytes(data) if not isinstance(data, bytes) else data
    parts: list[bytes] = []
    total = 0
    while True:
        d = make()
        try:
            part = d.decompress(buf, cap - total + 1)
        except errors as e:
            if parts:
                break  # leftover bytes that are not a stream: ignored, as the stdlib does
            raise decode_error(what, e) from e
        total += len(part)
        if total > cap:
            raise _too_big(what, cap)
        parts.append(part)
        if not d.eof:
            if d.needs_input:
                raise CorruptChunkError(expected(what, "a complete stream", "truncated data"))
            raise _too_big(what, cap)  # pragma: no cover - max_length reached means total > cap
        buf = d.unused_data
        if not multi or not buf:
            break
    return parts[0] if len(parts) == 1 else b"".join(parts)


def decode_capped(codec: Any, data: Any, cap: int) -> Any:
    """``codec.decode(data)`` for a numcodecs codec, refusing output above ``cap`` bytes
    (see the module docstring for how each id is bounded).  Decoding failures are
    CorruptChunkError (cause kept); MemoryError passes through."""
    cid = getattr(codec, "codec_id", None)
    what = f"numcodecs.{cid}"
    if cid == "zlib":  # numcodecs: zlib.decompress(buf) -- one stream, trailing bytes ignored
        d = zlib.decompressobj()
        try:
            out = d.decompress(bytes(data) if not isinstance(data, bytes) else data, cap + 1)
        except zlib.error as e:
            raise decode_error(what, e) from e
        if len(out) > cap:
            raise _too_big(what, cap)
        if not d.eof:
            raise CorruptChunkError(expected(what, "a complete stream", "truncated data"))
        return out
    if cid == "gzip":  # numcodecs: GzipFile.read() -- every member, trailing zeros allowed
        if not nbytes_of(data):
            return b""
        return _zlib_decompress(data, cap)
    if cid == "bz2":  # numcodecs: bz2.decompress
        return _streams_capped(bz2.BZ2Decompressor, data, cap, what, (OSError, ValueError), True)
    if cid == "lzma":  # numcodecs: lzma.decompress(buf, format=..., filters=...)
        fmt, filters = codec.format, codec.filters

        def make() -> Any:
            try:
                return lzma.LZMADecompressor(fmt, None, filters)
            except (ValueError, TypeError, lzma.LZMAError) as e:
                raise decode_error(what, e) from e

        return _streams_capped(make, data, cap, what, (lzma.LZMAError, ValueError), True)
    if cid == "zstd":
        return decompress_capped(data, cap)
    if cid == "blosc":  # the header states the decoded size (c-blosc README_CHUNK_FORMAT)
        nbytes = blosc_header(data)[0]
        if nbytes > cap:
            raise _too_big(what, cap, nbytes)
    elif cid == "lz4":  # numcodecs' lz4 frames: a little-endian int32 decoded size, then the block
        head = bytes(as_uint8(data)[:4])
        if len(head) < 4:
            raise CorruptChunkError(expected(what, "at least 4 bytes (decoded size)", len(head)))
        nbytes = int.from_bytes(head, "little", signed=True)
        if nbytes > cap:
            raise _too_big(what, cap, nbytes)
    try:
        out = codec.decode(data)
    except (CorruptChunkError, MemoryError):
        raise  # out of memory is not a corrupt chunk (hostile size claims are refused above)
    except Exception as e:  # third-party decoders raise anything on bad input
        raise decode_error(what, e) from e
    n = out.nbytes if hasattr(out, "nbytes") else len(out)
    if n > cap:  # third-party ids: checked after decoding only (see the module docstring)
        raise _too_big(what, cap, n)
    return out


@dataclass(frozen=True, init=False, repr=False)
class _BytesBytes(_Numcodec, BytesBytesCodec):
    config_json: str

    def encode(self, data: Any, spec: ArraySpec) -> Any:
        src = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
        out = self.codec().encode(src)
        return out if isinstance(out, (bytes, bytearray, memoryview)) else memoryview(np.ascontiguousarray(out)).cast("B")

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return input_size + 4 if self.codec_id in _CHECKSUM_IDS else None

    def decode(self, data: Any, spec: ArraySpec) -> Any:
        # decoded size unknown here: max_chunk_bytes bounds it (zstd: check_frames first,
        # numcodecs' streaming decoder can hang on truncated frames)
        return _flat(decode_capped(self.codec(), data, chunk_cap()))

    def decode_sized(self, data: Any, size: int, spec: ArraySpec) -> Any:
        out = decode_capped(self.codec(), data, size)
        n = nbytes_of(out)
        if n != size:
            raise CorruptChunkError(expected(f"{self.name} output", f"{size} bytes", n))
        return _flat(out)


def _flat(out: Any) -> Any:
    return out if isinstance(out, (bytes, bytearray, memoryview)) else memoryview(np.ascontiguousarray(out)).cast("B")


@dataclass(frozen=True, init=False, repr=False)
class _ArrayArray(_Numcodec, ArrayArrayCodec):
    """A numcodecs filter over the whole chunk (shape kept; the data type may change)."""

    config_json: str

    def encoded_dtype(self, dtype: np.dtype) -> np.dtype:
        return dtype

    def resolve(self, spec: ArraySpec) -> ArraySpec:
        dt = self.encoded_dtype(spec.dtype)
        if dt == spec.dtype:
            return spec
        fill = np.zeros((), dtype=dt)[()]
        try:
            with np.errstate(all="ignore"):
                fill = np.asarray(spec.fill_value).astype(dt)[()]
        except (TypeError, ValueError):
            pass
        return replace(spec, dtype=dt, fill_value=fill, data_type=None)

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        out = np.asarray(self.codec().encode(np.ascontiguousarray(chunk)))
        dt = self.encoded_dtype(spec.dtype)
        return out.view(dt).reshape(spec.shape) if out.dtype != dt and out.dtype.itemsize == dt.itemsize else \
            out.astype(dt, copy=False).reshape(spec.shape)

    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        try:
            out = np.asarray(self.codec().decode(np.ascontiguousarray(chunk)))
        except MemoryError:
            raise  # not a corrupt chunk (the output is the chunk's size: nothing to bound)
        except Exception as e:  # noqa: BLE001 - third-party decoders raise anything
            raise decode_error(PREFIX + self.codec_id, e) from e
        if out.dtype != spec.dtype:
            out = out.view(spec.dtype) if out.dtype.itemsize == spec.dtype.itemsize and out.dtype.kind == "u" else \
                out.astype(spec.dtype)
        return out.reshape(spec.shape)


def _bytes_codec(cls_name: str, codec_id: str) -> type[_BytesBytes]:
    cls: type[_BytesBytes] = dataclass(frozen=True, init=False, repr=False)(
        type(cls_name, (_BytesBytes,), {"codec_id": codec_id, "name": PREFIX + codec_id, "__module__": __name__,
                                         "__qualname__": cls_name, "__annotations__": {}})
    )
    return cls


Blosc = _bytes_codec("Blosc", "blosc")
LZ4 = _bytes_codec("LZ4", "lz4")
Zstd = _bytes_codec("Zstd", "zstd")
Zlib = _bytes_codec("Zlib", "zlib")
GZip = _bytes_codec("GZip", "gzip")
BZ2 = _bytes_codec("BZ2", "bz2")
LZMA = _bytes_codec("LZMA", "lzma")
Shuffle = _bytes_codec("Shuffle", "shuffle")
CRC32 = _bytes_codec("CRC32", "crc32")
CRC32C = _bytes_codec("CRC32C", "crc32c")
Adler32 = _bytes_codec("Adler32", "adler32")
Fletcher32 = _bytes_codec("Fletcher32", "fletcher32")
JenkinsLookup3 = _bytes_codec("JenkinsLookup3", "jenkins_lookup3")


@dataclass(frozen=True, init=False, repr=False)
class Delta(_ArrayArray):
    codec_id: ClassVar[str] = "delta"
    name: ClassVar[str] = PREFIX + "delta"

    def encoded_dtype(self, dtype: np.dtype) -> np.dtype:
        astype = json.loads(self.config_json).get("astype")
        return np.dtype(astype) if astype else dtype


@dataclass(frozen=True, init=False, repr=False)
class BitRound(_ArrayArray):
    codec_id: ClassVar[str] = "bitround"
    name: ClassVar[str] = PREFIX + "bitround"


@dataclass(frozen=True, init=False, repr=False)
class Quantize(_ArrayArray):
    codec_id: ClassVar[str] = "quantize"
    name: ClassVar[str] = PREFIX + "quantize"

    def encoded_dtype(self, dtype: np.dtype) -> np.dtype:
        astype = json.loads(self.config_json).get("astype")
        return np.dtype(astype) if astype else dtype


@dataclass(frozen=True, init=False, repr=False)
class AsType(_ArrayArray):
    codec_id: ClassVar[str] = "astype"
    name: ClassVar[str] = PREFIX + "astype"

    def encoded_dtype(self, dtype: np.dtype) -> np.dtype:
        return np.dtype(json.loads(self.config_json)["encode_dtype"])


#: registry entries (zarrcy/codecs/registry.py): codec name -> "module:Class"
BYTES_BYTES = {PREFIX + c.codec_id: f"{__name__}:{c.__qualname__}" for c in (
    Blosc, LZ4, Zstd, Zlib, GZip, BZ2, LZMA, Shuffle, CRC32, CRC32C, Adler32, Fletcher32, JenkinsLookup3)}
ARRAY_ARRAY = {PREFIX + c.codec_id: f"{__name__}:{c.__qualname__}" for c in (Delta, BitRound, Quantize, AsType)}
