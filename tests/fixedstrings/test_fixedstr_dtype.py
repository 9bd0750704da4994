"""fixed_length_utf32 / null_terminated_bytes: data type JSON, fill values, dtype mapping."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import MetadataError
from zarrcy.metadata.data_type import from_numpy, parse_data_type

U = "fixed_length_utf32"
S = "null_terminated_bytes"


def _dt(name: str, n: object) -> dict:
    return {"name": name, "configuration": {"length_bytes": n}}


@pytest.mark.parametrize("n", [4, 12, 400])
def test_utf32_parse_and_back(n: int) -> None:
    d = parse_data_type(_dt(U, n))
    assert d.dtype == np.dtype(f"U{n // 4}") and d.itemsize == n and d.category == "fixed_string"
    assert d.to_json() == _dt(U, n)
    assert parse_data_type(d.to_json()) == d
    assert not d.variable_length


@pytest.mark.parametrize("n", [1, 3, 100])
def test_ntb_parse_and_back(n: int) -> None:
    d = parse_data_type(_dt(S, n))
    assert d.dtype == np.dtype(f"S{n}") and d.itemsize == n and d.category == "fixed_bytes"
    assert d.to_json() == _dt(S, n)
    assert parse_data_type({**_dt(S, n), "must_understand": True}) == d


@pytest.mark.parametrize(
    "doc,where",
    [
        (_dt(U, 10), "length_bytes"),  # not a multiple of 4
        (_dt(U, 2), "length_bytes"),
        (_dt(U, 0), "length_bytes"),
        (_dt(S, 0), "length_bytes"),
        (_dt(S, -3), "length_bytes"),
        (_dt(S, 2.0), "length_bytes"),
        (_dt(S, True), "length_bytes"),
        (_dt(U, "8"), "length_bytes"),
        (_dt(U, None), "length_bytes"),
        (_dt(S, 1 << 40), "length_bytes"),
        ({"name": U, "configuration": {}}, "length_bytes"),
        ({"name": S, "configuration": {"length_bytes": 2, "extra": 1}}, "extra"),
        (U, "length_bytes"),  # the bare name: a configuration is required
        (S, "length_bytes"),
        ({"name": S}, "length_bytes"),
        ({**_dt(S, 2), "must_understand": False}, "must_understand"),
    ],
)
def test_bad_configuration_names_json_path(doc: object, where: str) -> None:
    with pytest.raises(MetadataError) as e:
        parse_data_type(doc, "data_type")
    assert e.value.path is not None and e.value.path.startswith("data_type") and where in e.value.path
    assert "data_type" in str(e.value)


@pytest.mark.parametrize(
    "spelling,name,n",
    [("U3", U, 12), (">U3", U, 12), ("<U1", U, 4), (np.dtype("U7"), U, 28),
     ("S5", S, 5), ("|S1", S, 1), (np.dtype("S2"), S, 2)],
)
def test_from_numpy_fixed(spelling: object, name: str, n: int) -> None:
    d = from_numpy(spelling)
    assert d.name == name and d.itemsize == n and d.dtype.isnative


@pytest.mark.parametrize("spelling,name", [(str, "string"), ("U", "string"), ("T", "string"), (object, "string"),
                                           ("str", "string"), ("bytes", "bytes"), (bytes, "bytes")])
def test_from_numpy_zero_width_stays_variable_length(spelling: object, name: str) -> None:
    assert from_numpy(spelling).name == name


# -- fill values ------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["", "ab", "abc", "🙂", "a\x00b", "\U0010FFFF\U0010FFFF\U0010FFFF"])
def test_utf32_fill_values(value: str) -> None:
    d = parse_data_type(_dt(U, 12))
    got = d.parse_fill_value(value)
    assert isinstance(got, np.str_) and got == value
    assert d.fill_value_to_json(got) == value
    assert d.fill_value_to_json(d.default_fill_value()) == ""


@pytest.mark.parametrize("bad", ["abcd", 1, 1.5, None, True, b"ab", ["a"], "\ud800"])
def test_utf32_bad_fill_values(bad: object) -> None:
    d = parse_data_type(_dt(U, 12))
    with pytest.raises(MetadataError, match="fill_value"):
        d.parse_fill_value(bad, "fill_value")


@pytest.mark.parametrize("raw", [b"", b"a", b"abc", b"a\x00", b"\x00\x00\x00", b"\xff\x00\x01"])
def test_ntb_fill_values(raw: bytes) -> None:
    d = parse_data_type(_dt(S, 3))
    js = base64.b64encode(raw).decode()
    got = d.parse_fill_value(js)
    assert isinstance(got, np.bytes_) and got == raw.rstrip(b"\x00")
    assert d.parse_fill_value(d.fill_value_to_json(got)) == got
    assert d.fill_value_to_json(d.default_fill_value()) == ""


@pytest.mark.parametrize("bad", ["YWJjZA==", "not base64!", "YQ", 3, None, [97], True])
def test_ntb_bad_fill_values(bad: object) -> None:
    d = parse_data_type(_dt(S, 3))
    with pytest.raises(MetadataError, match="fill_value"):
        d.parse_fill_value(bad, "fill_value")


def _zarr_json(tmp_path, name: str) -> dict:
    return json.loads((tmp_path / name / "zarr.json").read_text())


def test_create_array_metadata_matches_zarr_python_form(tmp_path) -> None:
    zarrcy.create_array(str(tmp_path), name="u", shape=(3,), dtype="U10", fill_value="x")
    zarrcy.create_array(str(tmp_path), name="s", shape=(3,), dtype="S4", fill_value=b"ab")
    zarrcy.create_array(str(tmp_path), name="s2", shape=(3,), dtype="S4", fill_value="ab")  # ASCII text
    zarrcy.create_array(str(tmp_path), name="d", shape=(3,), dtype=">U2")
    u, s, s2, d = (_zarr_json(tmp_path, n) for n in ("u", "s", "s2", "d"))
    assert u["data_type"] == _dt(U, 40) and u["fill_value"] == "x"
    assert u["codecs"][0] == {"name": "bytes", "configuration": {"endian": "little"}}
    assert s["data_type"] == _dt(S, 4) and s["fill_value"] == base64.b64encode(b"ab").decode()
    assert s["codecs"][0] == {"name": "bytes"}  # no byte order for bytes
    assert s2["fill_value"] == s["fill_value"]
    assert d["data_type"] == _dt(U, 8) and d["fill_value"] == ""
    assert zarrcy.open_array(str(tmp_path / "u")).fill_value == "x"


@pytest.mark.parametrize("dtype,fill", [("U2", "abc"), ("S2", b"abc"), ("S2", "é"), ("U2", 5), ("S2", 5)])
def test_create_array_bad_fill(tmp_path, dtype: str, fill: object) -> None:
    with pytest.raises(MetadataError, match="fill_value"):
        zarrcy.create_array(str(tmp_path), name="a", shape=(2,), dtype=dtype, fill_value=fill)


def test_bytes_codec_endian_required_for_utf32(tmp_path) -> None:
    with pytest.raises(MetadataError, match="endian"):
        zarrcy.create_array(str(tmp_path), name="a", shape=(2,), dtype="U2", serializer={"name": "bytes"})
    # S<n> has no byte order: an endian given is dropped from the metadata
    zarrcy.create_array(str(tmp_path), name="b", shape=(2,), dtype="S2",
                        serializer={"name": "bytes", "configuration": {"endian": "big"}})
    assert _zarr_json(tmp_path, "b")["codecs"][0] == {"name": "bytes"}


@pytest.mark.parametrize(
    "data_type,fill,where",
    [
        (_dt(U, 6), "", "data_type.configuration.length_bytes"),
        (_dt(U, -4), "", "data_type.configuration.length_bytes"),
        (_dt(S, "3"), "", "data_type.configuration.length_bytes"),
        (_dt(U, 8), "abc", "fill_value"),
        (_dt(U, 8), 0, "fill_value"),
        (_dt(S, 2), "YWJj", "fill_value"),  # 3 bytes into S2
        (_dt(S, 2), "ab", "fill_value"),  # not base64 of a valid length
        (_dt(S, 2), [97], "fill_value"),
    ],
)
def test_open_bad_zarr_json_names_the_member(tmp_path, data_type: dict, fill: object, where: str) -> None:
    zarrcy.create_array(str(tmp_path), name="a", shape=(2,), dtype="S2" if data_type["name"] == S else "U2")
    meta_path = tmp_path / "a" / "zarr.json"
    doc = json.loads(meta_path.read_text())
    doc["data_type"], doc["fill_value"] = data_type, fill
    if data_type["name"] == U:
        doc["codecs"][0] = {"name": "bytes", "configuration": {"endian": "little"}}
    meta_path.write_text(json.dumps(doc))
    with pytest.raises(MetadataError) as e:
        zarrcy.open_array(str(tmp_path / "a"))
    assert e.value.path is not None and e.value.path.endswith(where)  # e.g. "zarr.json.fill_value"
    assert where in str(e.value)
