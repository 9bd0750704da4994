"""The two engines of the cast report (see :mod:`zarrcy.casting.report`): the one-pass
kernel ``_cast_report.cast_report_into`` and numpy passes for every other chain, both
over blocks of ``report._REPORT_BLOCK`` elements, accumulated into one
:class:`~zarrcy.casting.report.CastReport`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from zarrcy._kernels import _cast_report as _k
from zarrcy.casting import report as _r
from zarrcy.casting.range import representable_range, so_classify
from zarrcy.casting.report import CAUSES, Cause, CastReport, parse_codecs
from zarrcy.codecs.cast_value import (
    ST_CLAMPED,
    ST_FAIL_NONFINITE,
    ST_FAIL_RANGE,
    ST_MAPPED,
    ST_WRAPPED,
    CastValueCodec,
    format_of_dtype,
)
from zarrcy.codecs.scale_offset import ScaleOffsetCodec
from zarrcy.errors import MetadataError, expected

__all__ = ["check_cast", "chain_report", "quantize_with_report"]


class _Acc:
    """The report of the blocks seen so far, in flat indices of the whole input."""

    def __init__(self) -> None:
        n = _r._NSLOT
        self.cnt = [0] * n
        self.mn: list[Any] = [None] * n
        self.mx: list[Any] = [None] * n
        self.first: list[int | None] = [None] * n
        self.outc = [0] * 6
        self.first_fail_reason: str | None = None
        self.max_abs, self.max_rel = 0.0, 0.0
        self.i_abs: int | None = None
        self.i_rel: int | None = None
        self.i_zero: int | None = None
        self.indices: dict[str, list[int]] = {}
        self.fills = [0, 0]     # codes at the fill code, values bit-equal to the fill value

    def slot(self, k: int, count: int, mn: Any, mx: Any, first: int) -> None:
        if not count:
            return
        self.cnt[k] += count
        if mn is not None and (self.mn[k] is None or mn < self.mn[k]):
            self.mn[k] = mn
        if mx is not None and (self.mx[k] is None or mx > self.mx[k]):
            self.mx[k] = mx
        if self.first[k] is None:
            self.first[k] = first

    def errors(self, base: int, max_abs: float, i_abs: int, max_rel: float, i_rel: int, i_zero: int) -> None:
        """A later block's largest errors (block-relative indices, -1: none)."""
        if max_abs > self.max_abs:
            self.max_abs, self.i_abs = max_abs, base + i_abs
        if max_rel > self.max_rel:
            self.max_rel, self.i_rel = max_rel, base + i_rel
        if i_zero >= 0 and self.i_zero is None:
            self.i_zero = base + i_zero


def _unravel(flat: int | None, shape: tuple[int, ...], origin: tuple[int, ...]) -> tuple[int, ...] | None:
    if flat is None:
        return None
    idx = np.unravel_index(int(flat), shape) if shape else ()
    return tuple(int(i) + int(o) for i, o in zip(idx, origin)) if shape else ()


def _finish(acc: _Acc, x: np.ndarray, chain: list[Any], encoded_dtype: str, origin: tuple[int, ...] | None,
            codes: np.ndarray | None, max_indices: int, collect: bool) -> CastReport:
    shape = tuple(x.shape)
    org = origin if origin is not None else (0,) * len(shape)
    oor = _r._chain_oor(chain)
    rep = CastReport(count=int(x.size), stages=[c.to_dict()["name"] for c in chain], encoded_dtype=encoded_dtype,
                     out_of_range=oor)
    rep.exact, rep.rounded, rep.clamped, rep.wrapped, rep.scalar_mapped, rep.failing = acc.outc
    rep.round_trip_mismatches = acc.cnt[_r._S_KIND]
    for cause in CAUSES:
        c = Cause()
        for k in _r._cause_slots(cause, oor):
            c.merge(Cause(acc.cnt[k], acc.mn[k], acc.mx[k], _unravel(acc.first[k], shape, org)))
        rep.causes[cause] = c
    if rep.failing:
        flat = acc.first[_r._S_FAIL]
        assert flat is not None
        idx = _unravel(flat, shape, org)
        rep.first_failing_index = idx if len(shape) != 1 or idx is None else int(idx[0])
        with np.errstate(invalid="ignore"):
            v = x.reshape(-1)[flat]
            rep.first_failing_value = v.item() if format_of_dtype(x.dtype).natural else float(np.float64(v))
        rep.first_failing_reason = acc.first_fail_reason
    rep.max_abs_error, rep.max_abs_error_index = acc.max_abs, _unravel(acc.i_abs, shape, org)
    if acc.i_zero is not None:
        rep.max_rel_error, rep.max_rel_error_index = math.inf, _unravel(acc.i_zero, shape, org)
    else:
        rep.max_rel_error, rep.max_rel_error_index = acc.max_rel, _unravel(acc.i_rel, shape, org)
    if collect:
        rep.indices = {k: [t for t in (_unravel(i, shape, org) for i in v) if t is not None]
                       for k, v in acc.indices.items()}
        rep.indices_limit = max_indices
    if codes is not None:
        rep.codes = codes.reshape(shape)
    rep.representable_range = representable_range(x.dtype, chain) if chain else None
    return rep


