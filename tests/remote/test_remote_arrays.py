"""Arrays, sharded arrays and hierarchies over the local S3 and HTTP servers; failures
(unreachable endpoint, 403/404, 503 then success, a dropped connection) as zarrcy errors."""

from __future__ import annotations

import pickle
import shutil
from datetime import timedelta

import numpy as np
import pytest

import zarrcy
from zarrcy.byte_range import RangeRequest, SuffixRequest
from zarrcy.errors import NodeNotFoundError, ReadOnlyError, StoreError
from zarrcy.storage import ObjectStore, store_from_url

FAST_RETRY = {
    "retry_config": {
        "max_retries": 3,
        "backoff": {"init_backoff": timedelta(milliseconds=10), "max_backoff": timedelta(milliseconds=50), "base": 2},
        "retry_timeout": timedelta(seconds=5),
    }
}


def test_array_round_trip_s3(s3_url, s3_server):
    opts = s3_server[1]
    data = np.arange(60 * 70, dtype="<f4").reshape(60, 70)
    a = zarrcy.create_array(s3_url, name="a", shape=data.shape, dtype="float32", chunks=(16, 32),
                            fill_value=0, storage_options=opts, attributes={"u": "m"})
    a[...] = data
    b = zarrcy.open_array(f"{s3_url}/a", mode="r", storage_options=opts)
    np.testing.assert_array_equal(b[...], data)
    np.testing.assert_array_equal(b[5:50:3, 7], data[5:50:3, 7])
    np.testing.assert_array_equal(b.oindex[[1, 40], [3, 69]], data[np.ix_([1, 40], [3, 69])])
    assert b.attrs["u"] == "m"
    assert isinstance(b.store, ObjectStore) and b.store.read_only
    # the bare URL works too (the session sets AWS_ENDPOINT_URL & dummy credentials)
    c = zarrcy.open_array(f"{s3_url}/a", mode="r")
    np.testing.assert_array_equal(c[...], data)
    c2 = pickle.loads(pickle.dumps(c))
    np.testing.assert_array_equal(c2[10:20], data[10:20])


def test_sharded_round_trip_and_partial_reads_s3(s3_url, s3_server):
    opts = s3_server[1]
    data = np.random.default_rng(1).integers(0, 1000, (64, 64, 64)).astype("<i4")
    a = zarrcy.create_array(s3_url, name="s", shape=data.shape, dtype="int32", chunks=(8, 8, 8),
                            shards=(32, 32, 32), fill_value=-1, storage_options=opts,
                            compressors=[zarrcy.codecs.Gzip(1)])
    a[...] = data
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    np.testing.assert_array_equal(b[...], data)
    np.testing.assert_array_equal(b[3:45, 17:18, 30:63], data[3:45, 17:18, 30:63])
    assert b[63, 0, 31] == data[63, 0, 31]
    # partial update of one shard, then read back
    a[1:3, 1:3, 1:3] = -5
    data[1:3, 1:3, 1:3] = -5
    np.testing.assert_array_equal(zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)[...], data)


def test_hierarchy_s3(s3_url, s3_server):
    opts = s3_server[1]
    g = zarrcy.open_group(s3_url, mode="w", storage_options=opts, attributes={"title": "t"})
    sub = g.create_group("sub")
    sub.create_array("x", shape=(5,), dtype="uint8", fill_value=3)
    g.create_array("y", shape=(2, 2), dtype="float64", fill_value=0.5)
    r = zarrcy.open_group(s3_url, mode="r", storage_options=opts)
    assert sorted(r.keys()) == ["sub", "y"]
    assert [p for p, _ in r.walk()] == ["sub", "sub/x", "y"]
    np.testing.assert_array_equal(r["sub/x"][...], np.full(5, 3, "u1"))
    assert r.attrs["title"] == "t"
    with pytest.raises(NodeNotFoundError):
        zarrcy.open_array(f"{s3_url}/missing", mode="r", storage_options=opts)
    del g["sub"]
    assert sorted(zarrcy.open_group(s3_url, mode="r", storage_options=opts).keys()) == ["y"]


