"""cast_value kernel vs the exact Fraction reference: every type pair, every mode, edge cases + hypothesis."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zarrcy.codecs.cast_value import ST_FAIL_NONFINITE, cast_array, classify_array
from zarrcy.errors import CastError, OutOfRangeError

import cast_reference as _c

STATUS = {0: "exact", 1: "rounded", 2: "clamped", 3: "wrapped", 5: "fail_nonfinite", 6: "fail_range"}


def _check(ref, arr, dst, mode, oor):
    exp = [ref.ref_cast(v, dst, mode, oor) for v in ref.as_exact_array(arr)]
    # generic classifier: every element's status and value
    out, status = classify_array(arr, dst, mode, oor)
    for i, (s, v) in enumerate(exp):
        assert STATUS[int(status[i])] == s, (i, arr[i], dst, mode, oor, s, status[i])
        if not s.startswith("fail"):
            assert ref.result_matches(out[i], v, dst), (i, arr[i], dst, mode, oor, out[i], v)
    # fast path on the elements that succeed
    ok = np.array([not s.startswith("fail") for s, _ in exp], dtype=bool)
    good = np.ascontiguousarray(arr[ok])
    res = cast_array(good, dst, mode, oor)
    exp_ok = [v for (s, v) in exp if not s.startswith("fail")]
    for i, v in enumerate(exp_ok):
        assert ref.result_matches(res[i], v, dst), (i, good[i], dst, mode, oor, res[i], v)
    # and the error names the first failing element
    if not ok.all():
        first = int(np.flatnonzero(~ok)[0])
        kind = exp[first][0]
        with pytest.raises(CastError) as ei:
            cast_array(arr, dst, mode, oor)
        assert ei.value.index == first
        assert isinstance(ei.value, OutOfRangeError) == (kind == "fail_range")


@pytest.mark.parametrize("src", _c.ALL_TYPES)
def test_edge_cases_every_pair_and_mode(ref, src):
    arr = ref.edge_values(src)
    for dst in _c.ALL_TYPES:
        for mode in _c.MODES:
            for oor in (None, "clamp", "wrap"):
                if oor == "wrap" and dst in _c.FLOAT_TYPES:
                    continue
                _check(ref, arr, dst, mode, oor)


def _random_array(draw, src, n):
    dt = _c.np_dtype(src)
    nbytes = dt.itemsize
    raw = draw(st.binary(min_size=n * nbytes, max_size=n * nbytes))
    arr = np.frombuffer(raw, dtype=np.uint8).view(f"u{nbytes}") if nbytes > 1 else np.frombuffer(raw, np.uint8)
    if src in ("int4", "uint4", "int2", "uint2", "float4_e2m1fn"):
        bits = {"int4": 4, "uint4": 4, "int2": 2, "uint2": 2, "float4_e2m1fn": 4}[src]
        arr = arr & ((1 << bits) - 1)
    return np.ascontiguousarray(arr).view(dt)


@st.composite
def _case(draw):
    src = draw(st.sampled_from(_c.ALL_TYPES))
    dst = draw(st.sampled_from(_c.ALL_TYPES))
    mode = draw(st.sampled_from(_c.MODES))
    oor = draw(st.sampled_from([None, "clamp"] + (["wrap"] if dst in _c.INT_TYPES else [])))
    n = draw(st.integers(0, 40))
    arr = _random_array(draw, src, n)
    # also small-magnitude values near the target's grid: random float64 scaled
    if src in ("float64", "float32") and draw(st.booleans()):
        scale = draw(st.sampled_from([1.0, 100.0, 1e5, 3e9, 2.0**60]))
        vals = draw(st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=1, max_size=40))
        arr = (np.array(vals) * scale).astype(src)
    return src, dst, mode, oor, arr


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_random_bit_patterns(ref, case):
    src, dst, mode, oor, arr = case
    _check(ref, arr, dst, mode, oor)


def test_readonly_and_multidim_input():
    a = np.arange(12, dtype=np.float64).reshape(3, 4) * 30.3
    a.setflags(write=False)
    out = cast_array(a, "uint8", "nearest-even", "clamp")
    assert out.shape == (3, 4)
    assert out[2, 3] == 255
    with pytest.raises(OutOfRangeError) as ei:
        cast_array(a, "uint8")
    assert ei.value.index == (2, 1)   # element 9: 9 * 30.3 = 272.7 is the first above 255.5
    assert "element (2, 1)" in str(ei.value)


def test_large_blocks_fast_path_matches_generic():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 200, 5000)
    x[rng.integers(0, 5000, 50)] = np.nan
    for mode in _c.MODES:
        for oor in ("clamp", "wrap"):
            fast = cast_array(x, "uint8", mode, oor, [["NaN", 0]])
            slow, st_ = classify_array(x, "uint8", mode, oor, [["NaN", 0]])
            assert (fast == slow).all()
            assert (st_ < ST_FAIL_NONFINITE).all() or (st_ == 4).any()
        f32 = cast_array(x, "float32", mode)
        f32g, _ = classify_array(x, "float32", mode)
        assert np.array_equal(f32.view(np.uint32), f32g.view(np.uint32))


def test_named_examples():
    # spec: 128.0 into int8
    x = np.array([128.0])
    with pytest.raises(OutOfRangeError):
        cast_array(x, "int8")
    assert cast_array(x, "int8", out_of_range="clamp")[0] == 127
    assert cast_array(x, "int8", out_of_range="wrap")[0] == -128
    i = np.array([32768, 32769, -32769], dtype=np.int64)
    assert cast_array(i, "int16", out_of_range="wrap").tolist() == [-32768, -32767, 32767]
    # 2^53 + 1 into float64 per mode
    b = np.array([2**53 + 1, -(2**53) - 1], dtype=np.int64)
    assert cast_array(b, "float64", "nearest-even").tolist() == [2.0**53, -(2.0**53)]
    assert cast_array(b, "float64", "towards-positive").tolist() == [2.0**53 + 2, -(2.0**53)]
    assert cast_array(b, "float64", "nearest-away").tolist() == [2.0**53 + 2, -(2.0**53) - 2]
    # 2^24 + 1 into float32
    c = np.array([2**24 + 1], dtype=np.int32)
    assert cast_array(c, "float32", "towards-negative")[0] == 2.0**24
    assert cast_array(c, "float32", "towards-positive")[0] == 2.0**24 + 2
    # -0.0 preserved between floats, 0 for ints
    z = np.array([-0.0])
    assert math.copysign(1, cast_array(z, "float16")[0]) < 0
    assert cast_array(z, "int8")[0] == 0
    # NaN into int even with clamp/wrap is an error; mapped it is fine
    n = np.array([1.0, np.nan])
    for oor in (None, "clamp", "wrap"):
        with pytest.raises(CastError) as ei:
            cast_array(n, "uint8", out_of_range=oor)
        assert not isinstance(ei.value, OutOfRangeError) and ei.value.index == 1
    assert cast_array(n, "uint8", scalar_map=[["NaN", 255]]).tolist() == [1, 255]
    # towards-zero overflow of a float target: error, or +inf with clamp (no saturation)
    big = np.array([1e39])
    with pytest.raises(OutOfRangeError):
        cast_array(big, "float32", "towards-zero")
    assert cast_array(big, "float32", "towards-zero", "clamp")[0] == np.inf
    # wrap of large negatives into unsigned types
    assert cast_array(np.array([-1.0, -257.0, -1e19]), "uint8", out_of_range="wrap").tolist() == [255, 255, 0]
    assert cast_array(np.array([-1], np.int64), "uint64", out_of_range="wrap")[0] == 2**64 - 1
