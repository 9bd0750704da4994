"""Hostile shards on the writer's owned-index path (issue 23.8; ``reader._load_owned``,
``ValueSnapshot.get_owned``): a shard truncated into or before its index, an index of
garbage (crc32c mismatch), entries claiming huge offsets or sizes -- on MemoryStore and
ZipStore (stored members), whose index now comes through ``get_owned``'s piece reads.
``shard_index_cache=0`` sends every index, however small, down that path.  Each write
raises CorruptChunkError naming the shard, stores nothing, and allocates no more than
the shard's own size."""

from __future__ import annotations

import numpy as np
import pytest

import zarrcy
from zarrcy.byte_access import BytesSnapshot
from zarrcy.byte_range import RangeRequest, SuffixRequest
from zarrcy.errors import CorruptChunkError

N = 64  # one shard of 64 one-element inner chunks: a 1028-byte index (crc32c) at the end
INDEX = 16 * N + 4
KEY = "a/c/0"


def _array(kind: str, tmp_path):
    store = (zarrcy.storage.MemoryStore() if kind == "memory"
             else zarrcy.storage.ZipStore(str(tmp_path / "a.zip"), mode="w"))
    a = zarrcy.create_array(store, name="a", shape=(N,), chunks=(1,), shards=(N,), dtype="uint16",
                            fill_value=0, compressors=None)
    a[:] = np.arange(N, dtype=np.uint16)
    return store, a


def _hostile(good: bytes, case: str) -> bytes:
    data, index = good[:-INDEX], bytearray(good[-INDEX:])
    if case == "truncated-into-index":
        return good[:-10]
    if case == "shorter-than-index":
        return good[:INDEX // 2]
    if case == "empty":
        return b""
    if case == "garbage-index":
        return data + bytes(np.random.default_rng(0).integers(0, 256, INDEX, dtype=np.uint8))
    entries = np.frombuffer(bytes(index[:-4]), "<u8").copy()
    if case == "huge-offset":
        entries[2 * 5] = (1 << 62)
    elif case == "huge-size":
        entries[2 * 5 + 1] = (1 << 40)
    import crc32c
    raw = entries.tobytes()
    return data + raw + crc32c.crc32c(raw).to_bytes(4, "little")


CASES = ["truncated-into-index", "shorter-than-index", "empty", "garbage-index", "huge-offset", "huge-size"]


@pytest.mark.parametrize("kind", ["memory", "zip"])
@pytest.mark.parametrize("case", CASES)
def test_hostile_shard_refused_on_the_owned_index_path(tmp_path, kind, case, monkeypatch):
    import tracemalloc

    from zarrcy.byte_access import ValueSnapshot

    store, a = _array(kind, tmp_path)
    calls = []
    real = ValueSnapshot.get_owned
    monkeypatch.setattr(ValueSnapshot, "get_owned", lambda self, r: (calls.append(r), real(self, r))[1])
    bad = _hostile(store.get(KEY), case)
    store.set(KEY, bad)
    tracemalloc.start()
    try:
        with zarrcy.config.set(shard_index_cache=0), pytest.raises(CorruptChunkError) as err:
            a[N // 2] = 7  # a partial write: the old index is read into the writer's buffer
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert calls or case == "empty"  # the owned path read it (an empty value: "missing" is not claimed)
    assert "c/0" in str(err.value)
    assert peak < (1 << 20), peak  # nothing sized by the hostile entries
    assert store.get(KEY) == bad  # nothing was stored


def test_get_owned_reads_what_get_reads():
    """The default ``get_owned``: every request kind, pieces smaller than the value, and
    requests past the end clipped as ``get`` clips them (no allocation beyond the value)."""
    import zarrcy.byte_access as ba

    value = bytes(range(256)) * 40  # 10,240 bytes
    snap = BytesSnapshot(value)
    saved = ba.OWNED_PIECE
    ba.OWNED_PIECE = 1000  # ten pieces and a short last one
    try:
        for req in (None, RangeRequest(0, 10_240), RangeRequest(17, 5_000), RangeRequest(9_000, None),
                    RangeRequest(10_000, 1 << 40), RangeRequest(1 << 40, 5), SuffixRequest(3_333),
                    SuffixRequest(1 << 40), RangeRequest(5, 0)):
            got = snap.get_owned(req)
            assert isinstance(got, bytearray) and got == bytes(snap.get(req)), req
    finally:
        ba.OWNED_PIECE = saved
    assert BytesSnapshot(None).get_owned(None) is None  # missing: the caller's normal path


def test_get_owned_short_value_gives_a_short_buffer():
    """A value shorter than the size the snapshot announced (a lying object store, a
    truncated member): the bytes that exist, never zero padding passed off as data."""
    snap = BytesSnapshot(b"x" * 100)
    snap.size = 1000  # as a HEAD that lied would set it
    got = snap.get_owned(RangeRequest(0, 1000))
    assert got == b"x" * 100
