"""Planning a conversion: what each source array becomes (mode, destination metadata,
codecs, notes) and how it is split into regions (see :mod:`zarrcy.convert.engine`)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any, Iterable, Iterator, Sequence

import ml_dtypes
import numpy as np

from zarrcy.array import META_KEY, Array
from zarrcy.chunk_grid import RegularChunkGrid
from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid
from zarrcy.errors import MetadataError, expected
from zarrcy.v2.metadata import V2ArrayMetadata
from zarrcy.convert.model import ArrayPlan, ConvertError, ConvertOptions, _prefix
from zarrcy.convert.options import (
    compressor_to_numcodecs,
    parse_codecs_json,
    parse_compressor,
    parse_quantize,
    parse_shape,
)

_NATIVE = frozenset(("bytes", "transpose", "blosc", "zstd", "gzip", "crc32c"))


def _stored_size(store: Any, key: str) -> int:
    gs = getattr(store, "getsize", None)
    if gs is not None:
        n = gs(key)
        return int(n) if n is not None else 0
    v = store.get(key)
    return 0 if v is None else len(v)


def _region_grid(shape: Sequence[int], region: Sequence[int]) -> tuple[int, ...]:
    return tuple(-(-s // r) if s else 0 for s, r in zip(shape, region))


def _region_shape(shape: tuple[int, ...], obj: tuple[int, ...], itemsize: int, target: int, one_object: bool) -> tuple[int, ...]:
    """Whole objects per region: one (sharded) or grown dimension by dimension (last first)
    while the region stays under ``target`` decoded bytes."""
    region = list(obj)
    if one_object or not shape:
        return tuple(region)
    grid = [-(-s // o) if s else 1 for s, o in zip(shape, obj)]
    for d in range(len(shape) - 1, -1, -1):
        per = math.prod(region) * itemsize
        if per <= 0:
            break
        k = max(1, min(grid[d], target // per))
        region[d] = obj[d] * k
        if k < grid[d]:
            break
    return tuple(region)


def _region_selection(plan_shape: tuple[int, ...], region: tuple[int, ...], rid: int) -> tuple[slice, ...]:
    grid = _region_grid(plan_shape, region)
    idx = np.unravel_index(rid, grid) if grid else ()
    return tuple(slice(int(i) * r, min((int(i) + 1) * r, s)) for i, r, s in zip(idx, region, plan_shape))


def region_selection(plan: ArrayPlan, rid: int) -> tuple[slice, ...]:
    """The array selection of region ``rid`` of ``plan`` (regular regions, or the
    per-axis region bounds of a rectilinear destination)."""
    bounds = plan.region_bounds
    if bounds is None:
        return _region_selection(plan.shape, plan.region_shape, rid)
    grid = tuple(len(b) - 1 for b in bounds)
    idx = np.unravel_index(rid, grid) if grid else ()
    return tuple(slice(b[int(i)], b[int(i) + 1]) for i, b in zip(idx, bounds))


def _object_coords(sel: tuple[slice, ...], obj: tuple[int, ...]) -> Iterable[tuple[int, ...]]:
    """Coordinates of the stored objects whose origin lies inside ``sel``."""
    ranges = [range(-(-s.start // o), -(-s.stop // o)) for s, o in zip(sel, obj)]
    return itertools.product(*ranges)


def stored_coords(a: Array, sel: tuple[slice, ...]) -> Iterable[tuple[int, ...]]:
    """Coordinates of the stored objects (chunks, or shards) of ``a`` whose origin lies
    inside ``sel``, for a regular or a rectilinear grid."""
    grid = a.metadata.chunk_grid
    if isinstance(grid, RectilinearChunkGrid):
        # grid_shape(x) per axis = the number of chunks whose origin is < x
        lo = grid.grid_shape(tuple(s.start for s in sel))
        hi = grid.grid_shape(tuple(s.stop for s in sel))
        return itertools.product(*(range(l, h) for l, h in zip(lo, hi)))
    return _object_coords(sel, a._chunk_shape)


def overlapping_objects(a: Array, sel: tuple[slice, ...]) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """``(coords, part of sel)`` of every stored object of ``a`` that ``sel`` touches."""
    grid = a.metadata.chunk_grid
    if isinstance(grid, RectilinearChunkGrid):
        lo = grid.grid_shape(tuple(s.start + 1 for s in sel))  # the chunk holding start is lo - 1
        hi = grid.grid_shape(tuple(s.stop for s in sel))
        for coords in itertools.product(*(range(l - 1, h) for l, h in zip(lo, hi))):
            region = grid.chunk_region(a.shape, coords)
            yield coords, tuple(slice(max(s.start, r.start), min(s.stop, r.stop)) for s, r in zip(sel, region))
        return
    cs = a._chunk_shape
    ranges = [range(s.start // c, -(-s.stop // c)) for s, c in zip(sel, cs)]
    for coords in itertools.product(*ranges):
        yield coords, tuple(slice(max(s.start, i * c), min(s.stop, (i + 1) * c)) for s, i, c in zip(sel, coords, cs))


def _rect_bounds(grid: RectilinearChunkGrid, shape: tuple[int, ...], itemsize: int, target: int,
                 one_object: bool) -> tuple[tuple[int, ...], ...]:
    """Per-axis region bounds on a rectilinear grid (ext-chunk-grid-rectilinear.md): whole
    chunks per region, one (sharded) or grouped as :func:`_region_shape` does (trailing
    axes whole while the region stays under ``target`` decoded bytes, then consecutive
    chunks of one axis, one chunk along the leading axes).  Memory: one bound per chunk
    along each axis (never per chunk of the array)."""
    sizes = [grid.axis_chunk_sizes(a, n) for a, n in enumerate(shape)]
    cuts = [tuple(itertools.accumulate(s, initial=0)) for s in sizes]
    if one_object or not shape or 0 in shape:  # (an empty axis: no regions at all)
        return tuple(cuts)
    ext = [max(s, default=1) for s in sizes]  # the largest chunk: a conservative region size
    for d in range(len(shape) - 1, -1, -1):
        per_unit = math.prod(ext[:d] + ext[d + 1:]) * itemsize  # bytes per index along d
        if per_unit <= 0:
            break
        if per_unit * shape[d] <= target:
            cuts[d], ext[d] = (0, shape[d]), shape[d]
            continue
        groups = [0]
        acc = 0
        for e in sizes[d]:
            if acc and (acc + e) * per_unit > target:
                groups.append(groups[-1] + acc)
                acc = 0
            acc += e
        groups.append(groups[-1] + acc)
        cuts[d] = tuple(groups)
        break
    return tuple(cuts)


def _bounds_plan(bounds: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], int]:
    """``(largest region shape, number of regions)`` of per-axis region bounds."""
    region = tuple(max((b[i + 1] - b[i] for i in range(len(b) - 1)), default=0) for b in bounds)
    return region, math.prod(len(b) - 1 for b in bounds)


# --------------------------------------------------------------------------------------
# planning
# --------------------------------------------------------------------------------------
def _is_v2(meta: Any) -> bool:
    return getattr(meta, "zarr_format", 3) in (1, 2)


def _v3_data_type(meta: Any) -> Any:
    return meta.data_type.v3 if _is_v2(meta) else meta.data_type


def _codecs_native(meta: Any) -> bool:
    return all(getattr(c, "name", None) in _NATIVE for c in meta.codecs)


def _fill_json(dt3: Any, value: Any) -> Any:
    from zarrcy.metadata.fill_value import fill_value_to_json

    return fill_value_to_json(dt3, np.asarray(value, dtype=dt3.dtype)[()])


def _v2_metadata(src: Array) -> V2ArrayMetadata | None:
    """The source's v2/v1 metadata, or None for a v3 array (``Array.metadata`` is typed
    as the v3 document; a v2 array carries a V2ArrayMetadata)."""
    m: object = src.metadata
    return m if isinstance(m, V2ArrayMetadata) else None


def _copy_doc_v3(src: Array) -> dict[str, Any]:
    m = _v2_metadata(src)
    if m is None:
        return src.metadata.to_json()
    dt3 = m.data_type.v3
    doc: dict[str, Any] = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(m.shape),
        "data_type": dt3.to_json(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(m.chunk_grid.chunk_shape)}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": m.chunk_key_encoding.separator}},
        "fill_value": _fill_json(dt3, m.fill_value),
        "codecs": [c.to_dict() for c in m.codecs],
        "attributes": dict(m.attributes),
    }
    if m.dimension_names is not None:
        doc["dimension_names"] = list(m.dimension_names)
    return doc


_ZSTD0 = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
_BLOSC_SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
# v2 filters the default chain leaves out without a note (the v3 data type / serializer
# already does their work)
_V2_SILENT_FILTERS = frozenset(("vlen-utf8", "vlen-bytes"))


def _v2_compressor_to_v3(comp: dict[str, Any], itemsize: int) -> tuple[dict[str, Any] | None, str | None]:
    """A numcodecs compressor config -> (its v3 codec, or None; a note when it is not the same)."""
    cid = comp.get("id")
    if cid == "blosc":
        shuffle = int(comp.get("shuffle", 1))
        if shuffle == -1:  # numcodecs AUTOSHUFFLE: bit shuffle for 1-byte items, else byte shuffle
            shuffle = 2 if itemsize == 1 else 1
        cfg = {"cname": comp.get("cname", "lz4"), "clevel": int(comp.get("clevel", 5)),
               "shuffle": _BLOSC_SHUFFLES.get(shuffle, "shuffle"), "blocksize": int(comp.get("blocksize", 0) or 0)}
        return {"name": "blosc", "configuration": cfg}, None
    if cid == "zstd":
        return {"name": "zstd", "configuration": {"level": int(comp.get("level", 0)),
                                                  "checksum": bool(comp.get("checksum", False))}}, None
    if cid == "gzip":
        return {"name": "gzip", "configuration": {"level": int(comp.get("level", 5))}}, None
    if cid == "zlib":
        level = int(comp.get("level", 1))
        return ({"name": "gzip", "configuration": {"level": level}},
                f"compressor zlib level {level} has no Zarr v3 codec: gzip level {level} (the same deflate) is used")
    return None, None


def _default_codecs(src: Array) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The destination's default (array->array filters, bytes->bytes compressors, notes)
    when neither ``--codecs`` nor ``--compressor`` is given: the source's compressor (blosc,
    zstd, gzip; zlib as gzip) and the filters that have a v3 equivalent
    (``fixedscaleoffset`` -> ``scale_offset`` + ``cast_value``); anything else is dropped or
    replaced by zstd level 0, and a note says so."""
    m = src.metadata
    notes: list[str] = []
    filters: list[dict[str, Any]] = []
    v2 = _v2_metadata(src)
    if v2 is not None:
        from zarrcy.codecs.scale_offset import expand_fixedscaleoffset

        for f in v2.filters or []:
            fid = f.get("id")
            if fid in _V2_SILENT_FILTERS:
                continue
            if fid == "fixedscaleoffset":
                try:
                    cfg = {k: v for k, v in f.items() if k != "id"}
                    filters.extend(c.to_dict() for c in expand_fixedscaleoffset(cfg, "filters"))
                    continue
                except (MetadataError, ValueError):
                    pass
            notes.append(f"filter {fid} dropped: Zarr v3 has no equivalent codec, the values are stored unfiltered")
        comp = v2.compressor
        if comp is None:
            notes.append("the source has no compressor: zstd level 0 is used (--compressor none keeps it uncompressed)")
            return filters, [dict(_ZSTD0)], notes
        v3, note = _v2_compressor_to_v3(comp, src.dtype.itemsize)
        if v3 is None:
            notes.append(f"compressor {comp.get('id')} has no Zarr v3 codec: zstd level 0 is used instead "
                         "(choose one with --compressor)")
            return filters, [dict(_ZSTD0)], notes
        if note:
            notes.append(note)
        return filters, [v3], notes
    chain = list(m.to_json().get("codecs") or [])
    # a sharded source: its inner chain holds the compressor
    while len(chain) == 1 and chain[0].get("name") == "sharding_indexed":
        chain = list((chain[0].get("configuration") or {}).get("codecs") or [])
    out: list[dict[str, Any]] = []
    kinds = {c.name: c.kind for c in m.codecs}
    for c in chain:
        name = c.get("name")
        if name in ("blosc", "zstd", "gzip", "crc32c"):
            cfg = dict(c.get("configuration") or {})
            cfg.pop("typesize", None)  # re-derived from the destination data type
            out.append({"name": name, "configuration": cfg} if cfg or name != "crc32c" else {"name": name})
        elif name in ("bytes", "vlen-utf8", "vlen-bytes", "transpose", "sharding_indexed"):
            continue
        elif kinds.get(name) != "array->bytes":
            notes.append(f"codec {name} of the source not kept (give the chain with --codecs to keep it)")
    if not any(c["name"] != "crc32c" for c in out):
        notes.append("the source has no blosc/zstd/gzip compressor: zstd level 0 is used "
                     "(--compressor none keeps it uncompressed)")
        out.insert(0, dict(_ZSTD0))
    return filters, out, notes


