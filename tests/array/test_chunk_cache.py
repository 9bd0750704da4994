"""The decoded-chunk cache (``zarrcy.config(cache_bytes=N)``, zarrcy/chunk_cache.py):
values against numpy for every read kind and store kind, hit/miss counts, LRU eviction
by bytes, threads, fork, writers in other processes (same size, same second), mutation
safety, config validation.  The oracle is always the numpy array that was written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import zarrcy
import zarrcy.chunk_cache as chunk_cache
from zarrcy.storage import LocalStore, MemoryStore, ZipStore
from zarrcy.storage import local as local_mod

SHAPE = (48, 40, 36)
INNER = (8, 8, 6)
SHARDS = (16, 16, 12)
COMPRESSORS = {
    "zstd": [{"name": "zstd", "configuration": {"level": 0, "checksum": False}}],
    "gzip": [{"name": "gzip", "configuration": {"level": 1}}],
    "none": None,
}


@pytest.fixture
def old_files(monkeypatch):
    """Files written by the test count as changed long before every read (the clock the
    racy rule compares ctimes with moves a minute ahead)."""
    monkeypatch.setattr(local_mod, "_now_ns", lambda: time.time_ns() + 60_000_000_000)


def _data(seed: int = 0, dtype: str = "<u2") -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 60000, SHAPE).astype(dtype)


def _array(store, data, sharded: bool = True, compressor: str = "zstd", **kw):
    kw.setdefault("fill_value", 7)
    if sharded:
        kw.update(chunks=INNER, shards=SHARDS)
    else:
        kw.update(chunks=SHARDS)
    a = zarrcy.create_array(store, shape=data.shape, dtype=data.dtype, compressors=COMPRESSORS[compressor],
                            overwrite=True, **kw)
    a[...] = data
    return a


def _reads(a, data, seed: int = 1, n: int = 12):
    """Boxes (unaligned, strided), single elements and point lists, checked against numpy."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        lo = [int(rng.integers(0, s - 1)) for s in SHAPE]
        hi = [int(rng.integers(l + 1, min(s, l + 13) + 1)) for l, s in zip(lo, SHAPE)]
        sel = tuple(slice(l, h) for l, h in zip(lo, hi))
        np.testing.assert_array_equal(a[sel], data[sel])
        step = (slice(lo[0], None, 5), slice(None, None, 3), lo[2])
        np.testing.assert_array_equal(a[step], data[step])
        p = tuple(int(rng.integers(0, s)) for s in SHAPE)
        assert a[p] == data[p]
        pts = tuple(rng.integers(0, s, 20) for s in SHAPE)
        np.testing.assert_array_equal(a.vindex[pts], data[pts])
        np.testing.assert_array_equal(a.oindex[pts[0][:3], :5, pts[2][:4]], data[np.ix_(pts[0][:3], range(5),
                                                                                        pts[2][:4])])


# -- configuration ----------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [-1, "1", 1.5, True, None])
def test_config_validation(bad):
    with pytest.raises(ValueError, match=r"config\.cache_bytes: expected an integer >= 0"):
        zarrcy.config(cache_bytes=bad)
    assert zarrcy.config()["cache_bytes"] == 0


def test_off_by_default_caches_nothing():
    data = _data()
    a = _array(MemoryStore(), data)
    _reads(a, data, n=3)
    assert chunk_cache.stats()["entries"] == 0
    assert chunk_cache.stats()["hits"] == 0


def test_turning_off_drops_entries():
    zarrcy.config(cache_bytes=1 << 24)
    data = _data()
    a = _array(MemoryStore(), data)
    _reads(a, data, n=2)
    assert chunk_cache.stats()["entries"] > 0
    zarrcy.config(cache_bytes=0)
    _reads(a, data, n=1)
    assert chunk_cache.stats()["entries"] == 0


