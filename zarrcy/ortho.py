"""Orthogonal selection of a numpy array by per-dimension ints, slices and index arrays.

One implementation for every layer that applies a chunk's selection to a decoded block:
the array layer (``indexing.ortho_get``) and the codecs (``codecs._base.select``).  numpy's
own advanced indexing would broadcast several index arrays together (vindex semantics) and
move their axes to the front; here each array applies along its own axis.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["select"]


def select(a: np.ndarray, sel: Sequence[Any]) -> np.ndarray:
    """``a`` indexed orthogonally by ``sel`` (ints drop their axis; arrays act per axis):
    the basic part first, then each index array along its own axis."""
    basic = tuple(slice(None) if isinstance(s, np.ndarray) else s for s in sel)
    r = a[basic]
    axis = 0
    for s in sel:
        if isinstance(s, np.ndarray):
            r = np.take(r, s, axis=axis)
            axis += 1
        elif isinstance(s, slice):
            axis += 1
    return r
