"""zarr-python 3's ``numcodecs.<id>`` codecs in Zarr v3 metadata (not in the core spec).

zarr-python writes a numcodecs codec into a v3 ``codecs`` list as
``{"name": "numcodecs.<id>", "configuration": {<the numcodecs configuration without "id">}}``
(``zarr.codecs.numcodecs``).  zarrcy reads and writes the same, running numcodecs itself:

* bytes -> bytes: ``blosc, lz4, zstd, zlib, gzip, bz2, lzma, shuffle, crc32, crc32c,
  adler32, fletcher32, jenkins_lookup3``;
* array -> array (same shape): ``delta, quantize, astype`` -- ``delta``
  (``astype``) and ``astype`` (``encode_dtype``) change the encoded data type.

``numcodecs.bitround`` is read and written natively (:class:`BitRound`, an alias of
:class:`zarrcy.codecs.bitround.NumcodecsBitRound`: the spec's deprecated alias of
``bitround``, bit for bit numcodecs' rounding, kept under its name when written back).

The classes take numcodecs' keyword arguments, as zarr-python's do:
``LZMA(preset=1)``, ``Delta(dtype="int32")``.  ``numcodecs.fixedscaleoffset`` is
:mod:`zarrcy.codecs.scale_offset`'s (read as scale_offset + cast_value).
Prefer zarrcy's native ``blosc``/``zstd``/``gzip`` codecs for new arrays.

**Configurations** are checked key by key against what numcodecs' constructors take
(:data:`SCHEMA`; unknown, missing, mistyped and out-of-range keys are a MetadataError at
``<path>.configuration.<key>``, as for every codec).  ``lzma``'s format/check/preset/
filters combinations are judged by liblzma in a small trial round trip, and the
array->array codecs run once on the array's data type in ``validate``: numcodecs never
raises a raw TypeError/ValueError at the first write.

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
from typing import Any, Callable, ClassVar, Self

import numpy as np

from zarrcy.codecs._base import ArrayArrayCodec, ArraySpec, BytesBytesCodec
from zarrcy.codecs._limits import CAP_HINT, decode_cap
from zarrcy.codecs._common import as_uint8, get_bool, get_int, nbytes_of
from zarrcy.codecs.bitround import NumcodecsBitRound as BitRound
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


# -- configurations: each id's keys, checked with the JSON path (CONVENTIONS.md rule 3) -----
Check = Callable[[dict[str, Any], str, str], None]
_INT32_MAX = (1 << 31) - 1


def _int(lo: int, hi: int) -> Check:
    def check(cfg: dict[str, Any], key: str, path: str) -> None:
        get_int(cfg, key, path, lo, hi)

    return check


def _one_of(*choices: Any) -> Check:
    """A value equal to one of ``choices`` *and of the same type* (JSON 1.0 is not 1)."""

    def check(cfg: dict[str, Any], key: str, path: str) -> None:
        v = cfg[key]
        if not any(type(v) is type(c) and v == c for c in choices):
            p = f"{path}.configuration.{key}"
            raise MetadataError(expected(p, f"one of {choices}", v), p)

    return check


def _bool(cfg: dict[str, Any], key: str, path: str) -> None:
    get_bool(cfg, key, path)


def _or_null(check: Check) -> Check:
    def nullable(cfg: dict[str, Any], key: str, path: str) -> None:
        if cfg[key] is not None:
            check(cfg, key, path)

    return nullable


def _null(cfg: dict[str, Any], key: str, path: str) -> None:
    if cfg[key] is not None:  # jenkins_lookup3's prefix is bytes: JSON cannot carry it
        p = f"{path}.configuration.{key}"
        raise MetadataError(expected(p, "null", cfg[key]), p)


def _dtype(kinds: str) -> Check:
    """A numpy data type name (``"int32"``, ``"<f8"``) of one of the kinds ``kinds``."""

    def check(cfg: dict[str, Any], key: str, path: str) -> None:
        v = cfg[key]
        p = f"{path}.configuration.{key}"
        what = f"a numpy data type name of kind {'/'.join(kinds)}"
        if type(v) is not str:
            raise MetadataError(expected(p, what, v), p)
        try:
            dt = np.dtype(v)
        except (TypeError, ValueError, SyntaxError):
            raise MetadataError(expected(p, what, v), p) from None
        if dt.kind not in kinds or dt.fields is not None or dt.subdtype is not None:
            raise MetadataError(expected(p, what, v), p)

    return check


def _lzma_preset(cfg: dict[str, Any], key: str, path: str) -> None:
    v = cfg[key]
    if type(v) is not int or not 0 <= v & ~lzma.PRESET_EXTREME <= 9 or v >> 32:
        p = f"{path}.configuration.{key}"
        raise MetadataError(expected(p, "null or a preset 0..9 (optionally | lzma.PRESET_EXTREME)", v), p)


def _lzma_filters(cfg: dict[str, Any], key: str, path: str) -> None:
    v = cfg[key]
    p = f"{path}.configuration.{key}"
    if type(v) is not list:
        raise MetadataError(expected(p, "null or an array of filter objects", v), p)
    for i, f in enumerate(v):
        what = "an lzma filter specifier (an object with an integer 'id' and that filter's options)"
        if type(f) is not dict or type(f.get("id")) is not int:
            raise MetadataError(expected(f"{p}[{i}]", what, f), f"{p}[{i}]")
        check = getattr(lzma, "_encode_filter_properties", None)  # private (stable since 3.3)
        if check is None:  # gone in some future Python: the trial round trip still judges the chain
            continue
        try:  # the stdlib's own check of one specifier (id, option names and ranges): no encoder made
            check(f)
        except (ValueError, TypeError, OverflowError, lzma.LZMAError):
            raise MetadataError(expected(f"{p}[{i}]", what, f), f"{p}[{i}]") from None


def _lzma_small(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` with the same format, check and filter chain but a small dictionary
    (preset 0, dict_size <= 1 MiB): what the trial round trip runs, so checking a
    preset-9 configuration does not allocate its ~700 MiB encoder."""
    out = dict(cfg)
    if out.get("preset") is not None:
        out["preset"] = 0
    if out.get("filters"):
        out["filters"] = [
            {**f, **({"preset": 0} if "preset" in f else {}),
             **({"dict_size": min(f["dict_size"], 1 << 20)} if "dict_size" in f else {})}
            if f["id"] in (lzma.FILTER_LZMA1, lzma.FILTER_LZMA2) else f
            for f in out["filters"]
        ]
    return out


