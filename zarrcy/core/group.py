"""``zarr.core.group`` names (see zarrcy/core/__init__.py)."""

from zarrcy.group import Group
from zarrcy.document.group import ConsolidatedMetadata, GroupMetadata

__all__ = ["Group", "GroupMetadata", "ConsolidatedMetadata"]
