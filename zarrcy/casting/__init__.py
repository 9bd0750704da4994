"""Casting validator: what a ``scale_offset`` / ``cast_value`` chain does to given data.

Public functions (re-exported as ``zarrcy.cast_value`` etc.):

* :func:`cast_value` -- one direction of the cast_value codec (spec:
  ../shared/specs/ext-codec-cast_value.md); decoding a codec is the same call with the
  types swapped and the ``decode`` pairs.
* :func:`scale_offset_encode` / :func:`scale_offset_decode` (ext-codec-scale_offset.md).
* :func:`check_cast` -- a one-pass report over an array: how many elements are exact,
  rounded, clamped, wrapped, scalar-mapped or failing, the first failing index and the
  largest absolute / relative round-trip error.
* :func:`cast_check_main` -- the ``zarrcy cast-check`` command line.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from zarrcy._kernels._cast_scale_offset import quantize_report_into
from zarrcy.codecs.cast_value import (
    ST_CLAMPED,
    ST_EXACT,
    ST_FAIL_NONFINITE,
    ST_MAPPED,
    ST_ROUNDED,
    ST_WRAPPED,
    CastValueCodec,
    OutOfRange,
    Rounding,
    format_of_dtype,
    prepare_cast,
)
from zarrcy.codecs.scale_offset import (
    ScaleOffsetCodec,
    expand_fixedscaleoffset,
    parse_offset_scale,
    scale_offset_decode_array,
    scale_offset_encode_array,
)
from zarrcy.errors import CastError, MetadataError, ZarrcyError, expected

__all__ = ["cast_value", "scale_offset_encode", "scale_offset_decode", "check_cast", "chain_report", "quantize_with_report", "merge_reports",
           "CastReport", "cast_check_main"]


def cast_value(values: Any, data_type: Any, rounding: Rounding = "nearest-even", out_of_range: OutOfRange | None = None,
               scalar_map: Any = None) -> np.ndarray:
    """Cast ``values`` (any supported dtype) to ``data_type`` with the cast_value procedure.

    ``scalar_map``: ``[[input, output], ...]`` in fill-value JSON encoding or plain numbers
    (``"NaN"``, ``"Infinity"``, ``"0x7fc00000"``, ``255``...).  Raises
    :class:`~zarrcy.errors.CastError` (NaN/Inf into a type without them) or
    :class:`~zarrcy.errors.OutOfRangeError` naming the first failing element, and
    :class:`~zarrcy.errors.MetadataError` for a bad mode or scalar_map entry.
    """
    values = np.asarray(values)
    return prepare_cast(values.dtype, data_type, rounding, out_of_range, scalar_map).run(values)


def scale_offset_encode(values: Any, offset: Any = None, scale: Any = None) -> np.ndarray:
    """``(values - offset) * scale`` in the values' own type; non-representable results raise."""
    return scale_offset_encode_array(np.asarray(values), offset, scale)


def scale_offset_decode(values: Any, offset: Any = None, scale: Any = None) -> np.ndarray:
    """``values / scale + offset`` in the values' own type; non-representable results raise."""
    return scale_offset_decode_array(np.asarray(values), offset, scale)


# ---------------------------------------------------------------------------------------
# check_cast
# ---------------------------------------------------------------------------------------

@dataclass
class CastReport:
    """What a codec chain does to an array (see :func:`check_cast`)."""

    count: int = 0
    exact: int = 0
    rounded: int = 0
    clamped: int = 0
    wrapped: int = 0
    scalar_mapped: int = 0
    failing: int = 0
    first_failing_index: int | tuple[int, ...] | None = None
    first_failing_value: Any = None
    first_failing_reason: str | None = None
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    round_trip_mismatches: int = 0   # NaN-ness / infinity changed, or decode failed
    encoded_dtype: str = ""
    stages: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failing == 0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        if isinstance(self.first_failing_index, tuple):
            d["first_failing_index"] = list(self.first_failing_index)
        for k in ("max_abs_error", "max_rel_error"):
            if not math.isfinite(d[k]):
                d[k] = str(d[k])
        v = d["first_failing_value"]
        if isinstance(v, float) and not math.isfinite(v):
            d["first_failing_value"] = str(v)
        return d

    def table(self) -> str:
        rows = [
            ("elements", self.count), ("exact", self.exact), ("rounded", self.rounded), ("clamped", self.clamped),
            ("wrapped", self.wrapped), ("scalar-mapped", self.scalar_mapped), ("failing", self.failing),
            ("first failing index", self.first_failing_index), ("first failing value", self.first_failing_value),
            ("first failing reason", self.first_failing_reason), ("max abs round-trip error", self.max_abs_error),
            ("max rel round-trip error", self.max_rel_error), ("round-trip mismatches", self.round_trip_mismatches),
            ("encoded data type", self.encoded_dtype), ("codecs", " -> ".join(self.stages)),
        ]
        w = max(len(r[0]) for r in rows)
        return "\n".join(f"{k.ljust(w)}  {v}" for k, v in rows)


