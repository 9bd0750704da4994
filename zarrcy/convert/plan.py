"""Planning a conversion: what each source array becomes (mode, destination metadata,
codecs, CF attributes, notes) and how it is split into regions (see
:mod:`zarrcy.convert.engine`).

:class:`Planner` is the role object: its declared inputs are the parsed
:class:`~zarrcy.convert.options.Settings` and whether the source is a single array
(then options that cannot apply are errors, not notes); :meth:`Planner.plan` takes one
source :class:`~zarrcy.array.Array` and returns its :class:`ArrayPlan`.  The pieces it
combines live beside it: :mod:`~zarrcy.convert.regions` (region geometry),
:mod:`~zarrcy.convert.default_codecs` (the default chain), :mod:`~zarrcy.convert.cf`
(CF attributes and the ``--quantize`` sentinels), :mod:`~zarrcy.convert.hdf5`
(HDF5 layout and ``--cf-packing chain``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import ml_dtypes
import numpy as np

from zarrcy.array import META_KEY, Array
from zarrcy.chunk_grid import RegularChunkGrid
from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid
from zarrcy.convert import hdf5 as _h5
from zarrcy.convert.cf import (KEEP_FILL, CFError, QuantizeMapping, check_attributes, quantize_mapping, v2_attributes,
                               v3_attributes)
from zarrcy.convert.default_codecs import default_codecs, default_compressors, v2_metadata
from zarrcy.convert.model import ArrayPlan, ConvertError, _prefix
from zarrcy.convert.options import Settings, compressor_to_numcodecs
from zarrcy.convert.regions import _bounds_plan, _rect_bounds, _region_grid, _region_shape, region_selection, stored_size
from zarrcy.errors import MetadataError, expected

__all__ = ["Planner", "dst_metadata", "group_metadata", "estimate"]

_NATIVE = frozenset(("bytes", "transpose", "blosc", "zstd", "gzip", "crc32c"))
_ML_FLOATS = (np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3), np.dtype(ml_dtypes.float8_e5m2))
_INDEX_CODECS = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]


class _Unsupported(Exception):
    """The array has no form in the destination format (skipped with --on-unsupported skip)."""


def _quantizable(dtype: np.dtype) -> bool:
    """--quantize applies to floating-point arrays (numpy float16/32/64, ml_dtypes floats)."""
    return dtype.kind == "f" or dtype in _ML_FLOATS


def _fill_json(dt3: Any, value: Any) -> Any:
    from zarrcy.metadata.fill_value import fill_value_to_json

    return fill_value_to_json(dt3, np.asarray(value, dtype=dt3.dtype)[()])


def _largest_chunks(src: Array) -> tuple[int, ...]:
    """The source's chunking as the plan reports it (the largest edge per axis when rectilinear)."""
    if isinstance(src.metadata.chunk_grid, RectilinearChunkGrid):
        return tuple(max(e, default=1) for e in src.read_chunk_sizes)
    return tuple(src.chunks)


def _dimension_names(src: Array) -> list[Any] | None:
    names = src.metadata.dimension_names
    return None if names is None else list(names)


