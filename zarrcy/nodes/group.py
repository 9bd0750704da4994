"""Zarr v3 groups and the hierarchy operations (v3-core.rst "Storage").

A node at path ``P`` keeps its metadata at ``P/zarr.json``; children are discovered
with ``list_dir(P + "/")``: every child name whose ``zarr.json`` exists is a member.
Deleting a node erases its prefix.

This module opens existing nodes (v3 documents, and v2/v1 ones through
:func:`zarrcy.v2.load_v2_metadata`); creating them is the API layer's
(``zarrcy.creation``: a new node gets its missing parent groups), which a group
reaches through :func:`zarrcy.nodes.base.node_api`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

from zarrcy.errors import (
    REOPEN_HINT,
    ContainsArrayError,
    ContainsGroupError,
    MetadataError,
    NodeNotFoundError,
    ReadOnlyError,
)
from zarrcy.document.array import ArrayMetadata
from zarrcy.document.group import GroupMetadata, parse_node_metadata
from zarrcy.metadata.names import normalize_path, validate_node_name
from zarrcy.nodes.array import Array
from zarrcy.nodes.base import META_KEY, Node, node_api, write_metadata
from zarrcy.nodes.base import prefix as _prefix
from zarrcy.storage import Store
from zarrcy.storage._common import get_metadata
from zarrcy.v2.metadata import V1ArrayMetadata, V2GroupMetadata, load_v2_metadata

__all__ = ["Group", "open_node", "open_v2_node", "parse_node", "join_path"]

_V2_KEYS = frozenset((".zarray", ".zgroup", ".zattrs", ".zmetadata"))


def join_path(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def parse_node(store: Store, path: str, raw: bytes) -> Array | "Group":
    key = _prefix(path) + META_KEY
    meta = parse_node_metadata(raw, key)  # decodes once; keeps decimal fill-value text
    if isinstance(meta, ArrayMetadata):
        return Array(store, path, meta, read_only=store.read_only)
    return Group(store, path, meta)


def _load_node(store: Store, path: str) -> Array | "Group" | None:
    """The node at ``path`` (v3 ``zarr.json``; else Zarr v2 ``.zarray``/``.zgroup`` or
    v1 ``meta``, through :mod:`zarrcy.v2`), or None if there is none."""
    raw = get_metadata(store, _prefix(path) + META_KEY)
    if raw is not None:
        return parse_node(store, path, raw)
    return open_v2_node(store, path)


def open_v2_node(store: Store, path: str) -> Array | "Group" | None:
    """The Zarr v2 (or v1, read-only) array or group at ``path``, or None."""
    meta = load_v2_metadata(store, path)
    if meta is None:
        return None
    if isinstance(meta, V2GroupMetadata):
        return Group(store, path, meta)
    return Array(store, path, meta, read_only=store.read_only or isinstance(meta, V1ArrayMetadata))


def open_node(store: Store, path: str) -> Array | "Group":
    """The array or group at ``path``; NodeNotFoundError if none."""
    path = normalize_path(path)
    node = _load_node(store, path)
    if node is None:
        raise NodeNotFoundError(f"{store.url}: no array or group at path '/{path}'")
    return node


class Group(Node):
    """A Zarr v3 group.  Obtain one with :func:`zarrcy.open_group` / :func:`zarrcy.create_group`."""

    metadata: GroupMetadata | V2GroupMetadata

    def __init__(self, store: Store, path: str, metadata: GroupMetadata | V2GroupMetadata) -> None:
        self.store = store
        self.path = path
        self.metadata = metadata

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    @property
    def _zarr_format(self) -> int:
        return self.metadata.zarr_format


    def _set_attributes(self, attributes: dict) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{self.store.url}/{self.path}: group {REOPEN_HINT}")
        meta = dataclasses.replace(self.metadata, attributes=attributes)
        write_metadata(self.store, _prefix(self.path), meta)
        self.metadata = meta

    def __repr__(self) -> str:
        return f"<zarrcy.Group {self.store.url} /{self.path}>"

    def __reduce__(self):
        # the store object pickles itself (root / URL + storage options), so remote
        # credentials and options travel with the array (Dask workers, processes)
        return (node_api().reopen_group, (self.store, self.path, self.read_only))

    # -- members ---------------------------------------------------------------------
    def _child_path(self, name: str) -> str:
        parts = [p for p in name.split("/")]
        for p in parts:
            validate_node_name(p)
        return join_path(self.path, "/".join(parts))

    def __getitem__(self, name: str) -> Array | "Group":
        try:
            return open_node(self.store, self._child_path(name))
        except NodeNotFoundError:
            raise NodeNotFoundError(f"{self.store.url}: '{name}' is not a member of group '/{self.path}'") from None

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except (NodeNotFoundError, MetadataError):
            return default

    def __contains__(self, name: str) -> bool:
        try:
            path = self._child_path(name)
        except MetadataError:
            return False
        return _load_node(self.store, path) is not None

    def __delitem__(self, name: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{self.store.url}/{self.path}: group {REOPEN_HINT}")
        path = self._child_path(name)
        if _load_node(self.store, path) is None:
            raise NodeNotFoundError(f"{self.store.url}: '{name}' is not a member of group '/{self.path}'")
        self.store.erase_prefix(_prefix(path))

    def members(self, max_depth: int | None = 0) -> tuple[tuple[str, Array | "Group"], ...]:
        """(name, node) for each child, sorted by name; ``max_depth`` (zarr-python's
        keyword): also the descendants down to that many levels below the children
        (None: all), as (path relative to this group, node), depth first."""
        if max_depth == 0:
            return tuple(self._children())
        if max_depth is not None and max_depth < 0:
            raise ValueError(f"max_depth: expected None or >= 0, received {max_depth}")
        out: list[tuple[str, Array | Group]] = []
        stack: list[tuple[str, Group, int]] = [("", self, 0)]
        while stack:  # iterative: deep hierarchies cannot exhaust the recursion limit
            base, g, depth = stack.pop()
            kids = list(g._children())
            below = []
            for name, node in kids:
                rel = f"{base}/{name}" if base else name
                out.append((rel, node))
                if isinstance(node, Group) and (max_depth is None or depth < max_depth):
                    below.append((rel, node, depth + 1))
            stack.extend(reversed(below))
        return tuple(out)

    def nmembers(self, max_depth: int | None = 0) -> int:
        """Number of members (``max_depth`` as in :meth:`members`)."""
        return len(self.members(max_depth=max_depth))

    def get_array(self, name: str) -> Array:
        """The array ``name``: NodeNotFoundError (a KeyError) if missing, ContainsGroupError if a group."""
        node = self[name]
        if not isinstance(node, Array):
            raise ContainsGroupError(f"{self.store.url}: '{name}' in group '/{self.path}' is a group, not an array")
        return node

    def get_group(self, name: str) -> "Group":
        """The group ``name``: NodeNotFoundError (a KeyError) if missing, ContainsArrayError if an array."""
        node = self[name]
        if not isinstance(node, Group):
            raise ContainsArrayError(f"{self.store.url}: '{name}' in group '/{self.path}' is an array, not a group")
        return node

    def update_attributes(self, new_attributes: dict) -> "Group":
        """Merge ``new_attributes`` into the attributes (one metadata write); return self."""
        self.attrs.update(new_attributes)
        return self

    @property
    def info(self) -> str:
        return "\n".join([
            f"Name        : {self.name if self.path else ''}",
            "Type        : Group",
            f"Zarr format : {self._zarr_format}",
            f"Read-only   : {self.read_only}",
            f"Store type  : {type(self.store).__name__}",
        ])

    def info_complete(self) -> str:
        """:attr:`info` plus the member counts (lists the store)."""
        kids = self.members()
        n_arrays = sum(1 for _, m in kids if isinstance(m, Array))
        return "\n".join([
            self.info,
            f"No. members : {len(kids)}",
            f"No. arrays  : {n_arrays}",
            f"No. groups  : {len(kids) - n_arrays}",
        ])

    def _children(self) -> Iterator[tuple[str, Array | "Group"]]:
        """(name, node) for each child, sorted by name."""
        prefix = _prefix(self.path)
        for name in self.store.list_dir(prefix):
            if name.startswith("__") or name == META_KEY or name in _V2_KEYS:
                continue
            node = _load_node(self.store, join_path(self.path, name))
            if node is not None:
                yield name, node

    def _kinds(self) -> dict[str, str]:
        """``{child name: "array" | "group"}``, sorted by name: from the store's index
        when it has one (consolidated metadata: no node is opened), else by opening
        the children."""
        kinds = self.store.node_types(_prefix(self.path))
        if kinds is None:
            return {n: "array" if isinstance(m, Array) else "group" for n, m in self.members()}
        return kinds

    def keys(self) -> Iterator[str]:
        return iter(self._kinds())

    __iter__ = keys

    def __len__(self) -> int:
        return len(self._kinds())

    def groups(self) -> Iterator[tuple[str, "Group"]]:
        return ((n, m) for n, m in self.members() if isinstance(m, Group))

    def arrays(self) -> Iterator[tuple[str, Array]]:
        return ((n, m) for n, m in self.members() if isinstance(m, Array))

    def group_keys(self) -> list[str]:
        return [n for n, k in self._kinds().items() if k == "group"]

    def array_keys(self) -> list[str]:
        return [n for n, k in self._kinds().items() if k == "array"]

    def walk(self) -> Iterator[tuple[str, Array | "Group"]]:
        """Every descendant, depth first: (path relative to this group, node).

        Iterative (a stack of member iterators), so any hierarchy depth works."""
        stack: list[tuple[str, Iterator[tuple[str, Array | Group]]]] = [("", iter(self.members()))]
        while stack:
            base, it = stack[-1]
            item = next(it, None)
            if item is None:
                stack.pop()
                continue
            name, node = item
            rel = base + name
            yield rel, node
            if isinstance(node, Group):
                stack.append((rel + "/", iter(node.members())))

    def tree(self) -> str:
        """A text rendering of the hierarchy below this group (iterative: any depth)."""
        lines = [f"/{self.path}" if self.path else "/"]
        # each frame: the members of one group (listed whole: the last one draws └──) and
        # the indent of its lines
        stack: list[tuple[Iterator[tuple[int, tuple[str, Array | Group]]], int, str]] = []

        def push(g: Group, indent: str) -> None:
            items = list(g.members())
            stack.append((iter(enumerate(items)), len(items), indent))

        push(self, "")
        while stack:
            it, n, indent = stack[-1]
            item = next(it, None)
            if item is None:
                stack.pop()
                continue
            i, (name, node) = item
            last = i == n - 1
            branch = "└── " if last else "├── "
            if isinstance(node, Array):
                lines.append(f"{indent}{branch}{name} {node.shape} {node.dtype}")
            else:
                lines.append(f"{indent}{branch}{name}")
                push(node, indent + ("    " if last else "│   "))
        return "\n".join(lines)

    # -- creation --------------------------------------------------------------------
    def create_group(self, name: str, *, attributes: dict | None = None, overwrite: bool = False) -> "Group":
        return node_api().create_group(self.store, path=self._child_path(name), attributes=attributes,
                                       overwrite=overwrite, zarr_format=self._zarr_format)

    def require_group(self, name: str, **kwargs: Any) -> "Group":
        node = self.get(name)
        if isinstance(node, Group):
            return node
        if node is not None:
            raise ContainsArrayError(f"{self.store.url}: '{name}' exists and is an array")
        return self.create_group(name, **kwargs)

    def create_array(self, name: str, **kwargs: Any) -> Array:
        kwargs.setdefault("zarr_format", self._zarr_format)  # children of a v2 group are v2
        return node_api().create_array(self.store, name=self._child_path(name), **kwargs)

    def require_array(self, name: str, **kwargs: Any) -> Array:
        node = self.get(name)
        if isinstance(node, Array):
            return node
        if node is not None:
            raise ContainsGroupError(f"{self.store.url}: '{name}' exists and is a group")
        return self.create_array(name, **kwargs)