def parse_codecs(codecs: Any, path: str = "codecs") -> list[Any]:
    """JSON text / list of dicts / codec objects -> [ScaleOffsetCodec | CastValueCodec, ...]."""
    if isinstance(codecs, (str, bytes)):
        try:
            codecs = json.loads(codecs)
        except ValueError as e:
            raise MetadataError(f"{path}: expected JSON, received invalid JSON ({e})", path) from None
    if isinstance(codecs, dict):
        codecs = [codecs]
    out: list[Any] = []
    for i, c in enumerate(codecs):
        p = f"{path}[{i}]"
        if isinstance(c, (ScaleOffsetCodec, CastValueCodec)):
            out.append(c)
            continue
        if isinstance(c, str):
            c = {"name": c}
        if not isinstance(c, dict) or "name" not in c:
            raise MetadataError(expected(p, "a codec object", c), p)
        name = c["name"]
        conf = c.get("configuration")
        if name == "scale_offset":
            out.append(ScaleOffsetCodec.from_dict(conf, p))
        elif name == "cast_value":
            out.append(CastValueCodec.from_dict(conf, p))
        elif name == "numcodecs.fixedscaleoffset":
            out.extend(expand_fixedscaleoffset(conf, p))
        elif name in ("bytes", "transpose", "gzip", "zstd", "blosc", "crc32c", "sharding_indexed"):
            continue  # value-preserving for this purpose
        else:
            raise MetadataError(expected(f"{p}.name", "scale_offset, cast_value or numcodecs.fixedscaleoffset", name),
                                f"{p}.name")
    return out


