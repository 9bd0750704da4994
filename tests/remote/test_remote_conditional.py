"""Sharded reads on object stores with the ETag-checked shard-index cache: request
counts seen by the server, rewrites and deletions between reads, 412 storms, servers
without (strong) ETags, servers that ignore If-Match.  Never wrong data."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import zarrcy
from zarrcy.byte_range import RangeRequest, SuffixRequest
from zarrcy.codecs import sharding as sharding_mod
from zarrcy.errors import StoreError
from zarrcy.storage import ObjectStore

SHAPE = (64, 64, 64)
SHARDS = (32, 32, 32)
INNER = (8, 8, 8)


def _data(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1000, SHAPE).astype("<u2")


def _make(url: str, opts: dict, data: np.ndarray, name: str = "s"):
    a = zarrcy.create_array(url, name=name, shape=SHAPE, dtype="uint16", chunks=INNER, shards=SHARDS,
                            fill_value=7, storage_options=opts, compressors=[zarrcy.codecs.Gzip(1)])
    a[...] = data
    return a


def _shard_gets(log, url: str, name: str = "s") -> list[tuple]:
    path = "/" + url.partition("://")[2] + f"/{name}/c/"
    return log.requests("GET", path)


def _raw_store(opts: dict, url: str) -> ObjectStore:
    """Another client, as another process would have: its own ObjectStore."""
    return ObjectStore(url, storage_options=dict(opts))


def _other_version(url: str, opts: dict, seed: int) -> tuple[np.ndarray, dict[str, bytes]]:
    """Shards of different data (different sizes, so a different index layout) written
    under a scratch name; returns the data and the raw shard objects by key suffix."""
    data = _data(seed)
    data[:16] = 7  # fill-value inner chunks are not stored: another index layout
    _make(url, opts, data, name="other")
    raw = _raw_store(opts, url)
    shards = {k.partition("other/")[2]: raw.get(k) for k in raw.list_prefix("other/c/")}
    return data, shards


def test_point_reads_cost_one_request_each(s3_url, s3_server, s3_log):
    opts = s3_server[1]
    data = _data(1)
    _make(s3_url, opts, data)
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    rng = np.random.default_rng(2)
    points = [tuple(int(x) for x in p) for p in rng.integers(0, 64, (1000, 3))]
    nshards = len({tuple(x // 32 for x in p) for p in points})
    assert nshards == 8
    s3_log.reset()
    for p in points:
        assert b[p] == data[p]
    gets = _shard_gets(s3_log, s3_url)
    assert len(gets) == 1000 + nshards  # not 2000: one index read per shard, then one GET per point
    assert len(s3_log.requests()) == len(gets)  # no HEADs or other requests either
    index_reads = [g for g in gets if g[2].startswith("bytes=-")]
    assert len(index_reads) == nshards and all(g[3] is None for g in index_reads)
    data_reads = [g for g in gets if not g[2].startswith("bytes=-")]
    assert all(g[3] is not None and g[4] == 206 for g in data_reads)  # every data GET is If-Match


def test_rewrite_between_reads_is_detected(s3_url, s3_server, s3_log):
    opts = s3_server[1]
    data = _data(3)
    _make(s3_url, opts, data)
    new, shards = _other_version(s3_url, opts, 4)
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    p = (20, 5, 9)  # shard c/0/0/0; its new version stores no inner chunk for rows < 16
    q = (30, 30, 30)
    assert b[p] == data[p] and b[q] == data[q]  # the index of c/0/0/0 is now cached
    assert data[p] != new[p] and data[q] != new[q]
    writer = _raw_store(opts, s3_url)
    writer.set("s/c/0/0/0", shards["c/0/0/0"])  # another client replaces the shard
    s3_log.reset()
    assert b[q] == new[q]
    assert b[p] == new[p]
    gets = _shard_gets(s3_log, s3_url)
    # stale data GET (412), fresh index, conditional data GET; then the new index is cached
    assert [g[4] for g in gets] == [412, 206, 206, 206]
    assert gets[1][2].startswith("bytes=-") and gets[1][3] is None
    # boxes and whole-array reads see the new version too
    np.testing.assert_array_equal(b[10:40, 0:40, 3:35], _expect(data, new)[10:40, 0:40, 3:35])


def _expect(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``old`` with shard (0,0,0) replaced by ``new``'s."""
    out = old.copy()
    out[:32, :32, :32] = new[:32, :32, :32]
    return out


