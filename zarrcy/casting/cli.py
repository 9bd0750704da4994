"""``zarrcy cast-check``: what a scale_offset / cast_value chain does to an array.

Exit status: 0 when every element encodes and reads back as the same kind of value; 1 when
a value fails, collides with a ``scalar_map`` sentinel or reads back as another kind (NaN /
Infinity gained or lost); 2 for bad input (options, codecs JSON, the input file).  With
``--json`` every outcome, errors included, is one JSON object on stdout (README
"cast-check --json").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, NoReturn, Sequence

import numpy as np

from zarrcy.casting.engine import check_cast
from zarrcy.casting.report import CastReport, parse_codecs
from zarrcy.codecs.cast_value import OUT_OF_RANGE_MODES, ROUNDING_MODES, SUPPORTED_TYPES, CastValueCodec
from zarrcy.codecs.scale_offset import ScaleOffsetCodec
from zarrcy.errors import MetadataError, ZarrcyError, expected

__all__ = ["cast_check_main"]

# the option each key of a codec built from options comes from (error messages name it)
_OPTION_OF = {
    "scale_offset.configuration.offset": "--offset", "scale_offset.configuration.scale": "--scale",
    "scale_offset.configuration": "--scale/--offset", "cast_value.configuration.data_type": "--dtype",
    "cast_value.configuration.rounding": "--rounding", "cast_value.configuration.out_of_range": "--out-of-range",
    "cast_value.configuration.scalar_map": "--scalar-map", "cast_value.configuration": "--dtype",
    # checked against the input's data type
    "cast_value.scalar_map": "--scalar-map", "cast_value.data_type": "--dtype", "cast_value.source": "input",
    "cast_value.rounding": "--rounding", "cast_value.out_of_range": "--out-of-range",
    "scale_offset (array data type)": "input",
}


class _InputError(Exception):
    """A bad option or input (exit 2): ``option`` names what was wrong."""

    def __init__(self, message: str, option: str | None = None, kind: str = "UsageError") -> None:
        super().__init__(message)
        self.option, self.kind = option, kind


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _InputError(f"{self.prog}: {message}", None)


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="zarrcy cast-check",
        description="Report what a scale_offset/cast_value chain does to an array: outcome counts, counts by "
                    "cause (NaN, +/-Infinity, above/below range, rounded, clamped, wrapped, scalar-mapped, "
                    "sentinel collisions, read back as another kind, failing) with min/max and first index of "
                    "each, the representable range of the chain and the largest round-trip errors.",
        epilog="exit status: 0 every value encodes and reads back as its kind; 1 a value fails, collides with a "
               "scalar_map sentinel or reads back as another kind (NaN/Infinity gained or lost); 2 bad input "
               "(printed as a JSON error object with --json).")
    ap.add_argument("input", help=".npy file or Zarr array path")
    ap.add_argument("--codecs", help="JSON list of codecs: scale_offset, cast_value, numcodecs.fixedscaleoffset "
                                     "(bytes, transpose, gzip, zstd, blosc, crc32c, sharding_indexed are skipped)")
    ap.add_argument("--dtype", metavar="TYPE",
                    help="cast_value data_type (the target), one of: " + ", ".join(SUPPORTED_TYPES))
    ap.add_argument("--scale", help="scale_offset scale (JSON number or fill-value string, e.g. 0.1 or \"0x3dcccccd\")")
    ap.add_argument("--offset", help="scale_offset offset (JSON number or fill-value string)")
    ap.add_argument("--rounding", default="nearest-even", metavar="MODE",
                    help="cast_value rounding, one of: " + ", ".join(ROUNDING_MODES) + " (default nearest-even)")
    ap.add_argument("--out-of-range", dest="out_of_range", metavar="MODE",
                    help="cast_value out_of_range, one of: " + ", ".join(OUT_OF_RANGE_MODES)
                         + " (default: absent, an out-of-range value fails; wrap: integer targets only)")
    ap.add_argument("--scalar-map", dest="scalar_map",
                    help='cast_value scalar_map JSON, e.g. {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}')
    ap.add_argument("--max-indices", dest="max_indices", default="10", metavar="N",
                    help="with --json: the first N indices of each cause (default 10, 0: none)")
    ap.add_argument("--json", action="store_true", help="print the report (or the error) as one JSON object")
    return ap


def _load_values(path: str) -> np.ndarray:
    """The values of a ``.npy`` file or of the Zarr array at ``path``; every failure is an
    ``_InputError`` with a one-line message (the CLI prints it, no traceback)."""
    if path.endswith(".npy") or os.path.isfile(path):
        try:
            return np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise _InputError(f"{path}: no such file", "input", "InputError") from None
        except IsADirectoryError:
            raise _InputError(f"{path}: is a directory, expected a .npy file", "input", "InputError") from None
        except (OSError, ValueError, EOFError) as e:
            why = f" ({e})" if path.endswith(".npy") else ""
            raise _InputError(f"{path}: expected a .npy file or a Zarr array, received a file that is not .npy{why}",
                              "input", "InputError") from None
    if not os.path.exists(path) and "://" not in path:
        raise _InputError(f"{path}: no such file or directory", "input", "InputError")
    # the API layer, loaded only for a Zarr input (this module sits above it, beside the CLI)
    from zarrcy.api import open as api_open
    from zarrcy.nodes.array import Array

    try:
        node = api_open(path, mode="r")
    except (ZarrcyError, OSError) as e:
        raise _InputError(f"{path}: expected a .npy file or a Zarr array, received no array there ({e})",
                          "input", "InputError") from None
    if not isinstance(node, Array):
        raise _InputError(f"{path}: expected a Zarr array, received a group (give the array's path, e.g. {path}/NAME)",
                          "input", "InputError")
    return np.asarray(node[...])


def _json_option(option: str, raw: str, what: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise _InputError(expected(option, what, raw), option, "MetadataError") from None


def _option_error(e: MetadataError) -> _InputError:
    """A MetadataError about a codec built from options, naming the option."""
    msg, path = str(e), e.path or ""
    for prefix in sorted(_OPTION_OF, key=len, reverse=True):
        if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
            opt = _OPTION_OF[prefix] + path[len(prefix):]
            return _InputError(msg.replace(path, opt, 1) if path and path in msg else f"{opt}: {msg}", opt,
                               type(e).__name__)
    return _InputError(msg, path or None, type(e).__name__)


def _codecs(args: argparse.Namespace) -> tuple[Any, bool]:
    """(codecs, built from options)."""
    if args.codecs is not None:
        for opt in ("dtype", "scale", "offset", "out_of_range", "scalar_map"):
            if getattr(args, opt) is not None:
                flag = "--" + opt.replace("_", "-")
                raise _InputError(f"{flag}: expected either --codecs or --dtype/--scale/--offset/--rounding/"
                                  f"--out-of-range/--scalar-map, received both", flag)
        return _json_option("--codecs", args.codecs, "a JSON list of codec objects"), False
    if args.rounding not in ROUNDING_MODES:
        raise _InputError(expected("--rounding", f"one of {', '.join(ROUNDING_MODES)}", args.rounding), "--rounding",
                          "MetadataError")
    if args.out_of_range is not None and args.out_of_range not in OUT_OF_RANGE_MODES:
        raise _InputError(expected("--out-of-range", f"one of {', '.join(OUT_OF_RANGE_MODES)}", args.out_of_range),
                          "--out-of-range", "MetadataError")
    codecs: list[Any] = []
    if args.scale is not None or args.offset is not None:
        conf: dict[str, Any] = {}
        if args.offset is not None:
            conf["offset"] = _json_option("--offset", args.offset, "a JSON number or fill-value string")
        if args.scale is not None:
            conf["scale"] = _json_option("--scale", args.scale, "a JSON number or fill-value string")
        codecs.append({"name": "scale_offset", "configuration": conf})
    if args.dtype is not None:
        cv: dict[str, Any] = {"data_type": args.dtype, "rounding": args.rounding}
        if args.out_of_range:
            cv["out_of_range"] = args.out_of_range
        if args.scalar_map is not None:
            cv["scalar_map"] = _json_option("--scalar-map", args.scalar_map, 'a JSON object {"encode": [...], "decode": [...]}')
        codecs.append({"name": "cast_value", "configuration": cv})
    elif args.out_of_range is not None or args.scalar_map is not None:
        raise _InputError("--dtype: expected the cast_value target with --out-of-range/--scalar-map, received none",
                          "--dtype")
    if not codecs:
        raise _InputError("--codecs: expected --codecs or --dtype/--scale/--offset, received none of them", "--codecs")
    return codecs, True


def _run(args: argparse.Namespace, load: Any) -> CastReport:
    codecs, from_options = _codecs(args)
    try:
        max_indices = int(args.max_indices)
    except ValueError:
        raise _InputError(expected("--max-indices", "a non-negative integer", args.max_indices), "--max-indices") from None
    if max_indices < 0:
        raise _InputError(expected("--max-indices", "a non-negative integer", args.max_indices), "--max-indices")
    try:
        # errors name the options the codecs came from, or the JSON path in --codecs
        chain = ([(ScaleOffsetCodec if c["name"] == "scale_offset" else CastValueCodec).from_dict(
            c["configuration"], c["name"]) for c in codecs] if from_options else parse_codecs(codecs, "--codecs"))
    except MetadataError as e:
        raise (_option_error(e) if from_options else _InputError(str(e), e.path, type(e).__name__)) from None
    values = (load or _load_values)(args.input)
    try:
        # the chain against the input's data type first, each codec under its own path
        dt = np.asarray(values).dtype
        paths = ([c.name for c in chain] if from_options else
                 [f"--codecs[{i}]" if len(chain) == len(codecs) else "--codecs" for i in range(len(chain))])
        for codec, path in zip(chain, paths):
            if isinstance(codec, ScaleOffsetCodec):
                codec.parsed(dt, path)
            else:
                dt = codec.prepared(dt, path)[0].dst.dtype
        return check_cast(values, chain, masks=False, max_indices=max_indices if args.json else 0)
    except MetadataError as e:  # a chain that does not fit the input's data type
        raise (_option_error(e) if from_options else _InputError(str(e), e.path, type(e).__name__)) from None


def cast_check_main(argv: Sequence[str] | None = None, load: Any = None) -> int:
    """``zarrcy cast-check INPUT (--codecs JSON | --dtype T [--scale S --offset O --rounding R
    --out-of-range M --scalar-map JSON]) [--json] [--max-indices N]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    try:
        args = _parser().parse_args(argv)
        rep = _run(args, load)
    except _InputError as e:
        _print_error(str(e), e.option, e.kind, as_json)
        return 2
    except (ZarrcyError, OSError, ValueError) as e:  # unreadable input, a codec's own check
        _print_error(str(e), getattr(e, "path", None), type(e).__name__, as_json)
        return 2
    if args.json:
        print(json.dumps({"ok": _clean(rep), **rep.to_json()}, indent=2))
    else:
        print(rep.table())
    return 0 if _clean(rep) else 1


def _clean(rep: CastReport) -> bool:
    return rep.ok and not rep.round_trip_mismatches and not rep.causes["sentinel_collision"].count


def _print_error(message: str, option: str | None, kind: str, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"ok": False, "exit_code": 2,
                          "error": {"type": kind, "option": option, "message": message}}, indent=2))
    else:
        print(f"zarrcy cast-check: error: {message}", file=sys.stderr)
