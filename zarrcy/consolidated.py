"""Consolidated metadata: every node document of a hierarchy in one object, so opening
a large (remote) hierarchy costs one request.

Two formats, both read and written as zarr-python writes them:

* **v3** (zarr-python 3's convention; not in the core spec, so it is stored as an
  extension field that readers may ignore): the group's ``zarr.json`` gets
  ``"consolidated_metadata": {"kind": "inline", "must_understand": false,
  "metadata": {"<relative path>": <node document>, ...}}`` with every descendant,
  keyed by its path relative to the group ("sub", "sub/x").  A nested group's entry may
  carry its own (possibly empty) ``consolidated_metadata``; its entries are read too.
* **v2**: ``.zmetadata`` (``zarr_consolidated_format`` 1) beside the root ``.zgroup``
  (``zarrcy.v2.read_consolidated`` / ``write_consolidated``).

Reading goes through :class:`ConsolidatedStore`, a read-only overlay of the real store:
a metadata key of a node in the documents is answered from memory, a metadata key
of any other node under the root is answered "missing" without a request, and chunk
keys go to the real store.  ``zarrcy.open_group(..., mode="r")`` uses the overlay
when the group has consolidated metadata (``use_consolidated=None``), insists on it
(``True``) or ignores it (``False``), like zarr-python.  Writes never go through it,
so after changing a hierarchy call :func:`consolidate_metadata` again.
"""

from __future__ import annotations

import json
import builtins
from typing import Any, Iterable, Iterator

from zarrcy.byte_range import ByteRequest, resolve
from zarrcy.document.group import flatten_consolidated
from zarrcy.errors import MetadataError, NodeNotFoundError, ReadOnlyError, StoreError, expected
from zarrcy.metadata._parse import load_json_object
from zarrcy.storage import Store, store_from_url
from zarrcy.storage._common import get_metadata

__all__ = ["read_consolidated_v3", "ConsolidatedStore", "open_consolidated_store"]

META_KEY = "zarr.json"
_V2_META = (".zarray", ".zgroup", ".zattrs")
_METADATA_NAMES = frozenset((META_KEY, *_V2_META, ".zmetadata", "meta"))
_FIELD = "consolidated_metadata"


def _prefix(path: str) -> str:
    return f"{path}/" if path else ""


def _dumps(doc: Any) -> bytes:
    """A member document for the node parsers: compact (the C encoder; ``indent`` makes
    json use its pure-Python one, 50 us a document); NaN kept as read (v2 allows it)."""
    return json.dumps(doc, separators=(",", ":")).encode()


# -- reading ---------------------------------------------------------------------------------
def read_consolidated_v3(root_doc: dict[str, Any], key: str = META_KEY) -> dict[str, dict] | None:
    """The consolidated node documents of a parsed group ``zarr.json`` (relative path ->
    document, without nested ``consolidated_metadata``), or None if it has none."""
    cm = root_doc.get(_FIELD)
    if cm is None:
        return None
    where = f"{key}.{_FIELD}"
    if not isinstance(cm, dict):
        raise MetadataError(expected(where, "an object", cm), where)
    if cm.get("kind", "inline") != "inline":
        raise MetadataError(expected(f"{where}.kind", "'inline'", cm.get("kind")), f"{where}.kind")
    return flatten_consolidated(cm.get("metadata", {}), f"{where}.metadata")


