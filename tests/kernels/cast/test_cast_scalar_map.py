"""scalar_map in the cast kernel: first occurrence wins, NaN keys match any NaN, -0.0 matches 0,
mapped values are used as is; fast block paths and the generic classifier agree with the reference."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy.codecs.cast_value import ST_MAPPED, cast_array, classify_array

import cast_reference as _c


def _ref_map(ref, arr, pairs, src, dst, mode, oor):
    keys = ref.as_exact_array(np.array([p[0] for p in pairs], dtype=np.float64).astype(_c.np_dtype(src))) if pairs else []
    out = []
    for v in ref.as_exact_array(arr):
        hit = None
        for k, (_, val) in zip(keys, pairs):
            if v == _c.NAN and k == _c.NAN:
                hit = val
                break
            if isinstance(v, tuple) and isinstance(k, tuple) and v[0] == k[0]:
                hit = val
                break
            if isinstance(v, float) and isinstance(k, float) and v == k:
                hit = val
                break
        if hit is not None:
            out.append(("mapped", hit))
        else:
            out.append(ref.ref_cast(v, dst, mode, oor))
    return out


@settings(max_examples=150, deadline=None)
@given(
    src=st.sampled_from(["float64", "float32", "int32", "int16", "uint8", "float16", "int64"]),
    dst=st.sampled_from(["uint8", "int8", "int16", "uint32", "float32", "float64", "int4", "bfloat16"]),
    mode=st.sampled_from(_c.MODES),
    oor=st.sampled_from([None, "clamp"]),
    seed=st.integers(0, 2**32 - 1),
    nkeys=st.integers(0, 4),
)
def test_scalar_map_random(ref, src, dst, mode, oor, seed, nkeys):
    rng = np.random.default_rng(seed)
    pool = [0.0, -0.0, 1.0, 2.0, 3.0, 7.0, math.nan, math.inf, -math.inf, 100.0, -5.0]
    if src not in _c.FLOAT_TYPES:
        pool = [0.0, 1.0, 2.0, 3.0, 7.0, 100.0] + ([-5.0] if _c.INT_TYPES[src][0] < 0 else [])
    vals = rng.choice(pool, 400)
    vals = np.where(rng.random(400) < 0.5, rng.normal(0, 50, 400), vals)
    arr = vals.astype(_c.np_dtype(src)) if src in _c.FLOAT_TYPES else np.clip(np.round(vals), _c.INT_TYPES[src][0], 120).astype(src)
    outs = [0, 1, 3, 5] if dst in _c.INT_TYPES else [0.0, 1.5, -2.0, 3.0]
    keys = list(rng.choice(pool, nkeys)) if nkeys else []
    pairs = [[k if not (isinstance(k, float) and math.isnan(k)) else "NaN", outs[i % len(outs)]] for i, k in enumerate(keys)]
    pairs = [[("Infinity" if p[0] == math.inf else "-Infinity" if p[0] == -math.inf else
               (int(p[0]) if src in _c.INT_TYPES else p[0])), p[1]] for p in pairs]
    if src in _c.INT_TYPES:
        pairs = [p for p in pairs if isinstance(p[0], int)]
    exp = _ref_map(ref, arr, [[(math.nan if p[0] == "NaN" else math.inf if p[0] == "Infinity" else -math.inf
                                if p[0] == "-Infinity" else float(p[0])), p[1]] for p in pairs], src, dst, mode, oor)
    out, status = classify_array(arr, dst, mode, oor, pairs)
    for i, (s, v) in enumerate(exp):
        if s == "mapped":
            assert status[i] == ST_MAPPED
            assert float(np.asarray(out[i]).astype(np.float64)) == float(v)
        elif not s.startswith("fail"):
            assert ref.result_matches(out[i], v, dst)
    ok = np.array([not s.startswith("fail") for s, _ in exp])
    fast = cast_array(np.ascontiguousarray(arr[ok]), dst, mode, oor, pairs)
    assert fast.tobytes() == np.ascontiguousarray(out[ok]).tobytes()


def test_first_occurrence_wins_and_negative_zero():
    x = np.array([0.0, -0.0, np.nan, -np.nan, 1.0])
    out = cast_array(x, "uint8", scalar_map=[["NaN", 9], [0, 4], [-0.0, 6], ["NaN", 7]])
    assert out.tolist() == [4, 4, 9, 9, 1]
    # NaN payloads all match
    p = np.array([0x7FF8000000000001, 0xFFF0000000000001], dtype=np.uint64).view(np.float64)
    assert cast_array(p, "int8", scalar_map=[["NaN", -1]]).tolist() == [-1, -1]


def test_mapped_value_used_as_is():
    # the mapped output is not rounded or range-checked against anything else
    x = np.array([1.0, 2.0], dtype=np.float64)
    out = cast_array(x, "float16", scalar_map=[[1.0, "0x7c00"], [2.0, "-Infinity"]])
    assert out[0] == np.inf and out[1] == -np.inf
    # key matching is by value for integer sources too
    assert cast_array(np.array([300, 5], np.int32), "uint8", scalar_map=[[300, 255]]).tolist() == [255, 5]
