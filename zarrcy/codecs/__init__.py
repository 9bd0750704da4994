"""Codecs (v3-core.rst "Chunk encoding", "Codecs") and the codec pipeline.

Importing this package imports no codec module: the convenience classes below
and the registry's table are resolved on first use.

Public API::

    parse_codecs(json_list, spec, path="codecs") -> list[Codec]
    codec_from_dict(obj, path) -> Codec
    codecs_to_json(codecs) -> list
    get_codec_class(name) / register_codec(name, cls)   # + entry-point group "zarrcy.codecs"
    default_codecs(dtype) / default_compressors(dtype=None) / default_serializer(dtype)
    BytesCodec, TransposeCodec, GzipCodec (Gzip), Crc32cCodec, BloscCodec, ZstdCodec
    ReshapeCodec, BitroundCodec, PackBitsCodec (zarr-extensions codecs)
    CodecPipeline (zarrcy.codecs.pipeline)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zarrcy.codecs._base import (
    ArrayArrayCodec,
    ArrayBytesCodec,
    ArraySpec,
    ByteGetter,
    ByteSetter,
    BytesBytesCodec,
    Codec,
)
from zarrcy.codecs.registry import (
    ALIASES,
    CODECS,
    ENTRY_POINT_GROUP,
    codec_from_dict,
    codecs_to_json,
    get_codec_class,
    parse_codecs,
    register_codec,
    resolve_codecs,
)

if TYPE_CHECKING:
    import numpy as np

    from zarrcy.codecs.blosc import BloscCodec
    from zarrcy.codecs.bytes import BytesCodec
    from zarrcy.codecs.crc32c_ import Crc32cCodec
    from zarrcy.codecs.gzip import Gzip, GzipCodec
    from zarrcy.codecs.pipeline import CodecPipeline
    from zarrcy.codecs.transpose import TransposeCodec
    from zarrcy.codecs.zstd import ZstdCodec
    from zarrcy.codecs.bitround import BitroundCodec
    from zarrcy.codecs.packbits import PackBitsCodec
    from zarrcy.codecs.reshape import ReshapeCodec

__all__ = [
    "ArraySpec",
    "ByteGetter",
    "ByteSetter",
    "Codec",
    "ArrayArrayCodec",
    "ArrayBytesCodec",
    "BytesBytesCodec",
    "CODECS",
    "ALIASES",
    "ENTRY_POINT_GROUP",
    "codec_from_dict",
    "codecs_to_json",
    "get_codec_class",
    "parse_codecs",
    "register_codec",
    "resolve_codecs",
    "default_codecs",
    "default_compressors",
    "default_filters",
    "default_serializer",
    "BytesCodec",
    "TransposeCodec",
    "GzipCodec",
    "Gzip",
    "Crc32cCodec",
    "BloscCodec",
    "ZstdCodec",
    "ReshapeCodec",
    "BitroundCodec",
    "PackBitsCodec",
    "CodecPipeline",
]

_LAZY = {
    "BytesCodec": "zarrcy.codecs.bytes",
    "TransposeCodec": "zarrcy.codecs.transpose",
    "GzipCodec": "zarrcy.codecs.gzip",
    "Gzip": "zarrcy.codecs.gzip",
    "Crc32cCodec": "zarrcy.codecs.crc32c_",
    "BloscCodec": "zarrcy.codecs.blosc",
    "ZstdCodec": "zarrcy.codecs.zstd",
    "ReshapeCodec": "zarrcy.codecs.reshape",
    "BitroundCodec": "zarrcy.codecs.bitround",
    "PackBitsCodec": "zarrcy.codecs.packbits",
    "CodecPipeline": "zarrcy.codecs.pipeline",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'zarrcy.codecs' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# -- defaults: what zarr-python 3.4's create_array writes for numeric data types ------------
def default_serializer(dtype: Any) -> Codec:
    """``bytes`` with ``endian: little`` where byte order applies, else without configuration."""
    import numpy as np

    from zarrcy.codecs.bytes import BytesCodec, endian_applies

    return BytesCodec(endian="little" if endian_applies(np.dtype(dtype)) else None)


def default_filters(dtype: Any = None) -> list[Codec]:
    """No array->array codecs."""
    return []


def default_compressors(dtype: Any = None) -> list[Codec]:
    """``zstd`` at level 0 (the library default) without checksum."""
    from zarrcy.codecs.zstd import ZstdCodec

    return [ZstdCodec(level=0, checksum=False)]


def default_codecs(dtype: Any) -> list[Codec]:
    """The whole default chain for ``dtype``: filters, serializer, compressors."""
    return [*default_filters(dtype), default_serializer(dtype), *default_compressors(dtype)]
