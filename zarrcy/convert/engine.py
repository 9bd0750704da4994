"""The conversion engine behind ``zarrcy convert`` and :func:`zarrcy.convert`.

Plan -> create destination nodes -> convert regions -> verify -> clean up.

* **Regions.** Each destination array is split into regions aligned to its stored
  objects: one shard per region when sharded, else a block of whole chunks of about
  ``region_bytes`` (decoded).  No two regions touch the same stored object, so workers
  (threads, or Dask tasks) need no locks, and memory stays bounded by a few regions
  per worker whatever the array size.
* **Modes.** ``copy`` moves the stored chunk bytes unchanged (metadata-only
  migration: a v2/v1 array whose codecs zarrcy has natively becomes a v3 array with the
  ``v2`` chunk key encoding; or nothing changes at all); ``rewrite`` reads the source
  region, and writes it through the destination's codecs.
* **Journal (resume).** ``<dst>/__zarrcy_convert/plan.json`` is written first (the
  options' fingerprint); after a region's objects are written, the CRC32C of each
  object (or "absent") goes atomically to
  ``__zarrcy_convert/arrays/<array path>/__done/<region id>``.  ``--resume`` checks
  the plan matches, re-reads each journaled region's objects and skips the region when
  every checksum matches; everything else is (re)done.  Stored values are written
  atomically (temp + rename), so a crash loses at most the regions in flight.  When
  every array is complete the whole ``__zarrcy_convert/`` prefix is erased: the
  finished output holds nothing but the converted nodes (byte-identical to an
  uninterrupted run).  Keys starting with ``__`` are reserved (v3-core.rst "Node names").
  Append-only stores (zip) get no journal and cannot be resumed.
* **In place.** ``SRC == DST`` (same directory and path) is allowed only for the
  metadata-only v2/v1 -> v3 migration: a ``zarr.json`` is added beside each node and no
  chunk is touched.  Any other overlap of source and destination is refused.
"""

from __future__ import annotations

import dataclasses
import errno
import fnmatch
import hashlib
import json
import math
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from zarrcy.array import META_KEY, Array, write_metadata
from zarrcy.errors import CastError, CorruptChunkError, MetadataError, ZarrcyError, expected
from zarrcy.group import Group, open_node
from zarrcy.convert.options import (
    compressor_to_numcodecs,
    parse_codecs_json,
    parse_compressor,
    parse_quantize,
    parse_shape,
)
from zarrcy.casting import merge_reports
from zarrcy.convert.progress import Progress, human_bytes

__all__ = ["ConvertError", "ConvertOptions", "ConvertReport", "convert", "JOURNAL_DIR"]

JOURNAL_DIR = "__zarrcy_convert"
#: seconds to sleep before each region (testing aid for the crash/resume tests only)
_DELAY = float(__import__("os").environ.get("ZARRCY_CONVERT_REGION_DELAY", "0") or 0)
_NATIVE = frozenset(("bytes", "transpose", "blosc", "zstd", "gzip", "crc32c"))


