"""Node names and hierarchy paths (v3-core.rst "Node names", "Stored representation").

THE node-name validator: every store and every way of creating or opening a node
(``create_array``/``create_group``/``create_hierarchy``, ``Group`` members, v2 nodes,
``zarrcy convert``) goes through :func:`validate_node_name` / :func:`normalize_path`, so
a name gets the same answer on LocalStore, MemoryStore, ZipStore and object stores.

The spec's rules: a node name is a non-empty string without ``"/"``, not made only of
periods (``"."``, ``".."``), and not starting with the reserved ``"__"``.  zarrcy adds
the rules that keep a hierarchy the same hierarchy on every store:

* no ``"\\"`` (a path separator on Windows and in zip tools: ``a\\..\\..\\y`` escapes
  there), no NUL (no file system or zip member can hold it) and no drive letter
  (``c:x``), as store keys (``zarrcy.storage._common``);
* not a metadata document's name -- ``zarr.json``, nor Zarr v2's ``.zarray``,
  ``.zgroup``, ``.zattrs``, ``.zmetadata``: ``<group>/zarr.json`` is the group's own
  document, so a child of that name cannot be stored (a file system refuses it, other
  stores would hide it from every listing);
* no two siblings with the same NFC form (``"\\u00e9"`` and ``"e\\u0301"`` are one name
  on a normalising file system, e.g. macOS): creating a node whose name is
  canonically equivalent to an existing sibling's, but spelled differently, is refused
  (:func:`nfc_collision`; the caller lists the siblings, and only for names that can
  collide at all -- see :func:`may_collide`).
"""

from __future__ import annotations

import unicodedata
from typing import Any, Iterable

from zarrcy.errors import MetadataError, expected

__all__ = ["validate_node_name", "normalize_path", "may_collide", "nfc_collision", "check_new_name", "RESERVED_NAMES"]

#: names a child node cannot have: the metadata documents stored beside its siblings
RESERVED_NAMES = frozenset(("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"))

#: the ASCII characters that are the NFC form of a non-ASCII one (KELVIN SIGN -> "K",
#: GREEK QUESTION MARK -> ";", GREEK VARIA -> "`"; tests/metadata checks the list
#: against every code point): an ASCII name without them has no other spelling
_ASCII_NFC_TARGETS = frozenset("K;`")


def validate_node_name(name: Any, path: str = "name") -> str:
    """Return ``name`` if it is a valid node name, else raise MetadataError."""
    if type(name) is not str:
        raise MetadataError(expected(path, "a node name (string)", name), path)
    if not name:
        raise MetadataError(expected(path, "a non-empty node name", name), path)
    if "/" in name:
        raise MetadataError(expected(path, "a node name without '/'", name), path)
    if not name.strip("."):
        raise MetadataError(expected(path, "a node name not made only of periods", name), path)
    if name[:2] == "__":
        raise MetadataError(expected(path, "a node name not starting with the reserved prefix '__'", name), path)
    if "\\" in name or "\x00" in name or (name[1:2] == ":" and name[0].isalpha()):
        raise MetadataError(expected(path, "a node name without '\\', NUL or a drive letter ('c:')", name), path)
    if name in RESERVED_NAMES:
        raise MetadataError(expected(path, f"a node name other than the metadata document names "
                                           f"{sorted(RESERVED_NAMES)}", name), path)
    return name


def normalize_path(path: Any) -> str:
    """A hierarchy path -> canonical form without leading/trailing ``"/"`` (root: ``""``).

    Every component must be a valid node name: ``"a//b"``, ``"a/./b"``, ``"../x"``,
    ``"a/__b"`` and ``"a/zarr.json"`` are errors.  Linear in the length of the path.
    """
    if type(path) is not str:
        raise MetadataError(expected("path", "a string", path), "path")
    p = path.strip("/")
    if not p:
        if path and len(path) > 1 and "//" in path:
            raise MetadataError(expected("path", "a path without empty components", path), "path")
        return ""
    if path.startswith("//") or path.endswith("//"):
        raise MetadataError(expected("path", "a path without empty components", path), "path")
    for part in p.split("/"):
        if not part:
            raise MetadataError(expected("path", "a path without empty components ('a//b')", path), "path")
        validate_node_name(part, "path")
    return p


def may_collide(name: str) -> bool:
    """Whether another spelling of ``name`` can have the same NFC form (only then must
    a new node's siblings be listed): non-ASCII names, and ASCII names holding one of
    the few characters a non-ASCII one normalises to."""
    return not name.isascii() or not _ASCII_NFC_TARGETS.isdisjoint(name)


def nfc_collision(name: str, siblings: Iterable[str], path: str = "name") -> None:
    """MetadataError if a sibling is spelled differently from ``name`` but has the same
    NFC form (canonically equivalent: one name on a normalising file system)."""
    key = unicodedata.normalize("NFC", name)
    for s in siblings:
        if s != name and unicodedata.normalize("NFC", s) == key:
            raise MetadataError(expected(path, f"a node name not canonically equivalent (Unicode NFC) to its "
                                               f"sibling {s!r}", name), path)


def check_new_name(store: Any, path: str) -> None:
    """Before creating the node at ``path`` (a normalized path) in ``store``: refuse a
    name canonically equivalent to an existing sibling's (:func:`nfc_collision`).  The
    parent is listed only when the name :func:`may_collide` and the store can list."""
    parent, _, name = path.rpartition("/")
    if not name or not may_collide(name) or not store.supports_listing:
        return
    nfc_collision(name, store.list_dir(parent + "/" if parent else ""), f"path {path!r}")
