"""zarrcy: Zarr v3 for Python with typed Cython hot paths.

Public names are imported lazily (PEP 562) so ``import zarrcy`` stays cheap and
submodules can be imported on their own.  This module is the top of the import graph:
nothing inside the package imports it (ci/check_layers.py; docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from typing import Any

from zarrcy.config import config
from zarrcy.errors import (
    CastError,
    ContainsArrayError,
    ContainsGroupError,
    ContainsNodeError,
    CorruptChunkError,
    MetadataError,
    NodeNotFoundError,
    OutOfRangeError,
    ReadOnlyError,
    StoreError,
    UnknownCodecError,
    UnknownExtensionError,
    ZarrcyError,
)

from zarrcy._version import __version__

_LAZY = {
    "Array": "zarrcy.array",
    "Group": "zarrcy.group",
    "create_array": "zarrcy.api",
    "open_array": "zarrcy.api",
    "create_group": "zarrcy.api",
    "open_group": "zarrcy.api",
    "open": "zarrcy.api",
    "create": "zarrcy.api",
    "zeros": "zarrcy.api",
    "ones": "zarrcy.api",
    "full": "zarrcy.api",
    "empty": "zarrcy.api",
    "zeros_like": "zarrcy.api",
    "ones_like": "zarrcy.api",
    "full_like": "zarrcy.api",
    "empty_like": "zarrcy.api",
    "from_array": "zarrcy.api",
    "open_consolidated": "zarrcy.api",
    "save": "zarrcy.api",
    "save_array": "zarrcy.api",
    "save_group": "zarrcy.api",
    "load": "zarrcy.api",
    "copy": "zarrcy.api",
    "copy_all": "zarrcy.api",
    "create_hierarchy": "zarrcy.api",
    "tree": "zarrcy.api",
    "consolidate_metadata": "zarrcy.api",
    "cast_value": "zarrcy.casting",
    "scale_offset_encode": "zarrcy.casting",
    "scale_offset_decode": "zarrcy.casting",
    "check_cast": "zarrcy.casting",
    "representable_range": "zarrcy.casting",
    "convert": "zarrcy.convert",
    "LocalStore": "zarrcy.storage",
    "MemoryStore": "zarrcy.storage",
    "ZipStore": "zarrcy.storage",
}
# ``array`` and ``group`` are modules that are also callable: zarrcy.array(data, ...) and
# zarrcy.group(store, ...) are zarr-python's functions (zarrcy/array.py, zarrcy/group.py)
_SUBMODULES = {"codecs", "storage", "metadata", "indexing", "api", "casting", "array", "group", "core"}

__all__ = [
    "config",
    "ZarrcyError",
    "MetadataError",
    "UnknownCodecError",
    "UnknownExtensionError",
    "CorruptChunkError",
    "CastError",
    "OutOfRangeError",
    "NodeNotFoundError",
    "ContainsNodeError",
    "ContainsGroupError",
    "ContainsArrayError",
    "ReadOnlyError",
    "StoreError",
    *_LAZY,
    "array",
    "group",
]


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"zarrcy.{name}")
    raise AttributeError(f"module 'zarrcy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(__all__) | _SUBMODULES)
