"""Advisory write locks between processes for ``LocalStore`` (issue 24: writers that
share a shard or a chunk must both land).

One lock file per directory that holds stored objects, ``<dir>/.zarrcy-tmp-lock`` (the
temp-file prefix: refused as a key component and skipped by every listing, so it can
never be mistaken for a key), and in it one byte per object: the lock of the object
``<dir>/<name>`` is a write lock on the byte at offset ``hash(name) mod 2**62`` (two
names that share a byte only wait for each other: exclusion is never lost, and each
writer holds one lock at a time, so no deadlock).

The locks are Linux *open file description* locks (``F_OFD_SETLK``): unlike classic
POSIX ``lockf`` locks they belong to one ``open()``, so they also exclude two threads
of one process, are not dropped when some other descriptor of the file is closed, and
are shared by nothing but that descriptor.  Every acquisition opens the lock file
afresh (~5 us) and closes it after unlocking; a forked child closes the descriptors of
locks its parent's threads held (their writes do not exist in the child), so a child
can never share, or release, a lock of its parent.  Elsewhere (no OFD locks) classic
``flock`` on the whole lock file is used: correct, but writers of different objects in
one directory then wait for each other.

Waiting polls a non-blocking request with a growing pause (50 us .. 20 ms) until the
timeout, then raises :class:`~zarrcy.errors.LockTimeoutError` naming the key.

Lock files are removed only by :func:`remove_if_unused` (by every releasing writer and
by the store's pruning of empty directories): it takes a lock on the *whole* file without waiting (so nobody holds or
is about to use any byte of it), unlinks it and releases.  A writer that opened the
file just before checks, once it holds its byte, that the path still names the inode
it locked, and starts over when it does not.
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import struct
import threading
import time
import zlib
from typing import Callable

from zarrcy.config import at_fork_reset
from zarrcy.errors import LockTimeoutError, StoreError

__all__ = ["LOCK_NAME", "ObjectFileLock", "remove_if_unused", "held_in"]

LOCK_NAME = ".zarrcy-tmp-lock"

_O_LOCK = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
#: how often a lock file's creation is retried when a pruner removed its directory meanwhile
DIR_RACE_ATTEMPTS = 64
_OFD_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None)
# struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid
_FLOCK = "hhqqi"
_SPAN = 1 << 62

# descriptors of locks held by this process (closed unreleased in a forked child)
_held: set[int] = set()
_held_guard = threading.Lock()
# the locks this thread holds (innermost last)
_mine = threading.local()


@at_fork_reset
def _reset_after_fork() -> None:
    global _held_guard
    _held_guard = threading.Lock()
    for fd in list(_held):
        try:
            os.close(fd)  # the parent still holds the lock through its own descriptor
        except OSError:
            pass
    _held.clear()
    _mine.__dict__.clear()  # (the forking thread's list: its locks are the parent's)


def held_in(dirpath: str) -> "ObjectFileLock | None":
    """The lock this thread holds in the directory ``dirpath``, if any: a store that
    empties the directory while holding it leaves the pruning to its release
    (``prune_after``), since its own lock keeps the lock file in use."""
    for lock in getattr(_mine, "locks", ()):
        if lock.dirpath == dirpath:
            return lock
    return None


def _offset(name: str) -> int:
    """The byte of ``name`` in its directory's lock file (stable across processes and
    runs: not Python's salted ``hash``)."""
    b = name.encode("utf-8", "surrogatepass")
    return ((zlib.crc32(b) << 32) | zlib.adler32(b)) % _SPAN


