"""Issue 23.11: listing a group through consolidated metadata of many members costs
what the listing needs, once.  Opening encodes no member document (they are encoded
when read), and ``keys()``/``len()``/``group_keys()``/``array_keys()`` answer from one
index of the documents, built at the first call, without opening a single node (a
``.zmetadata`` of 1,000,000 entries took 84 s and 954 MB to list).  Counted, not timed;
``bench`` has no row for it, the measurement is in the commit message."""

from __future__ import annotations

import json

import pytest

import zarrcy
from zarrcy import consolidated as consolidated_mod
from zarrcy.nodes import group as group_mod
from zarrcy.storage import MemoryStore

N = 20_000


def _v2_store() -> MemoryStore:
    meta: dict = {".zgroup": {"zarr_format": 2}}
    for i in range(N):
        if i % 2:
            meta[f"g{i:05d}/.zgroup"] = {"zarr_format": 2}
        else:
            meta[f"a{i:05d}/.zarray"] = {"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "<u1",
                                        "compressor": None, "filters": None, "fill_value": 0, "order": "C"}
            meta[f"a{i:05d}/.zattrs"] = {"i": i}
    s = MemoryStore()
    s.set(".zgroup", b'{"zarr_format": 2}')
    s.set(".zmetadata", json.dumps({"metadata": meta, "zarr_consolidated_format": 1}).encode())
    return s


def _v3_store() -> MemoryStore:
    s = MemoryStore()
    root = zarrcy.create_group(s)
    root.create_group("g0")
    root.create_array("a0", shape=(1,), dtype="u1")
    zarrcy.consolidate_metadata(s)
    doc = json.loads(s.get("zarr.json"))
    members = doc["consolidated_metadata"]["metadata"]
    g, a = members["g0"], members["a0"]
    for i in range(1, N // 2):
        members[f"g{i}"] = g
        members[f"a{i}"] = a
    s.set("zarr.json", json.dumps(doc).encode())
    return s


@pytest.mark.parametrize("make", [_v2_store, _v3_store], ids=["v2 .zmetadata", "v3 consolidated_metadata"])
def test_listing_opens_no_node_and_indexes_once(make, monkeypatch):
    store = make()
    calls = {"dumps": 0, "open": 0}
    real_dumps, real_load = consolidated_mod._dumps, group_mod._load_node

    def dumps(doc):
        calls["dumps"] += 1
        return real_dumps(doc)

    def load(*a, **k):
        calls["open"] += 1
        return real_load(*a, **k)

    monkeypatch.setattr(consolidated_mod, "_dumps", dumps)
    monkeypatch.setattr(group_mod, "_load_node", load)
    g = zarrcy.open_group(store, mode="r")
    opened = dict(calls)
    assert opened["open"] == 0 and opened["dumps"] <= 2  # at most the root's own .zgroup/.zattrs
    names = list(g.keys())
    assert len(names) == N and names == sorted(names) and len(g) == N
    assert len(g.group_keys()) == N // 2 and len(g.array_keys()) == N // 2
    assert calls == opened
    index = g.store.__dict__["_types"]
    list(g)
    assert g.store.__dict__["_types"] is index  # not rebuilt per call
    # the members themselves still open as before (their documents encoded when read)
    assert g[names[0]].path == names[0] and calls["open"] >= 1 and calls["dumps"] >= 1
