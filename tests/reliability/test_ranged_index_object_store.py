"""Issue 23.8 on object stores: a point read (or a one-inner-chunk read) of a shard with
a large index reads O(1) index entries over HTTP, or streams a checksummed index in
bounded pieces -- every GET of one read tied to ONE version of the shard.

Before: the object-store path GET the whole index (``reader.load_index``) for one
element (a 32 MiB index here: 32 MiB transferred and held).  Now
(``zarrcy.codecs.sharding.index_io``, ``zarrcy.storage._etag_snapshot``) one HEAD gives
the size and the strong ETag, and every GET of the read carries ``If-Match`` on it.

The server (stdlib ``http.server`` in a thread) serves shards from memory with a strong
ETag, a weak one or none, honours ``If-Match`` (strong mode), logs every request and can
swap the shard for another version of the same size just before its N-th request -- for
every N a read makes, so every window between two requests is hit (no sleeps).  Results
are compared with the data written and with the same bytes read from a LocalStore.
"""

from __future__ import annotations

import http.server
import json
import threading

import crc32c
import numpy as np
import pytest

import zarrcy
from _peak import traced_peak
from http_range import send_empty, send_value, version_seen
from zarrcy.codecs.sharding import index_io
from zarrcy.codecs.sharding.reader import STALE_RETRIES, clear_index_cache
from zarrcy.errors import CorruptChunkError, StoreError

pytest.importorskip("obstore")

MIB = 1 << 20
SENT = (1 << 64) - 1
KEY = "a/c/0"
FILL = 7


def _doc(n: int, crc: bool, location: str = "end") -> bytes:
    """zarr.json of a 1-d uint16 array of ``n`` elements: one shard of ``n`` one-element
    inner chunks (``bytes`` codec), index ``bytes`` (+ ``crc32c``) at ``location``."""
    index_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}] + ([{"name": "crc32c"}] if crc else [])
    return json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [n], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [n]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": FILL,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [1], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": index_codecs, "index_location": location}}],
    }).encode()


def _shard(n: int, crc: bool, entries: dict[int, tuple[int, int]], data: bytes, location: str = "end") -> bytes:
    """The shard bytes: ``data`` and an index of empty entries except ``entries``
    (offsets relative to ``data``; ``SENT`` kept as is)."""
    index = np.full(2 * n, SENT, "<u8")
    isz = 16 * n + (4 if crc else 0)
    dbase = isz if location == "start" else 0
    for i, (off, nb) in entries.items():
        index[2 * i] = off if off == SENT else off + dbase
        index[2 * i + 1] = nb
    raw = index.tobytes() + (crc32c.crc32c(index).to_bytes(4, "little") if crc else b"")
    return raw + data if location == "start" else data + raw


class _Handler(http.server.BaseHTTPRequestHandler):
    """GET (single ranges) and HEAD over ``objects`` (key -> (bytes, ETag)); ``If-Match``
    honoured in strong mode; ``before(n)`` runs before the n-th request of ``KEY``."""

    objects: dict[str, tuple[bytes, str]] = {}
    etag_mode = "strong"
    #: method, Range, If-Match, status (200: served), body bytes, the ETag of the object when served
    log: list[tuple[str, str | None, str | None, int, int, str]] = []
    before = None
    count = 0
    lock = threading.Lock()
    #: ``gate(range)`` runs for every GET of ``KEY`` outside the lock, before the answer
    gate = None

    def log_message(self, *args) -> None:
        pass

    def do_HEAD(self) -> None:
        self._serve(False)

    def do_GET(self) -> None:
        self._serve(True)

    def _serve(self, body: bool) -> None:
        cls = type(self)
        key = self.path.lstrip("/")
        match = self.headers.get("If-Match")
        rng = self.headers.get("Range")
        with cls.lock:  # logged on arrival: the client may send its next request before this one returns
            if key == KEY:
                cls.count += 1
                if cls.before is not None:
                    cls.before(cls.count)
            data, tag = cls.objects.get(key, (None, ""))
            status = 404 if data is None else 412 if match not in (None, tag) and cls.etag_mode == "strong" else 200
            sent = 0
            if status == 200 and body:
                sent = sum(stop - start for start, stop in _spans([("GET", rng or "bytes=0-")], len(data)))
            if key == KEY:
                cls.log.append((self.command, rng, match, status, sent, tag))
        if cls.gate is not None and key == KEY and body:
            cls.gate(rng)
        if status != 200:
            send_empty(self, status)
            return
        headers = {"Last-Modified": "Wed, 21 Oct 2015 07:28:00 GMT"}  # the same for every version
        if cls.etag_mode != "none":
            headers["ETag"] = tag if cls.etag_mode == "strong" else "W/" + tag
        send_value(self, data, body, headers)


