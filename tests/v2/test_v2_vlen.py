"""zarr-python's variable-length v2 arrays: ``"|O"`` + a ``vlen-utf8`` / ``vlen-bytes``
filter (what zarr-python 3.4 writes for ``dtype=str`` / ``VariableLengthBytes`` with
``zarr_format=2``): read, written, converted to v3, and refused clearly otherwise."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import zarrcy
from zarrcy.convert import convert_main
from zarrcy.errors import CorruptChunkError, MetadataError

STRINGS = np.array(["a", "bé", "", "x" * 300, "😀\x00z", "tail"], dtype=object)
BLOBS = np.array([b"a", b"\x00b", b"", b"\xff" * 70, b"zz\x00", b"q"], dtype=object)


def _zp_compressor(zp, name):
    import numcodecs

    return {"none": None, "zstd": numcodecs.Zstd(0), "blosc": numcodecs.Blosc("lz4", 5, 1),
            "gzip": numcodecs.GZip(1), "zlib": numcodecs.Zlib(1)}[name]


@pytest.mark.parametrize("comp", ["none", "zstd", "blosc", "gzip", "zlib"])
@pytest.mark.parametrize("kind", ["str", "bytes"])
def test_read_what_zarr_python_writes(zp, tmp_path, comp, kind):
    from zarr.core.dtype import VariableLengthBytes

    path = str(tmp_path / "a.zarr")
    dtype, vals = (str, STRINGS) if kind == "str" else (VariableLengthBytes(), BLOBS)
    z = zp.create_array(path, shape=(7,), chunks=(3,), dtype=dtype, zarr_format=2,
                        compressors=_zp_compressor(zp, comp))
    z[:6] = vals
    doc = json.load(open(os.path.join(path, ".zarray")))
    assert doc["dtype"] == "|O" and doc["filters"][0]["id"] == ("vlen-utf8" if kind == "str" else "vlen-bytes")
    a = zarrcy.open_array(path, mode="r")
    got = a[...]
    want = zp.open_array(path, mode="r")[...]
    assert got.tolist() == want.tolist()
    assert got[:6].tolist() == vals.tolist()
    assert a[1:5:2].tolist() == vals[1:5:2].tolist()
    assert a.oindex[[5, 0]].tolist() == [vals[5], vals[0]]


def test_order_f_2d(zp, tmp_path):
    path = str(tmp_path / "f.zarr")
    want = np.array([["a", "bb", "ccc"], ["d", "", "f"], ["g", "hé", "i"]], dtype=object)
    z = zp.create_array(path, shape=(3, 3), chunks=(2, 2), dtype=str, zarr_format=2, order="F")
    z[...] = want
    assert zarrcy.open_array(path, mode="r")[...].tolist() == want.tolist()


@pytest.mark.parametrize("kind", ["str", "bytes"])
def test_zarr_python_reads_what_zarrcy_writes(zp, tmp_path, kind):
    path = str(tmp_path / "w.zarr")
    dtype, vals, fill = (str, STRINGS, "fill") if kind == "str" else (bytes, BLOBS, b"F\x00")
    a = zarrcy.create_array(path, shape=(8,), chunks=(3,), dtype=dtype, zarr_format=2, fill_value=fill)
    a[:6] = vals
    a[2] = vals[3]  # a partial chunk rewrite
    expect = list(vals) + [fill, fill]
    expect[2] = vals[3]
    assert a[...].tolist() == expect
    assert zp.open_array(path, mode="r")[...].tolist() == expect
    doc = json.load(open(os.path.join(path, ".zarray")))
    assert doc["dtype"] == "|O" and doc["filters"] == [{"id": "vlen-utf8" if kind == "str" else "vlen-bytes"}]


@pytest.mark.parametrize("extra", [[], ["--rewrite", "--shards", "6", "--chunks", "2"]])
def test_convert_to_v3(zp, tmp_path, extra):
    from zarr.core.dtype import VariableLengthBytes

    src, dst = str(tmp_path / "s.zarr"), str(tmp_path / "d.zarr")
    zp.create_array(src, name="s", shape=(6,), chunks=(4,), dtype=str, zarr_format=2)[...] = STRINGS
    zp.create_array(src, name="b", shape=(6,), chunks=(4,), dtype=VariableLengthBytes(), zarr_format=2)[...] = BLOBS
    assert convert_main([src, dst, "--progress", "off", *extra]) == 0
    for name, vals, dt in (("s", STRINGS, "string"), ("b", BLOBS, "bytes")):
        a = zarrcy.open_array(dst, path=name, mode="r")
        assert a.metadata.data_type.to_json() == dt
        assert a[...].tolist() == vals.tolist()
        assert zp.open_array(dst, path=name, mode="r")[...].tolist() == vals.tolist()


def _zarray(tmp_path, **over):
    doc = {"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|O", "compressor": None,
           "fill_value": "", "order": "C", "filters": [{"id": "vlen-utf8"}]}
    doc.update(over)
    p = tmp_path / "bad.zarr"
    p.mkdir(exist_ok=True)
    (p / ".zarray").write_text(json.dumps(doc))
    return str(p)


@pytest.mark.parametrize("over, where", [
    ({"filters": None}, "dtype"),
    ({"filters": [{"id": "pickle"}]}, "dtype"),
    ({"filters": [{"id": "vlen-utf8"}, {"id": "zlib", "level": 1}]}, "filters"),
    ({"filters": [{"id": "vlen-bytes"}], "fill_value": "not base64!"}, "fill_value"),
    ({"fill_value": 3}, "fill_value"),
])
def test_bad_metadata_is_refused(tmp_path, over, where):
    path = _zarray(tmp_path, **over)
    with pytest.raises(MetadataError, match=where):
        zarrcy.open_array(path, mode="r")


@pytest.mark.parametrize("payload", [b"", b"\x05\x00\x00\x00", b"\x02\x00\x00\x00\x01\x00\x00\x00a\xff\xff\xff\x7f",
                                     b"\x01\x00\x00\x00\x02\x00\x00\x00\xff\xfe"])
def test_corrupt_chunks_name_the_key(tmp_path, payload):
    path = _zarray(tmp_path)
    with open(os.path.join(path, "0"), "wb") as f:
        f.write(payload)
    a = zarrcy.open_array(path, mode="r")
    with pytest.raises(CorruptChunkError, match="0"):
        a[...]
    assert a[2:].tolist() == ["", ""]
