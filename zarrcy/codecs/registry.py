"""Codec registry and the parser of ``codecs`` lists (v3-core.rst "Codecs",
"Extension definition", "must_understand").

The registry is an explicit table ``name -> "module:Class"``; a module is imported
the first time its name is looked up (importing :mod:`zarrcy.codecs` imports no
codec module).  Third-party codecs come from the entry-point group
``zarrcy.codecs`` (entry point name = codec name, value = the codec class) or from
:func:`register_codec`.  Older identifiers (draft URIs) are aliases, written back
under today's name.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Iterable

from zarrcy.codecs._base import ArrayArrayCodec, ArrayBytesCodec, ArraySpec, BytesBytesCodec, Codec, fill_key
from zarrcy.config import at_fork_reset
from zarrcy.errors import MetadataError, UnknownCodecError, expected
from zarrcy.metadata._parse import parse_extension

__all__ = [
    "CODECS",
    "ALIASES",
    "ENTRY_POINT_GROUP",
    "register_codec",
    "get_codec_class",
    "codec_from_dict",
    "codecs_to_json",
    "parse_codecs",
    "resolve_codecs",
    "MAX_CODEC_NESTING",
]

ENTRY_POINT_GROUP = "zarrcy.codecs"

#: built-in codecs: name -> "module:Class" (imported on first lookup)
CODECS: dict[str, str] = {
    "bytes": "zarrcy.codecs.bytes:BytesCodec",
    "transpose": "zarrcy.codecs.transpose:TransposeCodec",
    "gzip": "zarrcy.codecs.gzip:GzipCodec",
    "crc32c": "zarrcy.codecs.crc32c_:Crc32cCodec",
    "blosc": "zarrcy.codecs.blosc:BloscCodec",
    "zstd": "zarrcy.codecs.zstd:ZstdCodec",
    "cast_value": "zarrcy.codecs.cast_value:CastValueCodec",
    "scale_offset": "zarrcy.codecs.scale_offset:ScaleOffsetCodec",
    # read-only alias of [scale_offset, cast_value{out_of_range: "wrap"}] (ext-codec-scale_offset.md)
    "numcodecs.fixedscaleoffset": "zarrcy.codecs.scale_offset:FixedScaleOffsetCodec",
    "sharding_indexed": "zarrcy.codecs.sharding:ShardingCodec",
    # zarr-extensions codecs/reshape, codecs/bitround, codecs/packbits
    "reshape": "zarrcy.codecs.reshape:ReshapeCodec",
    "bitround": "zarrcy.codecs.bitround:BitroundCodec",
    "packbits": "zarrcy.codecs.packbits:PackBitsCodec",
    # zarr-extensions codecs/vlen-utf8, codecs/vlen-bytes (data types "string", "bytes")
    "vlen-utf8": "zarrcy.codecs.vlen:VLenUTF8Codec",
    "vlen-bytes": "zarrcy.codecs.vlen:VLenBytesCodec",
    # internal, read-only: HDF5 chunks as zarrcy.storage.hdf5 serves them (never written)
    "zarrcy.hdf5_chunk": "zarrcy.codecs.hdf5:HDF5ChunkCodec",
    # zarr-python 3's numcodecs.<id> codecs (zarrcy/codecs/numcodecs.py)
    "numcodecs.blosc": "zarrcy.codecs.numcodecs:Blosc",
    "numcodecs.lz4": "zarrcy.codecs.numcodecs:LZ4",
    "numcodecs.zstd": "zarrcy.codecs.numcodecs:Zstd",
    "numcodecs.zlib": "zarrcy.codecs.numcodecs:Zlib",
    "numcodecs.gzip": "zarrcy.codecs.numcodecs:GZip",
    "numcodecs.bz2": "zarrcy.codecs.numcodecs:BZ2",
    "numcodecs.lzma": "zarrcy.codecs.numcodecs:LZMA",
    "numcodecs.shuffle": "zarrcy.codecs.numcodecs:Shuffle",
    "numcodecs.crc32": "zarrcy.codecs.numcodecs:CRC32",
    "numcodecs.crc32c": "zarrcy.codecs.numcodecs:CRC32C",
    "numcodecs.adler32": "zarrcy.codecs.numcodecs:Adler32",
    "numcodecs.fletcher32": "zarrcy.codecs.numcodecs:Fletcher32",
    "numcodecs.jenkins_lookup3": "zarrcy.codecs.numcodecs:JenkinsLookup3",
    "numcodecs.delta": "zarrcy.codecs.numcodecs:Delta",
    "numcodecs.bitround": "zarrcy.codecs.bitround:NumcodecsBitRound",  # bitround's alias, kept as written
    "numcodecs.packbits": "zarrcy.codecs.packbits:NumcodecsPackBits",  # not an alias: another bit order
    "numcodecs.quantize": "zarrcy.codecs.numcodecs:Quantize",
    "numcodecs.astype": "zarrcy.codecs.numcodecs:AsType",
}

#: older identifiers -> today's name (draft-2020-codecs-gzip-blosc.txt, v3-codec-bytes.rst change log)
ALIASES: dict[str, str] = {
    "https://purl.org/zarr/spec/codec/gzip": "gzip",
    "https://purl.org/zarr/spec/codec/gzip/1.0": "gzip",
    "https://purl.org/zarr/spec/codec/blosc": "blosc",
    "https://purl.org/zarr/spec/codec/blosc/1.0": "blosc",
    "https://purl.org/zarr/spec/codec/transpose": "transpose",
    "https://purl.org/zarr/spec/codec/transpose/1.0": "transpose",
    "endian": "bytes",
}

_lock = threading.Lock()


def _reset_lock_after_fork() -> None:
    global _lock
    _lock = threading.Lock()


at_fork_reset(_reset_lock_after_fork)
_classes: dict[str, type[Codec]] = {}
_registered: dict[str, Any] = {}  # name -> class or "module:Class" (register_codec)
_entry_points: dict[str, Any] | None = None


def register_codec(name: str, cls: type[Codec] | str) -> None:
    """Register a codec class (or ``"module:Class"``) under ``name`` at run time."""
    with _lock:
        _registered[name] = cls
        _classes.pop(name, None)


def _load_entry_points() -> dict[str, Any]:
    global _entry_points
    if _entry_points is None:
        from importlib.metadata import entry_points

        try:
            eps = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
        except Exception:  # pragma: no cover - broken distributions
            eps = {}
        _entry_points = eps
    return _entry_points


def _import(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def get_codec_class(name: str, path: str = "codec") -> type[Codec]:
    """The class for codec ``name`` (aliases resolved); UnknownCodecError if none.

    A registered module that cannot be imported is an UnknownCodecError too (not
    an ImportError): the codec is simply not available here.
    """
    name = ALIASES.get(name, name)
    cls = _classes.get(name)
    if cls is not None:
        return cls
    with _lock:
        target: Any = _registered.get(name) or CODECS.get(name)
        if target is None:
            ep = _load_entry_points().get(name)
            if ep is not None:
                target = ep
    if target is None:
        raise UnknownCodecError(expected(f"{path}.name", "a known codec", name), f"{path}.name")
    try:
        if isinstance(target, str):
            cls = _import(target)
        elif isinstance(target, type):
            cls = target
        else:  # an entry point
            cls = target.load()
    except (ImportError, AttributeError) as e:
        raise UnknownCodecError(
            expected(f"{path}.name", "a codec available in this installation", f"{name} ({type(e).__name__}: {e})"),
            f"{path}.name",
        ) from None
    if not (isinstance(cls, type) and issubclass(cls, Codec)):
        raise UnknownCodecError(expected(f"{path}.name", "a zarrcy Codec class", f"{name} -> {cls!r}"), f"{path}.name")
    _classes[name] = cls
    return cls


#: codecs whose configuration holds codecs (``sharding_indexed``'s ``codecs`` and
#: ``index_codecs``) nest at most this deep; deeper chains are refused with
#: MetadataError instead of exhausting the interpreter stack (RecursionError)
MAX_CODEC_NESTING = 16
_DEPTH = threading.local()


def codec_from_dict(obj: Any, path: str = "codecs[0]") -> Codec:
    """A codec from its extension object (or short-hand name string); ``path`` is its JSON path.

    An unknown codec raises UnknownCodecError unless the object says
    ``"must_understand": false``; then it becomes a pass-through codec that
    writes its JSON back unchanged.  Codec objects are returned as they are.
    """
    if isinstance(obj, Codec):
        return obj
    name, configuration, must = parse_extension(obj, path, what="codec")
    try:
        cls = get_codec_class(name, path)
    except UnknownCodecError:
        if must:
            raise
        from zarrcy.codecs.opaque import OpaqueBytesBytesCodec

        return OpaqueBytesBytesCodec(json=dict(obj))  # must_understand=false: only the object form
    depth = getattr(_DEPTH, "n", 0)
    if depth >= MAX_CODEC_NESTING:
        raise MetadataError(
            expected(path, f"codecs nested at most {MAX_CODEC_NESTING} deep (codecs inside a codec's configuration)",
                     f"{name!r} at depth {depth + 1}"),
            path,
        )
    _DEPTH.n = depth + 1
    try:
        return cls.from_dict(configuration, path)
    finally:
        _DEPTH.n = depth


def codecs_to_json(codecs: Iterable[Codec]) -> list[Any]:
    """The JSON list of ``codecs`` (each codec's fully resolved ``to_dict``)."""
    return [c.to_dict() for c in codecs]


def resolve_codecs(
    codecs: Iterable[Any], spec: ArraySpec, path: str = "codecs"
) -> tuple[list[Codec], list[ArraySpec]]:
    """Parse, order-check, evolve and validate a chain (v3-core.rst "Determination of
    encoded representations").

    Returns the codecs (with automatic settings filled in, e.g. blosc ``typesize``,
    transpose ``"C"`` -> a permutation) and, for each, the decoded representation
    it sees: array->array codecs their own input, the array->bytes codec and every
    bytes->bytes codec the array->bytes codec's input.
    """
    if isinstance(codecs, (str, dict)) or not isinstance(codecs, Iterable):
        raise MetadataError(expected(path, "a list of codecs", codecs), path)
    items = list(codecs)
    if not items:
        raise MetadataError(expected(path, "a non-empty list with one array->bytes codec", items), path)
    parsed = [codec_from_dict(c, f"{path}[{i}]") for i, c in enumerate(items)]
    from zarrcy.codecs.opaque import OpaqueArrayArrayCodec, OpaqueCodec

    # opaque codecs take the kind of their position
    n_ab = next((i for i, c in enumerate(parsed) if isinstance(c, ArrayBytesCodec)), None)
    if n_ab is not None:
        parsed = [
            OpaqueArrayArrayCodec(json=c.json) if isinstance(c, OpaqueCodec) and i < n_ab else c
            for i, c in enumerate(parsed)
        ]
    # v3-core.rst "Codecs": array->array* , array->bytes , bytes->bytes*
    phase = 0
    for i, c in enumerate(parsed):
        p = f"{path}[{i}]"
        label = f"{c.kind} codec {c.to_dict().get('name')!r}"
        if isinstance(c, ArrayArrayCodec):
            if phase:
                raise MetadataError(expected(p, "a bytes->bytes codec after the array->bytes codec", label), p)
        elif isinstance(c, ArrayBytesCodec):
            if phase:
                raise MetadataError(expected(p, "exactly one array->bytes codec", f"a second {label}"), p)
            phase = 1
        elif isinstance(c, BytesBytesCodec):
            if not phase:
                raise MetadataError(expected(p, "an array->array or array->bytes codec before bytes->bytes codecs", label), p)
        else:  # pragma: no cover
            raise MetadataError(expected(p, "a codec of a known kind", label), p)
    if not phase:
        raise MetadataError(expected(path, "exactly one array->bytes codec", [c.to_dict() for c in parsed]), path)
    out: list[Codec] = []
    specs: list[ArraySpec] = []
    for i, c in enumerate(parsed):
        c = c.evolve(spec)  # declared on Codec (default: unchanged)
        c.validate(spec, f"{path}[{i}]")
        out.append(c)
        specs.append(spec)
        if isinstance(c, ArrayArrayCodec):
            spec = c.resolve(spec)
    return out, specs


_PARSED: dict[Any, tuple[Codec, ...]] = {}


def parse_codecs(json_list: Any, spec: ArraySpec, path: str = "codecs") -> list[Codec]:
    """Parse and validate a ``codecs`` list against the chunk ``spec``; resolved codecs.

    Results for plain JSON input are memoised: codecs are frozen, and many arrays of a
    hierarchy share one codec configuration.  The key is the ``repr`` of the JSON (it
    tells -0.0 from 0.0 and keeps every float exactly) plus the chunk spec; the path is
    not part of it, so errors are never cached (they raise before storing).
    """
    key = None
    if type(json_list) is list:
        try:
            dt = spec.data_type.to_json() if spec.data_type is not None else None
            key = (repr(json_list), spec.shape, spec.dtype.str, fill_key(spec), repr(dt))
        except (TypeError, ValueError, AttributeError, RecursionError):  # RecursionError: hostile nesting
            key = None
        if key is not None:
            hit = _PARSED.get(key)
            if hit is not None:
                return list(hit)
    out = resolve_codecs(json_list, spec, path)[0]
    if key is not None:
        if len(_PARSED) >= 1024:
            _PARSED.clear()
        _PARSED[key] = tuple(out)
    return out

