"""One entry point for any ``zarr.json``: array or group, decided by ``node_type``."""

from __future__ import annotations

from typing import Any

from zarrcy.errors import MetadataError, expected
from zarrcy.metadata._parse import load_json_object
from zarrcy.metadata.array import ArrayMetadata, _join
from zarrcy.metadata.group import GroupMetadata

__all__ = ["parse_node_metadata"]


def parse_node_metadata(data: bytes | str | dict[str, Any], path: str = "") -> ArrayMetadata | GroupMetadata:
    """Parse a ``zarr.json`` (bytes preferred: decimal fill values then round once from
    their text) into :class:`ArrayMetadata` or :class:`GroupMetadata`; the JSON is
    decoded once.  Raises MetadataError naming the field (``path`` prefixes it)."""
    doc = load_json_object(data, path)
    nt = doc.get("node_type")
    if nt == "array":
        return ArrayMetadata._from_doc(doc, data, path)
    if nt == "group":
        return GroupMetadata.from_json(doc, path)
    if "zarr_format" in doc and doc["zarr_format"] != 3:
        p = _join(path, "zarr_format")
        raise MetadataError(expected(p, "3", doc["zarr_format"]), p)
    p = _join(path, "node_type")
    raise MetadataError(expected(p, "'array' or 'group'", nt), p)