def _collect(acc: _Acc, codes_b: np.ndarray, base: int, oor: str | None, max_indices: int) -> None:
    """The first indices of each cause in this block, up to ``max_indices`` per cause."""
    for cause in CAUSES:
        have = acc.indices.setdefault(cause, [])
        if len(have) >= max_indices:
            continue
        hit = np.flatnonzero(_r._cause_lut(cause, oor)[codes_b])
        if hit.size:
            have.extend(int(i) + base for i in hit[:max_indices - len(have)])


# ---------------------------------------------------------------------------------------
# the kernel path
# ---------------------------------------------------------------------------------------

def _kernel_chain(x: np.ndarray, chain: list[Any]) -> tuple[Any, ...] | None:
    """(scale_offset?, offset, scale, enc, dec) when the one-pass kernel takes the chain."""
    if x.dtype.kind != "f" or x.dtype.itemsize not in (4, 8) or not chain or len(chain) > 2:
        return None
    if len(chain) == 2 and not (isinstance(chain[0], ScaleOffsetCodec) and isinstance(chain[1], CastValueCodec)):
        return None
    if not isinstance(chain[-1], CastValueCodec):
        return None
    dt = np.dtype(x.dtype.newbyteorder("="))
    if len(chain) == 2:
        _, o, s = chain[0].parsed(dt)
        so, od, sd = True, float(o), float(s)
    else:
        so, od, sd = False, 0.0, 1.0
    enc, dec = chain[-1].prepared(dt)
    if not enc.dst.natural:
        return None
    return so, od, sd, enc, dec


def _kernel_block(acc: _Acc, xb: np.ndarray, base: int, yb: np.ndarray | None, codes_b: np.ndarray | None,
                  kc: tuple[Any, ...], chain: list[Any], fills: tuple[np.ndarray, np.ndarray] | None) -> None:
    so, od, sd, enc, dec = kc
    cnt, mn, mx, first, outc, ffc, mabs, iabs, mrel, irel, izero, nfc, nfv = _k.cast_report_into(
        xb, yb, codes_b, enc.dst.kernel_format(), enc.rounding, enc.out_of_range, so, od, sd,
        enc.keys.reshape(-1), enc.values.reshape(-1), dec.dst.kernel_format(), dec.rounding, dec.out_of_range,
        dec.keys.reshape(-1), dec.values.reshape(-1), *(fills if fills is not None else (None, None)))
    acc.fills[0] += int(nfc)
    acc.fills[1] += int(nfv)
    flip = sd < 0
    if flip and codes_b is not None:
        codes_b[...] = _r._FLIP[codes_b]
    for k in range(_r._NSLOT):
        kk = _r._FLIP_SLOTS[k] if flip else k
        if cnt[k]:
            lo, hi = (mn[k], mx[k]) if mn[k] <= mx[k] else (None, None)
            acc.slot(kk, int(cnt[k]), lo, hi, base + int(first[k]))
    if cnt[_r._S_FAIL] and acc.first_fail_reason is None:
        acc.first_fail_reason = _kernel_reason(int(ffc) & _k.CLASS_MASK, chain, xb.dtype, enc.dst.name)
    for i in range(6):
        acc.outc[i] += int(outc[i])
    acc.errors(base, float(mabs), int(iabs), float(mrel), int(irel), int(izero))


def _kernel_reason(cls: int, chain: list[Any], dtype: np.dtype, dst: str) -> str:
    last = len(chain) - 1
    if cls in (_r._SOHIGH, _r._SOLOW):
        return f"codecs[0] scale_offset: result not representable in {np.dtype(dtype).name}"
    if cls in (_r._NAN, _r._POSINF, _r._NEGINF):
        return f"codecs[{last}] cast_value to {dst}: NaN/Infinity has no representation"
    return f"codecs[{last}] cast_value to {dst}: out of range"


