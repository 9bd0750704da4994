"""``zarrcy.group``: the :class:`Group` class (defined in :mod:`zarrcy.nodes.group`) and,
called as a function, zarr-python's ``zarr.group(store, ...)``.

The module object is callable so that both ``from zarrcy.group import Group`` and
``zarrcy.group(store)`` work; that makes it part of the API layer, above
:mod:`zarrcy.api`.
"""

from __future__ import annotations

import sys as _sys
import types as _types
from typing import Any

from zarrcy import api as _api
from zarrcy.creation import ensure_parents
from zarrcy.nodes.group import Group, join_path, open_node

__all__ = ["Group", "open_node", "ensure_parents", "join_path"]

# pickles written before the split name this function
_reopen_group = _api._reopen_group


class _GroupModule(_types.ModuleType):
    def __call__(self, store: Any = None, **kwargs: Any) -> Group:
        """``zarrcy.group(store=None, *, overwrite=False, path=None, attributes=None, ...)``:
        see :func:`zarrcy.api.group`."""
        return _api.group(store, **kwargs)


_sys.modules[__name__].__class__ = _GroupModule
