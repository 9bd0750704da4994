"""Boundaries of the metadata JSON rules in ``metadata/_parse.py`` (v3-core.rst
"Extension definition", "Array metadata"): ``must_understand`` is exactly ``true`` or
``false`` (default ``true``), an extension object has only its three members, extension
names follow ``^[a-z][a-z0-9-_.]+$`` (or a URI), integers are JSON integers within their
range (never a bool), at most MAX_RANK dimensions, attributes nested at most
MAX_JSON_DEPTH levels, a document is a JSON object.

``ci/mutation_spotcheck.py`` plants one bug at a time in ``metadata/_parse.py``; each must
fail a test here (or in test_array_metadata.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from zarrcy.errors import MetadataError, UnknownExtensionError

from zarrcy.document import ArrayMetadata, GroupMetadata
from zarrcy.metadata._parse import (
    INT64_MAX,
    MAX_JSON_DEPTH,
    MAX_RANK,
    expect_int,
    expect_int_list,
    is_extension_name,
    load_json_object,
    normalize_json_value,
    parse_extension,
)

NOT_BOOLEANS = [1, 0, 1.0, 0.0, "true", "false", "True", None, [], {}, [True]]


# -- must_understand ----------------------------------------------------------------------
@pytest.mark.parametrize("mu", [True, False])
def test_must_understand_booleans(mu: bool) -> None:
    assert parse_extension({"name": "xy", "must_understand": mu}, "e") == ("xy", None, mu)


@pytest.mark.parametrize("mu", NOT_BOOLEANS, ids=repr)
def test_must_understand_only_booleans(mu: Any) -> None:
    with pytest.raises(MetadataError, match=r"^e\.must_understand: expected .*, received "):
        parse_extension({"name": "xy", "must_understand": mu}, "e")


def test_must_understand_defaults_to_true() -> None:
    assert parse_extension({"name": "xy"}, "e") == ("xy", None, True)
    assert parse_extension("xy", "e") == ("xy", None, True)


@pytest.mark.parametrize("mu", NOT_BOOLEANS, ids=repr)
def test_must_understand_only_booleans_in_documents(array_doc: Any, mu: Any) -> None:
    for key, value in (
        ("storage_transformers", [{"name": "caching", "must_understand": mu}]),
        ("data_type", {"name": "float32", "must_understand": mu}),
    ):
        with pytest.raises(MetadataError, match=rf"{key}(\[0\])?\.must_understand"):
            ArrayMetadata.from_json(json.dumps(array_doc(**{key: value})).encode())


def test_unknown_extension_without_must_understand_is_refused(array_doc: Any) -> None:
    """An absent must_understand means true: an unknown storage transformer is refused,
    one marked false is kept."""
    with pytest.raises(UnknownExtensionError, match=r"storage_transformers\[0\]"):
        ArrayMetadata.from_json(json.dumps(array_doc(storage_transformers=[{"name": "caching"}])).encode())
    with pytest.raises(UnknownExtensionError, match=r"storage_transformers\[0\]"):
        ArrayMetadata.from_json(json.dumps(array_doc(storage_transformers=["caching"])).encode())
    kept = [{"name": "caching", "must_understand": False}]
    meta = ArrayMetadata.from_json(json.dumps(array_doc(storage_transformers=kept)).encode())
    assert list(meta.storage_transformers) == kept


def test_unknown_top_level_member_needs_must_understand_false(array_doc: Any) -> None:
    for bad in ({"x": 1}, {"must_understand": True}, {"must_understand": 0}, {"must_understand": "false"}, 5, None):
        with pytest.raises(UnknownExtensionError, match="^zzz"):
            ArrayMetadata.from_json(json.dumps(array_doc(zzz=bad)).encode())
    ArrayMetadata.from_json(json.dumps(array_doc(zzz={"must_understand": False})).encode())


# -- extension objects -------------------------------------------------------------------
@pytest.mark.parametrize("extra", ["nme", "Name", "config", "mustUnderstand", ""])
def test_extension_object_members(extra: str) -> None:
    with pytest.raises(MetadataError, match=rf"^e\.{extra}: expected .*, received "):
        parse_extension({"name": "xy", extra: 1}, "e")


def test_extension_configuration() -> None:
    assert parse_extension({"name": "xy", "configuration": {}}, "e") == ("xy", {}, True)
    for bad in (None, [], "x", 1):
        with pytest.raises(MetadataError, match=r"^e\.configuration: expected an object"):
            parse_extension({"name": "xy", "configuration": bad}, "e")


@pytest.mark.parametrize("name,ok", [
    ("ab", True), ("a1", True), ("a-_.", True), ("gzip", True), ("a", False), ("", False), ("1a", False),
    ("Ab", False), ("aB", False), ("a b", False), ("a/b", False), ("urn:example:x", True), ("https://x.org/y", True),
    ("urn:", False), (":x", False),
])
def test_extension_names(name: str, ok: bool) -> None:
    assert is_extension_name(name) is ok
    if ok:
        assert parse_extension({"name": name}, "e")[0] == name
    else:
        with pytest.raises(MetadataError, match=r"^e(\.name)?: expected an extension name"):
            parse_extension({"name": name}, "e")


# -- integers ----------------------------------------------------------------------------
def test_expect_int_boundaries() -> None:
    assert expect_int(0, "p") == 0 and expect_int(INT64_MAX, "p") == INT64_MAX
    assert expect_int(5, "p", 5, 7) == 5 and expect_int(7, "p", 5, 7) == 7
    for bad in (-1, INT64_MAX + 1, True, False, 1.0, "1", None):
        with pytest.raises(MetadataError, match=r"^p: expected an integer in \[0, "):
            expect_int(bad, "p")
    for bad in (4, 8):
        with pytest.raises(MetadataError, match=r"^p: expected an integer in \[5, 7\]"):
            expect_int(bad, "p", 5, 7)
    with pytest.raises(MetadataError, match=r"^p\[1\]: expected"):
        expect_int_list([1, True], "p")


@pytest.mark.parametrize("shape,ok", [([0], True), ([INT64_MAX], True), ([INT64_MAX + 1], False), ([-1], False),
                                      ([True], False), ([1.0], False)])
def test_shape_integers(array_doc: Any, shape: list[Any], ok: bool) -> None:
    doc = array_doc(shape=shape, chunk_grid={"name": "regular", "configuration": {"chunk_shape": [5]}})
    if ok:
        assert ArrayMetadata.from_json(json.dumps(doc).encode()).shape == tuple(shape)
    else:
        with pytest.raises(MetadataError, match=r"shape\[0\]"):
            ArrayMetadata.from_json(json.dumps(doc).encode())


@pytest.mark.parametrize("chunk,ok", [(1, True), (0, False), (True, False)])
def test_chunk_shape_integers(array_doc: Any, chunk: Any, ok: bool) -> None:
    doc = array_doc(shape=[4], chunk_grid={"name": "regular", "configuration": {"chunk_shape": [chunk]}})
    if ok:
        ArrayMetadata.from_json(json.dumps(doc).encode())
    else:
        with pytest.raises(MetadataError, match=r"chunk_shape\[0\]"):
            ArrayMetadata.from_json(json.dumps(doc).encode())


# -- rank --------------------------------------------------------------------------------
@pytest.mark.parametrize("rank", [MAX_RANK - 1, MAX_RANK, MAX_RANK + 1, MAX_RANK + 2])
def test_max_rank(array_doc: Any, rank: int) -> None:
    doc = array_doc(shape=[1] * rank, chunk_grid={"name": "regular", "configuration": {"chunk_shape": [1] * rank}})
    if rank <= MAX_RANK:
        assert len(ArrayMetadata.from_json(json.dumps(doc).encode()).shape) == rank
    else:
        with pytest.raises(MetadataError, match=rf"shape: expected at most {MAX_RANK} dimensions"):
            ArrayMetadata.from_json(json.dumps(doc).encode())


# -- attributes depth --------------------------------------------------------------------
def _nest(depth: int) -> Any:
    v: Any = 1
    for _ in range(depth):
        v = [v]
    return v


def test_attribute_depth_boundary() -> None:
    """The attributes object is level 1: {"a": [[...1...]]} with MAX_JSON_DEPTH - 1 lists
    is the deepest value accepted."""
    normalize_json_value({"a": _nest(MAX_JSON_DEPTH - 1)}, "attributes")
    with pytest.raises(MetadataError, match=rf"nested at most {MAX_JSON_DEPTH} levels"):
        normalize_json_value({"a": _nest(MAX_JSON_DEPTH)}, "attributes")
    doc = {"zarr_format": 3, "node_type": "group", "attributes": {"a": _nest(MAX_JSON_DEPTH - 1)}}
    GroupMetadata.from_json(json.dumps(doc).encode())
    doc["attributes"] = {"a": _nest(MAX_JSON_DEPTH)}
    with pytest.raises(MetadataError, match=r"^attributes\.a"):
        GroupMetadata.from_json(json.dumps(doc).encode())


# -- documents ---------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["[]", "[1]", "1", '"x"', "null", "true"])
def test_document_must_be_an_object(text: str) -> None:
    with pytest.raises(MetadataError, match="expected a JSON object"):
        load_json_object(text.encode(), "zarr.json")
    with pytest.raises(MetadataError):
        ArrayMetadata.from_json(text.encode())