# ---------------------------------------------------------------------------------------
# the numpy path (every other chain)
# ---------------------------------------------------------------------------------------

_RANK = np.array([0, 1, 3, 2, 4, 0, 0], dtype=np.uint8)  # status -> exact 0 rounded 1 wrapped 2 clamped 3 mapped 4


def _numpy_block(acc: _Acc, x: np.ndarray, base: int, chain: list[Any]) -> np.ndarray:
    """One block (1-d) through the chain stage by stage: every element's code, counted into
    ``acc``; returns the codes."""
    n = x.size
    worst = np.zeros(n, dtype=np.uint8)
    failed = np.zeros(n, dtype=bool)
    sofail = np.zeros(n, dtype=bool)
    oor = np.zeros(n, dtype=bool)
    mapped = np.zeros(n, dtype=bool)
    high = np.zeros(n, dtype=bool)
    reason: tuple[int, str] | None = None
    sign = 1
    cur = x
    dtypes = [cur.dtype]
    for ci, codec in enumerate(chain):
        if isinstance(codec, ScaleOffsetCodec):
            res, bad = so_classify(cur, codec, "encode")
            new = bad & ~failed
            if new.any():
                _, o, s = codec.parsed(cur.dtype)
                up = (cur[new] > o) == (s > 0)           # the sign of the result that overflows
                high[new] = up if sign > 0 else ~up
                sofail |= new
                i = int(np.flatnonzero(new)[0])
                if reason is None or i < reason[0]:
                    reason = (i, f"codecs[{ci}] scale_offset: result not representable in {cur.dtype.name}")
            failed |= bad
            sign *= 1 if codec.parsed(cur.dtype)[2] > 0 else -1
            cur = res
        else:
            prep = codec.prepared(cur.dtype)[0]
            res, st = prep.classify(cur)
            mapped |= (st == ST_MAPPED) & ~failed
            new = ((st == ST_CLAMPED) | (st == ST_WRAPPED) | (st == ST_FAIL_RANGE)) & ~failed & ~oor
            if new.any():
                with np.errstate(invalid="ignore"):
                    up = np.asarray(cur[new] > 0)
                high[new] = up if sign > 0 else ~up
                oor |= new
            bad = st >= ST_FAIL_NONFINITE
            nb = bad & ~failed
            if nb.any():
                i = int(np.flatnonzero(nb)[0])
                why = "NaN/Infinity has no representation" if st[i] == ST_FAIL_NONFINITE else "out of range"
                if reason is None or i < reason[0]:
                    reason = (i, f"codecs[{ci}] cast_value to {prep.dst.name}: {why}")
            failed |= bad
            worst = np.maximum(worst, _RANK[st])
            cur = res
        dtypes.append(cur.dtype)
    # decode back, stage by stage, tolerating failures element-wise
    dec = cur
    dec_bad = failed.copy()
    dec_mapped = np.zeros(n, dtype=bool)
    for ci in range(len(chain) - 1, -1, -1):
        codec = chain[ci]
        if isinstance(codec, ScaleOffsetCodec):
            res, bad = so_classify(dec, codec, "decode")
        else:
            res, st = codec.prepared(dtypes[ci])[1].classify(dec)
            bad = st >= ST_FAIL_NONFINITE
            dec_mapped |= st == ST_MAPPED
        dec_bad |= bad
        dec = res
    src_float = not format_of_dtype(x.dtype).is_int
    with np.errstate(invalid="ignore", over="ignore"):
        # integers compare in long double (exact to 64 bits where the platform has it)
        odt = np.dtype(np.float64) if src_float else np.dtype(np.longdouble)
        orig: npt.NDArray[np.floating] = x.astype(odt)
        back: npt.NDArray[np.floating] = dec.astype(odt)
        nan_o, nan_b = np.isnan(orig), np.isnan(back)
        fin_o, fin_b = np.isfinite(orig), np.isfinite(back)
        ok = ~failed
        kind = ok & (dec_bad | (nan_o != nan_b) | (fin_o != fin_b) | (~fin_o & ~nan_o & (orig != back)))
        sel = ok & ~kind & fin_o & fin_b
        err = np.zeros(n, dtype=odt)
        err[sel] = np.abs(back[sel] - orig[sel])
        if n and err.max() > 0:
            i = int(np.argmax(err))
            acc.errors(base, float(err[i]), i, 0.0, -1, -1)
        nz = sel & (orig != 0)
        rel = np.zeros(n, dtype=odt)
        rel[nz] = err[nz] / np.abs(orig[nz])
        if n and rel.max() > 0:
            i = int(np.argmax(rel))
            acc.errors(base, 0.0, -1, float(rel[i]), i, -1)
        zero = np.flatnonzero(sel & (orig == 0) & (back != 0))
        if zero.size:
            acc.errors(base, 0.0, -1, 0.0, -1, int(zero[0]))
    cls = np.full(n, _r._EXACT, dtype=np.uint8)
    cls[worst == 1] = _r._ROUNDED
    cls[oor] = np.where(high[oor], _r._HIGH, _r._LOW)
    cls[sofail] = np.where(high[sofail], _r._SOHIGH, _r._SOLOW)
    if src_float:
        pos = orig > 0
        cls[nan_o] = _r._NAN
        inf = ~fin_o & ~nan_o
        cls[inf] = np.where(pos[inf], _r._POSINF, _r._NEGINF)
        cls[mapped] = np.where(nan_o[mapped], _r._MAP_NAN, np.where(fin_o[mapped], _r._MAP_NUM, np.where(
            pos[mapped], _r._MAP_POSINF, _r._MAP_NEGINF)))
    else:
        cls[mapped] = _r._MAP_NUM
    codes = cls | np.where(failed, _k.FLAG_FAIL, 0).astype(np.uint8)
    codes |= np.where(ok & ~mapped & dec_mapped, _k.FLAG_COLLISION, 0).astype(np.uint8)
    codes |= np.where(kind, _k.FLAG_KIND, 0).astype(np.uint8)
    # counts
    rank = np.where(failed, 5, worst)
    outc = np.bincount(rank, minlength=6)
    for i, r in enumerate((0, 1, 3, 2, 4, 5)):  # exact, rounded, clamped, wrapped, mapped, failing
        acc.outc[i] += int(outc[r])
    vals = x if not src_float else orig
    for k in range(_r._NSLOT):
        m = _r._SLOT_LUT[k][codes]
        c = int(np.count_nonzero(m))
        if not c:
            continue
        v = vals[m]
        if src_float:
            v = v[~np.isnan(v)]
        lo = hi = None
        if v.size:
            lo, hi = v.min().item(), v.max().item()
        acc.slot(k, c, lo, hi, base + int(np.argmax(m)))
    if reason is not None and acc.first_fail_reason is None:
        acc.first_fail_reason = reason[1]
    return codes


