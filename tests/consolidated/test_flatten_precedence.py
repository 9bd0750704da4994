"""Issue 23.10: one reading of consolidated metadata, with zarr-python's precedence.

A path given both as a flat key of the group's ``metadata`` and nested inside a member
group's own ``consolidated_metadata`` is read from the flat key -- whatever the order of
the keys -- by ``GroupMetadata.consolidated_metadata`` (zarr-python's API shape) and by
the read overlay that ``open_group`` uses alike.  zarr-python 3 is the oracle."""

from __future__ import annotations

import json

import pytest

import zarrcy
from zarrcy.consolidated import read_consolidated_v3
from zarrcy.document.group import GroupMetadata
from zarrcy.storage import MemoryStore

zarr = pytest.importorskip("zarr")


def _group(attrs: dict, nested: dict | None = None) -> dict:
    return {"zarr_format": 3, "node_type": "group", "attributes": attrs,
            "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": nested or {}}}


def _root(flat_first: bool) -> dict:
    nested_b = _group({"from": "nested"})
    flat_b = _group({"from": "flat"})
    a = _group({"who": "a"}, {"b": nested_b})
    items = [("a/b", flat_b), ("a", a)] if flat_first else [("a", a), ("a/b", flat_b)]
    return {"zarr_format": 3, "node_type": "group",
            "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": dict(items)}}


@pytest.mark.parametrize("flat_first", [True, False])
def test_flat_key_wins_over_nested(flat_first):
    doc = _root(flat_first)
    # the oracle: zarr-python's reading of the same document
    ref = zarr.core.group.GroupMetadata.from_dict(json.loads(json.dumps(doc)))
    assert ref.consolidated_metadata.flattened_metadata["a/b"].attributes == {"from": "flat"}
    # zarrcy's document API ...
    cm = GroupMetadata.from_json(json.dumps(doc).encode()).consolidated_metadata
    assert cm.flattened_metadata["a/b"].attributes == {"from": "flat"}
    assert set(cm.flattened_metadata) == set(ref.consolidated_metadata.flattened_metadata)
    # ... and the overlay open_group reads through: the same answer
    assert read_consolidated_v3(doc)["a/b"]["attributes"] == {"from": "flat"}
    store = MemoryStore()
    store.set("zarr.json", json.dumps(doc).encode())
    g = zarrcy.open_group(store, mode="r")
    assert g["a/b"].attrs.asdict() == {"from": "flat"}
    assert g["a"]["b"].attrs.asdict() == {"from": "flat"}


def test_nested_entries_fill_in_paths_no_flat_key_names():
    doc = {"zarr_format": 3, "node_type": "group",
           "consolidated_metadata": {"kind": "inline", "must_understand": False,
                                     "metadata": {"a": _group({}, {"c": _group({"from": "nested"})})}}}
    assert read_consolidated_v3(doc)["a/c"]["attributes"] == {"from": "nested"}
    cm = GroupMetadata.from_json(doc).consolidated_metadata
    assert cm.flattened_metadata["a/c"].attributes == {"from": "nested"}


def test_deeply_nested_consolidated_is_walked_without_recursion():
    inner: dict = {}
    for i in range(3000):
        inner = {"g": _group({"level": i}, inner)}
    flat = read_consolidated_v3({"zarr_format": 3, "node_type": "group",
                                 "consolidated_metadata": {"kind": "inline", "metadata": inner}})
    assert len(flat) == 3000 and flat["/".join(["g"] * 3000)]["attributes"] == {"level": 0}
