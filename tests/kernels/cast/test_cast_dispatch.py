"""The dispatched C loops of the cast kernel (float64 -> int nearest-even block loop, plain and
fused with scale_offset; integer narrowing with wrap): block boundaries, flags at the first and
last element, both builds (AVX2 and baseline) bit-identical, compared with the generic caster
(itself checked against the Fraction reference in test_cast_kernel.py) and with the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy._kernels import _cast_fast as _cast
from zarrcy.codecs.cast_value import ST_FAIL_NONFINITE, CastValueCodec, ScalarMap, cast_array, classify_array
from zarrcy.codecs.scale_offset import ScaleOffsetCodec
from zarrcy.errors import CastError, OutOfRangeError

import cast_reference as _c
from fused_check import check_encode

BLOCK = 1024   # the kernel's block length (_cast_types.pxd BLOCK)
TARGETS = ["int8", "uint8", "int16", "uint16", "int32", "uint32"]
SIZES = [1, 2, 7, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 3]
ISAS = ["auto", "baseline"]


@pytest.fixture(params=ISAS)
def isa(request):
    _cast.dispatch_isa(request.param)
    yield request.param
    _cast.dispatch_isa("auto")


def _base(dst: str, n: int, seed: int) -> np.ndarray:
    lo, hi, _ = _c.INT_TYPES[dst]
    rng = np.random.default_rng(seed)
    x = rng.uniform(lo - 0.49, hi + 0.49, n)
    x[::5] = np.floor(x[::5]) + 0.5           # ties
    x[1::7] = -0.0
    return x


def _positions(n: int) -> list[int]:
    return sorted({p for p in (0, n - 1, BLOCK - 1, BLOCK, n // 2) if 0 <= p < n})


def _specials(dst: str) -> list[float]:
    lo, hi, _ = _c.INT_TYPES[dst]
    return [np.nan, np.inf, -np.inf, hi + 0.75, lo - 0.75, hi + 0.5, lo - 0.5, 1e300, -1e300]


def _expect(x, dst, oor, smap):
    """(result, first failing index or None, failure is out-of-range) from the generic caster."""
    out, status = classify_array(x, dst, "nearest-even", oor, smap)
    bad = np.flatnonzero(status >= ST_FAIL_NONFINITE)
    if bad.size:
        return None, int(bad[0]), int(status[bad[0]]) == 6
    return out, None, False


def _check_plain(x, dst, oor, smap):
    exp, first, rng_err = _expect(x, dst, oor, smap)
    if first is None:
        got = cast_array(x, dst, "nearest-even", oor, smap)
        assert got.tobytes() == exp.tobytes()
    else:
        with pytest.raises(CastError) as ei:
            cast_array(x, dst, "nearest-even", oor, smap)
        assert ei.value.index == first
        assert isinstance(ei.value, OutOfRangeError) == rng_err


@pytest.mark.parametrize("dst", TARGETS)
@pytest.mark.parametrize("oor", [None, "clamp"])
@pytest.mark.parametrize("key", [False, True])
def test_rne_block_boundaries_and_flags(isa, dst, oor, key):
    smap = [["NaN", 7]] if key else None
    for n in SIZES:
        x = _base(dst, n, n)
        _check_plain(x, dst, oor, smap)            # clean blocks
        for p in _positions(n):
            for v in _specials(dst):
                y = x.copy()
                y[p] = v
                _check_plain(y, dst, oor, smap)


def test_rne_against_fraction_reference(isa):
    # small arrays straight against the exact reference, specials at both ends
    for dst in TARGETS:
        lo, hi, _ = _c.INT_TYPES[dst]
        x = np.array([np.nan, lo - 0.5, lo - 0.5000001, hi + 0.5, hi + 0.4999999, -0.0, 2.5, -3.5, 0.5, hi + 0.5],
                     dtype=np.float64)
        for oor in ("clamp", None):
            exp = [_c.ref_cast(v, dst, "nearest-even", oor) for v in _c.as_exact_array(x)]
            ok = np.array([i == 0 or not s.startswith("fail") for i, (s, _) in enumerate(exp)])
            got = cast_array(np.ascontiguousarray(x[ok]), dst, "nearest-even", oor, [["NaN", 3]])
            assert int(got[0]) == 3                      # NaN at index 0 takes the key's value
            for g, (s, v) in zip(got[1:], [e for i, e in enumerate(exp) if ok[i] and i > 0]):
                assert _c.result_matches(g, v, dst), (dst, oor, g, v)
            if not ok.all():
                with pytest.raises(OutOfRangeError) as ei:
                    cast_array(x, dst, "nearest-even", oor, [["NaN", 3]])
                assert ei.value.index == int(np.flatnonzero(~ok)[0])


def test_builds_bit_identical_on_random_bits():
    rng = np.random.default_rng(5)
    x = rng.normal(0, 3e4, 3 * BLOCK + 5)
    x[rng.integers(0, x.size, 40)] = np.nan
    try:
        for dst in TARGETS:
            for oor in ("clamp", "wrap"):
                res = {}
                for mode in ISAS:
                    _cast.dispatch_isa(mode)
                    res[mode] = cast_array(x, dst, "nearest-even", oor, [["NaN", 1]]).tobytes()
                assert res["auto"] == res["baseline"]
    finally:
        _cast.dispatch_isa("auto")


def test_dispatch_isa_values():
    assert _cast.dispatch_isa() in ("avx2", "baseline")
    try:
        assert _cast.dispatch_isa("baseline") == "baseline"
    finally:
        _cast.dispatch_isa("auto")
    with pytest.raises(ValueError):
        _cast.dispatch_isa("sse9")


# ---- fused scale_offset -> cast_value (one-pass C loop per block, two-step path for flagged blocks)

@pytest.mark.parametrize("dst", TARGETS)
@pytest.mark.parametrize("oor", [None, "clamp"])
@pytest.mark.parametrize("key", [False, True])
def test_fused_block_boundaries_and_flags(isa, dst, oor, key):
    lo, hi, _ = _c.INT_TYPES[dst]
    so = ScaleOffsetCodec(-10, 0.5)                     # t = (x + 10) * 0.5
    smap = (("NaN", 5),) if key else None
    cv = CastValueCodec(dst, "nearest-even", oor, ScalarMap(smap, ((5, "NaN"),) if key else None))
    for n in SIZES:
        x = _base(dst, n, n + 1) * 2 - 10               # t spans the target range
        check_encode(x, so, cv, decode=False)
        for p in _positions(n):
            for v in [np.nan, np.inf, 1.7e308, -1.7e308, (hi + 0.75) * 2 - 10, (lo - 0.75) * 2 - 10,
                      (hi + 0.5) * 2 - 10]:
                y = x.copy()
                y[p] = v
                check_encode(y, so, cv, decode=False)


def test_fused_scale_overflow_at_block_edges(isa):
    # (x - o) * s overflows for a finite x: scale_offset's error, whichever block it is in
    so = ScaleOffsetCodec(0, 1e300)
    cv = CastValueCodec("uint8", "nearest-even", "clamp", ScalarMap(encode=(("NaN", 0),)))
    for n in (1, BLOCK, BLOCK + 1, 3 * BLOCK):
        x = np.zeros(n)
        for p in _positions(n):
            y = x.copy()
            y[p] = 1e10
            check_encode(y, so, cv, decode=False)
            y[0] = np.nan
            check_encode(y, so, cv, decode=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 0.5, 1.5, 254.5, 255.5, 256.0, -0.5, -0.75, np.nan, np.inf, -np.inf,
                                 1e300, 3.25, 127.5, -128.5]), min_size=1, max_size=40),
       st.integers(0, 2 * BLOCK), st.sampled_from(TARGETS), st.sampled_from([None, "clamp"]), st.booleans())
def test_fused_and_plain_random_placement(vals, start, dst, oor, key):
    n = 2 * BLOCK + 50
    x = np.full(n, 1.0)
    x[start:start + len(vals)] = vals[: n - start]
    smap = [["NaN", 2]] if key else None
    _check_plain(x, dst, oor, smap)
    cv = CastValueCodec(dst, "nearest-even", oor, ScalarMap((("NaN", 2),) if key else None, None))
    check_encode(x, ScaleOffsetCodec(0, 1), cv, decode=False)


# ---- integer narrowing with wrap (dispatched C loop)

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


@pytest.mark.parametrize("src", INTS)
@pytest.mark.parametrize("dst", INTS)
def test_int_wrap_every_pair(isa, src, dst):
    rng = np.random.default_rng(3)
    info = np.iinfo(src)
    for n in (1, BLOCK - 1, BLOCK + 1):
        x = rng.integers(info.min, info.max, n, dtype=src, endpoint=True)
        x[0] = info.min
        x[-1] = info.max
        got = cast_array(x, dst, "nearest-even", "wrap")
        exp = x.astype(dst)          # numpy integer conversion is modulo 2^N
        assert got.tobytes() == exp.tobytes()
    sm = [int(info.min), int(info.max), 0, 1, -1 if info.min < 0 else 2]
    exp_ref = [_c.ref_cast(v, dst, "nearest-even", "wrap")[1] for v in _c.as_exact_array(np.array(sm, dtype=src))]
    got = cast_array(np.array(sm, dtype=src), dst, "nearest-even", "wrap")
    assert [int(g) for g in got] == exp_ref


def test_dispatch_isa_reaches_every_module():
    """Each cast module with dispatched loops keeps its own state; dispatch_isa sets them all."""
    try:
        _cast.dispatch_isa("baseline")
        assert set(_cast._isa_by_module().values()) == {"baseline"}
    finally:
        _cast.dispatch_isa("auto")
    assert set(_cast._isa_by_module().values()) == {_cast.dispatch_isa()}
