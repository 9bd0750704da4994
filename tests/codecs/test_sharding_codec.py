"""sharding_indexed: configuration, whole-shard round trips, corrupt shards, threading."""

from __future__ import annotations

import struct
import threading

import crc32c
import numpy as np
import pytest

import zarrcy
from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.sharding import SENTINEL, ShardingCodec
from zarrcy.config import executor
from zarrcy.errors import CorruptChunkError, MetadataError

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
CRC = {"name": "crc32c"}


def make(chunk_shape, codecs=(BYTES,), index_codecs=(BYTES, CRC), location="end") -> ShardingCodec:
    return ShardingCodec.from_dict(
        {"chunk_shape": list(chunk_shape), "codecs": list(codecs), "index_codecs": list(index_codecs),
         "index_location": location},
        "codecs[0]",
    )


def spec(shape, dtype="uint16", fill=0) -> ArraySpec:
    dt = np.dtype(dtype)
    return ArraySpec(shape=tuple(shape), dtype=dt, fill_value=dt.type(fill))


def index_of(data: bytes, n: int, location="end") -> np.ndarray:
    raw = data[-(16 * n + 4):] if location == "end" else data[: 16 * n + 4]
    assert crc32c.crc32c(raw[:-4]) == struct.unpack("<I", raw[-4:])[0]
    return np.frombuffer(raw[:-4], "<u8")


