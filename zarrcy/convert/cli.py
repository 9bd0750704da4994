"""``zarrcy convert SRC DST [options]`` (README "zarrcy convert", "HDF5 / NetCDF-4 sources")."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from zarrcy.convert.engine import ConvertError, ConvertOptions, ConvertReport, convert
from zarrcy.errors import ZarrcyError

__all__ = ["convert_main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="zarrcy convert",
        description="Convert a Zarr v1/v2/v3 array or hierarchy, or HDF5 / NetCDF-4 files (one file, or several "
                    "joined along --concat-dim), into (sharded, optionally quantized) Zarr v3 or v2.  CF attributes "
                    "keep their meaning: fill values, missing values, packing, time units.",
        epilog="examples:\n"
               "  zarrcy convert old.zarr new.zarr                          # Zarr v2 -> v3\n"
               "  zarrcy convert data.nc out.zarr                           # one HDF5 / NetCDF-4 file\n"
               "  zarrcy convert 'era5_*.nc' out.zarr --concat-dim time     # several files along time\n"
               "  zarrcy convert data.nc q.zarr --quantize offset=-4,scale=8000,dtype=uint16,nan=65535,fill=65534",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("src", help="source: a Zarr store (path or URL), an HDF5 / NetCDF-4 file, or a quoted glob of "
                               "files with --concat-dim")
    p.add_argument("dst", help="destination store (path or URL)")
    p.add_argument("--path", default=None, help="node inside the source store (default: its root)")
    p.add_argument("--dst-path", default=None, help="node inside the destination store (default: its root)")
    p.add_argument("--chunks", default=None, help="destination (inner) chunk shape, e.g. 256,256")
    p.add_argument("--shards", default=None, help="destination shard shape, e.g. 2048,2048 (sharded output)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--codecs", default=None, help="inner codec chain as v3 JSON")
    g.add_argument("--compressor", default=None, help="none | gzip:L | zstd:L | blosc:CNAME:CLEVEL:SHUFFLE [+crc32c]")
    p.add_argument("--quantize", default=None,
                   help="scale=..,offset=..,dtype=uint16[,rounding=..][,out_of_range=..][,nan=CODE][,fill=CODE]"
                        "[,collisions=refuse|allow]: [scale_offset, cast_value] for the float arrays; nan=/fill= store "
                        "NaN and the source's numeric _FillValue/missing_value as their own codes (fill chosen "
                        "automatically when not given); data values encoding to one of those codes are refused "
                        "unless collisions=allow")
    p.add_argument("--quantize-check", choices=("first", "inline"), default="inline",
                   help="inline (default): check each region before writing it (one pass over the source); on the "
                        "first failure stop and remove the destination; first: check every value before writing "
                        "anything (reads the source twice)")
    p.add_argument("--format", dest="zarr_format", type=int, choices=(2, 3), default=3, help="destination Zarr format")
    p.add_argument("--workers", type=int, default=None, help="regions converted concurrently (threads; default: CPU count)")
    p.add_argument("--resume", action="store_true", help="finish an interrupted conversion (skips verified regions)")
    p.add_argument("--verify", action="store_true", help="read every region back and compare with the source")
    p.add_argument("--dry-run", action="store_true", help="show the plan, sizes and estimated output; write nothing")
    p.add_argument("--overwrite", action="store_true", help="replace an existing destination node")
    p.add_argument("--include", action="append", default=[], help="glob of node paths to convert (repeatable)")
    p.add_argument("--exclude", action="append", default=[], help="glob of node paths to leave out (repeatable)")
    p.add_argument("--on-error", choices=("stop", "skip"), default="stop",
                   help="corrupt source chunk: stop (default) or skip (write the fill value, list the key)")
    p.add_argument("--on-unsupported", choices=("stop", "skip"), default="stop",
                   help="array whose data type has no v3 equivalent: stop (default) or skip it")
    p.add_argument("--rewrite", action="store_true", help="re-encode even when the chunk bytes could be copied")
    p.add_argument("--dask", default=None, metavar="ADDRESS", help="run on a dask.distributed cluster: tcp://host:port or local:N")
    p.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    p.add_argument("--progress", choices=("auto", "bar", "lines", "off"), default="auto",
                   help="progress display on stderr (auto: a bar on a terminal, periodic lines otherwise)")
    p.add_argument("--progress-interval", type=float, default=5.0, help="seconds between progress lines (> 0)")
    p.add_argument("--concat-dim", default=None, metavar="DIM",
                   help="HDF5/NetCDF-4 sources: join several files (a glob, quoted) along this dimension")
    p.add_argument("--time-units", default=None, metavar="UNITS",
                   help="HDF5/NetCDF-4 with --concat-dim: re-encode CF time variables onto these units, e.g. "
                        "'hours since 2020-01-01' (default: the first file's units); refused when a value is not an "
                        "integer in them")
    p.add_argument("--cf-packing", choices=("keep", "chain"), default="keep",
                   help="HDF5/NetCDF-4 CF scale_factor/add_offset integers: keep (attributes) or chain "
                        "(scale_offset+cast_value codecs; refused unless it decodes exactly as CF does)")
    p.add_argument("--allow-external", action="store_true",
                   help="HDF5/NetCDF-4 sources: read external raw data files, virtual-dataset sources and external "
                        "links inside the source file's directory (refused by default)")
    p.add_argument("--region-mb", type=float, default=64, help="target decoded size of an unsharded region (MiB, > 0)")
    return p


def _region_bytes(mb: float) -> int:
    """``--region-mb`` in bytes; a non-positive value stays non-positive (the options
    check refuses it, naming ``--region-mb``)."""
    return max(1, int(mb * (1 << 20))) if mb > 0 else (int(mb) if mb == int(mb) else -1)


def convert_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``zarrcy convert``; returns the exit status.

    0 done; 1 stopped on a data error (corrupt chunk...); 2 usage/metadata error or
    destination exists; 3 out of disk space; 4 verification failed; 5 --quantize
    refused (cast-check report printed); 130 interrupted.  Stopped runs keep what they
    wrote: ``--resume`` finishes them.
    """
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    opts = ConvertOptions(
        path=args.path, dst_path=args.dst_path, chunks=args.chunks, shards=args.shards, codecs=args.codecs,
        compressor=args.compressor, quantize=args.quantize, quantize_check=args.quantize_check, zarr_format=args.zarr_format, workers=args.workers,
        resume=args.resume, verify=args.verify, dry_run=args.dry_run, overwrite=args.overwrite,
        include=args.include, exclude=args.exclude, on_error=args.on_error, on_unsupported=args.on_unsupported,
        rewrite=args.rewrite, dask=args.dask, progress="off" if args.json and args.progress == "auto" else args.progress,
        progress_interval=args.progress_interval, region_bytes=_region_bytes(args.region_mb),
        concat_dim=args.concat_dim, cf_packing=args.cf_packing, time_units=args.time_units,
        allow_external=args.allow_external,
    )
    try:
        report = convert(args.src, args.dst, options=opts)
    except ConvertError as e:
        if args.json:
            extra = e.report.to_json() if isinstance(e.report, ConvertReport) else None
            print(json.dumps({"ok": False, "error": str(e), "exit_code": e.exit_code, "report": extra}, default=str))
        else:
            print(f"zarrcy convert: error: {e}", file=sys.stderr)
        return e.exit_code
    except ZarrcyError as e:
        if args.json:
            print(json.dumps({"ok": False, "error": str(e), "exit_code": 2}))
        else:
            print(f"zarrcy convert: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"ok": True, **report.to_json()}, default=str))
    elif report.already_complete:
        print("nothing to do: the destination exists and no interrupted conversion is journaled there")
    else:
        print(report.summary())
    return 0