_tags = iter(range(1, 1 << 30))


class Server:
    def __init__(self, handler, base: str) -> None:
        self.h = handler
        self.base = base

    def serve(self, n: int, crc: bool, shard: bytes, location: str = "end", mode: str = "strong") -> None:
        with self.h.lock:
            self.h.objects = {"a/zarr.json": (_doc(n, crc, location), '"doc"'), KEY: (shard, f'"v{next(_tags)}"')}
            self.h.etag_mode = mode
            self.h.log = []
            self.h.before = None
            self.h.count = 0
        clear_index_cache()

    def replace(self, shard: bytes) -> None:  # called with the lock held (a hook)
        self.h.objects[KEY] = (shard, f'"v{next(_tags)}"')

    def etag(self) -> str:
        return self.h.objects[KEY][1]

    def take_log(self) -> list[tuple]:
        with self.h.lock:
            log, self.h.log = self.h.log, []
        return log

    def open(self):
        return zarrcy.open_array(f"{self.base}/a", mode="r")

    def measured(self, n: int, crc: bool, shard: bytes, read):
        """``(read(array), traced peak, the shard's requests)`` of one read, the array
        just opened on ``shard``."""
        self.serve(n, crc, shard)
        a = self.open()
        self.take_log()
        value, peak = traced_peak(lambda: read(a))
        return value, peak, self.take_log()


@pytest.fixture(scope="module")
def server():
    handler = type("H", (_Handler,), {"objects": {}, "log": [], "lock": threading.Lock()})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)  # shutdown polls: 0.5 s by default
    t.start()
    try:
        yield Server(handler, f"http://127.0.0.1:{srv.server_address[1]}")
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(5)


def _local(tmp_path, n: int, crc: bool, shard: bytes, location: str = "end"):
    """The same array from a LocalStore (the reference the object store must match)."""
    root = tmp_path / "local" / "a"
    (root / "c").mkdir(parents=True)
    (root / "zarr.json").write_bytes(_doc(n, crc, location))
    (root / "c" / "0").write_bytes(shard)
    return zarrcy.open_array(str(root), mode="r")


N_BIG = 1 << 21  # a 32 MiB index: 8 pieces of index_io.INDEX_PIECE


def test_point_read_reads_one_entry(server, tmp_path):
    """No crc32c: HEAD, the entry's 16 bytes, the inner chunk -- both GETs If-Match on
    the HEAD's ETag; 18 bytes of the shard transferred instead of the 32 MiB index."""
    lin = N_BIG - 3
    shard = _shard(N_BIG, False, {lin: (0, 2), 5: (2, 2)}, b"\x63\x00\x2a\x00")
    value, peak, log = server.measured(N_BIG, False, shard, lambda a: a[lin])
    assert int(value) == 0x63
    tag = server.etag()
    a = server.open()
    assert [(m, r, im, st) for m, r, im, st, _, _ in log] == [
        ("HEAD", None, None, 200),
        ("GET", f"bytes={len(shard) - 16 * 3}-{len(shard) - 16 * 3 + 15}", tag, 200),
        ("GET", "bytes=0-1", tag, 200),
    ]
    assert sum(e[4] for e in log) == 18 and peak < 4 * MIB, peak
    local = _local(tmp_path, N_BIG, False, shard)
    for sel in (lin, slice(lin, lin + 1), 5, slice(5, 6), 6, slice(4, 7), slice(lin - 1, lin + 2)):
        got = a[sel]
        assert np.array_equal(got, local[sel]), sel
    assert a[lin:lin + 1].tolist() == [0x63] and a[4:7].tolist() == [FILL, 0x2a, FILL]
    assert a.vindex[np.array([lin, 5, 9])].tolist() == [0x63, 0x2a, FILL]


