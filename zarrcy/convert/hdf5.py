"""HDF5 / NetCDF-4 sources for ``zarrcy convert`` (issue 17).

The engine reads every source through a store; HDF5 files come in as
:class:`zarrcy.storage.hdf5.HDF5Store` (a read-only Zarr v3 view, see there).  This
module holds the few conversion rules that differ from Zarr sources:

* :func:`open_source`: one file (detected by signature) or several (a glob, a list)
  concatenated along ``--concat-dim``; errors become exit 2 naming file and variable;
* :func:`default_layout`: default destination chunks = the HDF5 chunk shape (grown when
  tiny, clipped to the shape) in shards of about ``target`` bytes;
* the stored chunks are never copied (the internal ``zarrcy.hdf5_chunk`` codec is
  never written): :func:`is_hdf5_array` makes the engine re-encode;
* ``--cf-packing chain``: :func:`packing_chain` hands the source's ``[scale_offset,
  cast_value]`` chain to the destination, after :func:`check_packing` proved with the
  cast engine that it gives back every packed integer exactly.

Regions are read as every array is (``src[sel]``): the HDF5 layer itself serves each
stored chunk with one ``pread`` at an offset its chunk table checked, and the
``zarrcy.hdf5_chunk`` codec decodes it without the GIL (zarrcy/storage/hdf5.py).
"""

from __future__ import annotations

import math
import os
from typing import Any, Sequence

import numpy as np

from zarrcy.storage.hdf5_cf import distinct_values, packing_attrs, time_recoded
from zarrcy.storage.hdf5 import HDF5SourceError, HDF5Store, SourceChangedError, expand_sources, is_hdf5
from zarrcy.storage.hdf5_stored import chunk_ids_of_boxes, grid_of

__all__ = ["open_source", "stored_regions", "source_identity", "check_source", "source_changed", "is_coordinate", "unsupported_datasets", "validate", "default_layout", "is_hdf5_array", "packing_chain", "check_packing", "HDF5SourceError",
           "MIN_CHUNK_BYTES", "SHARD_BYTES"]

#: source chunks smaller than this are grown (whole multiples) for the destination
MIN_CHUNK_BYTES = 256 << 10
#: default destination shard size (decoded)
SHARD_BYTES = 64 << 20


def open_source(src: Any, concat_dim: str | None, cf_packing: str = "keep",
                allow_external: bool = False, time_units: str | None = None) -> HDF5Store | None:
    """An HDF5Store for ``src`` when it is HDF5 (several files need ``concat_dim``), else None.
    ``allow_external``: read external raw data, virtual-dataset sources and external
    links inside the source file's directory (zarrcy/storage/hdf5_refs.py);
    ``time_units``: re-encode CF time along ``concat_dim`` onto them (``--time-units``)."""
    if isinstance(src, (list, tuple)) and src and all(isinstance(x, (str, os.PathLike)) for x in src):
        many = True
    elif isinstance(src, (str, os.PathLike)):
        text = os.fspath(src)
        if isinstance(text, bytes) or "://" in text:
            return None  # URLs: stores (store_from_url)
        many = any(ch in text for ch in "*?[") and not os.path.exists(text)
    else:
        return None  # a Store instance
    if concat_dim is None and cf_packing == "keep" and time_units is None and not many and not allow_external:
        return None  # store_from_url detects a single HDF5 file by itself
    paths = expand_sources(src)
    for p in paths:
        if not is_hdf5(p):
            if not many and concat_dim is None:
                return None  # not HDF5: a Zarr source (--cf-packing has no effect there)
            raise HDF5SourceError(f"{p}: expected an HDF5 / NetCDF-4 file (HDF5 signature), received "
                                  f"{'a directory' if os.path.isdir(p) else 'no signature' if os.path.exists(p) else 'no such file'}")
    if len(paths) > 1 and concat_dim is None:
        raise HDF5SourceError(f"{src}: {len(paths)} files match; pass --concat-dim DIM to concatenate them")
    return HDF5Store(paths, concat_dim=concat_dim, cf_packing=cf_packing, allow_external=allow_external,
                     time_units=time_units)


def is_hdf5_array(arr: Any) -> bool:
    return isinstance(arr.store, HDF5Store)


def time_note(arr: Any) -> str | None:
    """A note when the CF time values of an HDF5 array are re-encoded onto its units."""
    if not is_hdf5_array(arr):
        return None
    files = time_recoded(arr.store, arr.path)
    if not files:
        return None
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return (f"time values of {shown} re-encoded onto {arr.attrs.get('units')!r} (every value an integer there; "
            "xarray decodes the same instants)")


def is_coordinate(arr: Any) -> bool:
    """A coordinate variable: one dimension, named like the array (a dimension scale)."""
    names = arr.metadata.dimension_names
    return names is not None and len(names) == 1 and names[0] == arr.path.rsplit("/", 1)[-1]


