"""Issue 23.1: a shard replaced between the requests of one read is never decoded with
an index of another version -- on HTTP servers with a strong ETag, a weak ``W/`` one,
or none at all.

The server below (stdlib ``http.server`` in a thread) serves two versions of one shard
from memory: same size, same ``Last-Modified``, different inner-chunk order (so the
index differs) and different values.  It counts the GETs of the shard and swaps to the
new version just before the N-th one -- for every N a read makes -- so every window
between two requests of a read is hit, deterministically.  Each read must return the
old selection or the new one, element for element, never a mix.
"""

from __future__ import annotations

import http.server
import threading

import numpy as np
import pytest

import zarrcy
from http_range import send_empty, send_value, version_seen
from zarrcy.codecs.sharding.reader import clear_index_cache
from zarrcy.storage import MemoryStore

pytest.importorskip("obstore")

SHAPE = (16, 16)
SHARD_KEY = "a/c/0/0"
LAST_MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT"  # identical for both versions


def _versions() -> tuple[dict[str, bytes], bytes, np.ndarray, np.ndarray]:
    """(static documents, new shard bytes, old data, new data): the old shard written in
    morton order, the new one in lexicographic order, both uncompressed (same size)."""
    old = np.arange(256, dtype="uint16").reshape(SHAPE)
    new = old + 1000
    docs: dict[str, bytes] = {}
    shards = []
    for data, order in ((old, "morton"), (new, "lexicographic")):
        store = MemoryStore()
        with zarrcy.config.set(subchunk_write_order=order):
            a = zarrcy.create_array(store, name="a", shape=SHAPE, dtype="uint16", chunks=(4, 4), shards=(16, 16),
                                    compressors=None)
            a[...] = data
        docs = {k: store.get(k) for k in store.list() if k.endswith("zarr.json")}
        shards.append(store.get(SHARD_KEY))
    assert len(shards[0]) == len(shards[1]) and shards[0][-200:] != shards[1][-200:]  # same size, other index
    docs[SHARD_KEY] = shards[0]
    return docs, shards[1], old, new


class _Handler(http.server.BaseHTTPRequestHandler):
    """Range GETs (``bytes=a-b``, ``a-``, ``-n``), HEAD and ``If-Match`` over ``objects``."""

    objects: dict[str, bytes] = {}
    new_shard: bytes = b""
    etag_mode = "strong"
    swap_before = 0  # swap the shard to the new version before this GET of it (1-based)
    shard_gets = 0
    lock = threading.Lock()
    stall: threading.Event | None = None

    def log_message(self, *args) -> None:
        pass

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        cls = type(self)
        if cls.stall is not None:
            cls.stall.wait()
            return
        key = self.path.lstrip("/")
        with cls.lock:
            if key == SHARD_KEY and self.command == "GET":
                cls.shard_gets += 1
                if cls.shard_gets == cls.swap_before:
                    cls.objects[SHARD_KEY] = cls.new_shard
            data = cls.objects.get(key)
        if data is None:
            send_empty(self, 404)
            return
        tag = f'"v{hash(data) & 0xffffffff:x}"'
        match = self.headers.get("If-Match")
        if match is not None and cls.etag_mode == "strong" and match != tag:
            send_empty(self, 412)
            return
        headers = {"Last-Modified": LAST_MODIFIED}
        if cls.etag_mode != "none":
            headers["ETag"] = tag if cls.etag_mode == "strong" else "W/" + tag
        send_value(self, data, body, headers)


@pytest.fixture(scope="module")
def server():
    docs, new_shard, old, new = _versions()
    handler = type("H", (_Handler,), {"objects": dict(docs), "new_shard": new_shard, "lock": threading.Lock()})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)  # shutdown polls: 0.5 s by default
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", handler, docs, old, new
    finally:
        if handler.stall is not None:
            handler.stall.set()
        srv.shutdown()
        srv.server_close()
        t.join(5)


def _reset(handler, docs, mode: str, swap_before: int) -> None:
    with handler.lock:
        handler.objects = dict(docs)
        handler.etag_mode = mode
        handler.swap_before = swap_before
        handler.shard_gets = 0


READS = {
    "point": (5, 1),
    "inner chunk": (slice(4, 8), slice(0, 4)),
    "two inner chunks": (slice(0, 4), slice(8, 16)),
    "strided": (slice(1, 16, 5), slice(0, 16, 3)),
    "whole": (slice(None), slice(None)),
}


