"""Zarr v3 node documents (``zarr.json``): :class:`ArrayMetadata` (shape, data type,
chunk grid, chunk key encoding, codecs, fill value, attributes), :class:`GroupMetadata`
(with consolidated metadata) and :func:`parse_node_metadata`.

One layer above ``zarrcy.codecs`` (an array document holds its parsed codec chain);
the vocabulary they are built from (data types, fill values, node names, the JSON
parsing helpers) is :mod:`zarrcy.metadata`, below the codecs.
"""

from __future__ import annotations

from zarrcy.document.array import ArrayMetadata, ArrayMetadataLike
from zarrcy.document.group import ConsolidatedMetadata, GroupMetadata
from zarrcy.document.node import parse_node_metadata

__all__ = ["ArrayMetadata", "ArrayMetadataLike", "GroupMetadata", "ConsolidatedMetadata", "parse_node_metadata"]
