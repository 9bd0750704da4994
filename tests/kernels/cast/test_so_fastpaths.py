"""The float64 scale_offset encode with non-temporal stores (outputs >= 4 Mi elements) and the
one-pass fused decode (integer source -> float, at most one scalar_map key): same bits and
same error index as the plain loops / the two codecs in turn, at block edges."""

from __future__ import annotations

import numpy as np
import pytest

from zarrcy._kernels import _cast_fast as _cast
from zarrcy._kernels._scale_offset import encode_into
from zarrcy.casting import scale_offset_encode
from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.cast_value import CastValueCodec, ScalarMap
from zarrcy.codecs.scale_offset import ScaleOffsetCodec
from zarrcy.errors import CastError, OutOfRangeError

from fused_check import check_decode

STREAM_MIN = 1 << 22      # _scale_offset.pyx SO_STREAM_MIN
SO_BLOCK = 2048
BLOCK = 1024              # _cast_types.pxd BLOCK


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(11)
    x = rng.uniform(-1e6, 1e6, STREAM_MIN + 5)
    x[rng.integers(0, x.size, 100)] = np.nan
    x[rng.integers(0, x.size, 10)] = np.inf
    return x


def _plain(x, o, s):
    """Per-element reference in float64: one rounding per operation; -1 or first overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        y = (x - o) * s
    bad = np.flatnonzero(np.isfinite(x) & ~np.isfinite(y))
    return y, (int(bad[0]) if bad.size else -1)


def test_stream_encode_matches_plain(big):
    for n in (STREAM_MIN, STREAM_MIN + 5):
        x = big[:n]
        y = np.empty(n)
        assert y.ctypes.data % 16 == 0
        assert encode_into(x, y, -10.0, 0.1) == -1
        exp, _ = _plain(x, -10.0, 0.1)
        assert y.tobytes() == exp.tobytes()
        # misaligned output: the plain loop, same bits
        buf = np.empty(n + 1)
        y2 = buf[1:]
        assert encode_into(x, y2, -10.0, 0.1) == -1
        assert y2.tobytes() == exp.tobytes()


@pytest.mark.parametrize("pos", [0, SO_BLOCK - 1, SO_BLOCK, STREAM_MIN // 2 + 1, STREAM_MIN + 4])
def test_stream_encode_overflow_index(big, pos):
    x = big.copy()
    x[pos] = 1e10                   # (1e10 - 0) * 1e300 overflows; |x| <= 1e6 elsewhere does not
    x[-1] = 2e10 if pos != x.size - 1 else x[-1]
    with pytest.raises(OutOfRangeError) as ei:
        scale_offset_encode(x, 0.0, 1e300)
    _, first = _plain(x, 0.0, 1e300)
    assert first == pos
    assert ei.value.index == first
    # direct kernel call agrees
    y = np.empty_like(x)
    assert encode_into(x, y, 0.0, 1e300) == first


# ---- fused decode fast path

ISAS = ["auto", "baseline"]


@pytest.fixture(params=ISAS)
def isa(request):
    _cast.dispatch_isa(request.param)
    yield request.param
    _cast.dispatch_isa("auto")


SRC = {"uint8": ("float64", "float32"), "int8": ("float64", "float32"), "uint16": ("float64", "float32"),
       "int16": ("float64", "float32"), "uint32": ("float64",), "int32": ("float64",)}


@pytest.mark.parametrize("src", list(SRC))
@pytest.mark.parametrize("key", [None, "nan", "finite"])
def test_fused_decode_block_edges(isa, src, key):
    info = np.iinfo(src)
    kv = int(info.max)
    for dtype in SRC[src]:
        if key is None:
            cv = CastValueCodec(src, "nearest-even", "clamp")
        elif key == "nan":
            cv = CastValueCodec(src, "nearest-even", "clamp", ScalarMap((("NaN", kv),), ((kv, "NaN"),)))
        else:
            cv = CastValueCodec(src, "nearest-even", "clamp", ScalarMap(decode=((kv, 1.25),)))
        so = ScaleOffsetCodec(3, 0.1)
        rng = np.random.default_rng(7)
        for n in (1, 9, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7):
            enc = rng.integers(info.min, info.max, n, dtype=src, endpoint=True)
            check_decode(enc, so, cv, dtype)
            for p in sorted({0, n - 1, min(BLOCK, n - 1), min(BLOCK - 1, n - 1), min(8, n - 1)}):
                e2 = enc.copy()
                e2[p] = kv
                check_decode(e2, so, cv, dtype)


def test_fused_decode_overflow_and_key_values(isa):
    # tiny scale: x / s overflows -> scale_offset's error at the first such element
    cv = CastValueCodec("int16", "nearest-even", "clamp", ScalarMap(decode=((5, 2.0),)))
    so = ScaleOffsetCodec(0, 1e-306)
    for n in (1, BLOCK, BLOCK + 3):
        enc = np.zeros(n, np.int16)
        for p in sorted({0, n - 1, min(BLOCK, n - 1)}):
            e2 = enc.copy()
            e2[p] = 30000
            check_decode(e2, so, cv, "float64")
            e2[p] = 5          # key value 2.0 / 1e-306 overflows too
            check_decode(e2, so, cv, "float64")
    # non-finite key values are not errors
    for val in ("NaN", "Infinity", "-Infinity"):
        cv = CastValueCodec("uint8", "nearest-even", "clamp", ScalarMap(decode=((255, val),)))
        enc = np.arange(3 * BLOCK, dtype=np.uint64).astype(np.uint8)
        check_decode(enc, ScaleOffsetCodec(1, 4), cv, "float64")
        check_decode(enc, ScaleOffsetCodec(1, 4), cv, "float32")


def test_fused_decode_two_keys_uses_general_path(isa):
    cv = CastValueCodec("uint8", "nearest-even", "clamp", ScalarMap(decode=((255, "NaN"), (0, -1.0))))
    enc = np.arange(2 * BLOCK + 1, dtype=np.uint64).astype(np.uint8)
    check_decode(enc, ScaleOffsetCodec(2, 0.5), cv, "float64")


# ---- decode straight into the caller's buffer (pipeline hook) and the array level

def test_fused_decode_into_matches_decode():
    cv = CastValueCodec("uint8", "nearest-even", "clamp", ScalarMap((("NaN", 255),), ((255, "NaN"),)))
    so = ScaleOffsetCodec(0, 10)
    fused = so.fuse_with(cv)
    spec = ArraySpec((37, 41), np.dtype("float64"), np.float64(np.nan))
    enc = np.random.default_rng(1).integers(0, 256, (37, 41), dtype=np.uint8)
    out = np.full((37, 41), 7.0)
    assert fused.decode_into(enc, out, spec)
    assert out.tobytes() == fused.decode(enc, spec).tobytes()
    # not applicable: strided, wrong dtype, wrong shape, read-only -> False, nothing written
    big = np.zeros((37, 82))
    assert not fused.decode_into(enc, big[:, ::2], spec)
    assert not fused.decode_into(enc, np.zeros((37, 41), np.float32), spec)
    assert not fused.decode_into(enc, np.zeros((41, 37)), spec)
    ro = np.zeros((37, 41))
    ro.setflags(write=False)
    assert not fused.decode_into(enc, ro, spec)
    assert not big.any()
    # a failing decode still raises the sequential path's error
    bad = ScaleOffsetCodec(0, 1e-306).fuse_with(CastValueCodec("int16", "nearest-even", "clamp"))
    spec16 = ArraySpec((3,), np.dtype("float64"), np.float64(0))
    with pytest.raises(CastError) as ei:
        bad.decode_into(np.array([0, 30000, 30000], np.int16), np.empty(3), spec16)
    assert ei.value.index == 1


def test_array_quantize_roundtrip(tmp_path):
    import zarrcy

    n, c = 300, 128
    rng = np.random.default_rng(4)
    data = rng.uniform(0, 25.5, (n, n))
    data[rng.random((n, n)) < 0.01] = np.nan
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": [n, n], "data_type": "float64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [c, c]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN",
        "codecs": [
            {"name": "scale_offset", "configuration": {"offset": 0, "scale": 10}},
            {"name": "cast_value", "configuration": {
                "data_type": "uint8", "rounding": "nearest-even", "out_of_range": "clamp",
                "scalar_map": {"encode": [["NaN", 255]], "decode": [[255, "NaN"]]}}},
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "gzip", "configuration": {"level": 1}},
        ],
        "attributes": {},
    }
    a = zarrcy.create_array(str(tmp_path / "q"), metadata=meta)
    a[...] = data
    q = np.clip(np.round(np.nan_to_num(data) * 10), 0, 255)      # nearest-even, clamp
    exp = np.where(np.isnan(data) | (q == 255), np.nan, q / 10)   # 255 decodes to NaN
    got = a[...]
    assert np.array_equal(got, exp, equal_nan=True)
    assert np.array_equal(a[5:200, 100:290], exp[5:200, 100:290], equal_nan=True)


# ---- scale_offset float blocks: dispatched AVX2 / baseline builds

@pytest.fixture(params=ISAS)
def so_isa(request):
    from zarrcy._kernels import _scale_offset

    _scale_offset.dispatch_isa(request.param)
    yield request.param
    _scale_offset.dispatch_isa("auto")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_so_float_blocks_both_builds(so_isa, dtype):
    from zarrcy._kernels._scale_offset import decode_into

    big = np.finfo(dtype).max
    rng = np.random.default_rng(9)
    for n in (1, 7, SO_BLOCK - 1, SO_BLOCK, SO_BLOCK + 1, 2 * SO_BLOCK + 9):
        x = rng.normal(0, 1e3, n).astype(dtype)
        x[:: 97] = np.nan
        o, s = np.array([1.5, 0.3], dtype=dtype)
        y = np.empty_like(x)
        assert encode_into(x, y, o, s) == -1
        with np.errstate(all="ignore"):
            exp = (x - o) * s
            expd = x / s + o
        assert y.tobytes() == exp.tobytes()
        y2 = np.empty_like(x)
        assert decode_into(x, y2, o, s) == -1
        assert y2.tobytes() == expd.tobytes()
        for p in sorted({0, n - 1, min(SO_BLOCK, n - 1), min(SO_BLOCK - 1, n - 1)}):
            x2 = x.copy()
            x2[p] = big / 2
            assert encode_into(x2, y, o, np.array(4, dtype=dtype)) == p     # overflow at p only
            assert decode_into(x2, y2, o, np.array(0.25, dtype=dtype)) == p
