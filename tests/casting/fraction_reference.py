"""A slow exact reference of a ``[scale_offset,] cast_value`` chain, element by element,
in Fractions (ext-codec-scale_offset.md "Algorithm", ext-codec-cast_value.md "Procedure"):
the oracle of the cast report tests.  Nothing here calls zarrcy.

Float arithmetic is modelled exactly: every IEEE operation is the exact result rounded
to nearest-even in its format (overflow to +-Infinity); casts round with the chain's mode
on the target's grid.  Sources: float32 / float64; targets: integers of any width, float32,
float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

INF = math.inf


@dataclass(frozen=True)
class Fmt:
    kind: str          # "int" or "float"
    lo: int = 0
    hi: int = 0
    bits: int = 0
    p: int = 0         # floats: significand bits
    emin: int = 0
    emax: int = 0

    @property
    def max_finite(self) -> Fraction:
        return Fraction(2) ** self.emax * (2 - Fraction(1, 2 ** (self.p - 1)))


def fmt_of(name: str) -> Fmt:
    if name == "float64":
        return Fmt("float", p=53, emin=-1022, emax=1023, bits=64)
    if name == "float32":
        return Fmt("float", p=24, emin=-126, emax=127, bits=32)
    bits = int(name.lstrip("uint"))
    if name.startswith("u"):
        return Fmt("int", 0, 2 ** bits - 1, bits)
    return Fmt("int", -(2 ** (bits - 1)), 2 ** (bits - 1) - 1, bits)


def round_int(q: Fraction, mode: str) -> int:
    """``q`` rounded to an integer per a cast_value rounding mode."""
    fl = math.floor(q)
    if fl == q:
        return fl
    if mode == "towards-negative":
        return fl
    if mode == "towards-positive":
        return fl + 1
    if mode == "towards-zero":
        return fl if q > 0 else fl + 1
    d = q - fl
    if d != Fraction(1, 2):
        return fl if d < Fraction(1, 2) else fl + 1
    if mode == "nearest-away":
        return fl + 1 if q > 0 else fl
    return fl if fl % 2 == 0 else fl + 1     # nearest-even


def _exp2(q: Fraction) -> int:
    """floor(log2(|q|)) for q != 0."""
    q = abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    while Fraction(2) ** e > q:
        e -= 1
    while Fraction(2) ** (e + 1) <= q:
        e += 1
    return e


def round_float(q: Fraction, f: Fmt, mode: str = "nearest-even") -> Fraction | float:
    """``q`` on the grid of float format ``f`` (unbounded exponent, then: beyond the largest
    finite value -> +-inf)."""
    if q == 0:
        return Fraction(0)
    e = max(_exp2(q), f.emin)
    ulp = Fraction(2) ** (e - f.p + 1)
    r = round_int(q / ulp, mode) * ulp
    if abs(r) > f.max_finite:
        return INF if r > 0 else -INF
    return r


def fop(q: Fraction | float, f: Fmt) -> Fraction | float:
    """One IEEE operation's result ``q`` (exact, or +-inf / nan) rounded to ``f``."""
    if isinstance(q, float):
        return q
    return round_float(q, f)


def val(x: Any) -> Fraction | float:
    v = float(x)
    return v if not math.isfinite(v) else Fraction(v)


def same_num(a: Any, b: Any) -> bool:
    """scalar_map matching: by numerical value, any NaN matches NaN."""
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(b, float) and math.isnan(b):
        return False
    return a == b


@dataclass
class Elem:
    cls: str                 # exact rounded high low so_high so_low nan posinf neginf mapped
    outcome: str             # exact rounded clamped wrapped mapped failing
    fail: bool = False
    collision: bool = False
    kind: bool = False
    err: float | None = None  # abs error (float64 arithmetic), when both finite
    rel: float | None = None  # rel error (float64 arithmetic: inf when the quotient overflows)
    rel_of_zero: bool = False  # an original 0 read back non-zero: an infinite rel error
    code: Any = None


