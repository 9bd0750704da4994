"""sharding_indexed: partial decode (index + coalesced ranges) and partial encode."""

from __future__ import annotations

import struct

import crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcy
from zarrcy.byte_range import RangeRequest, SuffixRequest, resolve
from zarrcy.codecs._base import ArraySpec
from zarrcy.byte_access import ByteSetter
from zarrcy.codecs.sharding import SENTINEL, ShardingCodec
from zarrcy.errors import CorruptChunkError

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
CRC = {"name": "crc32c"}


class MemValue(ByteSetter):
    """A ByteSetter over one in-memory value that records every call (reads through
    the default, unpinned snapshot: every read is a call)."""

    def __init__(self, value: bytes | None = None) -> None:
        self.value = value
        self.calls: list[tuple] = []

    def get(self, byte_range=None):
        self.calls.append(("get", byte_range))
        if self.value is None:
            return None
        a, b = resolve(byte_range, len(self.value))
        return self.value[a:b]

    def get_ranges(self, byte_ranges):
        self.calls.append(("get_ranges", tuple(byte_ranges)))
        if self.value is None:
            return [None] * len(byte_ranges)
        out = []
        for r in byte_ranges:
            a, b = resolve(r, len(self.value))
            out.append(self.value[a:b])
        return out

    def set(self, value):
        self.calls.append(("set",))
        self.value = bytes(value)

    def delete(self):
        self.calls.append(("delete",))
        self.value = None


def make(chunk_shape, codecs=(BYTES,), location="end") -> ShardingCodec:
    return ShardingCodec.from_dict(
        {"chunk_shape": list(chunk_shape), "codecs": list(codecs), "index_location": location}, "codecs[0]"
    )


def spec(shape, dtype="uint16", fill=0) -> ArraySpec:
    dt = np.dtype(dtype)
    return ArraySpec(shape=tuple(shape), dtype=dt, fill_value=dt.type(fill))


SHAPE = (8, 12, 6)
CHUNK = (2, 4, 3)


