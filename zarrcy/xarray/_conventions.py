"""xarray's Zarr conventions, shared by the reader (:mod:`zarrcy.xarray.store`) and the
writer (:mod:`zarrcy.xarray.writer`): dimension names (v3 ``dimension_names``, v2 the
``_ARRAY_DIMENSIONS`` attribute) and ``_FillValue`` attributes as xarray's zarr engine
stores them (floats as base64 of a little-endian float64, so NaN/inf survive JSON)."""

from __future__ import annotations

import base64
import struct
from typing import Any

import numpy as np

DIMENSION_KEY = "_ARRAY_DIMENSIONS"


# -- fill values as xarray's zarr engine stores them in attributes ------------------------------
def encode_fill_attr(value: Any, dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return base64.standard_b64encode(struct.pack("<d", float(value))).decode()
    if dtype.kind == "c":
        v = complex(value)
        return [base64.standard_b64encode(struct.pack("<d", x)).decode() for x in (v.real, v.imag)]
    if dtype.kind in "iu":
        return int(value)
    if dtype.kind == "b":
        return bool(value)
    if dtype.kind == "S" or isinstance(value, bytes):
        return base64.standard_b64encode(bytes(value)).decode()
    if dtype.kind in "UT":
        return str(value)
    return value


def decode_fill_attr(value: Any, dtype: np.dtype) -> Any:
    if dtype.kind == "f" and isinstance(value, str):
        return struct.unpack("<d", base64.standard_b64decode(value))[0]
    if dtype.kind == "c" and isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        re, im = (struct.unpack("<d", base64.standard_b64decode(v))[0] for v in value)
        return complex(re, im)
    if dtype.kind == "S" and isinstance(value, str):
        return base64.standard_b64decode(value)
    return value

def zarr_format(node: Any) -> int:
    return int(getattr(node.metadata, "zarr_format", 3))


def dims_and_attrs(arr: Any, name: str) -> tuple[tuple[str, ...], dict[str, Any]]:
    attrs = dict(arr.attrs)
    if zarr_format(arr) == 3:
        dims = arr.dimension_names
        if dims is None or len(dims) != arr.ndim or any(d is None for d in dims):
            raise KeyError(f"{arr.store.url}/{arr.path}: no dimension_names for every dimension, which xarray needs")
        return tuple(dims), attrs
    dims = attrs.pop(DIMENSION_KEY, None)
    if dims is None or len(dims) != arr.ndim:
        raise KeyError(f"{arr.store.url}/{arr.path}: missing the attribute {DIMENSION_KEY!r}, which xarray needs")
    return tuple(dims), attrs
