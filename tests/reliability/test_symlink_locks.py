"""Write locks follow the stored object, not the path string (issue 12 item 10).

The per-object write lock of the array layer was keyed by ``(store URL, key)``: two
threads writing one shard, one through the real path and one through a symlink to the
store root (or to the array's directory), took different locks and their
read-modify-writes lost updates (1 of 8 in the campaign).  ``Store.lock_key`` now names
the object (LocalStore: the resolved path).  A slowed-down ``set`` widens the race
window so the lost update is certain without the fix.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

import zarrcy
from zarrcy.storage import LocalStore, MemoryStore

ROWS = 8


def _slow_set(monkeypatch) -> None:
    real = LocalStore.set

    def slow(self, key, value):
        if "/c/" in key or key.startswith("c/"):
            time.sleep(0.02)  # a read-modify-write that takes a while
        return real(self, key, value)

    monkeypatch.setattr(LocalStore, "set", slow)


def _write_rows(arrays) -> None:
    def run(r: int) -> None:
        arrays[r % len(arrays)][r] = r + 1

    ts = [threading.Thread(target=run, args=(r,)) for r in range(ROWS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def _new(root, path: str = "") -> zarrcy.Array:
    return zarrcy.create_array(
        LocalStore(root), name=path or None, shape=(ROWS, 4), chunks=(1, 4), shards=(ROWS, 4), dtype="int32", fill_value=0
    )


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
@pytest.mark.parametrize("strategy", ["rewrite", "append"])
def test_symlinked_root_shares_the_lock(tmp_path, monkeypatch, restore_config, strategy):
    zarrcy.config(shard_write_strategy=strategy)
    real = tmp_path / "real"
    a = _new(real)
    os.symlink(real, tmp_path / "link")
    b = zarrcy.open_array(str(tmp_path / "link"), mode="r+")
    assert a.store.url != b.store.url
    assert a.store.lock_key("c/0/0") == b.store.lock_key("c/0/0")
    _slow_set(monkeypatch)
    _write_rows([a, b])
    assert a[...].tolist() == [[r + 1] * 4 for r in range(ROWS)]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_symlinked_directory_inside_the_store_shares_the_lock(tmp_path, monkeypatch, restore_config):
    root = tmp_path / "s"
    a = _new(root, "x")
    os.symlink(root / "x", root / "y")  # stays inside the root: LocalStore allows it
    b = zarrcy.open_array(LocalStore(root), path="y", mode="r+")
    assert a.store.lock_key("x/c/0/0") == b.store.lock_key("y/c/0/0")
    assert a.store.lock_key("x/c/0/0") != a.store.lock_key("x/c/1/0")
    _slow_set(monkeypatch)
    _write_rows([a, b])
    assert a[...].tolist() == [[r + 1] * 4 for r in range(ROWS)]


def test_lock_key_of_missing_files_is_stable(tmp_path):
    # before and after the file (and its directories) exist: the same key, so a writer
    # that starts before the first write and one that starts after share the lock
    s = LocalStore(tmp_path / "s")
    before = s.lock_key("a/b/c")
    s.set("a/b/c", b"1")
    assert s.lock_key("a/b/c") == before
    s.set("a/b/c", b"2")  # an atomic replace: new inode, same key
    assert s.lock_key("a/b/c") == before


def test_default_lock_key_is_url_and_key():
    m = MemoryStore()
    assert m.lock_key("c/0") == (m.url, "c/0")
    assert m.lock_key("c/0") != m.lock_key("c/1")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_lock_key_follows_repointed_and_file_symlinks(tmp_path):
    s = LocalStore(tmp_path / "s")
    s.set("d1/k", b"1")
    s.set("d2/k", b"2")
    os.symlink(tmp_path / "s" / "d1", tmp_path / "s" / "link")
    assert s.lock_key("link/k") == s.lock_key("d1/k")  # (caches the resolved directory)
    os.unlink(tmp_path / "s" / "link")
    os.symlink(tmp_path / "s" / "d2", tmp_path / "s" / "link")
    assert s.lock_key("link/k") == s.lock_key("d2/k")  # another directory: not the cached one
    os.symlink(tmp_path / "s" / "d1" / "k", tmp_path / "s" / "d2" / "alias")
    assert s.lock_key("d2/alias") == s.lock_key("d1/k")  # a symlinked file
