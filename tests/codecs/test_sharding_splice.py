"""sharding rewrite through Store.set_spliced: the bytes stored are exactly those of the
assembling rewrite (every surviving inner chunk read and copied in memory)."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

import zarrcy
from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.sharding import ShardingCodec, writer
from zarrcy.storage._common import StorePath
from zarrcy.storage.local import LocalStore
from zarrcy.storage.memory import MemoryStore

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
CRC = {"name": "crc32c"}
SHAPE = (8, 12, 6)
CHUNK = (2, 4, 3)


def make(location, index_codecs):
    return ShardingCodec.from_dict(
        {"chunk_shape": list(CHUNK), "codecs": [BYTES, GZIP], "index_codecs": index_codecs,
         "index_location": location}, "codecs[0]"
    )


def spec():
    dt = np.dtype("uint16")
    return ArraySpec(shape=SHAPE, dtype=dt, fill_value=dt.type(0))


def _assembled(snap, setter, layout, upd, flat):
    writer._rewrite_assembled(snap, setter, layout, upd, flat, None)


def _writes(c, sp, setter, rng):
    """A sequence of writes: full inner chunks, partial boxes, points, chunks emptied."""
    c.encode_partial(setter, (slice(0, 2), slice(4, 8), slice(3, 6)), rng.integers(1, 999, (2, 4, 3)).astype("u2"), sp)
    c.encode_partial(setter, (slice(1, 5), slice(2, 11), slice(0, 5)), rng.integers(1, 999, (4, 9, 5)).astype("u2"), sp)
    c.encode_partial(setter, (slice(2, 4), slice(0, 4), slice(0, 3)), np.zeros((2, 4, 3), "u2"), sp)  # emptied
    coords = np.array([[0, 7, 3], [1, 11, 5], [2, 0, 4]], np.int64)
    c.encode_points(setter, coords, np.array([5, 6, 7], "u2"), sp)
    c.encode_partial(setter, (slice(6, 8), slice(8, 12), slice(3, 6)), rng.integers(1, 999, (2, 4, 3)).astype("u2"), sp)


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("index_codecs", [[BYTES, CRC], [BYTES]])
@pytest.mark.parametrize("order", ["lexicographic", "morton"])
@pytest.mark.parametrize("kind", ["local", "memory"])
def test_spliced_bytes_equal_assembled(tmp_path, monkeypatch, location, index_codecs, order, kind):
    old = zarrcy.config()["subchunk_write_order"]
    zarrcy.config(subchunk_write_order=order)
    try:
        c, sp = make(location, index_codecs), spec()
        base = np.random.default_rng(0).integers(1, 999, SHAPE).astype("u2")
        base[0:2, 0:4, 0:3] = 0  # one inner chunk not stored
        results = []
        for mode in ("spliced", "assembled"):
            store = LocalStore(tmp_path / mode) if kind == "local" else MemoryStore()
            setter = StorePath(store, "c/0")
            setter.set(c.encode(base, sp))
            calls = []
            real = type(store).set_spliced
            monkeypatch.setattr(type(store), "set_spliced",
                                lambda self, *a, **k: (calls.append(1), real(self, *a, **k))[1])
            if mode == "assembled":
                monkeypatch.setattr(writer, "_rewrite_spliced", _assembled)
            _writes(c, sp, setter, np.random.default_rng(1))
            monkeypatch.undo()
            assert bool(calls) == (mode == "spliced")
            results.append((store.get("c/0"), c.decode(store.get("c/0"), sp)))
        assert results[0][0] == results[1][0]
        np.testing.assert_array_equal(results[0][1], results[1][1])
    finally:
        zarrcy.config(subchunk_write_order=old)


def test_array_writes_spliced_equal_assembled(tmp_path, monkeypatch):
    """Through the array layer on a LocalStore, with copy_file_range refusing half the
    time (fallback): every shard file is byte-identical to the assembling rewrite."""
    data = (np.arange(24 * 24 * 24, dtype="<u2").reshape(24, 24, 24) % 1000).astype("<u2")
    rng = np.random.default_rng(3)
    boxes = [tuple(slice(int(o), int(o) + 4) for o in rng.integers(0, 20, 3)) for _ in range(15)]
    files = []
    for mode in ("spliced", "assembled"):
        root = tmp_path / mode
        a = zarrcy.create_array(str(root), shape=data.shape, dtype=data.dtype, chunks=(4, 4, 4), shards=(12, 12, 12),
                                compressors=[zarrcy.codecs.GzipCodec(level=1)], fill_value=0)
        a[...] = data
        if mode == "assembled":
            monkeypatch.setattr(writer, "_rewrite_spliced", _assembled)
        else:
            real = os.copy_file_range
            n = [0]

            def flaky(*args):
                n[0] += 1
                if n[0] % 2:
                    raise OSError(errno.EXDEV, "cross-device")
                return real(*args)

            monkeypatch.setattr(os, "copy_file_range", flaky)
        for k, b in enumerate(boxes):
            a[b] = np.full((4, 4, 4), k + 1, "<u2")
        monkeypatch.undo()
        files.append({f.relative_to(root).as_posix(): f.read_bytes() for f in root.rglob("*") if f.is_file()})
    assert files[0] == files[1]
    want = data.copy()
    for k, b in enumerate(boxes):
        want[b] = k + 1
    np.testing.assert_array_equal(zarrcy.open_array(str(tmp_path / "spliced"))[...], want)


def test_rewrite_reads_only_partly_covered_chunks(tmp_path, monkeypatch):
    """A write of one whole inner chunk reads the index only: the untouched chunks are
    spliced (named as ranges), never read into this process."""
    c, sp = make("end", [BYTES, CRC]), spec()
    store = LocalStore(tmp_path / "s")
    setter = StorePath(store, "c/0")
    base = np.random.default_rng(0).integers(1, 999, SHAPE).astype("u2")
    setter.set(c.encode(base, sp))
    size = len(store.get("c/0"))
    read = []
    from zarrcy.storage import local as local_mod
    real = local_mod._pread_exact
    monkeypatch.setattr(local_mod, "_pread_exact", lambda fd, a, n: (read.append(n), real(fd, a, n))[1])
    c.encode_partial(setter, (slice(2, 4), slice(4, 8), slice(0, 3)), np.full((2, 4, 3), 7, "u2"), sp)
    assert sum(read) < size // 4, read  # the index (and nothing of the chunk data)
    want = base.copy()
    want[2:4, 4:8, 0:3] = 7
    np.testing.assert_array_equal(c.decode(store.get("c/0"), sp), want)


def test_shard_replaced_before_the_splice_never_mixes_versions(tmp_path, monkeypatch):
    """Another writer replaces the shard (temp + rename) after this write read its index:
    the untouched chunks are still copied from the version that index describes (the
    snapshot's descriptor), so the stored shard is consistent -- exactly as the
    assembling rewrite, which read them through the same snapshot."""
    c, sp = make("end", [BYTES, CRC]), spec()
    results = []
    for mode in ("spliced", "assembled"):
        store = LocalStore(tmp_path / mode)
        setter = StorePath(store, "c/0")
        base = np.random.default_rng(0).integers(1, 999, SHAPE).astype("u2")
        other = np.random.default_rng(5).integers(1, 999, (4, 6, 3)).astype("u2")
        setter.set(c.encode(base, sp))
        if mode == "assembled":
            monkeypatch.setattr(writer, "_rewrite_spliced", _assembled)
        plain_set = LocalStore.set
        real = LocalStore.set_spliced if mode == "spliced" else plain_set

        def racing(self, *args, real=real, other=other, plain_set=plain_set):
            plain_set(self, "c/0", c.encode(np.tile(other, (2, 2, 2)), sp))  # the concurrent replace
            return real(self, *args)

        monkeypatch.setattr(LocalStore, "set_spliced" if mode == "spliced" else "set", racing)
        c.encode_partial(setter, (slice(0, 2), slice(0, 4), slice(0, 3)), np.full((2, 4, 3), 3, "u2"), sp)
        monkeypatch.undo()
        want = base.copy()
        want[0:2, 0:4, 0:3] = 3
        np.testing.assert_array_equal(c.decode(store.get("c/0"), sp), want)
        results.append(store.get("c/0"))
    assert results[0] == results[1]
