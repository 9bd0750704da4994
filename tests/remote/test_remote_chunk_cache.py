"""The decoded-chunk cache on object stores: keyed by the strong ETag of a fresh index
read (sharded) or of the chunk's GET (unsharded); another client replacing the objects
(same sizes) is seen by the next read."""

from __future__ import annotations

import numpy as np
import pytest

import zarrcy
import zarrcy.chunk_cache as chunk_cache
from zarrcy.storage import ObjectStore

SHAPE = (48, 40, 36)


def _data(seed):
    return np.random.default_rng(seed).integers(0, 60000, SHAPE).astype("<u2")


def _array(store, data, sharded):
    kw = dict(chunks=(8, 8, 6), shards=(16, 16, 12)) if sharded else dict(chunks=(16, 16, 12))
    a = zarrcy.create_array(store, shape=SHAPE, dtype="<u2", compressors=None, fill_value=7, overwrite=True, **kw)
    a[...] = data
    return a


def _reads(a, data, seed=1, n=3):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        lo = [int(rng.integers(0, s - 1)) for s in SHAPE]
        sel = tuple(slice(l, l + 11) for l in lo)
        np.testing.assert_array_equal(a[sel], data[sel])
        p = tuple(int(rng.integers(0, s)) for s in SHAPE)
        assert a[p] == data[p]
        pts = tuple(rng.integers(0, s, 20) for s in SHAPE)
        np.testing.assert_array_equal(a.vindex[pts], data[pts])


@pytest.mark.parametrize("sharded", [True, False])
def test_object_store_etag(sharded, s3_url, s3_server):
    opts = s3_server[1]
    zarrcy.config(cache_bytes=1 << 26)
    url = f"{s3_url}/{'s' if sharded else 'u'}"
    data = _data(16)
    a = _array(ObjectStore(url, storage_options=opts), data, sharded)
    _reads(a, data)
    chunk_cache.stats(reset=True)
    _reads(a, data)
    s = chunk_cache.stats(reset=True)
    assert s["hits"] > 0 and s["misses"] == 0
    new = _data(17)
    _array(ObjectStore(url + "-new", storage_options=opts), new, sharded)
    # another client replaces every chunk object with the new version's bytes (same sizes),
    # through the store alone (no zarrcy write that would drop our entries)
    src = ObjectStore(url + "-new", storage_options=dict(opts))
    dst = ObjectStore(url, storage_options=dict(opts))
    keys = src.list_prefix("c/")
    assert keys
    for k in keys:
        raw = src.get(k)
        assert len(raw) == len(dst.get(k))
        dst.set(k, raw)
    _reads(a, new)
