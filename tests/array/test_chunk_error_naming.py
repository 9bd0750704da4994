"""A corrupt chunk's error names the chunk's key once, on every read and write path
(the one ``chunk_errors`` context manager in zarrcy/nodes/array.py; issue 15 item 5)."""

from __future__ import annotations

import numpy as np
import pytest

import zarrcy
from zarrcy.nodes.array import chunk_errors


def _corrupt_array(sharded: bool):
    st = zarrcy.storage.MemoryStore()
    a = zarrcy.create_array(st, shape=(8, 8), dtype="i4", chunks=(2, 2), shards=(4, 4) if sharded else None,
                            compressors=[zarrcy.codecs.GzipCodec(1)] if not sharded else "auto")
    a[...] = np.arange(64, dtype="i4").reshape(8, 8)
    key = "c/0/0"
    raw = bytearray(st.get(key))
    if sharded:  # break the first inner chunk's bytes, keep the index intact
        raw[:8] = b"\xff" * 8
    else:
        raw[:] = b"\x00" * len(raw)
    st.set(key, bytes(raw))
    return a, key


READS = {
    "basic": lambda a: a[0:2, 0:2],
    "point": lambda a: a[0, 0],
    "orthogonal": lambda a: a.oindex[[0, 1], [0]],
    "coordinate": lambda a: a.vindex[[0, 1], [0, 1]],
    "partial-write": lambda a: a.__setitem__((0, 0), 5),
    "coordinate-write": lambda a: a.vindex.__setitem__(([0], [1]), 5),
}


@pytest.mark.parametrize("sharded", [False, True], ids=["unsharded", "sharded"])
@pytest.mark.parametrize("path", sorted(READS))
def test_corrupt_chunk_named_once(sharded, path) -> None:
    a, key = _corrupt_array(sharded)
    with pytest.raises(zarrcy.CorruptChunkError) as info:
        READS[path](a)
    e = info.value
    assert e.key == key
    assert str(e).startswith(f"{key}: ") and str(e).count(key) == 1, str(e)


def test_chunk_errors_keeps_class_and_cause_and_names_once() -> None:
    inner = zarrcy.OutOfRangeError("value 300 out of range")
    with pytest.raises(zarrcy.OutOfRangeError) as info:
        with chunk_errors("c/1"):
            with chunk_errors(lambda: "c/2"):  # the outer one sees a named error: unchanged
                raise inner
    assert str(info.value) == "c/2: value 300 out of range" and info.value.key == "c/2"
    assert info.value.__cause__ is inner
    with pytest.raises(KeyError):  # anything else passes through untouched
        with chunk_errors("c/1"):
            raise KeyError("x")
