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

Strings: ``string`` arrays (vlen-utf8) are read as ``StringDType`` variables,
``bytes`` arrays as object arrays of ``bytes``, and the fixed-length types xarray's zarr
writer uses for ``U<n>`` / ``S<n>`` variables (``fixed_length_utf32`` /
``null_terminated_bytes``) as ``U<n>`` / ``S<n>``, as xarray's zarr engine reads them.

Writing: :func:`to_zarrcy` is ``Dataset.to_zarr`` for zarrcy -- same CF encoding (xarray's
zarr coders), same modes (``w``, ``w-``, ``a``, ``a-``, ``r+``), ``append_dim`` (new values
encoded with the stored encoding), ``region`` (dict or ``"auto"``), Dask data written
block by block on shard boundaries.  Its output reads back identically through xarray's
zarr engine, and it appends to / writes regions of stores xarray wrote (v3 and v2).

Uses zarrcy's public API only (layer 6).
"""

from __future__ import annotations

import base64
import os
import struct
from typing import Any, Iterable, Literal, Mapping

import numpy as np
import pandas as pd
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.backends.common import AbstractDataStore
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing
from xarray.core.utils import FrozenDict

from zarrcy.api import consolidate_metadata, open_group
from zarrcy.nodes.group import Group

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
    if dtype.kind == "S" or isinstance(value, bytes):
        return base64.standard_b64encode(bytes(value)).decode()
    if dtype.kind in "UT":
        return str(value)
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
            out = self.array[()]
        elif all(isinstance(k, (slice, int, np.integer)) for k in key):
            out = self.array[key]
        else:
            out = self.array.oindex[key]
        # a single string element comes back as a Python/numpy scalar: keep the dtype
        # (StringDType, object, and the element width of U<n>/S<n>)
        return np.asarray(out, dtype=self.dtype) if self.dtype.kind in "TOUS" else np.asarray(out)


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
        try:
            chunks: tuple[int, ...] | None = tuple(arr.chunks)
            shards = arr.shards
            preferred: dict[Any, Any] = dict(zip(dims, shards or chunks))
        except NotImplementedError:  # a rectilinear grid: per-dimension chunk sizes (xarray accepts tuples)
            chunks, shards = None, None
            preferred = dict(zip(dims, arr.write_chunk_sizes))
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
        return open_group(filename_or_obj, path=(group or "").strip("/") or None, mode="r",
                                 storage_options=storage_options, **kwargs)
    except TypeError:
        if not kwargs:
            raise
        return open_group(filename_or_obj, path=(group or "").strip("/") or None, mode="r",
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
        groups = [("/", root)] + [("/" + p, n) for p, n in root.walk() if isinstance(n, Group)]
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
WriteMode = Literal["w", "w-", "a", "a-", "r+"]

# per-variable ``encoding=`` keys to_zarrcy understands: zarrcy array layout + CF encoding
_LAYOUT_KEYS = frozenset({"chunks", "shards", "compressors", "filters", "serializer", "fill_value"})
_CF_KEYS = frozenset({"dtype", "_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar"})


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
        # a named size may exceed today's length (arrays grown later by append_dim keep it)
        return tuple(max(1, int(per_dim[d])) if d in per_dim else max(1, n) for d, n in zip(dims, shape))
    raise TypeError(f"chunks/shards: expected None or a dict keyed by dimension or variable name, received {spec!r}")


def _choose_mode(mode: str | None, append_dim: Any, region: Any) -> str:
    """xarray's defaults and checks for ``Dataset.to_zarr(mode=, append_dim=, region=)``."""
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode not in ("w", "w-", "a", "a-", "r+"):
        raise ValueError(f"mode: expected one of 'w', 'w-', 'a', 'a-', 'r+', received {mode!r}")
    if append_dim is not None and mode not in ("a", "a-"):
        raise ValueError(f"append_dim: needs mode='a' or 'a-' (or None), received mode={mode!r}")
    if region is not None and mode not in ("a", "a-", "r+"):
        raise ValueError(f"region: needs mode='a', 'a-' or 'r+' (or None), received mode={mode!r}")
    return mode


def _is_dask(data: Any) -> bool:
    return hasattr(data, "__dask_graph__") and hasattr(data, "chunks") and data.__dask_graph__() is not None


