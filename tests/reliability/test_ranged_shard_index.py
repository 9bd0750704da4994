"""Regression (issue 23, item 8): a read of one element (or one whole inner chunk) of a
shard with a large index touches O(1) index entries instead of loading the index.

Before the fix, ``a[i]`` behind a sparse 2 GiB shard index read and held the whole
index (MemoryError on small machines); a 64 MiB index cost 64 MiB per point read.  Now
(``zarrcy.codecs.sharding.index_io``) without ``crc32c`` the entry's 16 bytes are read;
with ``crc32c`` the index is streamed in 4 MiB pieces with the checksum computed
incrementally, keeping only the wanted entry.  Peak memory is measured with tracemalloc
(numpy's and Python's buffers are traced).  The per-entry validation rules still apply,
naming the entry.  Property tests compare point reads through the ranged path with the
data written (numpy), zarr-python's reads and the whole-index path, for random shards.
"""

from __future__ import annotations

import json
import os

import crc32c
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import zarrcy
from _peak import traced_peak
from zarrcy.codecs.sharding import index_io
from zarrcy.errors import CorruptChunkError

MIB = 1 << 20
SENT = (1 << 64) - 1


def _meta(root: str, n: int, crc: bool, location: str = "end", shard: int | None = None, inner: int = 1,
          dtype: str = "uint8", fill: int = 7, codecs: list | None = None) -> None:
    """A 1-d sharded array of ``n`` elements: shards of ``shard`` (default: one shard),
    inner chunks of ``inner`` elements encoded by ``codecs`` (default: ``bytes``)."""
    index_codecs = [{"name": "bytes", "configuration": {"endian": "little"}}] + ([{"name": "crc32c"}] if crc else [])
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": [n], "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [shard or n]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": fill,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [inner], "codecs": codecs or [{"name": "bytes"}], "index_codecs": index_codecs,
            "index_location": location}}],
    }
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "zarr.json"), "w") as f:
        json.dump(meta, f)


def _sparse_shard(root: str, n: int, crc: bool, entries: dict[int, tuple[int, int]], data: bytes,
                  location: str = "end") -> None:
    """A shard of ``n`` one-byte inner chunks: ``data`` then (end) or after (start) an
    index of zeros (a sparse file) except ``entries``; offsets in ``entries`` are
    relative to the data."""
    _meta(root, n, crc, location)
    isz = 16 * n + (4 if crc else 0)
    dbase = 0 if location == "end" else isz
    ibase = len(data) if location == "end" else 0
    path = os.path.join(root, "c", "0")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(len(data) + isz)
        f.seek(dbase)
        f.write(data)
        for i, (off, nb) in entries.items():
            f.seek(ibase + 16 * i)
            f.write((off if off == SENT else off + dbase).to_bytes(8, "little") + nb.to_bytes(8, "little"))
    if crc:  # crc32c of the payload: streamed here too (a 2 GiB index must not be held)
        value = 0
        with open(path, "rb") as f:
            f.seek(ibase)
            left = 16 * n
            while left:
                piece = f.read(min(left, 16 * MIB))
                value = crc32c.crc32c(piece, value)
                left -= len(piece)
        with open(path, "r+b") as f:
            f.seek(ibase + 16 * n)
            f.write(value.to_bytes(4, "little"))


# 2^22 inner chunks: a 64 MiB index (fast); ZARRCY_SLOW=1 adds a sparse 2 GiB index (2^27)
SIZES = [1 << 22] + ([1 << 27] if os.environ.get("ZARRCY_SLOW") else [])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("crc", [False, True])
@pytest.mark.parametrize("location", ["end", "start"])
def test_point_read_behind_a_large_index_holds_no_index(tmp_path, n, crc, location):
    root = str(tmp_path / "a")
    lin = n - 3
    _sparse_shard(root, n, crc, {lin: (1, 1), 5: (SENT, SENT), 6: (0, 1)}, b"\x2a\x63", location)
    a = zarrcy.open_array(root, mode="r")
    value, peak = traced_peak(lambda: a[lin])
    assert int(value) == 0x63
    assert peak < 12 * MIB, f"peak {peak >> 20} MiB for a {16 * n >> 20} MiB index"
    assert int(a[5]) == 7 and int(a[6]) == 0x2a
    # one whole inner chunk (aligned read) takes the same path
    got, peak = traced_peak(lambda: a[lin:lin + 1])
    assert got.tolist() == [0x63] and peak < 12 * MIB


@pytest.mark.parametrize("bad, text", [
    ((SENT, 1), "exactly one of offset/nbytes"),
    ((1, 1 << 40), "past the end"),
    ((SENT - 1, 4), "overflows"),
])
def test_entries_used_are_validated_naming_them(tmp_path, bad, text):
    root = str(tmp_path / "a")
    n = 1 << 19  # 8 MiB index: above index_io.RANGED_INDEX_MIN
    _sparse_shard(root, n, False, {1000: bad, 1001: (0, 1)}, b"\x05")
    a = zarrcy.open_array(root, mode="r")
    assert int(a[1001]) == 5  # a bad entry elsewhere is not read
    with pytest.raises(CorruptChunkError, match=r"entry 1000 \(inner chunk \(1000,\)\).*" + text) as e:
        a[1000]
    assert "c/0" in str(e.value)


