"""Writers sharing shards and chunks (issue 24 item 5): with ``write_locks`` on (the
default), processes writing overlapping regions of one array lose no update.

The campaign: 5 processes (20 with ``ZARRCY_SLOW=1``), each writing 5 random rectangles (crossing shards and
inner chunks) of one sharded LocalStore array, each write filled with its own code.
Whatever order the writes took, the result must be *some* sequential application of
all of them, which per element means:

* an element no write covers holds the fill value;
* an element holds the code of a write that covers it (never fill, never an older
  state restored by a writer that read before another one wrote);
* a write that covers the element and comes later in the same process than the write
  whose code it holds would have overwritten it: never.

The locks themselves are tested deterministically: a holder process and a waiter
(timeout), two threads of one process, a fork child, pruning, a read-only directory.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import LockTimeoutError, StoreError
from zarrcy.storage import LocalStore

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _forkrun import Child, server  # noqa: E402
from _shared_shard_writer import SHAPE, WRITES, campaign, code, lost_updates, plan  # noqa: E402

SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")
WRITERS = 20 if SLOW else 5  # each writer is a process (forked from a runner that imported zarrcy)


def _sharded(root: Path) -> zarrcy.Array:
    return zarrcy.create_array(str(root), shape=SHAPE, dtype="int64", chunks=(8, 8), shards=(32, 32),
                               fill_value=0)


def _unsharded(root: Path) -> zarrcy.Array:
    return zarrcy.create_array(str(root), shape=SHAPE, dtype="int64", chunks=(16, 16), fill_value=0)


@pytest.mark.parametrize(("make", "writers"), [(_sharded, WRITERS), (_unsharded, max(3, WRITERS // 2))], ids=["sharded", "unsharded"])
def test_overlapping_writers_lose_nothing(tmp_path: Path, make, writers: int) -> None:
    """(With ``write_locks`` off, the same campaigns lost 785 elements (sharded, 20 writers)
    and 71 (unsharded, 20 writers) on a loaded 2-core machine; 334 (sharded, 8) and 32
    (unsharded, 4) on a quiet one.)"""
    seed = 20261127
    root = tmp_path / "a.zarr"
    make(root)
    campaign(str(root), seed, locks=True, writers=writers)
    final = zarrcy.open_array(str(root))[...]
    assert lost_updates(final, seed, writers) == 0
    assert not list(root.rglob(".zarrcy-tmp-*[!k]"))  # no temp file left (lock files may stay)


def test_oracle_sees_a_lost_update() -> None:
    """The checker is not vacuous: restoring one covered element to fill, or giving it
    the code of an earlier write of the process that wrote it last, is caught."""
    seed = 7
    final = np.zeros(SHAPE, np.int64)
    for w in range(WRITERS):  # a sequential application: process by process, in order
        for j, sel in enumerate(plan(seed, w, WRITES)):
            final[sel] = code(w, j)
    assert lost_updates(final, seed, WRITERS) == 0
    last = plan(seed, WRITERS - 1, WRITES)[-1]
    i, k = last[0].start, last[1].start
    lost = final.copy()
    lost[i, k] = 0
    assert lost_updates(lost, seed, WRITERS) == 1
    stale = final.copy()
    earlier = [j for j, (r, c) in enumerate(plan(seed, WRITERS - 1, WRITES)[:-1])
               if r.start <= i < r.stop and c.start <= k < c.stop]
    if earlier:
        stale[i, k] = code(WRITERS - 1, earlier[0])
        assert lost_updates(stale, seed, WRITERS) == 1


# -- the lock, deterministically --------------------------------------------------------------

_HOLDER = r"""
import sys, zarrcy
from zarrcy.storage import LocalStore
s = LocalStore(sys.argv[1])
with s.write_lock(sys.argv[2]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def _hold(root: Path, key: str) -> Child:
    p = server().start(["-c", _HOLDER, root, key])  # a forked child: ``_forkrun.py``
    assert p.readline().strip() == "held", p.stderr
    return p


def test_a_held_lock_makes_another_process_wait_then_time_out(tmp_path: Path) -> None:
    s = LocalStore(tmp_path)
    p = _hold(tmp_path, "c/0/0")
    try:
        with zarrcy.config.set(write_lock_timeout=0.2):
            with pytest.raises(LockTimeoutError, match="c/0/0") as e:
                with s.write_lock("c/0/0"):
                    pass
            assert isinstance(e.value, StoreError) and isinstance(e.value, TimeoutError)
            with s.write_lock("c/0/1"):  # another object in the same directory: free
                pass
            with s.write_lock("c/1/0"):
                pass
    finally:
        p.communicate("\n", timeout=30)  # releases the lock, closes the pipes
    with zarrcy.config.set(write_lock_timeout=5):
        with s.write_lock("c/0/0"):  # released with the holder
            pass


def test_threads_of_one_process_exclude_each_other(tmp_path: Path) -> None:
    s = LocalStore(tmp_path)
    order: list[str] = []
    inside = threading.Event()
    release = threading.Event()

    def first() -> None:
        with s.write_lock("k"):
            order.append("first in")
            inside.set()
            release.wait(10)
            order.append("first out")

    t = threading.Thread(target=first)
    t.start()
    inside.wait(10)
    with zarrcy.config.set(write_lock_timeout=0.1):
        with pytest.raises(LockTimeoutError):
            with s.write_lock("k"):
                pass
    release.set()
    with s.write_lock("k"):
        order.append("second in")
    t.join()
    assert order == ["first in", "first out", "second in"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_share_its_parents_lock(tmp_path: Path) -> None:
    s = LocalStore(tmp_path)
    with s.write_lock("c/0"):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: the parent holds the lock; we must wait for it, not share it
            try:
                with zarrcy.config.set(write_lock_timeout=0.2):
                    try:
                        with s.write_lock("c/0"):
                            os.write(w, b"shared")
                    except LockTimeoutError:
                        os.write(w, b"waited")
            finally:
                os._exit(0)
        os.close(w)
        got = os.read(r, 16)
        os.close(r)
        os.waitpid(pid, 0)
    assert got == b"waited"


def test_erasing_under_the_lock_prunes_the_directory_after_release(tmp_path: Path) -> None:
    a = _unsharded(tmp_path / "a.zarr")
    a[0:16, 0:16] = 5
    chunk_dir = tmp_path / "a.zarr" / "c" / "0"
    assert (chunk_dir / "0").exists() and not (chunk_dir / ".zarrcy-tmp-lock").exists()  # nothing left behind
    a[0:16, 0:16] = 0  # all fill: the chunk is erased (under its lock)
    assert not (tmp_path / "a.zarr" / "c").exists()  # the directory went, lock file and all
    assert sorted(LocalStore(tmp_path / "a.zarr").list()) == ["zarr.json"]


def test_the_lock_file_goes_with_its_last_holder(tmp_path: Path) -> None:
    """Released while another writer holds a byte of it: the file stays (unlinking it
    would let a third writer lock a new file beside the holder); the last one out
    removes it, and a new writer of the first object works on a fresh file."""
    s = LocalStore(tmp_path)
    lock = tmp_path / "d" / ".zarrcy-tmp-lock"
    x, y = s.write_lock("d/x"), s.write_lock("d/y")
    x.__enter__()
    y.__enter__()
    assert lock.exists()
    x.__exit__(None, None, None)
    assert lock.exists()  # y still holds its byte
    with s.write_lock("d/x"):  # x again, beside y: the same file
        assert lock.exists()
    assert lock.exists()
    y.__exit__(None, None, None)
    assert not lock.exists()
    with s.write_lock("d/x"):
        assert lock.exists()
    assert not lock.exists()


def test_lock_files_are_not_keys(tmp_path: Path) -> None:
    a = _sharded(tmp_path / "a.zarr")
    a[3:40, 5:9] = 1
    s = LocalStore(tmp_path / "a.zarr")
    assert all(".zarrcy" not in k for k in s.list())
    assert s.list_dir("c/0") == ["0"] or ".zarrcy-tmp-lock" not in s.list_dir("c/0")
    with pytest.raises(StoreError):
        s.get("c/0/.zarrcy-tmp-lock")
    assert s.remove_temp_files() == 0  # lock files are not debris
    import zarr  # zarr-python reads the array as if there were no lock file

    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a.zarr"), mode="r")[...], a[...])


def test_a_lock_file_that_cannot_be_created_names_the_key(tmp_path: Path) -> None:
    """A real failure of the file system, also as root: the lock file's name is taken
    by a directory (root ignores permission bits, not EISDIR)."""
    s = LocalStore(tmp_path)
    (tmp_path / "ro" / ".zarrcy-tmp-lock").mkdir(parents=True)
    with pytest.raises(StoreError, match="ro/x.*write lock file"):
        with s.write_lock("ro/x"):
            pass


def test_a_lock_file_that_cannot_be_created_names_the_key_injected(tmp_path: Path, monkeypatch) -> None:
    """The same refusal where the test runs as root: the open of the lock file fails."""
    from zarrcy.storage import _filelock

    real_open = os.open

    def refuse(path, flags, mode=0o777, *, dir_fd=None):
        if path == _filelock.LOCK_NAME:
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(_filelock.os, "open", refuse)
    s = LocalStore(tmp_path)
    with pytest.raises(StoreError, match="ro/x: cannot create the write lock file"):
        with s.write_lock("ro/x"):
            pass


def test_write_locks_off_takes_no_lock(tmp_path: Path) -> None:
    a = _sharded(tmp_path / "a.zarr")
    with zarrcy.config.set(write_locks=False):
        a[0:5, 0:5] = 3
    assert not list((tmp_path / "a.zarr").rglob(".zarrcy-tmp-lock"))
    assert a[0, 0] == 3


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "1", True])
def test_write_lock_timeout_is_checked(bad) -> None:
    with pytest.raises((ValueError, TypeError)):
        zarrcy.config(write_lock_timeout=bad)


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_write_locks_is_checked(bad) -> None:
    with pytest.raises(TypeError):
        zarrcy.config(write_locks=bad)


