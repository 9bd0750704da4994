"""xarray integration: ``xr.open_dataset(url, engine="zarrcy")``, ``xr.open_datatree(...,
engine="zarrcy")`` and :func:`to_zarrcy` (a Dataset writer).

Reading follows xarray's own zarr engine (docs: "Zarr Encoding Specification") so both
engines decode a store to equal datasets:

* dimensions: v3 ``dimension_names``; v2 the ``_ARRAY_DIMENSIONS`` attribute (hidden);
* fill value: for v2 arrays the Zarr ``fill_value`` becomes the ``_FillValue``
  attribute (CF masking); for v3 it does not (xarray's v3 default), but a
  ``_FillValue`` *attribute* is decoded (floats are stored base64 of a little-endian
  float64 so NaN/inf survive JSON);
* CF decoding (scale_factor/add_offset, times, coordinates) is xarray's own:
  variables go through ``StoreBackendEntrypoint`` like every xarray backend.

Data is lazy: a :class:`ZarrcyBackendArray` answers xarray's outer (orthogonal) indexers
with zarrcy's ``oindex``.  ``encoding["preferred_chunks"]`` is the shard shape (the
chunk shape when unsharded), so ``chunks={}`` gives Dask one task per stored object.

Uses zarrcy's public API only (layer 6).
"""

from __future__ import annotations

import base64
import os
import struct
from typing import Any, Iterable, Mapping

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.backends.common import AbstractDataStore
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing
from xarray.core.utils import FrozenDict

import zarrcy

__all__ = ["ZarrcyBackendEntrypoint", "ZarrcyBackendArray", "to_zarrcy", "open_zarrcy_store"]

DIMENSION_KEY = "_ARRAY_DIMENSIONS"


