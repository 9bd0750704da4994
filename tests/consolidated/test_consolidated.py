"""Consolidated metadata (v3 ``consolidated_metadata`` in zarr.json, v2 ``.zmetadata``):
interop both ways with zarr-python, one read to open a hierarchy, use_consolidated modes."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import zarrcy
from zarrcy.consolidated import ConsolidatedStore, read_consolidated_v3
from zarrcy.errors import MetadataError, NodeNotFoundError, ReadOnlyError
from zarrcy.storage import LocalStore, Store

zarr = pytest.importorskip("zarr")


class CountingStore(Store):
    """Delegates to a LocalStore and records every read/list call."""

    def __init__(self, base: Store) -> None:
        super().__init__(read_only=base.read_only)
        self.base = base
        self.calls: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        return self.base.url

    def get(self, key, byte_range=None):
        self.calls.append(("get", key))
        return self.base.get(key, byte_range)

    def get_partial_values(self, key_ranges):
        self.calls.extend(("get", k) for k, _ in key_ranges)
        return self.base.get_partial_values(key_ranges)

    def set(self, key, value):
        self.base.set(key, value)

    def erase(self, key):
        self.base.erase(key)

    def erase_prefix(self, prefix):
        self.base.erase_prefix(prefix)

    def list(self):
        self.calls.append(("list", ""))
        return self.base.list()

    def list_dir(self, prefix):
        self.calls.append(("list_dir", prefix))
        return self.base.list_dir(prefix)


def _read_json(path):
    with open(path) as fh:
        return json.load(fh)


def _zarr_python_tree(path, zarr_format=3):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(str(path), mode="w", zarr_format=zarr_format, attributes={"root": True})
        sub = g.create_group("sub", attributes={"s": 1})
        x = sub.create_array("x", shape=(10,), dtype="int16", chunks=(4,), fill_value=-1)
        x[:] = np.arange(10)
        deep = sub.create_group("deep")
        deep.create_array("z", shape=(2, 3), dtype="float32", chunks=(1, 3), fill_value=0.5)
        g.create_array("y", shape=(6, 6), dtype="uint8", chunks=(3, 3), fill_value=0)
        zarr.consolidate_metadata(str(path))
    return g


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_read_zarr_python_consolidated_one_request(tmp_path, zarr_format):
    _zarr_python_tree(tmp_path / "h.zarr", zarr_format)
    base = LocalStore(tmp_path / "h.zarr", read_only=True)
    cs = CountingStore(base)
    g = zarrcy.open_group(cs, mode="r")
    assert isinstance(g.store, ConsolidatedStore)
    paths = [p for p, _ in g.walk()]
    assert paths == ["sub", "sub/deep", "sub/deep/z", "sub/x", "y"]
    assert g["sub"].attrs["s"] == 1 and g.attrs["root"] is True
    assert "nope" not in g and g.get("sub/none") is None
    meta_reads = [c for c in cs.calls if c[0] != "get" or c[1].rsplit("/", 1)[-1] in ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")]
    # v3: the root zarr.json; v2: .zmetadata plus the probes for a v3 root (zarr.json) and .zarray/.zgroup
    assert len(meta_reads) == (1 if zarr_format == 3 else len(meta_reads)) and ("list_dir", "") not in cs.calls
    assert len(meta_reads) <= 3
    np.testing.assert_array_equal(g["sub/x"][...], np.arange(10))
    assert g["sub/deep/z"][0, 0] == 0.5


def test_use_consolidated_modes(tmp_path):
    p = tmp_path / "h.zarr"
    _zarr_python_tree(p)
    assert not isinstance(zarrcy.open_group(str(p), mode="r", use_consolidated=False).store, ConsolidatedStore)
    assert isinstance(zarrcy.open_group(str(p), mode="r", use_consolidated=True).store, ConsolidatedStore)
    assert not isinstance(zarrcy.open_group(str(p), mode="r+").store, ConsolidatedStore)  # writable: live metadata
    with pytest.raises(ValueError):
        zarrcy.open_group(str(p), mode="r+", use_consolidated=True)
    plain = tmp_path / "plain.zarr"
    zarrcy.open_group(str(plain), mode="w").create_group("a")
    with pytest.raises(NodeNotFoundError):
        zarrcy.open_group(str(plain), mode="r", use_consolidated=True)
    assert list(zarrcy.open_group(str(plain), mode="r").keys()) == ["a"]
    g = zarrcy.open_group(str(p), mode="r")
    with pytest.raises(ReadOnlyError):
        g.create_group("new")


def test_consolidate_then_zarr_python_reads(tmp_path):
    p = str(tmp_path / "z.zarr")
    g = zarrcy.open_group(p, mode="w", attributes={"t": "x"})
    a = g.create_group("g1").create_array("a", shape=(5,), dtype="int32", chunks=(2,), fill_value=7,
                                         dimension_names=("i",), attributes={"u": 1})
    a[...] = np.arange(5)
    g.create_array("b", shape=(4, 4), dtype="float64", chunks=(2, 2), shards=(4, 4), fill_value=0)
    out = zarrcy.consolidate_metadata(p)
    assert isinstance(out.store, ConsolidatedStore)
    raw = _read_json(f"{p}/zarr.json")
    cm = raw["consolidated_metadata"]
    assert cm["kind"] == "inline" and cm["must_understand"] is False
    assert sorted(cm["metadata"]) == ["b", "g1", "g1/a"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zg = zarr.open_consolidated(p)
        assert zg.metadata.consolidated_metadata is not None
        assert sorted(zg.metadata.consolidated_metadata.flattened_metadata) == ["b", "g1", "g1/a"]
        np.testing.assert_array_equal(zg["g1/a"][:], np.arange(5))
        assert zg["g1/a"].attrs["u"] == 1
        # zarr-python's own consolidation of the same hierarchy has the same documents
        zarr.consolidate_metadata(p)
    theirs = read_consolidated_v3(_read_json(f"{p}/zarr.json"))
    ours = read_consolidated_v3(raw)
    assert sorted(theirs) == sorted(ours)
    for k in ours:
        assert zarrcy.open_group(p, mode="r")[k].metadata == zarrcy.open_group(p, mode="r", use_consolidated=False)[k].metadata


def test_consolidate_v2_then_zarr_python_reads(tmp_path):
    p = str(tmp_path / "v2.zarr")
    g = zarrcy.open_group(p, mode="w", zarr_format=2)
    a = g.create_group("s").create_array("a", shape=(3,), dtype="int8", chunks=(3,), fill_value=0)
    a[...] = [1, 2, 3]
    zarrcy.consolidate_metadata(p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zg = zarr.open_consolidated(p, zarr_format=2)
        np.testing.assert_array_equal(zg["s/a"][:], [1, 2, 3])
    r = zarrcy.open_group(p, mode="r")
    assert isinstance(r.store, ConsolidatedStore)
    assert [q for q, _ in r.walk()] == ["s", "s/a"]


def test_stale_consolidated_metadata_is_what_readers_see(tmp_path):
    p = str(tmp_path / "s.zarr")
    g = zarrcy.open_group(p, mode="w")
    g.create_group("a")
    zarrcy.consolidate_metadata(p)
    zarrcy.open_group(p, mode="r+").create_group("b")  # after consolidation
    assert list(zarrcy.open_group(p, mode="r").keys()) == ["a"]  # like zarr-python: re-consolidate
    assert list(zarrcy.open_group(p, mode="r", use_consolidated=False).keys()) == ["a", "b"]
    zarrcy.consolidate_metadata(p)
    assert list(zarrcy.open_group(p, mode="r").keys()) == ["a", "b"]


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "inline", "must_understand": False, "metadata": []},
        {"kind": "other", "must_understand": False, "metadata": {}},
        {"kind": "inline", "must_understand": False, "metadata": {"/abs": {}}},
        {"kind": "inline", "must_understand": False, "metadata": {"a": 3}},
        "not an object",
    ],
)
def test_bad_consolidated_metadata(tmp_path, bad):
    p = str(tmp_path / "b.zarr")
    zarrcy.open_group(p, mode="w")
    doc = _read_json(f"{p}/zarr.json")
    doc["consolidated_metadata"] = bad
    with open(f"{p}/zarr.json", "w") as fh:
        json.dump(doc, fh)
    with pytest.raises(MetadataError):
        zarrcy.open_group(p, mode="r")
    if isinstance(bad, dict):  # a must_understand=false field: ignoring it works
        zarrcy.open_group(p, mode="r", use_consolidated=False)
    else:  # not even a valid extension field: the core metadata parser refuses it
        with pytest.raises(MetadataError):
            zarrcy.open_group(p, mode="r", use_consolidated=False)


def test_open_reads_groups_through_consolidated(tmp_path):
    p = str(tmp_path / "o.zarr")
    zarrcy.open_group(p, mode="w").create_array("a", shape=(2,), dtype="int8", fill_value=4)
    zarrcy.consolidate_metadata(p)
    g = zarrcy.open(p, mode="r")
    assert isinstance(g, zarrcy.Group) and isinstance(g.store, ConsolidatedStore)
    assert not isinstance(zarrcy.open(p, mode="r", use_consolidated=False).store, ConsolidatedStore)
    assert isinstance(zarrcy.open(p, path="a", mode="r"), zarrcy.Array)
    with pytest.raises(ValueError):
        zarrcy.open(p, mode="r+", use_consolidated=True)


def test_consolidated_metadata_view_matches_zarr_python(tmp_path):
    """GroupMetadata.consolidated_metadata: direct children in ``metadata`` (a child
    group's own consolidated_metadata holds its children), all in ``flattened_metadata``."""
    p = str(tmp_path / "n.zarr")
    g = zarrcy.open_group(p, mode="w")
    g.create_group("child", attributes={"kind": "child"}).create_group("grand").create_array("x", shape=(2,), dtype="i1")
    g.create_array("top", shape=(3,), dtype="f8")
    zarrcy.consolidate_metadata(p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = zarr.open_consolidated(p).metadata.consolidated_metadata
    ours = zarrcy.open_consolidated(p).metadata.consolidated_metadata
    assert sorted(ours.metadata) == sorted(theirs.metadata) == ["child", "top"]
    assert sorted(ours.flattened_metadata) == sorted(theirs.flattened_metadata)
    assert sorted(ours.metadata["child"].consolidated_metadata.metadata) == ["grand"]
    assert ours.metadata["child"].attributes == {"kind": "child"} and ours.metadata["top"].shape == (3,)
    assert zarrcy.open_group(p, mode="r", use_consolidated=False).metadata.consolidated_metadata is None