class Planner:
    """What each source array becomes (see the module docstring)."""

    def __init__(self, settings: Settings, single: bool) -> None:
        self.s = settings
        self.single = single

    # -- one array ------------------------------------------------------------------------
    def plan(self, src: Array, rel: str, dst_path: str) -> ArrayPlan:
        notes: list[str] = []
        chunks, shards = self._shapes(src)
        if self.s.zarr_format == 2:
            p = self._plan_v2(src, rel, dst_path, chunks)
        else:
            p = self._plan_v3(src, rel, dst_path, chunks, shards, notes)
        v2 = v2_metadata(src)
        p.src_format = 3 if v2 is None else int(v2.zarr_format)
        return p

    def _shapes(self, src: Array) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
        """--chunks / --shards for this array: for a single array a wrong rank is an error;
        in a hierarchy they apply to the arrays of their rank (the engine refuses a rank
        no array has), the others keep their source chunking."""
        chunks, shards, ndim = self.s.chunks, self.s.shards, src.ndim
        if self.single:
            for name, shape in (("--chunks", chunks), ("--shards", shards)):
                if shape is not None and len(shape) != ndim:
                    raise ConvertError(expected(name, f"{ndim} sizes (the rank of /{src.path}, shape {src.shape})",
                                                ",".join(map(str, shape))), 2)
        if chunks is not None and len(chunks) != ndim:
            chunks = None
        if shards is not None and len(shards) != ndim:
            shards = None
        return chunks, shards

    def _quantize(self, src: Array, attrs: dict[str, Any], notes: list[str]) -> QuantizeMapping | None:
        quant = self.s.quantize
        if quant is None:
            return None
        if not _quantizable(src.dtype):
            if self.single:
                raise ConvertError(f"--quantize: /{src.path} is {src.dtype}; --quantize applies to floating-point "
                                   "arrays only", 2)
            notes.append(f"not quantized: {src.dtype} is not a floating-point type (--quantize applies to float "
                         "arrays only; use --include/--exclude to choose the arrays)")
            return None
        if _h5.is_coordinate(src):  # --quantize is for data variables: coordinates stay exact
            notes.append("not quantized: a coordinate variable (one dimension, named like it) stays exact")
            return None
        try:
            q = quantize_mapping(quant, src.dtype, src.fill_value, attrs, self.s.quantize_opts,
                                 cf_fill="_FillValue" in attrs)
        except MetadataError as e:
            raise ConvertError(f"source /{src.path}: {e}", 2) from None
        notes.extend(q.notes)
        return q

    def _attributes(self, src: Array, notes: list[str]) -> dict[str, Any]:
        """The destination attributes (CF checks; a v2 fill value kept for xarray)."""
        attrs = dict(src.metadata.attributes)
        try:
            check_attributes(attrs, src.dtype)
        except CFError as e:
            raise ConvertError(f"source {src.store.url}: variable /{src.path}: {e}", 2) from None
        v2 = v2_metadata(src)
        if v2 is None or self.s.zarr_format != 3:
            return attrs
        attrs, note = v3_attributes(attrs, src.dtype, v2.fill_value, v2.fill_value_is_null,
                                    xarray_node=v2.dimension_names is not None)
        if note:
            notes.append(note)
        return attrs

    # -- Zarr v3 destination --------------------------------------------------------------
    def _plan_v3(self, src: Array, rel: str, dst_path: str, chunks: tuple[int, ...] | None,
                 shards: tuple[int, ...] | None, notes: list[str]) -> ArrayPlan:
        s, m = self.s, src.metadata
        v2 = v2_metadata(src)
        dt3 = v2.data_type.v3 if v2 is not None else m.data_type
        if dt3 is None:
            raise _Unsupported(f"data type {m.data_type.to_json()!r} has no Zarr v3 equivalent")
        attrs = self._attributes(src, notes)
        quant = self._quantize(src, attrs, notes)
        rgrid = m.chunk_grid if isinstance(m.chunk_grid, RectilinearChunkGrid) else None
        src_chunks = _largest_chunks(src)
        itemsize = src.dtype.itemsize
        h5src = _h5.is_hdf5_array(src)  # stored HDF5 chunks are never copied (internal codec)
        native = v2 is None or all(c.to_dict()["name"] in _NATIVE for c in v2.codecs)
        copy_ok = not h5src and not s.rewrite and not s.changes_layout and native
        if h5src:
            try:  # the chunk index inside the file (a truncated file fails here, before writing)
                _h5.validate(src)
            except _h5.HDF5SourceError as e:
                raise ConvertError(f"source: {e}", 2) from None
            if (note := _h5.time_note(src)) is not None:
                notes.append(note)
            if shards is None and chunks is None:
                chunks, shards = _h5.default_layout(src.shape, tuple(src.chunks), itemsize, max(s.region_bytes, 1))
            if quant is None and (packed := _h5.packing_chain(src)) is not None:
                why = _h5.check_packing(src, packed)
                if why is not None:
                    raise ConvertError(f"source {src.store.url}: variable /{src.path}: --cf-packing chain is not "
                                       f"exact: {why} (use --cf-packing keep)", 2)
                quant = QuantizeMapping(packed, packed)
        if copy_ok:
            return self._copy_v3(src, rel, dst_path, attrs, rgrid, src_chunks, notes)
        keep_rect = rgrid is not None and chunks is None and shards is None
        rect_inner = _rect_inner(src) if keep_rect else None
        if shards is None and chunks is None and rgrid is None and src.shards is not None:
            shards, chunks = src.shards, src.chunks
        if chunks is None:  # (a kept rectilinear grid: the plan reports the largest chunk)
            chunks = (src_chunks if keep_rect or shards is None or all(a % c == 0 for a, c in zip(shards, src_chunks))
                      else tuple(shards))
        if shards is not None and any(a % c for a, c in zip(shards, chunks)):
            raise ConvertError(expected("--shards", f"multiples of the chunk shape {chunks} (/{rel})",
                                        ",".join(map(str, shards))), 2)
        kept, inner = self._inner_codecs(src, dt3, quant, notes)
        if quant is not None:
            inner = [*quant.chain, *inner]

        def make(inner: list[Any]) -> ArrayPlan:
            if keep_rect and rect_inner is not None:
                codec_chain: list[Any] = [_sharding(rect_inner, inner)]
            elif shards is not None:
                codec_chain = [_sharding(tuple(chunks), inner)]
            else:
                codec_chain = inner
            doc = {
                "zarr_format": 3, "node_type": "array", "shape": list(src.shape), "data_type": dt3.to_json(),
                "chunk_grid": (rgrid.to_dict() if keep_rect and rgrid is not None
                               else {"name": "regular", "configuration": {"chunk_shape": list(shards or chunks)}}),
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": (_fill_json(dt3, m.fill_value) if quant is None or quant.fill_override is None
                               else _fill_json(dt3, quant.fill_override)),
                "codecs": codec_chain, "attributes": attrs,
            }
            if (names := _dimension_names(src)) is not None:
                doc["dimension_names"] = names
            common: dict[str, Any] = dict(quantize=quant.chain if quant else None, notes=notes, kept_filters=kept or None)
            if keep_rect and rgrid is not None:
                bounds = _rect_bounds(rgrid, src.shape, itemsize, s.region_bytes, rect_inner is not None)
                rregion, n = _bounds_plan(bounds)
                return ArrayPlan(src.path, dst_path, rel, "rewrite", 3, doc, src.shape, str(src.dtype), src_chunks,
                                 src_chunks, _rect_shards(src, rgrid), rregion, n, src.nbytes, region_bounds=bounds,
                                 **common)
            region = _region_shape(src.shape, tuple(shards or chunks), itemsize, s.region_bytes, shards is not None)
            return ArrayPlan(src.path, dst_path, rel, "rewrite", 3, doc, src.shape, str(src.dtype), src_chunks,
                             tuple(chunks), tuple(shards) if shards else None, region,
                             math.prod(_region_grid(src.shape, region)), src.nbytes, **common)

        plan = make(inner)
        if kept:
            try:  # e.g. a NaN fill value cannot go through fixedscaleoffset's integer type
                dst_metadata(plan)
            except (MetadataError, ValueError) as e:
                notes.append(f"source filters {[f['name'] for f in kept]} dropped: not valid in Zarr v3 here ({e})")
                plan = make(inner[len(kept):] if not quant else inner)
                plan.kept_filters = None
        _attach(plan, quant)
        return plan

    def _inner_codecs(self, src: Array, dt3: Any, quant: QuantizeMapping | None,
                      notes: list[str]) -> tuple[list[dict[str, Any]], list[Any]]:
        """(kept lossy source filters, the inner chain without --quantize)."""
        s = self.s
        if s.codecs is not None:
            if any(isinstance(c, dict) and c.get("name") == "zarrcy.hdf5_chunk" for c in s.codecs):
                raise ConvertError("--codecs: zarrcy.hdf5_chunk is internal to HDF5 sources (it only decodes)", 2)
            return [], list(s.codecs)
        serializer: dict[str, Any] = {"name": "bytes", "configuration": {"endian": "little"}}
        if dt3.variable_length:  # string / bytes (zarr-extensions)
            serializer = {"name": "vlen-utf8" if dt3.category == "string" else "vlen-bytes"}
        if s.compressor is not None:
            return [], [serializer, *s.compressor]
        kept, compressors, default_notes = default_codecs(src)
        notes.extend(default_notes)
        if kept and quant:
            notes.append(f"source filters {[f['name'] for f in kept]} replaced by --quantize")
            kept = []
        return kept, [*kept, serializer, *compressors]

    def _copy_v3(self, src: Array, rel: str, dst_path: str, attrs: dict[str, Any], rgrid: Any,
                 src_chunks: tuple[int, ...], notes: list[str]) -> ArrayPlan:
        """Stored objects copied as they are (metadata-only migration of v2/v1, or a v3 copy)."""
        s, m = self.s, src.metadata
        itemsize = src.dtype.itemsize
        v2 = v2_metadata(src)
        if v2 is None:
            doc = m.to_json()
        else:
            dt3 = v2.data_type.v3
            doc = {
                "zarr_format": 3, "node_type": "array", "shape": list(v2.shape), "data_type": dt3.to_json(),
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(v2.chunk_grid.chunk_shape)}},
                "chunk_key_encoding": {"name": "v2", "configuration": {"separator": v2.chunk_key_encoding.separator}},
                "fill_value": _fill_json(dt3, v2.fill_value), "codecs": [c.to_dict() for c in v2.codecs],
            }
            if v2.dimension_names is not None:
                doc["dimension_names"] = list(v2.dimension_names)
        doc["attributes"] = attrs
        if rgrid is not None:  # stored objects copied as they are, grid and all
            bounds = _rect_bounds(rgrid, src.shape, itemsize, s.region_bytes, False)
            region, n = _bounds_plan(bounds)
            return ArrayPlan(src.path, dst_path, rel, "copy", 3, doc, src.shape, str(src.dtype), src_chunks,
                             src_chunks, _rect_shards(src, rgrid), region, n, src.nbytes, notes=notes,
                             region_bounds=bounds)
        obj = tuple(m.chunk_grid.chunk_shape) if isinstance(m.chunk_grid, RegularChunkGrid) else src_chunks
        region = _region_shape(src.shape, obj, itemsize, s.region_bytes, False)
        return ArrayPlan(src.path, dst_path, rel, "copy", 3, doc, src.shape, str(src.dtype), tuple(src.chunks),
                         tuple(src.chunks), src.shards, region, math.prod(_region_grid(src.shape, region)), src.nbytes,
                         notes=notes)

    # -- Zarr v2 destination --------------------------------------------------------------
    def _plan_v2(self, src: Array, rel: str, dst_path: str, chunks: tuple[int, ...] | None) -> ArrayPlan:
        from zarrcy.v2.dtypes import V2DataType, v2_dtype_to_json, v2_fill_value_to_json

        s, m = self.s, src.metadata
        if isinstance(m.chunk_grid, RectilinearChunkGrid) and chunks is None:
            raise _Unsupported("Zarr v2 has no rectilinear chunk grid: pass --chunks for this array (or --format 3, "
                               "which keeps the grid)")
        attrs = self._attributes(src, [])
        v2 = v2_metadata(src)
        src_chunks = _largest_chunks(src)
        if v2 is not None and chunks is None and s.compressor is None and not s.rewrite and v2.zarr_format == 2:
            doc, mode, chunks = v2.to_json(), "copy", src_chunks
        else:
            mode = "rewrite"
            chunks = chunks or src_chunks
            if s.compressor is not None:
                compressor = compressor_to_numcodecs(s.compressor)
            elif v2 is not None:
                compressor = v2.compressor
            else:
                compressor = compressor_to_numcodecs(default_compressors(src))
            if v2 is not None:
                dtj, fvj = v2.data_type.to_json(), v2.fill_value_json
                filters, order, sep = v2.filters, v2.order, v2.chunk_key_encoding.separator
            elif src.dtype.kind in "TO":  # strings / bytes: zarr-python's "|O" + a vlen filter
                dtj, fvj, order, sep = "|O", None, "C", "."
                filters = [{"id": "vlen-utf8" if src.dtype.kind == "T" else "vlen-bytes"}]
            else:
                dtj = v2_dtype_to_json(src.dtype)
                fvj = v2_fill_value_to_json(V2DataType(np.dtype(src.dtype), dtj), m.fill_value)
                filters, order, sep = None, "C", "."
            if v2 is None:  # xarray masks a v2 fill_value: only a _FillValue may become one
                attrs, fill = v2_attributes(attrs, _dimension_names(src), np.dtype(src.dtype))
                if fill is None or dtj == "|O":
                    fvj = None
                elif fill is not KEEP_FILL:
                    fvj = v2_fill_value_to_json(V2DataType(np.dtype(src.dtype), dtj), fill)
            doc = {"zarr_format": 2, "shape": list(src.shape), "chunks": list(chunks), "dtype": dtj,
                   "compressor": compressor, "fill_value": fvj, "order": order, "filters": filters,
                   "dimension_separator": sep}
            if attrs:
                doc["attributes"] = attrs
        region = _region_shape(src.shape, tuple(chunks), src.dtype.itemsize, s.region_bytes, False)
        return ArrayPlan(src.path, dst_path, rel, mode, 2, doc, src.shape, str(src.dtype), src_chunks,
                         tuple(chunks), None, region, math.prod(_region_grid(src.shape, region)), src.nbytes)


