"""Array metadata documents (v3-core.rst "Array metadata", "Extensions")."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest

from zarrcy.chunk_grid import RegularChunkGrid
from zarrcy.chunk_key_encoding import DefaultChunkKeyEncoding, V2ChunkKeyEncoding
from zarrcy.codecs._base import ArraySpec
from zarrcy.errors import MetadataError, UnknownCodecError, UnknownExtensionError
from zarrcy.document import ArrayMetadata, GroupMetadata
from zarrcy.metadata import parse_data_type

# v3-core.rst "Array metadata" -> "Example" (verbatim)
CORE_EXAMPLE_1 = """{
"zarr_format": 3,
"node_type": "array",
"shape": [10000, 1000],
"dimension_names": ["rows", "columns"],
"data_type": "float64",
"chunk_grid": {
"name": "regular",
"configuration": {
"chunk_shape": [1000, 100]
}
},
"chunk_key_encoding": {
"name": "default",
"configuration": {
"separator": "/"
}
},
"codecs": [{
"name": "bytes",
"configuration": {
"endian": "little"
}
}],
"fill_value": "NaN",
"attributes": {
"foo": 42,
"bar": "apples",
"baz": [1, 2, 3, 4]
}
}"""

# v3-core.rst second example (made-up extension data type); verbatim it has a trailing
# comma after "fill_value": null, which is invalid JSON
CORE_EXAMPLE_2 = """{
"zarr_format": 3,
"node_type": "array",
"shape": [10000, 1000],
"data_type": {
"name": "urn:example:datetime",
"configuration": {
"unit": "ns"
}
},
"chunk_grid": {
"name": "regular",
"configuration": {
"chunk_shape": [1000, 100]
}
},
"chunk_key_encoding": {
"name": "default",
"configuration": {
"separator": "/"
}
},
"codecs": [{
"name": "bytes",
"configuration": {
"endian": "big"
}
}],
"fill_value": null,
}"""


def test_core_example_round_trips_bytes_and_dict() -> None:
    expected = json.loads(CORE_EXAMPLE_1)
    for src in (CORE_EXAMPLE_1, CORE_EXAMPLE_1.encode(), json.loads(CORE_EXAMPLE_1)):
        m = ArrayMetadata.from_json(src)
        assert m.to_json() == expected
        assert json.loads(m.to_bytes()) == expected
        assert ArrayMetadata.from_json(m.to_bytes()) == m
    assert m.shape == (10000, 1000)
    assert m.data_type == parse_data_type("float64")
    assert m.chunk_grid == RegularChunkGrid((1000, 100))
    assert m.chunk_key_encoding == DefaultChunkKeyEncoding("/")
    assert np.isnan(m.fill_value) and m.fill_value.dtype == np.float64
    assert m.dimension_names == ("rows", "columns")
    assert m.attributes == {"foo": 42, "bar": "apples", "baz": [1, 2, 3, 4]}
    assert m.ndim == 2 and m.chunks == (1000, 100) and m.dtype == np.dtype("float64")
    assert m.storage_transformers == () and m.extra == {}
    assert isinstance(m.codecs, tuple) and len(m.codecs) == 1
    assert m.codecs[0].to_dict()["name"] == "bytes"


def test_core_example_2_verbatim_is_invalid_json() -> None:
    with pytest.raises(MetadataError, match="invalid JSON"):
        ArrayMetadata.from_json(CORE_EXAMPLE_2)


def test_core_example_2_unknown_data_type() -> None:
    fixed = CORE_EXAMPLE_2.replace('"fill_value": null,\n}', '"fill_value": null\n}')
    with pytest.raises(UnknownExtensionError, match="urn:example:datetime") as e:
        ArrayMetadata.from_json(fixed)
    assert "data_type" in str(e.value)


# v3-core.rst "Extension example", made valid JSON (comments and "..." removed, the
# missing node_type / fill_value added) so that only the extensions are unknown
EXTENSION_EXAMPLE: dict[str, Any] = {
    "zarr_format": 3,
    "node_type": "array",
    "data_type": "string",
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}},
    "codecs": [{"name": "vlen-utf8"}, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [32]}},
    "shape": [128],
    "dimension_names": ["x"],
    "attributes": {},
    "fill_value": "",
}


def test_extension_example_parses() -> None:
    """Its extensions (the ``string`` data type, the ``vlen-utf8`` codec) are implemented
    now: the example parses and writes back the same document."""
    m = ArrayMetadata.from_json(EXTENSION_EXAMPLE)
    assert m.data_type.name == "string"
    assert ArrayMetadata.from_json(m.to_json()).to_json() == m.to_json()


def test_extension_example_unknown_data_type() -> None:
    doc = dict(EXTENSION_EXAMPLE, data_type="made-up-string")
    with pytest.raises(UnknownExtensionError, match="'made-up-string'"):
        ArrayMetadata.from_json(doc)


def test_extension_example_unknown_codec() -> None:
    doc = dict(EXTENSION_EXAMPLE, codecs=[{"name": "made-up-vlen"}, EXTENSION_EXAMPLE["codecs"][1]])
    with pytest.raises(UnknownCodecError, match="made-up-vlen"):
        ArrayMetadata.from_json(doc)


def _with_codecs(codecs: list[Any], data_type: str = "float32", fill_value: Any = 0.0) -> dict[str, Any]:
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [64, 64],
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64, 64]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": codecs,
    }


# codec specs' "codecs" examples embedded in a full document.  With the fake registry
# of conftest.py these only check the document layer; with zarrcy.codecs present they
# check the real codecs (which may write defaults explicitly, hence the name check).
LE = {"name": "bytes", "configuration": {"endian": "little"}}
CODEC_EXAMPLES = {
    "blosc": _with_codecs([LE, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}]),
    "gzip": _with_codecs([LE, {"name": "gzip", "configuration": {"level": 1}}]),
    "zstd": _with_codecs([LE, {"name": "zstd", "configuration": {"level": 1, "checksum": True}}]),
    "sharding": _with_codecs(
        [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [32, 32],
                    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}],
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                    "index_location": "end",
                },
            }
        ]
    ),
    "cast_value": _with_codecs(
        [
            {
                "name": "cast_value",
                "configuration": {
                    "data_type": "uint8",
                    "rounding": "towards-zero",
                    "out_of_range": "wrap",
                    "scalar_map": {"encode": [["NaN", 0], ["+Infinity", 0], ["-Infinity", 0]]},
                },
            },
            "bytes",
        ],
        data_type="float64",
    ),
    # (the spec writes plain "bytes" here; v3-codec-bytes.rst requires endian for float32)
    "scale_offset_float32": _with_codecs([{"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}}, LE]),
    "scale_offset_uint16": _with_codecs(
        [{"name": "scale_offset", "configuration": {"offset": 1000}}, {"name": "cast_value", "configuration": {"data_type": "uint8"}}, "bytes"],
        data_type="uint16",
        fill_value=1000,
    ),
    "scale_offset_nan": _with_codecs(
        [
            {"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
            {
                "name": "cast_value",
                "configuration": {"data_type": "uint8", "rounding": "nearest-even", "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}},
            },
            "bytes",
        ],
        data_type="float64",
        fill_value="NaN",
    ),
}


@pytest.mark.parametrize("name", sorted(CODEC_EXAMPLES))
def test_codec_spec_examples(name: str) -> None:
    doc = CODEC_EXAMPLES[name]
    # every codec of the spec examples is implemented: an unknown one is a failure, not a skip
    m = ArrayMetadata.from_json(json.dumps(doc))
    out = m.to_json()
    names = [c if isinstance(c, str) else c["name"] for c in doc["codecs"]]
    assert [c["name"] for c in out["codecs"]] == names
    assert {k: v for k, v in out.items() if k != "codecs"} == {k: v for k, v in doc.items() if k != "codecs"}
    assert ArrayMetadata.from_json(m.to_bytes()) == m


# ------------------------------------------------------------------- writing


def test_key_order_and_determinism(array_doc: Any) -> None:
    doc = array_doc(
        attributes={"b": 1, "a": 2},
        dimension_names=["y", None],
        storage_transformers=[{"name": "caching", "must_understand": False}],
        zzz={"must_understand": False, "v": 1},
    )
    # scramble the input order: the output order is fixed
    scrambled = dict(reversed(list(doc.items())))
    m = ArrayMetadata.from_json(json.dumps(scrambled))
    assert list(m.to_json()) == [
        "zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value",
        "codecs", "attributes", "dimension_names", "storage_transformers", "zzz",
    ]
    b = m.to_bytes()
    assert b == ArrayMetadata.from_json(b).to_bytes()
    assert b.startswith(b'{"zarr_format": 3, "node_type": "array"')
    assert list(json.loads(b)["attributes"]) == ["b", "a"]  # user key order kept


def test_optional_members_omitted_when_empty(array_doc: Any) -> None:
    out = ArrayMetadata.from_json(array_doc(attributes={}, storage_transformers=[])).to_json()
    assert "attributes" not in out and "storage_transformers" not in out and "dimension_names" not in out


def test_nan_never_bare_token(array_doc: Any) -> None:
    m = ArrayMetadata.from_json(array_doc(fill_value="NaN", attributes={"x": float("nan"), "y": [float("inf"), -float("inf")]}))
    b = m.to_bytes()
    json.loads(b, parse_constant=lambda c: pytest.fail(f"bare {c} in output"))
    doc = json.loads(b)
    assert doc["fill_value"] == "NaN"
    assert doc["attributes"] == {"x": "NaN", "y": ["Infinity", "-Infinity"]}


def test_bare_nan_tokens_in_attributes_are_read() -> None:
    # zarr-python writes attributes with bare NaN / Infinity tokens
    text = json.dumps(dict(_with_codecs([LE]), attributes={"a": float("nan")}))
    assert "NaN" in text
    m = ArrayMetadata.from_json(text)
    assert np.isnan(m.attributes["a"])


def test_numpy_values_in_attributes_serialise(array_doc: Any) -> None:
    m = ArrayMetadata.from_json(array_doc())
    import dataclasses

    m2 = dataclasses.replace(m, attributes={"i": np.int32(3), "f": np.float32(0.5), "a": np.arange(3), "b": np.bool_(True)})
    assert json.loads(m2.to_bytes())["attributes"] == {"i": 3, "f": 0.5, "a": [0, 1, 2], "b": True}


def test_unserialisable_attributes(array_doc: Any) -> None:
    import dataclasses

    # refused when the metadata is built (attributes are checked then), naming the value
    with pytest.raises(MetadataError, match=r"attributes\.x: expected a JSON value"):
        dataclasses.replace(ArrayMetadata.from_json(array_doc()), attributes={"x": object()})


def test_spec_and_replace(array_doc: Any) -> None:
    import dataclasses

    m = ArrayMetadata.from_json(array_doc(fill_value=1.5))
    s = m.spec
    assert isinstance(s, ArraySpec)
    assert s.shape == (5, 5) and s.dtype == np.float32 and s.fill_value == np.float32(1.5) and s.data_type is m.data_type
    m2 = dataclasses.replace(m, shape=(100, 100))
    assert m2.shape == (100, 100) and m2.spec.shape == (5, 5)
    assert ArrayMetadata.from_json(m2.to_json()) == m2


def test_v2_key_encoding_and_shorthand(array_doc: Any) -> None:
    m = ArrayMetadata.from_json(array_doc(chunk_key_encoding={"name": "v2"}))
    assert m.chunk_key_encoding == V2ChunkKeyEncoding(".")
    assert m.to_json()["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "."}}
    m = ArrayMetadata.from_json(array_doc(chunk_key_encoding="default"))
    assert m.chunk_key_encoding == DefaultChunkKeyEncoding("/")


def test_zero_dim_and_zero_length(array_doc: Any) -> None:
    m = ArrayMetadata.from_json(array_doc(shape=[], chunk_grid={"name": "regular", "configuration": {"chunk_shape": []}}))
    assert m.shape == () and m.ndim == 0
    m = ArrayMetadata.from_json(array_doc(shape=[0, 3]))
    assert m.shape == (0, 3)


def test_must_understand_false_extras_preserved(array_doc: Any) -> None:
    ext = {"must_understand": False, "kind": "inline", "metadata": {}}
    m = ArrayMetadata.from_json(array_doc(consolidated_metadata=ext))
    assert m.extra == {"consolidated_metadata": ext}
    assert m.to_json()["consolidated_metadata"] == ext


def test_storage_transformer_ignorable_preserved(array_doc: Any) -> None:
    st = [{"name": "example.cache", "configuration": {"x": 1}, "must_understand": False}]
    m = ArrayMetadata.from_json(array_doc(storage_transformers=st))
    assert m.storage_transformers == tuple(st)
    assert m.to_json()["storage_transformers"] == st


def test_exact_decimal_fill_value_from_text(array_doc: Any) -> None:
    # 1 + 2**-11 is a float16 tie; the decimal text is slightly above it: must round up.
    # Via binary64 first it would land exactly on the tie and round (to even) down.
    text = json.dumps(array_doc(data_type="float16", fill_value=0.0)).replace('"fill_value": 0.0', '"fill_value": 1.000488281250000000001')
    m = ArrayMetadata.from_json(text)
    assert m.fill_value == np.float16(1.0009765625)
    # from a dict the binary64 value is all there is: the tie goes to even
    assert ArrayMetadata.from_json(json.loads(text)).fill_value == np.float16(1.0)
    # complex64 components too
    text = json.dumps(array_doc(data_type="complex64", fill_value=[0.0, 0.0])).replace(
        '"fill_value": [0.0, 0.0]', '"fill_value": [1.00000005960464477539062500001, 0]'
    )
    assert ArrayMetadata.from_json(text).fill_value.real == np.float32(1.0000001192092896)


# ------------------------------------------------------------------- invalid documents


def test_invalid_json() -> None:
    with pytest.raises(MetadataError, match="invalid JSON"):
        ArrayMetadata.from_json(b'{"zarr_format": 3,')


def test_invalid_utf8() -> None:
    with pytest.raises(MetadataError):
        ArrayMetadata.from_json(b'\xff\xfe{"a":1}')


@pytest.mark.parametrize("text", ["[]", "[1, 2]", "3", '"zarr"', "null", "true"])
def test_not_an_object(text: str) -> None:
    with pytest.raises(MetadataError, match="expected a JSON object"):
        ArrayMetadata.from_json(text)


@pytest.mark.parametrize("member", ["zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs"])
def test_mandatory_member_missing(member: str, array_doc: Any, DELETE: object) -> None:
    with pytest.raises(MetadataError, match=rf"^{member}: expected .*missing") as e:
        ArrayMetadata.from_json(array_doc(**{member: DELETE}))
    assert e.value.path == member


BAD_MEMBERS = [
    # (overrides, path in message, error class)
    ({"zarr_format": 2}, "zarr_format", MetadataError),
    ({"zarr_format": "3"}, "zarr_format", MetadataError),
    ({"zarr_format": 3.0}, "zarr_format", MetadataError),
    ({"zarr_format": True}, "zarr_format", MetadataError),
    ({"node_type": "group"}, "node_type", MetadataError),
    ({"node_type": "Array"}, "node_type", MetadataError),
    ({"node_type": 1}, "node_type", MetadataError),
    ({"shape": "10"}, "shape", MetadataError),
    ({"shape": {"0": 10}}, "shape", MetadataError),
    ({"shape": [10, -1]}, r"shape\[1\]", MetadataError),
    ({"shape": [10, 2.0]}, r"shape\[1\]", MetadataError),
    ({"shape": [True, 20]}, r"shape\[0\]", MetadataError),
    ({"shape": [10, None]}, r"shape\[1\]", MetadataError),
    ({"shape": [2**63, 1]}, r"shape\[0\]", MetadataError),
    ({"shape": [2**32, 2**32]}, "shape", MetadataError),
    ({"data_type": 5}, "data_type", MetadataError),
    ({"data_type": "float128"}, "data_type", UnknownExtensionError),
    ({"data_type": {"name": "float32", "must_understand": False}}, r"data_type\.must_understand", MetadataError),
    ({"chunk_grid": "regular"}, r"chunk_grid\.configuration\.chunk_shape", MetadataError),
    ({"chunk_grid": []}, "chunk_grid", MetadataError),
    ({"chunk_grid": {"name": "rectilinear", "configuration": {}}}, r"chunk_grid\.configuration\.kind", MetadataError),
    ({"chunk_grid": {"name": "rectangular", "configuration": {}}}, r"chunk_grid\.name", UnknownExtensionError),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5]}, "must_understand": False}}, r"chunk_grid\.must_understand", MetadataError),
    ({"chunk_grid": {"name": "regular"}}, r"chunk_grid\.configuration\.chunk_shape", MetadataError),
    ({"chunk_grid": {"name": "regular", "configuration": {}}}, r"chunk_grid\.configuration\.chunk_shape", MetadataError),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5]}}}, r"chunk_grid\.configuration\.chunk_shape", MetadataError),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5, 5]}}}, r"chunk_grid\.configuration\.chunk_shape", MetadataError),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 0]}}}, r"chunk_grid\.configuration\.chunk_shape\[1\]", MetadataError),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [-5, 5]}}}, r"chunk_grid\.configuration\.chunk_shape\[0\]", MetadataError),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [True, 5]}}}, r"chunk_grid\.configuration\.chunk_shape\[0\]", MetadataError),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5.0, 5]}}}, r"chunk_grid\.configuration\.chunk_shape\[0\]", MetadataError),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2**32, 2**32]}}}, r"chunk_grid\.configuration\.chunk_shape", MetadataError),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5], "x": 1}}}, r"chunk_grid\.configuration\.x", MetadataError),
    ({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5]}, "x": 1}}, r"chunk_grid\.x", MetadataError),
    ({"chunk_key_encoding": "v3"}, "chunk_key_encoding", UnknownExtensionError),
    ({"chunk_key_encoding": 1}, "chunk_key_encoding", MetadataError),
    ({"chunk_key_encoding": {"name": "default", "configuration": {"separator": "-"}}}, r"chunk_key_encoding\.configuration\.separator", MetadataError),
    ({"chunk_key_encoding": {"name": "default", "configuration": {"sep": "/"}}}, r"chunk_key_encoding\.configuration\.sep", MetadataError),
    ({"chunk_key_encoding": {"name": "default", "must_understand": False}}, r"chunk_key_encoding\.must_understand", MetadataError),
    ({"chunk_key_encoding": {"name": "default", "configuration": []}}, r"chunk_key_encoding\.configuration", MetadataError),
    ({"fill_value": None}, "fill_value", MetadataError),
    ({"fill_value": "nan"}, "fill_value", MetadataError),
    ({"fill_value": [0, 0]}, "fill_value", MetadataError),
    ({"data_type": "uint8", "fill_value": 256}, "fill_value", MetadataError),
    ({"data_type": "int32", "fill_value": 1.0}, "fill_value", MetadataError),
    ({"data_type": "int32", "fill_value": True}, "fill_value", MetadataError),
    ({"data_type": "bool", "fill_value": 0}, "fill_value", MetadataError),
    ({"codecs": []}, "codecs", MetadataError),
    ({"codecs": {"name": "bytes"}}, "codecs", MetadataError),
    ({"codecs": "bytes"}, "codecs", MetadataError),
    ({"codecs": [{"name": "made-up-codec"}]}, r"codecs\[0\](\.name)?", UnknownCodecError),
    ({"attributes": []}, "attributes", MetadataError),
    ({"attributes": "x"}, "attributes", MetadataError),
    ({"attributes": None}, "attributes", MetadataError),
    ({"dimension_names": ["x"]}, "dimension_names", MetadataError),
    ({"dimension_names": ["x", "y", "z"]}, "dimension_names", MetadataError),
    ({"dimension_names": ["x", 1]}, r"dimension_names\[1\]", MetadataError),
    ({"dimension_names": "xy"}, "dimension_names", MetadataError),
    ({"storage_transformers": [{"name": "sharding"}]}, r"storage_transformers\[0\]", UnknownExtensionError),
    ({"storage_transformers": ["caching"]}, r"storage_transformers\[0\]", UnknownExtensionError),
    ({"storage_transformers": [{"name": "caching", "must_understand": True}]}, r"storage_transformers\[0\]", UnknownExtensionError),
    ({"storage_transformers": [{"name": "Bad/Name", "must_understand": False}]}, r"storage_transformers\[0\]\.name", MetadataError),
    ({"storage_transformers": [{"configuration": {}, "must_understand": False}]}, r"storage_transformers\[0\]\.name", MetadataError),
    ({"storage_transformers": {"name": "x"}}, "storage_transformers", MetadataError),
    ({"storage_transformers": [{"name": "xy", "must_understand": "false"}]}, r"storage_transformers\[0\]\.must_understand", MetadataError),
    ({"unknown_key": 1}, "unknown_key", UnknownExtensionError),
    ({"unknown_key": {"must_understand": True}}, "unknown_key", UnknownExtensionError),
    ({"unknown_key": {"x": 1}}, "unknown_key", UnknownExtensionError),
    ({"unknown_key": {"must_understand": "false"}}, "unknown_key", UnknownExtensionError),
    ({"dtype": "<f4"}, "dtype", UnknownExtensionError),
]


@pytest.mark.parametrize("overrides,path,err", BAD_MEMBERS, ids=[str(b[0])[:60] for b in BAD_MEMBERS])
def test_bad_member(overrides: dict[str, Any], path: str, err: type, array_doc: Any) -> None:
    doc = array_doc(**copy.deepcopy(overrides))
    for src in (doc, json.dumps(doc).encode()):
        with pytest.raises(err, match=rf"^{path}: ") as e:
            ArrayMetadata.from_json(src)
        assert isinstance(e.value, MetadataError) and isinstance(e.value, ValueError)


def test_error_message_format(array_doc: Any) -> None:
    with pytest.raises(MetadataError) as e:
        ArrayMetadata.from_json(array_doc(shape=[10, -1]))
    assert str(e.value) == "shape[1]: expected an integer in [0, 9223372036854775807], received -1"
    assert e.value.path == "shape[1]"


def test_path_prefix(array_doc: Any) -> None:
    with pytest.raises(MetadataError, match=r"^a/b/zarr\.json\.fill_value: ") as e:
        ArrayMetadata.from_json(array_doc(fill_value="x"), path="a/b/zarr.json")
    assert e.value.path == "a/b/zarr.json.fill_value"


def test_group_document_is_not_an_array() -> None:
    with pytest.raises(MetadataError, match="node_type"):
        ArrayMetadata.from_json({"zarr_format": 3, "node_type": "group"})


def test_v2_document_rejected() -> None:
    v2 = {"zarr_format": 2, "shape": [10], "chunks": [5], "dtype": "<f4", "compressor": None, "fill_value": 0, "order": "C", "filters": None}
    with pytest.raises(MetadataError, match="zarr_format"):
        ArrayMetadata.from_json(v2)
    with pytest.raises(MetadataError, match="zarr_format"):
        GroupMetadata.from_json({"zarr_format": 2})


def test_all_core_and_extension_types_parse(array_doc: Any) -> None:
    from zarrcy.metadata import DATA_TYPES

    for name, d in DATA_TYPES.items():
        fv = d.fill_value_to_json(d.default_fill_value())
        m = ArrayMetadata.from_json(array_doc(data_type=name, fill_value=fv))
        assert m.dtype == d.dtype
        assert m.to_json()["fill_value"] == fv
    m = ArrayMetadata.from_json(array_doc(data_type="r16", fill_value=[1, 2]))
    assert m.dtype == np.dtype("V2") and m.to_json()["fill_value"] == [1, 2]
