"""Array API: create/open, fill values, empty chunks, resize/append, pickling, errors."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import zarrcy
from zarrcy.codecs import GzipCodec


@pytest.fixture(params=["memory", "local", "zip"])
def store(request, tmp_path):
    if request.param == "memory":
        yield zarrcy.MemoryStore()
        return
    if request.param == "local":
        yield zarrcy.LocalStore(str(tmp_path / "data.zarr"))
        return
    s = zarrcy.ZipStore(str(tmp_path / "data.zip"), mode="w")
    yield s
    s.close()


def test_roundtrip_and_reopen(store):
    data = np.arange(30 * 17, dtype="float64").reshape(30, 17)
    a = zarrcy.create_array(store, name="x/y", shape=data.shape, dtype="float64", chunks=(8, 5),
                            compressors=[GzipCodec(level=1)], dimension_names=("r", "c"), attributes={"u": 1})
    a[...] = data
    b = zarrcy.open_array(store, path="x/y")
    np.testing.assert_array_equal(b[...], data)
    assert b.chunks == (8, 5) and b.shards is None
    assert b.attrs["u"] == 1 and b.dimension_names == ("r", "c")
    assert isinstance(zarrcy.open(store, path="x"), zarrcy.Group)
    assert b.nchunks_initialized == 4 * 4


def test_missing_chunks_read_fill(store):
    a = zarrcy.create_array(store, shape=(10, 10), dtype="int16", chunks=(3, 3), fill_value=-5)
    assert (a[...] == -5).all()
    a[4, 4] = 7
    out = a[...]
    assert out[4, 4] == 7 and (out.sum() == -5 * 99 + 7)
    assert a.nchunks_initialized == 1


def test_empty_chunks_are_erased(store):
    a = zarrcy.create_array(store, shape=(8,), dtype="uint8", chunks=(4,), fill_value=0)
    a[...] = np.arange(8, dtype="uint8") + 1
    assert a.nchunks_initialized == 2
    a[0:4] = 0
    if not store.supports_deletes:  # zip: append-only, the all-fill chunk is rewritten instead
        assert a.nchunks_initialized == 2 and (a[0:4] == 0).all()
        return
    assert a.nchunks_initialized == 1
    zarrcy.config(write_empty_chunks=True)
    try:
        a[0:4] = 0
        assert a.nchunks_initialized == 2
    finally:
        zarrcy.config(write_empty_chunks=False)


def test_nan_fill_value_float():
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(5,), dtype="float32", chunks=(2,), fill_value=float("nan"))
    assert np.isnan(a[...]).all()
    a[1] = 1.0
    r = a[...]
    assert r[1] == 1.0 and np.isnan(r[[0, 2, 3, 4]]).all()


def test_resize_and_append():
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(10, 4), dtype="int32", chunks=(3, 3), fill_value=0)
    a[...] = np.arange(40, dtype="int32").reshape(10, 4) + 1
    a.resize((5, 4))
    assert a.shape == (5, 4)
    a.resize(10, 4)
    out = a[...]
    np.testing.assert_array_equal(out[:5], np.arange(20).reshape(5, 4) + 1)
    # rows 6..9 lived in chunks wholly outside the shrunk shape: deleted, now fill
    assert (out[6:] == 0).all()
    new = a.append(np.full((2, 4), 9, dtype="int32"))
    assert new == (12, 4)
    assert (a[10:] == 9).all()


def test_pickle_roundtrip(tmp_path):
    a = zarrcy.create_array(str(tmp_path / "p.zarr"), name="a", shape=(6,), dtype="int8", chunks=(4,))
    a[...] = np.arange(6, dtype="int8")
    b = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(b[...], np.arange(6))
    g = zarrcy.open_group(str(tmp_path / "p.zarr"))
    assert pickle.loads(pickle.dumps(g)).path == ""


def test_array_protocol():
    a = zarrcy.api.array(np.arange(12).reshape(3, 4), chunks=(2, 2))
    np.testing.assert_array_equal(np.asarray(a), np.arange(12).reshape(3, 4))


def test_read_only(tmp_path):
    p = str(tmp_path / "ro.zarr")
    zarrcy.create_array(p, shape=(4,), dtype="int8", chunks=(2,))
    a = zarrcy.open_array(p, mode="r")
    with pytest.raises(zarrcy.ReadOnlyError):
        a[0] = 1
    with pytest.raises(zarrcy.ReadOnlyError):
        a.attrs["x"] = 1
    with pytest.raises(PermissionError):  # also the builtin
        a.resize(8)


def test_corrupt_chunk_names_key(tmp_path):
    p = str(tmp_path / "c.zarr")
    a = zarrcy.create_array(p, shape=(8,), dtype="float32", chunks=(4,), compressors=[GzipCodec(level=1)])
    a[...] = np.arange(8, dtype="float32")
    store = a.store
    good = store.get("c/0")
    for bad in (b"", b"garbage" * 3, good[: len(good) // 2], good[:-1], bytes(reversed(good))):
        store.set("c/0", bad)
        with pytest.raises(zarrcy.CorruptChunkError) as ei:
            a[...]
        assert "c/0" in str(ei.value)


def test_uncompressed_chunk_wrong_size(tmp_path):
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(8,), dtype="float32", chunks=(4,), compressors=None)
    a[...] = 1
    a.store.set("c/1", b"\x00" * 15)
    with pytest.raises(zarrcy.CorruptChunkError, match="c/1"):
        a[...]
    a.store.set("c/1", b"\x00" * 17)
    with pytest.raises(zarrcy.CorruptChunkError, match="c/1"):
        a[5]


def test_create_errors(tmp_path):
    s = zarrcy.MemoryStore()
    zarrcy.create_array(s, name="a", shape=(3,), dtype="int8")
    with pytest.raises(zarrcy.ContainsNodeError):
        zarrcy.create_array(s, name="a", shape=(3,), dtype="int8")
    zarrcy.create_array(s, name="a", shape=(4,), dtype="int8", overwrite=True)
    assert zarrcy.open_array(s, path="a").shape == (4,)
    with pytest.raises(zarrcy.ContainsNodeError):
        zarrcy.create_group(s, path="a/b")  # below an array
    with pytest.raises(zarrcy.MetadataError):
        zarrcy.create_array(s, name="u8", shape=(3,), dtype="uint8", fill_value=256)
    with pytest.raises(zarrcy.MetadataError):
        zarrcy.create_array(s, name="bad", shape=(3,), dtype="int8", chunks=(0,))
    with pytest.raises(zarrcy.NodeNotFoundError):
        zarrcy.open_array(s, path="nope")
    with pytest.raises(KeyError):
        zarrcy.open_array(s, path="nope")


def test_full_metadata_dict():
    doc = {
        "zarr_format": 3, "node_type": "array", "shape": [6, 4], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}},
        "fill_value": 7,
        "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                   {"name": "bytes", "configuration": {"endian": "big"}}],
    }
    s = zarrcy.MemoryStore()
    a = zarrcy.create_array(s, name="m", metadata=doc)
    data = np.arange(24, dtype="uint16").reshape(6, 4)
    a[...] = data
    assert s.get("m/1.0") is not None
    np.testing.assert_array_equal(zarrcy.open_array(s, path="m")[...], data)
    assert json.loads(s.get("m/zarr.json"))["codecs"][1]["configuration"]["endian"] == "big"


def test_threads_config_matches_single_thread():
    data = np.random.default_rng(0).integers(0, 1000, (64, 64)).astype("int32")
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=data.shape, dtype="int32", chunks=(8, 8),
                            compressors=[GzipCodec(level=1)])
    old = zarrcy.config()["threads"]
    try:
        zarrcy.config(threads=4)
        a[...] = data
        r4 = a[...]
        zarrcy.config(threads=1)
        r1 = a[...]
    finally:
        zarrcy.config(threads=old)
    np.testing.assert_array_equal(r4, data)
    np.testing.assert_array_equal(r1, data)


@pytest.mark.parametrize("where", ["memory", "local"])
def test_shard_index_cache_sees_rewrites(tmp_path, where):
    """Point reads reuse a cached shard index; any rewrite of the shard (by this array,
    another array object or another library) must be seen by the next read."""
    import zarr

    store = zarrcy.MemoryStore() if where == "memory" else zarrcy.LocalStore(str(tmp_path / "s.zarr"))
    a = zarrcy.create_array(store, shape=(16, 16), dtype="int32", chunks=(4, 4), shards=(8, 8), fill_value=0)
    a[...] = np.arange(256, dtype="int32").reshape(16, 16)
    assert a[5, 6] == 5 * 16 + 6
    b = zarrcy.open_array(store)  # a second handle writes
    b[4:8, 4:8] = -1
    assert a[5, 6] == -1
    a[5, 6] = 77
    assert a[5, 6] == 77 and a[4, 4] == -1
    zarrcy.config(shard_write_strategy="append")
    try:
        a[5, 7] = 78
        assert a[5, 7] == 78 and a[5, 6] == 77
    finally:
        zarrcy.config(shard_write_strategy="rewrite")
    if where == "local":
        z = zarr.open_array(str(tmp_path / "s.zarr"), mode="r+")
        z[5, 6] = 99
        assert a[5, 6] == 99
    zarrcy.config(shard_index_cache=0)
    try:
        assert a[5, 7] == 78
    finally:
        zarrcy.config(shard_index_cache=64 << 20)


def test_point_read_errors_and_types():
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(4, 5), dtype="float32", chunks=(2, 2), fill_value=1.5)
    assert a[1, 2] == 1.5 and isinstance(a[1, 2], np.floating)
    a[3, 4] = 2.0
    assert a[-1, -1] == 2.0 and a[np.int64(3), np.uint8(4)] == 2.0
    with pytest.raises(IndexError):
        a[4, 0]
    with pytest.raises(IndexError):
        a[0, -6]
    a.store.set("c/1/2", b"junk")
    with pytest.raises(zarrcy.CorruptChunkError, match="c/1/2"):
        a[3, 4]
