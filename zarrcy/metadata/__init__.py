"""Zarr v3 metadata: data types, fill values, node names, array and group documents.

Importing this package loads only the layer-2 modules (data types, fill values, node
names); ``ArrayMetadata``/``GroupMetadata`` (which use ``zarrcy.codecs``) load on first
access, so ``zarrcy.codecs`` may import fill-value helpers from here without a cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zarrcy.metadata.data_type import DATA_TYPES, DataType, FloatFormat, from_numpy, parse_data_type
from zarrcy.metadata.fill_value import default_fill_value, fill_value_to_json, parse_fill_value
from zarrcy.metadata.names import normalize_path, validate_node_name

if TYPE_CHECKING:
    from zarrcy.metadata.array import ArrayMetadata
    from zarrcy.metadata.group import GroupMetadata
    from zarrcy.metadata.node import parse_node_metadata

__all__ = [
    "ArrayMetadata",
    "GroupMetadata",
    "parse_node_metadata",
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


def __getattr__(name: str) -> Any:
    if name == "ArrayMetadata":
        from zarrcy.metadata.array import ArrayMetadata

        return ArrayMetadata
    if name == "GroupMetadata":
        from zarrcy.metadata.group import GroupMetadata

        return GroupMetadata
    if name == "parse_node_metadata":
        from zarrcy.metadata.node import parse_node_metadata

        return parse_node_metadata
    raise AttributeError(f"module 'zarrcy.metadata' has no attribute {name!r}")
