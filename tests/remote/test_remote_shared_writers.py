"""Writers sharing a chunk or shard on an object store (issue 24.5): conditional PUTs
(If-Match / create-only) and a retried read-modify-write instead of locks.

The competing write is injected deterministically: a second client (as another process
would have) writes the object between this writer's read and its write, at the first
attempt.  Every test checks that BOTH updates land; with ``write_locks=False`` the same
injection loses one, so the tests can fail."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import zarrcy
import importlib
zconfig = importlib.import_module("zarrcy.config")
from zarrcy.errors import StoreError, WriteConflictError
from zarrcy.nodes import array_write
from zarrcy.storage import ObjectStore
from zarrcy.storage import remote as remote_mod

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
from _shared_shard_writer import SHAPE, campaign, lost_updates  # noqa: E402


def _create(url: str, opts: dict, sharded: bool) -> zarrcy.Array:
    kw = {"chunks": (8, 8), "shards": (16, 16)} if sharded else {"chunks": (16, 16)}
    return zarrcy.create_array(url, shape=(32, 32), dtype="int32", fill_value=0, storage_options=opts, **kw)


class _OtherProcess(ObjectStore):
    """A client as another process has it: its own in-process write locks (the test
    runs its write between this process's read and write, which the shared in-process
    lock would otherwise -- rightly -- exclude)."""

    def lock_key(self, key: str) -> object:
        return ("other process", self.url, key)


def _other(url: str, opts: dict) -> zarrcy.Array:
    """The same array through another client (another process's view)."""
    return zarrcy.open_array(_OtherProcess(url, storage_options=opts), mode="r+")


def _inject_before_first_put(a: zarrcy.Array, key: str, competitor) -> list[int]:
    """Make ``competitor()`` run just before ``a``'s first PUT of ``key``; returns the
    list of PUT attempts of ``key`` (its length counts them)."""
    store = a.store
    real_set = store.set
    puts: list[int] = []

    def set_(k, value):
        if k == key:
            puts.append(1)
            if len(puts) == 1:
                competitor()
        return real_set(k, value)

    store.set = set_  # type: ignore[method-assign]
    return puts


@pytest.mark.parametrize("sharded", [True, False], ids=["sharded", "unsharded"])
def test_a_write_between_read_and_put_is_kept(s3_server, s3_url, sharded) -> None:
    opts = s3_server[1]
    a = _create(s3_url, opts, sharded)
    a[:16, :16] = 1  # the object exists: the competitor's write must be If-Match-refused
    b = _other(s3_url, opts)
    puts = _inject_before_first_put(a, "c/0/0", lambda: b.__setitem__((slice(0, 4), slice(8, 12)), 2))
    a[4:8, 0:4] = 3
    assert len(puts) == 2  # refused once, then read again and written
    out = zarrcy.open_array(s3_url, storage_options=opts)[:16, :16]
    want = np.ones((16, 16), np.int32)
    want[0:4, 8:12] = 2
    want[4:8, 0:4] = 3
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("sharded", [True, False], ids=["sharded", "unsharded"])
def test_a_create_between_read_and_put_is_kept(s3_server, s3_url, sharded) -> None:
    """The object did not exist when read: the write is create-only (If-None-Match)."""
    opts = s3_server[1]
    a = _create(s3_url, opts, sharded)
    b = _other(s3_url, opts)
    puts = _inject_before_first_put(a, "c/0/0", lambda: b.__setitem__((slice(0, 2), slice(0, 2)), 5))
    a[6:7, 6:7] = 9
    assert len(puts) == 2
    out = zarrcy.open_array(s3_url, storage_options=opts)[:8, :8]
    assert out[0, 0] == 5 and out[1, 1] == 5 and out[6, 6] == 9 and out.sum() == 4 * 5 + 9


def test_points_write_is_retried_too(s3_server, s3_url) -> None:
    opts = s3_server[1]
    a = _create(s3_url, opts, True)
    a[...] = 1
    b = _other(s3_url, opts)
    puts = _inject_before_first_put(a, "c/0/0", lambda: b.__setitem__((0, 15), 4))
    a.vindex[[1, 2], [1, 2]] = 7
    assert len(puts) == 2
    out = zarrcy.open_array(s3_url, storage_options=opts)[...]
    assert (out[0, 15], out[1, 1], out[2, 2]) == (4, 7, 7)


def test_without_write_locks_the_update_is_lost(s3_server, s3_url) -> None:
    """The injection is real: unconditional PUTs lose the competitor's update."""
    opts = s3_server[1]
    a = _create(s3_url, opts, False)
    a[:16, :16] = 1
    b = _other(s3_url, opts)
    with zconfig.override(write_locks=False):
        puts = _inject_before_first_put(a, "c/0/0", lambda: b.__setitem__((slice(0, 4), slice(8, 12)), 2))
        a[4:8, 0:4] = 3
    assert len(puts) == 1
    assert (zarrcy.open_array(s3_url, storage_options=opts)[0:4, 8:12] == 1).all()  # lost


def test_an_erase_after_a_competing_write_is_refused_and_retried(s3_server, s3_url) -> None:
    """A partial write that makes a chunk all fill erases it -- unless the object
    changed since it was read: then the write is run again and the competitor's data stays."""
    opts = s3_server[1]
    a = _create(s3_url, opts, False)
    a[0:2, 0:2] = 1
    b = _other(s3_url, opts)
    store = a.store
    real_erase = store.erase
    erases: list[int] = []

    def erase(k):
        erases.append(1)
        if len(erases) == 1:
            b[5, 5] = 6
        return real_erase(k)

    store.erase = erase  # type: ignore[method-assign]
    a[0:2, 0:2] = 0
    out = zarrcy.open_array(s3_url, storage_options=opts)[:16, :16]
    assert out[5, 5] == 6 and out.sum() == 6
    assert store.exists("c/0/0")


def test_conflicts_without_end_give_write_conflict_error(s3_server, s3_url, monkeypatch) -> None:
    opts = s3_server[1]
    monkeypatch.setattr(array_write, "CONFLICT_ATTEMPTS", 3)
    a = _create(s3_url, opts, False)
    a[...] = 1
    b = _other(s3_url, opts)
    n = [0]
    real_set = a.store.set

    def set_(k, value):
        n[0] += 1
        b[0, 0] = n[0] + 10  # every attempt loses
        return real_set(k, value)

    a.store.set = set_  # type: ignore[method-assign]
    with pytest.raises(WriteConflictError, match="c/0/0: still changed by other writers after 3 attempts"):
        a[1, 1] = 5
    assert n[0] == 3


def test_a_server_without_strong_etags_refuses_partial_writes(s3_server, s3_url, monkeypatch) -> None:
    """Nothing would prove the object unchanged: a partial write is refused (naming the
    key and the opt-out); a whole-chunk write, which reads nothing, is not."""
    opts = s3_server[1]
    a = _create(s3_url, opts, False)
    a[...] = 1
    monkeypatch.setattr(remote_mod, "_strong_etag", lambda meta: None)
    with pytest.raises(StoreError, match="c/0/0: the server sent no strong ETag"):
        a[0, 0] = 2
    a[:16, :16] = 3
    with zconfig.override(write_locks=False):
        a[0, 0] = 4
    assert a[0, 0] == 4 and a[1, 1] == 3


def test_the_index_cache_does_not_stand_in_for_the_read(s3_server, s3_url) -> None:
    """A reader of this process cached the shard index; another client rewrites the shard;
    a write that replaces one whole inner chunk (no data read) must still be conditional
    on the shard as it is now, not on the cached index."""
    opts = s3_server[1]
    a = _create(s3_url, opts, True)
    a[0:8, 0:8] = 1  # one inner chunk stored
    assert a[0, 0] == 1  # index cached: the other inner chunks are empty in it
    _other(s3_url, opts)[8:16, 8:16] = 2  # another inner chunk of the same shard
    a[0:8, 0:8] = 3  # with the cached index: nothing to keep, nothing read
    out = zarrcy.open_array(s3_url, storage_options=opts)[:16, :16]
    assert (out[8:16, 8:16] == 2).all() and (out[0:8, 0:8] == 3).all() and out.sum() == 64 * 5


@pytest.mark.parametrize("sharded", [True, False], ids=["sharded", "unsharded"])
def test_processes_sharing_shards_lose_nothing(s3_server, s3_url, sharded) -> None:
    """6 processes x 5 random overlapping rectangles over one array on S3 (moto): every
    element holds a value some sequential order of the writes gives (with write_locks
    off the same campaigns lost 479 (sharded) and 173 (unsharded) elements)."""
    opts = s3_server[1]
    kw = {"chunks": (8, 8), "shards": (32, 32)} if sharded else {"chunks": (16, 16)}
    zarrcy.create_array(s3_url, shape=SHAPE, dtype="int64", fill_value=0, storage_options=opts, **kw)
    seed, writers = 20261128, 6
    campaign(s3_url, seed, locks=True, writers=writers, storage_options=opts)
    final = zarrcy.open_array(s3_url, storage_options=opts)[...]
    assert lost_updates(final, seed, writers) == 0
