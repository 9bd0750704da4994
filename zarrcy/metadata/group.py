"""Group metadata documents (v3-core.rst "Group metadata").

``{"zarr_format": 3, "node_type": "group", "attributes"?: {...}}`` plus unknown keys
marked ``"must_understand": false`` (e.g. zarr-python's ``consolidated_metadata``),
which are kept in ``extra`` and written back after ``attributes``.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Any

from zarrcy.metadata._parse import dumps, load_json_object
from zarrcy.metadata.array import check_format, checked_attributes, parse_attributes, split_extra

__all__ = ["GroupMetadata"]

_KNOWN = frozenset(("zarr_format", "node_type", "attributes"))


@dataclass(frozen=True)
class GroupMetadata:
    attributes: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    #: the document's key, for error messages (not stored)
    doc_path: InitVar[str] = ""

    def __post_init__(self, doc_path: str) -> None:
        attrs = checked_attributes(self.attributes, doc_path)
        if attrs is not self.attributes:
            object.__setattr__(self, "attributes", attrs)

    @classmethod
    def from_json(cls, data: bytes | str | dict[str, Any], path: str = "") -> GroupMetadata:
        """Validate and parse a group metadata document; raise MetadataError naming the field."""
        doc = load_json_object(data, path)
        check_format(doc, "group", path)
        extra = split_extra(doc, _KNOWN, path)
        return cls(attributes=parse_attributes(doc, path), extra=extra, doc_path=path)

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
    def node_type(self) -> str:
        return "group"