def test_checksummed_index_is_streamed_in_pieces(server, tmp_path):
    """crc32c: the index streamed in INDEX_PIECE GETs (all If-Match on one ETag), the
    checksum compared, then the inner chunk; traced memory stays a few pieces."""
    lin = 77
    shard = _shard(N_BIG, True, {lin: (2, 2), 5: (0, 2)}, b"\x2a\x00\x63\x00")
    value, peak, log = server.measured(N_BIG, True, shard, lambda a: a[lin])
    assert int(value) == 0x63
    a = server.open()
    pieces = 16 * N_BIG // index_io.INDEX_PIECE
    assert [m for m, *_ in log] == ["HEAD"] + ["GET"] * (pieces + 2)
    assert {im for m, _, im, *_ in log if m == "GET"} == {server.etag()}
    assert all(0 < e[4] <= index_io.INDEX_PIECE for e in log[1:])
    # at most PIECES_IN_FLIGHT pieces in flight (concurrent If-Match GETs, each copied out
    # of obstore once), + 1 being consumed, + 1 MiB for everything else the read allocates
    # (it reached 5 pieces + 44 KB when the four GETs finished together) -- never the index
    bound = (index_io.PIECES_IN_FLIGHT + 1) * index_io.INDEX_PIECE + (1 << 20)
    assert peak < bound < 16 * N_BIG, f"peak {peak >> 20} MiB"
    local = _local(tmp_path, N_BIG, True, shard)
    for sel in (lin, slice(lin, lin + 1), 5, slice(4, 8), N_BIG - 1):
        assert np.array_equal(a[sel], local[sel]), sel


class _InFlight:
    """A server gate counting the index-piece GETs in flight (those starting in the
    index, at or after ``first``); the first ``meet`` of them wait for each other at a
    barrier, which only GETs in flight together can pass (a timeout breaks it: the read
    then fails; nothing else depends on timing)."""

    def __init__(self, first: int, meet: int) -> None:
        self.first = first
        self.lock = threading.Lock()
        self.now = self.most = self.seen = 0
        self.barrier = threading.Barrier(max(meet, 1), timeout=60)
        self.meet = meet

    def __call__(self, rng: str | None) -> None:
        if rng is None or int(rng.split("=")[1].split("-")[0] or 0) < self.first:
            return
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.seen += 1
            wait = self.seen <= self.meet
        try:
            if wait:
                self.barrier.wait()
        finally:
            with self.lock:
                self.now -= 1


def test_index_pieces_are_fetched_concurrently_within_the_window(server, tmp_path):
    """The pieces of a streamed checksummed index are GETs in flight together (the first
    two meet at a barrier), never more than PIECES_IN_FLIGHT at once, each If-Match on
    the HEAD's ETag; the value read is the LocalStore's."""
    lin = 77
    shard = _shard(N_BIG, True, {lin: (2, 2), 5: (0, 2)}, b"\x2a\x00\x63\x00")
    gate = _InFlight(first=4, meet=2)
    server.h.gate = gate
    try:
        value, peak, log = server.measured(N_BIG, True, shard, lambda a: a[lin])
    finally:
        server.h.gate = None
    assert int(value) == 0x63
    assert not gate.barrier.broken
    assert 2 <= gate.most <= index_io.PIECES_IN_FLIGHT, gate.most
    assert gate.seen == 16 * N_BIG // index_io.INDEX_PIECE + 1  # the pieces and the stored crc32c
    assert {im for m, _, im, *_ in log if m == "GET"} == {server.etag()}
    assert int(_local(tmp_path, N_BIG, True, shard)[lin]) == 0x63


@pytest.mark.parametrize("window", [1, 2, 3])
def test_iter_ranges_keeps_at_most_window_gets_in_flight(server, window):
    """``ETagSnapshot.iter_ranges`` answers in order with at most ``window`` GETs in
    flight (window 1: one after another); a window of 2 or more is reached (barrier)."""
    from zarrcy.byte_range import RangeRequest
    from zarrcy.storage._etag_snapshot import ETagSnapshot

    data = bytes(range(256)) * 64
    server.serve(1, False, data)
    a = server.open()
    store = a.store
    snap = ETagSnapshot(store, KEY.split("/", 1)[1], server.etag(), len(data))  # the store is rooted at the array
    gate = _InFlight(first=0, meet=window if window > 1 else 0)
    server.h.gate = gate
    try:
        got = list(snap.iter_ranges([RangeRequest(i * 1000, 1000) for i in range(12)], window))
    finally:
        server.h.gate = None
    assert got == [data[i * 1000:(i + 1) * 1000] for i in range(12)]
    assert gate.most == window and not gate.barrier.broken


def test_corrupt_checksum_is_refused_before_any_entry_is_used(server):
    n = 1 << 19  # an 8 MiB index
    shard = bytearray(_shard(n, True, {9: (0, 2)}, b"\x05\x00"))
    shard[2 + 16 * (n - 1) + 3] ^= 1  # an index byte far from the entry read
    server.serve(n, True, bytes(shard))
    a = server.open()
    server.take_log()
    with pytest.raises(CorruptChunkError, match="crc32c checksum mismatch"):
        a[9]
    assert all(a0 >= 2 for a0, _ in _spans(server.take_log(), len(shard)))  # only index bytes read, no data