# -- values and counters, every cached store kind --------------------------------------------
def _store(kind, tmp_path, request):
    if kind == "memory":
        return MemoryStore()
    if kind == "local":
        request.getfixturevalue("old_files")
        return LocalStore(tmp_path / "a.zarr")
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["memory", "local"])
@pytest.mark.parametrize("sharded", [True, False])
@pytest.mark.parametrize("compressor", ["zstd", "gzip", "none"])
def test_values_and_hits(kind, sharded, compressor, tmp_path, request):
    zarrcy.config(cache_bytes=1 << 26)
    data = _data(3)
    data[:16, :16] = 7  # unstored (fill) chunks too
    a = _array(_store(kind, tmp_path, request), data, sharded=sharded, compressor=compressor)
    chunk_cache.stats(reset=True)
    _reads(a, data)
    first = chunk_cache.stats(reset=True)
    assert first["misses"] > 0 and first["entries"] > 0
    _reads(a, data)  # the same selections again: everything is cached
    again = chunk_cache.stats()
    assert again["misses"] == 0 and again["hits"] >= first["misses"]
    for entry, _cost in chunk_cache._lru.values():  # never handed out writable
        assert entry is chunk_cache.FILL or not entry.flags.writeable


def test_racy_files_are_not_cached(tmp_path):
    """A file changed within RACY_NS of the read (here: just written) is never cached:
    its stat could repeat for a change made in the same clock tick."""
    zarrcy.config(cache_bytes=1 << 26)
    data = _data(4)
    a = _array(LocalStore(tmp_path / "a.zarr"), data)
    _reads(a, data, n=3)
    assert chunk_cache.stats()["entries"] == 0


@pytest.mark.parametrize("sharded", [True, False])
def test_zip_store_is_read_uncached(sharded, tmp_path):
    zarrcy.config(cache_bytes=1 << 26)
    data = _data(5)
    with ZipStore(tmp_path / "a.zip", mode="w") as z:
        _array(z, data, sharded=sharded)
    with ZipStore(tmp_path / "a.zip", mode="r") as z:
        a = zarrcy.open_array(z, mode="r")
        _reads(a, data, n=3)
    assert chunk_cache.stats()["entries"] == 0


# -- LRU by bytes ---------------------------------------------------------------------------------
def test_lru_eviction_by_bytes():
    data = _data(6)
    a = _array(MemoryStore(), data)
    cost = int(np.prod(INNER)) * 2 + chunk_cache.ENTRY_OVERHEAD
    zarrcy.config(cache_bytes=3 * cost)
    box = lambda i: (slice(8 * i, 8 * i + 8), slice(0, 8), slice(0, 6))  # noqa: E731  inner chunk (i, 0, 0)
    for i in range(3):
        a[box(i)]
    assert chunk_cache.stats()["entries"] == 3 and chunk_cache.stats()["bytes"] == 3 * cost
    a[box(0)]  # chunk 0 is now the most recently used
    a[box(3)]  # evicts chunk 1, the least recently used
    s = chunk_cache.stats(reset=True)
    assert s["entries"] == 3 and s["evictions"] == 1 and s["bytes"] <= 3 * cost
    for i in (0, 2, 3):
        np.testing.assert_array_equal(a[box(i)], data[box(i)])
    assert chunk_cache.stats(reset=True)["misses"] == 0
    np.testing.assert_array_equal(a[box(1)], data[box(1)])
    assert chunk_cache.stats()["misses"] == 1


def test_entry_larger_than_budget_is_not_cached():
    data = _data(7)
    a = _array(MemoryStore(), data)
    zarrcy.config(cache_bytes=int(np.prod(INNER)) * 2)  # one chunk + overhead does not fit
    np.testing.assert_array_equal(a[:8, :8, :6], data[:8, :8, :6])
    assert chunk_cache.stats()["entries"] == 0


