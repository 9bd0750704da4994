"""Errors a live Array raises about its chunks and its own existence (issue 12 item 14).

* CastError / OutOfRangeError from a chunk's codecs name the chunk (shard) key and keep
  their class, as CorruptChunkError always did (before: no key in the message).
* An Array whose metadata was deleted while the object was live raises
  NodeNotFoundError on reads that find only fill values and on every write (before:
  reads returned fill values and a write recreated ``c/`` without ``zarr.json``).
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import CastError, NodeNotFoundError, OutOfRangeError
from zarrcy.storage import MemoryStore


def _cast_meta(sharded: bool, data_type: str = "float32", encoded: str = "uint8") -> dict:
    codecs = [{"name": "cast_value", "configuration": {"data_type": encoded}}, {"name": "bytes", "configuration": {"endian": "little"}}]
    if sharded:
        codecs = [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1], "codecs": codecs}}]
    return {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": codecs}


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
def test_encode_cast_errors_name_the_chunk(sharded):
    a = zarrcy.create_array(MemoryStore(), metadata=_cast_meta(sharded))
    for write in (lambda: a.__setitem__(3, 300.0), lambda: a.__setitem__(slice(2, 4), 300.0),
                  lambda: a.vindex.__setitem__([3], 300.0), lambda: a.oindex.__setitem__([2, 3], 300.0)):
        with pytest.raises(OutOfRangeError, match=r"^c/1: cast_value float32 -> uint8: ") as info:
            write()
        assert info.value.key == "c/1"
        assert isinstance(info.value, OverflowError)


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
def test_decode_cast_errors_name_the_chunk(sharded):
    # uint8 values stored as int16: a hostile chunk holding -5 cannot be decoded
    a = zarrcy.create_array(MemoryStore(), metadata=_cast_meta(sharded, "uint8", "int16"))
    a[:] = [1, 2, 3, 4]
    if sharded:
        b = zarrcy.create_array(MemoryStore(), metadata=_cast_meta(True, "int16", "int16"))
        b[:] = [1, -5, 3, 4]
        a.store.set("c/0", b.store.get("c/0"))
    else:
        a.store.set("c/0", np.array([1, -5], dtype="<i2").tobytes())
    reads = [lambda: a[:], lambda: a[0:2], lambda: a.vindex[[1]], lambda: a.oindex[[0, 1]]]
    if not sharded:
        reads.append(lambda: a[1])  # the point-read path (sharded: the inner chunk of element 1)
    for read in reads:
        with pytest.raises(CastError, match=r"^c/0: ") as info:
            read()
        assert info.value.key == "c/0"
    assert a[2:].tolist() == [3, 4]


def _deleted(tmp_path, zarr_format=3):
    g = zarrcy.create_group(str(tmp_path), zarr_format=zarr_format)
    a = g.create_array("a", shape=(4,), chunks=(2,), dtype="uint8", fill_value=0)
    a[:] = 1
    shutil.rmtree(tmp_path / "a")
    return a


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_deleted_array_raises_node_not_found(tmp_path, zarr_format):
    a = _deleted(tmp_path, zarr_format)
    ops = {
        "read": lambda: a[:], "point": lambda: a[1], "oindex": lambda: a.oindex[[0, 3]], "vindex": lambda: a.vindex[[1]],
        "write": lambda: a.__setitem__(0, 5), "vindex write": lambda: a.vindex.__setitem__([0], 5),
        "attrs": lambda: a.attrs.__setitem__("x", 1), "resize": lambda: a.resize(8), "append": lambda: a.append([1]),
    }
    for name, op in ops.items():
        with pytest.raises(NodeNotFoundError, match=r"no array at path '/a' any more"):
            op()
    assert not (tmp_path / "a").exists(), os.listdir(tmp_path / "a")  # nothing recreated


def test_fill_only_reads_of_a_live_array_are_fine(tmp_path):
    a = zarrcy.create_array(str(tmp_path / "a"), shape=(6,), chunks=(2,), dtype="float32", fill_value=np.nan)
    assert np.isnan(a[:]).all() and np.isnan(a[1]) and np.isnan(a.vindex[[5]]).all()
    s = zarrcy.create_array(str(tmp_path / "s"), shape=(4,), chunks=(1,), shards=(2,), dtype="uint8")
    assert s[:].tolist() == [0, 0, 0, 0] and s[3] == 0


def test_v2_node_known_only_from_consolidated_metadata():
    s = MemoryStore()
    g = zarrcy.create_group(s, zarr_format=2)
    g.create_array("a", shape=(4,), chunks=(2,), dtype="uint8", fill_value=0)
    zarrcy.consolidate_metadata(s)
    assert json.loads(s.get(".zmetadata"))["metadata"]["a/.zarray"]
    s.erase("a/.zarray")
    a = zarrcy.open_array(s, path="a")
    assert a[:].tolist() == [0, 0, 0, 0]
    a[0] = 3
    assert a[:].tolist() == [3, 0, 0, 0]