def _default_compressors(src: Array) -> list[dict[str, Any]]:
    """The compressors of :func:`_default_codecs` (the ``--format 2`` default uses them)."""
    return [c for c in _default_codecs(src)[1] if c["name"] != "crc32c"]


_ML_FLOATS = (np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3), np.dtype(ml_dtypes.float8_e5m2))


def _quantizable(dtype: np.dtype) -> bool:
    """--quantize applies to floating-point arrays (numpy float16/32/64, ml_dtypes floats)."""
    if dtype.kind == "f":
        return True
    return dtype in _ML_FLOATS


def _plan_array(src: Array, rel: str, dst_path: str, o: ConvertOptions, single: bool = False) -> ArrayPlan:
    """The plan of one array; ``single``: the source node is this array (not a hierarchy),
    so options that cannot apply to it are errors rather than notes."""
    m = src.metadata
    chunks = parse_shape(o.chunks, "--chunks")
    shards = parse_shape(o.shards, "--shards")
    rgrid = m.chunk_grid if isinstance(m.chunk_grid, RectilinearChunkGrid) else None
    rect = rgrid is not None
    # the source's chunking as the plan reports it (largest edge per axis when rectilinear)
    src_chunks = tuple(max(e, default=1) for e in src.read_chunk_sizes) if rect else tuple(src.chunks)
    codecs = parse_codecs_json(o.codecs)
    comp = parse_compressor(o.compressor)
    quant = parse_quantize(o.quantize)
    ndim = src.ndim
    notes: list[str] = []
    if quant and not _quantizable(src.dtype):
        if single:
            raise ConvertError(f"--quantize: /{src.path} is {src.dtype}; --quantize applies to floating-point arrays "
                               "only", 2)
        quant = None
        notes.append(f"not quantized: {src.dtype} is not a floating-point type (--quantize applies to float arrays "
                     "only; use --include/--exclude to choose the arrays)")
    if single:
        for name, shape, raw in (("--chunks", chunks, o.chunks), ("--shards", shards, o.shards)):
            if shape is not None and len(shape) != ndim:
                raise ConvertError(expected(name, f"{ndim} sizes (the rank of /{src.path}, shape {src.shape})", raw), 2)
    # in a hierarchy, --chunks/--shards apply to the arrays of their rank; the others keep
    # their source chunking (still re-encoded with the requested codecs)
    if chunks is not None and len(chunks) != ndim:
        chunks = None
        if shards is not None and len(shards) == ndim:
            raise ConvertError(expected(f"/{rel} --chunks", f"{ndim} sizes (the rank of --shards)", o.chunks), 2)
    if shards is not None and len(shards) != ndim:
        shards = None
    # a rectilinear source keeps its grid unless --chunks/--shards rechunk it to a regular one
    keep_rect = rgrid is not None and chunks is None and shards is None
    src_v2 = _is_v2(m)
    changes = any(x is not None for x in (chunks, shards, codecs, comp, quant))
    dst_format = int(o.zarr_format)
    itemsize = src.dtype.itemsize
    src_format = getattr(m, "zarr_format", 3)
    if dst_format == 3:
        dt3 = _v3_data_type(m)
        if dt3 is None:
            raise _Unsupported(f"data type {m.data_type.to_json()!r} has no Zarr v3 equivalent")
        from zarrcy.convert import hdf5 as _h5

        h5src = _h5.is_hdf5_array(src)  # stored HDF5 chunks are never copied (internal codec)
        copy_ok = not h5src and not o.rewrite and not changes and (not src_v2 or _codecs_native(m))
        if h5src:
            try:  # the chunk index inside the file (a truncated file fails here, before writing)
                _h5.validate(src)
            except _h5.HDF5SourceError as e:
                raise ConvertError(f"source: {e}", 2) from None
        if h5src and shards is None and chunks is None:
            chunks, shards = _h5.default_layout(src.shape, tuple(src.chunks), itemsize, max(o.region_bytes, 1))
        if h5src and quant is not None and _h5.is_coordinate(src):
            quant = None  # --quantize is for data variables: coordinates (dimension scales) stay exact
        if h5src and quant is None and (packed := _h5.packing_chain(src)) is not None:
            why = _h5.check_packing(src, packed)
            if why is not None:
                raise ConvertError(f"source /{src.path}: --cf-packing chain is not exact: {why} "
                                   "(use --cf-packing keep)", 2)
            quant = packed
        if copy_ok and rgrid is not None:  # stored objects copied as they are, grid and all
            bounds = _rect_bounds(rgrid, src.shape, itemsize, o.region_bytes, False)
            region, n = _bounds_plan(bounds)
            return ArrayPlan(src.path, dst_path, rel, "copy", 3, _copy_doc_v3(src), src.shape, str(src.dtype),
                             src_chunks, src_chunks, _rect_shards(src, rgrid), region, n, src.nbytes, notes=notes,
                             region_bounds=bounds)
        if copy_ok:
            doc = _copy_doc_v3(src)
            obj = tuple(m.chunk_grid.chunk_shape) if isinstance(m.chunk_grid, RegularChunkGrid) else src_chunks
            region = _region_shape(src.shape, obj, itemsize, o.region_bytes, False)
            return ArrayPlan(src.path, dst_path, rel, "copy", 3, doc, src.shape, str(src.dtype), tuple(src.chunks),
                             tuple(src.chunks), src.shards, region, math.prod(_region_grid(src.shape, region)), src.nbytes,
                             notes=notes)
        # a kept rectilinear grid: sharded (a rectilinear shard grid) with the source's
        # inner chunks, or not, as the source (zarr-python 3.4 shards only with regular
        # inner chunks, so they are the source's own)
        rect_inner = _rect_inner(src) if keep_rect else None
        if shards is None and chunks is None and not rect and src.shards is not None:
            shards, chunks = src.shards, src.chunks
        if chunks is None:  # (a kept rectilinear grid: the plan reports the largest chunk)
            chunks = (src_chunks if keep_rect or shards is None or all(s % c == 0 for s, c in zip(shards, src_chunks))
                      else tuple(shards))
        if shards is not None and any(s % c for s, c in zip(shards, chunks)):
            raise ConvertError(expected(f"/{rel} --shards", f"multiples of the chunk shape {chunks}", ",".join(map(str, shards))), 2)
        kept: list[dict[str, Any]] = []  # source filters kept as v3 codecs (lossy: verify expects them)
        if codecs is not None:
            inner = list(codecs)
        else:
            serializer = {"name": "bytes", "configuration": {"endian": "little"}}
            if getattr(dt3, "variable_length", False):  # string / bytes (zarr-extensions)
                serializer = {"name": "vlen-utf8" if dt3.category == "string" else "vlen-bytes"}
            if comp is not None:
                inner = [serializer, *comp]
            else:
                kept, compressors, default_notes = _default_codecs(src)
                notes.extend(default_notes)
                if kept and quant:
                    notes.append(f"source filters {[f['name'] for f in kept]} replaced by --quantize")
                    kept = []
                inner = [*kept, serializer, *compressors]
        if codecs is not None and any(isinstance(c, dict) and c.get("name") == "zarrcy.hdf5_chunk" for c in inner):
            raise ConvertError("--codecs: zarrcy.hdf5_chunk is internal to HDF5 sources (it only decodes)", 2)
        if quant:
            inner = [*quant, *inner]

        dst_chunks: tuple[int, ...] = tuple(chunks)

        def make(inner: list[Any]) -> ArrayPlan:
            codec_chain: list[Any]
            if keep_rect and rect_inner is not None:
                codec_chain = [{"name": "sharding_indexed", "configuration": {
                    "chunk_shape": list(rect_inner), "codecs": inner,
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                    "index_location": "end"}}]
            elif shards is not None:
                codec_chain = [{"name": "sharding_indexed", "configuration": {
                    "chunk_shape": list(dst_chunks), "codecs": inner,
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                    "index_location": "end"}}]
            else:
                codec_chain = inner
            doc = {
                "zarr_format": 3,
                "node_type": "array",
                "shape": list(src.shape),
                "data_type": dt3.to_json(),
                "chunk_grid": (rgrid.to_dict() if keep_rect and rgrid is not None
                               else {"name": "regular", "configuration": {"chunk_shape": list(shards or dst_chunks)}}),
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": _fill_json(dt3, m.fill_value),
                "codecs": codec_chain,
                "attributes": dict(m.attributes),
            }
            if m.dimension_names is not None:
                doc["dimension_names"] = list(m.dimension_names)
            if keep_rect and rgrid is not None:
                bounds = _rect_bounds(rgrid, src.shape, itemsize, o.region_bytes, rect_inner is not None)
                rregion, n = _bounds_plan(bounds)
                return ArrayPlan(src.path, dst_path, rel, "rewrite", 3, doc, src.shape, str(src.dtype), src_chunks,
                                 src_chunks, _rect_shards(src, rgrid), rregion, n, src.nbytes, quantize=quant,
                                 notes=notes, kept_filters=kept or None, region_bounds=bounds)
            obj = tuple(shards or dst_chunks)
            region = _region_shape(src.shape, obj, itemsize, o.region_bytes, shards is not None)
            return ArrayPlan(src.path, dst_path, rel, "rewrite", 3, doc, src.shape, str(src.dtype), src_chunks,
                             dst_chunks, tuple(shards) if shards else None, region,
                             math.prod(_region_grid(src.shape, region)), src.nbytes, quantize=quant, notes=notes,
                             kept_filters=kept or None)

        plan = make(inner)
        if kept:
            try:  # e.g. a NaN fill value cannot go through fixedscaleoffset's integer type
                _dst_metadata(plan)
            except (MetadataError, ValueError) as e:
                notes.append(f"source filters {[f['name'] for f in kept]} dropped: not valid in Zarr v3 here ({e})")
                plan = make(inner[len(kept):] if not quant else inner)
                plan.kept_filters = None
        return plan
    if dst_format != 2:
        raise ConvertError(expected("--format", "2 or 3", dst_format), 2)
    # ---- Zarr v2 destination
    if keep_rect:
        raise _Unsupported("Zarr v2 has no rectilinear chunk grid: pass --chunks for this array (or --format 3, "
                           "which keeps the grid)")
    if shards is not None:
        raise ConvertError("--shards: Zarr v2 has no sharding (use --format 3)", 2)
    if codecs is not None or quant is not None:
        raise ConvertError("--codecs/--quantize: not supported with --format 2 (use --compressor)", 2)
    from zarrcy.v2.dtypes import v2_dtype_to_json, v2_fill_value_to_json

    v2 = _v2_metadata(src)
    if v2 is not None and chunks is None and comp is None and not o.rewrite and src_format == 2:
        doc = v2.to_json()
        mode = "copy"
        chunks = tuple(src.chunks)
    else:
        mode = "rewrite"
        chunks = chunks or src_chunks
        if comp is not None:
            compressor = compressor_to_numcodecs(comp)
        elif v2 is not None:
            compressor = v2.compressor
        else:
            compressor = compressor_to_numcodecs(_default_compressors(src))
        if v2 is not None:
            dtj, fvj = v2.data_type.to_json(), v2.fill_value_json
            filters, order, sep = v2.filters, v2.order, v2.chunk_key_encoding.separator
        else:
            from zarrcy.v2.dtypes import V2DataType

            dtj = v2_dtype_to_json(src.dtype)
            fvj = v2_fill_value_to_json(V2DataType(np.dtype(src.dtype), dtj), m.fill_value)
            filters, order, sep = None, "C", "."
        doc = {"zarr_format": 2, "shape": list(src.shape), "chunks": list(chunks), "dtype": dtj,
               "compressor": compressor, "fill_value": fvj, "order": order, "filters": filters,
               "dimension_separator": sep}
        if m.attributes:
            doc["attributes"] = dict(m.attributes)
    region = _region_shape(src.shape, tuple(chunks), itemsize, o.region_bytes, False)
    return ArrayPlan(src.path, dst_path, rel, mode, 2, doc, src.shape, str(src.dtype), src_chunks,
                     tuple(chunks), None, region, math.prod(_region_grid(src.shape, region)), src.nbytes)


