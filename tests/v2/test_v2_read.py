"""Reading Zarr v2 arrays written by zarr-python (3.4, zarr_format=2): every data type
family with byte orders, C/F order, both separators, fill values, compressors, filters."""

from __future__ import annotations

import warnings

import numcodecs
import numpy as np
import pytest

import zarrcy
from zarrcy.v2 import V2ArrayMetadata

from v2_helpers import same, write_v2

RNG = np.random.default_rng(42)


def _data(dtype, shape=(13, 11)):
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        v = RNG.random(n) > 0.5
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = RNG.integers(max(info.min, -1000), min(info.max, 1000), n)
    elif dt.kind == "f":
        v = RNG.normal(0, 100, n)
    elif dt.kind == "c":
        v = RNG.normal(size=n) + 1j * RNG.normal(size=n)
    elif dt.kind == "S":
        v = np.array([b"ab%d" % (i % 97) for i in range(n)])
    elif dt.kind == "U":
        v = np.array(["x\u00e9%d" % (i % 97) for i in range(n)])
    else:
        raise AssertionError(dt)
    return v.astype(dt).reshape(shape)


DTYPES = ["|b1", "|i1", "|u1", "<i2", ">i2", "<u4", ">u8", "<f2", ">f4", "<f8", ">f8", "<c8", ">c16", "|S5", "<U4", ">U4"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_dtypes_and_order(zp, tmp_path, dtype, order):
    data = _data(dtype)
    write_v2(zp, tmp_path / "s.zarr", "a", data, chunks=(5, 4), order=order,
             compressors=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
    a = zarrcy.open_array(str(tmp_path / "s.zarr"), path="a", mode="r")
    assert isinstance(a.metadata, V2ArrayMetadata)
    assert a.metadata.order == order
    assert a.dtype == np.dtype(dtype).newbyteorder("=") or a.dtype == np.dtype(dtype)
    got = a[...]
    assert np.array_equal(got, data)
    assert np.array_equal(a[2:9, 3:10:2], data[2:9, 3:10:2])


def test_structured_dtype(zp, tmp_path):
    dt = np.dtype([("x", "<i4"), ("y", ">f8"), ("z", "|u1")])
    data = np.zeros((7, 5), dtype=dt)
    data["x"] = np.arange(35).reshape(7, 5)
    data["y"] = np.linspace(0, 1, 35).reshape(7, 5)
    data["z"] = 3
    write_v2(zp, tmp_path / "s.zarr", "a", data, chunks=(3, 2), compressors=numcodecs.Zlib(1), fill_value=None)
    a = zarrcy.open_array(str(tmp_path / "s.zarr/a"), mode="r")
    got = a[...]
    assert got.dtype == dt
    assert got.tobytes() == data.tobytes()


@pytest.mark.parametrize("sep", [".", "/"])
def test_separator(zp, tmp_path, sep):
    data = _data("<i4", (9, 8, 7))
    write_v2(zp, tmp_path / "s.zarr", "a", data, chunks=(4, 3, 2), chunk_key_encoding={"name": "v2", "separator": sep})
    a = zarrcy.open_array(str(tmp_path / "s.zarr"), path="a", mode="r")
    assert a.metadata.chunk_key_encoding.separator == sep
    assert np.array_equal(a[...], data)
    key = "a/0/0/0" if sep == "/" else "a/0.0.0"
    assert (tmp_path / "s.zarr" / key).exists()


@pytest.mark.parametrize("fill", [None, 0, 7.5, float("nan"), float("inf"), -float("inf")])
def test_fill_values(zp, tmp_path, fill):
    z = zp.create_array(str(tmp_path / "s.zarr"), name="a", shape=(10, 10), chunks=(4, 4), dtype="<f8",
                        zarr_format=2, fill_value=fill)
    z[0:4, 0:4] = 1.0  # one chunk written, the rest missing
    a = zarrcy.open_array(str(tmp_path / "s.zarr"), path="a", mode="r")
    want = zp.open_array(str(tmp_path / "s.zarr/a"), mode="r")[...]
    got = a[...]
    assert got[0, 0] == 1.0
    if fill is None:
        assert a.metadata.fill_value_json is None
        assert got[9, 9] == 0.0  # documented: a null fill value reads as zeros, like zarr-python
    else:
        assert same(got, want)
    # the JSON form round-trips
    assert a.metadata.to_json()["fill_value"] == V2ArrayMetadata.from_json(a.metadata.to_json()).fill_value_json


@pytest.mark.parametrize("compressor", [
    None,
    numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE),
    numcodecs.Blosc("zstd", 3, numcodecs.Blosc.BITSHUFFLE),
    numcodecs.Blosc("blosclz", 1, numcodecs.Blosc.NOSHUFFLE),
    numcodecs.Zstd(0),
    numcodecs.Zstd(5, checksum=True),
    numcodecs.GZip(1),
    numcodecs.Zlib(4),
    numcodecs.LZ4(1),
    numcodecs.BZ2(3),
    numcodecs.LZMA(),
])
def test_compressors(zp, tmp_path, compressor):
    data = _data("<f4", (20, 17))
    write_v2(zp, tmp_path / "s.zarr", "a", data, chunks=(8, 8), compressors=compressor)
    a = zarrcy.open_array(str(tmp_path / "s.zarr"), path="a", mode="r")
    assert np.array_equal(a[...], data)
    names = [getattr(c, "name", None) for c in a.metadata.codecs]
    if compressor is not None and compressor.codec_id in ("blosc", "zstd", "gzip"):
        assert names[-1] == compressor.codec_id  # zarrcy's native (GIL-free) codec


@pytest.mark.parametrize("filters,dtype", [
    ([numcodecs.Delta("<i4")], "<i4"),
    ([numcodecs.Delta("<i8", astype="<i4")], "<i8"),
    ([numcodecs.FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="<u2")], "<f8"),
    ([numcodecs.Quantize(digits=2, dtype="<f8")], "<f8"),
    ([numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")], "<f8"),
    ([numcodecs.Shuffle(elementsize=4)], "<f4"),
    ([numcodecs.Delta("<i2"), numcodecs.Shuffle(elementsize=2)], "<i2"),
])
@pytest.mark.parametrize("order", ["C", "F"])
def test_filters(zp, tmp_path, filters, dtype, order):
    data = np.abs(_data(dtype, (12, 9)))
    z = write_v2(zp, tmp_path / "s.zarr", "a", data, chunks=(5, 4), filters=filters, order=order,
                 compressors=numcodecs.Zlib(1))
    want = z[...]
    a = zarrcy.open_array(str(tmp_path / "s.zarr"), path="a", mode="r")
    assert same(a[...], want)
    assert same(a[3:11, 1:8], want[3:11, 1:8])


def test_zero_dim_and_empty(zp, tmp_path):
    z = zp.create_array(str(tmp_path / "s.zarr"), name="s", shape=(), dtype="<i8", zarr_format=2, fill_value=3)
    z[...] = 42
    zp.create_array(str(tmp_path / "s.zarr"), name="e", shape=(0, 5), chunks=(2, 2), dtype="<i8", zarr_format=2)
    assert zarrcy.open_array(str(tmp_path / "s.zarr"), path="s", mode="r")[...] == 42
    assert zarrcy.open_array(str(tmp_path / "s.zarr"), path="e", mode="r")[...].shape == (0, 5)


def test_hierarchy_and_attributes(zp, tmp_path):
    root = zp.open_group(str(tmp_path / "h.zarr"), mode="w", zarr_format=2)
    root.attrs["title"] = "x"
    sub = root.create_group("sub")
    sub.attrs["n"] = 3
    arr = sub.create_array("t", shape=(4,), dtype="<i2", chunks=(2,))
    arr[...] = [1, 2, 3, 4]
    arr.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    g = zarrcy.open_group(str(tmp_path / "h.zarr"), mode="r")
    assert g.attrs.asdict() == {"title": "x"}
    assert g.group_keys() == ["sub"]
    assert g["sub"].attrs["n"] == 3
    t = g["sub/t"]
    assert t[...].tolist() == [1, 2, 3, 4]
    assert t.dimension_names == ("x",)
    assert "sub" in g and "nope" not in g
    assert isinstance(zarrcy.open(str(tmp_path / "h.zarr"), path="sub", mode="r"), zarrcy.Group)


def test_consolidated_only(zp, tmp_path):
    """A store whose node documents are only in .zmetadata (as on some object stores)."""
    root = zp.open_group(str(tmp_path / "c.zarr"), mode="w", zarr_format=2)
    a = root.create_array("a", shape=(6,), dtype="<f4", chunks=(4,))
    a[...] = np.arange(6)
    a.attrs["u"] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zp.consolidate_metadata(str(tmp_path / "c.zarr"), zarr_format=2)
    for k in ("a/.zarray", "a/.zattrs"):
        (tmp_path / "c.zarr" / k).unlink()
    arr = zarrcy.open_array(str(tmp_path / "c.zarr"), path="a", mode="r")
    assert arr[...].tolist() == list(range(6))
    assert arr.attrs["u"] == 1


def test_zarrcy_v1_reader(tmp_path):
    """Zarr v1: ``meta`` + ``attrs`` + chunks ``i.j`` (v1.rst), written by hand."""
    import json

    data = np.arange(20 * 13, dtype=">i4").reshape(20, 13)
    root = tmp_path / "v1"
    root.mkdir()
    meta = {"zarr_format": 1, "shape": [20, 13], "chunks": [8, 5], "dtype": ">i4", "compression": "zlib",
            "compression_opts": 1, "fill_value": 42, "order": "C"}
    (root / "meta").write_text(json.dumps(meta))
    (root / "attrs").write_text(json.dumps({"a": 1}))
    codec = numcodecs.Zlib(1)
    for i in range(3):
        for j in range(3):
            if (i, j) == (2, 2):
                continue  # missing: reads as the fill value
            chunk = np.full((8, 5), 0, dtype=">i4")
            part = data[i * 8:(i + 1) * 8, j * 5:(j + 1) * 5]
            chunk[: part.shape[0], : part.shape[1]] = part
            (root / f"{i}.{j}").write_bytes(codec.encode(chunk.tobytes()))
    a = zarrcy.open_array(str(root), mode="r")
    want = data.copy()
    want[16:, 10:] = 42
    assert np.array_equal(a[...], want)
    assert a.attrs["a"] == 1
    assert a.metadata.zarr_format == 1
    with pytest.raises(zarrcy.ReadOnlyError):
        a[0, 0] = 1


@pytest.mark.parametrize("compression,opts", [("blosc", {"cname": "lz4", "clevel": 5, "shuffle": 1}), ("none", None),
                                              ("bz2", 1), ("lzma", None)])
def test_v1_compressions(tmp_path, compression, opts):
    import json

    data = np.linspace(0, 1, 30).reshape(5, 6)
    root = tmp_path / "v1"
    root.mkdir()
    meta = {"zarr_format": 1, "shape": [5, 6], "chunks": [5, 6], "dtype": "<f8", "compression": compression,
            "compression_opts": opts, "fill_value": None, "order": "F"}
    (root / "meta").write_text(json.dumps(meta))
    (root / "attrs").write_text("{}")
    raw = np.asfortranarray(data).tobytes(order="F")
    cfg = {"blosc": {"id": "blosc", **(opts if isinstance(opts, dict) else {})}, "bz2": {"id": "bz2", "level": 1}, "lzma": {"id": "lzma"}}.get(compression)
    enc = numcodecs.get_codec(cfg).encode(raw) if cfg else raw
    (root / "0.0").write_bytes(bytes(enc))
    a = zarrcy.open_array(str(root), mode="r")
    assert np.array_equal(a[...], data)