_LEVEL_ZLIB = {"level": _int(-1, 9)}
_LOCATION = {"location": _or_null(_one_of("start", "end"))}
_NUMERIC = "biufcmM"  # numeric, bool, datetime64/timedelta64 (validate runs the codec on the array type)

#: id -> (checker per key, required keys): what numcodecs' constructors accept
SCHEMA: dict[str, tuple[dict[str, Check], tuple[str, ...]]] = {
    "blosc": ({"cname": _one_of("blosclz", "lz4", "lz4hc", "zlib", "zstd"), "clevel": _int(0, 9),
               "shuffle": _one_of(-1, 0, 1, 2), "blocksize": _int(0, _INT32_MAX),
               "typesize": _or_null(_int(1, _INT32_MAX))}, ()),
    "lz4": ({"acceleration": _int(-_INT32_MAX - 1, _INT32_MAX)}, ()),
    "zstd": ({"level": _int(-131072, 22), "checksum": _bool}, ()),
    "zlib": (_LEVEL_ZLIB, ()),
    "gzip": (_LEVEL_ZLIB, ()),
    "bz2": ({"level": _int(1, 9)}, ()),
    "lzma": ({"format": _one_of(0, 1, 2, 3), "check": _one_of(-1, 0, 1, 4, 10),
              "preset": _or_null(_lzma_preset), "filters": _or_null(_lzma_filters)}, ()),
    "shuffle": ({"elementsize": _int(0, _INT32_MAX)}, ()),
    "crc32": (_LOCATION, ()),
    "crc32c": (_LOCATION, ()),
    "adler32": (_LOCATION, ()),
    "fletcher32": ({}, ()),
    "jenkins_lookup3": ({"initval": _int(0, (1 << 32) - 1), "prefix": _null}, ()),
    "delta": ({"dtype": _dtype(_NUMERIC), "astype": _or_null(_dtype(_NUMERIC))}, ("dtype",)),
    "quantize": ({"digits": _int(-300, 300), "dtype": _dtype("f"), "astype": _or_null(_dtype("f"))},
                 ("digits", "dtype")),
    "astype": ({"encode_dtype": _dtype(_NUMERIC), "decode_dtype": _dtype(_NUMERIC)}, ("encode_dtype", "decode_dtype")),
}