def _so_classify(x: np.ndarray, codec: ScaleOffsetCodec, direction: str) -> tuple[np.ndarray, np.ndarray]:
    """(result, failed mask) of a scale_offset stage, element-wise (exact, no early stop)."""
    fmt = format_of_dtype(x.dtype)
    o, s = parse_offset_scale(codec.offset, codec.scale, fmt, "scale_offset.configuration")
    flat = np.ascontiguousarray(x).reshape(-1)
    if fmt.is_int:
        xi = flat.astype(object)
        oi, si = int(o.item()), int(s.item())
        if direction == "encode":
            t1 = xi - oi
            t2 = t1 * si
            steps = [t1, t2]
            bad = np.zeros(flat.shape, bool)
        else:
            bad = np.array([v % si != 0 for v in xi.tolist()], dtype=bool)
            t1 = np.array([v // si if v % si == 0 else 0 for v in xi.tolist()], dtype=object)
            t2 = t1 + oi
            steps = [t1, t2]
        for t in steps:
            bad |= np.array([not (fmt.lo <= int(v) <= fmt.hi) for v in t.tolist()], dtype=bool)
        res = np.array([int(v) if not b else 0 for v, b in zip(t2.tolist(), bad.tolist())], dtype=object)
        return res.astype(np.int64 if fmt.kind == 0 else np.uint64).astype(fmt.dtype).reshape(x.shape), bad.reshape(x.shape)
    # floats: run element-wise through the kernel, splitting at failures
    out = np.zeros(flat.shape, dtype=fmt.dtype)
    bad = np.zeros(flat.shape, dtype=bool)
    start = 0
    fn = scale_offset_encode_array if direction == "encode" else scale_offset_decode_array
    while start < flat.size:
        try:
            out[start:] = fn(flat[start:], codec.offset, codec.scale)
            break
        except CastError as e:
            idx = start + int(e.index if isinstance(e.index, int) else 0)
            out[start:idx] = fn(flat[start:idx], codec.offset, codec.scale) if idx > start else out[start:idx]
            bad[idx] = True
            start = idx + 1
    return out.reshape(x.shape), bad.reshape(x.shape)


def check_cast(values: Any, codecs: Any) -> CastReport:
    """Run ``codecs`` (scale_offset / cast_value chain; JSON or objects) over ``values`` and report.

    Counts are per element, the element's most significant event over all stages:
    failing > scalar-mapped > clamped > wrapped > rounded > exact (``rounded`` counts
    cast_value roundings; scale_offset float arithmetic is not counted).  Round-trip
    errors compare ``decode(encode(x))`` with ``x`` over elements that did not fail.
    """
    x = np.asarray(values)
    chain = parse_codecs(codecs)
    rep = CastReport(count=int(x.size), stages=[c.to_dict()["name"] for c in chain])
    n = x.size
    worst = np.zeros(n, dtype=np.uint8)  # 0 exact 1 rounded 2 wrapped 3 clamped 4 mapped 5 failing
    rank = {ST_EXACT: 0, ST_ROUNDED: 1, ST_WRAPPED: 2, ST_CLAMPED: 3, ST_MAPPED: 4}
    failed = np.zeros(n, dtype=bool)
    reasons: dict[int, str] = {}
    cur = np.ascontiguousarray(x).reshape(-1)
    dtypes = [cur.dtype]
    for ci, codec in enumerate(chain):
        if isinstance(codec, ScaleOffsetCodec):
            res, bad = _so_classify(cur, codec, "encode")
            new_fail = bad & ~failed
            for i in np.flatnonzero(new_fail)[:1]:
                reasons[int(i)] = f"codecs[{ci}] scale_offset: result not representable in {cur.dtype.name}"
            failed |= bad
            cur = res
        else:
            prep = codec.prepared(cur.dtype)[0]
            res, st = prep.classify(cur)
            bad = st >= ST_FAIL_NONFINITE
            for i in np.flatnonzero(bad & ~failed)[:1]:
                why = "NaN/Infinity has no representation" if st[i] == ST_FAIL_NONFINITE else "out of range"
                reasons[int(i)] = f"codecs[{ci}] cast_value to {prep.dst.name}: {why}"
            failed |= bad
            lut = np.array([rank.get(k, 0) for k in range(7)], dtype=np.uint8)
            worst = np.maximum(worst, lut[st])
            cur = res
        dtypes.append(cur.dtype)
    rep.encoded_dtype = cur.dtype.name
    worst[failed] = 5
    counts = np.bincount(worst, minlength=6)
    rep.exact, rep.rounded, rep.wrapped, rep.clamped, rep.scalar_mapped, rep.failing = (int(c) for c in counts[:6])
    if rep.failing:
        first = int(np.flatnonzero(failed)[0])
        rep.first_failing_index = first if x.ndim <= 1 else tuple(int(i) for i in np.unravel_index(first, x.shape))
        with np.errstate(invalid="ignore"):
            v = x.reshape(-1)[first]
            rep.first_failing_value = v.item() if format_of_dtype(x.dtype).natural else float(np.float64(v))
        rep.first_failing_reason = min(reasons.items())[1] if reasons else None
    # decode back, stage by stage, tolerating failures element-wise
    dec = cur
    dec_bad = failed.copy()
    for ci in range(len(chain) - 1, -1, -1):
        codec = chain[ci]
        target = dtypes[ci]
        if isinstance(codec, ScaleOffsetCodec):
            res, bad = _so_classify(dec, codec, "decode")
        else:
            prep = codec.prepared(target)[1]
            res, st = prep.classify(dec)
            bad = st >= ST_FAIL_NONFINITE
        dec_bad |= bad
        dec = res
    with np.errstate(invalid="ignore", over="ignore"):
        # integers compare in long double (exact to 64 bits where the platform has it)
        orig_dtype = np.dtype(np.float64) if x.dtype.kind not in "ui" else np.dtype(np.longdouble)
        orig: npt.NDArray[np.floating] = x.reshape(-1).astype(orig_dtype)
        back: npt.NDArray[np.floating] = dec.astype(orig_dtype)
        ok = ~failed
        same_nan = np.isnan(orig) == np.isnan(back)
        fin = np.isfinite(orig) & np.isfinite(back)
        inf_same = ~np.isinf(orig) | (orig == back)
        mismatch = ok & (dec_bad | ~same_nan | (~fin & ~np.isnan(orig) & ~inf_same) |
                         (np.isfinite(orig) != np.isfinite(back)))
        rep.round_trip_mismatches = int(mismatch.sum())
        sel = ok & fin & ~dec_bad
        if sel.any():
            err = np.abs(back[sel] - orig[sel])
            rep.max_abs_error = float(err.max())
            nz = orig[sel] != 0
            if nz.any():
                rep.max_rel_error = float((err[nz] / np.abs(orig[sel][nz])).max())
            if (err[~nz] > 0).any():
                rep.max_rel_error = math.inf
    return rep


def merge_reports(a: CastReport, b: CastReport, offset_index: Any = None) -> CastReport:
    """``a`` and ``b`` (reports over disjoint parts of one array) as one report, in ``a``."""
    a.count += b.count
    a.exact += b.exact
    a.rounded += b.rounded
    a.clamped += b.clamped
    a.wrapped += b.wrapped
    a.scalar_mapped += b.scalar_mapped
    a.round_trip_mismatches += b.round_trip_mismatches
    if b.failing and not a.failing:
        a.first_failing_index, a.first_failing_value = b.first_failing_index, b.first_failing_value
        a.first_failing_reason = b.first_failing_reason
    a.failing += b.failing
    a.max_abs_error = max(a.max_abs_error, b.max_abs_error)
    a.max_rel_error = max(a.max_rel_error, b.max_rel_error)
    a.encoded_dtype = a.encoded_dtype or b.encoded_dtype
    a.stages = a.stages or list(b.stages)
    return a


def chain_report(values: Any, codecs: Any) -> CastReport:
    """:func:`check_cast`'s report, computed by one kernel pass for the chain ``zarrcy convert
    --quantize`` builds (float values -> ``scale_offset`` -> ``cast_value``); any other
    chain, or data with an element that fails, goes to :func:`check_cast` itself (tests
    compare the two on every counter)."""
    return quantize_with_report(values, codecs, encode=False)[1]


def quantize_with_report(values: Any, codecs: Any, encode: bool = True) -> tuple[np.ndarray | None, CastReport]:
    """``(encoded, report)``: the values encoded by the ``scale_offset`` -> ``cast_value``
    chain (the bytes the fused codec writes; the chain's encoded dtype, ``values``' shape)
    and :func:`check_cast`'s report, in one pass over the values
    (``_cast_scale_offset.quantize_report_into``: per block the codec's encode loop, the
    cast statuses, the codec's decode loop and the round-trip errors).

    ``encoded`` is None when ``encode`` is false, for a chain other than float32/float64
    ``[scale_offset, cast_value]``, and when a value fails (the report, from
    :func:`check_cast`, then says which)."""
    x = np.asarray(values)
    chain = parse_codecs(codecs)
    if (len(chain) != 2 or not isinstance(chain[0], ScaleOffsetCodec) or not isinstance(chain[1], CastValueCodec)
            or x.dtype.kind != "f" or x.dtype.itemsize not in (4, 8)):
        return None, check_cast(x, chain)
    so, cv = chain
    fmt, o, s = so.parsed(x.dtype)
    a = np.ascontiguousarray(x.astype(fmt.dtype, copy=False))   # native byte order
    enc, dec = cv.prepared(a.dtype)
    if not enc.dst.natural:  # float16, bfloat16, int4...: the numpy passes, block by block
        return None, _chain_report_blocks(x, chain)
    out = np.empty(a.shape, dtype=enc.dst.dtype) if encode else None
    y = None if out is None else (out if enc.dst.natural else out.view(enc.dst.storage)).reshape(-1)
    flat = a.reshape(-1)
    kfmt, dfmt = enc.dst.kernel_format(), dec.dst.kernel_format()
    rep = CastReport(count=0, stages=[c.to_dict()["name"] for c in chain], encoded_dtype=enc.dst.dtype.name)
    for i in range(0, flat.size, _REPORT_BLOCK):  # one kernel call per _REPORT_BLOCK elements
        r, counts, mismatches, max_abs, max_rel = quantize_report_into(
            flat[i:i + _REPORT_BLOCK], None if y is None else y[i:i + _REPORT_BLOCK], kfmt, enc.rounding,
            enc.out_of_range, float(o), float(s), enc.keys.reshape(-1), enc.values.reshape(-1), dfmt, dec.rounding,
            dec.out_of_range, dec.keys.reshape(-1), dec.values.reshape(-1))
        if r >= 0:  # a value fails, or a kernel refuses: the exact element-wise report
            return None, check_cast(x, chain)
        part = CastReport(count=min(_REPORT_BLOCK, flat.size - i), max_abs_error=float(max_abs),
                          max_rel_error=float(max_rel), round_trip_mismatches=int(mismatches))
        part.exact, part.rounded, part.clamped, part.wrapped, part.scalar_mapped = (int(c) for c in counts)
        merge_reports(rep, part)
    return out, rep


# elements per kernel call (the reports of the parts are merged; tests make it small)
_REPORT_BLOCK = 1 << 20


def _chain_report_blocks(x: np.ndarray, chain: Any) -> CastReport:
    """:func:`chain_report` for a target the one-pass kernel does not take (not stored in a
    C type of its own): numpy passes per block of ``_NUMPY_BLOCK`` elements."""
    flat = np.ascontiguousarray(x).reshape(-1)
    rep: CastReport | None = None
    for i in range(0, max(flat.size, 1), _NUMPY_BLOCK):
        part = _chain_report_block(flat[i:i + _NUMPY_BLOCK], chain)
        if part is None:  # a value fails, or a kernel refuses: the exact report, whole
            return check_cast(x, chain)
        rep = part if rep is None else merge_reports(rep, part)
    assert rep is not None
    return rep


# 64 Ki elements: the float64 temporaries of a block stay in the L2 cache
_NUMPY_BLOCK = 1 << 16


def _chain_report_block(flat: np.ndarray, chain: Any) -> CastReport | None:
    """:func:`chain_report` of one block of values (None: use :func:`check_cast`)."""
    so, cv = chain
    try:
        y = scale_offset_encode_array(flat, so.offset, so.scale)
    except CastError:
        return None
    enc, dec = cv.prepared(y.dtype)
    res, st = enc.classify(y)
    counts = np.bincount(st, minlength=7)
    if counts[ST_FAIL_NONFINITE:].any():
        return None
    rep = CastReport(count=int(flat.size), stages=[c.to_dict()["name"] for c in chain], encoded_dtype=res.dtype.name)
    rep.exact, rep.rounded = int(counts[ST_EXACT]), int(counts[ST_ROUNDED])
    rep.clamped, rep.wrapped, rep.scalar_mapped = int(counts[ST_CLAMPED]), int(counts[ST_WRAPPED]), int(counts[ST_MAPPED])
    back_y, st2 = dec.classify(res)
    dec_bad = st2 >= ST_FAIL_NONFINITE
    try:
        back = scale_offset_decode_array(back_y, so.offset, so.scale)
    except CastError:
        return None
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        orig = flat.astype(np.float64, copy=False)
        back = back.astype(np.float64, copy=False)
        if not dec_bad.any():
            # common case in few passes: |back - orig| is NaN where either is NaN (ignored, as
            # check_cast ignores them) and infinite only when an infinity is involved -> the
            # general rules below
            err = np.subtract(back, orig)
            np.abs(err, out=err)
            max_abs = float(np.fmax.reduce(err)) if err.size else 0.0
            if math.isfinite(max_abs) or math.isnan(max_abs):
                rep.round_trip_mismatches = int(np.count_nonzero(np.isnan(orig) ^ np.isnan(back)))
                rep.max_abs_error = 0.0 if math.isnan(max_abs) else max_abs
                a = np.abs(orig)
                zero = a == 0
                np.divide(err, a, out=a)  # inf / NaN where orig is 0: handled next
                a[zero] = 0.0
                rel = float(np.fmax.reduce(a)) if a.size else 0.0
                rep.max_rel_error = 0.0 if math.isnan(rel) else rel
                if np.count_nonzero(zero & (err > 0)):
                    rep.max_rel_error = math.inf
                return rep
        nan_o, nan_b = np.isnan(orig), np.isnan(back)
        fin_o, fin_b = np.isfinite(orig), np.isfinite(back)
        # same rule as check_cast: NaN-ness, finiteness or an infinity changed, or decode failed
        mismatch = dec_bad | (nan_o != nan_b) | (fin_o != fin_b) | (~fin_o & ~nan_o & (orig != back))
        rep.round_trip_mismatches = int(np.count_nonzero(mismatch))
        sel = fin_o & fin_b & ~dec_bad
        o_s, b_s = orig[sel], back[sel]
        if o_s.size:
            err = np.abs(b_s - o_s)
            rep.max_abs_error = float(err.max())
            nz = o_s != 0
            if nz.any():
                rep.max_rel_error = float((err[nz] / np.abs(o_s[nz])).max())
            if (err[~nz] > 0).any():
                rep.max_rel_error = math.inf
    return rep




# ---------------------------------------------------------------------------------------
# CLI: zarrcy cast-check
# ---------------------------------------------------------------------------------------

def _load_values(path: str) -> np.ndarray:
    """The values of a ``.npy`` file or of the Zarr array at ``path``; every failure is a
    ``ValueError`` with a one-line message (the CLI prints it, no traceback)."""
    import os

    if path.endswith(".npy") or os.path.isfile(path):
        try:
            return np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise ValueError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise ValueError(f"{path}: is a directory, expected a .npy file") from None
        except (OSError, ValueError, EOFError) as e:
            why = f" ({e})" if path.endswith(".npy") else ""
            raise ValueError(f"{path}: expected a .npy file or a Zarr array, received a file that is not .npy{why}") from None
    if not os.path.exists(path) and "://" not in path:
        raise ValueError(f"{path}: no such file or directory")
    # the API layer, loaded only for a Zarr input (this module sits above it, beside the CLI)
    from zarrcy.api import open as api_open
    from zarrcy.nodes.array import Array

    try:
        node = api_open(path, mode="r")
    except (ZarrcyError, OSError) as e:
        raise ValueError(f"{path}: expected a .npy file or a Zarr array, received no array there ({e})") from None
    if not isinstance(node, Array):
        raise ValueError(f"{path}: expected a Zarr array, received a group (give the array's path, e.g. {path}/NAME)")
    return np.asarray(node[...])


def cast_check_main(argv: Sequence[str] | None = None, load: Any = None) -> int:
    """``zarrcy cast-check INPUT (--codecs JSON | --dtype T [--scale S --offset O --rounding R
    --out-of-range M --scalar-map JSON]) [--json]``; exit 1 when any element would fail."""
    ap = argparse.ArgumentParser(prog="zarrcy cast-check",
                                 description="Report what a scale_offset/cast_value chain does to an array.")
    ap.add_argument("input", help=".npy file or Zarr array path")
    ap.add_argument("--codecs", help="JSON list of codecs (scale_offset, cast_value, numcodecs.fixedscaleoffset)")
    ap.add_argument("--dtype", help="cast_value data_type (target)")
    ap.add_argument("--scale", help="scale_offset scale (JSON scalar)")
    ap.add_argument("--offset", help="scale_offset offset (JSON scalar)")
    ap.add_argument("--rounding", default="nearest-even")
    ap.add_argument("--out-of-range", dest="out_of_range", choices=["clamp", "wrap"])
    ap.add_argument("--scalar-map", dest="scalar_map", help='JSON, e.g. {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}')
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(list(argv) if argv is not None else None)
    try:
        if args.codecs:
            codecs: Any = args.codecs
        else:
            codecs = []
            if args.scale is not None or args.offset is not None:
                conf = {}
                if args.offset is not None:
                    conf["offset"] = json.loads(args.offset)
                if args.scale is not None:
                    conf["scale"] = json.loads(args.scale)
                codecs.append({"name": "scale_offset", "configuration": conf})
            if args.dtype:
                cv: dict[str, Any] = {"data_type": args.dtype, "rounding": args.rounding}
                if args.out_of_range:
                    cv["out_of_range"] = args.out_of_range
                if args.scalar_map:
                    cv["scalar_map"] = json.loads(args.scalar_map)
                codecs.append({"name": "cast_value", "configuration": cv})
            if not codecs:
                ap.error("give --codecs or --dtype/--scale/--offset")
        values = (load or _load_values)(args.input)
        rep = check_cast(values, codecs)
    except (ZarrcyError, ValueError, OSError) as e:  # MetadataError, bad JSON, unreadable input
        print(f"zarrcy cast-check: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rep.to_json(), indent=2, default=str))
    else:
        print(rep.table())
    return 0 if rep.ok else 1