# -- fill values as xarray's zarr engine stores them in attributes ------------------------------
def _encode_fill_attr(value: Any, dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return base64.standard_b64encode(struct.pack("<d", float(value))).decode()
    if dtype.kind == "c":
        v = complex(value)
        return [base64.standard_b64encode(struct.pack("<d", x)).decode() for x in (v.real, v.imag)]
    if dtype.kind in "iu":
        return int(value)
    if dtype.kind == "b":
        return bool(value)
    if dtype.kind == "S":
        return base64.standard_b64encode(bytes(value)).decode()
    return value


def _decode_fill_attr(value: Any, dtype: np.dtype) -> Any:
    if dtype.kind == "f" and isinstance(value, str):
        return struct.unpack("<d", base64.standard_b64decode(value))[0]
    if dtype.kind == "c" and isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        re, im = (struct.unpack("<d", base64.standard_b64decode(v))[0] for v in value)
        return complex(re, im)
    if dtype.kind == "S" and isinstance(value, str):
        return base64.standard_b64decode(value)
    return value


# -- reading -------------------------------------------------------------------------------------
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
            return np.asarray(self.array[()])
        if all(isinstance(k, (slice, int, np.integer)) for k in key):
            return np.asarray(self.array[key])
        return np.asarray(self.array.oindex[key])


def _zarr_format(node: Any) -> int:
    return int(getattr(node.metadata, "zarr_format", 3))


def _dims_and_attrs(arr: Any, name: str) -> tuple[tuple[str, ...], dict[str, Any]]:
    attrs = dict(arr.attrs)
    if _zarr_format(arr) == 3:
        dims = arr.dimension_names
        if dims is None or len(dims) != arr.ndim or any(d is None for d in dims):
            raise KeyError(f"{arr.store.url}/{arr.path}: no dimension_names for every dimension, which xarray needs")
        return tuple(dims), attrs
    dims = attrs.pop(DIMENSION_KEY, None)
    if dims is None or len(dims) != arr.ndim:
        raise KeyError(f"{arr.store.url}/{arr.path}: missing the attribute {DIMENSION_KEY!r}, which xarray needs")
    return tuple(dims), attrs


class ZarrcyDataStore(AbstractDataStore):
    """One group of a zarrcy hierarchy as an xarray data store (read-only)."""

    def __init__(self, group: Any, *, use_zarr_fill_value_as_mask: bool | None = None) -> None:
        self.group = group
        if use_zarr_fill_value_as_mask is None:
            use_zarr_fill_value_as_mask = _zarr_format(group) == 2  # xarray's default per format
        self.mask_with_fill_value = use_zarr_fill_value_as_mask
        self._arrays = dict(group.arrays())

    def _variable(self, name: str, arr: Any) -> xr.Variable:
        dims, attrs = _dims_and_attrs(arr, name)
        data = indexing.LazilyIndexedArray(ZarrcyBackendArray(arr))
        chunks = tuple(arr.chunks)
        shards = arr.shards
        encoding: dict[str, Any] = {
            "chunks": chunks,
            "preferred_chunks": dict(zip(dims, shards or chunks)),
            "shards": shards,
        }
        fill = arr.fill_value
        if getattr(arr.metadata, "fill_value_is_null", False):
            fill = None  # v2 "fill_value": null (zarrcy reads such chunks with a default fill)
        if self.mask_with_fill_value:
            if fill is not None:
                attrs["_FillValue"] = fill
        else:
            if _zarr_format(arr) == 3:
                encoding["fill_value"] = fill
            if "_FillValue" in attrs:
                attrs["_FillValue"] = _decode_fill_attr(attrs["_FillValue"], np.dtype(arr.dtype))
        return xr.Variable(dims, data, attrs, encoding)

    def get_variables(self) -> Mapping[str, xr.Variable]:
        return FrozenDict((k, self._variable(k, a)) for k, a in self._arrays.items())

    def get_attrs(self) -> Mapping[str, Any]:
        return FrozenDict((k, v) for k, v in self.group.attrs.asdict().items() if not k.lower().startswith("_nc"))

    def get_dimensions(self) -> Mapping[str, int]:
        out: dict[str, int] = {}
        for name, arr in self._arrays.items():
            dims, _ = _dims_and_attrs(arr, name)
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
        return zarrcy.open_group(filename_or_obj, path=(group or "").strip("/") or None, mode="r",
                                 storage_options=storage_options, **kwargs)
    except TypeError:
        if not kwargs:
            raise
        return zarrcy.open_group(filename_or_obj, path=(group or "").strip("/") or None, mode="r",
                                 storage_options=storage_options)


_DECODE_ARGS = ("mask_and_scale", "decode_times", "concat_characters", "decode_coords", "drop_variables",
                "use_cftime", "decode_timedelta")


class ZarrcyBackendEntrypoint(BackendEntrypoint):
    """``engine="zarrcy"``: Zarr v3 and v2 hierarchies read through zarrcy."""

    description = "Open Zarr v3/v2 stores (local, s3://, gs://, az://, https://) with zarrcy"
    url = "https://github.com/zarrcy/zarrcy"
    open_dataset_parameters = ("filename_or_obj", *_DECODE_ARGS, "group", "storage_options",
                               "use_consolidated", "use_zarr_fill_value_as_mask")
    supports_groups = True

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if isinstance(filename_or_obj, (str, os.PathLike)):
            _, ext = os.path.splitext(os.fspath(filename_or_obj).rstrip("/"))
            return ext == ".zarr"
        return False

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: Any = None,
        decode_timedelta: Any = None,
        group: str | None = None,
        storage_options: dict | None = None,
        use_consolidated: bool | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
    ) -> xr.Dataset:
        g = open_zarrcy_store(filename_or_obj, group=group, storage_options=storage_options,
                              use_consolidated=use_consolidated)
        store = ZarrcyDataStore(g, use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
        return StoreBackendEntrypoint().open_dataset(
            store, mask_and_scale=mask_and_scale, decode_times=decode_times, concat_characters=concat_characters,
            decode_coords=decode_coords, drop_variables=drop_variables, use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
        )

    def open_groups_as_dict(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        group: str | None = None,
        storage_options: dict | None = None,
        use_consolidated: bool | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        **decode: Any,
    ) -> dict[str, xr.Dataset]:
        root = open_zarrcy_store(filename_or_obj, group=group, storage_options=storage_options,
                                 use_consolidated=use_consolidated)
        groups = [("/", root)] + [("/" + p, n) for p, n in root.walk() if isinstance(n, zarrcy.Group)]
        out: dict[str, xr.Dataset] = {}
        for path, g in groups:
            store = ZarrcyDataStore(g, use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
            out[path] = StoreBackendEntrypoint().open_dataset(store, **decode)
        return out

    def open_datatree(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        **kwargs: Any,
    ) -> Any:
        return xr.DataTree.from_dict(self.open_groups_as_dict(filename_or_obj, **kwargs))


# -- writing -------------------------------------------------------------------------------------
def _per_dim(spec: Any, dims: tuple[str, ...], shape: tuple[int, ...], name: str) -> tuple[int, ...] | None:
    """``spec``: None, a {dim: size} dict, or a {variable: shape} dict."""
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        if isinstance(spec.get(name), (tuple, list)):  # {variable: shape}; ints are per dimension
            return tuple(int(x) for x in spec[name])
        per_dim = {k: v for k, v in spec.items() if not isinstance(v, (tuple, list))}
        if not any(d in per_dim for d in dims):
            return None
        return tuple(max(1, min(int(per_dim.get(d, n)), n) if n else 1) for d, n in zip(dims, shape))
    raise TypeError(f"chunks/shards: expected None or a dict keyed by dimension or variable name, received {spec!r}")


def to_zarrcy(
    ds: xr.Dataset,
    store: Any,
    *,
    group: str | None = None,
    mode: str = "w-",
    chunks: Mapping[str, Any] | None = None,
    shards: Mapping[str, Any] | None = None,
    compressors: Any = "auto",
    storage_options: dict | None = None,
    consolidated: bool = True,
) -> Any:
    """Write ``ds`` as a Zarr v3 group that xarray's zarr engine (and ``engine="zarrcy"``) reads back.

    Variables (data and coordinates) are CF-encoded by xarray (times to numbers with
    ``units``, ``_FillValue``/``scale_factor`` from ``encoding``), then stored as arrays
    with ``dimension_names`` = dims and the attributes; a ``_FillValue`` attribute is
    stored as xarray's zarr writer stores it.  ``chunks``/``shards``: ``{dim: size}``
    or ``{variable: shape}`` (default: zarrcy's automatic chunks, no sharding; a shard
    size must be a multiple of the chunk size).  ``mode``: ``"w-"`` fail if the group
    exists, ``"w"`` overwrite.  With ``consolidated`` (default), the group's
    consolidated metadata is written too.  Returns the zarrcy Group.
    """
    if mode not in ("w", "w-"):
        raise ValueError(f"mode: expected 'w' or 'w-', received {mode!r}")
    # what xarray's zarr writer does: non-index coordinates named in a "coordinates"
    # attribute, then CF encoding of every variable
    variables, attrs = xr.conventions.encode_dataset_coordinates(ds)
    variables, attrs = xr.conventions.cf_encoder(dict(variables), dict(attrs))
    root = zarrcy.open_group(store, path=group, mode=mode, attributes=dict(attrs), storage_options=storage_options)
    for name, var in variables.items():
        values = np.asarray(var.values)
        if values.dtype.kind in "OUSMm":
            raise TypeError(f"{name}: dtype {values.dtype} is not supported by to_zarrcy yet")
        vattrs = dict(var.attrs)
        if "_FillValue" in vattrs:
            vattrs["_FillValue"] = _encode_fill_attr(vattrs["_FillValue"], values.dtype)
        dims = tuple(str(d) for d in var.dims)
        ck = _per_dim(chunks, dims, values.shape, str(name))
        sh = _per_dim(shards, dims, values.shape, str(name))
        if sh is not None and ck is None:
            ck = sh
        kwargs: dict[str, Any] = dict(
            name=str(name), shape=values.shape, dtype=values.dtype, dimension_names=dims,
            attributes=vattrs, compressors=compressors,
            fill_value=np.nan if values.dtype.kind in "fc" else 0,
        )
        if ck is not None:
            kwargs["chunks"] = ck
        if sh is not None:
            kwargs["shards"] = tuple(-(-s // c) * c for s, c in zip(sh, ck))  # type: ignore[arg-type]
        arr = root.create_array(**kwargs)
        if values.size:
            arr[...] = values
    if consolidated:
        consolidate = getattr(zarrcy, "consolidate_metadata", None)
        if consolidate is not None:
            consolidate(root.store, path=root.path)
    return root
