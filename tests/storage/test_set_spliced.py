"""Store.set_spliced: a new value made of ranges of the replaced value plus new bytes."""

from __future__ import annotations

import errno
import os

import pytest

from zarrcy.errors import ReadOnlyError, StoreError
from zarrcy.storage import local as local_mod
from zarrcy.storage._common import StorePath
from zarrcy.storage.local import TEMP_PREFIX, LocalStore
from zarrcy.storage.memory import MemoryStore
from zarrcy.storage.zip import ZipStore

OLD = bytes(range(256)) * 64  # 16 KiB
PARTS = [b"head", (100, 2000), b"", (0, 0), (5000, 16384), b"tail", (2000, 2100)]
WANT = b"head" + OLD[100:2000] + OLD[5000:16384] + b"tail" + OLD[2000:2100]


@pytest.fixture(params=["local", "memory", "zip"])
def store(request, tmp_path):
    if request.param == "local":
        s = LocalStore(tmp_path / "s")
    elif request.param == "memory":
        s = MemoryStore()
    else:
        s = ZipStore(str(tmp_path / "s.zip"), mode="w")
    yield s
    s.close()


def _temp_files(store):
    if not isinstance(store, LocalStore):
        return []
    return [f for _, _, fs in os.walk(store.root) for f in fs if f.startswith(TEMP_PREFIX)]


@pytest.mark.parametrize("with_source", [True, False])
def test_splice_builds_the_value(store, with_source):
    store.set("a/k", OLD)
    if with_source:
        with store.snapshot("a/k") as snap:
            store.set_spliced("a/k", PARTS, snap)
    else:
        store.set_spliced("a/k", PARTS)
    assert store.get("a/k") == WANT
    assert _temp_files(store) == []


def test_splice_through_store_path(store):
    store.set("k", OLD)
    sp = StorePath(store, "k")
    with sp.snapshot() as snap:
        sp.set_spliced([(10, 20), b"x"], snap)
    assert store.get("k") == OLD[10:20] + b"x"


def test_splice_only_bytes_needs_no_old_value(store):
    store.set_spliced("new", [b"ab", memoryview(b"cd")])
    assert store.get("new") == b"abcd"


@pytest.mark.parametrize("parts", [[(0, len(OLD) + 1)], [b"x", (len(OLD), len(OLD) + 5)]])
def test_range_past_the_end_raises_and_keeps_the_value(parts, tmp_path):
    for store in (LocalStore(tmp_path / "l"), MemoryStore()):
        store.set("k", OLD)
        with store.snapshot("k") as snap:
            with pytest.raises(StoreError, match="k"):
                store.set_spliced("k", parts, snap)
        with pytest.raises(StoreError, match="k"):
            store.set_spliced("k", parts)
        assert store.get("k") == OLD
        assert _temp_files(store) == []


def test_range_of_a_missing_value_raises(store):
    with pytest.raises(StoreError):
        store.set_spliced("nope", [(0, 1)])
    assert store.get("nope") is None


@pytest.mark.parametrize("bad", [(3, 1), (-1, 2), (0,), (0, 1.0)])
def test_bad_range_refused(bad):
    s = MemoryStore()
    s.set("k", OLD)
    with pytest.raises(StoreError, match="splice range"):
        s.set_spliced("k", [bad])
    with pytest.raises(StoreError, match="splice range"):
        StorePath(s, "k").store.set_spliced("k", [b"x", bad])


def test_read_only_store_refuses(tmp_path):
    LocalStore(tmp_path / "s").set("k", OLD)
    ro = LocalStore(tmp_path / "s", read_only=True)
    with pytest.raises(ReadOnlyError):
        ro.set_spliced("k", [(0, 4)])


def test_local_copies_from_the_pinned_version(tmp_path):
    """The key is replaced (temp + rename, as any writer does) after the snapshot: the
    ranges come from the version the snapshot read, never from the new file."""
    s = LocalStore(tmp_path / "s")
    s.set("k", OLD)
    with s.snapshot("k") as snap:
        s.set("k", b"\xff" * len(OLD))  # a concurrent replace
        s.set_spliced("k", [(0, 100), b"!"], snap)
    assert s.get("k") == OLD[:100] + b"!"


