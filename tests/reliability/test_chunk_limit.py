"""``zarrcy.config(max_chunk_bytes=...)`` is enforced by the array layer (issue 7.4).

A decoded chunk (a shard, when sharded) larger than the limit is refused with a
MetadataError naming ``chunk_grid.configuration.chunk_shape`` when the array is opened
or created -- before any chunk-sized allocation -- whatever the stored bytes are.
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import MetadataError
from zarrcy.storage import MemoryStore


def _meta(shape, chunks, dtype="float64", codecs=None):
    return {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": codecs or [{"name": "bytes", "configuration": {"endian": "little"}}],
    }


def _store(meta, chunks: dict | None = None) -> MemoryStore:
    s = MemoryStore()
    s.set("zarr.json", json.dumps(meta).encode())
    for k, v in (chunks or {}).items():
        s.set(k, v)
    return s


def test_hostile_chunk_shape_refused_at_open():
    # 2^40 float64 = 8 TiB per chunk, above the 8 GiB default; a 16-byte chunk is stored
    s = _store(_meta([1 << 40], [1 << 40]), {"c/0": b"\0" * 16})
    with pytest.raises(MetadataError, match=r"zarr\.json\.chunk_grid\.configuration\.chunk_shape.*max_chunk_bytes"):
        zarrcy.open_array(s)


def test_limit_is_configurable(restore_config):
    s = _store(_meta([100, 100], [50, 50]))  # 20 000 bytes per chunk
    zarrcy.config(max_chunk_bytes=19_999)
    with pytest.raises(MetadataError, match="max_chunk_bytes=19999"):
        zarrcy.open_array(s)
    zarrcy.config(max_chunk_bytes=20_000)
    a = zarrcy.open_array(s, mode="r+")
    a[:3, :3] = 1.5
    assert a[2, 2] == 1.5 and a[99, 99] == 0


def test_create_refuses_too(restore_config):
    zarrcy.config(max_chunk_bytes=1 << 20)
    with pytest.raises(MetadataError, match="max_chunk_bytes"):
        zarrcy.create_array(MemoryStore(), shape=(4096, 4096), chunks=(4096, 4096), dtype="float32")
    # the shard is what a read or write may hold in memory: it counts, not the inner chunk
    with pytest.raises(MetadataError, match="max_chunk_bytes"):
        zarrcy.create_array(MemoryStore(), shape=(4096, 4096), chunks=(64, 64), shards=(4096, 4096), dtype="float32")
    zarrcy.create_array(MemoryStore(), shape=(4096, 4096), chunks=(64, 64), shards=(256, 256), dtype="float32")


def test_huge_sparse_array_one_element_without_allocation():
    # a 2^62-element array of small chunks: reading and writing a few elements is fine
    s = _store(_meta([1 << 62], [1000], dtype="uint8"))
    a = zarrcy.open_array(s, mode="r+")
    tracemalloc.start()
    try:
        assert a[(1 << 62) - 1] == 0
        a[1 << 61 : (1 << 61) + 5] = 7
        got = a[(1 << 61) - 1 : (1 << 61) + 6]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.tolist() == [0, 7, 7, 7, 7, 7, 0]
    assert peak < 1 << 20, peak
    assert a.nchunks_initialized == 1


def test_limit_applies_to_v3_documents_written_by_others():
    # a document zarr-python would happily write, opened under a tiny limit
    s = _store(_meta([10], [10], dtype="int32"))
    before = zarrcy.config()["max_chunk_bytes"]
    try:
        zarrcy.config(max_chunk_bytes=39)
        with pytest.raises(MetadataError):
            zarrcy.open_array(s)
    finally:
        zarrcy.config(max_chunk_bytes=before)
    assert np.array_equal(zarrcy.open_array(s)[...], np.zeros(10, "int32"))