def _spans(log, size: int) -> list[tuple[int, int]]:
    """[start, stop) of every GET in ``log`` (``Range: bytes=a-b``, ``a-``, ``-n``) of an
    object of ``size`` bytes."""
    out = []
    for method, rng, *_ in log:
        if method == "GET":
            a, _, b = (rng or "bytes=0-").removeprefix("bytes=").partition("-")
            start = max(0, size - int(b)) if a == "" else int(a)
            out.append((start, size if a == "" or b == "" else min(size, int(b) + 1)))
    return out


@pytest.mark.parametrize("crc", [False, True])
@pytest.mark.parametrize("bad, location, text", [
    ((1, 1 << 40), "end", "past the end"),
    ((SENT - 1, 4), "end", "overflows"),
    ((SENT, 2), "end", "exactly one of offset/nbytes"),
    ((16, 2), "start", "overlaps the shard index"),  # absolute offset 16: inside the index
])
def test_hostile_entry_is_refused_naming_the_inner_chunk(server, crc, bad, location, text):
    n = 1 << 19
    isz = 16 * n + (4 if crc else 0)
    off = bad[0] - isz if location == "start" else bad[0]  # _shard adds the data's offset
    shard = _shard(n, crc, {1000: (off, bad[1]), 1001: (0, 2)}, b"\x05\x00", location)
    server.serve(n, crc, shard, location)
    a = server.open()
    assert int(a[1001]) == 5  # a bad entry elsewhere is not read
    server.take_log()
    with pytest.raises(CorruptChunkError, match=r"entry 1000 \(inner chunk \(1000,\)\).*" + text):
        a[1000]
    with pytest.raises(CorruptChunkError, match=r"inner chunk \(1000,\)"):
        a[1000:1001]
    lo, hi = (0, isz) if location == "start" else (2, 2 + isz)
    assert all(lo <= a0 and b0 <= hi for a0, b0 in _spans(server.take_log(), len(shard)))  # only index bytes


def test_missing_shard_reads_fill(server):
    n = 1 << 19
    server.serve(n, True, b"")
    with server.h.lock:
        del server.h.objects[KEY]
    a = server.open()
    assert int(a[3]) == FILL and a[3:4].tolist() == [FILL]


# -- a shard replaced between two requests of one read: old or new, never a mix ---------
N_SMALL = 4096  # a 64 KiB index, read in 16 KiB pieces (the limits lowered, same logic)
STORED = list(range(0, N_SMALL, 37))


def _two_versions(crc: bool) -> tuple[bytes, bytes, np.ndarray, np.ndarray]:
    """Two shards of the same size: the same inner chunks stored in opposite order with
    other values -- an old index applied to the new bytes reads values of neither."""
    m = len(STORED)
    old = np.full(N_SMALL, FILL, np.uint16)
    new = old.copy()
    old[STORED] = np.arange(m) + 100
    new[STORED] = np.arange(m) + 5000
    shards = []
    for values, order in ((old, range(m)), (new, range(m - 1, -1, -1))):
        data = np.empty(m, "<u2")
        entries = {}
        for slot, j in enumerate(order):
            data[slot] = values[STORED[j]]
            entries[STORED[j]] = (2 * slot, 2)
        shards.append(_shard(N_SMALL, crc, entries, data.tobytes()))
    assert len(shards[0]) == len(shards[1])
    return shards[0], shards[1], old, new


SWAP_READS = {
    "point": STORED[40],
    "inner chunk": slice(STORED[7], STORED[7] + 1),
    "three inner chunks": slice(STORED[20] - 1, STORED[20] + 2),
    "two far entries": np.array([STORED[1], STORED[-2]]),
}