def test_lock_file_creation_survives_a_pruned_directory(tmp_path: Path, monkeypatch) -> None:
    """Another writer's pruning can remove the (empty) directory between opening it and
    creating the lock file in it: the lock opens the directory again (seen as a
    StoreError "cannot create the write lock file ... No such file or directory" from a
    2-thread write of mostly-empty chunks before the fix)."""
    from zarrcy.storage import _filelock

    d = tmp_path / "c" / "0"
    calls = []

    def open_dir(path: str) -> int:
        os.makedirs(path, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        calls.append(path)
        if len(calls) <= 3:  # a pruner removes it right after we opened it
            os.rmdir(path)
        return fd

    with _filelock.ObjectFileLock(str(d), "3", "c/0/3", 5.0, open_dir):
        assert (d / _filelock.LOCK_NAME).exists()
    assert len(calls) == 4
    assert not (d / _filelock.LOCK_NAME).exists()  # the last holder removed it

    def always_gone(path: str) -> int:
        os.makedirs(path, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        calls.append(path)
        os.rmdir(path)
        return fd

    # fewer attempts than the real 64 (whose growing pauses cost ~0.7 s): still past the
    # first pauses, and the give-up is the same code
    monkeypatch.setattr(_filelock, "DIR_RACE_ATTEMPTS", 8)
    calls.clear()
    with pytest.raises(StoreError, match="cannot create the write lock file"):
        with _filelock.ObjectFileLock(str(d), "3", "c/0/3", 5.0, always_gone):
            pass
    assert len(calls) == 8  # gave up after exactly DIR_RACE_ATTEMPTS
