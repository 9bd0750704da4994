"""Issue 23.8 on object stores: a partial write into a shard with a large index holds the
index once.

Before, the writer read the index with one GET (``get_versioned``: the whole index as a
``bytes`` object, read-only) and built the new index in a second buffer.  Now
(``reader._load_owned``) one HEAD gives the size and the strong ETag, the index arrives
in ``OWNED_PIECE``-byte ``If-Match`` range GETs copied into the writer's own buffer
(``ValueSnapshot.get_owned``), which the rewrite turns into the new index in place; every
data read of the write is conditional on that ETag.  A server without a strong ETag
keeps the one-GET path (its bytes are re-checked by the data read).

Memory is not measured here (the moto server runs in this process, so its copies would
be counted); what is checked is the shape of the read -- pieces, not one GET; the
buffer the rewrite got is writable and is the one the pieces were copied into -- and the
data.  The memory bound of the in-place rewrite itself is
tests/reliability/test_shard_write_index_memory.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import zarrcy
from zarrcy import byte_access
from zarrcy.codecs.sharding import reader
from zarrcy.storage import ObjectStore

N = 1 << 16  # one-byte inner chunks: a 1 MiB (+ 4) index ...
INDEX = 16 * N + 4
PIECE = 256 << 10  # ... read in five pieces (OWNED_PIECE, 4 MiB by default, made small here)


@pytest.fixture(autouse=True)
def _small_pieces(monkeypatch):
    monkeypatch.setattr(byte_access, "OWNED_PIECE", PIECE)


def _make(url: str, opts: dict) -> zarrcy.Array:
    a = zarrcy.create_array(url, name="s", shape=(N,), chunks=(1,), shards=(N,), dtype="uint8", fill_value=0,
                            compressors=None, storage_options=opts)
    a[5] = 1
    a[N - 1] = 3
    return a


def _spy(monkeypatch) -> list:
    seen: list = []
    real = reader._load_owned

    def load_owned(*args, **kw):
        got = real(*args, **kw)
        seen.append(got)
        return got

    monkeypatch.setattr(reader, "_load_owned", load_owned)
    return seen


def _shard_requests(log, url: str) -> list[tuple]:
    path = "/" + url.partition("://")[2] + "/s/c/0"
    return [e for e in log.requests() if e[1] == path]


def test_partial_write_reads_the_index_in_pieces_into_its_own_buffer(s3_url, s3_server, s3_log, monkeypatch):
    opts = s3_server[1]
    a = _make(s3_url, opts)
    seen = _spy(monkeypatch)
    s3_log.reset()
    with zarrcy.config.set(shard_index_cache=0):
        a[N // 2 + 3] = 2
    flat, version = seen[-1]
    assert flat.flags.writeable and isinstance(version, str)  # the owned buffer, the ETag as version
    reqs = _shard_requests(s3_log, s3_url)
    gets = [e for e in reqs if e[0] == "GET"]
    pieces = -(-INDEX // PIECE)
    data = 2  # two one-byte inner chunks stored before the index
    index_gets = [g for g in gets if g[2] and int(g[2].split("=")[1].split("-")[0]) >= data]
    assert [e[0] for e in reqs].count("HEAD") >= 1
    # the index came in OWNED_PIECE-sized If-Match pieces, never one GET of the whole index
    assert len(index_gets) == pieces and all(g[3] == version for g in index_gets)
    assert not any(g[2].startswith("bytes=-") for g in gets if g[2])
    assert all(g[3] == version for g in gets)  # the kept chunks too: one version for the whole write
    assert [e[0] for e in reqs].count("PUT") == 1
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    want = np.zeros(N, np.uint8)
    want[5], want[N - 1], want[N // 2 + 3] = 1, 3, 2
    np.testing.assert_array_equal(b[...], want)


@pytest.mark.parametrize("when", [1, 3, 5])
def test_shard_replaced_while_the_index_streams(s3_url, s3_server, s3_log, monkeypatch, when):
    """Another client replaces the shard before the ``when``-th index piece: the write
    starts again on the new version (a 412 on a piece, or the conditional PUT refused)
    and keeps the other client's data -- never a mix of the two versions."""
    opts = s3_server[1]
    a = _make(s3_url, opts)
    other = zarrcy.create_array(s3_url, name="o", shape=(N,), chunks=(1,), shards=(N,), dtype="uint8",
                                fill_value=0, compressors=None, storage_options=opts)
    other[7] = 9
    other[N - 1] = 4
    raw = ObjectStore(s3_url, storage_options=dict(opts))
    new_shard = raw.get("o/c/0")
    path = "/" + s3_url.partition("://")[2] + "/s/c/0"
    count = [0]

    def before(method, p, environ):
        if method == "GET" and p == path and environ.get("HTTP_IF_MATCH") and count[0] >= 0:
            count[0] += 1
            if count[0] == when:
                count[0] = -1
                raw.set("s/c/0", new_shard)

    s3_log.before = before
    with zarrcy.config.set(shard_index_cache=0):
        a[N // 2 + 3] = 2
    s3_log.before = None
    assert count[0] == -1  # the swap happened
    b = zarrcy.open_array(f"{s3_url}/s", mode="r", storage_options=opts)
    want = np.zeros(N, np.uint8)
    want[7], want[N - 1], want[N // 2 + 3] = 9, 4, 2
    np.testing.assert_array_equal(b[...], want)


@pytest.mark.parametrize("mode", ["strip", "weak"])
def test_no_strong_etag_keeps_the_one_get_path(s3_url, s3_server, s3_log, monkeypatch, mode):
    opts = s3_server[1]
    a = _make(s3_url, opts)
    seen = _spy(monkeypatch)
    s3_log.etag_mode = mode
    with zarrcy.config.set(shard_index_cache=0):
        with pytest.raises(zarrcy.errors.StoreError):  # no conditional PUT possible without an ETag
            a[N // 2 + 3] = 2
    assert seen and all(s is None for s in seen)  # the owned path declined


@pytest.mark.parametrize("case", ["truncated", "garbage-index", "shorter-than-index"])
def test_hostile_shard_refused_on_the_piece_path(s3_url, s3_server, s3_log, monkeypatch, case):
    """A shard whose index pieces are garbage or cut short: CorruptChunkError naming the
    shard, nothing written (the object is still the hostile one)."""
    opts = s3_server[1]
    a = _make(s3_url, opts)
    raw = ObjectStore(s3_url, storage_options=dict(opts))
    good = raw.get("s/c/0")
    bad = {"truncated": good[:-10], "shorter-than-index": good[:1000],
           "garbage-index": good[:-INDEX] + bytes(np.random.default_rng(1).integers(0, 256, INDEX, np.uint8))}[case]
    raw.set("s/c/0", bad)
    calls = []
    real = reader._load_owned
    monkeypatch.setattr(reader, "_load_owned", lambda *args, **kw: (calls.append(1), real(*args, **kw))[1])
    with zarrcy.config.set(shard_index_cache=0), pytest.raises(zarrcy.errors.CorruptChunkError, match="c/0"):
        a[N // 2 + 3] = 2
    assert calls  # the owned path ran (and raised)
    assert raw.get("s/c/0") == bad
