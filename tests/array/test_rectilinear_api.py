"""zarr-python-style helpers on rectilinear arrays: *_like, from_array(chunks="keep"),
and the codec views of a rectilinear shard grid."""

from __future__ import annotations

import numpy as np

import zarrcy
from zarrcy.storage import MemoryStore


def test_like_and_from_array_keep_rectilinear_chunking():
    a = zarrcy.create_array(MemoryStore(), shape=(60, 100), dtype="f4", chunks=[[10, 20, 30], [[50, 2]]])
    a[...] = np.arange(6000, dtype="f4").reshape(60, 100)
    z = zarrcy.zeros_like(a, store=MemoryStore())
    assert z.write_chunk_sizes == a.write_chunk_sizes == ((10, 20, 30), (50, 50))
    b = zarrcy.from_array(MemoryStore(), data=a, chunks="keep")
    assert b.write_chunk_sizes == a.write_chunk_sizes
    np.testing.assert_array_equal(b[...], a[...])


def test_rectilinear_shard_grid_codec_views():
    s = zarrcy.create_array(MemoryStore(), shape=(60, 100), dtype="f4", chunks=(10, 25), shards=[[20, 40], [50, 50]])
    assert s.serializer is not None and s.serializer.name == "bytes"
    assert s.read_chunk_sizes[0] == (10,) * 6
    f = zarrcy.full_like(s, 3.0, store=MemoryStore())
    assert f.write_chunk_sizes == s.write_chunk_sizes and float(f[59, 99]) == 3.0