@dataclass
class Chain:
    src: str                         # float32 / float64
    dst: str
    rounding: str = "nearest-even"
    oor: str | None = None
    offset: float | None = None      # None: no scale_offset
    scale: float = 1.0
    enc: list[tuple[Any, Any]] = field(default_factory=list)   # scalar_map encode (numbers; nan as float nan)
    dec: list[tuple[Any, Any]] = field(default_factory=list)

    def codecs(self) -> list[dict[str, Any]]:
        def js(v: Any) -> Any:
            if isinstance(v, float) and not math.isfinite(v):
                return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
            return v
        out: list[dict[str, Any]] = []
        if self.offset is not None:
            out.append({"name": "scale_offset", "configuration": {"offset": self.offset, "scale": self.scale}})
        cv: dict[str, Any] = {"data_type": self.dst, "rounding": self.rounding}
        if self.oor:
            cv["out_of_range"] = self.oor
        if self.enc or self.dec:
            cv["scalar_map"] = {"encode": [[js(a), js(b)] for a, b in self.enc],
                                "decode": [[js(a), js(b)] for a, b in self.dec]}
        out.append({"name": "cast_value", "configuration": cv})
        return out

    # ---- one element
    def os_of(self) -> tuple[Fraction, Fraction]:
        """offset, scale: the JSON decimal rounded once to the source format."""
        sf = fmt_of(self.src)
        o = round_float(Fraction(repr(float(self.offset or 0))), sf)
        s = round_float(Fraction(repr(float(self.scale))), sf)
        assert not isinstance(o, float) and not isinstance(s, float)
        return o, s

    def t_of(self, x: Fraction | float) -> Fraction | float:
        """scale_offset encode in the source format: fl(fl(x - o) * s)."""
        if self.offset is None:
            return x
        sf = fmt_of(self.src)
        o, s = self.os_of()
        if isinstance(x, float):
            if math.isnan(x):
                return x
            return x if s > 0 else -x
        d = fop(x - o, sf)
        if isinstance(d, float):
            return d if s > 0 else -d
        return fop(d * s, sf)

    def cast(self, t: Fraction | float, pairs: list[tuple[Any, Any]], f: Fmt, rounding: str,
             oor: str | None) -> tuple[str, Any]:
        """(status, value) of cast_value: mapped / exact / rounded / clamped / wrapped /
        fail_nonfinite / fail_range."""
        for k, v in pairs:
            if same_num(t, k if isinstance(k, float) and not math.isfinite(k) else Fraction(k)):
                return "mapped", v
        if isinstance(t, float):   # NaN / inf, not mapped
            if f.kind == "int":
                return "fail_nonfinite", None
            return "exact", t
        if f.kind == "int":
            r = round_int(t, rounding)
            if f.lo <= r <= f.hi:
                return ("exact" if r == t else "rounded"), r
            if oor == "clamp":
                return "clamped", (f.hi if r > 0 else f.lo)
            if oor == "wrap":
                m = 2 ** f.bits
                w = r % m
                return "wrapped", (w - m if w > f.hi else w)
            return "fail_range", r
        r2 = round_float(t, f, rounding)
        if isinstance(r2, float):
            if oor == "clamp":
                return "clamped", r2
            return "fail_range", r2
        return ("exact" if r2 == t else "rounded"), r2

    def element(self, x_raw: Any) -> Elem:
        x = val(x_raw)
        t = self.t_of(x)
        tf, sf = fmt_of(self.dst), fmt_of(self.src)
        so_fail = not isinstance(x, float) and isinstance(t, float)
        st, code = ("fail_range", None) if so_fail else self.cast(t, self.enc, tf, self.rounding, self.oor)
        xn = isinstance(x, float) and math.isnan(x)
        if st == "mapped":
            cls = "mapped"
        elif xn:
            cls = "nan"
        elif isinstance(x, float):
            cls = "posinf" if x > 0 else "neginf"
        elif so_fail:
            cls = "so_high" if t > 0 else "so_low"
        elif st in ("clamped", "wrapped", "fail_range"):
            tv = t if not isinstance(t, float) else t
            cls = "high" if tv > 0 else "low"
        else:
            cls = st
        if self.scale < 0 and self.offset is not None and cls in ("high", "low", "so_high", "so_low"):
            cls = {"high": "low", "low": "high", "so_high": "so_low", "so_low": "so_high"}[cls]
        fail = so_fail or st.startswith("fail")
        e = Elem(cls, "failing" if fail else st, fail=fail, code=code)
        if fail:
            return e
        # decode: cast back (decode map first), then scale_offset decode in the source format
        dec_rounding = self.rounding
        dec_oor = self.oor if self.oor != "wrap" else None
        dst_val = val(code) if isinstance(code, float) else Fraction(code)
        st2, b = self.cast(dst_val, self.dec, sf, dec_rounding, dec_oor)
        e.collision = st != "mapped" and st2 == "mapped"
        dec_fail = st2.startswith("fail")
        if not dec_fail:
            b = val(b) if not isinstance(b, Fraction) else b
            if self.offset is not None:
                o, s = self.os_of()
                if isinstance(b, float):
                    bb: Fraction | float = b if math.isnan(b) else (b if s > 0 else -b)
                else:
                    q = fop(b / s, sf)
                    bb = q if isinstance(q, float) else fop(q + o, sf)
                dec_fail = not isinstance(b, float) and isinstance(bb, float)
                b = bb
        bn = isinstance(b, float) and math.isnan(b)
        xfin, bfin = not isinstance(x, float), not isinstance(b, float)
        e.kind = dec_fail or xn != bn or xfin != bfin or (not xn and not xfin and x != b)
        if not e.kind and xfin and bfin:
            f64 = fmt_of("float64")
            err = fop(abs(b - x), f64)
            e.err = float(err)
            if x != 0:
                e.rel = float(fop(Fraction(err) / abs(x), f64))
            elif b != 0:
                e.rel, e.rel_of_zero = INF, True
        return e


