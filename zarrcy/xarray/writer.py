"""Writing: :func:`to_zarrcy`, ``Dataset.to_zarr`` for zarrcy (xarray's CF coders and
modes, ``append_dim``, ``region``, Dask data block by block on shard boundaries)."""

from __future__ import annotations

from typing import Any, Literal, Mapping

import numpy as np
import xarray as xr

from zarrcy.api import consolidate_metadata, open_group
from zarrcy.storage._common import get_metadata
from zarrcy.xarray._conventions import DIMENSION_KEY, dims_and_attrs, encode_fill_attr, zarr_format
from zarrcy.xarray.store import ZarrcyDataStore

__all__ = ["WriteMode", "to_zarrcy"]

WriteMode = Literal["w", "w-", "a", "a-", "r+"]
_WRITE_MODES: tuple[WriteMode, ...] = ("w", "w-", "a", "a-", "r+")

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


def _choose_mode(mode: WriteMode | None, append_dim: Any, region: Any) -> WriteMode:
    """xarray's defaults and checks for ``Dataset.to_zarr(mode=, append_dim=, region=)``."""
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode not in _WRITE_MODES:  # untyped callers
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
        return get_metadata(root.store, prefix + ".zmetadata") is not None
    except Exception:  # noqa: BLE001
        return False


def _existing_dims(arrays: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, arr in arrays.items():
        try:
            dims, _ = dims_and_attrs(arr, name)
        except KeyError:
            continue
        for d, n in zip(dims, arr.shape):
            out.setdefault(d, n)
    return out


def _auto_region(root_store: ZarrcyDataStore, arrays: Mapping[str, Any], ds: xr.Dataset,
                 region: Mapping[str, slice | Literal["auto"]]) -> dict[str, slice]:
    """``"auto"`` entries of ``region`` found by looking the coordinate values up in the store."""
    out: dict[str, slice] = {}
    for dim, val in region.items():
        if isinstance(val, slice):
            out[dim] = val
            continue
        if dim not in ds.variables:  # a dimension without coordinate: the whole of it
            out[dim] = slice(0, ds.sizes[dim])
            continue
        if dim not in arrays:
            raise KeyError(f"region['{dim}']='auto': the store has no coordinate variable {dim!r} to look values up in")
        # stack_char_dim=False: a dimension coordinate is never a character array (xarray's
        # own "stackable" rule when it opens a dataset).  Decoded alone with the default,
        # an ``S1`` coordinate (one byte per label) would be joined into one 0-d string
        # ("IndexVariable objects must be 1-dimensional"; xarray's zarr engine 2026.9
        # fails the same lookup with an AssertionError)
        stored = xr.conventions.decode_cf_variable(dim, root_store.variable(dim, arrays[dim]), stack_char_dim=False)
        idx = stored.to_index().get_indexer(np.asarray(ds[dim].values))
        if (idx == -1).any():
            raise KeyError(f"region['{dim}']='auto': not every value of coordinate {dim!r} is in the store")
        if idx.size and (np.diff(idx) != 1).any():
            raise ValueError(f"region['{dim}']='auto': the values of coordinate {dim!r} are not one contiguous, "
                             "increasing run of the stored coordinate")
        out[dim] = slice(int(idx[0]), int(idx[-1]) + 1) if idx.size else slice(0, 0)
    return out


def _validate_region(ds: xr.Dataset, region: Any, append_dim: Any) -> dict[str, slice | Literal["auto"]]:
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
    fmt = zarr_format(root)
    existing_store = ZarrcyDataStore(root)

    regions: dict[str, slice] = {}
    if region is not None:
        # ("auto" entries looked up in the store; slices as given)
        regions = _auto_region(existing_store, arrays, ds, _validate_region(ds, region, append_dim))
        ds = ds.drop_vars(list(ds.indexes))  # index coordinates are not rewritten (xarray's rule)

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
            {k: existing_store.variable(k, arrays[k]) for k in existing_names}, {})
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
        sdims, _ = dims_and_attrs(arr, name)
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
            if d in regions:
                r = regions[d]
                start, stop, _ = r.indices(n)
                if r.stop is not None and r.stop > n or (r.start or 0) > n:
                    raise ValueError(f"variable {name!r}: region[{d!r}]={r} goes past the stored size {n}")
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
            arr, target_sel, grow_to = targets[name]
            if mode == "a-" and append_dim is not None and append_dim not in e.dims:
                continue
            if grow_to is not None:
                arr.resize(grow_to)
            to_write.append((arr, _as_stored(e.data, np.dtype(arr.dtype)), target_sel))
            continue
        arr = _create_variable(root, fmt, name, e, storage[name], layout[name], chunks, shards, compressors)
        to_write.append((arr, _as_stored(e.data, storage[name]), tuple(slice(0, n) for n in e.shape)))

    # -- data
    for arr, data, write_sel in to_write:
        _write_data(arr, data, write_sel)

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
            vattrs["_FillValue"] = encode_fill_attr(e.attrs["_FillValue"], dtype)
        kwargs["dimension_names"] = dims
        fill = layout.get("fill_value", e.encoding.get("fill_value"))
        if fill is None:
            fill = np.nan if dtype.kind in "fc" else "" if dtype.kind in "UT" else b"" if dtype.kind in "SO" else 0
        kwargs["fill_value"] = fill
    if sh is not None:
        ck = sh if ck is None else ck  # shards without chunks: one chunk per shard
        kwargs["shards"] = tuple(-(-s // c) * c for s, c in zip(sh, ck))
    if ck is not None:
        kwargs["chunks"] = ck
    return root.create_array(name, **kwargs)