def check_configuration(codec_id: str, configuration: Any, path: str) -> dict[str, Any]:
    """``configuration`` of ``numcodecs.<codec_id>`` at JSON path ``path`` (the codec
    object's path), checked key by key; returns it without an ``id`` key (zarr-python
    never writes one; an ``id`` equal to the codec's is tolerated)."""
    cfg = dict(config_dict(configuration, path, None))
    if "id" in cfg:
        if cfg.pop("id") != codec_id:
            p = f"{path}.configuration.id"
            raise MetadataError(expected(p, repr(codec_id), (configuration or {}).get("id")), p)
    checks, required = SCHEMA[codec_id]
    config_dict(cfg, path, checks, required)  # unknown and missing keys
    for key, check in checks.items():
        if key in cfg:
            check(cfg, key, path)
    return cfg


def _numcodec(codec_id: str, config: dict[str, Any], path: str) -> Any:
    import numcodecs

    try:
        return numcodecs.get_codec({"id": codec_id, **config})
    except Exception as e:  # numcodecs constructors raise anything on bad configurations
        raise MetadataError(expected(path, f"a valid numcodecs.{codec_id} configuration",
                                     f"{config!r} ({type(e).__name__}: {e})"), path) from None


def _try_round_trip(codec: Any, sample: Any, what: str, path: str) -> None:
    """Encode and decode ``sample``: a configuration the checks above let through but
    numcodecs cannot run (lzma filter chains, digits numcodecs' maths refuses) fails
    here, as a MetadataError, not at the first write."""
    try:
        codec.decode(codec.encode(sample))
    except MemoryError:
        raise
    except Exception as e:  # numcodecs raises anything on configurations it cannot run
        p = f"{path}.configuration"
        raise MetadataError(expected(p, what, f"{type(e).__name__}: {e}"), p) from e


class _Numcodec:
    """What both kinds share: the configuration (canonical JSON, hashable) and the
    numcodecs object, made once."""

    codec_id: ClassVar[str]
    config_json: str

    def __init__(self, **config: Any) -> None:
        self._set(config, PREFIX + self.codec_id)

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        obj = cls.__new__(cls)
        obj._set(configuration, path)
        return obj

    def _set(self, configuration: Any, path: str) -> None:
        cfg = check_configuration(self.codec_id, configuration, path)
        object.__setattr__(self, "config_json", json.dumps(cfg, sort_keys=True))
        self._check_runs(self.codec(f"{path}.configuration"), path)  # bad configurations fail now, not per chunk

    def _check_runs(self, codec: Any, path: str) -> None:
        """Overridden per kind: a trial round trip where it needs no array."""

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


def chunk_cap(spec: ArraySpec | None = None) -> int:
    """The most bytes a chunk of ``spec`` of unknown decoded size may decode to
    (``zarrcy.codecs._limits.decode_cap``: ``max_chunk_bytes``, less for vlen chunks)."""
    return decode_cap(spec)


def _too_big(what: str, cap: int, got: Any = "more") -> CorruptChunkError:
    return CorruptChunkError(expected(what, f"at most {cap} decoded bytes ({CAP_HINT})", got))


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

    def _check_runs(self, codec: Any, path: str) -> None:
        # the key checks are complete for every id but lzma, whose format/check/preset/
        # filters combinations liblzma alone judges: one small round trip decides
        if self.codec_id == "lzma":
            small = _numcodec("lzma", _lzma_small(json.loads(self.config_json)), f"{path}.configuration")
            _try_round_trip(small, np.arange(64, dtype=np.uint8), "a configuration numcodecs.lzma can run", path)

    def decode(self, data: Any, spec: ArraySpec) -> Any:
        # decoded size unknown here: max_chunk_bytes bounds it (zstd: check_frames first,
        # numcodecs' streaming decoder can hang on truncated frames)
        return _flat(decode_capped(self.codec(), data, chunk_cap(spec)))

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

    def validate(self, spec: ArraySpec, path: str) -> None:
        # the configuration alone cannot say (bitround: keepbits against the mantissa;
        # dtypes numcodecs cannot convert): run it once on the array's data type
        _try_round_trip(self.codec(), np.zeros(4, dtype=spec.dtype),
                        f"a configuration numcodecs.{self.codec_id} can run on {spec.dtype} data", path)

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
ARRAY_ARRAY = {PREFIX + c.codec_id: f"{__name__}:{c.__qualname__}" for c in (Delta, Quantize, AsType)}
#: numcodecs.bitround runs natively (zarrcy/codecs/bitround.py; written back under this name)
ARRAY_ARRAY[PREFIX + "bitround"] = "zarrcy.codecs.bitround:NumcodecsBitRound"