def _damage(path: str, how: str, n: int) -> None:
    if how == "into-index":  # entry 9 of a start index pointed at offset 16: inside the index
        with open(path, "r+b") as f:
            f.seek(16 * 9)
            f.write((16).to_bytes(8, "little"))
    elif how == "crc":  # an index byte far from the entry read
        with open(path, "r+b") as f:
            f.seek(1 + 16 * (n - 1))
            f.write(b"\x01")
    else:
        os.truncate(path, 16 * n - 100)


@pytest.mark.parametrize("how, crc, location, text", [
    ("into-index", False, "start", r"entry 9 .*overlaps the shard index"),
    ("crc", True, "end", "crc32c checksum mismatch"),
    ("truncated", True, "end", "shorter than its index"),
])
def test_damaged_shard_is_refused(tmp_path, how, crc, location, text):
    root = str(tmp_path / "a")
    n = 1 << 19
    _sparse_shard(root, n, crc, {9: (0, 1)}, b"\x05", location=location)
    _damage(os.path.join(root, "c", "0"), how, n)
    with pytest.raises(CorruptChunkError, match=text):
        zarrcy.open_array(root, mode="r")[9]


# -- the ranged path reads what numpy wrote, what zarr-python reads, what the whole
# -- index gives (random small shards; RANGED_INDEX_MIN lowered to use the ranged path)
@settings(max_examples=25, deadline=None)
@given(
    data=st.data(),
    cps=st.integers(1, 6), inner=st.integers(1, 4), nshards=st.integers(1, 3),
    crc=st.booleans(), start=st.booleans(), empty=st.floats(0, 1),
)
@example(data=None, cps=4, inner=2, nshards=2, crc=True, start=False, empty=0.5)
@example(data=None, cps=1, inner=1, nshards=1, crc=False, start=True, empty=1.0)
def test_ranged_point_reads_match_numpy_zarr_and_the_whole_index(tmp_path_factory, data, cps, inner, nshards, crc,
                                                                 start, empty):
    import zarr

    root = str(tmp_path_factory.mktemp("r") / "a")
    shard = cps * inner
    n = shard * nshards
    rng = np.random.default_rng(cps * 1000 + inner * 100 + nshards * 10 + crc + 2 * start)
    ref = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    drop = rng.random(n // inner) < empty  # whole inner chunks left unwritten: fill
    ref.reshape(-1, inner)[drop] = 3
    _meta(root, n, crc, "start" if start else "end", shard, inner, "uint16", 3,
          [{"name": "bytes", "configuration": {"endian": "little"}},
           {"name": "zstd", "configuration": {"level": 1, "checksum": False}}])
    w = zarrcy.open_array(root, mode="a")
    for k in np.flatnonzero(~drop):
        w[k * inner:(k + 1) * inner] = ref[k * inner:(k + 1) * inner]
    points = [0, n - 1] if data is None else data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=8))
    peer = zarr.open_array(root, mode="r")
    old, old_load = index_io.RANGED_INDEX_MIN, index_io.load_entries
    calls = []

    def counted(*args):
        calls.append(1)
        return old_load(*args)

    try:
        index_io.RANGED_INDEX_MIN = 0
        index_io.load_entries = counted
        a = zarrcy.open_array(root, mode="r")
        ranged = [int(a[i]) for i in points]
        whole_chunks = [a[(i // inner) * inner:(i // inner + 1) * inner].tolist() for i in points]
        lo, hi = min(points), max(points) + 1
        box = a[lo:hi].tolist()
        vpoints = a.vindex[np.array(points)].tolist()
    finally:
        index_io.RANGED_INDEX_MIN, index_io.load_entries = old, old_load
    if cps > 1 and (~drop).any():  # partial reads of a stored shard: the ranged path
        assert calls
    a = zarrcy.open_array(root, mode="r")
    assert ranged == [int(ref[i]) for i in points] == [int(peer[i]) for i in points] == [int(a[i]) for i in points]
    assert whole_chunks == [ref[(i // inner) * inner:(i // inner + 1) * inner].tolist() for i in points]
    assert box == ref[lo:hi].tolist() == peer[lo:hi].tolist() == a[lo:hi].tolist()
    assert vpoints == [int(ref[i]) for i in points] == a.vindex[np.array(points)].tolist()


@pytest.mark.parametrize("method", ["stored", "deflated"])
def test_zip_members_range_the_index_only_when_stored(tmp_path, monkeypatch, method):
    """A deflated zip member inflates from its start for every range read
    (``random_access`` False): its index is read whole, once; a stored member's is ranged."""
    import zipfile

    root = str(tmp_path / "a")
    n = 1 << 19  # an 8 MiB index
    _sparse_shard(root, n, True, {n - 2: (0, 1), 3: (SENT, SENT)}, b"\x05")
    zpath = str(tmp_path / "a.zip")
    comp = zipfile.ZIP_STORED if method == "stored" else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(zpath, "w", compression=comp) as z:
        z.write(os.path.join(root, "zarr.json"), "zarr.json")
        z.write(os.path.join(root, "c", "0"), "c/0")
    calls = []
    real = index_io.load_entries
    monkeypatch.setattr(index_io, "load_entries", lambda *a: calls.append(1) or real(*a))
    store = zarrcy.ZipStore(zpath, mode="r")
    try:
        a = zarrcy.open_array(store, mode="r")
        assert int(a[n - 2]) == 5 and int(a[3]) == 7
    finally:
        store.close()
    assert len(calls) == (2 if method == "stored" else 0)