def sample(shape, dtype, rng, empty_every=3, chunk_shape=None):
    a = (rng.random(shape) * 100).astype(dtype)
    if chunk_shape is not None:  # blank out some inner chunks entirely
        grid = [s // c for s, c in zip(shape, chunk_shape)]
        for k, c in enumerate(np.ndindex(*grid)):
            if k % empty_every == 1:
                a[tuple(slice(i * s, (i + 1) * s) for i, s in zip(c, chunk_shape))] = 0
    return a


# -- configuration ---------------------------------------------------------------------

def test_to_dict_round_trip_and_defaults():
    c = ShardingCodec.from_dict({"chunk_shape": [2, 3], "codecs": [BYTES, GZIP]}, "codecs[0]")
    d = c.to_dict()
    assert d["name"] == "sharding_indexed"
    assert d["configuration"]["index_location"] == "end"
    assert [x["name"] for x in d["configuration"]["index_codecs"]] == ["bytes", "crc32c"]
    c2 = ShardingCodec.from_dict(d["configuration"], "codecs[0]")
    assert c2 == c and c2.to_dict() == d
    assert ShardingCodec(chunk_shape=(2, 3)).to_dict()["configuration"]["codecs"][0]["name"] == "bytes"


@pytest.mark.parametrize(
    "cfg, where",
    [
        ({"chunk_shape": [2], "codecs": [BYTES], "extra": 1}, "extra"),
        ({"codecs": [BYTES]}, "chunk_shape"),
        ({"chunk_shape": [2]}, "codecs"),
        ({"chunk_shape": [0], "codecs": [BYTES]}, "chunk_shape"),
        ({"chunk_shape": [True], "codecs": [BYTES]}, "chunk_shape"),
        ({"chunk_shape": "2", "codecs": [BYTES]}, "chunk_shape"),
        ({"chunk_shape": [2.0], "codecs": [BYTES]}, "chunk_shape"),
        ({"chunk_shape": [2], "codecs": []}, "codecs"),
        ({"chunk_shape": [2], "codecs": {"name": "bytes"}}, "codecs"),
        ({"chunk_shape": [2], "codecs": [BYTES], "index_location": "middle"}, "index_location"),
        ({"chunk_shape": [2], "codecs": [BYTES], "index_location": 1}, "index_location"),
        ({"chunk_shape": [2], "codecs": [BYTES], "index_codecs": "crc32c"}, "index_codecs"),
    ],
)
def test_bad_configuration(cfg, where):
    with pytest.raises(MetadataError) as ei:
        ShardingCodec.from_dict(cfg, "codecs[0]")
    assert f"codecs[0].configuration.{where}" in str(ei.value)


def test_not_an_object():
    with pytest.raises(MetadataError):
        ShardingCodec.from_dict([1], "codecs[0]")


def test_validate_against_shard():
    c = make((4, 4))
    c.validate(spec((8, 12)), "codecs[0]")
    with pytest.raises(MetadataError, match=r"codecs\[0\]\.configuration\.chunk_shape"):
        c.validate(spec((8, 10)), "codecs[0]")  # 4 does not divide 10
    with pytest.raises(MetadataError, match=r"codecs\[0\]\.configuration\.chunk_shape"):
        c.validate(spec((8, 8, 8)), "codecs[0]")  # rank mismatch


def test_index_codecs_must_have_fixed_size():
    c = make((4,), index_codecs=(BYTES, GZIP))
    with pytest.raises(MetadataError, match="index_codecs"):
        c.validate(spec((8,)), "codecs[0]")


def test_compute_encoded_size_is_none():
    assert make((4,)).compute_encoded_size(8, spec((8,))) is None


# -- whole-shard round trips ------------------------------------------------------------

@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize(
    "shape, chunk_shape, dtype, codecs",
    [
        ((16,), (4,), "uint16", (BYTES,)),
        ((8, 12), (4, 3), "float32", (BYTES, GZIP)),
        ((4, 6, 8), (2, 3, 4), "int64", (BYTES, GZIP)),
        ((4, 4), (4, 4), "complex64", (BYTES,)),
        ((6, 4), (1, 1), "uint8", (BYTES, CRC)),
        ((8, 8), (2, 4), ">i4", ({"name": "bytes", "configuration": {"endian": "big"}},)),
    ],
)
def test_round_trip(location, shape, chunk_shape, dtype, codecs):
    rng = np.random.default_rng(1)
    native = np.dtype(dtype).newbyteorder("=")
    sp = spec(shape, native)
    c = make(chunk_shape, codecs, location=location)
    c.validate(sp, "codecs[0]")
    a = sample(shape, native, rng, chunk_shape=chunk_shape)
    data = c.encode(a, sp)
    assert isinstance(data, (bytes, bytearray))
    n = int(np.prod([s // k for s, k in zip(shape, chunk_shape)]))
    idx = index_of(data, n, location)
    grid = [s // k for s, k in zip(shape, chunk_shape)]
    for i, cc in enumerate(np.ndindex(*grid)):
        sl = tuple(slice(g * k, (g + 1) * k) for g, k in zip(cc, chunk_shape))
        assert (idx[2 * i] == SENTINEL) == (not a[sl].any())
    out = c.decode(data, sp)
    assert out.dtype == native and out.shape == a.shape
    np.testing.assert_array_equal(out, a)
    # decode_into a view of a larger array
    big = np.zeros((2,) + tuple(shape), native)
    assert c.decode_into(memoryview(data), big[1], sp)
    np.testing.assert_array_equal(big[1], a)


def test_all_fill_shard_is_not_written():
    c = make((2, 2))
    sp = spec((4, 4), "float64", fill=1.5)
    assert c.encode(np.full((4, 4), 1.5), sp) is None


def test_nan_fill_and_nonzero_fill():
    c = make((2,))
    sp = spec((6,), "float32", fill=np.nan)
    a = np.array([np.nan, np.nan, 1, np.nan, np.nan, np.nan], np.float32)
    data = c.encode(a, sp)
    idx = index_of(data, 3)
    assert idx[0] == SENTINEL and idx[2] != SENTINEL and idx[4] == SENTINEL
    np.testing.assert_array_equal(c.decode(data, sp), a)


def test_overhanging_edge_chunk():
    # the array layer pads an edge shard with the fill value; padded inner chunks are omitted
    sp = spec((8, 8), "int32", fill=-1)
    c = make((4, 4))
    valid = np.arange(5 * 3, dtype=np.int32).reshape(5, 3)
    padded = np.full((8, 8), -1, np.int32)
    padded[:5, :3] = valid
    data = c.encode(padded, sp)
    idx = index_of(data, 4)
    assert idx[2] == SENTINEL and idx[6] == SENTINEL  # chunks (0,1) and (1,1) hold only padding
    np.testing.assert_array_equal(c.decode(data, sp)[:5, :3], valid)


def test_zero_dimensional():
    c = ShardingCodec(chunk_shape=())
    sp = spec((), "float64")
    data = c.encode(np.array(3.5), sp)
    assert c.decode(data, sp)[()] == 3.5
    assert c.encode(np.array(0.0), sp) is None


def test_nested_sharding():
    inner = make((2, 2), (BYTES, GZIP)).to_dict()
    outer = make((4, 4), (inner,), location="start")
    sp = spec((8, 8), "uint16")
    outer.validate(sp, "codecs[0]")
    rng = np.random.default_rng(2)
    a = sample((8, 8), np.uint16, rng, chunk_shape=(2, 2))
    a[:4, :4] = 0  # one outer inner-chunk entirely empty
    data = outer.encode(a, sp)
    idx = index_of(data, 4, "start")
    assert idx[0] == SENTINEL
    np.testing.assert_array_equal(outer.decode(data, sp), a)
    assert outer.to_dict()["configuration"]["codecs"][0]["name"] == "sharding_indexed"
    assert ShardingCodec.from_dict(outer.to_dict()["configuration"], "codecs[0]") == outer


def test_reads_any_chunk_order_gaps_and_shared_bytes():
    # hand-made shard: chunk 1 stored first, a gap, chunks 0 and 2 share bytes (deduplicated)
    c = make((2,))
    sp = spec((6,), "uint16")
    a0 = np.array([7, 7], "<u2").tobytes()
    a1 = np.array([1, 2], "<u2").tobytes()
    body = a1 + b"\xee" * 5 + a0
    idx = np.array([9, 4, 0, 4, 9, 4], "<u8").tobytes()
    data = body + idx + struct.pack("<I", crc32c.crc32c(idx))
    np.testing.assert_array_equal(c.decode(data, sp), [7, 7, 1, 2, 7, 7])


# -- corrupt shards ---------------------------------------------------------------------

def forge(pairs, body=b"\0" * 32, location="end", good_crc=True) -> bytes:
    idx = np.array([v for p in pairs for v in p], "<u8").tobytes()
    crc = crc32c.crc32c(idx) ^ (0 if good_crc else 1)
    ib = idx + struct.pack("<I", crc)
    return body + ib if location == "end" else ib + body


S = SENTINEL


@pytest.mark.parametrize(
    "data, match",
    [
        (b"\0" * 10, "shorter than its index"),
        (forge([(0, 4), (S, S)], good_crc=False), "shard index"),
        (forge([(0, 4), (66, 4)]), "entry 1 .*past the end"),
        (forge([(0, 4), (100, 6)]), "entry 1 .*past the end"),
        (forge([(0, 4), (S - 1, 4)]), "entry 1 .*overflow"),
        (forge([(S, 4), (0, 4)]), "entry 0 .*2\\^64-1"),
        (forge([(0, 4), (0, S)]), "entry 1 .*2\\^64-1"),
        (forge([(0, 4), (60, 10)], body=b"\0" * 30), "entry 1 .*past the end"),  # truncated
    ],
)
def test_corrupt_end_index(data, match):
    c = make((2,))
    with pytest.raises(CorruptChunkError, match=match):
        c.decode(data, spec((4,)))


def test_entry_into_index():
    c = make((2,))
    body = b"\0" * 8
    data = forge([(0, 4), (6, 8)], body=body)  # [6, 14) runs into the index at 8
    with pytest.raises(CorruptChunkError, match="entry 1 .*overlaps the shard index"):
        c.decode(data, spec((4,)))
    c = make((2,), location="start")
    data = forge([(36, 4), (10, 4)], body=body, location="start")  # index is [0, 36)
    with pytest.raises(CorruptChunkError, match="entry 1 .*overlaps the shard index"):
        c.decode(data, spec((4,)))


def test_inner_chunk_garbage_is_corrupt():
    c = make((2,), (BYTES, GZIP))
    data = forge([(0, 8), (S, S)], body=b"\x1f\x8b" + b"\x00" * 6)
    with pytest.raises(CorruptChunkError):
        c.decode(data, spec((4,)))


# -- threading -------------------------------------------------------------------------

def test_parallel_decode_and_no_deadlock_from_pool_tasks():
    old = zarrcy.config()["threads"]
    try:
        zarrcy.config(threads=2)
        c = make((16, 16, 16), (BYTES, GZIP))
        sp = spec((64, 64, 64), "uint16")
        a = (np.arange(64**3) % 1000).astype(np.uint16).reshape(64, 64, 64)
        data = c.encode(a, sp)  # 4 MiB decoded: parallel path
        np.testing.assert_array_equal(c.decode(data, sp), a)
        # every pool worker runs a shard decode that itself wants the pool
        pool = executor()
        futs = [pool.submit(c.decode, data, sp) for _ in range(6)]
        done = [f.result(timeout=60) for f in futs]
        for d in done:
            np.testing.assert_array_equal(d, a)
        # and from foreign threads at once
        errors = []

        def work():
            try:
                np.testing.assert_array_equal(c.decode(data, sp), a)
            except Exception as e:  # pragma: no cover
                errors.append(e)

        ts = [threading.Thread(target=work) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert not errors
    finally:
        zarrcy.config(threads=old)


def test_errors_propagate_from_parallel_tasks():
    old = zarrcy.config()["threads"]
    try:
        zarrcy.config(threads=2)
        c = make((16, 16, 16), (BYTES, GZIP))
        sp = spec((64, 64, 64), "uint16")
        a = np.ones((64, 64, 64), np.uint16)
        data = bytearray(c.encode(a, sp))
        data[100:110] = b"\xff" * 10  # damage the first inner chunk's deflate stream
        with pytest.raises(CorruptChunkError):
            c.decode(bytes(data), sp)
    finally:
        zarrcy.config(threads=old)


@pytest.mark.parametrize(
    "index_codecs",
    [
        ({"name": "bytes", "configuration": {"endian": "big"}}, CRC),  # generic pipeline path
        (BYTES,),  # no checksum: kernel path without crc
        ({"name": "bytes", "configuration": {"endian": "big"}},),
    ],
)
@pytest.mark.parametrize("location", ["start", "end"])
def test_other_index_codecs(index_codecs, location):
    c = make((2, 2), (BYTES, GZIP), index_codecs, location)
    sp = spec((4, 6), "int16")
    a = np.arange(24, dtype=np.int16).reshape(4, 6)
    a[:2, :2] = 0
    data = c.encode(a, sp)
    n = 6
    isz = 16 * n + (4 if CRC in index_codecs else 0)
    raw = data[-isz:] if location == "end" else data[:isz]
    big = index_codecs[0]["configuration"]["endian"] == "big"
    idx = np.frombuffer(raw[: 16 * n], ">u8" if big else "<u8")
    assert idx[0] == SENTINEL and idx[1] == SENTINEL and idx[2] != SENTINEL
    np.testing.assert_array_equal(c.decode(data, sp), a)
    if CRC in index_codecs:
        bad = bytearray(data)
        bad[-isz + 3 if location == "end" else 3] ^= 1
        with pytest.raises(CorruptChunkError, match="shard index"):
            c.decode(bytes(bad), sp)


def test_pickle_and_hash():
    import pickle

    c = make((2, 2), (BYTES, GZIP))
    sp = spec((4, 4))
    data = c.encode(np.ones((4, 4), np.uint16), sp)  # fills the layout cache
    c2 = pickle.loads(pickle.dumps(c))
    assert c2 == c and hash(c2) == hash(c)
    np.testing.assert_array_equal(c2.decode(data, sp), np.ones((4, 4)))


def test_many_inner_chunks_without_coordinate_table():
    c = make((1, 1))
    sp = spec((300, 300), "uint8")  # 90000 inner chunks > the coordinate-table limit
    a = np.zeros((300, 300), np.uint8)
    a[::7, ::5] = 3
    data = c.encode(a, sp)
    np.testing.assert_array_equal(c.decode(data, sp), a)
    from zarrcy.codecs.sharding import _Layout  # noqa: F401  (exercised through the codec)

    bad = bytearray(data)
    n = 90000
    # make the last entry half-empty and fix the checksum: the error names entry and coords
    import crc32c as _c

    idx = np.frombuffer(bytes(bad[-(16 * n + 4):-4]), "<u8").copy()
    idx[-1] = 5  # the last chunk is empty: (2^64-1, 5) is half-empty
    raw = idx.astype("<u8").tobytes()
    bad[-(16 * n + 4):] = raw + struct.pack("<I", _c.crc32c(raw))
    with pytest.raises(CorruptChunkError, match=r"entry 89999 \(inner chunk \(299, 299\)\)"):
        c.decode(bytes(bad), sp)


def test_write_empty_chunks_stores_every_inner_chunk():
    c = make((2,))
    sp = spec((6,), "uint16")
    old = zarrcy.config()["write_empty_chunks"]
    try:
        zarrcy.config(write_empty_chunks=True)
        data = c.encode(np.zeros(6, np.uint16), sp)
        assert (index_of(data, 3) != SENTINEL).all()
        np.testing.assert_array_equal(c.decode(data, sp), np.zeros(6))
    finally:
        zarrcy.config(write_empty_chunks=old)
