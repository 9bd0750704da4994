"""``zarrcy convert`` with records: Zarr v2 structured arrays (``[["a", "<i4"], ...]``,
nested, big-endian fields, padded layouts) become v3 ``struct`` arrays with the same
values, read equal by zarr-python 3.4; v3 struct arrays convert (rechunk, shard)."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

import zarrcy
from zarrcy.convert import convert_main

pytestmark = pytest.mark.filterwarnings("ignore:The data type .* does not have a Zarr V3 specification")

NESTED = np.dtype([("a", ">i4"), ("p", [("x", "<f4"), ("y", ">f8")]), ("s", "S2"), ("t", "<M8[ms]")])


def _values(dt: np.dtype, n: int = 23) -> np.ndarray:
    v = np.zeros(n, dtype=dt)
    v["a"] = np.arange(n) * 7 - 50
    v["p"]["x"] = np.arange(n) / 4
    v["p"]["y"] = -np.arange(n) / 3
    v["s"] = np.array([b"ab", b"c", b""])[np.arange(n) % 3]
    v["t"] = (np.arange(n) * 86_400_000).astype("M8[ms]")
    return v


def _load(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("writer", ["zarrcy", "zarr-python"])
def test_v2_structured_to_v3_struct(tmp_path, writer):
    import zarr

    src, dst = str(tmp_path / "s.zarr"), str(tmp_path / "d.zarr")
    v = _values(NESTED)
    fill = np.array((1, (2.5, -1.0), b"f", 0), dtype=NESTED)
    if writer == "zarrcy":
        zarrcy.create_array(src, name="recs", shape=v.shape, dtype=NESTED, chunks=(5,), zarr_format=2,
                            fill_value=fill[()])[:20] = v[:20]
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # (no compressor: zarr-python hands M8 records to numcodecs, which refuses them)
            z = zarr.create_array(src, name="recs", shape=v.shape, dtype=NESTED, chunks=(5,), zarr_format=2,
                                  fill_value=fill[()], compressors=None)
            z[:20] = v[:20]
    expect = v.copy()
    expect[20:] = fill
    assert convert_main([src, dst, "--progress", "off"]) == 0
    doc = _load(os.path.join(dst, "recs", "zarr.json"))
    assert doc["data_type"] == {"name": "struct", "configuration": {"fields": [
        {"name": "a", "data_type": "int32"},
        {"name": "p", "data_type": {"name": "struct", "configuration": {"fields": [
            {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "float64"}]}}},
        {"name": "s", "data_type": {"name": "null_terminated_bytes", "configuration": {"length_bytes": 2}}},
        {"name": "t", "data_type": {"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 1}}}]}}
    assert doc["fill_value"] == {"a": 1, "p": {"x": 2.5, "y": -1.0}, "s": "Zg==", "t": 0}
    got = zarrcy.open_array(dst, path="recs", mode="r")[...]
    assert got.tobytes() == expect.astype(got.dtype).tobytes()
    zp = zarr.open_array(dst, path="recs", mode="r")[...]
    assert zp.astype(got.dtype).tobytes() == got.tobytes()


def test_v2_padded_layout_is_repacked(tmp_path):
    """A v2 array of numpy's aligned layout (padding bytes in the descr) converts to the
    packed struct layout; the named fields keep their values."""
    dt = np.dtype([("u", "u1"), ("d", "<f8"), ("i", "<i2")], align=True)
    assert dt.itemsize == 24
    src, dst = str(tmp_path / "s.zarr"), str(tmp_path / "d.zarr")
    v = np.array([(1, 1.5, -3), (2, -0.0, 4), (255, np.nan, 7)], dtype=dt)
    zarrcy.create_array(src, name="r", shape=(3,), dtype=dt, chunks=(2,), zarr_format=2)[...] = v
    assert convert_main([src, dst, "--progress", "off"]) == 0
    a = zarrcy.open_array(dst, path="r", mode="r")
    assert a.dtype.itemsize == 11 and a.dtype.names == ("u", "d", "i")
    got = a[...]
    for name in dt.names:
        assert got[name].tobytes() == v[name].astype(got.dtype[name]).tobytes()


def test_v2_subarray_fields_have_no_struct_form(tmp_path, capsys):
    src = str(tmp_path / "s.zarr")
    zarrcy.create_array(src, name="r", shape=(2,), dtype=[("a", "<i4", (2,))], chunks=(2,), zarr_format=2)
    assert convert_main([src, str(tmp_path / "d.zarr"), "--progress", "off"]) == 2
    assert "no Zarr v3 equivalent" in capsys.readouterr().err


def test_v3_struct_rechunk_and_shard(tmp_path):
    src, dst = str(tmp_path / "s.zarr"), str(tmp_path / "d.zarr")
    dt = np.dtype([("a", "<i4"), ("p", [("x", "<f4"), ("y", "<f8")]), ("s", "S2"), ("t", "<M8[ms]")])
    v = _values(dt)
    a = zarrcy.create_array(src, name="recs", shape=v.shape, dtype=dt, chunks=(4,),
                            serializer={"name": "bytes", "configuration": {"endian": "big"}})
    a[...] = v
    assert convert_main([src, dst, "--progress", "off", "--shards", "12", "--chunks", "3"]) == 0
    b = zarrcy.open_array(dst, path="recs", mode="r")
    assert b.metadata.data_type == a.metadata.data_type
    assert b.shards == (12,) and b[...].tobytes() == v.tobytes()


def test_v3_struct_to_v2_and_back(tmp_path):
    """v3 struct -> v2 structured (numpy descr, base64 fill) -> v3 struct: the same records."""
    src, mid, back = (str(tmp_path / n) for n in ("s.zarr", "v2.zarr", "v3.zarr"))
    dt = np.dtype([("a", "<i4"), ("p", [("x", "<f4"), ("y", "<f8")]), ("s", "S2")])
    v = np.zeros(9, dtype=dt)
    v["a"] = np.arange(9)
    v["p"]["y"] = np.linspace(-1, 1, 9)
    v["s"] = b"q"
    a = zarrcy.create_array(src, name="r", shape=(9,), chunks=(4,), dtype=dt, fill_value=(5, (0.5, 1.0), b"z"))
    a[:7] = v[:7]
    v[7:] = np.array((5, (0.5, 1.0), b"z"), dtype=dt)
    assert convert_main([src, mid, "--progress", "off", "--format", "2"]) == 0
    zarray = _load(os.path.join(mid, "r", ".zarray"))
    assert zarray["dtype"] == [["a", "<i4"], ["p", [["x", "<f4"], ["y", "<f8"]]], ["s", "|S2"]]
    assert zarrcy.open_array(mid, path="r", mode="r")[...].tobytes() == v.tobytes()
    assert convert_main([mid, back, "--progress", "off"]) == 0
    c = zarrcy.open_array(back, path="r", mode="r")
    assert c.metadata.data_type == a.metadata.data_type and c[...].tobytes() == v.tobytes()
