"""Reading: one zarrcy group as an xarray data store, and its arrays as lazy backend
arrays (xarray's outer indexers -> ``Array.oindex``)."""

from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np
import xarray as xr
from xarray.backends import BackendArray
from xarray.backends.common import AbstractDataStore
from xarray.core import indexing
from xarray.core.utils import FrozenDict

from zarrcy.api import open_group
from zarrcy.xarray._conventions import decode_fill_attr, dims_and_attrs, zarr_format

__all__ = ["ZarrcyBackendArray", "ZarrcyDataStore", "open_zarrcy_store"]


class ZarrcyBackendArray(BackendArray):
    """A lazy view of one zarrcy array; xarray's outer indexers go to ``Array.oindex``."""

    def __init__(self, array: Any) -> None:
        self.array = array
        self.shape = tuple(array.shape)
        self.dtype = np.dtype(array.dtype)

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.OUTER, self._getitem)

    def _getitem(self, key: tuple) -> np.ndarray:
        if not key:  # 0-d
            out = self.array[()]
        elif all(isinstance(k, (slice, int, np.integer)) for k in key):
            out = self.array[key]
        else:
            out = self.array.oindex[key]
        # a single string element comes back as a Python/numpy scalar: keep the dtype
        # (StringDType, object, and the element width of U<n>/S<n>)
        return np.asarray(out, dtype=self.dtype) if self.dtype.kind in "TOUS" else np.asarray(out)

class ZarrcyDataStore(AbstractDataStore):
    """One group of a zarrcy hierarchy as an xarray data store (read-only)."""

    def __init__(self, group: Any, *, use_zarr_fill_value_as_mask: bool | None = None) -> None:
        self.group = group
        if use_zarr_fill_value_as_mask is None:
            use_zarr_fill_value_as_mask = zarr_format(group) == 2  # xarray's default per format
        self.mask_with_fill_value = use_zarr_fill_value_as_mask
        self._arrays = dict(group.arrays())

    def variable(self, name: str, arr: Any) -> xr.Variable:
        dims, attrs = dims_and_attrs(arr, name)
        data = indexing.LazilyIndexedArray(ZarrcyBackendArray(arr))
        chunks: tuple[int, ...] | None
        preferred: dict[Any, Any]
        try:
            regular_chunks = tuple(arr.chunks)
            shards = arr.shards
        except NotImplementedError:  # a rectilinear grid: per-dimension chunk sizes (xarray accepts tuples)
            chunks, shards = None, None
            preferred = dict(zip(dims, arr.write_chunk_sizes))
        else:
            chunks = regular_chunks
            preferred = dict(zip(dims, shards or regular_chunks))
        encoding: dict[str, Any] = {
            "chunks": chunks,
            "preferred_chunks": preferred,
            "shards": shards,
        }
        if np.dtype(arr.dtype).kind == "T":  # as xarray's zarr engine: keep StringDType on rewrite
            encoding["dtype"] = np.dtype(arr.dtype)
        fill = arr.fill_value
        if getattr(arr.metadata, "fill_value_is_null", False):
            fill = None  # v2 "fill_value": null (zarrcy reads such chunks with a default fill)
        if self.mask_with_fill_value:
            if fill is not None:
                attrs["_FillValue"] = fill
        else:
            if zarr_format(arr) == 3:
                encoding["fill_value"] = fill
            if "_FillValue" in attrs:
                attrs["_FillValue"] = decode_fill_attr(attrs["_FillValue"], np.dtype(arr.dtype))
        return xr.Variable(dims, data, attrs, encoding)

    def get_variables(self) -> Mapping[str, xr.Variable]:
        return FrozenDict((k, self.variable(k, a)) for k, a in self._arrays.items())

    def get_attrs(self) -> Mapping[str, Any]:
        return FrozenDict((k, v) for k, v in self.group.attrs.asdict().items() if not k.lower().startswith("_nc"))

    def get_dimensions(self) -> Mapping[str, int]:
        out: dict[str, int] = {}
        for name, arr in self._arrays.items():
            dims, _ = dims_and_attrs(arr, name)
            for d, s in zip(dims, arr.shape):
                if out.setdefault(d, s) != s:
                    raise ValueError(f"dimension {d!r}: conflicting lengths {s} and {out[d]}")
        return FrozenDict(out)

    def get_encoding(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


def open_zarrcy_store(
    filename_or_obj: Any,
    *,
    group: str | None = None,
    storage_options: dict | None = None,
    use_consolidated: bool | None = None,
) -> Any:
    """The zarrcy group at ``group`` of a path, URL or Store, opened read-only."""
    if isinstance(filename_or_obj, os.PathLike):
        filename_or_obj = os.fspath(filename_or_obj)
    kwargs: dict[str, Any] = {}
    if use_consolidated is not None:
        kwargs["use_consolidated"] = use_consolidated
    try:
        return open_group(filename_or_obj, path=(group or "").strip("/") or None, mode="r",
                                 storage_options=storage_options, **kwargs)
    except TypeError:
        if not kwargs:
            raise
        return open_group(filename_or_obj, path=(group or "").strip("/") or None, mode="r",
                                 storage_options=storage_options)
