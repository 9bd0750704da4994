"""cast_value to and from the remaining low-precision floats (float8_e3m4, the fnuz types,
float8_e8m0fnu, float6_e2m3fn / float6_e3m2fn, float8_e4m3fn) against a slow exact
reference written from the type specs and ext-codec-cast_value.md: every value of each
type as a source, every grid point / midpoint / edge as float64 input, every rounding
mode and out_of_range rule, plus hypothesis over random doubles.

Rules beyond IEEE's (ext-codec-cast_value.md "Special values" and "out_of_range"):

* no infinity (fnuz, e8m0fnu, float6): +-Infinity fails (even with ``clamp``), as it does for
  float4_e2m1fn; NaN goes to the type's one NaN where it has one, else fails.
* fnuz has no negative zero: -0.0 and negative values rounding to zero give +0 (exact in
  value: "Exact representability ... refers to numerical value only").
* float8_e8m0fnu holds the powers of two 2^-127 .. 2^127 (no sign, no zero): zero and
  negative values are out of range (``clamp``: 2^-127); a positive value below 2^-127 rounds
  to it in the nearest modes and towards-positive and is out of range towards zero /
  negative; with no mantissa bits a tie goes to the larger value (the significand 1 is odd,
  as LLVM APFloat and ml_dtypes round).
* float8_e4m3fn: 0x7f is NaN, the largest finite value 448; rounding into the NaN slot (480)
  is out of range (``clamp``: 448).
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cast_reference as _c
from zarrcy.codecs.cast_value import cast_array, classify_array, parse_scalar, scalar_to_json
from zarrcy.errors import CastError, MetadataError, OutOfRangeError

STATUS = {0: "exact", 1: "rounded", 2: "clamped", 3: "wrapped", 5: "fail_nonfinite", 6: "fail_range"}
# name: (exponent bits, mantissa bits, bias, kind) -- from each type's spec
LOWP = {
    "float8_e3m4": (3, 4, 3, "ieee"),
    "float8_e4m3fnuz": (4, 3, 8, "fnuz"),
    "float8_e5m2fnuz": (5, 2, 16, "fnuz"),
    "float8_e4m3b11fnuz": (4, 3, 11, "fnuz"),
    "float8_e8m0fnu": (8, 0, 127, "e8m0"),
    "float6_e2m3fn": (2, 3, 1, "finite"),
    "float6_e3m2fn": (3, 2, 3, "finite"),
    "float8_e4m3fn": (4, 3, 7, "fn"),
}
MODES = _c.MODES


def _limits(name: str) -> tuple[int, int, int, Fraction, Fraction]:
    """(p, emin, emax, smallest positive, largest finite)."""
    E, M, bias, kind = LOWP[name]
    top = (1 << E) - 1
    if kind == "e8m0":
        return 1, -bias, top - 1 - bias, Fraction(2) ** -bias, Fraction(2) ** (top - 1 - bias)
    emax = (top - 1 if kind == "ieee" else top) - bias
    frac_max = (1 << M) - (2 if kind == "fn" else 1)
    big = Fraction(2) ** emax * (1 + Fraction(frac_max, 1 << M))
    return M + 1, 1 - bias, emax, Fraction(2) ** (1 - bias - M), big


def _round_grid(f: Fraction, name: str, mode: str) -> Fraction:
    """Round f (non-zero) on the type's grid with an unbounded exponent (e8m0fnu: no
    subnormals)."""
    p, emin, _, _, _ = _limits(name)
    return _c.round_on_grid(f, p, None if LOWP[name][3] == "e8m0" else emin, mode)


def ref_to_lowp(v, name: str, mode: str, oor: str | None):
    """(status, value) for one exact input (cast_reference's encoding) into ``name``."""
    kind = LOWP[name][3]
    p, emin, emax, tiny, big = _limits(name)
    if v == _c.NAN:
        return ("exact", _c.NAN) if kind != "finite" else ("fail_nonfinite", None)
    if isinstance(v, float):  # +-inf
        return ("exact", v) if kind == "ieee" else ("fail_nonfinite", None)
    f, negz = v
    lowest = tiny if kind == "e8m0" else -big

    def out_of_range(below: bool):
        if oor != "clamp":
            return "fail_range", None
        if kind == "ieee":
            return "clamped", -math.inf if below else math.inf
        return "clamped", ((tiny if kind == "e8m0" else -big) if below else big, False)

    if kind == "e8m0":
        if f <= 0:
            return out_of_range(True)
        if f < tiny:
            if mode in ("towards-zero", "towards-negative"):
                return out_of_range(True)
            return "rounded", (tiny, False)
    if f == 0:
        return "exact", (Fraction(0), negz and kind != "fnuz")
    r = _round_grid(f, name, mode)
    st_ = "exact" if r == f else "rounded"
    if r > big or r < lowest:
        return out_of_range(r < 0)
    return st_, (r, r == 0 and f < 0 and kind != "fnuz")


def _matches(got, exp, name: str) -> bool:
    with np.errstate(invalid="ignore"):
        g = float(np.asarray(got).astype(np.float64))
    if exp == _c.NAN:
        return math.isnan(g)
    if isinstance(exp, float):
        return g == exp
    f, negz = exp
    if math.isnan(g) or math.isinf(g):
        return False
    return Fraction(g) == f and (f != 0 or (math.copysign(1.0, g) < 0) == negz)


def _dtype(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)


def _check(arr: np.ndarray, dst: str, mode: str, oor: str | None) -> None:
    exact = _c.as_exact_array(arr) if arr.dtype.name in _c.FLOAT_TYPES or arr.dtype.name in _c.INT_TYPES \
        else _as_exact(arr)
    if dst in LOWP:
        exp = [ref_to_lowp(v, dst, mode, oor) for v in exact]
        match = lambda g, e: _matches(g, e, dst)  # noqa: E731
    else:
        exp = [_c.ref_cast(v, dst, mode, oor) for v in exact]
        match = lambda g, e: _c.result_matches(g, e, dst)  # noqa: E731
    out, status = classify_array(arr, dst, mode, oor)
    for i, (s, v) in enumerate(exp):
        assert STATUS[int(status[i])] == s, (i, arr[i], dst, mode, oor, s, status[i])
        if not s.startswith("fail"):
            assert match(out[i], v), (i, arr[i], dst, mode, oor, out[i], v)
    ok = np.array([not s.startswith("fail") for s, _ in exp], dtype=bool)
    good = np.ascontiguousarray(arr[ok])
    res = cast_array(good, dst, mode, oor)
    for i, (s, v) in enumerate(e for e in exp if not e[0].startswith("fail")):
        assert match(res[i], v), (i, good[i], dst, mode, oor, res[i], v)
    if not ok.all():
        first = int(np.flatnonzero(~ok)[0])
        with pytest.raises(CastError) as ei:
            cast_array(arr, dst, mode, oor)
        assert ei.value.index == first
        assert isinstance(ei.value, OutOfRangeError) == (exp[first][0] == "fail_range")


def _as_exact(arr: np.ndarray) -> list:
    """Exact values of a low-precision float array (via float64, exact for all of them)."""
    with np.errstate(invalid="ignore"):
        f64 = arr.reshape(-1).astype(np.float64)
    out: list = []
    for f in f64.tolist():
        if math.isnan(f):
            out.append(_c.NAN)
        elif math.isinf(f):
            out.append(f)
        else:
            out.append((Fraction(f), f == 0 and math.copysign(1.0, f) < 0))
    return out


def _all_values(name: str) -> np.ndarray:
    nbits = 6 if name.startswith("float6") else 8
    return np.arange(1 << nbits, dtype=np.uint8).view(_dtype(name))


def _edges(name: str) -> np.ndarray:
    """float64 inputs: every grid point, midpoints and their neighbours, beyond the range,
    below the smallest value, zeros, NaN and infinities."""
    vals = _as_exact(_all_values(name))
    grid = sorted({v[0] for v in vals if isinstance(v, tuple) and v[0] >= 0})
    _, _, _, tiny, big = _limits(name)
    pts = set(grid)
    ext = grid + [big * 2, big * 4]
    for a, b in zip(ext, ext[1:]):
        m = (a + b) / 2
        pts |= {m, m + (b - a) / 64, m - (b - a) / 64}
    pts |= {tiny / 2, tiny / 3, tiny * 3 / 4, big * 1024, Fraction(1, 2**1100)}
    xs = [float(x) for x in pts] + [-float(x) for x in pts]
    xs += [0.0, -0.0, math.nan, math.inf, -math.inf, 1e300, -1e300]
    return np.array(xs, dtype=np.float64)


@pytest.mark.parametrize("name", list(LOWP))
def test_float64_into_every_mode(name):
    x = _edges(name)
    for mode in MODES:
        for oor in (None, "clamp"):
            _check(x, name, mode, oor)


@pytest.mark.parametrize("name", list(LOWP))
def test_every_value_out_to_every_type(name):
    """Each value of the type as a source, into every type the codec knows."""
    x = _all_values(name)
    targets = list(_c.ALL_TYPES) + list(LOWP)
    for dst in targets:
        for mode in ("nearest-even", "towards-zero", "nearest-away"):
            for oor in (None, "clamp", "wrap"):
                if oor == "wrap" and (dst in _c.FLOAT_TYPES or dst in LOWP):
                    continue
                _check(x, dst, mode, oor)


@pytest.mark.parametrize("name", list(LOWP))
def test_round_trip_exact(name):
    """Every value survives float64 / float32 and back (NaN to the type's NaN)."""
    x = _all_values(name)
    for mid in ("float64", "float32"):
        back = cast_array(cast_array(x, mid), name)
        a = x.astype(np.float64)
        b = back.astype(np.float64)
        assert np.array_equal(a, b, equal_nan=True)
        kind = LOWP[name][3]
        if kind == "fnuz" or kind == "e8m0":  # one NaN and (fnuz) no -0: bits identical too
            assert back.view(np.uint8).tolist() == x.view(np.uint8).tolist()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(list(LOWP)), st.sampled_from(MODES), st.sampled_from([None, "clamp"]),
       st.lists(st.floats(width=64), min_size=1, max_size=30), st.sampled_from([1.0, 2.0**-120, 2.0**-10, 2.0**100]))