class _Unsupported(Exception):
    pass


def _rect_inner(src: Array) -> tuple[int, ...] | None:
    """The inner chunk shape of a rectilinear source sharded with a rectilinear shard grid
    (None: not sharded; ``chunks`` is refused for an unsharded rectilinear array)."""
    try:
        return tuple(src.chunks)
    except NotImplementedError:
        return None


def _rect_shards(src: Array, grid: RectilinearChunkGrid) -> tuple[int, ...] | None:
    """The largest shard of a rectilinear shard grid (for the plan's report), or None."""
    return grid.max_chunk_shape(src.shape) if _rect_inner(src) is not None else None


def _dst_metadata(plan: ArrayPlan) -> Any:
    if plan.dst_format == 3:
        from zarrcy.document.array import ArrayMetadata

        return ArrayMetadata.from_json(plan.dst_doc, path=f"/{plan.dst_path} (destination)")
    from zarrcy.v2.metadata import V2ArrayMetadata

    return V2ArrayMetadata.from_json(plan.dst_doc, path=f"/{plan.dst_path} (destination)")


def _group_metadata(fmt: int, attrs: dict[str, Any]) -> Any:
    if fmt == 3:
        from zarrcy.document.group import GroupMetadata

        return GroupMetadata(attributes=dict(attrs))
    from zarrcy.v2.metadata import V2GroupMetadata

    return V2GroupMetadata(attributes=dict(attrs))


