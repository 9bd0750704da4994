"""Node names and hierarchy paths (v3-core.rst "Node names", "Stored representation").

A node name is a non-empty string without ``"/"``, not made only of periods, and not
starting with the reserved ``"__"``.  A path is names joined by ``"/"``; the root is
``""``.
"""

from __future__ import annotations

from typing import Any

from zarrcy.errors import MetadataError, expected

__all__ = ["validate_node_name", "normalize_path"]


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
    return name


def normalize_path(path: Any) -> str:
    """A hierarchy path -> canonical form without leading/trailing ``"/"`` (root: ``""``).

    Every component must be a valid node name: ``"a//b"``, ``"a/./b"``, ``"../x"`` and
    ``"a/__b"`` are errors.
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
