"""The struct data type (ext-data-types/struct.md, legacy structured.md): metadata,
fill values, numpy dtypes in and out, bad input naming the JSON path."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import ml_dtypes
import numpy as np
import pytest

from zarrcy.errors import MetadataError, UnknownExtensionError
from zarrcy.metadata.data_type import from_numpy, parse_data_type

POINT = {"name": "struct", "configuration": {"fields": [
    {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "float32"}]}}
LAYOUT = {"name": "struct", "configuration": {"fields": [
    {"name": "id", "data_type": "int32"}, {"name": "flags", "data_type": "uint8"},
    {"name": "value", "data_type": "float64"}]}}
NESTED = {"name": "struct", "configuration": {"fields": [
    {"name": "point", "data_type": POINT}, {"name": "value", "data_type": "float64"}]}}
TIMESTAMP = {"name": "struct", "configuration": {"fields": [
    {"name": "timestamp", "data_type": {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}},
    {"name": "value", "data_type": "float32"}]}}


# ------------------------------------------------------------------ the spec's examples


def test_spec_point_example_round_trips():
    d = parse_data_type(POINT)
    assert d.name == "struct" and d.category == "struct"
    assert d.dtype == np.dtype([("x", "<f4"), ("y", "<f4")]) and d.itemsize == 8
    assert d.to_json() == POINT
    fv = d.parse_fill_value({"x": 0.0, "y": 0.0})
    assert d.fill_value_to_json(fv) == {"x": 0.0, "y": 0.0}
    fv = d.parse_fill_value({"x": 1.23, "y": 4.56})
    assert fv["x"] == np.float32(1.23) and fv["y"] == np.float32(4.56)
    assert d.fill_value_to_json(fv) == {"x": 1.23, "y": 4.56}


def test_spec_layout_example_packed_offsets():
    d = parse_data_type(LAYOUT)
    assert d.itemsize == 13  # 4 + 1 + 8, no padding
    assert [d.dtype.fields[n][1] for n in ("id", "flags", "value")] == [0, 4, 5]


def test_spec_nested_example():
    d = parse_data_type(NESTED)
    assert d.itemsize == 16
    assert d.dtype.fields["point"][1] == 0 and d.dtype.fields["value"][1] == 8
    assert d.dtype["point"].fields["y"][1] == 4
    assert d.to_json() == NESTED
    fv = d.parse_fill_value({"point": {"x": 1.0, "y": 2.0}, "value": 3.14})
    assert d.fill_value_to_json(fv) == {"point": {"x": 1.0, "y": 2.0}, "value": 3.14}
    assert fv["point"]["y"] == 2.0


def test_spec_parametrized_field():
    d = parse_data_type(TIMESTAMP)
    assert d.dtype["timestamp"] == np.dtype("M8[s]")
    assert d.to_json() == TIMESTAMP
    fv = d.parse_fill_value({"timestamp": 86400, "value": 1.5})
    assert fv["timestamp"] == np.datetime64(86400, "s")
    assert d.fill_value_to_json(fv) == {"timestamp": 86400, "value": 1.5}


def test_field_data_type_object_without_configuration():
    # struct.md change log: {"name": "float64"} is a valid field data type
    d = parse_data_type({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": {"name": "float64"}}]}})
    assert d.dtype == np.dtype([("a", "f8")])


def test_every_fixed_size_field_type():
    types = ["bool", "int8", "uint16", "int64", "float16", "bfloat16", "float8_e4m3", "float8_e8m0fnu", "int4",
             "complex64", "complex_float16", "r24", {"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}},
             {"name": "null_terminated_bytes", "configuration": {"length_bytes": 5}}]
    fields = [{"name": f"f{i}", "data_type": t} for i, t in enumerate(types)]
    d = parse_data_type({"name": "struct", "configuration": {"fields": fields}})
    assert d.itemsize == sum(parse_data_type(t).itemsize for t in types)
    assert d.to_json()["configuration"]["fields"] == fields
    fv = d.default_fill_value()
    js = d.fill_value_to_json(fv)
    assert d.fill_value_to_json(d.parse_fill_value(js)) == js
    assert d.parse_fill_value(js).tobytes() == fv.tobytes()


def test_fill_values_exact_bits():
    d = parse_data_type({"name": "struct", "configuration": {"fields": [
        {"name": "f", "data_type": "float32"}, {"name": "b", "data_type": "bfloat16"}, {"name": "i", "data_type": "uint64"}]}})
    fv = d.parse_fill_value({"f": "0x7fc00001", "b": "-Infinity", "i": 2**64 - 1})
    assert fv.tobytes() == bytes.fromhex("0100c07f") + bytes.fromhex("80ff") + b"\xff" * 8
    assert d.fill_value_to_json(fv) == {"f": "0x7fc00001", "b": "-Infinity", "i": 2**64 - 1}
    # a decimal that needs its exact text (float16 tie) is re-read from the document
    from zarrcy.metadata.fill_value import needs_exact_text

    d16 = parse_data_type({"name": "struct", "configuration": {"fields": [{"name": "h", "data_type": "float16"}]}})
    assert needs_exact_text(d16, {"h": float("1.00048828125000000001")})  # a float16 tie after json.loads
    assert not needs_exact_text(d16, {"h": 1.5})
    assert d16.parse_fill_value({"h": Decimal("1.00048828125000000001")})["h"] == np.float16(1.0009765625)


def test_python_side_fill_values():
    d = parse_data_type(LAYOUT)
    a = d.parse_fill_value((1, 2, 3.5))
    b = d.parse_fill_value({"id": 1, "flags": 2, "value": 3.5})
    assert a.tobytes() == b.tobytes()
    assert d.fill_value_to_json(np.array((1, 2, 3.5), dtype=d.dtype)[()]) == {"id": 1, "flags": 2, "value": 3.5}


# ------------------------------------------------------------------ legacy "structured"


def test_legacy_structured_tuple_fields_and_base64_fill():
    doc = {"name": "structured", "configuration": {"fields": [["x", "int32"], ["y", "float64"]]}}
    d = parse_data_type(doc)
    assert d.name == "structured" and d.dtype == np.dtype([("x", "i4"), ("y", "f8")])
    raw = np.array((7, 2.5), dtype=[("x", "<i4"), ("y", "<f8")]).tobytes()
    fv = d.parse_fill_value(base64.b64encode(raw).decode())
    assert fv["x"] == 7 and fv["y"] == 2.5
    assert d.to_json() == doc  # kept as read: a rewritten document stays readable to old readers
    assert d.fill_value_to_json(fv) == base64.b64encode(raw).decode()
    assert d.parse_fill_value({"x": 7, "y": 2.5}).tobytes() == fv.tobytes()  # objects too (zarr-python 3.4)
    with pytest.raises(MetadataError, match="fill_value"):
        d.parse_fill_value(base64.b64encode(raw[:-1]).decode())


def test_struct_does_not_take_legacy_forms():
    with pytest.raises(MetadataError, match=r"data_type\.configuration\.fields\[0\]"):
        parse_data_type({"name": "struct", "configuration": {"fields": [["x", "int32"]]}})
    d = parse_data_type(POINT)
    with pytest.raises(MetadataError, match="fill_value"):
        d.parse_fill_value(base64.b64encode(bytes(8)).decode())


# ------------------------------------------------------------------ bad input

BAD_TYPES = [
    ({"name": "struct"}, "data_type.configuration.fields"),
    ({"name": "struct", "configuration": {}}, "data_type.configuration.fields"),
    ({"name": "struct", "configuration": {"fields": []}}, "data_type.configuration.fields"),
    ({"name": "struct", "configuration": {"fields": {"x": "int8"}}}, "data_type.configuration.fields"),
    ({"name": "struct", "configuration": {"fields": [{"name": "x", "data_type": "int8"}], "extra": 1}},
     "data_type.configuration.extra"),
    ({"name": "struct", "configuration": {"fields": [{"name": "", "data_type": "int8"}]}},
     r"data_type\.configuration\.fields\[0\]\.name"),
    ({"name": "struct", "configuration": {"fields": [{"name": 3, "data_type": "int8"}]}},
     r"data_type\.configuration\.fields\[0\]\.name"),
    ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "int8"}, {"name": "a", "data_type": "int16"}]}},
     r"data_type\.configuration\.fields\[1\]\.name"),
    ({"name": "struct", "configuration": {"fields": [{"name": "a"}]}}, r"data_type\.configuration\.fields\[0\]\.data_type"),
    ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "int8", "shape": [2]}]}},
     r"data_type\.configuration\.fields\[0\]\.shape"),
    ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "string"}]}},
     r"data_type\.configuration\.fields\[0\]\.data_type"),
    ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "bytes"}]}},
     r"data_type\.configuration\.fields\[0\]\.data_type"),
    ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": 7}]}},
     r"data_type\.configuration\.fields\[0\]\.data_type"),
    ({"name": "struct", "configuration": {"fields": [{"name": "p", "data_type": {"name": "struct", "configuration": {
        "fields": [{"name": "q", "data_type": "int8"}, {"name": "q", "data_type": "int8"}]}}}]}},
     r"data_type\.configuration\.fields\[0\]\.data_type\.configuration\.fields\[1\]\.name"),
    ({"name": "structured", "configuration": {"fields": [["a", "int8", "x"]]}}, r"data_type\.configuration\.fields\[0\]"),
    ({"name": "structured", "configuration": {"fields": [["", "int8"]]}}, r"data_type\.configuration\.fields\[0\]\[0\]"),
    ({"name": "struct", "configuration": {"fields": [
        {"name": "s", "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": 2**31 - 4}}},
        {"name": "t", "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": 2**31 - 4}}}]}},
     r"data_type"),
]


@pytest.mark.parametrize("doc,path", BAD_TYPES)
def test_bad_struct_types(doc, path):
    with pytest.raises(MetadataError, match=path):
        parse_data_type(doc)


def test_unknown_field_type():
    with pytest.raises(UnknownExtensionError, match=r"fields\[0\]\.data_type"):
        parse_data_type({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "float128"}]}})


def test_deep_nesting_refused():
    doc: dict = {"name": "struct", "configuration": {"fields": [{"name": "v", "data_type": "int8"}]}}
    for _ in range(200):
        doc = {"name": "struct", "configuration": {"fields": [{"name": "n", "data_type": doc}]}}
    with pytest.raises(MetadataError, match="nested at most"):
        parse_data_type(doc)


BAD_FILLS = [
    ({"x": 1.0}, r"fill_value\.y"),                       # missing field
    ({"x": 1.0, "y": 2.0, "z": 3.0}, r"fill_value\.z"),   # extra field
    ({"x": "one", "y": 2.0}, r"fill_value\.x"),           # wrong type
    ({"x": 1.0, "y": True}, r"fill_value\.y"),
    ({"x": 1.0, "y": [1]}, r"fill_value\.y"),
    ([1.0, 2.0], r"fill_value"),
    (0, r"fill_value"),
    (None, r"fill_value"),
]


@pytest.mark.parametrize("value,path", BAD_FILLS)
def test_bad_fill_values(value, path):
    d = parse_data_type(POINT)
    with pytest.raises(MetadataError, match=path):
        d.parse_fill_value(value)


def test_bad_nested_fill_value_names_path():
    d = parse_data_type(NESTED)
    with pytest.raises(MetadataError, match=r"fill_value\.point\.y"):
        d.parse_fill_value({"point": {"x": 1.0}, "value": 0.0})
    with pytest.raises(MetadataError, match=r"fill_value\.point"):
        d.parse_fill_value({"point": 1.0, "value": 0.0})
    d8 = parse_data_type({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "int8"}]}})
    with pytest.raises(MetadataError, match=r"fill_value\.a"):
        d8.parse_fill_value({"a": 300})


# ------------------------------------------------------------------ numpy in and out


def test_from_numpy_packed_and_nested():
    dt = np.dtype([("a", "<i4"), ("b", ml_dtypes.bfloat16), ("c", [("x", ">f4"), ("y", "u1")]), ("s", "U3")])
    d = from_numpy(dt)
    assert d.name == "struct"
    assert d.to_json() == {"name": "struct", "configuration": {"fields": [
        {"name": "a", "data_type": "int32"}, {"name": "b", "data_type": "bfloat16"},
        {"name": "c", "data_type": {"name": "struct", "configuration": {"fields": [
            {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "uint8"}]}}},
        {"name": "s", "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}}]}}
    assert d.dtype == np.dtype([("a", "i4"), ("b", ml_dtypes.bfloat16), ("c", [("x", "f4"), ("y", "u1")]), ("s", "U3")])
    assert parse_data_type(json.loads(json.dumps(d.to_json()))) == d


@pytest.mark.parametrize("dt,what", [
    (np.dtype([("a", "u1"), ("b", "<i4")], align=True), "packed"),
    (np.dtype({"names": ["a", "b"], "formats": ["u1", "u1"], "offsets": [0, 2]}), "packed"),
    (np.dtype({"names": ["a"], "formats": ["u1"], "itemsize": 4}), "packed"),
    (np.dtype({"names": ["a", "b"], "formats": ["u1", "u1"], "offsets": [1, 0]}), "packed"),
    (np.dtype([("a", "<f4", (3,))]), "subarray"),
    (np.dtype([(("title", "a"), "<f4")]), "title"),
    (np.dtype([("a", "O")]), "dtype"),
    (np.dtype([("p", [("a", "u1"), ("b", "<i8")], )], align=True), "packed"),
])
def test_from_numpy_refuses_what_struct_cannot_express(dt, what):
    with pytest.raises(MetadataError, match=what):
        from_numpy(dt)


def test_struct_types_compare_by_fields():
    a = parse_data_type(POINT)
    b = from_numpy(np.dtype([("x", ">f4"), ("y", "<f4")]))
    assert a == b and hash(a) == hash(b)
    assert a != parse_data_type(LAYOUT)
    assert a != parse_data_type({"name": "structured", "configuration": {"fields": [["x", "float32"], ["y", "float32"]]}})


# ------------------------------------------------------------------ whole documents


def _doc(data_type, fill, codecs=None) -> dict:
    return {"zarr_format": 3, "node_type": "array", "shape": [100], "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [100]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill, "codecs": codecs or [{"name": "bytes", "configuration": {"endian": "little"}}]}


@pytest.mark.parametrize("data_type,fill", [
    (POINT, {"x": 0.0, "y": 0.0}),                                  # struct.md "Examples", verbatim
    (POINT, {"x": 1.23, "y": 4.56}),
    (NESTED, {"point": {"x": 1.0, "y": 2.0}, "value": 3.14}),
    (TIMESTAMP, {"timestamp": -(2**63), "value": "NaN"}),
    (LAYOUT, {"id": -7, "flags": 255, "value": "-Infinity"}),
])
def test_spec_documents_round_trip(data_type, fill):
    from zarrcy.document.array import ArrayMetadata

    doc = _doc(data_type, fill)
    m = ArrayMetadata.from_json(json.dumps(doc))
    assert m.to_json() == doc
    assert ArrayMetadata.from_json(json.dumps(m.to_json())).to_json() == doc


def test_document_errors_name_the_document_path():
    from zarrcy.document.array import ArrayMetadata

    with pytest.raises(MetadataError, match=r"fill_value\.y"):
        ArrayMetadata.from_json(json.dumps(_doc(POINT, {"x": 0.0})))
    bad = {"name": "struct", "configuration": {"fields": [{"name": "x", "data_type": "float32"},
                                                          {"name": "x", "data_type": "int8"}]}}
    with pytest.raises(MetadataError, match=r"data_type\.configuration\.fields\[1\]\.name"):
        ArrayMetadata.from_json(json.dumps(_doc(bad, {"x": 0.0})))