def unsupported_datasets(store: Any) -> list[tuple[str, str]]:
    """(path, reason) of the datasets an HDF5 source cannot show (none for other stores)."""
    return sorted(store.unsupported.items()) if isinstance(store, HDF5Store) else []


def validate(arr: Any) -> None:
    """HDF5SourceError naming file and variable when the array's stored chunks are not
    all inside their files (a truncated file), or when its CF time values cannot be
    re-encoded onto one unit (checked now, read once: refused before anything is written)."""
    arr.store.validate_array(arr.path)
    if time_recoded(arr.store, arr.path):
        arr[...]


def stored_regions(plan: Any, src: Any) -> None:
    """Plan only the regions of an HDF5 array that hold stored chunks (issue 23, item 4):
    the others read as the fill value everywhere, and a run writes nothing for them
    (chunks and shards that are all fill value are not stored), so they are skipped --
    a ``2**50``-element dataset with one chunk written converts one region.  The regions
    come from the chunk table (:meth:`HDF5Store.stored_chunk_ids`), never from the grid;
    ``plan.regions`` holds their ids and ``plan.fill_bytes`` the decoded size left out.
    Nothing changes for other sources, with ``write_empty_chunks`` on (fill chunks are
    then stored), or when a part of the array is stored whole."""
    from zarrcy.config import get as config_get

    if not is_hdf5_array(src) or plan.region_bounds is not None or plan.mode != "rewrite" or not plan.shape:
        return
    if config_get("write_empty_chunks"):
        return
    ids = src.store.stored_chunk_ids(src.path)
    if ids is None:
        return
    cs = tuple(src.chunks)
    grid = grid_of(plan.shape, cs)
    nd = len(cs)
    coords = np.stack(np.unravel_index(ids, grid), axis=1).astype(np.int64) if ids.size else np.empty((0, nd), np.int64)
    lo = coords * np.asarray(cs, np.int64).reshape(1, nd)
    hi = np.minimum(lo + np.asarray(cs, np.int64).reshape(1, nd), np.asarray(plan.shape, np.int64).reshape(1, nd))
    rids = chunk_ids_of_boxes(lo, hi, plan.region_shape, grid_of(plan.shape, plan.region_shape))
    if rids is None:
        return
    region = np.asarray(plan.region_shape, np.int64)
    shape = np.asarray(plan.shape, np.int64)
    rgrid = grid_of(plan.shape, plan.region_shape)
    planned = 0
    for i in range(0, rids.shape[0], 1 << 16):  # decoded size of the planned regions (edges clipped)
        rc = np.stack(np.unravel_index(rids[i: i + (1 << 16)], rgrid), axis=1).astype(np.int64) * region
        planned += int(np.prod(np.minimum(rc + region, shape) - rc, axis=1, dtype=np.float64).sum())
    itemsize = src.dtype.itemsize
    plan.regions = rids
    plan.n_regions = int(rids.shape[0])
    plan.fill_bytes = max(0, plan.nbytes - planned * itemsize)


def source_identity(store: Any) -> Any:
    """What the HDF5 source files were when opened (None for other stores): a part of the
    resume fingerprint, so ``--resume`` refuses a source that changed since the
    interrupted run (its journaled regions hold the old data)."""
    return store.identity() if isinstance(store, HDF5Store) else None


def source_changed(e: BaseException, store: Any = None) -> BaseException | None:
    """The :class:`SourceChangedError` behind ``e`` (or its causes) -- or, for another
    error (a chunk that no longer decodes), the one the HDF5 ``store`` raises when it
    finds its source changed now (a rewrite within one tick of a coarse file system
    clock shows only in the bytes and the chunk table) -- else None."""
    seen = 0
    cur: BaseException | None = e
    while cur is not None and seen < 10:
        if isinstance(cur, SourceChangedError):
            return cur
        cur = cur.__cause__ or cur.__context__
        seen += 1
    if isinstance(store, HDF5Store):
        try:
            store.check_unchanged()
        except SourceChangedError as changed:
            return changed
        except HDF5SourceError:
            return None
    return None


def check_source(store: Any) -> None:
    """Before a conversion is reported complete: SourceChangedError if an HDF5 source
    file was replaced or rewritten since it was opened (its identity, then a second
    look at the chunk tables; issue 23, item 2)."""
    if isinstance(store, HDF5Store):
        store.check_unchanged()


