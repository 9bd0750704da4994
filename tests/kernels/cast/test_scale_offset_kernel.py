"""scale_offset kernels vs an exact reference (Fractions, one rounding per IEEE operation)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy.casting import scale_offset_decode, scale_offset_encode
from zarrcy.errors import CastError, MetadataError, OutOfRangeError

import cast_reference as _c

SO_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "int4", "uint4",
            "float16", "float32", "float64", "bfloat16", "float8_e4m3", "float8_e5m2"]


def _rf(ref, f, name):
    """one IEEE operation result: exact value -> nearest-even in `name` (overflow -> inf)."""
    if f == 0:
        return Fraction(0)
    r = ref._round_float(f, name, "nearest-even")
    if abs(r) > ref.max_finite(name):
        return math.inf if r > 0 else -math.inf
    return r


def ref_so(ref, x, o, s, name, direction):
    """None for failure, else the exact result (Fraction / int / nan / inf)."""
    if name in _c.INT_TYPES:
        lo, hi, _ = _c.INT_TYPES[name]
        if direction == "encode":
            t = x - o
            if not lo <= t <= hi:
                return None
            t = t * s
        else:
            if x % s:
                return None
            t = x // s
            if not lo <= t <= hi:
                return None
            t = t + o
        return t if lo <= t <= hi else None
    if isinstance(x, float):  # nan/inf propagate (IEEE)
        with np.errstate(all="ignore"):
            r = (x - float(o)) * float(s) if direction == "encode" else x / float(s) + float(o)
        return r
    if direction == "encode":
        t = _rf(ref, x - o, name)
        if isinstance(t, float):
            return None
        t = _rf(ref, t * s, name)
    else:
        t = _rf(ref, x / s, name)
        if isinstance(t, float):
            return None
        t = _rf(ref, t + o, name)
    return None if isinstance(t, float) else t


def _exact(v, name):
    if name in _c.INT_TYPES:
        return int(np.asarray(v).astype(np.int64 if _c.INT_TYPES[name][0] < 0 else np.uint64))
    with np.errstate(invalid="ignore"):
        f = float(np.asarray(v).astype(np.float64))
    return f if not math.isfinite(f) else Fraction(f)


def _check(ref, arr, o, s, name, direction):
    fn = scale_offset_encode if direction == "encode" else scale_offset_decode
    oj = o if name in _c.INT_TYPES else float(o)
    sj = s if name in _c.INT_TYPES else float(s)
    xs = [_exact(v, name) for v in arr]
    exp = [ref_so(ref, x, o, s, name, direction) for x in xs]
    fails = [i for i, e in enumerate(exp) if e is None]
    if fails:
        with pytest.raises(CastError) as ei:
            fn(arr, oj, sj)
        assert ei.value.index == fails[0]
        keep = np.array([e is not None for e in exp])
        arr = np.ascontiguousarray(arr[keep])
        exp = [e for e in exp if e is not None]
    out = fn(arr, oj, sj)
    assert out.dtype == arr.dtype
    for g, e in zip(out, exp):
        gv = _exact(g, name)
        if isinstance(e, float) and math.isnan(e):
            assert isinstance(gv, float) and math.isnan(gv)
        else:
            assert gv == e, (g, e)


@st.composite
def _case(draw):
    name = draw(st.sampled_from(SO_TYPES))
    dt = _c.np_dtype(name)
    n = draw(st.integers(0, 30))
    if name in _c.INT_TYPES:
        lo, hi, _ = _c.INT_TYPES[name]
        vals = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
        arr = np.array(vals, dtype=np.int64 if lo < 0 else np.uint64).astype(dt)
        o = draw(st.sampled_from([0, lo, hi, 1, -1 if lo < 0 else 2, 3]))
        s = draw(st.sampled_from([1, 2, 3, hi, -1 if lo < 0 else 5, lo if lo < 0 else 7]))
        s = s or 1
    else:
        raw = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
        arr = np.frombuffer(raw, dtype=dt).copy()
        o_ = draw(st.sampled_from([0.0, -10.0, 1.5, 1e30, -3.25, 0.1]))
        s_ = draw(st.sampled_from([1.0, 0.1, 10.0, -2.0, 1e-30, 3.0]))
        with np.errstate(all="ignore"):
            of = float(np.float64(o_).astype(dt).astype(np.float64))
            sf = float(np.float64(s_).astype(dt).astype(np.float64))
        if not math.isfinite(of) or not math.isfinite(sf) or sf == 0:
            of, sf = 0.0, 1.0
        o, s = Fraction(of), Fraction(sf)
    direction = draw(st.sampled_from(["encode", "decode"]))
    return name, arr, o, s, direction


@settings(max_examples=400, deadline=None)
@given(_case())
def test_random(ref, case):
    name, arr, o, s, direction = case
    _check(ref, arr, o, s, name, direction)


def test_integer_rules():
    # every intermediate must fit: 127 - (-1) = 128 overflows int8 although the result would fit
    with pytest.raises(OutOfRangeError) as ei:
        scale_offset_encode(np.array([0, 127], np.int8), -1, -1)
    assert ei.value.index == 1
    # decode with a remainder is an error
    with pytest.raises(CastError) as ei:
        scale_offset_decode(np.array([4, 5], np.int16), 0, 2)
    assert ei.value.index == 1 and not isinstance(ei.value, OutOfRangeError)
    # native int64 / uint64 (no object arrays): extremes
    x = np.array([2**63 - 1, -(2**63)], dtype=np.int64)
    assert scale_offset_encode(x[:1], 1, 1)[0] == 2**63 - 2
    with pytest.raises(OutOfRangeError):
        scale_offset_encode(x[1:], 1, 1)
    with pytest.raises(OutOfRangeError):
        scale_offset_decode(x[1:], 0, -1)
    u = np.array([2**64 - 1, 3], dtype=np.uint64)
    with pytest.raises(OutOfRangeError) as ei:
        scale_offset_encode(u, 4, 1)
    assert ei.value.index == 1
    assert scale_offset_decode(np.array([2**64 - 2], np.uint64), 0, 2)[0] == 2**63 - 1


def test_float_rules():
    # float32 arithmetic stays in float32 (one rounding per operation)
    x = np.array([1.1, np.nan, np.inf], dtype=np.float32)
    got = scale_offset_encode(x, 0.1, 3)
    o = np.float32(0.1)
    exp = (x[0] - o) * np.float32(3)
    assert got.dtype == np.float32 and got[0] == exp and np.isnan(got[1]) and got[2] == np.inf
    # finite input overflowing to inf is an error
    with pytest.raises(OutOfRangeError) as ei:
        scale_offset_encode(np.array([1.0, 3e38], np.float32), 0, 10)
    assert ei.value.index == 1
    with pytest.raises(OutOfRangeError):
        scale_offset_decode(np.array([1e300]), 0, 1e-10)


@pytest.mark.parametrize("offset,scale,dtype", [
    (0, 0, "float64"), (0, 0.0, "float32"), (0, "0x0000", "float16"), (0, 0, "int8"),
    (128, 1, "int8"), (-1, 1, "uint8"), (0.5, 1, "int32"), (1.0, 1, "int16"), ("NaN", 1, "float64"),
    (0, "Infinity", "float32"), (1e39, 1, "float32"),
])
def test_bad_parameters(offset, scale, dtype):
    with pytest.raises(MetadataError):
        scale_offset_encode(np.zeros(2, dtype), offset, scale)
