"""Fused scale_offset -> cast_value is bit-identical to the two codecs in turn (encode and decode)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.cast_value import CastValueCodec, ScalarMap
from zarrcy.codecs.scale_offset import ScaleOffsetCastCodec, ScaleOffsetCodec, fuse_pairs


import cast_reference as _c
from fused_check import check_encode

TARGETS = ["uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float16", "int4"]


def _data(rng, dtype, n):
    x = rng.normal(0, 300, n)
    k = rng.integers(0, n, n // 20 + 1)
    x[k] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.5, 255.5, -10.0, 2540.0, 1e300], k.size)
    x[rng.integers(0, n, n // 10 + 1)] = np.round(x[:n // 10 + 1]) + 0.5   # exact halves
    with np.errstate(over="ignore"):
        return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mode", _c.MODES)
@pytest.mark.parametrize("oor", [None, "clamp", "wrap"])
def test_fused_equals_sequential(dtype, mode, oor):
    rng = np.random.default_rng(hash((dtype, mode, oor)) & 0xFFFF)
    maps = [None, [["NaN", 0]], [["NaN", 0], ["Infinity", 1], ["-Infinity", 2], [0.5, 3]]]
    for target in TARGETS:
        if oor == "wrap" and target in ("float32", "float16"):
            continue
        for sm in maps:
            dec = [[0, "NaN"]] if target not in ("float32", "float16") else None
            cv = CastValueCodec(target, mode, oor, ScalarMap(tuple(map(tuple, sm)) if sm else None,
                                                             tuple(map(tuple, dec)) if dec else None))
            so = ScaleOffsetCodec(-10, 0.1)
            x = _data(rng, dtype, 3000)
            check_encode(x, so, cv)
            # clean data too (the common success path)
            y = np.abs(rng.normal(100, 50, 3000)).astype(dtype)
            check_encode(y, so, cv)


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=8, max_size=8 * 64), st.sampled_from(_c.MODES), st.sampled_from([None, "clamp", "wrap"]),
       st.sampled_from(["uint8", "int16", "int64", "uint32"]), st.sampled_from([(0, 1), (-10, 0.1), (1e300, 1e-300), (3.5, -7)]))
def test_fused_random_bits(raw, mode, oor, target, os_):
    x = np.frombuffer(raw[: len(raw) // 8 * 8], dtype=np.float64).copy()
    check_encode(x, ScaleOffsetCodec(*os_), CastValueCodec(target, mode, oor, ScalarMap((("NaN", 0),), ((0, "NaN"),))))


def test_fuse_pairs_hook():
    so, cv = ScaleOffsetCodec(-10, 0.1), CastValueCodec("uint8")
    spec = ArraySpec((4,), np.dtype("float64"), np.float64(0))
    pairs = fuse_pairs([so, cv, so], [spec, spec, spec])
    assert len(pairs) == 2 and isinstance(pairs[0][0], ScaleOffsetCastCodec) and pairs[1][0] is so


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=4, max_size=4 * 300), st.sampled_from(_c.MODES), st.sampled_from([None, "clamp", "wrap"]),
       st.sampled_from(["uint8", "int8", "int16", "uint16", "int32", "uint32", "int64"]),
       st.sampled_from([(0, 1), (-10, 0.1), (-2.5, 50), (1e30, 1e-30), (3.5, -7), (0, 3e38)]),
       st.sampled_from([(("NaN", 0),), None]))
def test_fused_random_bits_float32(raw, mode, oor, target, os_, sm):
    """float32 sources take the one-pass path too (float32 arithmetic, exact widening, the
    RNE loop): bit-identical to the codecs in turn, including overflow to Inf and NaN."""
    x = np.frombuffer(raw[: len(raw) // 4 * 4], dtype=np.float32).copy()
    check_encode(x, ScaleOffsetCodec(*os_), CastValueCodec(target, mode, oor, ScalarMap(sm, None)))


@pytest.mark.parametrize("target", ["uint8", "int8", "int16", "uint16", "int32", "uint32"])
@pytest.mark.parametrize("oor", [None, "clamp"])
def test_fused_float32_fast_path_blocks(target, oor):
    """Long clean runs (whole 1024-element blocks on the fast loop) with rare bad values
    that force single blocks onto the two-step path; every half-way value rounds to even."""
    rng = np.random.default_rng(7)
    info = np.iinfo(target)
    x = rng.uniform(float(info.min) / 60, float(info.max) / 60, 50_000).astype(np.float32)
    x[::97] = np.round(x[::97]) + np.float32(0.5)
    if oor == "clamp":
        x[12345] = np.float32(1e30)
        x[40000] = np.float32(-np.inf)
    x[30000] = np.nan
    check_encode(x, ScaleOffsetCodec(-1.5, 50), CastValueCodec(target, "nearest-even", oor, ScalarMap(encode=(("NaN", 0),))))
