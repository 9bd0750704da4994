"""Slow exact references for the cast_value / scale_offset kernels (Python Fractions, explicit rules).

Written from the spec text (ext-codec-cast_value.md "Procedure", ext-codec-scale_offset.md
"Algorithm") independently of the kernels: values are exact rationals, rounding picks between
the two neighbours on the target grid, ranges are checked after rounding.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

INT_TYPES = {
    "int8": (-(2**7), 2**7 - 1, 8), "int16": (-(2**15), 2**15 - 1, 16), "int32": (-(2**31), 2**31 - 1, 32),
    "int64": (-(2**63), 2**63 - 1, 64), "uint8": (0, 2**8 - 1, 8), "uint16": (0, 2**16 - 1, 16),
    "uint32": (0, 2**32 - 1, 32), "uint64": (0, 2**64 - 1, 64),
    "int4": (-8, 7, 4), "uint4": (0, 15, 4), "int2": (-2, 1, 2), "uint2": (0, 3, 2),
}
# name: (significand bits incl. implicit, min normal exponent, max exponent, has inf/nan)
FLOAT_TYPES = {
    "float64": (53, -1022, 1023, True), "float32": (24, -126, 127, True), "float16": (11, -14, 15, True),
    "bfloat16": (8, -126, 127, True), "float8_e4m3": (4, -6, 7, True), "float8_e5m2": (3, -14, 15, True),
    "float4_e2m1fn": (2, 0, 2, False),
}
ALL_TYPES = list(INT_TYPES) + list(FLOAT_TYPES)
NATIVE_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64"]
MODES = ["nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away"]

NAN = "nan"


def np_dtype(name: str) -> np.dtype:
    if hasattr(ml_dtypes, name):
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def max_finite(name: str) -> Fraction:
    p, emin, emax, _ = FLOAT_TYPES[name]
    return Fraction(2) ** emax * (2 - Fraction(1, 2 ** (p - 1)))


def _round_int(f: Fraction, mode: str) -> int:
    if mode == "nearest-even":
        return round(f)
    if mode == "towards-zero":
        return math.trunc(f)
    if mode == "towards-positive":
        return math.ceil(f)
    if mode == "towards-negative":
        return math.floor(f)
    r = math.floor(abs(f) + Fraction(1, 2))
    return r if f >= 0 else -r


def _round_float(f: Fraction, name: str, mode: str) -> Fraction:
    """Round to the target grid with an unbounded exponent (the neighbours of f)."""
    p, emin, _, _ = FLOAT_TYPES[name]
    return round_on_grid(f, p, emin, mode)


def round_on_grid(f: Fraction, p: int, emin: int | None, mode: str) -> Fraction:
    """Round f (non-zero) to p significant bits, exponent unbounded above and, when
    ``emin`` is given, a fixed quantum below 2^emin (subnormals); with ``p == 1`` a tie
    goes to the larger magnitude (both neighbours have the odd significand 1)."""
    a = abs(f)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    q = (e if emin is None else max(e, emin)) - (p - 1)
    ulp = Fraction(2) ** q
    k = math.floor(f / ulp)
    lo, hi = k * ulp, (k + 1) * ulp
    if lo == f:
        return f
    if mode == "towards-positive":
        return hi
    if mode == "towards-negative":
        return lo
    if mode == "towards-zero":
        return lo if f > 0 else hi
    dlo, dhi = f - lo, hi - f
    if dlo < dhi:
        return lo
    if dhi < dlo:
        return hi
    if mode == "nearest-away" or p == 1:
        return hi if f > 0 else lo
    return lo if k % 2 == 0 else hi


def ref_cast(v: Any, dst: str, mode: str, oor: str | None) -> tuple[str, Any]:
    """(status, value): status in exact/rounded/clamped/wrapped/fail_nonfinite/fail_range.

    value: int for integer targets; for floats NAN, +-inf or (Fraction, negative-zero flag).
    """
    if dst in INT_TYPES:
        lo, hi, n = INT_TYPES[dst]
        if v == NAN or isinstance(v, float):
            return "fail_nonfinite", None
        f = v[0]
        r = _round_int(f, mode)
        st = "exact" if r == f else "rounded"
        if lo <= r <= hi:
            return st, r
        if oor == "clamp":
            return "clamped", lo if r < lo else hi
        if oor == "wrap":
            w = r % (1 << n)
            if lo < 0 and w > hi:
                w -= 1 << n
            return "wrapped", w
        return "fail_range", None
    _, _, _, ieee = FLOAT_TYPES[dst]
    if v == NAN:
        return ("exact", NAN) if ieee else ("fail_nonfinite", None)
    if isinstance(v, float):
        return ("exact", v) if ieee else ("fail_nonfinite", None)
    f, negz = v
    if f == 0:
        return "exact", (Fraction(0), negz)
    r = _round_float(f, dst, mode)
    st = "exact" if r == f else "rounded"
    if abs(r) > max_finite(dst):
        if oor == "clamp":
            if ieee:
                return "clamped", math.inf if f > 0 else -math.inf
            return "clamped", (max_finite(dst) if f > 0 else -max_finite(dst), False)
        return "fail_range", None
    return st, (r, r == 0 and f < 0)


def as_exact_array(arr: np.ndarray) -> list[Any]:
    name = arr.dtype.name
    flat = arr.reshape(-1)
    if name in FLOAT_TYPES:
        with np.errstate(invalid="ignore"):
            f64 = flat.astype(np.float64)
        out: list[Any] = []
        for f in f64.tolist():
            if math.isnan(f):
                out.append(NAN)
            elif math.isinf(f):
                out.append(f)
            else:
                out.append((Fraction(f), f == 0 and math.copysign(1.0, f) < 0))
        return out
    ints = flat.astype(np.int64 if INT_TYPES[name][0] < 0 else np.uint64).tolist()
    return [(Fraction(i), False) for i in ints]


def result_matches(got: Any, exp: Any, dst: str) -> bool:
    """Compare one kernel output element (as numpy scalar of dst) with a reference value."""
    if dst in INT_TYPES:
        return int(np.asarray(got).astype(np.int64 if INT_TYPES[dst][0] < 0 else np.uint64)) == exp
    with np.errstate(invalid="ignore"):
        g = float(np.asarray(got).astype(np.float64))
    if exp == NAN:
        return math.isnan(g)
    if isinstance(exp, float):
        return g == exp
    f, negz = exp
    return Fraction(g) == f and (f != 0 or (math.copysign(1.0, g) < 0) == negz) if not math.isnan(g) and not math.isinf(g) else False


def representable(f: Fraction, name: str) -> bool:
    if name in INT_TYPES:
        lo, hi, _ = INT_TYPES[name]
        return f.denominator == 1 and lo <= f <= hi
    if f == 0:
        return True
    if abs(f) > max_finite(name):
        return False
    return _round_float(f, name, "towards-zero") == f


def edge_values(src: str) -> np.ndarray:
    """Edge cases expressible in ``src``: type bounds of every type (+-1, +-0.5), halves, 2^53+1..."""
    cands: list[Fraction] = [Fraction(0), Fraction(1), Fraction(-1)]
    for k in range(-3, 4):
        cands.append(Fraction(2 * k + 1, 2))            # exact halves
        cands.append(Fraction(4 * k + 1, 4))
    for lo, hi, _ in INT_TYPES.values():
        for b in (lo, hi):
            cands += [Fraction(b), Fraction(b) - 1, Fraction(b) + 1, Fraction(b) - Fraction(1, 2), Fraction(b) + Fraction(1, 2)]
    for name in FLOAT_TYPES:
        m = max_finite(name)
        p, emin, emax, _ = FLOAT_TYPES[name]
        half_ulp = Fraction(2) ** (emax - p)            # max + half ulp: the overflow threshold
        tiny = Fraction(2) ** (emin - p + 1)            # smallest subnormal
        for v in (m, m + half_ulp, m - half_ulp, Fraction(2) ** (emax + 1), tiny, tiny / 2, tiny * 3 / 2,
                  Fraction(2) ** emin):
            cands += [v, -v]
    for e in (24, 53, 11, 8, 62, 63):
        cands += [Fraction(2**e + 1), Fraction(2**e + 3), Fraction(-(2**e) - 1), Fraction(2**e - 1)]
    vals = [c for c in cands if representable(c, src)]
    dt = np_dtype(src)
    if src in INT_TYPES:
        big = np.array([int(v) for v in vals], dtype=object)
        arr = np.array(big.tolist(), dtype=np.int64 if INT_TYPES[src][0] < 0 else np.uint64).astype(dt)
    else:
        arr = np.array([float(v) for v in vals], dtype=np.float64).astype(dt)
        _, _, _, ieee = FLOAT_TYPES[src]
        extra = [-0.0] + ([math.nan, math.inf, -math.inf] if ieee else [])
        arr = np.concatenate([arr, np.array(extra, dtype=np.float64).astype(dt)])
        if src in ("float32", "float64", "float16"):
            # NaN payloads and a negative NaN
            bits = {"float32": (np.uint32, [0x7FC00001, 0xFFC00000, 0x7F800001]),
                    "float64": (np.uint64, [0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001]),
                    "float16": (np.uint16, [0x7E01, 0xFE00, 0x7C01])}[src]
            arr = np.concatenate([arr, np.array(bits[1], dtype=bits[0]).view(dt)])
    return arr