def test_random_doubles(name, mode, oor, xs, scale):
    with np.errstate(over="ignore", invalid="ignore"):
        _check(np.array(xs, dtype=np.float64) * scale, name, mode, oor)


def test_scalars_in_fill_value_encoding():
    """scalar_map / fill-value scalars of the new types: the types' own NaN rules."""
    assert parse_scalar("NaN", "float8_e4m3fnuz", "v").view(np.uint8) == 0x80
    assert parse_scalar(-0.0, "float8_e4m3fnuz", "v").view(np.uint8) == 0x00
    assert parse_scalar("NaN", "float8_e8m0fnu", "v").view(np.uint8) == 0xFF
    assert parse_scalar(3, "float8_e8m0fnu", "v").view(np.uint8) == 0x81  # a tie goes up
    assert parse_scalar(1e-45, "float8_e8m0fnu", "v").view(np.uint8) == 0x00
    assert parse_scalar(464, "float8_e4m3fn", "v").view(np.uint8) == 0x7E
    assert parse_scalar(7.5, "float6_e2m3fn", "v").view(np.uint8) == 0x1F
    for bad, name in [("Infinity", "float8_e4m3fnuz"), ("-Infinity", "float8_e8m0fnu"), ("NaN", "float6_e3m2fn"),
                      (0, "float8_e8m0fnu"), (-2, "float8_e8m0fnu"), (30, "float6_e3m2fn"), (480, "float8_e4m3fn"),
                      (math.inf, "float8_e5m2fnuz")]:
        with pytest.raises(MetadataError):
            parse_scalar(bad, name, "v")
    assert scalar_to_json(np.array(0x80, np.uint8).view(ml_dtypes.float8_e5m2fnuz), "float8_e5m2fnuz") == "NaN"
    # a scalar_map from NaN / Inf into a type without them
    x = np.array([1.0, np.nan, np.inf])
    assert cast_array(x, "float6_e2m3fn", scalar_map=[["NaN", 0], ["Infinity", 7.5]]).astype(float).tolist() == [1, 0, 7.5]