class ConsolidatedStore(Store):
    """A read-only view of ``base`` whose node metadata under ``root`` comes from
    consolidated documents (``docs``: store key -> encoded document, or the parsed one,
    encoded when first read: opening a hierarchy of a million nodes encodes none)."""

    supports_writes = False
    supports_deletes = False
    supports_partial_writes = False

    def __init__(self, base: Store, root: str, docs: dict[str, Any], nodes: Iterable[str]) -> None:
        super().__init__(read_only=True)
        self.base = base
        self.root = root
        self._root_prefix = _prefix(root)
        self._docs = docs
        self._children: dict[str, set[str]] = {}
        for node in nodes:  # full node paths below root
            parent, _, name = node.rpartition("/")
            self._children.setdefault(parent, set()).add(name)
        self.supports_partial_reads = base.supports_partial_reads
        self.supports_listing = base.supports_listing

    @property
    def url(self) -> str:
        return self.base.url

    def __repr__(self) -> str:
        return f"ConsolidatedStore({self.base!r}, root={self.root!r}, {len(self._docs)} documents)"

    def __reduce__(self):  # unpickles as the plain (read-only) store
        return (_plain, (self.base,))

    def _is_metadata_key(self, key: str) -> bool:
        if not key.startswith(self._root_prefix) and key != self.root:
            return False
        return key.rpartition("/")[2] in _METADATA_NAMES

    # -- reads -----------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRequest = None) -> bytes | None:
        doc = self._docs.get(key)
        if doc is not None:
            if type(doc) is not bytes:
                doc = self._docs[key] = _dumps(doc)
            if byte_range is None:
                return doc
            start, stop = resolve(byte_range, len(doc))
            return doc[start:stop]
        if self._is_metadata_key(key):
            return None  # the consolidated documents are the whole hierarchy
        return self.base.get(key, byte_range)

    def get_partial_values(self, key_ranges):
        out: list[bytes | None] = [None] * len(key_ranges)
        rest = []
        for i, (k, r) in enumerate(key_ranges):
            if k in self._docs or self._is_metadata_key(k):
                out[i] = self.get(k, r)
            else:
                rest.append(i)
        if rest:
            for i, v in zip(rest, self.base.get_partial_values([key_ranges[i] for i in rest])):
                out[i] = v
        return out

    def version(self, key: str) -> object | None:
        return None if key in self._docs else self.base.version(key)

    def snapshot(self, key: str):
        return super().snapshot(key) if key in self._docs or self._is_metadata_key(key) else self.base.snapshot(key)

    def pinned_snapshot(self, key: str):
        return self.snapshot(key) if key in self._docs or self._is_metadata_key(key) else self.base.pinned_snapshot(key)

    def exists(self, key: str) -> bool:
        return self.get(key) is not None

    # -- writes: never through the overlay -------------------------------------------------
    def set(self, key: str, value) -> None:
        raise ReadOnlyError(f"{self.url}: opened through consolidated metadata (read-only)")

    def erase(self, key: str) -> None:
        raise ReadOnlyError(f"{self.url}: opened through consolidated metadata (read-only)")

    def erase_prefix(self, prefix: str) -> None:
        raise ReadOnlyError(f"{self.url}: opened through consolidated metadata (read-only)")

    def set_partial_values(self, key_start_values) -> None:
        raise ReadOnlyError(f"{self.url}: opened through consolidated metadata (read-only)")

    # -- listing ---------------------------------------------------------------------------
    def list(self) -> Iterator[str]:
        return self.base.list()

    def list_prefix(self, prefix: str) -> Iterator[str]:
        return self.base.list_prefix(prefix)

    def list_dir(self, prefix: str) -> builtins.list[str]:  # (``list``, ``set``: methods here)
        """Children of a group under the root come from the documents (no request; works
        on stores that cannot list, such as HTTP); anything else from the real store."""
        node = prefix.rstrip("/")
        if node == self.root or (node.startswith(self._root_prefix) and node in self._docs_nodes()):
            return sorted(self._children.get(node, ()))
        return self.base.list_dir(prefix)

    def node_types(self, prefix: str) -> dict[str, str] | None:
        """The children's node types from the documents, sorted by name (indexed once,
        at the first call, and kept per group: shared, do not modify): v3 ``node_type``,
        v2 ``.zarray``/``.zgroup``; None outside the root."""
        node = prefix.rstrip("/")
        if not (node == self.root or (node.startswith(self._root_prefix) and node in self._docs_nodes())):
            return None
        types = self.__dict__.get("_types")
        if types is None:
            types = self.__dict__["_types"] = {}
            for key, doc in self._docs.items():
                path, _, name = key.rpartition("/")
                if name == META_KEY:
                    if type(doc) is bytes:
                        continue  # the root's own document (members are kept parsed)
                    kind = doc.get("node_type") if isinstance(doc, dict) else None
                else:
                    kind = "array" if name == ".zarray" else "group" if name == ".zgroup" else None
                if kind in ("array", "group") and path:
                    types[path] = kind
        cache = self.__dict__.setdefault("_kinds", {})
        out = cache.get(node)
        if out is None:
            base = f"{node}/" if node else ""
            out = cache[node] = {name: kind for name in sorted(self._children.get(node, ()))
                                 if (kind := types.get(base + name)) is not None}
        return out

    def _docs_nodes(self) -> builtins.set[str]:
        nodes = getattr(self, "_node_set", None)
        if nodes is None:
            nodes = self._node_set = {p for p, kids in self._children.items()} | {
                f"{p}/{n}" if p else n for p, kids in self._children.items() for n in kids
            }
        return nodes


def _plain(store: Store) -> Store:
    return store


def open_consolidated_store(store: Store, path: str, root_raw: bytes | None, *, required: bool = False) -> Store | None:
    """An overlay store for the group at ``path`` if it has consolidated metadata (v3 in
    ``root_raw``, its ``zarr.json`` bytes, or v2 ``.zmetadata``), else None (or
    ``NodeNotFoundError`` when ``required``)."""
    prefix = _prefix(path)
    docs: dict[str, Any] = {}
    nodes: list[str] = []
    if root_raw is not None:
        try:
            root_doc = load_json_object(root_raw, prefix + META_KEY)
        except MetadataError:
            return None  # the node parser reports the broken document
        if not isinstance(root_doc, dict) or root_doc.get("node_type") != "group":
            if required:
                raise NodeNotFoundError(f"{store.url}: no consolidated metadata at '/{path}' (not a group)")
            return None
        rel_docs = read_consolidated_v3(root_doc, prefix + META_KEY)
        if rel_docs is None:
            if required:
                raise NodeNotFoundError(f"{store.url}: the group at '/{path}' has no consolidated metadata")
            return None
        docs[prefix + META_KEY] = bytes(root_raw)
        for rel, doc in rel_docs.items():
            full = prefix + rel
            nodes.append(full)
            docs[f"{full}/{META_KEY}"] = doc  # encoded when read
        return ConsolidatedStore(store, path, docs, nodes)
    raw = get_metadata(store, prefix + ".zmetadata")
    if raw is None:
        if required:
            raise NodeNotFoundError(f"{store.url}: no consolidated metadata (zarr.json or .zmetadata) at '/{path}'")
        return None
    doc = load_json_object(raw, prefix + ".zmetadata")
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        raise MetadataError(expected(f"{prefix}.zmetadata.metadata", "an object", meta), f"{prefix}.zmetadata.metadata")
    docs[prefix + ".zmetadata"] = bytes(raw)
    for key, d in meta.items():
        if not isinstance(key, str):
            continue
        node, _, name = key.rpartition("/")
        if name not in _V2_META:
            continue
        docs[prefix + key] = d  # encoded when read
        if node and name in (".zarray", ".zgroup"):
            nodes.append(prefix + node)
    return ConsolidatedStore(store, path, docs, nodes)