def test_memory_copies_from_the_pinned_version():
    s = MemoryStore()
    s.set("k", OLD)
    with s.snapshot("k") as snap:
        s.set("k", b"\xff" * len(OLD))
        s.set_spliced("k", [(0, 100), b"!"], snap)
    assert s.get("k") == OLD[:100] + b"!"


def test_local_pinned_file_truncated_meanwhile_is_detected(tmp_path):
    """The pinned inode shrinks in place (another process's truncate): a short copy
    raises StoreError and the key keeps its (truncated) value; no temp file left."""
    s = LocalStore(tmp_path / "s")
    s.set("k", OLD)
    with s.snapshot("k") as snap:
        os.truncate(s._path("k"), 1000)
        with pytest.raises(StoreError, match="truncated meanwhile"):
            s.set_spliced("k", [b"x", (500, 4000)], snap)
    assert s.get("k") == OLD[:1000]
    assert _temp_files(s) == []


def test_snapshot_of_another_store_uses_the_default(tmp_path):
    a, b = LocalStore(tmp_path / "a"), MemoryStore()
    a.set("k", OLD)
    b.set("k", b"other")
    with b.snapshot("k") as snap:
        a.set_spliced("k", [(0, 5)], snap)
    assert a.get("k") == b"other"


@pytest.mark.parametrize("code", ["EXDEV", "ENOSYS", "EOPNOTSUPP", "EINVAL"])
@pytest.mark.parametrize("after", [0, 1])
def test_local_fallback_when_copy_file_range_refuses(tmp_path, monkeypatch, code, after):
    """copy_file_range refuses at once (after=0) or after a first piece (after=1):
    the rest goes through pread/pwrite, with identical bytes."""
    real = os.copy_file_range
    calls = []

    def fake(src, dst, count, offset_src=None, offset_dst=None):
        calls.append(count)
        if len(calls) > after:
            raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)))
        return real(src, dst, min(count, 7), offset_src, offset_dst)

    monkeypatch.setattr(os, "copy_file_range", fake)
    s = LocalStore(tmp_path / "s")
    s.set("k", OLD)
    with s.snapshot("k") as snap:
        s.set_spliced("k", PARTS, snap)
    assert calls
    assert s.get("k") == WANT


def test_local_fallback_without_copy_file_range(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "copy_file_range", raising=False)
    monkeypatch.setattr(local_mod, "_COPY_PIECE", 1000)  # several pieces per range
    s = LocalStore(tmp_path / "s")
    s.set("k", OLD)
    s.set_spliced("k", PARTS)
    assert s.get("k") == WANT


def test_local_copy_error_keeps_the_old_value(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "copy_file_range", broken)
    s = LocalStore(tmp_path / "s")
    s.set("k", OLD)
    with pytest.raises(StoreError, match="write failed"):
        s.set_spliced("k", PARTS)
    assert s.get("k") == OLD
    assert _temp_files(s) == []


def test_local_fsync_policy(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    s = LocalStore(tmp_path / "s", fsync=True)
    s.set("k", OLD)
    n = len(synced)
    s.set_spliced("k", PARTS)
    assert len(synced) - n == 2  # the file before the rename, the directory after it
    assert s.get("k") == WANT


MANY = [b"a" * 5, b"bc", (10, 30), b"d", b"", b"efg" * 100, memoryview(b"hij"), (0, 3), b"k", b"lm"]
MANY_WANT = b"a" * 5 + b"bc" + OLD[10:30] + b"d" + b"efg" * 100 + b"hij" + OLD[0:3] + b"k" + b"lm"


@pytest.mark.parametrize("mode", ["short", "missing", "batches"])
def test_local_vectored_writes(tmp_path, monkeypatch, mode):
    """Consecutive buffers go out with one pwritev; a short vectored write is
    completed piece by piece; without pwritev, pwrite each."""
    real = os.pwritev
    if mode == "short":
        monkeypatch.setattr(os, "pwritev", lambda fd, bufs, at: real(fd, [bytes(bufs[0])[:3]], at))
    elif mode == "missing":
        monkeypatch.delattr(os, "pwritev", raising=False)
    else:
        monkeypatch.setattr(local_mod, "_IOV_BATCH", 2)
    s = LocalStore(tmp_path / "s")
    s.set("k", OLD)
    with s.snapshot("k") as snap:
        s.set_spliced("k", MANY, snap)
    assert s.get("k") == MANY_WANT