# ---------------------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------------------

def _fill_args(fills: Any, src: np.dtype, code: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """``(fill code, fill value)`` as the kernel takes them: one element of the encoded
    type and one of the (native-order) source type; a MetadataError for anything else."""
    if not isinstance(fills, (tuple, list)) or len(fills) != 2:
        raise MetadataError(expected("fills", "a (source fill value, fill code) pair", fills), "fills")
    out = []
    for name, v, dt in (("fills[1]", fills[1], code), ("fills[0]", fills[0], src)):
        a = np.asarray(v)
        if a.shape != () or a.dtype.kind not in "biuf" or (a.dtype.kind == "f" and dt.kind != "f"):
            raise MetadataError(expected(name, f"a {dt.name} scalar", v), name)
        with np.errstate(all="ignore"):
            b = a.astype(dt)
        if not (b == a or (a.dtype.kind == "f" and bool(np.isnan(a)) and bool(np.isnan(b)))):
            raise MetadataError(expected(name, f"a value {dt.name} represents", v), name)
        out.append(b.reshape(1))
    return out[0], out[1]


def _run(values: Any, codecs: Any, *, encode: bool, masks: bool | None, max_indices: int,
         origin: Any, fills: Any = None) -> tuple[np.ndarray | None, CastReport]:
    x = np.asarray(values)
    chain = parse_codecs(codecs)
    if max_indices < 0:
        raise MetadataError(expected("max_indices", "a non-negative integer", max_indices), "max_indices")
    org = None if origin is None else tuple(int(v) for v in origin)
    if org is not None and len(org) != x.ndim:
        raise MetadataError(expected("origin", f"{x.ndim} coordinates", origin), "origin")
    keep = (x.size <= _r.MASK_LIMIT) if masks is None else bool(masks)
    collect = max_indices > 0
    kc = _kernel_chain(x, chain)
    flat = np.ascontiguousarray(x).reshape(-1)
    n = flat.size
    codes = np.empty(n, dtype=np.uint8) if keep else None
    acc = _Acc()
    oor = _r._chain_oor(chain)
    out = None
    if kc is not None:
        flat = flat.astype(flat.dtype.newbyteorder("="), copy=False)
        enc = kc[3]
        fa = None if fills is None else _fill_args(fills, flat.dtype, np.dtype(enc.dst.dtype))
        out = np.empty(x.shape, dtype=enc.dst.dtype) if encode else None
        y = None if out is None else out.reshape(-1)
        scratch = np.empty(min(n, _r._REPORT_BLOCK), dtype=np.uint8) if (collect and not keep) else None
        for i in range(0, n, _r._REPORT_BLOCK):
            j = min(n, i + _r._REPORT_BLOCK)
            cb = codes[i:j] if codes is not None else (None if scratch is None else scratch[:j - i])
            _kernel_block(acc, flat[i:j], i, None if y is None else y[i:j], cb, kc, chain, fa)
            if collect and cb is not None:
                _collect(acc, cb, i, oor, max_indices)
        dtype_name = enc.dst.dtype.name
    else:
        for i in range(0, max(n, 1), _r._REPORT_BLOCK):
            j = min(n, i + _r._REPORT_BLOCK)
            cb = _numpy_block(acc, flat[i:j], i, chain)
            if codes is not None:
                codes[i:j] = cb
            if collect:
                _collect(acc, cb, i, oor, max_indices)
        dtype_name = _encoded_dtype(x.dtype, chain)
    rep = _finish(acc, x, chain, dtype_name, org, codes, max_indices, collect)
    if out is not None and rep.failing:
        out = None
    if fills is not None and out is not None:
        rep.fill_counts = (acc.fills[0], acc.fills[1])
    return out, rep


def _encoded_dtype(dtype: np.dtype, chain: list[Any]) -> str:
    dt = np.dtype(dtype)
    for c in chain:
        if isinstance(c, CastValueCodec):
            dt = c.prepared(dt)[0].dst.dtype
    return dt.name


def check_cast(values: Any, codecs: Any, *, masks: bool | None = None, max_indices: int = _r.MAX_INDICES,
               origin: Any = None) -> CastReport:
    """Run ``codecs`` (a scale_offset / cast_value chain: JSON text, dicts or codec objects)
    over ``values`` and report what happens (:class:`CastReport`).

    ``masks``: keep every element's code so that :meth:`CastReport.mask` works (default:
    for inputs of at most :data:`~zarrcy.casting.report.MASK_LIMIT` elements; one byte per
    element).  ``max_indices``: the first indices collected per cause (``report.indices``;
    0: none, which also lets the kernel skip per-element codes).  ``origin``: the
    coordinates of ``values[0, ...]`` in a larger array (indices are reported there).
    """
    return _run(values, codecs, encode=False, masks=masks, max_indices=max_indices, origin=origin)[1]


def chain_report(values: Any, codecs: Any, origin: Any = None) -> CastReport:
    """:func:`check_cast`'s counts, causes and errors without masks or index lists (the
    fast one-pass kernel where it applies): ``zarrcy convert --quantize``'s region report."""
    return _run(values, codecs, encode=False, masks=False, max_indices=0, origin=origin)[1]


def quantize_with_report(values: Any, codecs: Any, encode: bool = True, origin: Any = None,
                         fills: Any = None) -> tuple[np.ndarray | None, CastReport]:
    """``(encoded, report)``: the values encoded by a float32 / float64 ``[scale_offset,]
    cast_value`` chain (the bytes the codec writes; the chain's encoded dtype, ``values``'
    shape) and :func:`chain_report`'s report, in one pass.  ``encoded`` is None when
    ``encode`` is false, for a chain the kernel does not take, and when a value fails.

    ``fills``: None or ``(fill_value, fill_code)`` (scalars of ``values``' dtype and of the
    encoded dtype): then, whenever ``encoded`` is returned, ``report.fill_counts`` is
    ``(codes bit-equal to fill_code, values bit-equal to fill_value)``, counted in the
    same pass (what convert's fused write checks)."""
    return _run(values, codecs, encode=encode, masks=False, max_indices=0, origin=origin, fills=fills)
