"""``zarrcy.array``: the :class:`Array` class (defined in :mod:`zarrcy.nodes.array`) and,
called as a function, zarr-python's ``zarr.array(data, ...)``.

The module object is callable so that both ``from zarrcy.array import Array`` and
``zarrcy.array(data)`` work; that makes it part of the API layer (calling it creates an
array), above :mod:`zarrcy.api`.
"""

from __future__ import annotations

import sys as _sys
import types as _types
from typing import Any

from zarrcy import api as _api
# the names this module has always offered (Node, META_KEY, write_metadata... too)
from zarrcy.nodes.array import Array, ArrayConfig, RectilinearChunksError, StoreValue
from zarrcy.nodes.base import META_KEY, Attributes, Node, write_metadata
from zarrcy.nodes.base import prefix as _prefix

__all__ = ["Array", "ArrayConfig", "Attributes", "StoreValue"]

# pickles written before the split name this function
_reopen = _api._reopen_array


class _ArrayModule(_types.ModuleType):
    def __call__(self, data: Any, **kwargs: Any) -> Array:
        """``zarrcy.array(data, store=None, **kwargs)``: see :func:`zarrcy.api.array`."""
        return _api.array(data, **kwargs)


_sys.modules[__name__].__class__ = _ArrayModule