def test_rewrite_between_box_reads(s3_url, s3_server, s3_log):
    opts = s3_server[1]
    data = _data(5)
    _make(s3_url, opts, data)
    new, shards = _other_version(s3_url, opts, 6)
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    box = (slice(3, 43), slice(11, 51), slice(0, 40))
    np.testing.assert_array_equal(b[box], data[box])
    writer = _raw_store(opts, s3_url)
    for k in ("c/0/0/0", "c/1/0/1"):
        writer.set(f"s/{k}", shards[k])
    expect = data.copy()
    expect[:32, :32, :32] = new[:32, :32, :32]
    expect[32:, :32, 32:] = new[32:, :32, 32:]
    np.testing.assert_array_equal(b[box], expect[box])
    np.testing.assert_array_equal(b[...], expect)
    np.testing.assert_array_equal(b.vindex[[1, 40, 33], [2, 5, 60], [3, 44, 1]], expect[[1, 40, 33], [2, 5, 60], [3, 44, 1]])


def test_412_storm_ends_in_store_error(s3_url, s3_server, s3_log):
    opts = s3_server[1]
    data = _data(7)
    _make(s3_url, opts, data)
    new, shards = _other_version(s3_url, opts, 8)
    writer = _raw_store(opts, s3_url)
    versions = [writer.get("s/c/0/0/0"), shards["c/0/0/0"]]
    path = "/" + s3_url.partition("://")[2] + "/s/c/0/0/0"
    flips = [0]

    def rewrite(method: str, p: str, environ) -> None:
        if method == "GET" and p == path:  # the object changes before every read of it
            flips[0] += 1
            writer.set("s/c/0/0/0", versions[flips[0] % 2])

    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    s3_log.reset()
    s3_log.before = rewrite
    with pytest.raises(StoreError, match="changed between its index read and its data read"):
        b[20, 2, 3]  # stored in both versions (rows < 16 are empty in the other one)
    with pytest.raises(StoreError, match="changed between"):
        b[0:20, 0:20, 0:20]
    s3_log.before = None
    gets = _shard_gets(s3_log, s3_url)
    attempts = sharding_mod._STALE_RETRIES + 1
    assert len(gets) <= 2 * 2 * attempts  # bounded: index + data per attempt, two reads
    assert all(g[4] == 412 for g in gets if g[3] is not None)  # no data was ever accepted
    # once the object holds still, reads work again and see what is stored now
    cur = new if flips[0] % 2 else data
    assert b[1, 2, 30] == cur[1, 2, 30]


@pytest.mark.parametrize("mode", ["strip", "weak"])
def test_no_usable_etag_reads_data_with_the_index(s3_url, s3_server, s3_log, mode):
    """Without a strong ETag the version token is the index bytes (issue 23.1): the data
    GET is unconditional but spans the index (at the shard's end) too, so the store
    checks it came from the version decoded; the cached index saves the index GET."""
    opts = s3_server[1]
    data = _data(9)
    _make(s3_url, opts, data)
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    s3_log.etag_mode = mode
    s3_log.reset()
    pts = [(1, 2, 3), (4, 5, 6), (40, 50, 60)]  # two shards: (0,0,0) twice, then (1,1,1)
    for p in pts:
        assert b[p] == data[p]
    gets = _shard_gets(s3_log, s3_url)
    assert len(gets) == 5  # index + span, span (index cached), index + span
    assert all(g[3] is None for g in gets)
    raw = _raw_store(opts, s3_url)
    for g in gets:
        key = g[1].partition(s3_url.partition("://")[2].partition("/")[2] + "/")[2]
        size = raw.getsize(key)
        first, _, last = g[2][6:].partition("-")
        assert first == "" or int(last) == size - 1, g  # a suffix (the index) or a span to the end
    np.testing.assert_array_equal(b[3:40, 3:40, 3:40], data[3:40, 3:40, 3:40])


def test_shard_deleted_after_index_cached(s3_url, s3_server, s3_log):
    opts = s3_server[1]
    data = _data(10)
    _make(s3_url, opts, data)
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    assert b[1, 2, 3] == data[1, 2, 3]
    _raw_store(opts, s3_url).erase("s/c/0/0/0")
    assert b[1, 2, 3] == 7  # fill value: the shard is gone
    np.testing.assert_array_equal(b[0:8, 0:8, 28:36], np.where(np.arange(8)[None, None, :] < 4, 7, data[0:8, 0:8, 28:36]))