@pytest.mark.parametrize("cached", [False, True], ids=["cold", "cached index"])
@pytest.mark.parametrize("mode", ["none", "weak", "strong", "none, long span"])
@pytest.mark.parametrize("read", list(READS))
def test_swap_before_every_request_of_a_read(server, mode, read, cached, monkeypatch):
    base, handler, docs, old, new = server
    if mode == "none, long span":  # every span "too long": ranges, then the index read again
        from zarrcy.storage import remote

        monkeypatch.setattr(remote, "SPAN_LIMIT", 0)
        mode = "none"
    sel = READS[read]
    seen = set()
    for swap_before in range(1, 8):  # a read makes at most a few shard GETs (retries included)
        _reset(handler, docs, mode, 0)
        clear_index_cache()
        a = zarrcy.open_array(f"{base}/a", mode="r")
        if cached:
            assert np.array_equal(a[0, 0], old[0, 0])  # the index is now cached (strong: ETag; else: content)
        with handler.lock:
            handler.swap_before = handler.shard_gets + swap_before
        seen.add(version_seen(a[sel], old[sel], new[sel], f"{mode} ETag, swap before shard GET {swap_before}"))
        with handler.lock:
            if handler.shard_gets < handler.swap_before:  # the read ended before: so does every later swap
                break
    assert "new" in seen  # the swap happened inside the read at least once


def test_content_token_costs(server):
    """Without a strong ETag: the index GET, then ONE GET holding the data and the index;
    with the index cached, one GET per point read."""
    base, handler, docs, old, new = server
    _reset(handler, docs, "none", 0)
    clear_index_cache()
    a = zarrcy.open_array(f"{base}/a", mode="r")
    before = handler.shard_gets
    assert a[5, 1] == old[5, 1]
    assert handler.shard_gets - before == 2
    before = handler.shard_gets
    assert a[9, 9] == old[9, 9] and a[15, 3] == old[15, 3]
    assert handler.shard_gets - before == 2


def _open_stalled(base: str, handler, options: dict | None, wait: float) -> list:
    handler.stall = threading.Event()
    result: list = []

    def read() -> None:
        try:
            zarrcy.open_array(f"{base}/a", mode="r", storage_options=options)
            result.append("opened")
        except zarrcy.errors.StoreError as e:
            result.append(e)

    t = threading.Thread(target=read, daemon=True)
    try:
        t.start()
        t.join(wait)
        assert not t.is_alive(), "the read is still waiting for the stalled server"
    finally:
        handler.stall.set()
        handler.stall = None
    return result


def test_stalled_server_times_out(server):
    """Issue 23.11: a server that accepts the request and never answers is reported after
    ``storage_options={"timeout": ...}`` seconds, as StoreError saying so."""
    base, handler, docs, old, new = server
    _reset(handler, docs, "strong", 0)
    result = _open_stalled(base, handler, {"timeout": 0.2}, 30)  # the old default waited ~120 s
    assert len(result) == 1 and isinstance(result[0], zarrcy.errors.StoreError), result
    assert "timed out" in str(result[0]) and "timeout=0.2 s" in str(result[0]), result[0]


def test_default_timeout_is_at_most_30_s(server):
    from zarrcy.storage import ObjectStore

    assert ObjectStore(server[0]).timeout <= 30
    with pytest.raises(zarrcy.errors.StoreError, match="timeout"):
        ObjectStore(server[0], storage_options={"timeout": -1})
    assert ObjectStore(server[0]).timeout == 30  # refused options are not remembered for the URL


@pytest.mark.slow
def test_stalled_server_default_timeout(server):
    base, handler, docs, old, new = server
    _reset(handler, docs, "strong", 0)
    result = _open_stalled(base, handler, None, 45)
    assert len(result) == 1 and "timed out" in str(result[0]), result


@pytest.mark.parametrize("mode", ["none", "weak"])
def test_content_version_api(server, mode):
    """The store-level contract behind the reads above: without a strong ETag the token
    is the bytes read; ranges come back only from an object still holding them."""
    from zarrcy.byte_range import RangeRequest, SuffixRequest
    from zarrcy.storage import ObjectStore
    from zarrcy.storage.remote import ContentVersion

    base, handler, docs, old, new = server
    _reset(handler, docs, mode, 0)
    s = ObjectStore(base)
    tail, token = s.get_versioned(SHARD_KEY, SuffixRequest(16))
    size = len(docs[SHARD_KEY])
    assert isinstance(token, ContentVersion) and (token.start, token.stop, token.size) == (size - 16, size, size)
    assert tail == docs[SHARD_KEY][-16:]
    want = [docs[SHARD_KEY][0:4], docs[SHARD_KEY][10:13], b"", docs[SHARD_KEY][-2:]]
    got = s.get_ranges_if_version(SHARD_KEY, [RangeRequest(0, 4), RangeRequest(10, 3), RangeRequest(5, 0),
                                              SuffixRequest(2)], token)
    assert got == want
    before = handler.shard_gets
    assert s.get_ranges_if_version(SHARD_KEY, [RangeRequest(0, 4)], token) == want[:1]
    assert handler.shard_gets - before == 1  # one GET: the ranges and the token's bytes together
    with handler.lock:
        handler.objects[SHARD_KEY] = handler.new_shard  # same size, other index bytes
    assert s.get_ranges_if_version(SHARD_KEY, [RangeRequest(0, 4)], token) is None
    with handler.lock:
        del handler.objects[SHARD_KEY]
    assert s.get_ranges_if_version(SHARD_KEY, [RangeRequest(0, 4)], token) is None
    assert s.get_versioned(SHARD_KEY) == (None, None)
