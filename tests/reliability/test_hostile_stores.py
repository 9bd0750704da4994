"""Hostile stores (issue 7.4): nothing escapes the store root, nothing huge is allocated.

What is asserted, input by input:

* keys with ``..``/``.`` components, absolute keys, NUL, trailing ``/`` -> StoreError
  from every store (get/set/erase/exists/getsize/partial reads), and no file appears
  outside the root;
* symlinks (file or directory) inside a LocalStore pointing outside its root -> reads
  and writes through them raise StoreError; listing does not follow them; the target
  outside is unchanged;
* zip members named ``../x``, ``/x``, ``a/../../x`` (zip slip) -> StoreError on
  listing/opening a node; nothing is extracted anywhere;
* node paths with ``..`` in the API (create_group, open_array(path=...)) -> MetadataError;
* decompression bombs (gzip, zstd, blosc) whose output exceeds the chunk, and headers
  that *declare* 100 GB -> CorruptChunkError, peak traced memory about one chunk;
* shard indexes with petabyte offsets/sizes, half-empty entries, entries pointing into
  the index, and a hostile inner-chunk grid whose index would be 64 GB ->
  CorruptChunkError for whole and partial reads, peak traced memory small.

Memory is measured with tracemalloc (numpy, bytes and the codecs' buffers report to it).
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import tracemalloc
import zipfile

import crc32c
import numcodecs
import numpy as np
import pytest

import zarrcy
from zarrcy.errors import CorruptChunkError, MetadataError, StoreError, ZarrcyError
from zarrcy.storage import LocalStore, MemoryStore, ZipStore

BAD_KEYS = ["../x", "..", "a/../../x", "a/..", "./x", "a/./b", "/etc/passwd", "/x", "a//b", "a/b/", "", "a\x00b"]


class _Peak:
    """Peak traced memory (bytes) of the block."""

    def __enter__(self):
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        self.peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return False


def _array_store(codecs, shape, chunks, dtype="uint8", store=None):
    s = store if store is not None else MemoryStore()
    s.set("zarr.json", json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": codecs,
    }).encode())
    return s


def _snapshot(path):
    out = {}
    for root, dirs, files in os.walk(path):
        for f in files + dirs:
            p = os.path.join(root, f)
            out[p] = os.lstat(p).st_mtime_ns
    return out


# ------------------------------------------------------------------------------------
# keys
# ------------------------------------------------------------------------------------


@pytest.fixture(params=["memory", "local", "zip"])
def any_store(request, tmp_path):
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "local":
        yield LocalStore(tmp_path / "root")
    else:
        s = ZipStore(tmp_path / "root.zip", mode="w")
        yield s
        s.close()


@pytest.mark.parametrize("key", BAD_KEYS)
def test_bad_keys_refused_everywhere(any_store, key, tmp_path):
    before = _snapshot(tmp_path)
    from zarrcy.byte_range import RangeRequest

    ops = [
        lambda: any_store.get(key),
        lambda: any_store.get(key, RangeRequest(0, 1)),
        lambda: any_store.get_partial_values([(key, None)]),
        lambda: any_store.exists(key),
        lambda: any_store.getsize(key),
        lambda: any_store.set(key, b"x"),
        lambda: any_store.erase(key),
    ]
    for op in ops:
        with pytest.raises(StoreError):
            op()
    after = _snapshot(tmp_path)
    assert set(after) <= set(before) | {str(tmp_path / "root.zip")}


def test_no_file_outside_root_after_bad_writes(tmp_path):
    root = tmp_path / "a" / "root"
    s = LocalStore(root)
    for k in BAD_KEYS:
        with pytest.raises(StoreError):
            s.set(k, b"evil")
    assert sorted(os.listdir(tmp_path / "a")) == ["root"]
    assert not (tmp_path / "x").exists() and not os.path.exists("/x")


def test_api_node_paths_cannot_escape(tmp_path):
    g = zarrcy.open_group(str(tmp_path / "g"), mode="w")
    for bad in ("..", "../x", "a/../../x", "."):
        with pytest.raises((MetadataError, StoreError)):
            g.create_group(bad)
        with pytest.raises((MetadataError, StoreError, KeyError)):
            g[bad]
        with pytest.raises((MetadataError, StoreError)):
            zarrcy.create_array(str(tmp_path / "g"), name=bad, shape=(2,), dtype="i1")
        with pytest.raises((MetadataError, StoreError, KeyError)):
            zarrcy.open_array(str(tmp_path / "g"), path=bad)
    assert sorted(os.listdir(tmp_path)) == ["g"]


# ------------------------------------------------------------------------------------
# symlinks
# ------------------------------------------------------------------------------------


def test_symlinks_pointing_outside_are_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    root = tmp_path / "root"
    s = LocalStore(root)
    s.set("zarr.json", b'{"zarr_format": 3, "node_type": "group"}')
    os.symlink(outside / "secret", root / "filelink")
    os.symlink(outside, root / "dirlink")
    os.makedirs(root / "arr" / "c")
    os.symlink(outside / "secret", root / "arr" / "c" / "0")
    before = _snapshot(outside)
    for key in ("filelink", "dirlink/secret", "arr/c/0"):
        with pytest.raises(StoreError, match="outside the store root"):
            s.get(key)
    for key in ("dirlink/new", "dirlink/secret"):
        with pytest.raises(StoreError):
            s.set(key, b"overwritten")
    # in-place writes through a file link are refused ...
    with pytest.raises(StoreError):
        s.set_partial_values([("filelink", 0, b"X")])
    # ... while a whole-value write replaces the link itself (temp file + rename inside
    # the root): the target outside is untouched
    s.set("filelink", b"new value")
    assert not os.path.islink(root / "filelink") and s.get("filelink") == b"new value"
    with pytest.raises(StoreError):
        s.erase("dirlink/secret")
    listed = list(s.list())
    assert not any(k.startswith("dirlink/") for k in listed), listed
    assert _snapshot(outside) == before
    assert (outside / "secret").read_bytes() == b"secret"


def test_symlinked_chunk_of_an_array_is_refused_not_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data").write_bytes(bytes(range(8)))
    root = tmp_path / "root"
    _array_store([{"name": "bytes"}], [8], [8], store=LocalStore(root))
    os.makedirs(root / "c")
    os.symlink(outside / "data", root / "c" / "0")
    a = zarrcy.open_array(str(root))
    with pytest.raises(StoreError):
        a[...]


# ------------------------------------------------------------------------------------
# zip slip
# ------------------------------------------------------------------------------------


@pytest.mark.parametrize("member", ["../../evil.txt", "/abs.txt", "a/../../b", "..", "a//b"])
def test_zip_slip_members_refused(tmp_path, member):
    zp = tmp_path / "sub" / "evil.zip"
    zp.parent.mkdir()
    with zipfile.ZipFile(zp, "w") as z:
        z.writestr("zarr.json", json.dumps({"zarr_format": 3, "node_type": "group"}))
        z.writestr(member, b"x")
    before = _snapshot(tmp_path)
    s = ZipStore(zp, mode="r")
    try:
        with pytest.raises(StoreError, match="unsafe"):
            list(s.list())
        with pytest.raises(StoreError):
            zarrcy.open_group(str(zp), mode="r").tree()
    finally:
        s.close()
    assert _snapshot(tmp_path) == before


# ------------------------------------------------------------------------------------
# decompression bombs and declared sizes
# ------------------------------------------------------------------------------------

CHUNK = 1 << 20
BB = {
    "gzip": {"name": "gzip", "configuration": {"level": 1}},
    "zstd": {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
    "blosc": {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "noshuffle", "typesize": 1, "blocksize": 0}},
}


def _bombs():
    big = np.zeros(64 << 20, dtype=np.uint8)  # 64 MB of zeros into a 1 MB chunk
    zstd_claim = struct.pack("<I", 0xFD2FB528) + bytes([0xE0]) + struct.pack("<Q", 100 << 30) + bytes([1, 0, 0])
    blosc_claim = bytes([2, 1, 0x1, 1]) + struct.pack("<III", 0x7FFFFFFF, 0x7FFFFFFF, 26) + b"\0" * 10
    gz_lie = bytearray(gzip.compress(b"\0" * 10))
    gz_lie[-4:] = struct.pack("<I", 0xFFFFFFFF)
    return {
        "gzip 64 MB bomb": ("gzip", gzip.compress(big.tobytes(), 1)),
        "gzip ISIZE lie": ("gzip", bytes(gz_lie)),
        "gzip 10 bytes": ("gzip", b"\x1f\x8b\x08\0\0\0\0\0\0\xff"),
        "zstd 64 MB bomb": ("zstd", numcodecs.Zstd(1).encode(big)),
        "zstd declares 100 GB": ("zstd", zstd_claim),
        "blosc 2 MB in 1 MB": ("blosc", numcodecs.Blosc("lz4").encode(np.zeros(2 << 20, np.uint8))),
        "blosc declares 2 GB": ("blosc", blosc_claim),
    }


BOMBS = _bombs()


@pytest.mark.parametrize("name", list(BOMBS))
def test_decompression_bombs_refused_with_bounded_memory(name):
    codec, payload = BOMBS[name]
    s = _array_store([{"name": "bytes"}, BB[codec]], [4 * CHUNK], [CHUNK])
    s.set("c/0", payload)
    a = zarrcy.open_array(s)
    for sel in (0, slice(None, CHUNK), slice(10, 20)):
        with _Peak() as p, pytest.raises(CorruptChunkError) as ei:
            a[sel]
        assert ei.value.key == "c/0"
        assert p.peak < 3 * CHUNK + (1 << 20), (name, sel, p.peak)
    # the rest of the array is still readable
    assert a[CHUNK : CHUNK + 4].tolist() == [0, 0, 0, 0]


def test_tiny_chunk_declaring_100_gb_refused_at_open():
    # metadata claims 100 GiB chunks: above the default max_chunk_bytes (8 GiB)
    s = _array_store([{"name": "bytes"}, BB["gzip"]], [100 << 30], [100 << 30])
    s.set("c/0", gzip.compress(b"0123456789"))
    with _Peak() as p, pytest.raises(MetadataError, match="max_chunk_bytes"):
        zarrcy.open_array(s)
    assert p.peak < 1 << 20


# ------------------------------------------------------------------------------------
# shard indexes
# ------------------------------------------------------------------------------------

_SENT = (1 << 64) - 1


def _shard(entries, body=b"\1" * 16, location="end"):
    raw = struct.pack(f"<{2 * len(entries)}Q", *[v for e in entries for v in e])
    idx = raw + struct.pack("<I", crc32c.crc32c(raw))
    return body + idx if location == "end" else idx + body


HOSTILE_INDEXES = {
    "petabyte offsets": [(1 << 50, 4)] * 4,
    "petabyte sizes": [(0, 1 << 50)] * 4,
    "offset+size overflows uint64": [(_SENT - 1, 2)] * 4,
    "half-empty entry": [(_SENT, 4), (0, 4), (4, 4), (8, 4)],
    "entry past the end": [(0, 4), (4, 4), (8, 4), (12, 5)],
    "entry inside the index": [(0, 4), (4, 4), (8, 4), (20, 4)],
}


@pytest.mark.parametrize("name", list(HOSTILE_INDEXES))
def test_hostile_shard_index_refused(name):
    codecs = [{"name": "sharding_indexed", "configuration": {"chunk_shape": [4], "codecs": [{"name": "bytes"}]}}]
    s = _array_store(codecs, [16], [16])
    entries = HOSTILE_INDEXES[name]
    shard = _shard(entries)
    s.set("c/0", shard)
    a = zarrcy.open_array(s)
    with _Peak() as p:
        with pytest.raises(CorruptChunkError):
            a[...]
        for k, (off, nb) in enumerate(entries):
            # a partial read of one inner chunk either refuses, or returns exactly the
            # bytes its (consistent) index entry designates inside the shard.  (A partial
            # read of an end index cannot see the shard size, so an entry pointing into
            # the index itself is followed; see zarrcy/codecs/sharding.py.)
            try:
                v = a[4 * k : 4 * k + 4]
            except CorruptChunkError:
                continue
            assert nb == 4 and off + nb <= len(shard), (name, k, v)
            assert v.tobytes() == shard[off : off + nb], (name, k, v)
    assert p.peak < 1 << 20


def test_hostile_inner_grid_does_not_allocate_the_index():
    # 2^32 inner chunks: the index would be 64 GiB; the stored shard is 100 bytes
    codecs = [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1], "codecs": [{"name": "bytes"}]}}]
    s = _array_store(codecs, [1 << 33], [1 << 32])
    s.set("c/0", b"\0" * 100)
    # the index counts against max_chunk_bytes: refused at open, before any allocation
    with _Peak() as p:
        with pytest.raises(MetadataError, match="max_chunk_bytes"):
            zarrcy.open_array(s)
    assert p.peak < 4 << 20, p.peak


def test_every_hostile_error_is_a_zarrcy_error():
    # the same inputs through the raw pipeline API raise only zarrcy errors
    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.pipeline import CodecPipeline

    for codec, payload in BOMBS.values():
        p = CodecPipeline.from_codecs([{"name": "bytes"}, BB[codec]], ArraySpec((CHUNK,), np.dtype("uint8"), np.uint8(0)))
        with pytest.raises(ZarrcyError):
            p.decode(payload)