def _attr_value(value: Any) -> Any:
    """Attribute values as JSON (numpy arrays -> lists, numpy scalars -> Python scalars)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _encode_variable(var: xr.Variable, name: str) -> xr.Variable:
    """CF-encode one variable as xarray's zarr writer does (same coders, same order)."""
    try:
        from xarray.backends.zarr import encode_zarr_variable
    except ImportError:  # pragma: no cover - older xarray
        return xr.conventions.encode_cf_variable(var, name=name)
    return encode_zarr_variable(var, name=name, zarr_format=3)


def _storage_dtype(name: str, var: xr.Variable) -> np.dtype:
    """The dtype of the zarrcy array for an encoded variable, as xarray's zarr writer
    (zarr_format=3) chooses it: ``U<n>`` -> ``fixed_length_utf32`` and ``S<n>`` ->
    ``null_terminated_bytes`` (numpy ``U<n>``/``S<n>``, native order; a zero width is
    widened to one element, as neither type has length 0); ``str`` objects and
    ``StringDType`` -> the variable-length ``string`` type (vlen-utf8); ``bytes`` objects
    -> the variable-length ``bytes`` type; anything else must be a fixed-size
    numeric/bool dtype."""
    dt = np.dtype(var.dtype)
    if dt.kind == "U":
        return np.dtype(f"U{max(dt.itemsize // 4, 1)}")
    if dt.kind == "S":
        return np.dtype(f"S{max(dt.itemsize, 1)}")
    if dt.kind == "T" or (dt.kind == "O" and xr.coding.strings.check_vlen_dtype(dt) is str):
        return np.dtype(np.dtypes.StringDType())
    if dt.kind == "O" and xr.coding.strings.check_vlen_dtype(dt) is bytes:
        return np.dtype(object)
    if dt.kind in "OMmV":
        raise TypeError(
            f"variable {name!r}: its encoded dtype {dt} has no zarrcy data type (objects other than "
            "str/bytes, raw void and unencoded datetimes are not supported by to_zarrcy); drop it or "
            "convert it"
        )
    return dt


def _as_stored(data: Any, dtype: np.dtype) -> Any:
    """Fixed-width bytes (``S<n>``) as the ``bytes`` objects a variable-length array takes."""
    if _text_kind(dtype) == "bytes" and np.dtype(data.dtype).kind == "S":
        return data.astype(object)
    return data


def _text_kind(dt: np.dtype) -> str | None:
    """'string' / 'bytes' for the variable-length array dtypes, else None."""
    return "string" if dt.kind == "T" else "bytes" if dt.kind == "O" else None


def _text_family(dt: np.dtype) -> str | None:
    """'str' for text dtypes (U<n>, StringDType), 'bytes' for bytes (S<n>, object), else
    None: values of one family may be written into a stored array of the same family."""
    return "str" if dt.kind in "UT" else "bytes" if dt.kind in "SO" else None


def _has_consolidated(root: Any) -> bool:
    if "consolidated_metadata" in (getattr(root.metadata, "extra", None) or {}):
        return True
    prefix = f"{root.path}/" if root.path else ""
    try:
        from zarrcy.storage._common import get_metadata

        return get_metadata(root.store, prefix + ".zmetadata") is not None
    except Exception:  # noqa: BLE001
        return False


