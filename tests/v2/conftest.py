"""Helpers for the Zarr v2/v1 tests: fixtures written by zarr-python 3.4 (zarr_format=2)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest


@pytest.fixture
def zp():
    """zarr-python with its v2/v3-interop warnings silenced (pytest runs with -W error)."""
    zarr = pytest.importorskip("zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield zarr


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