def test_get_partial_values_many_keys(s3_url, s3_server):
    s = ObjectStore(s3_url, storage_options={**s3_server[1], "max_concurrency": 4})
    for i in range(10):
        s.set(f"k{i}", bytes(range(i, i + 50)))
    reqs = [(f"k{i}", RangeRequest(j, 5)) for i in range(10) for j in (0, 20, 45)]
    reqs += [("k3", SuffixRequest(3)), ("nope", RangeRequest(0, 2)), ("k1", RangeRequest(48)), ("k2", RangeRequest(60, 5))]
    got = s.get_partial_values(reqs)
    want = []
    for k, r in reqs:
        v = None if k == "nope" else bytes(range(int(k[1:]), int(k[1:]) + 50))
        if v is not None and isinstance(r, RangeRequest):
            v = v[r.offset : None if r.length is None else r.offset + r.length]
        elif v is not None:
            v = v[-r.length :]
        want.append(v)
    assert got == want


def test_bucket_missing_is_store_error(s3_server):
    s = ObjectStore("s3://no-such-bucket/x", storage_options={**s3_server[1], **FAST_RETRY})
    assert s.get("zarr.json") is None  # 404: absent
    with pytest.raises(StoreError, match="s3://no-such-bucket/x/k"):
        s.set("k", b"1")


def test_unreachable_endpoint():
    s = ObjectStore("s3://b/p", storage_options={"endpoint": "http://127.0.0.1:9", "region": "us-east-1",
                                                 "access_key_id": "a", "secret_access_key": "b", **FAST_RETRY})
    with pytest.raises(StoreError, match="s3://b/p/zarr.json"):
        s.get("zarr.json")
    with pytest.raises(StoreError):
        zarrcy.open_group(s, mode="r")


def test_scheme_aliases_configure():
    # configuration only (no request): gcs:// is gs://, s3a:// is s3://
    assert store_from_url("gcs://bucket/x").url == "gcs://bucket/x"
    assert store_from_url("s3a://bucket/x").read_only


def test_bad_urls_and_options():
    with pytest.raises(StoreError):
        ObjectStore("ftp://x/y")
    with pytest.raises(StoreError):
        store_from_url("ftp://host/path")
    with pytest.raises(StoreError):
        ObjectStore("s3://b/p", storage_options={"not_an_option": 1})
    with pytest.raises(StoreError):
        ObjectStore("s3://b/p", storage_options={"max_concurrency": 0})


# -- plain HTTP (read-only) ---------------------------------------------------------------------
@pytest.fixture
def http_tree(http_server, tmp_path, request):
    base, root, handler = http_server
    name = f"h{abs(hash(request.node.name)) % 10**8}.zarr"
    local = tmp_path / name
    data = np.arange(40 * 40, dtype="<u2").reshape(40, 40)
    g = zarrcy.open_group(str(local), mode="w", attributes={"a": 1})
    arr = g.create_array("arr", shape=data.shape, dtype="uint16", chunks=(10, 10), shards=(20, 20), fill_value=0)
    arr[...] = data
    shutil.copytree(local, root / name)
    handler.failures.clear()
    handler.log.clear()
    return f"{base}/{name}", data, handler


def test_http_read_only(http_tree):
    url, data, handler = http_tree
    a = zarrcy.open_array(f"{url}/arr")  # default mode r+ degrades to read-only on HTTP
    assert a.read_only
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[3:17, 25:26], data[3:17, 25:26])
    assert a[39, 39] == data[39, 39]
    g = zarrcy.open_group(url, mode="r")
    assert g.attrs["a"] == 1
    with pytest.raises(ReadOnlyError):
        a[0, 0] = 1
    with pytest.raises(ReadOnlyError):
        zarrcy.open_group(url, mode="w")
    with pytest.raises(StoreError, match="cannot list"):
        list(g.keys())  # no listing over plain HTTP: use consolidated metadata
    s = store_from_url(url)
    assert s.get("nope/zarr.json") is None
    assert s.get("zarr.json", SuffixRequest(2)) == s.get("zarr.json")[-2:]
    assert s.get("zarr.json", RangeRequest(10**6, 5)) == b""
    with pytest.raises(NodeNotFoundError):
        zarrcy.open_array(f"{url}/missing")


