"""The records the conversion stages pass around: options, per-array plans, region
results, the report, and :class:`ConvertError` (see :mod:`zarrcy.convert.engine`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Sequence

from zarrcy.errors import ZarrcyError
from zarrcy.convert.progress import human_bytes

__all__ = ["ArrayPlan", "ConvertError", "ConvertOptions", "ConvertReport", "RegionResult"]


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
    workers: int | None = None        # the call's threads (regions in flight); None: config threads
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
    # --quantize: "inline" (default) checks each region as it is converted, before writing
    # it, and on the first value that cannot be encoded stops, removes the destination and
    # reports (one pass over the source); "first" checks every value before writing
    # anything (one extra read of the source)
    quantize_check: str = "inline"
    # HDF5 / NetCDF-4 sources (zarrcy/convert/hdf5.py): several files joined along this
    # dimension; CF scale_factor/add_offset "keep" (as attributes) or "chain" (codecs)
    concat_dim: str | None = None
    cf_packing: str = "keep"
    # CF time variables along concat_dim re-encoded onto these units (None: the first file's)
    time_units: str | None = None
    # HDF5 sources: read external raw data, virtual-dataset sources and external links
    # inside the source file's directory (zarrcy/storage/hdf5_refs.py); refused otherwise
    allow_external: bool = False


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
    # a rectilinear destination grid: per axis, the array indices where regions start
    # (and the axis length); region_shape is then the largest region.  None: regular
    # regions of region_shape
    region_bounds: tuple[tuple[int, ...], ...] | None = None
    # --quantize with sentinels (zarrcy/convert/cf.py): the chain each region is checked
    # with (numeric sentinel codes decode to NaN there, so collisions show), the
    # sentinels ({what, value, code, chosen}) and whether collisions are accepted
    check_quantize: list[dict[str, Any]] | None = None
    sentinels: list[dict[str, Any]] = field(default_factory=list)
    allow_collisions: bool = False
    # the ids of the regions to convert when not all of them (HDF5 sources: the regions
    # holding stored chunks, zarrcy/convert/hdf5.py ``stored_regions``); n_regions counts
    # them, fill_bytes is the decoded size of the others (all fill value, nothing written)
    regions: Any = None
    fill_bytes: int = 0

    def region_ids(self) -> Any:
        """The ids of the regions to convert (C order in the region grid)."""
        return range(self.n_regions) if self.regions is None else (int(r) for r in self.regions)

    def to_json(self) -> dict[str, Any]:
        regions, self.regions = self.regions, None  # (not copied by asdict: one id per region)
        try:
            d = dataclasses.asdict(self)
        finally:
            self.regions = regions
        d.pop("dst_doc")
        d.pop("regions")
        d.pop("region_bounds")  # one entry per chunk along each axis: not for the summary
        d.pop("check_quantize")
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
                    f"{' in shards ' + str(p.dst_shards) if p.dst_shards else ''}"
                    f"{' (rectilinear grid kept: the largest shown)' if p.region_bounds is not None else ''}, "
                    f"{p.n_regions} region(s) of "
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
                + "".join(f"; {x['what']}{'' if x['what'] == 'NaN' else ' ' + _num(x['value'])} -> code {x['code']}"
                          f"{' (chosen)' if x.get('chosen') else ''}: {x.get('count', 0):,} values"
                          for x in q.get("sentinels") or [])
                + (f"; {q['sentinel_collisions']:,} data values encode to a sentinel code (collisions=allow)"
                   if q.get("sentinel_collisions") else "")
                + (" (regions completed by an earlier run not counted)" if q.get("partial") else ""))
            from zarrcy.casting.report import causes_summary

            lines.append(f"    {causes_summary(q)}")
        lines.extend(self._notes())
        return "\n".join(lines)

    def _notes(self) -> list[str]:
        """One line per distinct note, naming every array it concerns."""
        by_text: dict[str, list[str]] = {}
        for p in self.plans:
            for n in dict.fromkeys(p.notes):
                by_text.setdefault(n, []).append(f"/{p.rel}")
        out = []
        for text, paths in by_text.items():
            shown = ", ".join(paths[:6]) + (f" and {len(paths) - 6} more" if len(paths) > 6 else "")
            out.append(f"  note {shown}: {text}")
        out += [f"  warning: {w}" for w in self.warnings]
        return out


def _num(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _prefix(path: str) -> str:
    return path + "/" if path else ""


def _join(a: str, b: str) -> str:
    return f"{a}/{b}" if a and b else (a or b)


@dataclass
class RegionResult:
    rid: int
    skipped: bool = False
    decoded_bytes: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    objects: int = 0
    corrupt: list[str] = field(default_factory=list)
    cast: Any = None  # --quantize: CastReport of this region (a RegionCast from the pre-pass)
    collisions: int = 0  # --quantize: data values that encode to a sentinel code (collisions=allow)
    sentinel_counts: dict[str, int] | None = None  # --quantize: values per sentinel ("NaN=65535": n)