def data_array(seed=0, empty_frac=0.3):
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 1000, SHAPE).astype(np.uint16)
    grid = [s // c for s, c in zip(SHAPE, CHUNK)]
    for cc in np.ndindex(*grid):
        if rng.random() < empty_frac:
            a[tuple(slice(g * c, (g + 1) * c) for g, c in zip(cc, CHUNK))] = 0
    return a


def slice_sel(draw_data):
    sel = []
    for s in SHAPE:
        a = draw_data.draw(st.integers(0, s))
        b = draw_data.draw(st.integers(0, s))
        sel.append(slice(min(a, b), max(a, b)))
    return tuple(sel)


@pytest.fixture(params=["start", "end"])
def location(request):
    return request.param


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_decode_partial_equals_full_decode_slices(location, data):
    c = make(CHUNK, (BYTES, GZIP), location)
    sp = spec(SHAPE)
    a = data_array(data.draw(st.integers(0, 3)))
    v = MemValue(c.encode(a, sp))
    sel = slice_sel(data)
    v.calls.clear()
    got = c.decode_partial(v, sel, sp)
    np.testing.assert_array_equal(got, a[sel])
    if got.size:
        # one index read, at most one ranged read
        assert v.calls[0] == ("get", SuffixRequest(16 * 24 + 4) if location == "end" else RangeRequest(0, 16 * 24 + 4))
        assert len(v.calls) <= 2


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_decode_partial_orthogonal_arrays(location, data):
    c = make(CHUNK, (BYTES,), location)
    sp = spec(SHAPE)
    a = data_array(1)
    v = MemValue(c.encode(a, sp))
    sel = []
    for d, s in enumerate(SHAPE):
        if data.draw(st.booleans()):
            sel.append(np.array(data.draw(st.lists(st.integers(0, s - 1), max_size=6)), dtype=np.int64))
        else:
            sel.append(slice_sel(data)[d])
    sel = tuple(sel)
    ref = a
    for d, s in enumerate(sel):
        ref = ref[(slice(None),) * d + (s,)]
    np.testing.assert_array_equal(c.decode_partial(v, sel, sp), ref)


def test_decode_partial_missing_shard_and_missing_chunks():
    c = make(CHUNK)
    sp = spec(SHAPE, fill=7)
    # a missing shard: None (the caller fills), as ArrayBytesCodec.decode_partial declares
    assert c.decode_partial(MemValue(None), (slice(1, 5), slice(0, 12), slice(2, 3)), sp) is None
    a = np.full(SHAPE, 7, np.uint16)
    a[0, 0, 0] = 1
    v = MemValue(c.encode(a, sp))
    v.calls.clear()
    got = c.decode_partial(v, (slice(4, 8), slice(0, 12), slice(0, 6)), sp)  # only empty chunks
    assert (got == 7).all()
    assert [k[0] for k in v.calls] == ["get"]  # the index only


def test_coalescing_reads_few_ranges():
    c = make(CHUNK, (BYTES, GZIP))
    sp = spec(SHAPE)
    a = data_array(0, empty_frac=0)
    old = zarrcy.config()
    zarrcy.config(subchunk_write_order="lexicographic")  # the ranges below are adjacent in C order
    v = MemValue(c.encode(a, sp))
    try:
        zarrcy.config(coalesce_gap=0, coalesce_max=1 << 30)
        v.calls.clear()
        c.decode_partial(v, (slice(0, 2), slice(0, 12), slice(0, 6)), sp)  # 6 adjacent chunks
        (kind, ranges), = [x for x in v.calls if x[0] == "get_ranges"]
        assert len(ranges) == 1
        v.calls.clear()
        c.decode_partial(v, (slice(0, 8), slice(0, 1), slice(0, 1)), sp)  # 4 far-apart chunks
        (kind, ranges), = [x for x in v.calls if x[0] == "get_ranges"]
        assert len(ranges) == 4
        zarrcy.config(coalesce_gap=1 << 20)
        v.calls.clear()
        np.testing.assert_array_equal(c.decode_partial(v, (slice(0, 8), slice(0, 1), slice(0, 1)), sp), a[:, :1, :1])
        (kind, ranges), = [x for x in v.calls if x[0] == "get_ranges"]
        assert len(ranges) == 1
    finally:
        zarrcy.config(coalesce_gap=old["coalesce_gap"], coalesce_max=old["coalesce_max"],
                      subchunk_write_order=old["subchunk_write_order"])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_encode_partial_equals_full_encode(location, data):
    c = make(CHUNK, (BYTES, GZIP), location)
    sp = spec(SHAPE)
    a = data_array(data.draw(st.integers(0, 3)))
    existing = data.draw(st.booleans())
    v = MemValue(c.encode(a, sp) if existing else None)
    base = a if existing else np.zeros(SHAPE, np.uint16)
    sel = slice_sel(data)
    shape = base[sel].shape
    kind = data.draw(st.sampled_from(["random", "zeros", "ones"]))
    value = {"random": np.random.default_rng(5).integers(0, 3, shape),
             "zeros": np.zeros(shape), "ones": np.ones(shape)}[kind].astype(np.uint16)
    merged = base.copy()
    merged[sel] = value
    c.encode_partial(v, sel, value, sp)
    expect = c.encode(merged, sp)
    if expect is None:
        assert v.value is None
    else:
        assert v.value == expect  # byte for byte: untouched inner chunks identical bytes
        np.testing.assert_array_equal(c.decode(v.value, sp), merged)


def test_encode_partial_reuses_bytes_and_reads_only_what_it_needs():
    c = make(CHUNK, (BYTES, GZIP))
    sp = spec(SHAPE)
    a = data_array(0, empty_frac=0)
    old = c.encode(a, sp)
    v = MemValue(old)
    v.calls.clear()
    # exactly one inner chunk, fully covered: no decode needed, others copied verbatim
    c.encode_partial(v, (slice(2, 4), slice(4, 8), slice(3, 6)), np.full((2, 4, 3), 9, np.uint16), sp)
    kinds = [k[0] for k in v.calls]
    assert kinds == ["get", "get_ranges", "set"]
    (_, ranges), = [x for x in v.calls if x[0] == "get_ranges"]
    requested = sum(r.length for r in ranges)
    assert requested <= len(old)
    # inner chunks other than the touched one keep their exact bytes
    idx_old = np.frombuffer(old[-(16 * 24 + 4):-4], "<u8")
    idx_new = np.frombuffer(v.value[-(16 * 24 + 4):-4], "<u8")
    touched = np.ravel_multi_index((1, 1, 1), (4, 3, 2))
    for i in range(24):
        if i == touched:
            continue
        o0, n0 = idx_old[2 * i], idx_old[2 * i + 1]
        o1, n1 = idx_new[2 * i], idx_new[2 * i + 1]
        assert old[o0:o0 + n0] == v.value[o1:o1 + n1]


def test_encode_partial_delete_when_empty_and_no_write_when_missing():
    c = make(CHUNK)
    sp = spec(SHAPE)
    a = np.zeros(SHAPE, np.uint16)
    a[0, 0, 0] = 5
    v = MemValue(c.encode(a, sp))
    c.encode_partial(v, (slice(0, 1), slice(0, 1), slice(0, 1)), np.zeros((1, 1, 1), np.uint16), sp)
    assert v.value is None and v.calls[-1] == ("delete",)
    v = MemValue(None)
    c.encode_partial(v, (slice(0, 8), slice(0, 4), slice(0, 6)), 0, sp)  # scalar broadcast, all fill
    assert v.value is None and [k[0] for k in v.calls] == ["get"]


def test_encode_partial_orthogonal_arrays():
    c = make(CHUNK, (BYTES,), "start")
    sp = spec(SHAPE)
    a = data_array(2)
    v = MemValue(c.encode(a, sp))
    sel = (np.array([1, 6, 7]), slice(3, 9), np.array([0, 2, 5]))
    value = np.arange(3 * 6 * 3, dtype=np.uint16).reshape(3, 6, 3) + 1
    c.encode_partial(v, sel, value, sp)
    merged = a.copy()
    merged[np.ix_(sel[0], np.arange(3, 9), sel[2])] = value
    assert v.value == c.encode(merged, sp)


def test_nested_sharding_partial():
    inner = make((2, 2, 3), (BYTES, GZIP)).to_dict()
    c = ShardingCodec.from_dict({"chunk_shape": [4, 4, 6], "codecs": [inner]}, "codecs[0]")
    sp = spec(SHAPE)
    a = data_array(3)
    v = MemValue(c.encode(a, sp))
    sel = (slice(1, 7), slice(3, 10), slice(0, 4))
    np.testing.assert_array_equal(c.decode_partial(v, sel, sp), a[sel])
    c.encode_partial(v, sel, np.full((6, 7, 4), 3, np.uint16), sp)
    a[sel] = 3
    np.testing.assert_array_equal(c.decode(v.value, sp), a)


# -- corrupt shards through the partial path ---------------------------------------------

def forge(pairs, body, good_crc=True, location="end"):
    idx = np.array([v for p in pairs for v in p], "<u8").tobytes()
    ib = idx + struct.pack("<I", crc32c.crc32c(idx) ^ (0 if good_crc else 1))
    return body + ib if location == "end" else ib + body


@pytest.mark.parametrize(
    "value, match",
    [
        (b"\0" * 20, "shorter than its index"),
        (forge([(0, 4), (4, 4)], b"\0" * 8, good_crc=False), "shard index"),
        (forge([(0, 4), (S := SENTINEL, 4)], b"\0" * 8), "entry 1 .*2\\^64-1"),
        (forge([(0, 4), (SENTINEL - 2, 4)], b"\0" * 8), "entry 1 .*overflow"),
        (forge([(0, 4), (40, 8)], b"\0" * 8), "entry 1 .*past the end"),  # truncated mid-chunk
    ],
)
def test_corrupt_partial(value, match):
    c = make((2,))
    sp = spec((4,))
    with pytest.raises(CorruptChunkError, match=match):
        c.decode_partial(MemValue(value), (slice(0, 4),), sp)
    with pytest.raises(CorruptChunkError, match=match):
        c.encode_partial(MemValue(value), (slice(0, 1),), np.ones(1, np.uint16), sp)


def test_corrupt_partial_index_start():
    c = make((2,), location="start")
    value = forge([(2, 4), (SENTINEL, SENTINEL)], b"\0" * 8, location="start")  # into the index
    with pytest.raises(CorruptChunkError, match="entry 0 .*overlaps the shard index"):
        c.decode_partial(MemValue(value), (slice(0, 2),), spec((4,)))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fuzz_mutated_and_random_shards_never_crash(data):
    c = make((2, 4, 3), (BYTES, GZIP), data.draw(st.sampled_from(["start", "end"])))
    sp = spec(SHAPE)
    good = c.encode(data_array(0), sp)
    kind = data.draw(st.sampled_from(["flip", "truncate", "random", "extend"]))
    if kind == "flip":
        b = bytearray(good)
        for _ in range(data.draw(st.integers(1, 4))):
            b[data.draw(st.integers(0, len(b) - 1))] ^= 1 << data.draw(st.integers(0, 7))
        value = bytes(b)
    elif kind == "truncate":
        value = good[: data.draw(st.integers(0, len(good) - 1))]
    elif kind == "extend":
        value = good + data.draw(st.binary(min_size=1, max_size=64))
    else:
        value = data.draw(st.binary(max_size=600))
    for call in (lambda: c.decode(value, sp),
                 lambda: c.decode_partial(MemValue(value), (slice(1, 7), slice(0, 12), slice(2, 5)), sp)):
        try:
            out = call()
        except CorruptChunkError:
            continue
        assert out.dtype == np.uint16  # decoded without error: must be a well-formed array


def test_single_chunk_read_of_truncated_shard():
    c = make((2,))
    sp = spec((4,))
    value = forge([(0, 4), (40, 8)], b"\1\0\2\0" * 2)
    np.testing.assert_array_equal(c.decode_partial(MemValue(value), (slice(0, 1),), sp), [1])
    with pytest.raises(CorruptChunkError, match="entry 1 .*past the end"):
        c.decode_partial(MemValue(value), (slice(2, 4),), sp)
    value = forge([(0, 4), (SENTINEL, SENTINEL)], b"\1\0\2\0")
    np.testing.assert_array_equal(c.decode_partial(MemValue(value), (slice(3, 4),), sp), [0])


@pytest.mark.parametrize("codecs", [(BYTES,), (BYTES, GZIP)])
def test_whole_inner_chunk_reads(location, codecs):
    """An aligned read of exactly one inner chunk (the latency path: no projection):
    equal to numpy for every chunk, stored or not, into None / a contiguous / a strided
    ``out``; one range read after the index, one inner chunk decoded (none if missing)."""
    from zarrcy.codecs.sharding import decode_stats

    c = make(CHUNK, codecs, location)
    sp = spec(SHAPE, fill=5)
    a = data_array(3)
    a[a == 0] = 5  # the empty chunks hold the fill value: not stored
    v = MemValue(c.encode(a, sp))
    decode_stats.reset(True)
    try:
        for cc in np.ndindex(*[s // k for s, k in zip(SHAPE, CHUNK)]):
            sel = tuple(slice(g * k, (g + 1) * k) for g, k in zip(cc, CHUNK))
            want = a[sel]
            stored = not (want == 5).all()
            before = decode_stats.decoded
            v.calls.clear()
            np.testing.assert_array_equal(c.decode_partial(v, sel, sp), want)
            assert decode_stats.decoded - before == int(stored)
            assert [k[0] for k in v.calls] == (["get", "get_ranges"] if stored else ["get"])
            out = np.zeros(CHUNK, np.uint16)
            assert c.decode_partial(v, sel, sp, out) is out
            np.testing.assert_array_equal(out, want)
            big = np.zeros((CHUNK[0], CHUNK[1], 2 * CHUNK[2]), np.uint16)
            c.decode_partial(v, sel, sp, big[:, :, ::2])  # a strided view
            np.testing.assert_array_equal(big[:, :, ::2], want)
    finally:
        decode_stats.reset(False)
    # not exactly one inner chunk: the general path, same answers
    sel = (slice(0, 2), slice(0, 4), slice(1, 4))
    np.testing.assert_array_equal(c.decode_partial(v, sel, sp), a[sel])