CAUSE_OF_CLASS = {
    "nan": ("nan",), "posinf": ("posinf",), "neginf": ("neginf",), "high": ("above_range",),
    "low": ("below_range",), "so_high": ("above_range",), "so_low": ("below_range",), "rounded": ("rounded",),
    "exact": (),
}


def reference_report(values: np.ndarray, chain: Chain) -> dict[str, Any]:
    """The report fields the tests compare: outcome counts, causes (count, min, max, first
    index), errors and where."""
    flat = values.reshape(-1)
    shape = values.shape
    out = {k: 0 for k in ("exact", "rounded", "clamped", "wrapped", "scalar_mapped", "failing")}
    causes: dict[str, dict[str, Any]] = {}
    max_abs, i_abs, max_rel, i_rel = 0.0, None, 0.0, None
    zero_rel = None

    def note(cause: str, i: int, x: float) -> None:
        c = causes.setdefault(cause, {"count": 0, "min": None, "max": None, "first_index": None})
        c["count"] += 1
        if c["first_index"] is None:
            c["first_index"] = [int(v) for v in np.unravel_index(i, shape)]
        if not math.isnan(x):
            c["min"] = x if c["min"] is None or x < c["min"] else c["min"]
            c["max"] = x if c["max"] is None or x > c["max"] else c["max"]

    for i, xr in enumerate(flat):
        e = chain.element(xr)
        x = float(xr)
        out["scalar_mapped" if e.outcome == "mapped" else e.outcome] += 1
        if e.cls == "mapped":
            note("mapped", i, x)
            if math.isnan(x):
                note("nan", i, x)
            elif math.isinf(x):
                note("posinf" if x > 0 else "neginf", i, x)
        for cause in CAUSE_OF_CLASS.get(e.cls, ()):
            note(cause, i, x)
        if e.cls in ("high", "low") and chain.oor == "clamp":
            note("clamped", i, x)
        if e.cls in ("high", "low") and chain.oor == "wrap":
            note("wrapped", i, x)
        if e.fail:
            note("failing", i, x)
        if e.collision:
            note("sentinel_collision", i, x)
        if e.kind:
            note("kind_changed", i, x)
        if e.err is not None and e.err > max_abs:
            max_abs, i_abs = e.err, i
        # the largest rel error: an original 0 read back non-zero (truly infinite) ranks
        # above any quotient, even one that overflows float64 (a subnormal original: a
        # finite error, reported as inf); among equal values the first index
        if e.rel_of_zero:
            if zero_rel is None:
                zero_rel = i
        elif e.rel is not None and e.rel > max_rel:
            max_rel, i_rel = e.rel, i

    def where(i: int | None) -> list[int] | None:
        return None if i is None else [int(v) for v in np.unravel_index(i, shape)]

    return {**out, "causes": causes, "max_abs_error": max_abs, "max_abs_error_index": where(i_abs),
            "max_rel_error": INF if zero_rel is not None else max_rel,
            "max_rel_error_index": where(zero_rel if zero_rel is not None else i_rel)}


def passes(x: Any, chain: Chain) -> bool:
    """Does ``x`` encode without clamping, wrapping or failing (scalar_map left out)?"""
    v = val(x)
    if isinstance(v, float):
        return False
    t = chain.t_of(v)
    if isinstance(t, float):
        return False
    st, _ = chain.cast(t, [], fmt_of(chain.dst), chain.rounding, chain.oor)
    return st in ("exact", "rounded")
