"""Group metadata documents (v3-core.rst "Group metadata").

``{"zarr_format": 3, "node_type": "group", "attributes"?: {...}}`` plus unknown keys
marked ``"must_understand": false`` (e.g. zarr-python's ``consolidated_metadata``),
which are kept in ``extra`` and written back after ``attributes``.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Any

from zarrcy.document.array import ArrayMetadata, _join, check_format, checked_attributes, parse_attributes, split_extra
from zarrcy.errors import MetadataError, expected
from zarrcy.metadata._parse import dumps, load_json_object

__all__ = ["GroupMetadata", "ConsolidatedMetadata", "flatten_consolidated"]

_KNOWN = frozenset(("zarr_format", "node_type", "attributes"))
_FIELD = "consolidated_metadata"


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

    def write_to(self, store: Any, prefix: str) -> None:
        store.set(prefix + "zarr.json", self.to_bytes())

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
    """A group's consolidated metadata as zarr-python shows it: ``metadata`` holds the
    direct children (relative name -> ``ArrayMetadata`` / ``GroupMetadata``; a child
    group's own ``consolidated_metadata`` holds its children, and so on), and
    ``flattened_metadata`` every descendant by relative path ("a", "a/b")."""

    metadata: dict[str, Any] = field(default_factory=dict)
    kind: str = "inline"
    must_understand: bool = False
    flat_docs: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Any, path: str = "consolidated_metadata") -> "ConsolidatedMetadata":
        if not isinstance(data, dict):
            raise MetadataError(expected(path, "an object", data), path)
        kind = data.get("kind", "inline")
        if kind != "inline":
            raise MetadataError(expected(f"{path}.kind", "'inline'", kind), f"{path}.kind")
        flat = flatten_consolidated(data.get("metadata", {}), f"{path}.metadata")
        children: dict[str, Any] = {}
        for rel, doc in flat.items():
            if "/" in rel:
                continue
            if doc.get("node_type") == "group":
                pref = rel + "/"
                below = {r[len(pref):]: d for r, d in flat.items() if r.startswith(pref)}
                doc = {**doc, "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": below}}
            children[rel] = parse_node_metadata(doc, f"{path}.metadata[{rel!r}]")
        return cls(metadata=children, kind=kind, must_understand=bool(data.get("must_understand", False)),
                   flat_docs=flat)

    @property
    def flattened_metadata(self) -> dict[str, Any]:
        return {rel: parse_node_metadata(doc, f"consolidated_metadata.metadata[{rel!r}]")
                for rel, doc in self.flat_docs.items()}


def flatten_consolidated(meta: Any, where: str) -> dict[str, dict]:
    """Relative path -> node document (without its nested ``consolidated_metadata``) of
    a consolidated ``metadata`` object: THE reading of zarr-python's layout, used by
    :class:`ConsolidatedMetadata` and the read overlay (``zarrcy.consolidated``).

    zarr-python writes every descendant as a flat key at the top ("a", "a/b") and
    gives member groups an empty ``consolidated_metadata``; other writers may nest
    entries in a member's own ``consolidated_metadata``.  Precedence, as zarr-python
    reads it (``ConsolidatedMetadata._flat_to_nested``: the flat keys decide): an
    entry given at an outer level wins over the same path nested deeper, whatever the
    order of the keys; nested entries only add paths no outer level names.  Walked
    breadth-first without recursion, so any depth of nesting works."""
    out: dict[str, dict] = {}
    level: list[tuple[Any, str, str]] = [(meta, where, "")]
    while level:
        deeper: list[tuple[Any, str, str]] = []
        for m, w, base in level:
            if not isinstance(m, dict):
                raise MetadataError(expected(w, "an object", m), w)
            for rel, doc in m.items():
                if not isinstance(rel, str) or not rel or rel.startswith("/") or rel.endswith("/"):
                    raise MetadataError(expected(w, "relative node paths as keys", rel), w)
                if not isinstance(doc, dict):
                    raise MetadataError(expected(f"{w}[{rel!r}]", "a node document", doc), w)
                full = f"{base}/{rel}" if base else rel
                doc = dict(doc)
                nested = doc.pop(_FIELD, None)
                if full not in out:  # an outer level came first (breadth-first)
                    out[full] = doc
                if isinstance(nested, dict) and nested.get("metadata"):
                    deeper.append((nested["metadata"], f"{w}[{rel!r}].{_FIELD}.metadata", full))
        level = deeper
    return out


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