def test_shard_deleted_between_index_and_data(s3_url, s3_server, s3_log):
    opts = s3_server[1]
    data = _data(11)
    writer = _raw_store(opts, s3_url)

    def delete_before_data(name: str):
        path = "/" + s3_url.partition("://")[2] + f"/{name}/c/0/0/0"

        def hook(method: str, p: str, environ) -> None:
            if method == "GET" and p == path and not environ.get("HTTP_RANGE", "").startswith("bytes=-"):
                writer.erase(f"{name}/c/0/0/0")
        return hook

    _make(s3_url, opts, data, name="s")
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    s3_log.before = delete_before_data("s")
    assert b[1, 2, 3] == 7  # conditional data GET: 404 -> index re-read -> missing -> fill
    s3_log.before = None
    # without ETags the data GET spans the index: the deletion is seen the same way
    _make(s3_url, opts, data, name="s2")
    b = zarrcy.open_array(f"{s3_url}/s2", mode="r", storage_options=opts)
    s3_log.etag_mode = "strip"
    s3_log.before = delete_before_data("s2")
    assert b[1, 2, 3] == 7


def test_partial_write_then_read(s3_url, s3_server, s3_log):
    opts = s3_server[1]
    data = _data(12)
    a = _make(s3_url, opts, data)
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    assert b[1, 2, 3] == data[1, 2, 3]
    a[0:4, 0:4, 0:4] = 999  # partial shard write (index + old chunks conditional on one ETag)
    data[0:4, 0:4, 0:4] = 999
    assert b[1, 2, 3] == 999
    assert b[10, 2, 3] == data[10, 2, 3]
    np.testing.assert_array_equal(b[...], data)


def test_store_conditional_api(s3_url, s3_server, s3_log):
    opts = s3_server[1]
    s = ObjectStore(s3_url, storage_options=opts)
    assert s.supports_conditional_reads
    s.set("k", b"0123456789")
    value, etag = s.get_versioned("k", SuffixRequest(4))
    assert value == b"6789" and isinstance(etag, str)
    assert s.get_versioned("missing") == (None, None)
    assert s.get_ranges_if_version("k", [RangeRequest(1, 2), RangeRequest(5, 3), RangeRequest(2, 0)], etag) == [
        b"12", b"567", b""]
    assert s.get_ranges_if_version("k", [RangeRequest(0, 0)], etag) == [b""]
    assert s.get_ranges_if_version("k", [RangeRequest(20, 4)], etag) == [b""]  # past the end: clipped
    s.set("k", b"other")
    assert s.get_ranges_if_version("k", [RangeRequest(1, 2)], etag) is None
    assert s.get_ranges_if_version("k", [RangeRequest(1, 0)], etag) is None
    s.erase("k")
    assert s.get_ranges_if_version("k", [RangeRequest(1, 2)], etag) is None
    with pytest.raises(StoreError):
        s.get_ranges_if_version("k", [RangeRequest(1, 2)], None)


def test_http_server_ignoring_if_match(http_server):
    """The plain HTTP fake ignores If-Match: the response's own ETag is checked."""
    base, root, handler = http_server
    local = zarrcy.create_array(str(root / "cond.zarr"), name="s", shape=SHAPE, dtype="uint16", chunks=INNER,
                                shards=SHARDS, fill_value=7, compressors=[zarrcy.codecs.Gzip(1)])
    data = _data(13)
    local[...] = data
    other = zarrcy.create_array(str(root / "cond2.zarr"), name="s", shape=SHAPE, dtype="uint16", chunks=INNER,
                                shards=SHARDS, fill_value=7, compressors=[zarrcy.codecs.Gzip(3)])
    new = _data(14)
    new[:16] = 7
    other[...] = new
    b = zarrcy.open_array(f"{base}/cond.zarr/s", mode="r")
    assert b[1, 2, 3] == data[1, 2, 3]
    shutil.copyfile(root / "cond2.zarr/s/c/0/0/0", root / "cond.zarr/s/c/0/0/0")
    handler.log.clear()
    assert b[20, 2, 3] == new[20, 2, 3]
    # data GET (other ETag in the answer: refused), index GET, data GET
    assert [(m, r.startswith("bytes=-")) for m, _p, r in handler.log] == [("GET", False), ("GET", True), ("GET", False)]
    assert b[1, 2, 3] == 7
    np.testing.assert_array_equal(b[...], _expect(data, new))


