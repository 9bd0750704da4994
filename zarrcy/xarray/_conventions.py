"""xarray's Zarr conventions, shared by the reader (:mod:`zarrcy.xarray.store`) and the
writer (:mod:`zarrcy.xarray.writer`): dimension names (v3 ``dimension_names``, v2 the
``_ARRAY_DIMENSIONS`` attribute) and ``_FillValue`` attributes as xarray's zarr engine
stores them (floats as base64 of a little-endian float64, so NaN/inf survive JSON)."""

from __future__ import annotations

from typing import Any

from zarrcy.metadata.xarray_attrs import DIMENSION_KEY, decode_fill_attr, encode_fill_attr  # noqa: F401 (re-exported)


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
