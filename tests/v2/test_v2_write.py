"""zarrcy's Zarr v2 writer: zarr-python reads what zarrcy writes (and zarrcy re-reads it)."""

from __future__ import annotations

import json

import numcodecs
import numpy as np
import pytest

import zarrcy
from zarrcy.creation import create_group_v2
from zarrcy.v2 import V2ArrayMetadata

from v2_helpers import same


@pytest.mark.parametrize("dtype", ["<i2", ">i4", "<f4", ">f8", "|u1", "|b1", "<c8", "|S3", "<U2"])
@pytest.mark.parametrize("compressor", [None, "auto", numcodecs.Blosc("lz4", 5, 1), numcodecs.GZip(3), numcodecs.Zlib(2),
                                        numcodecs.Zstd(3)])
def test_write_read_by_zarr_python(zp, tmp_path, dtype, compressor):
    rng = np.random.default_rng(1)
    dt = np.dtype(dtype)
    if dt.kind in "SU":
        data = np.array([str(i % 50) for i in range(70)]).astype(dt).reshape(7, 10)
    else:
        data = (rng.random((7, 10)) * 100).astype(dt)
    a = zarrcy.create_array(str(tmp_path / "w.zarr"), name="g/a", shape=data.shape, dtype=dt, chunks=(3, 4),
                            zarr_format=2, compressors=compressor, attributes={"k": [1, 2]})
    a[...] = data
    doc = json.loads((tmp_path / "w.zarr/g/a/.zarray").read_text())
    assert doc["zarr_format"] == 2 and doc["dtype"] == dt.str
    assert json.loads((tmp_path / "w.zarr/g/.zgroup").read_text()) == {"zarr_format": 2}
    z = zp.open_array(str(tmp_path / "w.zarr/g/a"), mode="r")
    assert np.array_equal(z[...], data)
    assert z.attrs["k"] == [1, 2]
    assert np.array_equal(zarrcy.open_array(str(tmp_path / "w.zarr"), path="g/a")[...], data)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("sep", [".", "/"])
def test_order_separator_filters(zp, tmp_path, order, sep):
    data = np.arange(11 * 9 * 4, dtype="<i8").reshape(11, 9, 4)
    meta = V2ArrayMetadata.create(shape=data.shape, dtype=data.dtype, chunks=(4, 4, 3), fill_value=-1, order=order,
                                  filters=[numcodecs.Delta("<i8")], compressor=numcodecs.Blosc("zstd", 3, 2),
                                  dimension_separator=sep)
    a = zarrcy.create_array(str(tmp_path / "w.zarr"), name="a", zarr_format=2, metadata=meta.to_json())
    a[...] = data
    a[0:2, 0:2, 0:2] = 7
    data[0:2, 0:2, 0:2] = 7
    z = zp.open_array(str(tmp_path / "w.zarr/a"), mode="r")
    assert np.array_equal(z[...], data)
    assert z.order == order if hasattr(z, "order") else True


def test_subarray_structured_roundtrip(tmp_path):
    dt = np.dtype([("x", "<i4"), ("z", "|u1", (2,))])
    data = np.zeros((5, 3), dtype=dt)
    data["x"] = np.arange(15).reshape(5, 3)
    data["z"] = 9
    a = zarrcy.create_array(str(tmp_path / "w.zarr"), name="s", shape=data.shape, dtype=dt, chunks=(2, 2),
                            zarr_format=2, fill_value=None)
    a[...] = data
    back = zarrcy.open_array(str(tmp_path / "w.zarr"), path="s", mode="r")
    assert back[...].tobytes() == data.tobytes()
    assert back.metadata.fill_value_json is None


def test_fill_values_written(zp, tmp_path):
    for name, fill in (("nan", float("nan")), ("inf", float("inf")), ("num", 2.5), ("null", None)):
        meta = V2ArrayMetadata.create(shape=(4,), dtype="<f8", chunks=(2,), fill_value=fill)
        zarrcy.create_array(str(tmp_path / "w.zarr"), name=name, zarr_format=2, metadata=meta.to_json())
        doc = json.loads((tmp_path / f"w.zarr/{name}/.zarray").read_text())
        want = {"nan": "NaN", "inf": "Infinity", "num": 2.5, "null": None}[name]
        assert doc["fill_value"] == want
        z = zp.open_array(str(tmp_path / f"w.zarr/{name}"), mode="r")
        if fill is not None:
            assert same(z[...], np.full(4, fill))


def test_attrs_resize_group(zp, tmp_path):
    g = create_group_v2(zarrcy.storage.store_from_url(str(tmp_path / "w.zarr"), mode="a"), "", attributes={"a": 1})
    g.attrs["b"] = 2
    a = zarrcy.create_array(str(tmp_path / "w.zarr"), name="x", shape=(10,), dtype="<i4", chunks=(3,), zarr_format=2)
    a[...] = np.arange(10)
    a.attrs["u"] = "m"
    a.resize(3)  # chunk boundary: the chunks beyond are erased
    a.resize(8)
    assert a[...].tolist() == [0, 1, 2, 0, 0, 0, 0, 0]
    assert a.attrs["u"] == "m"
    del a.attrs["u"]
    assert not (tmp_path / "w.zarr/x/.zattrs").exists()
    zg = zp.open_group(str(tmp_path / "w.zarr"), mode="r")
    assert zg.attrs.asdict() == {"a": 1, "b": 2}
    assert zp.open_array(str(tmp_path / "w.zarr/x"), mode="r")[...].tolist() == [0, 1, 2, 0, 0, 0, 0, 0]


def test_to_json_round_trip():
    meta = V2ArrayMetadata.create(shape=(5, 6), dtype=">u2", chunks=(2, 3), fill_value=3, order="F",
                                  compressor={"id": "zlib", "level": 1}, attributes={"q": 1})
    again = V2ArrayMetadata.from_json(meta.to_json())
    assert again == meta
    assert again.attributes == {"q": 1}
    assert "attributes" not in json.loads(meta.to_bytes())


def test_v2_groups_create_v2_children(zp, tmp_path):
    root = zarrcy.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=2, attributes={"r": 1})
    sub = root.create_group("sub", attributes={"s": 2})
    arr = sub.create_array("a", shape=(4,), dtype="<i2", chunks=(2,))
    arr[...] = [1, 2, 3, 4]
    assert (tmp_path / "g.zarr/.zgroup").exists() and (tmp_path / "g.zarr/sub/.zgroup").exists()
    assert (tmp_path / "g.zarr/sub/a/.zarray").exists() and not (tmp_path / "g.zarr/sub/a/zarr.json").exists()
    zg = zp.open_group(str(tmp_path / "g.zarr"), mode="r")
    assert zg.attrs["r"] == 1 and zg["sub"].attrs["s"] == 2
    assert zg["sub/a"][...].tolist() == [1, 2, 3, 4]
    g3 = zarrcy.open_group(str(tmp_path / "h.zarr"), mode="w")
    assert g3.create_group("x").metadata.zarr_format == 3
    assert zarrcy.create_group(str(tmp_path / "k.zarr"), zarr_format=2).metadata.zarr_format == 2