def _existing_dims(arrays: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, arr in arrays.items():
        try:
            dims, _ = _dims_and_attrs(arr, name)
        except KeyError:
            continue
        for d, n in zip(dims, arr.shape):
            out.setdefault(d, n)
    return out


def _auto_region(root_store: ZarrcyDataStore, arrays: Mapping[str, Any], ds: xr.Dataset,
                 region: dict[str, Any]) -> dict[str, slice]:
    """``"auto"`` entries of ``region`` found by looking the coordinate values up in the store."""
    out: dict[str, slice] = {}
    for dim, val in region.items():
        if val != "auto":
            out[dim] = val
            continue
        if dim not in ds.variables:  # a dimension without coordinate: the whole of it
            out[dim] = slice(0, ds.sizes[dim])
            continue
        if dim not in arrays:
            raise KeyError(f"region['{dim}']='auto': the store has no coordinate variable {dim!r} to look values up in")
        stored = xr.conventions.decode_cf_variable(dim, root_store._variable(dim, arrays[dim]))
        idx = pd.Index(np.asarray(stored.values)).get_indexer(np.asarray(ds[dim].values))
        if (idx == -1).any():
            raise KeyError(f"region['{dim}']='auto': not every value of coordinate {dim!r} is in the store")
        if idx.size and (np.diff(idx) != 1).any():
            raise ValueError(f"region['{dim}']='auto': the values of coordinate {dim!r} are not one contiguous, "
                             "increasing run of the stored coordinate")
        out[dim] = slice(int(idx[0]), int(idx[-1]) + 1) if idx.size else slice(0, 0)
    return out


def _validate_region(ds: xr.Dataset, region: Any, append_dim: Any) -> dict[str, Any]:
    if region == "auto":
        region = dict.fromkeys(ds.dims, "auto")
    if not isinstance(region, Mapping):
        raise TypeError(f"region: expected a dict {{dim: slice}} or 'auto', received {region!r}")
    region = dict(region)
    for k, v in region.items():
        if k not in ds.dims:
            raise ValueError(f"region: {k!r} is not a dimension of the dataset (dimensions: {list(ds.dims)})")
        if v == "auto":
            continue
        if not isinstance(v, slice):
            raise TypeError(f"region[{k!r}]: expected a slice or 'auto', received {v!r}")
        if v.step not in (None, 1):
            raise ValueError(f"region[{k!r}]: expected a slice with step 1, received {v!r}")
    if append_dim is not None and append_dim in region:
        raise ValueError(f"append_dim={append_dim!r} cannot also be a key of region")
    unrelated = [str(k) for k, v in ds.variables.items() if not set(region) & set(v.dims)]
    if region and unrelated:
        raise ValueError(
            f"region: variables {unrelated!r} have none of the region's dimensions {list(region)}; "
            f"drop them first (ds.drop_vars({unrelated!r}))"
        )
    return region


def _aligned_chunks(chunks: tuple[tuple[int, ...], ...], starts: tuple[int, ...],
                    grid: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Dask chunks moved onto the boundaries of the stored objects (``grid``: shard or
    chunk shape) of a destination written from ``starts``, so no two tasks share one."""
    out = []
    for sizes, start, g in zip(chunks, starts, grid):
        n = int(sum(sizes))
        cuts = set()
        pos = 0
        for s in sizes[:-1]:
            pos += s
            snapped = int(round((start + pos) / g)) * g - start
            if 0 < snapped < n:
                cuts.add(snapped)
        edges = [0, *sorted(cuts), n]
        out.append(tuple(b - a for a, b in zip(edges[:-1], edges[1:])) or (0,))
    return tuple(out)


def _write_data(arr: Any, data: Any, region: tuple[slice, ...]) -> None:
    """``arr[region] = data``; Dask data block by block (rechunked onto the stored objects)."""
    if int(np.prod(data.shape)) == 0:
        return
    if _is_dask(data):
        import dask.array as da

        starts = tuple(s.indices(n)[0] for s, n in zip(region, arr.shape))
        grid = tuple(arr.shards or arr.chunks)
        aligned = _aligned_chunks(tuple(tuple(int(x) for x in c) for c in data.chunks), starts, grid)
        if aligned != data.chunks:
            data = data.rechunk(aligned)
        da.store(data, arr, regions=region, lock=False, compute=True)
        return
    arr[region] = np.asarray(data)


def to_zarrcy(
    ds: xr.Dataset,
    store: Any,
    *,
    group: str | None = None,
    mode: WriteMode | None = None,
    append_dim: str | None = None,
    region: Mapping[str, slice | Literal["auto"]] | Literal["auto"] | None = None,
    encoding: Mapping[str, Mapping[str, Any]] | None = None,
    chunks: Mapping[str, Any] | None = None,
    shards: Mapping[str, Any] | None = None,
    compressors: Any = "auto",
    storage_options: dict | None = None,
    consolidated: bool | None = None,
    compute: bool = True,
) -> Any:
    """Write ``ds`` into a Zarr group the way ``Dataset.to_zarr`` does; xarray's zarr engine
    (and ``engine="zarrcy"``) reads it back.  Returns the zarrcy Group.

    Variables (data and coordinates) are CF-encoded by xarray's own zarr coders (times to
    numbers with ``units``/``calendar``, ``_FillValue``/``scale_factor``/``dtype`` from
    ``encoding``), then stored with ``dimension_names`` = dims (``_ARRAY_DIMENSIONS`` in a
    v2 group) and their attributes; a ``_FillValue`` attribute is stored as xarray's zarr
    writer stores it; float arrays get a NaN Zarr ``fill_value``.

    Layout of new arrays: ``chunks``/``shards`` as ``{dim: size}`` or ``{variable: shape}``,
    or per variable in ``encoding={name: {"chunks": ..., "shards": ..., "compressors": ...}}``
    (which also takes the CF keys ``dtype``, ``_FillValue``, ``scale_factor``, ``add_offset``,
    ``units``, ``calendar``).  Default chunks: the Dask chunks when they are regular, else
    zarrcy's automatic chunks; no sharding.  A shard size must be a multiple of the chunk size.

    ``mode`` (xarray's meanings; default ``"a"`` with ``append_dim``, ``"r+"`` with
    ``region``, else ``"w-"``):

    * ``"w-"`` create, fail if the group exists; ``"w"`` create, replacing what is there;
    * ``"a"`` create or update: new variables are added, existing ones are overwritten
      (their shape must match, except along ``append_dim``), the group attributes replaced;
      ``"a-"`` like ``"a"`` but with ``append_dim`` existing variables without that
      dimension are left alone;
    * ``"r+"`` only existing variables, no metadata change (region writes).

    ``append_dim``: variables having that dimension grow along it and the new slab is
    written at the end; every other dimension must match the stored one (``ValueError``
    naming the variable otherwise).  New values are encoded exactly as the stored ones:
    the stored ``dtype``, ``_FillValue``, ``scale_factor``/``add_offset`` and, for times,
    the stored ``units`` and ``calendar`` are reused, whatever ``ds``'s encoding says.

    ``region``: ``{dim: slice}`` (step 1) or ``"auto"`` (or ``{dim: "auto"}``: the
    positions of ``ds``'s coordinate values in the stored coordinate) writes ``ds`` into
    that part of existing arrays.  As in xarray, index coordinates are not written, and a
    variable sharing no dimension with the region is refused.  Regions need not follow
    chunk or shard boundaries: partly covered chunks and shards are read, merged and
    rewritten by zarrcy, so misaligned region writes are correct.

    Dask-backed variables are written block by block (``dask.array.store``) without
    loading the whole variable; their blocks are first moved onto the destination's shard
    (else chunk) boundaries so no two tasks write one stored object.  ``compute=False``
    is not supported (``NotImplementedError``): the write happens during the call.

    ``consolidated``: write the group's consolidated metadata (default: yes unless
    ``mode="r+"``); metadata consolidated earlier is always refreshed after a change.
    """
    if not compute:
        raise NotImplementedError("to_zarrcy(compute=False): delayed writes are not supported; the data is "
                                  "written during the call (Dask data block by block)")
    mode = _choose_mode(mode, append_dim, region)
    for k in ds.variables:
        if not isinstance(k, str) or not k:
            raise ValueError(f"variable names must be non-empty strings, received {k!r}")
    encoding = {str(k): dict(v) for k, v in (encoding or {}).items()}
    for vname, enc in encoding.items():
        if vname not in ds.variables:
            raise ValueError(f"encoding: {vname!r} is not a variable of the dataset")
        bad = set(enc) - _LAYOUT_KEYS - _CF_KEYS
        if bad:
            raise ValueError(f"encoding[{vname!r}]: unknown keys {sorted(bad)} (known: "
                             f"{sorted(_LAYOUT_KEYS | _CF_KEYS)})")
    if append_dim is not None and append_dim not in ds.dims:
        raise ValueError(f"append_dim={append_dim!r} is not a dimension of the dataset {list(ds.dims)}")

    # -- the destination group and what it already holds
    if mode in ("w", "w-"):
        root = open_group(store, path=group, mode=mode, storage_options=storage_options)
        arrays: dict[str, Any] = {}
    else:
        root = open_group(store, path=group, mode="r+" if mode == "r+" else "a",
                                 storage_options=storage_options)
        arrays = dict(root.arrays())
    was_consolidated = mode not in ("w", "w-") and _has_consolidated(root)
    fmt = _zarr_format(root)
    existing_store = ZarrcyDataStore(root)

    if region is not None:
        region = _validate_region(ds, region, append_dim)
        if any(v == "auto" for v in region.values()):
            region = _auto_region(existing_store, arrays, ds, region)
        ds = ds.drop_vars(list(ds.indexes))  # index coordinates are not rewritten (xarray's rule)
    region = dict(region or {})

    if mode == "r+":
        new_names = [str(k) for k in ds.variables if k not in arrays]
        if new_names:
            raise ValueError(f"mode='r+': variables {new_names!r} do not exist in the store; use mode='a' "
                             "to add variables")
    if append_dim is not None and append_dim not in arrays and append_dim not in _existing_dims(arrays):
        raise ValueError(f"append_dim={append_dim!r} is not a dimension of the stored dataset "
                         f"{_existing_dims(arrays)}")
    if mode != "w":
        given = sorted(set(encoding) & set(arrays))
        if given:
            raise ValueError(f"encoding: variables {given!r} already exist in the store; their stored "
                             "encoding is used")

    # -- CF encoding: new variables from their own encoding, existing ones from the store's
    variables, attrs = xr.conventions.encode_dataset_coordinates(ds)
    variables = {str(k): v for k, v in variables.items()}
    existing_names = [k for k in variables if k in arrays] if mode != "w" else []
    stored_vars: dict[str, xr.Variable] = {}
    if existing_names:
        decoded, _, _ = xr.conventions.decode_cf_variables(
            {k: existing_store._variable(k, arrays[k]) for k in existing_names}, {})
        stored_vars = dict(decoded)
    encoded: dict[str, xr.Variable] = {}
    storage: dict[str, np.dtype] = {}
    layout: dict[str, dict[str, Any]] = {}
    for name, var in variables.items():
        var = var.copy(deep=False)
        enc = encoding.get(name, {})
        layout[name] = {k: v for k, v in enc.items() if k in _LAYOUT_KEYS}
        if name in stored_vars:
            var.encoding = dict(stored_vars[name].encoding)
        else:
            cf = {k: v for k, v in var.encoding.items() if k in _CF_KEYS}
            cf.update({k: v for k, v in enc.items() if k in _CF_KEYS})
            var.encoding = cf
        try:
            e = _encode_variable(var, name)
        except (ValueError, TypeError, OverflowError) as exc:  # e.g. text into a stored float array
            cf_enc = {k: v for k, v in var.encoding.items() if k in _CF_KEYS}
            stored = f" (stored encoding {cf_enc})" if name in stored_vars else ""
            raise type(exc)(f"variable {name!r}: cannot be encoded{stored}: {exc}") from exc
        storage[name] = _storage_dtype(name, e)
        encoded[name] = e

    # -- check existing variables against what is stored
    targets: dict[str, tuple[Any, tuple[slice, ...], tuple[int, ...] | None]] = {}
    for name in existing_names:
        arr = arrays[name]
        e = encoded[name]
        sdims, _ = _dims_and_attrs(arr, name)
        if e.dims != sdims:
            if set(e.dims) != set(sdims):
                raise ValueError(f"variable {name!r}: stored with dimensions {sdims}, received {e.dims}; "
                                 "to_zarrcy cannot change a variable's dimensions")
            e = encoded[name] = e.transpose(*sdims)
        if _text_family(np.dtype(arr.dtype)) != _text_family(storage[name]):
            raise ValueError(f"variable {name!r}: stored with dtype {arr.dtype}, received {e.dtype}")
        want: dict[str, int] = {}
        sel: list[slice] = []
        new_shape: list[int] | None = None
        for ax, (d, n) in enumerate(zip(sdims, arr.shape)):
            if d == append_dim:
                new_shape = list(arr.shape)
                new_shape[ax] = n + e.shape[ax]
                sel.append(slice(n, n + e.shape[ax]))
                continue
            if d in region:
                start, stop, _ = region[d].indices(n)
                if region[d].stop is not None and region[d].stop > n or (region[d].start or 0) > n:
                    raise ValueError(f"variable {name!r}: region[{d!r}]={region[d]} goes past the stored size {n}")
                want[d] = max(stop - start, 0)
                sel.append(slice(start, stop))
            else:
                want[d] = n
                sel.append(slice(0, n))
        got = {d: s for d, s in zip(e.dims, e.shape) if d != append_dim}
        if got != want:
            raise ValueError(
                f"variable {name!r}: stored with sizes {want} (region applied), received {got}; only "
                f"append_dim={append_dim!r} may change size (use region= to write part of a variable)"
            )
        targets[name] = (arr, tuple(sel), tuple(new_shape) if new_shape is not None else None)

    # -- metadata: group attributes, then new arrays, then growth along append_dim
    if mode != "r+":
        root.attrs.put({k: _attr_value(v) for k, v in attrs.items()})
    to_write: list[tuple[Any, Any, tuple[slice, ...]]] = []
    for name, e in encoded.items():
        if name in targets:
            arr, sel, new_shape = targets[name]
            if mode == "a-" and append_dim is not None and append_dim not in e.dims:
                continue
            if new_shape is not None:
                arr.resize(new_shape)
            to_write.append((arr, _as_stored(e.data, np.dtype(arr.dtype)), sel))
            continue
        arr = _create_variable(root, fmt, name, e, storage[name], layout[name], chunks, shards, compressors)
        to_write.append((arr, _as_stored(e.data, storage[name]), tuple(slice(0, n) for n in e.shape)))

    # -- data
    for arr, data, sel in to_write:
        _write_data(arr, data, sel)

    # r+ changes no metadata; otherwise refresh metadata consolidated earlier in any case
    if mode != "r+" and (consolidated or consolidated is None or was_consolidated):
        consolidate_metadata(root.store, path=root.path)
    return root


def _create_variable(root: Any, fmt: int, name: str, e: xr.Variable, dtype: np.dtype,
                     layout: Mapping[str, Any], chunks: Any, shards: Any, compressors: Any) -> Any:
    dims = tuple(str(d) for d in e.dims)
    shape = tuple(int(n) for n in e.shape)
    vattrs = {k: _attr_value(v) for k, v in e.attrs.items()}
    ck = tuple(layout["chunks"]) if layout.get("chunks") is not None else _per_dim(chunks, dims, shape, name)
    sh = tuple(layout["shards"]) if layout.get("shards") is not None else _per_dim(shards, dims, shape, name)
    if ck is None and _is_dask(e.data) and shape and all(shape):
        dchunks = e.data.chunks
        if all(len(set(c[:-1])) <= 1 and c[-1] <= c[0] for c in dchunks):  # regular: usable as Zarr chunks
            ck = tuple(int(c[0]) for c in dchunks)
    if sh is not None and ck is None:
        ck = sh
    kwargs: dict[str, Any] = dict(shape=shape, dtype="bytes" if _text_kind(dtype) == "bytes" else dtype,
                                  attributes=vattrs,
                                  compressors=layout.get("compressors", compressors))
    for k in ("filters", "serializer"):
        if k in layout:
            kwargs[k] = layout[k]
    if fmt == 2:
        # v2 (xarray's v2 convention): the Zarr fill_value is the CF _FillValue
        fill = vattrs.pop("_FillValue", None)
        kwargs["attributes"] = {**vattrs, DIMENSION_KEY: list(dims)}
        kwargs["fill_value"] = fill
        kwargs.pop("serializer", None)
    else:
        if "_FillValue" in vattrs:
            vattrs["_FillValue"] = _encode_fill_attr(e.attrs["_FillValue"], dtype)
        kwargs["dimension_names"] = dims
        fill = layout.get("fill_value", e.encoding.get("fill_value"))
        if fill is None:
            fill = np.nan if dtype.kind in "fc" else "" if dtype.kind in "UT" else b"" if dtype.kind in "SO" else 0
        kwargs["fill_value"] = fill
    if ck is not None:
        kwargs["chunks"] = ck
    if sh is not None:
        kwargs["shards"] = tuple(-(-s // c) * c for s, c in zip(sh, ck))  # type: ignore[arg-type]
    return root.create_array(name, **kwargs)