def _attach(plan: ArrayPlan, quant: QuantizeMapping | None) -> None:
    """The --quantize check chain and sentinels the runners need, on the plan."""
    if quant is None:
        return
    plan.check_quantize = quant.check_chain if quant.check_chain is not quant.chain else None
    plan.sentinels = [x.to_json() for x in quant.sentinels]
    plan.allow_collisions = quant.allow_collisions


def _sharding(inner_chunks: tuple[int, ...], inner: list[Any]) -> dict[str, Any]:
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(inner_chunks), "codecs": inner, "index_codecs": list(_INDEX_CODECS),
        "index_location": "end"}}


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


def dst_metadata(plan: ArrayPlan) -> Any:
    """The destination metadata object of ``plan`` (MetadataError when it is invalid)."""
    if plan.dst_format == 3:
        from zarrcy.document.array import ArrayMetadata

        return ArrayMetadata.from_json(plan.dst_doc, path=f"/{plan.dst_path} (destination)")
    from zarrcy.v2.metadata import V2ArrayMetadata

    return V2ArrayMetadata.from_json(plan.dst_doc, path=f"/{plan.dst_path} (destination)")


def group_metadata(fmt: int, attrs: dict[str, Any]) -> Any:
    if fmt == 3:
        from zarrcy.document.group import GroupMetadata

        return GroupMetadata(attributes=dict(attrs))
    from zarrcy.v2.metadata import V2GroupMetadata

    return V2GroupMetadata(attributes=dict(attrs))


