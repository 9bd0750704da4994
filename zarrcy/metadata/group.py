"""Group metadata documents (v3-core.rst "Group metadata").

``{"zarr_format": 3, "node_type": "group", "attributes"?: {...}}`` plus unknown keys
marked ``"must_understand": false`` (e.g. zarr-python's ``consolidated_metadata``),
which are kept in ``extra`` and written back after ``attributes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zarrcy.metadata._parse import dumps, load_json_object
from zarrcy.metadata.array import check_format, parse_attributes, split_extra

__all__ = ["GroupMetadata", "ConsolidatedMetadata"]

_KNOWN = frozenset(("zarr_format", "node_type", "attributes"))


@dataclass(frozen=True)
class GroupMetadata:
    attributes: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: bytes | str | dict[str, Any], path: str = "") -> GroupMetadata:
        """Validate and parse a group metadata document; raise MetadataError naming the field."""
        doc = load_json_object(data, path)
        check_format(doc, "group", path)
        extra = split_extra(doc, _KNOWN, path)
        return cls(attributes=parse_attributes(doc, path), extra=extra)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"zarr_format": 3, "node_type": "group"}
        if self.attributes:
            doc["attributes"] = self.attributes
        for k, v in self.extra.items():
            if k not in doc:
                doc[k] = v
        return doc

    def to_bytes(self) -> bytes:
        return dumps(self.to_json())

    @property
    def zarr_format(self) -> int:
        return 3

    @property
    def consolidated_metadata(self) -> "ConsolidatedMetadata | None":
        """zarr-python's ``consolidated_metadata`` field (zarrcy.consolidated) parsed, or
        None when the group has none."""
        cm = self.extra.get("consolidated_metadata")
        if cm is None:
            return None
        return ConsolidatedMetadata.from_json(cm, "consolidated_metadata")

    @property
    def node_type(self) -> str:
        return "group"


@dataclass(frozen=True)
class ConsolidatedMetadata:
    """The node documents of a group's consolidated metadata: relative path ->
    ``ArrayMetadata`` / ``GroupMetadata`` (as zarr-python's class of the same name)."""

    metadata: dict[str, Any] = field(default_factory=dict)
    kind: str = "inline"
    must_understand: bool = False

    @classmethod
    def from_json(cls, data: Any, path: str = "consolidated_metadata") -> "ConsolidatedMetadata":
        from zarrcy.errors import MetadataError, expected
        from zarrcy.metadata.node import parse_node_metadata

        if not isinstance(data, dict):
            raise MetadataError(expected(path, "an object", data), path)
        kind = data.get("kind", "inline")
        if kind != "inline":
            raise MetadataError(expected(f"{path}.kind", "'inline'", kind), f"{path}.kind")
        docs = data.get("metadata", {})
        if not isinstance(docs, dict):
            raise MetadataError(expected(f"{path}.metadata", "an object", docs), f"{path}.metadata")
        meta = {k: parse_node_metadata(v, f"{path}.metadata[{k!r}]") for k, v in docs.items()}
        return cls(metadata=meta, kind=kind, must_understand=bool(data.get("must_understand", False)))