def _estimate(plans: list[ArrayPlan], src_store: Any) -> None:
    """Stored source bytes (listing) and an output estimate from encoding one region."""
    from zarrcy.api import open_array
    from zarrcy.storage import MemoryStore

    for p in plans:
        src = open_array(src_store, path=p.src_path, mode="r")
        prefix = _prefix(p.src_path)
        total = 0
        for key in src_store.list_prefix(prefix):
            rest = key[len(prefix):]
            coords = src.metadata.chunk_key_encoding.decode_chunk_key(rest)
            if coords is not None and len(coords) == src.ndim:
                total += _stored_size(src_store, key)
        p.src_stored_bytes = total
        if p.mode == "copy" or p.n_regions == 0:
            p.estimated_output_bytes = total
            continue
        sel = region_selection(p, next(iter(p.region_ids())))  # (HDF5: a region holding stored chunks)
        data = src[sel]
        ms = MemoryStore()
        m = _dst_metadata(p)
        m2 = dataclasses.replace(m, shape=tuple(s.stop - s.start for s in sel)) if p.dst_format == 3 else None
        if m2 is None:
            p.estimated_output_bytes = None
            continue
        ms.set(META_KEY, m2.to_bytes())  # an array writes only where its metadata exists
        a = Array(ms, "", m2)
        a[...] = data
        out = sum(len(ms.get(k) or b"") for k in ms.list() if k != META_KEY)
        decoded = data.nbytes
        p.estimated_output_bytes = int(out / decoded * (p.nbytes - p.fill_bytes)) if decoded else 0
