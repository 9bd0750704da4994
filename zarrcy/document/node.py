"""One entry point for any ``zarr.json``: array or group, decided by ``node_type``
(defined beside :class:`GroupMetadata`, whose consolidated metadata holds node documents)."""

from __future__ import annotations

from zarrcy.document.group import parse_node_metadata

__all__ = ["parse_node_metadata"]
