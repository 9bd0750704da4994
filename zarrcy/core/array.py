"""``zarr.core.array`` names (see zarrcy/core/__init__.py)."""

from zarrcy.array import Array, ArrayConfig
from zarrcy.document.array import ArrayMetadata

ArrayV3Metadata = ArrayMetadata

__all__ = ["Array", "ArrayConfig", "ArrayMetadata", "ArrayV3Metadata"]