def default_layout(shape: Sequence[int], chunks: Sequence[int], itemsize: int,
                   target: int = SHARD_BYTES) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """Destination ``(chunks, shards)`` for an HDF5 array: its chunk shape (clipped to
    the shape; grown to about MIN_CHUNK_BYTES by whole multiples, last dimension
    first, when smaller), sharded in about ``target`` bytes (None: one chunk is all)."""
    shape = tuple(int(s) for s in shape)
    if not shape:
        return (), None
    c = [max(1, min(int(x), max(1, s))) for x, s in zip(chunks, shape)]
    c = list(_grow(shape, c, itemsize, MIN_CHUNK_BYTES))
    if math.prod(-(-max(1, s) // x) for s, x in zip(shape, c)) <= 1:
        return tuple(c), None
    shard = _grow(shape, c, itemsize, target)
    return tuple(c), (None if tuple(shard) == tuple(c) else tuple(shard))


def _grow(shape: tuple[int, ...], base: Sequence[int], itemsize: int, target: int) -> tuple[int, ...]:
    out = list(base)
    for d in range(len(shape) - 1, -1, -1):
        per = math.prod(out) * itemsize
        if per >= target:
            break
        room = -(-max(1, shape[d]) // base[d])
        k = max(1, min(room, target // max(1, per)))
        out[d] = base[d] * k
        if k < room:
            break
    return tuple(out)


def packing_chain(arr: Any) -> list[dict[str, Any]] | None:
    """The ``[scale_offset, cast_value]`` head of an HDF5 array's codecs (``--cf-packing chain``)."""
    if not is_hdf5_array(arr):
        return None
    codecs = [c.to_dict() for c in arr.metadata.codecs]
    if len(codecs) >= 3 and codecs[0]["name"] == "scale_offset" and codecs[1]["name"] == "cast_value":
        return codecs[:2]
    return None


def check_packing(arr: Any, chain: list[dict[str, Any]]) -> str | None:
    """None when ``chain`` re-encodes every packed integer of ``arr`` exactly (all values
    of 8/16-bit types; the stored values of wider ones), else why not.  The check runs
    the values through the cast engine (zarrcy.casting.check_cast, the same kernels
    that write the destination) and compares with the integers."""
    from zarrcy.casting import check_cast
    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.pipeline import CodecPipeline

    cv = chain[1]["configuration"]
    from zarrcy.metadata.data_type import parse_data_type

    idt = parse_data_type(cv["data_type"]).dtype
    fdt = arr.dtype
    if idt.itemsize <= 2:
        info = np.iinfo(idt)
        ints = np.arange(int(info.min), int(info.max) + 1, dtype=np.int64).astype(idt)
    else:  # the values the file holds (read once, region by region through the chain's inverse)
        ints = distinct_values(arr.store, arr.path, idt)
    smap = cv.get("scalar_map")
    mapped = {int(e[1]) for e in (smap or {}).get("encode", [])}
    if mapped:
        ints = ints[~np.isin(ints, list(mapped))]
    spec = ArraySpec((int(ints.size),), fdt, fdt.type("nan") if fdt.kind == "f" else fdt.type(0))
    pipe = CodecPipeline.from_codecs([*chain, {"name": "bytes", "configuration": {"endian": "little"}}], spec)
    floats = pipe.decode(np.ascontiguousarray(ints).astype(idt.newbyteorder("<")).tobytes())
    rep = check_cast(floats, chain)
    if rep.failing:
        return (f"the chain cannot encode the value {rep.first_failing_value!r} "
                f"({rep.first_failing_reason})")
    encoded = pipe.encode(np.ascontiguousarray(floats))
    if encoded is None:  # the pipeline stored nothing (no values to compare)
        return None if ints.size == 0 else "the chain gives back no encoded values"
    back = np.frombuffer(bytes(encoded), dtype=idt.newbyteorder("<"))
    bad = np.flatnonzero(back != ints)
    if bad.size:
        i = int(bad[0])
        return f"the packed value {int(ints[i])} decodes to {floats[i]!r} and re-encodes to {int(back[i])}"
    return _differs_from_cf(arr, ints, floats)


def _differs_from_cf(arr: Any, ints: np.ndarray, floats: np.ndarray) -> str | None:
    """None when the chain's decoding (``floats``, from ``x / scale + offset``,
    ext-codec-scale_offset.md) of every packed value ``ints`` equals CF's
    (``x * scale_factor + add_offset`` in the unpacked type, with the attributes' own
    types: xarray.coding.variables ``_scale_offset_decoding``), bit for bit; else the
    first value where they differ.  Division and multiplication agree for every value
    only for some scale factors (powers of two, and 1), so most real CF packing keeps
    its attributes (``--cf-packing keep``) instead."""
    packing = packing_attrs(arr.store, arr.path)
    cf = ints.astype(floats.dtype)
    if "scale_factor" in packing:
        cf *= packing["scale_factor"]
    if "add_offset" in packing:
        cf += packing["add_offset"]
    same = (cf == floats) | (np.isnan(cf) & np.isnan(floats))
    bad = np.flatnonzero(~same)
    if not bad.size:
        return None
    i = int(bad[0])
    return (f"{bad.size:,} of {ints.size:,} packed values decode differently from CF (xarray): "
            f"{int(ints[i])} is {cf[i]!r} as x * scale_factor + add_offset and {floats[i]!r} through the chain "
            "(the scale_offset codec divides by its scale; CF multiplies by scale_factor)")