@pytest.mark.parametrize("mode, crc", [("strong", False), ("strong", True), ("weak", True), ("none", False)])
def test_swap_between_any_two_requests(server, monkeypatch, mode, crc):
    monkeypatch.setattr(index_io, "RANGED_INDEX_MIN", 16 << 10)
    monkeypatch.setattr(index_io, "INDEX_PIECE", 16 << 10)
    old_shard, new_shard, old, new = _two_versions(crc)
    ranged = []
    real = index_io.load_entries
    monkeypatch.setattr(index_io, "load_entries", lambda *args: ranged.append(1) or real(*args))
    for name, sel in SWAP_READS.items():
        seen = set()
        for swap in range(1, 10):  # a first attempt makes at most 7 requests (HEAD, 4 pieces, crc, data)
            server.serve(N_SMALL, crc, old_shard, mode=mode)
            a = server.open()
            server.h.before = lambda count, swap=swap: count == swap and server.replace(new_shard)
            got = a.vindex[sel] if isinstance(sel, np.ndarray) else a[sel]
            log = server.take_log()
            seen.add(version_seen(got, old[sel], new[sel], f"{mode} ETag, {name}, swap before request {swap}"))
            last = server.h.count < swap  # the read ended before the swap: so does it for every later one
            if mode == "strong":  # every GET If-Match on the ETag the HEAD before it saw
                tag = None
                for method, _, if_match, _, _, served in log:
                    if method == "HEAD":
                        tag = served
                    else:
                        assert if_match is not None and if_match == tag, log
            if last:
                break
        assert seen == {"old", "new"}, (name, seen)
    assert bool(ranged) == (mode == "strong")  # no strong ETag: the whole-index path


def test_object_changing_on_every_request_gives_up(server, monkeypatch):
    monkeypatch.setattr(index_io, "RANGED_INDEX_MIN", 16 << 10)
    old_shard, new_shard, old, new = _two_versions(True)
    server.serve(N_SMALL, True, old_shard)
    a = server.open()
    server.h.before = lambda count: server.replace(old_shard if count % 2 else new_shard)
    with pytest.raises(StoreError, match=f"{STALE_RETRIES + 1} times in a row"):
        a[STORED[3]]


def test_cached_index_serves_point_reads_with_one_request(server, monkeypatch):
    """An index already cached (keyed by its ETag: a larger read loaded it whole) is
    used: a point read is one If-Match GET, no HEAD, no entries read."""
    monkeypatch.setattr(index_io, "RANGED_INDEX_MIN", 16 << 10)
    monkeypatch.setattr(index_io, "MAX_ENTRIES", 8)
    old_shard, _, old, _ = _two_versions(True)
    server.serve(N_SMALL, True, old_shard)
    a = server.open()
    assert np.array_equal(a[:100], old[:100])  # 100 inner chunks > MAX_ENTRIES: the whole index, cached
    server.take_log()
    for p in STORED[5:9]:
        assert int(a[p]) == old[p]
    log = server.take_log()
    assert [(m, im) for m, _, im, *_ in log] == [("GET", server.etag())] * 4


@pytest.mark.parametrize("crc", [False, True])
def test_decoded_chunk_cache_behind_a_large_index(server, monkeypatch, restore_config, tmp_path, crc):
    """With the decoded-chunk cache on, the version token is the ETag of the HEAD (not of
    a whole-index GET): a cached chunk costs that HEAD; a miss reads its entries
    If-Match; a replaced shard (same size) is read anew, never served from the cache."""
    monkeypatch.setattr(index_io, "RANGED_INDEX_MIN", 16 << 10)
    monkeypatch.setattr(index_io, "INDEX_PIECE", 16 << 10)
    zarrcy.config(cache_bytes=1 << 24)
    old_shard, new_shard, old, new = _two_versions(crc)
    server.serve(N_SMALL, crc, old_shard)
    a = server.open()
    p = STORED[11]
    server.take_log()
    assert int(a[p]) == old[p] and a[p - 1:p + 2].tolist() == old[p - 1:p + 2].tolist()
    first = server.take_log()
    assert len(first) > 2 and all(e[2] == server.etag() for e in first if e[0] == "GET")
    assert max(e[4] for e in first) <= 16 << 10  # never the whole 64 KiB index
    assert int(a[p]) == old[p] and a[p - 1:p + 2].tolist() == old[p - 1:p + 2].tolist()
    assert [e[0] for e in server.take_log()] == ["HEAD", "HEAD"]  # both from the cache
    with server.h.lock:
        server.replace(new_shard)
    assert int(a[p]) == new[p] and a.vindex[np.array([p, STORED[30]])].tolist() == [new[p], new[STORED[30]]]
    local = _local(tmp_path, N_SMALL, crc, new_shard)  # LocalStore through the same cached, ranged path
    calls = []
    real = index_io.load_entries
    monkeypatch.setattr(index_io, "load_entries", lambda *args: calls.append(1) or real(*args))
    for _ in range(2):
        assert int(local[p]) == new[p] and local[p - 1:p + 2].tolist() == a[p - 1:p + 2].tolist()
    assert calls
