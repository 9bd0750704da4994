"""Bad Zarr v2/v1 input: each raises the matching zarrcy error, never crashes."""

from __future__ import annotations

import json

import numcodecs
import numpy as np
import pytest

import zarrcy
from zarrcy.errors import CorruptChunkError, MetadataError, NodeNotFoundError, UnknownCodecError
from zarrcy.v2 import V2ArrayMetadata, parse_v2_dtype, parse_v2_fill_value

GOOD = {"zarr_format": 2, "shape": [10], "chunks": [5], "dtype": "<i4", "compressor": None, "fill_value": 0,
        "order": "C", "filters": None}


def _with(**kw):
    d = dict(GOOD)
    for k, v in kw.items():
        if v is KeyError:
            d.pop(k)
        else:
            d[k] = v
    return d


@pytest.mark.parametrize("member", sorted(k for k in GOOD if k != "zarr_format"))
def test_missing_member(member):
    with pytest.raises(MetadataError, match=member):
        V2ArrayMetadata.from_json(_with(**{member: KeyError}))


@pytest.mark.parametrize("kw,match", [
    ({"zarr_format": 3}, "zarr_format"),
    ({"shape": [-1]}, "shape"),
    ({"chunks": [0]}, "chunks"),
    ({"chunks": [5, 5]}, "chunks"),
    ({"dtype": "i4"}, "dtype"),
    ({"dtype": "<q9"}, "dtype"),
    ({"dtype": "|O"}, "dtype"),
    ({"dtype": 5}, "dtype"),
    ({"order": "X"}, "order"),
    ({"dimension_separator": "-"}, "dimension_separator"),
    ({"fill_value": "abc"}, "fill_value"),
    ({"fill_value": 1e10}, "fill_value"),
    ({"compressor": {"level": 1}}, "compressor"),
    ({"filters": {"id": "delta"}}, "filters"),
])
def test_bad_fields(kw, match):
    with pytest.raises(MetadataError, match=match):
        V2ArrayMetadata.from_json(_with(**kw))


def test_unknown_numcodecs_id():
    with pytest.raises(UnknownCodecError, match="no-such-codec"):
        V2ArrayMetadata.from_json(_with(compressor={"id": "no-such-codec"}))
    with pytest.raises(UnknownCodecError):
        V2ArrayMetadata.from_json(_with(filters=[{"id": "no-such-filter"}]))


def test_not_json(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a/.zarray").write_bytes(b"{not json")
    with pytest.raises(MetadataError):
        zarrcy.open_array(str(tmp_path), path="a", mode="r")
    with pytest.raises(NodeNotFoundError):
        zarrcy.open_array(str(tmp_path), path="missing", mode="r")


@pytest.mark.parametrize("compressor", [None, numcodecs.Blosc("lz4"), numcodecs.Zlib(1), numcodecs.Zstd(1), numcodecs.GZip(1),
                                        numcodecs.LZ4(), numcodecs.BZ2()])
@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "extend"])
def test_corrupt_chunk(tmp_path, compressor, damage):
    a = zarrcy.create_array(str(tmp_path / "c.zarr"), name="a", shape=(40,), dtype="<f8", chunks=(20,), zarr_format=2,
                            compressors=compressor, filters=[numcodecs.Delta("<f8")] if damage == "extend" else None)
    a[...] = np.arange(40.0)
    p = tmp_path / "c.zarr/a/0"
    raw = p.read_bytes()
    p.write_bytes({"truncate": raw[: len(raw) // 2], "garbage": bytes(range(256)) * 3, "empty": b"",
                   "extend": raw + b"\x00" * 17}[damage])
    b = zarrcy.open_array(str(tmp_path / "c.zarr"), path="a", mode="r")
    try:
        got = b[...]
    except CorruptChunkError as e:
        assert "a/0" in str(e)
        return
    # some codecs cannot detect every change (no compressor, trailing bytes ignored):
    # then the result must still be a valid array of the right shape
    assert got.shape == (40,)


def test_dtype_and_fill_parsers():
    assert parse_v2_dtype([["r", "|u1"], ["g", "|u1"]]).stored_dtype.names == ("r", "g")
    with pytest.raises(MetadataError):
        parse_v2_dtype([["r"]])
    dt = parse_v2_dtype("|S4")
    assert parse_v2_fill_value(dt, "YWI=") == b"ab"
    with pytest.raises(MetadataError):
        parse_v2_fill_value(dt, "%%%")
    with pytest.raises(MetadataError):
        parse_v2_fill_value(parse_v2_dtype("<f4"), "nan")
    with pytest.raises(MetadataError):
        parse_v2_fill_value(parse_v2_dtype("|b1"), 2)
    c = parse_v2_fill_value(parse_v2_dtype("<c16"), ["NaN", 1.0])
    assert np.isnan(c.real) and c.imag == 1.0


def test_v1_bad(tmp_path):
    (tmp_path / "meta").write_text(json.dumps({"zarr_format": 1, "shape": [3]}))
    with pytest.raises(MetadataError, match="chunks"):
        zarrcy.open_array(str(tmp_path), mode="r")
