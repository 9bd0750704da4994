"""The CF conventions of the HDF5 / NetCDF-4 view (:mod:`zarrcy.storage.hdf5`): CF time
variables whose ``units`` differ between the files joined along ``concat_dim``
(re-encoded onto one unit, :mod:`zarrcy.storage.cf_time`), the float type CF packed
integers unpack to, and the distinct stored values of a packed variable.  Storage layer
(layer 2)."""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Sequence

import numpy as np

from zarrcy.storage.cf_time import TimeUnitsError, is_time_units, parse_time_encoding, recoder
from zarrcy.storage.hdf5_errors import HDF5SourceError

__all__ = ["cf_unpacked_dtype", "comparable_attrs", "distinct_values", "packing_attrs", "recoded", "recoded_from",
           "time_recoded", "time_recoders"]


def comparable_attrs(attrs: dict[str, Any], axis: int | None) -> dict[str, Any]:
    """The attributes that must agree between files: along the concat axis, a CF time
    variable's ``units``/``calendar`` may differ (its values are re-encoded, see
    :func:`time_recoders`)."""
    if axis is None or not is_time_units(attrs.get("units")):
        return attrs
    return {k: v for k, v in attrs.items() if k not in ("units", "calendar")}


def time_recoders(files: Sequence[Any], name: str, infos: list[dict[str, Any]],
                  time_units: str | None) -> list[Callable[[np.ndarray], np.ndarray] | None] | None:
    """For a CF time variable along ``concat_dim`` (``units: "<unit> since <date>"`` in
    the first file; ``infos``: its description in each of ``files``): per file, the
    function re-encoding its values onto the first file's units (or ``time_units``),
    None where nothing changes; None when the variable is not CF time.  Different
    calendars, units that are not CF time in a later file, and a bad ``--time-units``
    raise HDF5SourceError naming file and variable."""
    first = infos[0]["attrs"]
    if not is_time_units(first.get("units")):
        return None
    try:
        target = parse_time_encoding(time_units or first["units"], first.get("calendar"))
    except TimeUnitsError as e:
        where = "--time-units" if time_units else f"{files[0].path}: variable /{name}"
        raise HDF5SourceError(f"{where}: {e}") from None
    out = []
    for f, info in zip(files, infos):
        try:
            src = parse_time_encoding(info["attrs"].get("units"), info["attrs"].get("calendar"))
            out.append(recoder(src, target, info["zdt"], info["fill"] if info["has_fill_attr"] else None))
        except TimeUnitsError as e:
            raise HDF5SourceError(f"{f.path}: variable /{name}: {e}") from None
    return out


def recoded(fn: Callable[[np.ndarray], np.ndarray], values: np.ndarray, f: Any, name: str) -> np.ndarray:
    """``fn(values)``; a value that cannot be re-encoded raises HDF5SourceError naming file and variable."""
    try:
        return fn(values)
    except TimeUnitsError as e:
        raise HDF5SourceError(f"{f.path}: variable /{name}: {e}") from None


def recoded_from(parts: Sequence[Any], infos: list[dict[str, Any]], recode: list[Any] | None) -> list[str]:
    """``"file (units)"`` of each part whose time values are re-encoded."""
    return [f"{os.path.basename(p.file.path)} ({i['attrs'].get('units')})"
            for p, i, fn in zip(parts, infos, recode or []) if fn is not None]


def time_recoded(store: Any, path: str) -> list[str]:
    """The files whose CF time values of HDF5Store array ``path`` are re-encoded onto its
    units (``"file (their units)"``); empty when none are."""
    return list(store.cf_record(path).recoded_from)


def packing_attrs(store: Any, path: str) -> dict[str, Any]:
    """The CF ``scale_factor`` / ``add_offset`` of HDF5Store array ``path`` as the file
    stores them (numpy scalars of their own type: what CF decoding multiplies and adds with)."""
    return dict(store.cf_record(path).packing)


def distinct_values(store: Any, path: str, dtype: np.dtype, block_bytes: int = 64 << 20) -> np.ndarray:
    """The distinct values HDF5Store array ``path`` holds in its files, as ``dtype``
    (sorted), read through h5py block by block (bounded memory): the stored integers of
    a CF-packed variable, before any packing is applied."""
    seen: set[Any] = set()
    for part in store.cf_record(path).parts:
        with part.file.lock:
            ds = part.dataset()
            n = ds.shape[0] if ds.ndim else 1
            step = max(1, block_bytes // max(1, math.prod(ds.shape[1:]) * dtype.itemsize)) if ds.ndim else 1
            for i in range(0, n, step):
                block = np.asarray(ds[i: i + step] if ds.ndim else ds[()])
                seen.update(np.unique(block).tolist())
    return np.array(sorted(seen), dtype=dtype)


def cf_unpacked_dtype(zdt: np.dtype, packing: dict[str, Any]) -> np.dtype:
    """The float type CF packed integers of type ``zdt`` unpack to, as xarray chooses it
    (``xarray.coding.variables._choose_float_dtype``): the attributes' type when both
    ``scale_factor`` and ``add_offset`` have the same float type (float64 for 32-bit
    integers), float64 when only ``add_offset`` is there, else ``scale_factor``'s type."""
    sf, ao = packing.get("scale_factor"), packing.get("add_offset")
    st = np.asarray(sf).dtype if sf is not None else None
    ot = np.asarray(ao).dtype if ao is not None else None
    if st is not None and ot is not None and st == ot and st in (np.dtype("f4"), np.dtype("f8")):
        return np.dtype("f8") if zdt.itemsize == 4 and zdt.kind in "iu" else st
    if ot is not None or st is None or st.kind != "f":
        return np.dtype("f8")
    return st if st.itemsize >= 4 else np.dtype("f4")
