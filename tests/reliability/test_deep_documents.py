"""Issue 23.7: one loader for every JSON document read from a store.  A document nested
100,000 levels deep -- root or child ``zarr.json``, group attributes, consolidated
metadata (also nested member by member), v2 ``.zmetadata``/``.zattrs``/``.zarray``/
``.zgroup``, v1 ``meta`` -- is refused with MetadataError naming its key, never a bare
RecursionError, on every way of opening it."""

from __future__ import annotations

import json

import pytest

import zarrcy
from zarrcy.errors import MetadataError, NodeNotFoundError
from zarrcy.storage import MemoryStore

DEEP = 100_000
NEST = b"[" * DEEP + b"]" * DEEP
GROUP = json.dumps({"zarr_format": 3, "node_type": "group"}).encode()
ARRAY = zarrcy.create_array(MemoryStore(), name="a", shape=(2,), dtype="u1").metadata.to_bytes()


def _v3_group_with(value: bytes, field: str = "attributes") -> bytes:
    return b'{"zarr_format": 3, "node_type": "group", "' + field.encode() + b'": {"x": ' + value + b"}}"


def _nested_consolidated(levels: int) -> bytes:
    """A root zarr.json whose consolidated metadata nests member groups ``levels`` deep."""
    head = (b'{"g": {"zarr_format": 3, "node_type": "group", "consolidated_metadata": '
            b'{"kind": "inline", "must_understand": false, "metadata": ')
    inner = head * levels + b"{}" + b"}}}" * levels
    return (b'{"zarr_format": 3, "node_type": "group", "consolidated_metadata": '
            b'{"kind": "inline", "must_understand": false, "metadata": ' + inner + b"}}")


CASES = {
    "root zarr.json": ({"zarr.json": NEST}, "zarr.json"),
    "root group attributes": ({"zarr.json": _v3_group_with(NEST)}, "zarr.json"),
    "root consolidated_metadata": ({"zarr.json": _v3_group_with(NEST, "consolidated_metadata")}, "zarr.json"),
    "consolidated members nested deep": ({"zarr.json": _nested_consolidated(30_000)}, "zarr.json"),
    "child zarr.json": ({"zarr.json": GROUP, "c/zarr.json": _v3_group_with(NEST)}, "c/zarr.json"),
    "v2 .zmetadata": ({".zgroup": b'{"zarr_format": 2}', ".zmetadata": b'{"metadata": ' + NEST + b"}"}, ".zmetadata"),
    "v2 .zattrs": ({".zgroup": b'{"zarr_format": 2}', ".zattrs": b'{"a": ' + NEST + b"}"}, ".zattrs"),
    "v2 .zgroup": ({".zgroup": b'{"zarr_format": 2, "x": ' + NEST + b"}"}, ".zgroup"),
    "v1 meta": ({"meta": b'{"zarr_format": 1, "x": ' + NEST + b"}"}, "meta"),
}


def _store(docs: dict[str, bytes]) -> MemoryStore:
    s = MemoryStore()
    for k, v in docs.items():
        s.set(k, v)
    return s


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("how", ["open_group", "open_group consolidated", "open", "open child", "consolidate"])
def test_deep_document_is_a_metadata_error(case, how):
    docs, key = CASES[case]
    store = _store(docs)
    try:
        if how == "open_group":
            g = zarrcy.open_group(store, mode="r", use_consolidated=False)
            list(g.members())
            g.attrs.asdict()
        elif how == "open_group consolidated":
            g = zarrcy.open_group(store, mode="r")
            list(g.members())
        elif how == "open":
            zarrcy.open(store, mode="r")
        elif how == "open child":
            zarrcy.open_group(store, path="c", mode="r")
        else:
            zarrcy.consolidate_metadata(store)
    except MetadataError as e:
        assert key.rpartition("/")[2] in str(e), e
        return
    except NodeNotFoundError:
        # no child there; or a v1 "meta" key that is not JSON is not a v1 node (as before)
        assert (how == "open child" and not case.startswith("child")) or case == "v1 meta", (case, how)
        return
    except RecursionError as e:  # pragma: no cover - the bug
        pytest.fail(f"{case} / {how}: RecursionError: {e}")
    # only an opening that never reads the hostile document may succeed
    assert how in MAY_SUCCEED.get(case, ()), f"{case} / {how}: accepted"


#: openings that never read the hostile document (or its hostile part)
MAY_SUCCEED = {
    "v2 .zmetadata": ("open_group", "open", "consolidate"),  # .zmetadata is read only when consolidated
    "child zarr.json": ("open_group", "open"),  # the child is not read until asked for
}


def test_deep_convert_journal_is_an_error_not_a_recursion(tmp_path, capsys):
    """The convert journal is store data too: an interrupted run's ``plan.json`` nested
    100,000 levels deep ends ``--resume`` with an error naming it (exit status)."""
    import numpy as np

    from zarrcy.convert import convert_main

    src = str(tmp_path / "src.zarr")
    zarrcy.create_array(src, shape=(8,), chunks=(4,), dtype="u1")[...] = np.arange(8, dtype="u1")
    dst = tmp_path / "dst.zarr"
    (dst / "__zarrcy_convert").mkdir(parents=True)
    (dst / "__zarrcy_convert" / "plan.json").write_bytes(NEST)
    assert convert_main([src, str(dst), "--resume", "--progress", "off"]) != 0
    assert "plan.json" in capsys.readouterr().err