class ConvertError(ZarrcyError, RuntimeError):
    """The conversion cannot start or stopped; ``exit_code`` is what the CLI returns."""

    def __init__(self, message: str, exit_code: int = 1, report: Any = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.report = report

    def __reduce__(self):  # keeps the exit code through pickling (dask workers)
        return (type(self), (str(self), self.exit_code, self.report))


@dataclass
class ConvertOptions:
    path: str | None = None            # node inside the source store
    dst_path: str | None = None        # node inside the destination store
    chunks: Any = None
    shards: Any = None
    codecs: Any = None                 # inner codec chain (v3 JSON)
    compressor: Any = None             # "zstd:3", "gzip:1", "blosc:zstd:5:shuffle", "none"
    quantize: Any = None               # "scale=..,offset=..,dtype=uint8,..." or dict
    zarr_format: int = 3
    workers: int | None = None        # regions in flight (threads); None: os.cpu_count()
    resume: bool = False
    verify: bool = False
    dry_run: bool = False
    overwrite: bool = False
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    on_error: str = "stop"             # corrupt source chunk: "stop" | "skip" (fill value)
    on_unsupported: str = "stop"       # data type without a v3 equivalent: "stop" | "skip"
    rewrite: bool = False              # never copy chunk bytes unchanged
    dask: str | None = None            # "tcp://host:port" or "local:N"
    progress: str = "auto"             # "auto" | "bar" | "lines" | "off"
    progress_interval: float = 5.0
    region_bytes: int = 64 << 20
    # --quantize: "first" checks every value before writing anything (one extra read of
    # the source); "inline" checks each region as it is converted and, on the first value
    # that cannot be encoded, removes the destination and reports (no extra read)
    quantize_check: str = "first"
    # HDF5 / NetCDF-4 sources (zarrcy/convert/hdf5.py): several files joined along this
    # dimension; CF scale_factor/add_offset "keep" (as attributes) or "chain" (codecs)
    concat_dim: str | None = None
    cf_packing: str = "keep"


@dataclass
class ArrayPlan:
    src_path: str
    dst_path: str
    rel: str
    mode: str                          # "copy" | "rewrite"
    dst_format: int
    dst_doc: dict[str, Any]
    shape: tuple[int, ...]
    dtype: str
    src_chunks: tuple[int, ...]
    dst_chunks: tuple[int, ...]
    dst_shards: tuple[int, ...] | None
    region_shape: tuple[int, ...]
    n_regions: int
    nbytes: int
    quantize: list[dict[str, Any]] | None = None
    src_stored_bytes: int | None = None
    estimated_output_bytes: int | None = None
    src_format: int = 3
    # what changed besides what the options asked for, and why (compressor substituted,
    # filters without a v3 equivalent dropped, --quantize not applied to a non-float array)
    notes: list[str] = field(default_factory=list)
    # --quantize: what the chain did to this array's values (CastReport.to_json(), summed
    # over the regions: exact/rounded/clamped/wrapped/scalar-mapped counts, round-trip errors)
    quantize_report: dict[str, Any] | None = None
    # lossy source filters kept as v3 codecs (fixedscaleoffset -> scale_offset + cast_value):
    # --verify expects the values after their encode -> decode
    kept_filters: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("dst_doc")
        d["codecs"] = self.dst_doc.get("codecs") if self.dst_format == 3 else {
            "filters": self.dst_doc.get("filters"), "compressor": self.dst_doc.get("compressor")}
        return d


@dataclass
class ConvertReport:
    arrays: int = 0
    groups: int = 0
    regions: int = 0
    regions_done: int = 0
    regions_skipped: int = 0
    objects_written: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    decoded_bytes: int = 0
    seconds: float = 0.0
    verified: bool = False
    dry_run: bool = False
    skipped_arrays: list[tuple[str, str]] = field(default_factory=list)
    corrupt_chunks: list[str] = field(default_factory=list)
    plans: list[ArrayPlan] = field(default_factory=list)
    already_complete: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def compression_ratio(self) -> float | None:
        return self.decoded_bytes / self.bytes_out if self.bytes_out else None

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in dataclasses.asdict(self).items() if k != "plans"}
        d["plans"] = [p.to_json() for p in self.plans]
        d["compression_ratio"] = self.compression_ratio
        d["skipped_arrays"] = [list(x) for x in self.skipped_arrays]
        return d

    def summary(self) -> str:
        if self.dry_run:
            lines = [f"dry run: {self.arrays} array(s), {self.groups} group(s), {self.regions} region(s)"]
            for p in self.plans:
                est = human_bytes(p.estimated_output_bytes) if p.estimated_output_bytes is not None else "?"
                src = human_bytes(p.src_stored_bytes) if p.src_stored_bytes is not None else "?"
                lines.append(
                    f"  /{p.rel or ''} {p.shape} {p.dtype}: {p.mode}, chunks {p.src_chunks} -> {p.dst_chunks}"
                    f"{' in shards ' + str(p.dst_shards) if p.dst_shards else ''}, {p.n_regions} region(s) of "
                    f"{p.region_shape}; decoded {human_bytes(p.nbytes)}, stored {src}, estimated output {est}")
            for path, why in self.skipped_arrays:
                lines.append(f"  /{path}: skipped ({why})")
            lines.extend(self._notes())
            return "\n".join(lines)
        ratio = self.compression_ratio
        lines = [
            f"converted {self.arrays} array(s), {self.groups} group(s) in {self.seconds:.2f} s",
            f"  regions: {self.regions_done} written, {self.regions_skipped} already complete (of {self.regions})",
            f"  stored objects: {self.objects_written}",
            f"  bytes in: {human_bytes(self.bytes_in)} stored, {human_bytes(self.decoded_bytes)} decoded",
            f"  bytes out: {human_bytes(self.bytes_out)}" + (f" (compression ratio {ratio:.2f})" if ratio else ""),
        ]
        if self.verified:
            lines.append("  verified: every region read back equal")
        for path, why in self.skipped_arrays:
            lines.append(f"  skipped /{path}: {why}")
        if self.corrupt_chunks:
            lines.append(f"  corrupt source chunks replaced by the fill value: {', '.join(self.corrupt_chunks[:20])}"
                         + (" ..." if len(self.corrupt_chunks) > 20 else ""))
        for p in self.plans:
            q = p.quantize_report
            if q is None:
                continue
            lines.append(
                f"  quantized /{p.rel}: {p.dtype} -> {q.get('encoded_dtype')} ({' -> '.join(q.get('stages') or [])}), "
                f"{q['count']:,} values: {q['exact']:,} exact, {q['rounded']:,} rounded, {q['clamped']:,} clamped, "
                f"{q['wrapped']:,} wrapped, {q['scalar_mapped']:,} scalar-mapped; max round-trip error "
                f"{_num(q['max_abs_error'])} (abs), {_num(q['max_rel_error'])} (rel)"
                + (f"; {q['round_trip_mismatches']:,} read back as a different kind of value"
                   if q.get("round_trip_mismatches") else "")
                + (" (regions completed by an earlier run not counted)" if q.get("partial") else ""))
        lines.extend(self._notes())
        return "\n".join(lines)

    def _notes(self) -> list[str]:
        out = [f"  note /{p.rel}: {n}" for p in self.plans for n in p.notes]
        out += [f"  warning: {w}" for w in self.warnings]
        return out


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _num(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _cast_report_from_json(d: dict[str, Any]) -> Any:
    from zarrcy.casting import CastReport

    d = dict(d)
    d.pop("partial", None)
    for k in ("max_abs_error", "max_rel_error"):
        d[k] = float(d.get(k, 0.0))
    if isinstance(d.get("first_failing_index"), list):
        d["first_failing_index"] = tuple(d["first_failing_index"])
    return CastReport(**d)


def _prefix(path: str) -> str:
    return path + "/" if path else ""


def _join(a: str, b: str) -> str:
    return f"{a}/{b}" if a and b else (a or b)


def _crc(data: Any) -> str | None:
    if data is None:
        return None
    import crc32c

    return format(crc32c.crc32c(data), "08x")


def is_enospc(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return True
        if "No space left" in str(exc) or "ENOSPC" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def _matches(path: str, patterns: Sequence[str]) -> bool:
    """True if ``path`` or one of its ancestors matches a glob (``/`` prefixes optional)."""
    parts = path.split("/") if path else []
    cands = ["/".join(parts[: i + 1]) for i in range(len(parts))] or [""]
    for pat in patterns:
        p = pat.strip("/")
        for c in cands:
            if fnmatch.fnmatchcase(c, p):
                return True
    return False


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    if a.dtype.fields is not None or a.dtype.kind == "V":
        return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    return bool(np.array_equal(a, b))


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


def _object_coords(sel: tuple[slice, ...], obj: tuple[int, ...]) -> Iterable[tuple[int, ...]]:
    """Coordinates of the stored objects whose origin lies inside ``sel``."""
    import itertools

    ranges = [range(-(-s.start // o), -(-s.stop // o)) for s, o in zip(sel, obj)]
    return itertools.product(*ranges)


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


def _copy_doc_v3(src: Array) -> dict[str, Any]:
    m = src.metadata
    if not _is_v2(m):
        return m.to_json()
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
    if _is_v2(m):
        from zarrcy.codecs.scale_offset import expand_fixedscaleoffset

        for f in m.filters or []:
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
        comp = m.compressor
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


def _quantizable(dtype: np.dtype) -> bool:
    """--quantize applies to floating-point arrays (numpy float16/32/64, ml_dtypes floats)."""
    if dtype.kind == "f":
        return True
    try:
        import ml_dtypes

        return dtype in (np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3), np.dtype(ml_dtypes.float8_e5m2))
    except (ImportError, AttributeError, TypeError):  # pragma: no cover
        return False


def _plan_array(src: Array, rel: str, dst_path: str, o: ConvertOptions, single: bool = False) -> ArrayPlan:
    """The plan of one array; ``single``: the source node is this array (not a hierarchy),
    so options that cannot apply to it are errors rather than notes."""
    m = src.metadata
    chunks = parse_shape(o.chunks, "--chunks")
    shards = parse_shape(o.shards, "--shards")
    rect = getattr(m.chunk_grid, "name", "regular") == "rectilinear"
    if rect and chunks is None and shards is None:
        # regions are planned on a regular grid: a rectilinear destination cannot be
        # split into regions that never share a chunk yet
        raise _Unsupported("a rectilinear chunk grid is converted only to a regular one: pass --chunks "
                           "(and --shards) for this array (keeping the rectilinear grid is not supported yet)")
    # the source's chunking as the plan reports it (largest edge per axis when rectilinear)
    src_chunks = tuple(max(e) for e in src.read_chunk_sizes) if rect else tuple(src.chunks)
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
        if copy_ok:
            doc = _copy_doc_v3(src)
            obj = tuple(m.chunk_grid.chunk_shape)
            region = _region_shape(src.shape, obj, itemsize, o.region_bytes, False)
            return ArrayPlan(src.path, dst_path, rel, "copy", 3, doc, src.shape, str(src.dtype), tuple(src.chunks),
                             tuple(src.chunks), src.shards, region, math.prod(_region_grid(src.shape, region)), src.nbytes,
                             notes=notes)
        if shards is None and chunks is None and not rect and src.shards is not None:
            shards, chunks = src.shards, src.chunks
        if chunks is None:
            chunks = src_chunks if shards is None or all(s % c == 0 for s, c in zip(shards, src_chunks)) else tuple(shards)
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
                kept, compressors, why = _default_codecs(src)
                notes.extend(why)
                if kept and quant:
                    notes.append(f"source filters {[f['name'] for f in kept]} replaced by --quantize")
                    kept = []
                inner = [*kept, serializer, *compressors]
        if codecs is not None and any(isinstance(c, dict) and c.get("name") == "zarrcy.hdf5_chunk" for c in inner):
            raise ConvertError("--codecs: zarrcy.hdf5_chunk is internal to HDF5 sources (it only decodes)", 2)
        if quant:
            inner = [*quant, *inner]

        def make(inner: list[Any]) -> ArrayPlan:
            codec_chain: list[Any]
            if shards is not None:
                codec_chain = [{"name": "sharding_indexed", "configuration": {
                    "chunk_shape": list(chunks), "codecs": inner,
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                    "index_location": "end"}}]
            else:
                codec_chain = inner
            doc = {
                "zarr_format": 3,
                "node_type": "array",
                "shape": list(src.shape),
                "data_type": dt3.to_json(),
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shards or chunks)}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": _fill_json(dt3, m.fill_value),
                "codecs": codec_chain,
                "attributes": dict(m.attributes),
            }
            if m.dimension_names is not None:
                doc["dimension_names"] = list(m.dimension_names)
            obj = tuple(shards or chunks)
            region = _region_shape(src.shape, obj, itemsize, o.region_bytes, shards is not None)
            return ArrayPlan(src.path, dst_path, rel, "rewrite", 3, doc, src.shape, str(src.dtype), src_chunks,
                             tuple(chunks), tuple(shards) if shards else None, region,
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
    if shards is not None:
        raise ConvertError("--shards: Zarr v2 has no sharding (use --format 3)", 2)
    if codecs is not None or quant is not None:
        raise ConvertError("--codecs/--quantize: not supported with --format 2 (use --compressor)", 2)
    from zarrcy.v2.dtypes import v2_dtype_to_json, v2_fill_value_to_json

    if src_v2 and chunks is None and comp is None and not o.rewrite and src_format == 2:
        doc = m.to_json()
        mode = "copy"
        chunks = tuple(src.chunks)
    else:
        mode = "rewrite"
        chunks = chunks or src_chunks
        if comp is not None:
            compressor = compressor_to_numcodecs(comp)
        elif src_v2:
            compressor = m.compressor
        else:
            compressor = compressor_to_numcodecs(_default_compressors(src))
        if src_v2:
            dtj, fvj = m.data_type.to_json(), m.fill_value_json
            filters, order, sep = m.filters, m.order, m.chunk_key_encoding.separator
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


# --------------------------------------------------------------------------------------
# regions
# --------------------------------------------------------------------------------------
@dataclass
class RegionTask:
    """One unit of work; pickles as (store URL, path) pairs through the Arrays."""

    src: Array
    dst: Array
    mode: str
    shape: tuple[int, ...]
    region_shape: tuple[int, ...]
    rid: int
    journal_key: str
    verify: bool
    on_error: str
    resume: bool
    quantize: list[dict[str, Any]] | None
    journal: bool = True
    src_path: str = ""
    # --quantize: this region's report from the pre-pass (CastReport), or None to compute it
    # here (inline check, resumed runs)
    cast: Any = None
    # lossy codecs the destination applies besides --quantize (kept source filters)
    kept_filters: list[dict[str, Any]] | None = None


@dataclass
class RegionResult:
    rid: int
    skipped: bool = False
    decoded_bytes: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    objects: int = 0
    corrupt: list[str] = field(default_factory=list)
    cast: Any = None  # --quantize: CastReport of this region


def _journal_ok(task: RegionTask) -> RegionResult | None:
    """The journaled result of this region if its objects still have their checksums."""
    store = task.dst.store
    raw = store.get(task.journal_key)
    if raw is None:
        return None
    try:
        entry = json.loads(raw)
        keys = entry["keys"]
    except (ValueError, KeyError, TypeError):
        return None
    out = 0
    n = 0
    for key, crc in keys.items():
        data = store.get(key)
        if _crc(data) != crc:
            return None
        if data is not None:
            out += len(data)
            n += 1
    cast = entry.get("cast")
    return RegionResult(task.rid, skipped=True, decoded_bytes=int(entry.get("decoded_bytes", 0)),
                        bytes_in=int(entry.get("bytes_in", 0)), bytes_out=out, objects=n,
                        cast=_cast_report_from_json(cast) if isinstance(cast, dict) else None)


def _read_source(task: RegionTask, sel: tuple[slice, ...], corrupt: list[str]) -> np.ndarray:
    src = task.src
    try:
        return src[sel]
    except CorruptChunkError as e:
        if task.on_error != "skip":
            raise CorruptChunkError(f"source /{src.path}: corrupt chunk {e.key or ''}: {e} (use --on-error skip to "
                                    "replace corrupt chunks by the fill value)", key=e.key) from e
    # chunk by chunk: corrupt chunks become the fill value
    out = np.empty(tuple(s.stop - s.start for s in sel), dtype=src.dtype)
    cs = src._chunk_shape
    import itertools

    ranges = [range(s.start // c, -(-s.stop // c)) for s, c in zip(sel, cs)]
    for coords in itertools.product(*ranges):
        sub = tuple(slice(max(s.start, i * c), min(s.stop, (i + 1) * c)) for s, i, c in zip(sel, coords, cs))
        dst_sel = tuple(slice(x.start - s.start, x.stop - s.start) for x, s in zip(sub, sel))
        try:
            out[dst_sel] = src[sub]
        except CorruptChunkError:
            corrupt.append(src._key(tuple(coords)))
            out[dst_sel] = src._fill
    return out


def _expected_after_codecs(task: RegionTask, data: np.ndarray) -> np.ndarray:
    """What a read of quantized data gives back: encode then decode through the quantize chain
    (and the lossy source filters the destination kept)."""
    chain = [*(task.quantize or ()), *(task.kept_filters or ())]
    if not chain:
        return data
    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.pipeline import CodecPipeline

    m = task.dst.metadata
    spec = ArraySpec(tuple(data.shape), m.data_type.dtype, m.fill_value, m.data_type)
    pipe = CodecPipeline.from_codecs([*chain, {"name": "bytes", "configuration": {"endian": "little"}}], spec)
    enc = pipe.encode(np.ascontiguousarray(data))
    return pipe.decode(enc)


def run_region(task: RegionTask) -> RegionResult:
    """Convert one region (idempotent: rerunning it rewrites the same objects)."""
    if task.resume:
        done = _journal_ok(task)
        if done is not None:
            if task.verify:
                _verify_region(task)
            return done
    src, dst = task.src, task.dst
    if _DELAY:  # testing aid (crash/resume tests): slow each region down
        time.sleep(_DELAY)
    sel = _region_selection(task.shape, task.region_shape, task.rid)
    res = RegionResult(task.rid)
    res.decoded_bytes = math.prod(s.stop - s.start for s in sel) * src.dtype.itemsize
    for coords in _object_coords(sel, src._chunk_shape):
        res.bytes_in += _stored_size(src.store, src._key(coords))
    keys: dict[str, str | None] = {}
    if task.mode == "copy":
        for coords in _object_coords(sel, dst._chunk_shape):
            sk, dk = src._key(coords), dst._key(coords)
            data = src.store.get(sk)
            if data is None:
                if dst.store.get(dk) is not None:
                    dst.store.erase(dk)
            else:
                dst.store.set(dk, data)
            keys[dk] = _crc(data)
            if data is not None:
                res.bytes_out += len(data)
                res.objects += 1
        if task.verify:
            for coords in _object_coords(sel, dst._chunk_shape):
                if _crc(dst.store.get(dst._key(coords))) != _crc(src.store.get(src._key(coords))):
                    raise ConvertError(f"verify: /{dst.path} object {dst._key(coords)} differs from the source", 4)
    else:
        data = _read_source(task, sel, res.corrupt)
        if task.quantize:
            res.cast = task.cast if task.cast is not None else _region_cast_report(task.src_path or src.path, data, sel,
                                                                                 task.quantize)
        try:
            dst[sel] = data
        except CastError:
            if not task.quantize:
                raise
            raise _refusal(task.src_path or src.path, data, sel, task.quantize) from None
        for coords in _object_coords(sel, dst._chunk_shape):
            dk = dst._key(coords)
            stored = dst.store.get(dk)
            keys[dk] = _crc(stored)
            if stored is not None:
                res.bytes_out += len(stored)
                res.objects += 1
        if task.verify:
            back = dst[sel]
            want = _expected_after_codecs(task, data)
            if not _same(np.asarray(back), np.asarray(want)):
                raise ConvertError(f"verify: /{dst.path} region {task.rid} {sel} reads back different values", 4)
        del data
    if task.journal:
        entry = {"keys": keys, "decoded_bytes": res.decoded_bytes, "bytes_in": res.bytes_in}
        if res.cast is not None:
            entry["cast"] = res.cast.to_json()
        dst.store.set(task.journal_key, json.dumps(entry, sort_keys=True).encode())
    return res


def _verify_region(task: RegionTask) -> None:
    sel = _region_selection(task.shape, task.region_shape, task.rid)
    if task.mode == "copy":
        for coords in _object_coords(sel, task.dst._chunk_shape):
            if _crc(task.dst.store.get(task.dst._key(coords))) != _crc(task.src.store.get(task.src._key(coords))):
                raise ConvertError(f"verify: /{task.dst.path} object {task.dst._key(coords)} differs from the source", 4)
        return
    corrupt: list[str] = []
    data = _read_source(task, sel, corrupt)
    if not _same(np.asarray(task.dst[sel]), np.asarray(_expected_after_codecs(task, data))):
        raise ConvertError(f"verify: /{task.dst.path} region {task.rid} {sel} reads back different values", 4)


# --------------------------------------------------------------------------------------
# executors
# --------------------------------------------------------------------------------------
def _run_threads(tasks: Iterable[RegionTask], workers: int | None, on_result: Callable[[RegionResult], None]) -> None:
    _run_parallel(run_region, tasks, workers, on_result)


def _run_dask(tasks: list[RegionTask], address: str, on_result: Callable[[RegionResult], None]) -> None:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as e:  # pragma: no cover
        raise ConvertError(f"--dask needs the 'dask' extra (dask[array], distributed): {e}", 2) from None
    cluster = None
    if address.startswith("local"):
        n = int(address.partition(":")[2] or 2)
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=False, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        futures = client.map(run_region, tasks, pure=False)
        for fut in as_completed(futures):
            on_result(fut.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# --------------------------------------------------------------------------------------
# the driver
# --------------------------------------------------------------------------------------
def _open_stores(src: Any, dst: Any, o: ConvertOptions) -> tuple[Any, Any]:
    from zarrcy.storage import store_from_url
    from zarrcy.convert.hdf5 import HDF5SourceError, open_source

    try:  # HDF5 / NetCDF-4: one file, or several along --concat-dim (zarrcy/convert/hdf5.py)
        s = open_source(src, o.concat_dim, o.cf_packing) or store_from_url(src, mode="r")
    except HDF5SourceError as e:
        raise ConvertError(f"source: {e}", 2) from None
    if o.dry_run:
        try:
            d = store_from_url(dst, mode="r")
        except ZarrcyError:
            d = None
    else:
        d = store_from_url(dst, mode="a")
    return s, d


def _node_exists(store: Any, path: str) -> bool:
    from zarrcy.storage._common import get_metadata

    p = _prefix(path)
    return any(get_metadata(store, p + k) is not None for k in (META_KEY, ".zarray", ".zgroup"))


def _walk(node: Any) -> tuple[list[tuple[str, Any]], list[tuple[str, Array]]]:
    if isinstance(node, Array):
        return [], [("", node)]
    groups: list[tuple[str, Any]] = [("", node)]
    arrays: list[tuple[str, Array]] = []
    for rel, n in node.walk():
        (arrays if isinstance(n, Array) else groups).append((rel, n))
    return groups, arrays


def _fingerprint(o: ConvertOptions, plans: list[ArrayPlan], groups: list[str]) -> str:
    doc = {
        "plans": [[p.rel, p.mode, p.dst_doc, list(p.region_shape)] for p in plans],
        "groups": groups,
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def convert(src: Any, dst: Any, **kwargs: Any) -> ConvertReport:
    """Convert the Zarr v1/v2/v3 array or hierarchy at ``src`` into ``dst`` (see
    :class:`ConvertOptions` for the keyword options and the module docstring for the
    semantics).  Returns a :class:`ConvertReport`; raises :class:`ConvertError`."""
    o = kwargs.pop("options", None) or ConvertOptions()
    for k, v in kwargs.items():
        if not hasattr(o, k):
            raise TypeError(f"convert: unknown option {k!r}")
        setattr(o, k, v)
    if o.on_error not in ("stop", "skip"):
        raise ConvertError(expected("--on-error", "'stop' or 'skip'", o.on_error), 2)
    if o.on_unsupported not in ("stop", "skip"):
        raise ConvertError(expected("--on-unsupported", "'stop' or 'skip'", o.on_unsupported), 2)
    if o.cf_packing not in ("keep", "chain"):
        raise ConvertError(expected("--cf-packing", "'keep' or 'chain'", o.cf_packing), 2)
    if o.workers is not None:
        import operator

        try:
            ok = not isinstance(o.workers, bool) and operator.index(o.workers) >= 1
        except TypeError:
            ok = False
        if not ok:
            raise ConvertError(expected("--workers", "a positive integer", o.workers), 2)
        o.workers = operator.index(o.workers)
    from zarrcy.storage import Store

    new_dir = _new_local_dir(dst)
    src_store, dst_store = _open_stores(src, dst, o)
    try:
        return _convert(src_store, dst_store, o)
    except BaseException:
        # a run that failed leaves no empty destination behind (opening the store created it)
        if new_dir is not None:
            if dst_store is not None and not isinstance(dst, Store):
                dst_store.close()
            _remove_empty_dirs(new_dir)
        raise
    finally:  # stores opened here are closed here (a zip archive is finalised on close)
        for given, st in ((src, src_store), (dst, dst_store)):
            if st is not None and not isinstance(given, Store):
                st.close()


def _new_local_dir(dst: Any) -> str | None:
    """The local directory ``dst`` names if it does not exist yet (else None)."""
    import os

    if not isinstance(dst, (str, os.PathLike)):
        return None
    path = os.fspath(dst)
    if path.startswith("file://"):
        path = path[len("file://"):]
    elif "://" in path or path.endswith(".zip"):
        return None
    return None if os.path.exists(path) else os.path.abspath(path)


def _remove_empty_dirs(root: str) -> None:
    """Remove ``root`` if it holds nothing but empty directories (``rmdir`` only: a file
    anywhere below keeps it, so nothing written is ever deleted here)."""
    import os

    if not os.path.isdir(root):
        return
    for dirpath, _dirs, _files in os.walk(root, topdown=False):
        try:
            os.rmdir(dirpath)
        except OSError:
            return


def _convert(src_store: Any, dst_store: Any, o: ConvertOptions) -> ConvertReport:
    t0 = time.perf_counter()
    if o.quantize_check not in ("first", "inline"):
        raise ConvertError(expected("--quantize-check", "'first' or 'inline'", o.quantize_check), 2)
    report = ConvertReport(dry_run=o.dry_run)
    src_path = (o.path or "").strip("/")
    dst_root = (o.dst_path or "").strip("/")
    try:
        node = open_node(src_store, src_path)
    except ZarrcyError as e:
        raise ConvertError(f"source {src_store.url}: not a Zarr array or group at '/{src_path}' ({e})", 2) from e
    groups, arrays = _walk(node)
    src_formats = {rel: getattr(a.metadata, "zarr_format", 3) for rel, a in arrays}
    if o.include:
        arrays = [(r, a) for r, a in arrays if _matches(r, o.include)]
        keep = {""}
        for r, _ in arrays:
            parts = r.split("/")
            keep.update("/".join(parts[:i]) for i in range(len(parts)))
        groups = [(r, g) for r, g in groups if r in keep or _matches(r, o.include)]
    if o.exclude:
        arrays = [(r, a) for r, a in arrays if not _matches(r, o.exclude)]
        groups = [(r, g) for r, g in groups if r == "" or not _matches(r, o.exclude)]
    from zarrcy.convert.hdf5 import unsupported_datasets

    for upath, why in unsupported_datasets(src_store):  # HDF5 datasets without a v3 form
        rel = upath if not src_path else upath[len(src_path) + 1:] if upath.startswith(src_path + "/") else None
        if rel is None or (o.include and not _matches(rel, o.include)) or (o.exclude and _matches(rel, o.exclude)):
            continue
        if o.on_unsupported != "skip":
            raise ConvertError(f"source {src_store.url}: variable /{upath}: {why} "
                               "(use --on-unsupported skip to leave it out)", 2)
        report.skipped_arrays.append((rel, why))
    plans: list[ArrayPlan] = []
    for rel, arr in arrays:
        try:
            plans.append(_plan_array(arr, rel, _join(dst_root, rel), o, single=isinstance(node, Array)))
            plans[-1].src_format = src_formats[rel]
        except _Unsupported as e:
            if o.on_unsupported == "skip":
                report.skipped_arrays.append((rel, str(e)))
                continue
            raise ConvertError(f"source /{arr.path}: {e} (use --on-unsupported skip to leave it out, or --format 2)", 2) from None
        except MetadataError as e:
            raise ConvertError(f"source /{arr.path}: cannot build the destination metadata: {e}", 2) from e
    if not isinstance(node, Array):
        for name, raw in (("--chunks", o.chunks), ("--shards", o.shards)):
            shape = parse_shape(raw, name)
            if shape is not None and arrays and not any(len(a.shape) == len(shape) for _, a in arrays):
                ranks = sorted({len(a.shape) for _, a in arrays})
                report.warnings.append(f"{name} {','.join(map(str, shape))}: no array has rank {len(shape)} "
                                       f"(ranks here: {ranks}), so it applies to none; every array keeps its chunking")
    # validate the destination metadata (and build the pipelines) before writing anything
    for p in plans:
        try:
            _dst_metadata(p)
        except (MetadataError, ValueError) as e:
            raise ConvertError(f"destination /{p.dst_path}: invalid metadata: {e}", 2) from e
    report.arrays, report.groups, report.plans = len(plans), len(groups), plans
    report.regions = sum(p.n_regions for p in plans)
    dst_fmt = int(o.zarr_format)
    group_paths = [r for r, _ in groups]
    fp = _fingerprint(o, plans, group_paths)
    jroot = _prefix(dst_root) + JOURNAL_DIR + "/"

    # ---- source and destination in the same place (compared as file system paths for
    # local stores, so "x.zarr/sub" vs "x.zarr" as two stores is caught as well)
    if dst_store is not None:
        a, b = _location(src_store, src_path), _location(dst_store, dst_root)
        if a == b or a.startswith(b + "/") or b.startswith(a + "/"):
            if a == b and dst_fmt == 3 and all(p.mode == "copy" and p.src_format in (1, 2) for p in plans):
                for p in plans:
                    p.mode = "in-place"
                if o.dry_run:
                    report.seconds = time.perf_counter() - t0
                    return report
                return _in_place(plans, groups, arrays, dst_store, o, report, t0)
            raise ConvertError(
                f"destination {dst_store.url}/{dst_root} overlaps the source /{src_path}: use another destination "
                "(in place, only a metadata-only v2/v1 -> v3 migration of the same path is possible: it adds zarr.json "
                "documents next to the v2 ones and leaves every chunk as it is)", 2)

    if o.dry_run:
        _estimate(plans, src_store)
        report.seconds = time.perf_counter() - t0
        return report

    # ---- destination checks
    # the journal needs deletes (it is erased at the end): append-only stores (zip) go without
    journal = bool(getattr(dst_store, "supports_deletes", True))
    if o.resume and not journal:
        raise ConvertError(f"destination {dst_store.url}: --resume needs a store that supports deletes "
                           "(a zip archive is written in one go; convert into a directory to resume)", 2)
    plan_raw = dst_store.get(jroot + "plan.json")
    exists = _node_exists(dst_store, dst_root)
    if plan_raw is not None:
        if not o.resume and not o.overwrite:
            raise ConvertError(f"destination {dst_store.url}/{dst_root}: an interrupted conversion is there; "
                               "rerun with --resume to finish it (or --overwrite to start over)", 2)
        if o.resume and json.loads(plan_raw).get("fingerprint") != fp:
            raise ConvertError(f"destination {dst_store.url}/{dst_root}: --resume with different options or source "
                               "than the interrupted run (rerun with the same options, or --overwrite)", 2)
    elif exists:
        if o.resume and not o.overwrite:
            report.already_complete = True
            report.seconds = time.perf_counter() - t0
            return report
        if not o.overwrite:
            raise ConvertError(f"destination {dst_store.url}/{dst_root}: a node exists there (pass --overwrite)", 2)
    resuming = o.resume and plan_raw is not None
    if o.overwrite and not resuming and (exists or plan_raw is not None):
        dst_store.erase_prefix(_prefix(dst_root))
    if resuming:
        cleanup = getattr(dst_store, "remove_temp_files", None)
        if cleanup is not None:
            cleanup()
    # quantize: refuse to start if any value would fail (cast-check over the source)
    checked: dict[str, dict[int, Any]] = {}
    if not resuming and o.quantize_check == "first":
        checked = _check_quantize(plans, src_store, o)
    progress = Progress(sum(p.nbytes for p in plans), mode=o.progress, interval=o.progress_interval)
    lock = threading.Lock()

    def on_result(r: RegionResult) -> None:
        with lock:
            if r.skipped:
                report.regions_skipped += 1
            else:
                report.regions_done += 1
            report.decoded_bytes += r.decoded_bytes
            report.bytes_in += r.bytes_in
            report.bytes_out += r.bytes_out
            report.objects_written += r.objects
            report.corrupt_chunks.extend(r.corrupt)
        progress.update(r.decoded_bytes)

    from zarrcy.api import open_array

    try:
        if not resuming and journal:
            dst_store.set(jroot + "plan.json", json.dumps({"fingerprint": fp, "format": dst_fmt}).encode())
        # ---- nodes (rewritten on resume too: identical bytes, and a crash may have come first)
        for rel, g in groups:
            write_metadata(dst_store, _prefix(_join(dst_root, rel)), _group_metadata(dst_fmt, g.metadata.attributes))
        if dst_fmt == 3 and dst_root:
            _ensure_v3_parents(dst_store, dst_root)
        elif dst_fmt == 2 and dst_root:
            from zarrcy.v2.metadata import ensure_parents_v2

            ensure_parents_v2(dst_store, dst_root)
        for p in plans:
            write_metadata(dst_store, _prefix(p.dst_path), _dst_metadata(p))
        for p in plans:
            sa = open_array(src_store, path=p.src_path, mode="r")
            da = Array(dst_store, p.dst_path, _dst_metadata(p))
            jdir = jroot + "arrays/" + (p.rel or "_") + "/"
            if resuming:
                done_raw = dst_store.get(jdir + "__complete")
                if done_raw is not None:
                    report.regions_skipped += p.n_regions
                    report.decoded_bytes += p.nbytes
                    progress.update(p.nbytes)
                    try:
                        p.quantize_report = json.loads(done_raw).get("quantize_report")
                    except (ValueError, AttributeError):
                        p.quantize_report = None
                    continue
            pre = checked.get(p.rel, {})
            tasks = (RegionTask(sa, da, p.mode, p.shape, p.region_shape, rid, f"{jdir}__done/{rid}", o.verify,
                                o.on_error, resuming, p.quantize, journal, p.src_path, pre.get(rid), p.kept_filters)
                     for rid in range(p.n_regions))
            totals: list[Any] = []
            partial = [False]

            def on_array_result(r: RegionResult, totals: list[Any] = totals, partial: list[bool] = partial) -> None:
                on_result(r)
                if r.cast is None:
                    partial[0] = True
                elif not totals:
                    totals.append(r.cast)
                else:
                    merge_reports(totals[0], r.cast)

            if o.dask:
                _run_dask(list(tasks), o.dask, on_array_result)
            else:
                _run_threads(tasks, o.workers, on_array_result)
            if p.quantize:
                if totals:
                    p.quantize_report = totals[0].to_json()
                    if partial[0]:
                        p.quantize_report["partial"] = True
            if journal:
                dst_store.set(jdir + "__complete", json.dumps({"quantize_report": p.quantize_report}).encode())
    except KeyboardInterrupt:
        progress.close()
        raise ConvertError("interrupted: everything journaled so far is kept; rerun with --resume to finish", 130, report) from None
    except ConvertError as e:
        progress.close()
        if e.exit_code == 5:
            # an inline quantize check failed: remove what this run wrote (journal
            # included), so a refused conversion leaves no destination behind
            dst_store.erase_prefix(_prefix(dst_root))
            e.args = (str(e) + "\n(checked while converting: the partly written destination was removed)",)
        raise
    except (OSError, ZarrcyError) as e:
        progress.close()
        if is_enospc(e):
            raise ConvertError(f"destination {dst_store.url}: out of disk space ({e}); free some space and rerun "
                               "with --resume (completed regions are kept)", 3, report) from e
        if isinstance(e, CorruptChunkError):
            raise ConvertError(f"{e}; completed regions are kept (--resume continues)", 1, report) from e
        raise ConvertError(f"conversion stopped: {e}; completed regions are kept (--resume continues)", 1, report) from e
    progress.close()
    if journal:
        dst_store.erase_prefix(jroot)
    report.verified = bool(o.verify)
    report.seconds = time.perf_counter() - t0
    return report


def _location(store: Any, path: str) -> str:
    """Where a node lives: ``<real directory>/<path>`` for local stores, else ``<url>/<path>``."""
    import os

    root = getattr(store, "root", None)
    base = os.path.realpath(root) if isinstance(root, str) and store.url.startswith("file:") else store.url
    return (base.rstrip("/") + "/" + path).rstrip("/")


def _in_place(plans: list[ArrayPlan], groups: list[tuple[str, Any]], arrays: list[tuple[str, Array]], store: Any,
              o: ConvertOptions, report: ConvertReport, t0: float) -> ConvertReport:
    """Metadata-only migration in place: a ``zarr.json`` beside each v2/v1 node; the
    chunks (and the v2 documents, for v2 readers) stay as they are."""
    from zarrcy.document.group import GroupMetadata

    src_arrays = dict(arrays)
    for rel, g in groups:
        if getattr(g.metadata, "zarr_format", 3) == 2:
            store.set(_prefix(g.path) + META_KEY, GroupMetadata(attributes=dict(g.metadata.attributes)).to_bytes())
    progress = Progress(sum(p.nbytes for p in plans), mode=o.progress, interval=o.progress_interval)
    try:
        for p in plans:
            meta = _dst_metadata(p)
            dst = Array(store, p.dst_path, meta)
            src = src_arrays[p.rel]
            store.set(_prefix(p.dst_path) + META_KEY, meta.to_bytes())
            report.decoded_bytes += p.nbytes
            if o.verify:
                for rid in range(p.n_regions):
                    sel = _region_selection(p.shape, p.region_shape, rid)
                    if not _same(np.asarray(src[sel]), np.asarray(dst[sel])):
                        raise ConvertError(f"verify: /{p.dst_path} region {rid} {sel}: the v3 view differs from v2", 4)
                    progress.update(math.prod(x.stop - x.start for x in sel) * src.dtype.itemsize)
            else:
                progress.update(p.nbytes)
    finally:
        progress.close()
    report.verified = bool(o.verify)
    report.seconds = time.perf_counter() - t0
    return report


def _ensure_v3_parents(store: Any, path: str) -> None:
    from zarrcy.document.group import GroupMetadata

    parts = path.split("/")[:-1]
    for i in range(len(parts) + 1):
        p = "/".join(parts[:i])
        if not _node_exists(store, p):
            store.set(_prefix(p) + META_KEY, GroupMetadata().to_bytes())


def _refusal(src_path: str, values: np.ndarray, sel: tuple[slice, ...], quantize: list[dict[str, Any]],
             before_start: bool = False) -> "ConvertError":
    """The exit-5 ConvertError for a region whose values the quantize chain cannot encode,
    with the cast-check report (first failing index in array coordinates)."""
    from zarrcy.casting import check_cast

    rep = check_cast(values, quantize)
    if isinstance(rep.first_failing_index, tuple):
        rep.first_failing_index = tuple(int(i) + s.start for i, s in zip(rep.first_failing_index, sel))
    elif rep.first_failing_index is not None and len(sel) == 1:
        rep.first_failing_index = int(rep.first_failing_index) + sel[0].start
    return ConvertError(
        f"--quantize: refusing{' to start' if before_start else ''}: values of /{src_path} cannot be encoded "
        f"(region {sel}):\n" + rep.table(), 5, rep)


def _collision(src_path: str, sel: tuple[slice, ...], quantize: list[dict[str, Any]], rep: Any,
               before_start: bool = False) -> "ConvertError":
    """The exit-5 ConvertError for values that encode without error but would not read back
    as what they are: a non-NaN value encoding to the ``nan=V`` code (it would read back as
    NaN), or an infinity clamped to a finite code."""
    cv = quantize[-1].get("configuration", {})
    pairs = (cv.get("scalar_map") or {}).get("decode") or []
    codes = ", ".join(str(k) for k, _ in pairs)
    hint = (f" (nan={codes} collides with values that encode to {codes}: choose a nan= code outside the encoded "
            "range, e.g. the type's largest value with a scale that keeps the data below it)") if pairs else ""
    return ConvertError(
        f"--quantize: refusing{' to start' if before_start else ''}: {rep.round_trip_mismatches:,} value(s) of "
        f"/{src_path} in region {sel} would read back as a different kind of value (NaN or infinity gained or "
        f"lost){hint}:\n" + rep.table(), 5, rep)


def _region_cast_report(src_path: str, values: np.ndarray, sel: tuple[slice, ...], quantize: list[dict[str, Any]],
                        before_start: bool = False) -> Any:
    """The CastReport of one region under the quantize chain; raises the exit-5 refusal
    when a value fails or would not read back as what it is (collision with ``nan=V``)."""
    from zarrcy.casting import chain_report

    rep = chain_report(values, quantize)
    if rep.failing:
        raise _refusal(src_path, values, sel, quantize, before_start=before_start)
    if rep.round_trip_mismatches:
        raise _collision(src_path, sel, quantize, rep, before_start=before_start)
    return rep


def _check_quantize(plans: list[ArrayPlan], src_store: Any, o: ConvertOptions) -> dict[str, dict[int, Any]]:
    """Refuse to start when a value of a quantized array cannot be encoded, or would not
    read back as what it is (a value encoding to the ``nan=V`` code): every source region
    goes through the quantize chain first (:func:`zarrcy.casting.chain_report`, the
    kernels in a few passes).  Returns each region's report ({array rel: {region: report}})
    for the summary.  Regions are checked on ``workers`` threads."""
    from zarrcy.api import open_array

    out: dict[str, dict[int, Any]] = {}
    for p in plans:
        if not p.quantize:
            continue
        src = open_array(src_store, path=p.src_path, mode="r")
        reports = out[p.rel] = {}

        def check(rid: int, p: ArrayPlan = p, src: Array = src) -> RegionResult:
            sel = _region_selection(p.shape, p.region_shape, rid)
            rep = _region_cast_report(p.src_path, src[sel], sel, p.quantize or [], before_start=True)
            return RegionResult(rid, cast=rep)

        _run_parallel(check, range(p.n_regions), o.workers, lambda r, reports=reports: reports.__setitem__(r.rid, r.cast))
    return out


def _run_parallel(fn: Callable[[Any], RegionResult], items: Iterable[Any], workers: int | None,
                  on_result: Callable[[RegionResult], None]) -> None:
    """``fn`` over ``items`` on ``workers`` threads, at most 2 x workers in flight."""
    import os

    workers = max(1, int(workers if workers is not None else (os.cpu_count() or 1)))
    if workers == 1:
        for it in items:
            on_result(fn(it))
        return
    window = 2 * workers
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="zarrcy-convert") as ex:
        pending: set[Future] = set()
        try:
            for it in items:
                pending.add(ex.submit(fn, it))
                if len(pending) >= window:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for f in done:
                        on_result(f.result())
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    on_result(f.result())
        except BaseException:
            for f in pending:
                f.cancel()
            raise


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
        sel = _region_selection(p.shape, p.region_shape, 0)
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
        p.estimated_output_bytes = int(out / decoded * p.nbytes) if decoded else 0