@pytest.mark.parametrize("name,fill", [("float8_e4m3fnuz", "NaN"), ("float8_e3m4", "NaN"), ("float6_e3m2fn", 0.0),
                                       ("float8_e8m0fnu", "NaN"), ("float8_e4m3b11fnuz", "NaN")])
def test_codec_chain_through_an_array(name, fill):
    """scale_offset -> cast_value into each type as array filters (the fused path) stores
    and reads what the composed public functions give."""
    import zarrcy

    x = np.linspace(-300, 300, 97).astype(np.float32)
    x[5] = np.nan
    sm = [["NaN", 0]] if name.startswith("float6") else None
    cv = {"name": "cast_value", "configuration": {"data_type": name, "out_of_range": "clamp"}}
    if sm:
        cv["configuration"]["scalar_map"] = {"encode": sm}
    a = zarrcy.create_array(f"memory://lowp-{name}", shape=x.shape, chunks=(40,), dtype="float32", fill_value=fill,
                            filters=[{"name": "scale_offset", "configuration": {"offset": 0, "scale": 0.1}}, cv],
                            serializer={"name": "bytes"}, compressors=None, overwrite=True)
    a[...] = x
    enc = zarrcy.cast_value(zarrcy.scale_offset_encode(x, offset=0, scale=0.1), name, out_of_range="clamp", scalar_map=sm)
    expect = zarrcy.scale_offset_decode(zarrcy.cast_value(enc, "float32"), offset=0, scale=0.1)
    assert np.array_equal(a[...], expect, equal_nan=True)
    assert np.array_equal(a[10:60:7], expect[10:60:7], equal_nan=True)
