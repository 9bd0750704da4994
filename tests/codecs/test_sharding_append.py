"""sharding_indexed: the opt-in append write strategy (partial writes in place)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrcy
from zarrcy.byte_range import resolve
from zarrcy.codecs._base import ArraySpec
from zarrcy.byte_access import ByteSetter, BytesSnapshot
from zarrcy.codecs.sharding import ShardingCodec
from zarrcy.errors import CorruptChunkError

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
CRC = {"name": "crc32c"}


class AppendValue(ByteSetter):
    """A ByteSetter with in-place partial writes (like LocalStore's pwrite)."""

    supports_partial_writes = True

    def snapshot(self):
        return BytesSnapshot(self.value)

    def truncate(self, length, identity=None):
        self.calls.append(("truncate", length))
        self.value = self.value[:length]

    def __init__(self, value=None):
        self.value = value
        self.calls = []

    def get(self, byte_range=None):
        self.calls.append(("get", byte_range))
        if self.value is None:
            return None
        a, b = resolve(byte_range, len(self.value))
        return self.value[a:b]

    def get_ranges(self, ranges):
        self.calls.append(("get_ranges", tuple(ranges)))
        return [self.get(r) for r in ranges]

    def set(self, value):
        self.calls.append(("set",))
        self.value = bytes(value)

    def set_partial(self, start, value):
        self.calls.append(("set_partial", start, len(value)))
        old = self.value or b""
        old = old + b"\0" * max(0, start - len(old))
        self.value = old[:start] + bytes(value) + old[start + len(value):]

    def delete(self):
        self.calls.append(("delete",))
        self.value = None


def make(location="end", index_codecs=(BYTES, CRC)):
    return ShardingCodec.from_dict(
        {"chunk_shape": [4, 4], "codecs": [BYTES, GZIP], "index_codecs": list(index_codecs),
         "index_location": location}, "codecs[0]")


ISZ = 16 * 16 + 4  # index bytes: 16 inner chunks, crc32c
SP = ArraySpec(shape=(16, 16), dtype=np.dtype("int32"), fill_value=np.int32(0))


def base_array():
    return np.arange(1, 257, dtype=np.int32).reshape(16, 16)


@pytest.fixture
def append_mode():
    old = zarrcy.config()
    zarrcy.config(shard_write_strategy="append", shard_append_dead_ratio=0.9)
    yield
    zarrcy.config(shard_write_strategy=old["shard_write_strategy"],
                  shard_append_dead_ratio=old["shard_append_dead_ratio"])


def kinds(v):
    return [c[0] for c in v.calls]


def test_append_writes_in_place(append_mode):
    c = make()
    a = base_array()
    first = c.encode(a, SP)
    v = AppendValue(first)
    # a fully covered inner chunk and a partially covered one
    for sel, val in [((slice(0, 4), slice(4, 8)), 7), ((slice(5, 7), slice(9, 15)), -3)]:
        v.calls.clear()
        before = v.value
        c.encode_partial(v, sel, np.full([s.stop - s.start for s in sel], val, np.int32), SP)
        a[sel] = val
        assert "set" not in kinds(v) and kinds(v)[-1] == "set_partial"
        assert v.calls[-1][1] == len(before)  # appended at the old end
        assert v.value[: len(before) - ISZ] == before[: len(before) - ISZ]  # old bytes untouched
        np.testing.assert_array_equal(c.decode(v.value, SP), a)
        np.testing.assert_array_equal(c.decode_partial(v, (slice(0, 16), slice(3, 13)), SP), a[:, 3:13])
    # only the partially covered chunk was read (plus index and tail), never the others
    ranges = [x for x in v.calls if x[0] == "get_ranges"]
    assert all(len(r[1]) == 1 for r in ranges)


def test_append_to_empty_entries_and_delete(append_mode):
    c = make()
    a = np.zeros((16, 16), np.int32)
    a[0, 0] = 1
    v = AppendValue(c.encode(a, SP))
    c.encode_partial(v, (slice(8, 12), slice(8, 12)), np.ones((4, 4), np.int32), SP)
    a[8:12, 8:12] = 1
    np.testing.assert_array_equal(c.decode(v.value, SP), a)
    c.encode_partial(v, (slice(0, 16), slice(0, 16)), np.zeros((16, 16), np.int32), SP)
    assert v.value is None and kinds(v)[-1] == "delete"


def test_append_compacts_when_dead_space_grows():
    old = zarrcy.config()
    try:
        zarrcy.config(shard_write_strategy="append", shard_append_dead_ratio=0.3)
        c = make()
        a = base_array()
        v = AppendValue(c.encode(a, SP))
        sizes = []
        for k in range(12):
            c.encode_partial(v, (slice(0, 4), slice(0, 4)), np.full((4, 4), k, np.int32), SP)
            a[:4, :4] = k
            sizes.append(len(v.value))
        assert "set" in kinds(v) and "set_partial" in kinds(v)
        assert max(sizes) < 2 * len(c.encode(a, SP))  # bounded by compaction
        np.testing.assert_array_equal(c.decode(v.value, SP), a)
        # a compaction is the default rewrite: tight, byte-identical to a full encode
        v.calls.clear()
        zarrcy.config(shard_append_dead_ratio=0.0)
        c.encode_partial(v, (slice(0, 4), slice(0, 4)), np.full((4, 4), 99, np.int32), SP)
        a[:4, :4] = 99
        assert kinds(v)[-1] == "set" and v.value == c.encode(a, SP)
    finally:
        zarrcy.config(shard_write_strategy=old["shard_write_strategy"],
                      shard_append_dead_ratio=old["shard_append_dead_ratio"])


@pytest.mark.parametrize("cut", [1, 10, 60, 100])
def test_torn_append_is_detected(append_mode, cut):
    c = make()
    a = base_array()
    v = AppendValue(c.encode(a, SP))
    old = v.value
    c.encode_partial(v, (slice(4, 8), slice(4, 8)), np.full((4, 4), 5, np.int32), SP)
    full = v.value
    # crash mid-write: only part of the appended bytes reached the object
    torn = full[: len(old) + min(cut, len(full) - len(old) - 1)]
    with pytest.raises(CorruptChunkError, match="shard index"):
        c.decode(torn, SP)
    with pytest.raises(CorruptChunkError, match="shard index"):
        c.decode_partial(AppendValue(torn), (slice(0, 4), slice(0, 4)), SP)


@pytest.mark.parametrize(
    "codec, setter_cls",
    [
        (make(index_codecs=(BYTES,)), AppendValue),  # no checksum: torn writes undetectable
        (make(), type("NoPartial", (AppendValue,), {"supports_partial_writes": False})),
    ],
)
def test_append_falls_back_to_rewrite(append_mode, codec, setter_cls):
    a = base_array()
    v = setter_cls(codec.encode(a, SP))
    codec.encode_partial(v, (slice(0, 4), slice(0, 4)), np.zeros((4, 4), np.int32), SP)
    a[:4, :4] = 0
    assert kinds(v)[-1] == "set" and v.value == codec.encode(a, SP)


def test_keyword_overrides_config():
    c = make()
    a = base_array()
    v = AppendValue(c.encode(a, SP))
    c.encode_partial(v, (slice(0, 4), slice(0, 4)), np.ones((4, 4), np.int32), SP, write_strategy="append")
    assert kinds(v)[-1] == "set_partial"
    with pytest.raises(ValueError):
        c.encode_partial(v, (slice(0, 4), slice(0, 4)), np.ones((4, 4), np.int32), SP, write_strategy="nope")


def test_zarr_python_reads_appended_shard(tmp_path, append_mode):
    zarr = pytest.importorskip("zarr")
    from zarr.codecs import BytesCodec, Crc32cCodec, GzipCodec
    from zarr.codecs import ShardingCodec as ZSharding

    z = zarr.create_array(store=str(tmp_path), shape=(16, 16), chunks=(16, 16), dtype="int32", fill_value=0,
                          serializer=ZSharding(chunk_shape=(4, 4), codecs=[BytesCodec(), GzipCodec(level=1)],
                                               index_codecs=[BytesCodec(), Crc32cCodec()]),
                          compressors=None)
    a = base_array()
    z[...] = a
    path = os.path.join(tmp_path, "c", "0", "0")
    with open(path, "rb") as f:
        v = AppendValue(f.read())
    c = make()
    c.encode_partial(v, (slice(2, 10), slice(3, 5)), np.full((8, 2), -1, np.int32), SP)
    a[2:10, 3:5] = -1
    assert kinds(v)[-1] == "set_partial"
    with open(path, "wb") as f:
        f.write(v.value)
    np.testing.assert_array_equal(z[...], a)


def test_append_with_start_index(append_mode):
    c = make(location="start")
    a = base_array()
    first = c.encode(a, SP)
    v = AppendValue(first)
    c.encode_partial(v, (slice(1, 3), slice(1, 15)), np.full((2, 14), 4, np.int32), SP)
    a[1:3, 1:15] = 4
    writes = [x for x in v.calls if x[0] == "set_partial"]
    assert [w[1] for w in writes] == [len(first), 0]  # chunks appended first, then the index
    assert v.value[ISZ:len(first)] == first[ISZ:]  # old chunk bytes untouched
    np.testing.assert_array_equal(c.decode(v.value, SP), a)
    np.testing.assert_array_equal(c.decode_partial(v, (slice(0, 5), slice(0, 16)), SP), a[:5])


def test_start_index_crash_between_writes_leaves_old_shard(append_mode):
    c = make(location="start")
    a = base_array()
    first = c.encode(a, SP)
    v = AppendValue(first)
    c.encode_partial(v, (slice(0, 4), slice(0, 4)), np.full((4, 4), 4, np.int32), SP)
    crashed = first + v.value[len(first):]  # chunks appended, index write never happened
    np.testing.assert_array_equal(c.decode(crashed, SP), base_array())
    torn = v.value[:100] + first[100:ISZ] + v.value[ISZ:]  # index write torn half-way
    with pytest.raises(CorruptChunkError, match="shard index"):
        c.decode(torn, SP)


def test_append_through_the_array_layer(tmp_path, append_mode):
    from zarrcy.codecs import GzipCodec

    zarrcy.config(shard_append_dead_ratio=0.6)
    a = zarrcy.create_array(str(tmp_path / "a.zarr"), shape=(64, 64), dtype="int32", chunks=(8, 8),
                            shards=(32, 32), compressors=[GzipCodec(level=1)])
    d = np.arange(64 * 64, dtype="int32").reshape(64, 64)
    a[...] = d
    path = tmp_path / "a.zarr" / "c" / "0" / "0"
    sizes = [path.stat().st_size]
    for k in range(8):
        a[3:9, 5:7] = -k
        d[3:9, 5:7] = -k
        sizes.append(path.stat().st_size)
    assert sizes[1] > sizes[0]  # appended in place
    assert min(sizes[2:]) < max(sizes)  # and compacted at some point
    np.testing.assert_array_equal(a[...], d)
