"""zarrcy arrays of U<n>/S<n>: every selection kind against numpy, fill values and
missing chunks, both byte orders, compressors, transpose, sharding; bad stored chunks."""

from __future__ import annotations

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import CastError, CorruptChunkError

SHAPE = (7, 5)
CHUNKS = (3, 2)

LAYOUTS = {
    "plain": dict(compressors=None),
    "gzip": dict(compressors=[{"name": "gzip", "configuration": {"level": 1}}]),
    "zstd_crc": dict(compressors=[{"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}]),
    "transpose": dict(filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}], compressors=None),
    "sharded": dict(shards=(6, 4)),
    "sharded_gzip": dict(shards=(3, 4), compressors=[{"name": "gzip", "configuration": {"level": 1}}]),
}


def _values(kind: str, seed: int, ref) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "U":
        pool, n = ref.TEXTS, 5
        return np.array([pool[i] for i in rng.integers(0, len(pool), SHAPE[0] * SHAPE[1])], dtype=f"U{n}").reshape(SHAPE)
    pool, n = ref.BTEXTS + [b"abcd", b"a\x00\x00d"], 4
    return np.array([pool[i] for i in rng.integers(0, len(pool), SHAPE[0] * SHAPE[1])], dtype=f"S{n}").reshape(SHAPE)


def _create(tmp_path, kind: str, layout: str, endian: str, fill):
    kw = dict(LAYOUTS[layout])
    if kind == "U":
        kw["serializer"] = {"name": "bytes", "configuration": {"endian": endian}}
    return zarrcy.create_array(str(tmp_path), name="a", shape=SHAPE, chunks=CHUNKS,
                               dtype="U5" if kind == "U" else "S4", fill_value=fill, **kw)


FILLS = {"U": ["", "?", "🙂x"], "S": [b"", b"?", b"\xffz"]}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("kind, endian", [("U", "little"), ("U", "big"), ("S", "little")])  # S<n>: no byte order
def test_selections_match_numpy(tmp_path, ref, kind: str, endian: str, layout: str) -> None:
    fill = FILLS[kind][1]
    a = _create(tmp_path, kind, layout, endian, fill)
    data = _values(kind, 1, ref)
    want = np.full(SHAPE, fill, dtype=data.dtype)
    # leave the chunk row 3..5 x 0..1 missing; write the rest in pieces (partial chunks too)
    a[:3] = data[:3]
    a[6:, :] = data[6:]
    a[3:6, 2:] = data[3:6, 2:]
    want[:3], want[6:], want[3:6, 2:] = data[:3], data[6:], data[3:6, 2:]
    assert a.dtype == data.dtype
    np.testing.assert_array_equal(a[...], want)
    for sel in [(slice(None), slice(None)), (slice(1, 6, 2), slice(None, None, 3)), (4, slice(None)),
                (slice(None), 3), (-1, -1), (slice(5, None, 2), 1), (Ellipsis, slice(1, 4)), (3, 0)]:
        got = a[sel]
        if isinstance(got, np.ndarray):
            np.testing.assert_array_equal(got, want[sel])
            assert got.dtype == want.dtype
        else:
            assert got == want[sel]
    rows, cols = [0, 4, 6, 4], [1, 0, 3]
    np.testing.assert_array_equal(a.oindex[rows, cols], want[np.ix_(rows, cols)])
    np.testing.assert_array_equal(a.oindex[want[:, 0] == want[0, 0], :], want[want[:, 0] == want[0, 0], :])
    pts = (np.array([0, 3, 4, 6, 6]), np.array([0, 1, 0, 4, 0]))
    np.testing.assert_array_equal(a.vindex[pts], want[pts])
    b0, b1 = a.shards or CHUNKS  # blocks are the stored objects (shards when sharded)
    np.testing.assert_array_equal(a.blocks[1, 0], want[b0:2 * b0, 0:b1])
    np.testing.assert_array_equal(a.blocks[-1, -1], want[(SHAPE[0] - 1) // b0 * b0:, (SHAPE[1] - 1) // b1 * b1:])


@pytest.mark.parametrize("kind", ["U", "S"])
@pytest.mark.parametrize("fill_index", [0, 2])
def test_fill_values_and_empty_chunks(tmp_path, kind: str, fill_index: int) -> None:
    fill = FILLS[kind][fill_index]
    a = _create(tmp_path, kind, "plain", "little", fill)
    assert a.fill_value == fill
    np.testing.assert_array_equal(a[...], np.full(SHAPE, fill, dtype=a.dtype))
    reopened = zarrcy.open_array(str(tmp_path / "a"))
    assert reopened.fill_value == fill and reopened[0, 0] == fill
    a[:3, :2] = np.full((3, 2), fill, dtype=a.dtype)  # equal to the fill value: not stored
    assert a.nchunks_initialized == 0
    other = "x" if kind == "U" else b"x"
    a[0, 0] = other
    assert a.nchunks_initialized == 1 and a[0, 0] == other and a[0, 1] == fill


def test_edge_values_round_trip(tmp_path) -> None:
    u = zarrcy.create_array(str(tmp_path), name="u", shape=(6,), chunks=(4,), dtype="U3", compressors=None)
    uvals = ["", "abc", "\U0010FFFF\U0001F600\U00010000", "a\x00b", "\x00\x00x", "ßé"]  # full length, beyond BMP, NULs
    u[:] = uvals
    assert u[:].tolist() == uvals
    s = zarrcy.create_array(str(tmp_path), name="s", shape=(6,), chunks=(4,), dtype="S3", compressors=None)
    s[:] = [b"", b"abc", b"a\x00\x00", b"\x00\x00z", b"a\x00b", b"\xff\xff\xff"]
    # trailing NULs are padding (numpy's rule); leading/inner NULs are data
    assert s[:].tolist() == [b"", b"abc", b"a", b"\x00\x00z", b"a\x00b", b"\xff\xff\xff"]
    assert (tmp_path / "s" / "c" / "0").read_bytes() == b"\x00\x00\x00abca\x00\x00\x00\x00z"


def test_longer_values_are_truncated_like_numpy(tmp_path) -> None:
    a = zarrcy.create_array(str(tmp_path), name="a", shape=(2,), chunks=(2,), dtype="U2")
    a[:] = ["abcdef", "x"]
    assert a[:].tolist() == np.array(["abcdef", "x"], dtype="U2").tolist() == ["ab", "x"]


def test_lone_surrogate_write_refused(tmp_path) -> None:
    a = zarrcy.create_array(str(tmp_path), name="a", shape=(4,), chunks=(2,), dtype="U2")
    with pytest.raises(CastError):
        a[:2] = ["ok", "\udc80"]
    assert a.nchunks_initialized == 0


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("layout", ["plain", "gzip"])
def test_invalid_code_points_name_the_key(tmp_path, endian: str, layout: str) -> None:
    a = _create(tmp_path, "U", layout, endian, "")
    a[...] = np.full(SHAPE, "ok", dtype="U5")
    order = "<u4" if endian == "little" else ">u4"
    raw = np.zeros(CHUNKS[0] * CHUNKS[1] * 5, dtype=order)
    raw[7] = 0xDC00
    blob = raw.tobytes()
    if layout == "gzip":
        import gzip

        blob = gzip.compress(blob)
    (tmp_path / "a" / "c" / "1" / "1").write_bytes(blob)
    for read in (lambda: a[...], lambda: a[3, 2], lambda: a[4:5, 2:4], lambda: a.oindex[[3, 4], [2]],
                 lambda: a.vindex[[4], [3]]):
        with pytest.raises(CorruptChunkError, match="c/1/1") as e:
            read()
        assert e.value.key is not None and e.value.key.endswith("c/1/1")
    a[0, 0]  # other chunks still read


@pytest.mark.parametrize("kind", ["U", "S"])
@pytest.mark.parametrize("size", [0, 1, 39, 41, 200])
def test_wrong_chunk_size_names_the_key(tmp_path, kind: str, size: int) -> None:
    a = _create(tmp_path, kind, "plain", "little", FILLS[kind][0])
    assert size != CHUNKS[0] * CHUNKS[1] * a.dtype.itemsize  # 120 (U5) / 24 (S4)
    a[...] = np.full(SHAPE, "x" if kind == "U" else b"x", dtype=a.dtype)
    (tmp_path / "a" / "c" / "0" / "1").write_bytes(b"\x41" * size)
    with pytest.raises(CorruptChunkError, match="c/0/1"):
        a[...]


def test_sharded_bad_inner_chunk_names_the_shard(tmp_path) -> None:
    a = zarrcy.create_array(str(tmp_path), name="a", shape=(4,), chunks=(2,), shards=(4,), dtype="U1",
                            compressors=None)
    a[:] = ["a", "b", "c", "d"]
    key = tmp_path / "a" / "c" / "0"
    blob = bytearray(key.read_bytes())
    blob[8:12] = (0x110000).to_bytes(4, "little")  # element 2 (inner chunk 1), little-endian code unit
    key.write_bytes(bytes(blob))
    with pytest.raises(CorruptChunkError, match="c/0"):
        a[:]
    with pytest.raises(CorruptChunkError, match="c/0"):
        a[2]
    assert a[:2].tolist() == ["a", "b"]  # the untouched inner chunk
