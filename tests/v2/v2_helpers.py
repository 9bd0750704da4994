"""Plain helpers of the Zarr v2/v1 tests (fixtures live in conftest.py)."""

from __future__ import annotations

import numpy as np


def write_v2(zarr, root, name, data, **kw):
    """Write ``data`` with zarr-python as a Zarr v2 array; returns the zarr array."""
    kw.setdefault("chunks", tuple(max(1, s // 3) for s in data.shape) or ())
    z = zarr.create_array(str(root), name=name, shape=data.shape, dtype=data.dtype, zarr_format=2, **kw)
    z[...] = data
    return z


def same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    if a.dtype.fields is not None:
        return a.tobytes() == b.tobytes()
    return bool(np.array_equal(a, b))