def _try(fd: int, kind: int, start: int, length: int) -> bool:
    """One non-blocking lock request; False if someone else holds a conflicting lock."""
    try:
        if _OFD_SETLK is not None:
            fcntl.fcntl(fd, _OFD_SETLK, struct.pack(_FLOCK, kind, os.SEEK_SET, start, length, 0))
        else:  # pragma: no cover - not Linux: whole-file flock
            op = fcntl.LOCK_UN if kind == fcntl.F_UNLCK else fcntl.LOCK_EX
            fcntl.flock(fd, op | (fcntl.LOCK_NB if kind != fcntl.F_UNLCK else 0))
        return True
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` still names the file open as ``fd``.  Both sides come from
    ``fstat`` of descriptors (the path opened ``O_PATH``, not followed): one kind of
    stat, so the answer cannot depend on how ``os.stat`` of a path is served."""
    try:
        pfd = os.open(path, getattr(os, "O_PATH", os.O_RDONLY) | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return False
    try:
        a, b = os.fstat(fd), os.fstat(pfd)
    finally:
        os.close(pfd)
    return a.st_ino == b.st_ino and a.st_dev == b.st_dev


class ObjectFileLock:
    """``with ObjectFileLock(dirpath, name, key, timeout, open_dir):`` -- the lock of
    the object ``name`` in ``dirpath`` (``key`` is only for messages).  ``open_dir``
    is the store's "open this directory (checked inside the root), creating it if
    missing" and returns a descriptor; the lock file is opened relative to it, so it
    is contained exactly as the object itself."""

    __slots__ = ("dirpath", "name", "key", "timeout", "open_dir", "fd", "start", "prune_after")

    def __init__(self, dirpath: str, name: str, key: str, timeout: float, open_dir: Callable[[str], int]) -> None:
        self.dirpath, self.name, self.key, self.timeout, self.open_dir = dirpath, name, key, timeout, open_dir
        self.fd = -1
        self.start = _offset(name)
        #: called after the release when the holder emptied the directory meanwhile
        self.prune_after: Callable[[], None] | None = None

    def _open(self) -> int:
        """The lock file, created in the object's directory.  Another writer's pruning
        may remove the (then empty) directory between opening it and creating the file
        in it (ENOENT through a descriptor of a removed directory): open it again --
        ``open_dir`` re-creates it -- after a short random pause, as the store's own
        directory creation does."""
        for attempt in range(DIR_RACE_ATTEMPTS):
            dfd = self.open_dir(self.dirpath)
            try:
                return os.open(LOCK_NAME, _O_LOCK, 0o666, dir_fd=dfd)
            except FileNotFoundError as e:
                if attempt + 1 == DIR_RACE_ATTEMPTS:
                    raise self._error(e) from e
            except OSError as e:
                raise self._error(e) from e
            finally:
                os.close(dfd)
            if attempt >= 4:
                time.sleep(random.uniform(0, 1e-4 * (1 << min(attempt - 4, 8))))
        raise AssertionError("unreachable")  # pragma: no cover

    def _error(self, e: OSError) -> StoreError:
        return StoreError(f"{self.key}: cannot create the write lock file {os.path.join(self.dirpath, LOCK_NAME)!r} "
                          f"({e.strerror}); writers sharing chunks need it (zarrcy.config(write_locks=False) "
                          "turns the locks off for single-writer jobs)")

    def __enter__(self) -> "ObjectFileLock":
        deadline = time.monotonic() + self.timeout
        pause = 50e-6
        lock_path = os.path.join(self.dirpath, LOCK_NAME)
        while True:
            fd = self._open()
            try:
                while not _try(fd, fcntl.F_WRLCK, self.start, 1):
                    now = time.monotonic()
                    if now >= deadline:
                        raise LockTimeoutError(
                            f"{self.key}: another writer held the write lock ({lock_path!r}) for more than "
                            f"{self.timeout:g} s (zarrcy.config(write_lock_timeout=...))")
                    time.sleep(min(pause, deadline - now))
                    pause = min(pause * 2, 0.02)
                if _same_file(fd, lock_path):  # not removed by a pruner meanwhile
                    break
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # locked a removed file: start over with the current one
        with _held_guard:
            _held.add(fd)
        self.fd = fd
        _mine.__dict__.setdefault("locks", []).append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        fd, self.fd = self.fd, -1
        locks = getattr(_mine, "locks", [])
        if self in locks:
            locks.remove(self)
        with _held_guard:
            _held.discard(fd)
        os.close(fd)  # drops every lock of this descriptor
        remove_if_unused(path=os.path.join(self.dirpath, LOCK_NAME))
        prune, self.prune_after = self.prune_after, None
        if prune is not None:
            prune()


def remove_if_unused(dfd: int | None = None, path: str = LOCK_NAME) -> bool:
    """Unlink the lock file ``path`` (relative to the directory ``dfd``, or a full path)
    if no writer holds a byte of it (a whole-file lock taken without waiting); True if
    it is gone.  Every releasing writer calls it after letting go, so the last one out
    removes the file even when releases overlap (a probe can only fail because another
    holds the file -- and that one removes it); the store's pruning of empty directories
    calls it too.  Nobody else can unlink the file while we hold it whole, so the path
    still names it; a writer that opened it and locks it after us sees that the path no
    longer names it (``_same_file``) and starts over with a new file."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dfd)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if not _try(fd, fcntl.F_WRLCK, 0, 0):  # length 0: to the end of any file size
            return False
        try:
            os.unlink(path, dir_fd=dfd)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        return True
    finally:
        os.close(fd)  # closing drops the whole-file lock