def estimate(plans: list[ArrayPlan], sources: dict[str, Array]) -> None:
    """Stored source bytes (listing) and an output estimate from encoding one region
    (``sources``: each plan's source array by ``plan.rel``)."""
    from zarrcy.storage import MemoryStore

    for p in plans:
        src = sources[p.rel]
        prefix = _prefix(p.src_path)
        total = 0
        for key in src.store.list_prefix(prefix):
            coords = src.metadata.chunk_key_encoding.decode_chunk_key(key[len(prefix):])
            if coords is not None and len(coords) == src.ndim:
                total += stored_size(src.store, key)
        p.src_stored_bytes = total
        if p.mode == "copy" or p.n_regions == 0:
            p.estimated_output_bytes = total
            continue
        sel = region_selection(p, next(iter(p.region_ids())))  # (HDF5: a region holding stored chunks)
        m = dst_metadata(p)
        if p.dst_format != 3:
            p.estimated_output_bytes = None
            continue
        data = src[sel]
        m2 = dataclasses.replace(m, shape=tuple(x.stop - x.start for x in sel))
        ms = MemoryStore()
        ms.set(META_KEY, m2.to_bytes())  # an array writes only where its metadata exists
        a = Array(ms, "", m2)
        a[...] = data
        out = sum(len(ms.get(k) or b"") for k in ms.list() if k != META_KEY)
        p.estimated_output_bytes = int(out / data.nbytes * (p.nbytes - p.fill_bytes)) if data.nbytes else 0
