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


@pytest.mark.parametrize("how", ["point", "box", "vindex"])
def test_cached_index_never_hides_a_write_into_an_empty_inner_chunk(how, s3_url, s3_server):
    """The shard-index cache of an object store: a read whose inner chunks are all empty
    in the cached index makes no data request, so nothing checks the cached ETag.  It must
    not return the fill value after another client wrote into that inner chunk: such a
    read runs again on a freshly read index."""
    opts = s3_server[1]
    url = f"{s3_url}/empty-inner-{how}"
    kw = dict(shape=(16, 16), chunks=(4, 4), shards=(16, 16), dtype="<u2", compressors=None, fill_value=7)
    a = zarrcy.create_array(ObjectStore(url, storage_options=opts), overwrite=True, **kw)
    a[0:4, 0:4] = 1  # one stored inner chunk; (8, 8) lies in an empty one
    read = {"point": lambda: a[9, 9], "box": lambda: a[8:12, 8:12][1, 1],
            "vindex": lambda: a.vindex[[9, 10], [9, 10]][0]}[how]
    with zarrcy.config.set(shard_index_cache=1 << 20):
        assert read() == 7  # the index is cached now
        other = zarrcy.create_array(ObjectStore(url + "-other", storage_options=opts), overwrite=True, **kw)
        other[0:4, 0:4] = 1
        other[8:12, 8:12] = 5
        raw = ObjectStore(url + "-other", storage_options=dict(opts)).get("c/0/0")
        ObjectStore(url, storage_options=dict(opts)).set("c/0/0", raw)  # another client, not through `a`
        assert read() == 5
        assert a[0, 0] == 1
