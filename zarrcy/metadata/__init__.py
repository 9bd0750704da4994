"""The Zarr v3 metadata vocabulary: data types, fill values, node names and the JSON
parsing helpers every document parser shares (``_parse``).

One layer (2), below the codecs: codecs, chunk grids and key encodings build on it.
The node documents themselves (``ArrayMetadata``, ``GroupMetadata``), which hold a
parsed codec chain, are :mod:`zarrcy.document`.
"""

from __future__ import annotations

from zarrcy.metadata.data_type import DATA_TYPES, DataType, FloatFormat, from_numpy, parse_data_type
from zarrcy.metadata.fill_value import default_fill_value, fill_value_to_json, parse_fill_value
from zarrcy.metadata.names import normalize_path, validate_node_name

__all__ = [
    "DataType",
    "FloatFormat",
    "DATA_TYPES",
    "parse_data_type",
    "from_numpy",
    "parse_fill_value",
    "fill_value_to_json",
    "default_fill_value",
    "validate_node_name",
    "normalize_path",
]