def test_http_retries_503_then_succeeds(http_tree):
    url, data, handler = http_tree
    path = url.split("127.0.0.1", 1)[1].split("/", 1)[1]
    handler.failures[f"/{path}/arr/zarr.json"] = [503, 503]
    a = zarrcy.open_array(f"{url}/arr", storage_options=FAST_RETRY)
    np.testing.assert_array_equal(a[...], data)
    assert sum(1 for m, p, _ in handler.log if p.endswith("arr/zarr.json")) == 3


def test_http_errors(http_tree):
    url, data, handler = http_tree
    path = "/" + url.split("127.0.0.1", 1)[1].split("/", 1)[1]
    handler.failures[f"{path}/arr/zarr.json"] = [403]
    with pytest.raises(StoreError, match="arr/zarr.json"):
        zarrcy.open_array(f"{url}/arr", storage_options=FAST_RETRY)
    handler.failures[f"{path}/arr/zarr.json"] = [503] * 10
    with pytest.raises(StoreError, match="arr/zarr.json"):
        zarrcy.open_array(f"{url}/arr", storage_options=FAST_RETRY)
    handler.failures.clear()
    handler.failures[f"{path}/zarr.json"] = ["drop"] * 10
    with pytest.raises(StoreError, match="zarr.json"):
        store_from_url(url, storage_options=FAST_RETRY).get("zarr.json")


def test_reopen_by_url_reuses_storage_options(s3_server):
    opts = {**s3_server[1], "max_concurrency": 3}
    url = "s3://zarrcy-test/reopen-by-url"
    a = zarrcy.create_array(url, name="a", shape=(4,), dtype="int8", fill_value=1, storage_options=opts)
    b = pickle.loads(pickle.dumps(a))
    assert b.store.storage_options == opts and b.store.max_concurrency == 3
    np.testing.assert_array_equal(b[...], np.ones(4, "i1"))


@pytest.mark.parametrize("cut", [0.5, 0.99, "garbage-index"])
def test_truncated_or_corrupt_shard_is_corrupt_chunk_error(s3_url, s3_server, cut):
    from zarrcy.errors import CorruptChunkError

    opts = s3_server[1]
    a = zarrcy.create_array(s3_url, name="s", shape=(16, 16), dtype="int32", chunks=(4, 4), shards=(8, 8),
                            fill_value=0, storage_options=opts, compressors=None)
    a[...] = np.arange(256).reshape(16, 16)
    s = ObjectStore(s3_url, storage_options=opts)
    raw = s.get("s/c/0/0")
    if cut == "garbage-index":  # offsets far past the end of the object
        bad = raw[: len(raw) - 16 * 4 - 4] + np.full(32, 2**40, "<u8").tobytes()[: 16 * 4 + 4]
    else:
        bad = raw[: int(len(raw) * cut)]
    s.set("s/c/0/0", bad)
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    with pytest.raises(CorruptChunkError):
        b[0:3, 0:3]
    np.testing.assert_array_equal(b[8:, 8:], np.arange(256).reshape(16, 16)[8:, 8:])  # other shards fine


def _child_read(a, q) -> None:
    try:
        q.put(int(a[3:37, 1:29].sum()))
    except BaseException as e:  # report instead of hanging
        q.put(f"{type(e).__name__}: {e}")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_child_processes_never_hang(s3_url, s3_server, method):
    """obstore's runtime does not survive fork: a child forked after the parent made
    requests refuses with a StoreError naming the way out; a spawned child reads."""
    import multiprocessing as mp

    opts = s3_server[1]
    data = np.arange(40 * 30, dtype="<i4").reshape(40, 30)
    a = zarrcy.create_array(s3_url, name="f", shape=data.shape, dtype="int32", chunks=(8, 8), storage_options=opts)
    a[...] = data
    np.testing.assert_array_equal(a[...], data)
    ctx = mp.get_context(method)
    q = ctx.Queue()
    p = ctx.Process(target=_child_read, args=(a, q))
    p.start()
    p.join(timeout=120)
    alive = p.is_alive()
    if alive:
        p.kill()
    assert not alive, f"{method} child hung on the object store"
    got = q.get(timeout=5)
    if method == "fork":
        assert isinstance(got, str) and got.startswith("StoreError") and "spawn" in got
    else:
        assert got == int(data[3:37, 1:29].sum())
    np.testing.assert_array_equal(a[...], data)  # the parent still works
