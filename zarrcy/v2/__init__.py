"""Zarr v2 (read/write) and v1 (read) support on zarrcy's array machinery.

Documents only, one layer below the nodes: ``zarrcy.nodes`` opens v2 nodes from
:func:`load_v2_metadata`, ``zarrcy.creation`` creates them (``zarr_format=2``).

See :mod:`zarrcy.v2.metadata` (documents, ``.zmetadata``),
:mod:`zarrcy.v2.dtypes` (data types, fill values) and :mod:`zarrcy.v2.codecs`
(how v2 filters/compressors run in the codec pipeline).
"""

from zarrcy.v2.codecs import NumcodecsBytesCodec, V2ChunkCodec, native_compressor, v2_codecs
from zarrcy.v2.dtypes import V2DataType, parse_v2_dtype, parse_v2_fill_value, v2_dtype_to_json, v2_fill_value_to_json
from zarrcy.v2.metadata import (
    V1ArrayMetadata,
    V2ArrayMetadata,
    V2GroupMetadata,
    check_new_v2,
    ensure_parents_v2,
    is_v2_node,
    load_v2_metadata,
    read_consolidated,
    write_consolidated,
)

__all__ = [
    "NumcodecsBytesCodec",
    "V2ChunkCodec",
    "native_compressor",
    "v2_codecs",
    "V2DataType",
    "parse_v2_dtype",
    "parse_v2_fill_value",
    "v2_dtype_to_json",
    "v2_fill_value_to_json",
    "V1ArrayMetadata",
    "V2ArrayMetadata",
    "V2GroupMetadata",
    "check_new_v2",
    "ensure_parents_v2",
    "is_v2_node",
    "load_v2_metadata",
    "read_consolidated",
    "write_consolidated",
]