def test_box_and_full_reads_one_request_per_shard(s3_url, s3_server, s3_log):
    """No per-inner-chunk requests: a box read costs (index +) one coalesced GET per
    shard it touches; a full read one whole GET per shard, no index reads."""
    opts = s3_server[1]
    data = _data(15)
    _make(s3_url, opts, data)
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    raw = _raw_store(opts, s3_url)
    stored = sum(raw.getsize(k) for k in raw.list_prefix("s/c/"))
    box = (slice(20, 45), slice(3, 37), slice(30, 60))  # all 8 shards
    s3_log.reset()
    np.testing.assert_array_equal(b[box], data[box])
    gets = _shard_gets(s3_log, s3_url)
    assert len(s3_log.requests()) == len(gets) == 16  # cold: index + one data GET per shard
    assert sum(1 for g in gets if g[2].startswith("bytes=-")) == 8
    s3_log.reset()
    np.testing.assert_array_equal(b[box], data[box])
    assert len(_shard_gets(s3_log, s3_url)) == len(s3_log.requests()) == 8  # warm: data only
    assert s3_log.bytes <= stored
    s3_log.reset()
    np.testing.assert_array_equal(b[...], data)
    gets = _shard_gets(s3_log, s3_url)
    assert len(gets) == len(s3_log.requests()) == 8 and all(g[3] is None for g in gets)
    assert s3_log.bytes == stored  # each shard fetched once, whole


def test_store_defaults_without_conditional_reads():
    """The ABC defaults (stores with a cheap version token): token taken before the
    read; a changed value reads as None."""
    from zarrcy.storage import MemoryStore

    s = MemoryStore()
    assert not s.supports_conditional_reads
    s.set("k", b"abcdef")
    value, token = s.get_versioned("k", RangeRequest(1, 2))
    assert value == b"bc" and token is not None
    assert s.get_ranges_if_version("k", [RangeRequest(0, 2), SuffixRequest(1)], token) == [b"ab", b"f"]
    s.set("k", b"uvwxyz")
    assert s.get_ranges_if_version("k", [RangeRequest(0, 2)], token) is None
    assert s.get_versioned("missing") == (None, None)


def test_rewrite_between_index_and_data_of_one_read(s3_url, s3_server, s3_log):
    """Cold read: the shard changes after its index GET and before its data GET."""
    opts = s3_server[1]
    data = _data(16)
    _make(s3_url, opts, data)
    new, shards = _other_version(s3_url, opts, 17)
    writer = _raw_store(opts, s3_url)
    path = "/" + s3_url.partition("://")[2] + "/s/c/0/0/0"
    done = []

    def rewrite_once(method: str, p: str, environ) -> None:
        if method == "GET" and p == path and not done and not environ.get("HTTP_RANGE", "").startswith("bytes=-"):
            done.append(1)
            writer.set("s/c/0/0/0", shards["c/0/0/0"])

    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    s3_log.before = rewrite_once
    assert b[20, 2, 3] == new[20, 2, 3]
    assert done  # the rewrite did happen between the two GETs
    statuses = [g[4] for g in _shard_gets(s3_log, s3_url)]
    assert statuses[-4:] == [206, 412, 206, 206]  # index, stale data, index, data
    np.testing.assert_array_equal(b[0:32, 0:32, 0:32], new[0:32, 0:32, 0:32])


def test_cache_off_still_conditional(s3_url, s3_server, s3_log):
    opts = s3_server[1]
    data = _data(18)
    _make(s3_url, opts, data)
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    before = zarrcy.config()["shard_index_cache"]
    zarrcy.config(shard_index_cache=0)
    try:
        s3_log.reset()
        assert b[1, 2, 3] == data[1, 2, 3] and b[1, 2, 4] == data[1, 2, 4]
    finally:
        zarrcy.config(shard_index_cache=before)
    gets = _shard_gets(s3_log, s3_url)
    assert len(gets) == 4  # no cache: index + data each time, data still If-Match
    assert [g[3] is not None for g in gets] == [False, True, False, True]
