"""Groups and the hierarchy (v3-core.rst "Storage")."""

from __future__ import annotations

import json

import pytest

import zarrcy


def test_create_nested_creates_parents():
    s = zarrcy.MemoryStore()
    zarrcy.create_array(s, name="a/b/c", shape=(2,), dtype="int8")
    for p in ("", "a/", "a/b/"):
        doc = json.loads(s.get(p + "zarr.json"))
        assert doc == {"zarr_format": 3, "node_type": "group", "attributes": {}} or doc["node_type"] == "group"
    root = zarrcy.open_group(s, mode="r")
    assert list(root.keys()) == ["a"]
    assert isinstance(root["a/b"], zarrcy.Group)
    assert isinstance(root["a/b/c"], zarrcy.Array)


def test_members_tree_delete(tmp_path):
    root = zarrcy.open_group(str(tmp_path / "h.zarr"), mode="w", attributes={"t": 1})
    g = root.create_group("g0")
    g.create_array("x", shape=(3, 4), dtype="float32")
    g.create_group("sub").create_array("y", shape=(2,), dtype="uint8")
    root.create_array("z", shape=(1,), dtype="bool")
    assert sorted(root.keys()) == ["g0", "z"]
    assert root.group_keys() == ["g0"] and root.array_keys() == ["z"]
    paths = [p for p, _ in root.walk()]
    assert paths == ["g0", "g0/sub", "g0/sub/y", "g0/x", "z"]
    t = root.tree()
    assert "x (3, 4) float32" in t and "sub" in t
    assert "g0" in root and "nope" not in root
    del root["g0"]
    assert list(root.keys()) == ["z"]
    with pytest.raises(zarrcy.NodeNotFoundError):
        del root["g0"]
    assert root.attrs["t"] == 1
    root.attrs.update({"u": [1, 2]})
    assert zarrcy.open_group(str(tmp_path / "h.zarr"), mode="r").attrs.asdict() == {"t": 1, "u": [1, 2]}


@pytest.mark.parametrize("name", ["", ".", "..", "__x", "a/../b", "a//b"])
def test_invalid_node_names(name):
    root = zarrcy.open_group(zarrcy.MemoryStore())
    with pytest.raises(zarrcy.MetadataError):
        root.create_group(name)


def test_open_detects_type():
    s = zarrcy.MemoryStore()
    zarrcy.create_group(s, path="g")
    zarrcy.create_array(s, name="a", shape=(1,), dtype="int8")
    assert isinstance(zarrcy.open(s, path="g"), zarrcy.Group)
    assert isinstance(zarrcy.open(s, path="a"), zarrcy.Array)
    with pytest.raises(zarrcy.NodeNotFoundError):
        zarrcy.open(s, path="missing")
    with pytest.raises(zarrcy.ContainsNodeError):
        zarrcy.open_group(s, path="a", mode="r")


def test_bad_metadata_documents_raise():
    s = zarrcy.MemoryStore()
    s.set("zarr.json", b"{not json")
    with pytest.raises(zarrcy.MetadataError):
        zarrcy.open(s)
    s.set("zarr.json", b"[1, 2]")
    with pytest.raises(zarrcy.MetadataError):
        zarrcy.open(s)
    s.set("zarr.json", json.dumps({"zarr_format": 2, "node_type": "group"}).encode())
    with pytest.raises(zarrcy.MetadataError):
        zarrcy.open(s)
    s.set("zarr.json", json.dumps({"zarr_format": 3, "node_type": "foo"}).encode())
    with pytest.raises(zarrcy.MetadataError):
        zarrcy.open(s)


def test_cli_tree_info_check(tmp_path, capsys):
    from zarrcy.cli import main

    p = str(tmp_path / "cli.zarr")
    root = zarrcy.open_group(p, mode="w")
    root.create_array("a", shape=(4,), dtype="int16")[...] = 3
    assert main(["tree", p]) == 0
    assert "a (4,) int16" in capsys.readouterr().out
    assert main(["info", p, "--path", "a"]) == 0
    assert "int16" in capsys.readouterr().out
    assert main(["check", p, "--data"]) == 0
    root["a"].store.set("a/c/0", b"junk")
    assert main(["check", p, "--data"]) == 1
    assert "CorruptChunkError" in capsys.readouterr().out


def test_cli_check_walks_v2(tmp_path, capsys):
    import zarr

    from zarrcy.cli import main

    p = str(tmp_path / "v2.zarr")
    g = zarr.open_group(p, mode="w", zarr_format=2)
    g.create_array("x", shape=(4,), dtype="int16", chunks=(2,))[...] = 1
    assert main(["check", p, "--data"]) == 0
    assert "2 node(s)" in capsys.readouterr().out
