"""Group metadata documents (v3-core.rst "Group metadata")."""

from __future__ import annotations

import json

import pytest

from zarrcy.errors import MetadataError, UnknownExtensionError
from zarrcy.document import GroupMetadata

# v3-core.rst "Group metadata" -> "Example" (verbatim)
GROUP_EXAMPLE = """{
"zarr_format": 3,
"node_type": "group",
"attributes": {
"spam": "ham",
"eggs": 42
}
}"""


def test_group_example_round_trip() -> None:
    for src in (GROUP_EXAMPLE, GROUP_EXAMPLE.encode(), json.loads(GROUP_EXAMPLE)):
        g = GroupMetadata.from_json(src)
        assert g.attributes == {"spam": "ham", "eggs": 42}
        assert g.to_json() == json.loads(GROUP_EXAMPLE)
        assert GroupMetadata.from_json(g.to_bytes()) == g
    assert g.to_bytes() == GroupMetadata.from_json(g.to_bytes()).to_bytes()


def test_minimal_group() -> None:
    g = GroupMetadata.from_json(b'{"zarr_format": 3, "node_type": "group"}')
    assert g.attributes == {} and g.extra == {}
    assert g.to_json() == {"zarr_format": 3, "node_type": "group"}
    assert g.zarr_format == 3 and g.node_type == "group"


def test_zarr_python_consolidated_metadata_preserved() -> None:
    doc = {
        "attributes": {"a": 1},
        "zarr_format": 3,
        "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": {}},
        "node_type": "group",
    }
    g = GroupMetadata.from_json(json.dumps(doc))
    assert g.extra == {"consolidated_metadata": doc["consolidated_metadata"]}
    assert list(g.to_json()) == ["zarr_format", "node_type", "attributes", "consolidated_metadata"]


@pytest.mark.parametrize(
    "doc,path,err",
    [
        ({"node_type": "group"}, "zarr_format", MetadataError),
        ({"zarr_format": 3}, "node_type", MetadataError),
        ({"zarr_format": 2, "node_type": "group"}, "zarr_format", MetadataError),
        ({"zarr_format": 3, "node_type": "array"}, "node_type", MetadataError),
        ({"zarr_format": 3, "node_type": "group", "attributes": []}, "attributes", MetadataError),
        ({"zarr_format": 3, "node_type": "group", "shape": [1]}, "shape", UnknownExtensionError),
        ({"zarr_format": 3, "node_type": "group", "ext": {"must_understand": True}}, "ext", UnknownExtensionError),
    ],
)
def test_bad_group(doc: dict, path: str, err: type) -> None:
    with pytest.raises(err, match=rf"^{path}: "):
        GroupMetadata.from_json(doc)


@pytest.mark.parametrize("text", [b"", b"{", b"[]", b"null", b"\xff"])
def test_bad_group_json(text: bytes) -> None:
    with pytest.raises(MetadataError):
        GroupMetadata.from_json(text)


def test_group_attributes_nan_written_as_strings() -> None:
    g = GroupMetadata(attributes={"a": float("nan"), "b": {"c": float("-inf")}})
    assert json.loads(g.to_bytes()) == {"zarr_format": 3, "node_type": "group", "attributes": {"a": "NaN", "b": {"c": "-Infinity"}}}


def test_parse_node_metadata() -> None:
    from zarrcy.document import ArrayMetadata, parse_node_metadata

    g = parse_node_metadata(GROUP_EXAMPLE.encode())
    assert isinstance(g, GroupMetadata) and g.attributes["eggs"] == 42
    a = parse_node_metadata(
        json.dumps(
            {
                "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
                "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0,
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            }
        ).replace('"fill_value": 0.0', '"fill_value": 1.000488281250000000001')
    )
    assert isinstance(a, ArrayMetadata) and float(a.fill_value) == 1.0009765625
    with pytest.raises(MetadataError, match=r"^node_type: "):
        parse_node_metadata(b'{"zarr_format": 3, "node_type": "folder"}')
    with pytest.raises(MetadataError, match=r"^x/zarr\.json\.zarr_format: "):
        parse_node_metadata(b'{"zarr_format": 2}', "x/zarr.json")
    with pytest.raises(MetadataError, match=r"^node_type: "):
        parse_node_metadata(b'{"zarr_format": 3}')
    with pytest.raises(MetadataError):
        parse_node_metadata(b"[]")
