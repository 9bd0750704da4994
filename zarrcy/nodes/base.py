"""What arrays and groups share: a path in a store, a name, attributes, and how a
node's metadata document is stored."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Iterator, Protocol

from zarrcy.errors import ZarrcyError
from zarrcy.storage import Store

__all__ = ["META_KEY", "Attributes", "Node", "NodeApi", "node_api", "set_node_api", "write_metadata", "prefix"]

META_KEY = "zarr.json"


class NodeDocument(Protocol):
    """A node's metadata as :func:`write_metadata` stores it (v3 ``zarr.json``; Zarr
    v2 ``.zarray``/``.zgroup`` + ``.zattrs``)."""

    @property
    def attributes(self) -> dict[str, Any]: ...

    def write_to(self, store: Any, prefix: str) -> None: ...


def write_metadata(store: Store, prefix: str, metadata: NodeDocument) -> None:
    """Store a node's metadata document(s) under ``prefix``."""
    metadata.write_to(store, prefix)


def prefix(path: str) -> str:
    """The key prefix of the node at ``path`` (``""`` for the root)."""
    return path + "/" if path else ""


_prefix = prefix  # the name zarrcy.array exported


@dataclass(frozen=True)
class NodeApi:
    """What nodes need from the API layer above them, injected by it (``zarrcy.api``
    registers one when imported): a group creates its children with ``create_array`` /
    ``create_group`` (the public functions, with all their defaults and checks), and
    arrays and groups pickle as ``reopen_array`` / ``reopen_group`` + (store, path,
    read_only) -- module-level functions of the API layer, so unpickling in a fresh
    process imports (and registers) the API before any node exists."""

    create_array: Callable[..., Any]
    create_group: Callable[..., Any]
    reopen_array: Callable[[Any, str, bool], Any]
    reopen_group: Callable[[Any, str, bool], Any]


_NODE_API: list[NodeApi] = []


def set_node_api(api: NodeApi) -> None:
    """Install the API layer's functions (called once, by ``zarrcy.api``)."""
    _NODE_API[:] = [api]


def node_api() -> NodeApi:
    if not _NODE_API:
        raise ZarrcyError("zarrcy.api is not imported: import zarrcy.api (or use zarrcy.open_group) first")
    return _NODE_API[0]


class Attributes(MutableMapping[str, Any]):
    """``node.attrs``: a dict view that writes the node's metadata back on every change."""

    def __init__(self, node: Any) -> None:
        self._node = node

    def _data(self) -> dict:
        return self._node.metadata.attributes

    def __getitem__(self, key: str) -> Any:
        return self._data()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        new = dict(self._data())
        new[key] = value
        self._node._set_attributes(new)

    def __delitem__(self, key: str) -> None:
        new = dict(self._data())
        del new[key]
        self._node._set_attributes(new)

    def update(self, *args: Any, **kwargs: Any) -> None:  # one metadata write, not one per key
        new = dict(self._data())
        new.update(*args, **kwargs)
        self._node._set_attributes(new)

    def put(self, d: dict) -> None:
        self._node._set_attributes(dict(d))

    def asdict(self) -> dict:
        return dict(self._data())

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())

    def __repr__(self) -> str:
        return repr(self._data())


class Node:
    """What arrays and groups share: a path in a store, a name, attributes."""

    path: str
    store: Store

    @property
    def name(self) -> str:
        return "/" + self.path

    @property
    def basename(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def attrs(self) -> Attributes:
        return Attributes(self)
