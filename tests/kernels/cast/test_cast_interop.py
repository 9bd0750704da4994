"""Interop: zarrcy's cast kernel vs cast-value-rs, and zarr-python 3.4 (+cast-value-rs) at codec/array level.

Divergences (zarrcy follows the spec; each is pinned by a test below):
* scale_offset on floats: zarr-python lets a finite input overflow to +-Inf silently; the spec
  ("any intermediate or final value ... not representable ... MUST treat as an error") -> zarrcy raises.
* fill value that does not survive encode+decode: zarr-python accepts the metadata; the spec says
  implementations MUST treat it as an error -> zarrcy raises MetadataError.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cast_reference as _c
from zarrcy.casting import cast_value
from zarrcy.errors import CastError, MetadataError, OutOfRangeError

cvr = pytest.importorskip("cast_value_rs")
zarr = pytest.importorskip("zarr")

pytestmark = pytest.mark.interop

NAT = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64"]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            fa, fb = a.astype(np.float64), b.astype(np.float64)
        nan = np.isnan(fa)
        return bool((nan == np.isnan(fb)).all() and (a[~nan].tobytes() == b[~nan].tobytes()))
    return a.tobytes() == b.tobytes()


def _both(x, dst, mode, oor, sm):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = cvr.cast_array(x, target_dtype=dst, rounding_mode=mode, out_of_range_mode=oor,
                               scalar_map_entries=[((float(k) if x.dtype.kind == "f" else int(k)),
                                                    (float(v) if dst.startswith("float") else int(v))) for k, v in sm]
                               if sm else None)
    except ValueError:
        r = None
    try:
        z = cast_value(x, dst, mode, oor, [["NaN" if isinstance(k, float) and math.isnan(k) else k, v] for k, v in sm] if sm else None)
    except CastError:
        z = None
    return r, z


@pytest.mark.parametrize("src", NAT)
def test_matrix_vs_cast_value_rs(ref, src):
    """Every native pair x mode x out_of_range on every edge value, element by element."""
    arr = ref.edge_values(src)
    for dst in NAT:
        for mode in _c.MODES:
            for oor in (None, "clamp", "wrap"):
                if oor == "wrap" and dst.startswith("float"):
                    continue
                # whole array: both fail or both agree bit for bit
                r, z = _both(arr, dst, mode, oor, None)
                assert (r is None) == (z is None), (src, dst, mode, oor)
                if r is not None:
                    assert _same(r, z), (src, dst, mode, oor)
                # element-wise where the whole array fails somewhere
                if r is None:
                    for i in range(arr.size):
                        r1, z1 = _both(arr[i : i + 1], dst, mode, oor, None)
                        assert (r1 is None) == (z1 is None), (src, dst, mode, oor, arr[i])
                        if r1 is not None:
                            assert _same(r1, z1), (src, dst, mode, oor, arr[i], r1, z1)


@settings(max_examples=200, deadline=None)
@given(src=st.sampled_from(NAT), dst=st.sampled_from(NAT), mode=st.sampled_from(_c.MODES),
       oor=st.sampled_from([None, "clamp", "wrap"]), seed=st.integers(0, 2**31), use_map=st.booleans())
def test_random_with_scalar_map_vs_cast_value_rs(src, dst, mode, oor, seed, use_map):
    if oor == "wrap" and dst.startswith("float"):
        oor = "clamp"
    rng = np.random.default_rng(seed)
    dt = np.dtype(src)
    x = rng.integers(0, 256, 64 * dt.itemsize, dtype=np.uint8).view(dt).copy()
    if dt.kind == "f":
        x[::7] = (rng.normal(0, 300, x[::7].size)).astype(dt)
        x[::11] = np.nan
    sm = None
    if use_map:
        if dt.kind == "f":
            sm = [(math.nan, 1), (0.0, 2)] if not dst.startswith("float") else [(math.nan, 0.0), (1.0, 2.0)]
        else:
            sm = [(0, 1), (1, 2)] if not dst.startswith("float") else [(0, 0.5), (1, 2.0)]
    with np.errstate(over="ignore", invalid="ignore"):
        r, z = _both(x, dst, mode, oor, sm)
    assert (r is None) == (z is None)
    if r is not None:
        assert _same(r, z)


# ---- zarr-python 3.4 at codec / array level


def _zarr_python_array(path, dtype, fill, filters, shape=(16,), chunks=(8,)):
    from zarr.codecs import BytesCodec

    return zarr.create_array(str(path), shape=shape, chunks=chunks, dtype=dtype, fill_value=fill,
                             filters=filters, serializer=BytesCodec(endian="little"), compressors=None)


QUANT = [
    ("float64", "NaN", [{"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
                        {"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "nearest-even",
                                                                  "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}}]),
    ("float32", 0.0, [{"name": "cast_value", "configuration": {"data_type": "int16", "rounding": "towards-zero",
                                                                "out_of_range": "clamp"}}]),
    ("float64", 0.0, [{"name": "cast_value", "configuration": {"data_type": "float32", "rounding": "towards-negative",
                                                                "out_of_range": "clamp"}}]),
    ("int32", 0, [{"name": "cast_value", "configuration": {"data_type": "int8", "out_of_range": "wrap"}}]),
    ("uint16", 1000, [{"name": "scale_offset", "configuration": {"offset": 1000}},
                      {"name": "cast_value", "configuration": {"data_type": "uint8"}}]),
    ("float64", 0.0, [{"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "nearest-away",
                                                                "out_of_range": "clamp",
                                                                "scalar_map": {"encode": [["NaN", 255], ["Infinity", 254]]}}}]),
]


def _data(dtype, n=16):
    rng = np.random.default_rng(7)
    if np.dtype(dtype).kind == "f":
        x = np.round(rng.normal(100, 80, n) * 2) / 2
        return np.clip(x, 0, 2540).astype(dtype)
    if dtype == "uint16":
        return rng.integers(1000, 1256, n).astype(dtype)
    return rng.integers(-1000, 1000, n).astype(dtype)


@pytest.mark.parametrize("dtype,fill,filters", QUANT)
def test_array_interop_both_ways(tmp_path, dtype, fill, filters):
    import zarrcy
    from zarr.codecs import CastValue, ScaleOffset

    objs = []
    for f in filters:
        conf = f["configuration"]
        objs.append(ScaleOffset(**conf) if f["name"] == "scale_offset" else CastValue(**conf))
    x = _data(dtype)
    if dtype == "float64" and fill == "NaN":
        x[3] = np.nan
    za = _zarr_python_array(tmp_path / "zp", dtype, float("nan") if fill == "NaN" else fill, objs)
    za[...] = x
    # zarrcy writes the same metadata into its own array
    import json

    meta = json.loads((tmp_path / "zp" / "zarr.json").read_text())
    meta.pop("attributes", None)
    ya = zarrcy.create_array(str(tmp_path), name="zc", metadata=meta)
    ya[...] = x
    for key in ("c/0", "c/1"):
        assert (tmp_path / "zp" / key).read_bytes() == (tmp_path / "zc" / key).read_bytes(), key
    # each reads what the other wrote
    assert _same(np.asarray(zarrcy.open_array(str(tmp_path / "zp"))[...]), np.asarray(za[...]))
    assert _same(np.asarray(zarr.open_array(str(tmp_path / "zc"))[...]), np.asarray(ya[...]))


def test_divergence_scale_offset_overflow(tmp_path):
    """zarr-python writes +Inf for a finite value overflowing in scale_offset; zarrcy raises (spec)."""
    from zarr.codecs import ScaleOffset

    za = _zarr_python_array(tmp_path / "zp", "float32", 0.0, [ScaleOffset(offset=0, scale=1e30)], (2,), (2,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        za[...] = np.array([1.0, 1e10], dtype=np.float32)
        assert np.isinf(za[1])
    from zarrcy.casting import scale_offset_encode

    with pytest.raises(OutOfRangeError):
        scale_offset_encode(np.array([1.0, 1e10], dtype=np.float32), 0, 1e30)


def test_divergence_fill_value_round_trip(tmp_path):
    """zarr-python accepts a fill value that does not survive the cast; the spec says it MUST be an error."""
    from zarr.codecs import CastValue

    _zarr_python_array(tmp_path / "zp", "float64", 0.5, [CastValue(data_type="uint8")], (2,), (2,))
    import json

    import zarrcy

    meta = json.loads((tmp_path / "zp" / "zarr.json").read_text())
    with pytest.raises(MetadataError):
        zarrcy.create_array(str(tmp_path), name="zc", metadata=meta)
