"""xarray's Zarr attribute conventions that need no xarray: the dimension-names
attribute of Zarr v2 (``_ARRAY_DIMENSIONS``) and ``_FillValue`` attributes as xarray's
zarr engine stores them (floats as base64 of a little-endian float64, so NaN/inf
survive JSON).  Shared by the xarray backend (:mod:`zarrcy.xarray._conventions`) and
the converter (:mod:`zarrcy.convert.cf`), which must not import xarray."""

from __future__ import annotations

import base64
import struct
from typing import Any

import numpy as np

__all__ = ["DIMENSION_KEY", "encode_fill_attr", "decode_fill_attr"]

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