# -- threads and fork ------------------------------------------------------------------------------
def test_threads_share_the_cache_with_evictions():
    data = _data(8)
    a = _array(MemoryStore(), data)
    zarrcy.config(cache_bytes=20 * (int(np.prod(INNER)) * 2 + chunk_cache.ENTRY_OVERHEAD))
    with ThreadPoolExecutor(6) as ex:  # a failing read raises here
        list(ex.map(lambda seed: _reads(a, data, seed=seed, n=15), range(6)))
    s = chunk_cache.stats()
    assert s["evictions"] > 0 and s["bytes"] <= zarrcy.config()["cache_bytes"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_child_starts_empty():
    zarrcy.config(cache_bytes=1 << 26)
    data = _data(9)
    a = _array(MemoryStore(), data)
    _reads(a, data, n=2)
    assert chunk_cache.stats()["entries"] > 0
    pid = os.fork()
    if pid == 0:  # the child: an empty cache, and reads still right
        code = 1
        try:
            empty = chunk_cache.stats()["entries"] == 0 and chunk_cache.stats()["hits"] == 0
            _reads(a, data, n=2)
            code = 0 if empty and chunk_cache.stats()["entries"] > 0 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# -- never stale ---------------------------------------------------------------------------------
_WRITER = r"""
import os, sys, numpy as np, zarrcy
from zarrcy.storage import LocalStore
path, seed, inplace = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
a = zarrcy.open_array(LocalStore(path), mode="r+")
data = np.random.default_rng(seed).integers(0, 60000, a.shape).astype(a.dtype)
if not inplace:
    a[...] = data   # temp file + rename: new objects
    sys.exit(0)
# in place: the same file, the same size, the mtime put back (ctime still moves)
for root, _, files in os.walk(os.path.join(path, "c")):
    for f in files:
        p = os.path.join(root, f)
        st = os.stat(p)
        raw = bytearray(open(p, "rb").read())
        raw[:len(raw) // 2] = bytes(len(raw) // 2)  # zero the first half of every chunk/shard
        with open(p, "r+b") as fh:
            fh.write(raw)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
"""


@pytest.mark.parametrize("sharded", [True, False])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("old", [True, False])
def test_writer_in_another_process(sharded, inplace, old, tmp_path, request):
    """Another process replaces every shard/chunk (same size: no compression), within the
    same second; the next read sees the new data."""
    if old:
        request.getfixturevalue("old_files")
    zarrcy.config(cache_bytes=1 << 26)
    path = tmp_path / "a.zarr"
    data = _data(10)
    a = _array(LocalStore(path), data, sharded=sharded, compressor="none")
    _reads(a, data, n=4)
    assert (chunk_cache.stats()["entries"] > 0) == old
    sizes = {p: p.stat().st_size for p in (path / "c").rglob("*") if p.is_file()}
    subprocess.run([sys.executable, "-c", _WRITER, str(path), "11", "1" if inplace else "0"], check=True)
    assert {p: p.stat().st_size for p in (path / "c").rglob("*") if p.is_file()} == sizes
    if inplace:  # the raw bytes changed: the expected values come from a fresh, uncached read
        with zarrcy.config.set(cache_bytes=0):
            new = zarrcy.open_array(LocalStore(path), mode="r")[...]
        assert not np.array_equal(new, data)
    else:
        new = np.random.default_rng(11).integers(0, 60000, SHAPE).astype(data.dtype)
    _reads(a, new, n=4)


def test_memory_store_replaced_behind_zarrcy():
    """A value replaced through the store itself (not an Array): new object, new token."""
    zarrcy.config(cache_bytes=1 << 26)
    store = MemoryStore()
    data = _data(12)
    a = _array(store, data, compressor="none")
    _reads(a, data, n=3)
    new = _data(13)
    other = _array(MemoryStore(), new, compressor="none")
    for k in list(store._data):
        if "/c/" in "/" + k or k.startswith("c/"):
            store._data[k] = bytes(other.store._data[k])  # same sizes, other content
    _reads(a, new, n=3)


def test_writes_through_zarrcy_forget_their_objects():
    zarrcy.config(cache_bytes=1 << 26)
    data = _data(14)
    a = _array(MemoryStore(), data)
    _reads(a, data, n=3)
    np.testing.assert_array_equal(a[1:15, 1:15, 1:11], data[1:15, 1:15, 1:11])  # shard (0, 0, 0) cached
    before = chunk_cache.stats()["entries"]
    data[:16, :16, :12] = 5
    a[:16, :16, :12] = 5  # rewrites shard (0, 0, 0)
    assert chunk_cache.stats()["entries"] < before
    _reads(a, data, n=3)


# -- mutation safety -----------------------------------------------------------------------------
@pytest.mark.parametrize("sharded", [True, False])
def test_results_are_never_views_of_the_cache(sharded):
    zarrcy.config(cache_bytes=1 << 26)
    data = _data(15)
    a = _array(MemoryStore(), data, sharded=sharded)
    sel = (slice(0, 16), slice(0, 16), slice(0, 12))  # whole inner chunks / one whole chunk
    for _ in range(2):
        got = a[sel]
        assert got.flags.writeable
        got[...] = 0
        pts = a.vindex[[0, 1], [0, 1], [0, 1]]
        pts[...] = 0
        v = a[1, 2, 3]
        np.testing.assert_array_equal(a[sel], data[sel])
        assert v == data[1, 2, 3]
    assert chunk_cache.stats()["hits"] > 0


# -- boxes served from cached inner chunks in one call (cached.read_box) ------------------------
def _forbid_chunk_reads(store, monkeypatch):
    """Every read of the store but a metadata document fails the test (an all-fill
    result checks that the array exists)."""
    def no_chunk_reads(real):
        def read(key, *a, **k):
            if not key.endswith("zarr.json"):
                pytest.fail(f"the store was read: {key}")
            return real(key, *a, **k)
        return read

    for name in ("get", "get_ranges", "snapshot", "exists"):
        if hasattr(type(store), name):
            monkeypatch.setattr(store, name, no_chunk_reads(getattr(store, name)))


def _box_calls(monkeypatch):
    from zarrcy.codecs.sharding import cached

    calls = []
    real = cached.KB.copy_box
    monkeypatch.setattr(cached.KB, "copy_box", lambda *a: (calls.append(1), real(*a))[1])
    return calls


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_cached_boxes_in_one_call_without_reading(kind, tmp_path, request, monkeypatch):
    """Once every touched inner chunk is cached, a box across shards (with ints and
    unstored inner chunks in it) is one copy: no store read at all, only version tokens."""
    zarrcy.config(cache_bytes=1 << 26)
    data = _data(21)
    data[:8, :16, :6] = 7  # two unstored inner chunks of a stored shard
    store = _store(kind, tmp_path, request)
    a = _array(store, data)
    calls = _box_calls(monkeypatch)
    sels = [(slice(3, 29), slice(5, 37), slice(1, 35)),  # 2 x 3 x 3 shards
            (slice(10, 20), 17, slice(0, 36)),           # an int drops its axis
            (slice(0, 8), slice(0, 16), slice(0, 6)),    # all fill: unstored inner chunks
            (47, 39, slice(35, 36)),
            (slice(0, 48), slice(0, 40), slice(30, 36))]  # the grid's edges
    for sel in sels:
        np.testing.assert_array_equal(a[sel], data[sel])  # fills the cache (shard by shard)
    calls.clear()
    _forbid_chunk_reads(store, monkeypatch)
    chunk_cache.stats(reset=True)
    for sel in sels:
        got = a[sel]
        np.testing.assert_array_equal(got, data[sel])
        assert got.flags.writeable and got.flags.c_contiguous
    assert len(calls) == len(sels)
    assert chunk_cache.stats()["misses"] == 0


def test_cached_box_touching_a_missing_shard_reads_shard_by_shard(monkeypatch):
    """A shard that is not stored has no version token: such boxes take the shard-by-shard
    path every time (it finds the shard missing and writes the fill value)."""
    zarrcy.config(cache_bytes=1 << 26)
    data = _data(24)
    data[:16, :16, :12] = 7
    a = _array(MemoryStore(), data)
    calls = _box_calls(monkeypatch)
    sel = (slice(3, 29), slice(5, 37), slice(1, 35))
    for _ in range(3):
        np.testing.assert_array_equal(a[sel], data[sel])
    assert calls == []


def test_cached_box_with_a_missing_entry_reads_shard_by_shard(monkeypatch):
    zarrcy.config(cache_bytes=1 << 26)
    data = _data(22)
    a = _array(MemoryStore(), data)
    calls = _box_calls(monkeypatch)
    sel = (slice(3, 29), slice(5, 37), slice(1, 35))
    np.testing.assert_array_equal(a[sel], data[sel])
    some = next(iter(chunk_cache._lru))  # drop one touched inner chunk
    chunk_cache.forget(some[0])
    np.testing.assert_array_equal(a[sel], data[sel])
    assert calls == []  # the fallback decoded and cached it again
    np.testing.assert_array_equal(a[sel], data[sel])
    assert calls == [1]


def test_cached_box_never_serves_a_replaced_shard(tmp_path, old_files, monkeypatch):
    """A shard file replaced behind zarrcy after the box was cached (another writer's
    temp file + rename): its new token misses, the box is read again with the new values."""
    import os

    zarrcy.config(cache_bytes=1 << 26)
    data = _data(23)
    new = data.copy()
    new[0:16, 16:32, 12:24] += 1
    a = _array(LocalStore(tmp_path / "a.zarr"), data)
    _array(LocalStore(tmp_path / "b.zarr"), new)
    calls = _box_calls(monkeypatch)
    sel = (slice(3, 29), slice(5, 37), slice(1, 35))
    np.testing.assert_array_equal(a[sel], data[sel])
    np.testing.assert_array_equal(a[sel], data[sel])
    assert calls == [1]
    os.replace(tmp_path / "b.zarr" / "c" / "0" / "1" / "1", tmp_path / "a.zarr" / "c" / "0" / "1" / "1")
    np.testing.assert_array_equal(a[sel], new[sel])
    assert calls == [1]  # the replaced shard missed: read shard by shard
    np.testing.assert_array_equal(a[sel], new[sel])
    assert calls == [1, 1]


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_cached_points_in_one_call_without_reading(kind, tmp_path, request, monkeypatch):
    """vindex / mask points over many shards, once cached: one gather, no store read;
    duplicates, unstored inner chunks and the grid's edges included."""
    from zarrcy.codecs.sharding import cached

    zarrcy.config(cache_bytes=1 << 26)
    data = _data(25)
    data[:8, :16, :6] = 7
    store = _store(kind, tmp_path, request)
    a = _array(store, data)
    rng = np.random.default_rng(5)
    pts = [tuple(rng.integers(0, s, 300) for s in SHAPE)]
    pts.append(tuple(np.r_[p, p[:10], [0, s - 1]] for p, s in zip(pts[0], SHAPE)))  # duplicates, corners
    pts.append((np.arange(8), np.arange(8), np.zeros(8, int)))  # all fill
    for p in pts:
        np.testing.assert_array_equal(a.vindex[p], data[p])  # fills the cache
    served = []
    real = cached.read_points
    monkeypatch.setattr(cached, "read_points", lambda *x: served.append(real(*x)) or served[-1])

    _forbid_chunk_reads(store, monkeypatch)
    for p in pts:
        got = a.vindex[p]
        np.testing.assert_array_equal(got, data[p])
        assert got.flags.writeable
    mask = np.zeros(SHAPE, bool)
    mask[pts[0]] = True
    np.testing.assert_array_equal(a.get_mask_selection(mask), data[mask])
    assert served == [True] * (len(pts) + 1)


def test_cached_points_with_a_missing_entry_read_shard_by_shard():
    zarrcy.config(cache_bytes=1 << 26)
    data = _data(26)
    a = _array(MemoryStore(), data)
    p = tuple(np.random.default_rng(6).integers(0, s, 200) for s in SHAPE)
    np.testing.assert_array_equal(a.vindex[p], data[p])
    chunk_cache.forget(next(iter(chunk_cache._lru))[0])
    np.testing.assert_array_equal(a.vindex[p], data[p])
    chunk_cache.clear()
    np.testing.assert_array_equal(a.vindex[p], data[p])
