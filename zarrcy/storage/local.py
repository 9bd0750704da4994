"""``LocalStore``: the file system store (v3-store-filesystem.rst).

Key ``"a/b/c"`` is the file ``<root>/a/b/c``; listing walks directories and maps paths
back to keys.  Beyond the spec:

* **Atomic writes.**  ``set`` writes a temporary file in the key's directory, named
  ``.zarrcy-tmp-<pid>-<thread id>-<counter>-<random>`` (the prefix is refused as a key
  component and skipped by listings, so it can never be mistaken for a key), then
  ``os.replace``s it over the key: readers see the whole old or the whole new value.
  A crash (even SIGKILL) leaves the old or the new value, at worst plus a stray temp
  file (``remove_temp_files()`` deletes those).  ``fsync=True`` additionally fsyncs the
  file before the rename and the directory after it (durability across power loss;
  off by default because it costs milliseconds per write).
* **Containment.**  Keys are validated before any file access (see ``_common``), and
  every file or directory actually opened is checked to lie under the real root, so a
  symlink inside the store that points outside is refused with ``StoreError``.  On
  Linux the check reads ``/proc/self/fd/<fd>`` of the already open descriptor (one
  ``readlink``, ~2 us, and immune to races); elsewhere it falls back to
  ``os.path.realpath`` (~20 us per call).  Symlinks that stay inside the root work.
* **Fast paths.**  ``get`` is open + fstat + read (+ the containment readlink): no
  exists/stat calls before (measured: ~9 us for a 1 KB value on tmpfs, of which ~2 us
  is the containment check; a missing key ~4.5 us; ``set`` ~19 us).  ``set`` creates missing parent directories only after the
  first attempt fails with ENOENT.  Ranges use ``pread``; ``get_partial_values`` opens
  each file once for all its ranges.
* ``set_partial_values`` (``supports_partial_writes``) writes in place with ``pwrite``
  (creating the file if missing).  It is NOT atomic: a crash can leave a partly written
  range; callers (the sharding codec's append strategy) must detect that themselves.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import itertools
import os
import stat
import threading
import time
from typing import Callable, ContextManager, Hashable, Iterable, Iterator, NoReturn, Sequence
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from zarrcy.byte_access import ValueSnapshot
from zarrcy.byte_range import ByteRequest, RangeRequest
from zarrcy.config import get as _config_get
from zarrcy.errors import StoreError, expected
from zarrcy.storage import _filelock
from zarrcy.storage._base import Buffer, Store, check_splice_part
from zarrcy.storage._common import as_bytes_view, check_key, check_prefix, resolve_range

__all__ = ["LocalStore", "TEMP_PREFIX", "local_path_from_url"]

TEMP_PREFIX = ".zarrcy-tmp-"

_O_READ = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_O_TMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_O_RW = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_MAX_READ = 1 << 30  # read in pieces below Linux's ~2 GiB per-call limit
_SEP = os.sep
_counter = itertools.count()
_RETRIES = 64  # attempts when a concurrent erase keeps pruning the directory we write into


def _proc_fd_works() -> bool:
    try:
        fd = os.open(os.path.dirname(os.path.abspath(__file__)), _O_DIR)
    except OSError:
        return False
    try:
        return os.path.isabs(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return False
    finally:
        os.close(fd)


_PROC_FD = _proc_fd_works()
_DIR_FD = _PROC_FD and os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd and os.unlink in os.supports_dir_fd
_SCANDIR_FD = os.scandir in os.supports_fd


def _only_lock_file(dirpath: str) -> bool:
    """True if ``dirpath`` holds nothing but a write-lock file, which was then removed
    (unused: see ``_filelock.remove_if_unused``).  Stops at the first other entry, so a
    directory full of chunks costs one ``getdents``."""
    try:
        with os.scandir(dirpath) as it:
            for entry in it:
                if entry.name != _filelock.LOCK_NAME:
                    return False
        dfd = os.open(dirpath, _O_DIR)
    except OSError:
        return False
    try:
        return _filelock.remove_if_unused(dfd)
    finally:
        os.close(dfd)


def local_path_from_url(url: str) -> str:
    """The file system path of a ``file://`` URL (RFC 8089; host must be empty or localhost)."""
    parsed = urlparse(url)
    if parsed.scheme != "file":
        raise StoreError(expected("url", "a file:// URL", url))
    if parsed.netloc not in ("", "localhost"):
        raise StoreError(expected("url", "a file:// URL on this machine (no host)", url))
    if parsed.query or parsed.fragment:
        raise StoreError(expected("url", "a file:// URL without query or fragment", url))
    path = url2pathname(parsed.path) if _SEP != "/" else unquote(parsed.path)
    if not path:
        raise StoreError(expected("url", "a file:// URL with a path", url))
    return path


class LocalStore(Store):
    """A directory on the local file system as a Zarr store.

    ``LocalStore(root, read_only=False, create=True, fsync=False)``; ``root`` is a path or
    a ``file://`` URL.  ``create=True`` makes the root directory now (writable stores
    only); otherwise it is created by the first write.  A read-only store with a missing
    root is simply empty.
    """

    supports_writes = True
    supports_deletes = True
    supports_partial_reads = True
    supports_partial_writes = True
    supports_listing = True

    def __init__(self, root: str | os.PathLike[str], *, read_only: bool = False, create: bool = True, fsync: bool = False) -> None:
        super().__init__(read_only=read_only)
        if isinstance(root, str) and root.startswith("file:"):
            root = local_path_from_url(root)
        try:
            root = os.fspath(root)
        except TypeError:
            raise StoreError(expected("root", "a path or file:// URL", root)) from None
        if isinstance(root, bytes) or not root or "\x00" in root:
            raise StoreError(expected("root", "a non-empty str path", root))
        self.root = os.path.abspath(root)
        self.fsync = bool(fsync)
        if create and not read_only:
            try:
                os.makedirs(self.root, exist_ok=True)
            except OSError as e:
                raise StoreError(f"{self.root}: cannot create the store root: {e}") from e
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            raise StoreError(expected("root", "a directory", self.root))
        self._set_real_root()

    def _set_real_root(self) -> None:
        real = os.path.realpath(self.root)
        self._real_root = real
        self._real_prefix = real if real.endswith(_SEP) else real + _SEP
        self._prefix = self.root if self.root.endswith(_SEP) else self.root + _SEP

    # -- identity ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        url = self.__dict__.get("_url")
        if url is None:  # computed once: the root never changes
            from pathlib import Path

            url = self.__dict__["_url"] = Path(self.root).as_uri()
        return url

    def __repr__(self) -> str:
        return f"LocalStore({self.root!r}{', read_only=True' if self.read_only else ''})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalStore) and other.root == self.root and other.read_only == self.read_only

    def __hash__(self) -> int:
        return hash((LocalStore, self.root, self.read_only))

    def __reduce__(self) -> tuple[Callable[[str, bool, bool], LocalStore], tuple[str, bool, bool]]:
        return (_reopen, (self.root, self.read_only, self.fsync))

    def with_read_only(self, read_only: bool = True) -> "LocalStore":
        """The same directory with another ``read_only`` flag (never creates the root)."""
        return LocalStore(self.root, read_only=read_only, create=False, fsync=self.fsync)

    def lock_key(self, key: str) -> object:
        """The resolved path of ``key``'s file (symlinks in the root, the directories and
        the file itself followed, as ``os.path.realpath``; a missing tail is kept as
        written), so writers through a symlinked root or directory share one lock.
        Not the file's inode: an atomic replace gives every version a new one, and a
        file that does not exist yet has none.  Bind mounts and hard links are not
        unified.  Cost: one ``stat`` + one ``lstat`` -- the resolved directory is
        cached while the directory's (device, inode) stays the same."""
        path = self._path(key)
        dirpath, name = os.path.split(path)
        try:
            st = os.stat(dirpath)
        except (OSError, ValueError):  # not created yet: resolve the part that exists
            return ("file", os.path.realpath(path))
        cache = self.__dict__.setdefault("_real_dirs", {})
        hit = cache.get(dirpath)
        if hit is None or hit[0] != st.st_ino or hit[1] != st.st_dev:
            if len(cache) >= 4096:
                cache.clear()
            hit = cache[dirpath] = (st.st_ino, st.st_dev, os.path.realpath(dirpath))
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):  # the file itself is a symlink
                return ("file", os.path.realpath(path))
        except (OSError, ValueError):
            pass
        return ("file", os.path.join(hit[2], name))

    def write_lock(self, key: str) -> ContextManager[object]:
        """``Store.write_lock``: the advisory lock of ``key``'s file, a byte of the lock
        file ``.zarrcy-tmp-lock`` in its directory (``zarrcy/storage/_filelock.py``);
        nothing when ``zarrcy.config(write_locks=False)``."""
        if not _config_get("write_locks"):
            return contextlib.nullcontext()
        path = self._path(key)
        dirpath, name = path.rsplit(_SEP, 1)
        return _filelock.ObjectFileLock(dirpath, name, key, float(_config_get("write_lock_timeout")), self._open_dir)

    # -- paths and containment -----------------------------------------------------------
    def _path(self, key: str) -> str:
        check_key(key)
        if TEMP_PREFIX in key:
            for part in key.split("/"):
                if part.startswith(TEMP_PREFIX):
                    raise StoreError(expected("key", f"no component starting with {TEMP_PREFIX!r}", key))
        if _SEP != "/":  # Windows: the native separator and drive colons must not be key characters
            if _SEP in key or ":" in key:
                raise StoreError(expected("key", "no '\\\\' or ':' on this platform", key))
            key = key.replace("/", _SEP)
        return self._prefix + key

    def _inside(self, real: str, allow_root: bool = False) -> bool:
        if real.startswith(self._real_prefix) or (allow_root and real == self._real_root):
            return True
        # the root may have been re-created/moved since we resolved it: retry once
        old = self._real_root
        self._set_real_root()
        if self._real_root != old:
            return real.startswith(self._real_prefix) or (allow_root and real == self._real_root)
        return False

    def _check_fd(self, fd: int, path: str, allow_root: bool = False) -> str:
        """Raise StoreError if the open descriptor ``fd`` lies outside the real root;
        return its real path."""
        if _PROC_FD:
            real = os.readlink(f"/proc/self/fd/{fd}")  # the kernel's resolved path of what we opened
        else:
            real = os.path.realpath(path)
        if not self._inside(real, allow_root):
            raise StoreError(f"{path}: resolves to {real!r}, outside the store root {self._real_root!r} (symlink?)")
        return real

    def _scan_checked(self, path: str) -> tuple[builtins.list[os.DirEntry[str]], str] | None:
        """``(entries, real path)`` of the directory ``path`` after checking it lies inside
        the root (None if it is missing or not a directory).  With /proc: scandir of the
        checked descriptor (one readlink, however deep the directory: ``realpath``
        costs an lstat per level, which made walking a deep hierarchy quadratic)."""
        try:
            if _PROC_FD and _SCANDIR_FD:
                dfd = os.open(path, _O_DIR)
                try:
                    real = self._check_fd(dfd, path, allow_root=True)
                    with os.scandir(dfd) as it:
                        return list(it), real
                finally:
                    os.close(dfd)
            self._check_path(path, allow_root=True)
            with os.scandir(path) as it:
                return list(it), os.path.realpath(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            if isinstance(e, StoreError):
                raise
            raise StoreError(f"{path}: cannot list: {e}") from e

    def _check_path(self, path: str, allow_root: bool = False) -> None:
        real = os.path.realpath(path)
        if not self._inside(real, allow_root):
            raise StoreError(f"{path}: resolves to {real!r}, outside the store root {self._real_root!r} (symlink?)")

    def _open_read(self, key: str) -> tuple[int, int]:
        """``(fd, size)`` of the regular file of ``key`` (checked), or ``(-1, 0)`` if there is none."""
        fd, st = self._open_read_stat(key)
        return fd, (st.st_size if st is not None else 0)

    def _open_read_stat(self, key: str) -> tuple[int, os.stat_result | None]:
        """``(fd, fstat)`` of the regular file of ``key`` (checked), or ``(-1, None)``."""
        path = self._path(key)
        try:
            fd = os.open(path, _O_READ)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return -1, None
        except OSError as e:
            if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG, errno.ELOOP):
                return -1, None
            raise StoreError(f"{path}: cannot open: {e}") from e
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):  # directories, fifos, devices are not keys
                os.close(fd)
                return -1, None
            self._check_fd(fd, path)
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def cache_token(self, key: str) -> Hashable | None:
        """The stat token of ``key``'s file (``_FileSnapshot``'s rule), without opening
        it; a path resolving outside the root can only match entries read through a
        checked descriptor of the same inode."""
        start = _now_ns()
        try:
            st = os.stat(self._path(key))
        except (OSError, ValueError):
            return None
        return _stat_token(st, start)

    def snapshot(self, key: str) -> "_FileSnapshot":
        """Reads of the file ``key`` names now, through one open descriptor: a
        concurrent replace (temp + rename, by any process) cannot mix versions, since
        the descriptor keeps the inode it opened."""
        return _FileSnapshot(self, key)

    def truncate(self, key: str, length: int, identity: object | None = None) -> None:
        """Cut the file back to ``length`` bytes (undo of a failed in-place append); with
        ``identity`` ((st_dev, st_ino) of a snapshot), only if the key is still that file."""
        self._check_writable()
        path = self._path(key)
        try:
            fd = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            raise StoreError(f"{path}: cannot open for truncate: {e}") from e
        try:
            self._check_fd(fd, path)
            if identity is not None:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) != identity:
                    raise StoreError(f"{path}: replaced meanwhile; not truncated")
            os.ftruncate(fd, length)
            if self.fsync:
                os.fsync(fd)
        except OSError as e:
            if isinstance(e, StoreError):
                raise
            raise StoreError(f"{path}: truncate failed: {e}") from e
        finally:
            os.close(fd)

    # -- reads ---------------------------------------------------------------------------
    def version(self, key: str) -> object | None:
        """(inode, size, mtime_ns): a hint, not a proof -- ext4 reuses a freed inode at
        once (temp + rename alternates two), a rewrite may keep the size, and mtime is
        coarse on some file systems, so a token can repeat across versions.  Readers that
        must not mix versions read through one descriptor (:meth:`snapshot`) instead."""
        try:
            st = os.stat(self._path(key))
        except (OSError, ValueError):
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None

    def get(self, key: str, byte_range: ByteRequest = None) -> bytes | None:
        fd, size = self._open_read(key)
        if fd < 0:
            return None
        try:
            if byte_range is None:
                return _pread_exact(fd, 0, size)
            start, stop = resolve_range(byte_range, size)
            return _pread_exact(fd, start, stop - start)
        except OSError as e:
            if isinstance(e, StoreError):
                raise
            raise StoreError(f"{self._path(key)}: read failed: {e}") from e
        finally:
            os.close(fd)

    def get_partial_values(self, key_ranges: Sequence[tuple[str, ByteRequest]]) -> list[bytes | None]:
        """Ranges of several keys; each file is opened once for all of its ranges."""
        out: list[bytes | None] = [None] * len(key_ranges)
        by_key: dict[str, list[int]] = {}
        for i, (key, _) in enumerate(key_ranges):
            by_key.setdefault(key, []).append(i)
        for key, idxs in by_key.items():
            fd, size = self._open_read(key)
            if fd < 0:
                continue
            try:
                for i in idxs:
                    start, stop = resolve_range(key_ranges[i][1], size)
                    out[i] = _pread_exact(fd, start, stop - start)
            except OSError as e:
                if isinstance(e, StoreError):
                    raise
                raise StoreError(f"{self._path(key)}: read failed: {e}") from e
            finally:
                os.close(fd)
        return out

    def exists(self, key: str) -> bool:
        fd, _ = self._open_read(key)
        if fd < 0:
            return False
        os.close(fd)
        return True

    def getsize(self, key: str) -> int | None:
        """Size in bytes of ``key``'s value, or None if missing."""
        fd, size = self._open_read(key)
        if fd < 0:
            return None
        os.close(fd)
        return size

    # -- writes --------------------------------------------------------------------------
    def _open_dir(self, dirpath: str) -> int:
        """An fd on the (checked) directory ``dirpath``, creating it if missing."""
        for attempt in range(_RETRIES):
            try:
                dfd = os.open(dirpath, _O_DIR)
                break
            except FileNotFoundError:
                made = self._makedirs(dirpath, keep_fd=True)
                if made >= 0:
                    return made  # the directory just made, reached from a checked one
            except NotADirectoryError as e:
                raise StoreError(f"{dirpath}: a parent of the key is a file, not a directory") from e
            except OSError as e:
                raise StoreError(f"{dirpath}: cannot open directory: {e}") from e
        else:  # pragma: no cover - a concurrent eraser kept removing the directory
            raise StoreError(f"{dirpath}: directory vanished repeatedly while writing")
        try:
            self._check_fd(dfd, dirpath, allow_root=True)
        except BaseException:
            os.close(dfd)
            raise
        return dfd

    def _makedirs(self, dirpath: str, keep_fd: bool = False) -> int:
        """Create ``dirpath`` and its missing parents (slow path: a write found no
        directory).  Iterative and linear in the depth: walk up to the deepest existing
        directory, check THAT one lies inside the root (an open descriptor, one
        readlink), then ``mkdir`` each missing level below it, relative to the previous
        level's descriptor (no symlink followed) -- not ``os.makedirs``, which recurses
        once per level (RecursionError at ~1,000), nor a ``realpath`` per level
        (quadratic: 7.6 s at 800 levels, issue 23.6).  ``keep_fd``: return a descriptor
        of ``dirpath`` (-1 where directory descriptors are not used) instead of -1."""
        for attempt in range(_RETRIES):
            if attempt >= 4:  # erasers keep pruning in step with us: break the rhythm
                time.sleep(int.from_bytes(os.urandom(2), "little") * attempt * 1e-8)
            try:
                fd = self._makedirs_once(dirpath, keep_fd)
                if fd is not None:
                    return fd
            except NotADirectoryError as e:
                raise StoreError(f"{dirpath}: a parent of the key is a file, not a directory") from e
            except OSError as e:
                if isinstance(e, StoreError):
                    raise
                raise StoreError(f"{dirpath}: cannot create directory: {e}") from e
        raise StoreError(f"{dirpath}: directory vanished repeatedly while writing")  # pragma: no cover

    def _makedirs_once(self, dirpath: str, keep_fd: bool) -> int | None:
        """One attempt of :meth:`_makedirs`; None when a concurrent erase pruned a
        directory meanwhile (try again)."""
        missing: list[str] = []
        p = dirpath
        if keep_fd and dirpath != self.root:  # opening ``dirpath`` found nothing: start at its parent
            p, name = p.rsplit(_SEP, 1)
            missing.append(name)
        while True:
            try:
                st = os.stat(p)
            except FileNotFoundError:
                if p == self.root or not p.startswith(self._prefix):
                    os.makedirs(self.root, exist_ok=True)  # a store opened with create=False
                    continue
                p, name = p.rsplit(_SEP, 1)
                missing.append(name)
                continue
            if not stat.S_ISDIR(st.st_mode):
                raise StoreError(f"{dirpath}: a parent of the key is a file, not a directory")
            break
        if not _DIR_FD:  # portable path: one realpath of the existing part, then mkdir down
            self._check_path(p, allow_root=True)
            for name in reversed(missing):
                p = p + _SEP + name
                try:
                    os.mkdir(p)
                except FileExistsError:
                    try:
                        if not stat.S_ISDIR(os.stat(p).st_mode):  # one call: no check-then-use race
                            raise StoreError(f"{dirpath}: a parent of the key is a file, not a directory") from None
                    except FileNotFoundError:
                        return None  # pruned by a concurrent erase meanwhile
                except FileNotFoundError:
                    return None
            return -1
        try:
            dfd = os.open(p, _O_DIR)
        except FileNotFoundError:
            return None
        try:
            self._check_fd(dfd, p, allow_root=True)
            for name in reversed(missing):
                try:
                    os.mkdir(name, dir_fd=dfd)
                except FileExistsError:
                    pass  # made meanwhile by another writer (or a file: the open below says)
                except FileNotFoundError:
                    return None  # ``dfd``'s directory was pruned by a concurrent erase
                try:
                    nfd = os.open(name, _O_DIR | _O_NOFOLLOW, dir_fd=dfd)
                except FileNotFoundError:
                    return None  # pruned by a concurrent erase
                except OSError as e:
                    if e.errno in (errno.ENOTDIR, errno.ELOOP):
                        raise StoreError(f"{dirpath}: a parent of the key is a file, not a directory") from e
                    raise
                os.close(dfd)
                dfd = nfd
            if keep_fd:
                fd, dfd = dfd, -1
                return fd
        finally:
            if dfd >= 0:
                os.close(dfd)
        return -1

    @staticmethod
    def _temp_name() -> str:
        return f"{TEMP_PREFIX}{os.getpid()}-{threading.get_ident()}-{next(_counter)}-{os.urandom(4).hex()}"

    def set(self, key: str, value: Buffer) -> None:
        self._check_writable()
        path = self._path(key)
        data = as_bytes_view(value)
        self._replace(path, lambda fd: _write_all(fd, data))

    def set_spliced(self, key: str, parts: Sequence[Buffer | tuple[int, int]], source: ValueSnapshot | None = None) -> None:
        """``Store.set_spliced``: the ranges are copied inside the kernel
        (``os.copy_file_range``; ``pread``/``pwrite`` where the file system refuses) from
        the descriptor of ``source`` -- the very inode the caller read, even if ``key``
        was replaced since -- into the temp file, which then replaces ``key`` exactly as
        in ``set`` (fsync policy, atomic rename: a crash leaves the old or the new value).
        A source shorter than a range raises StoreError and replaces nothing."""
        self._check_writable()
        if source is not None and not (isinstance(source, _FileSnapshot) and source.store.root == self.root and source.key == key):
            super().set_spliced(key, parts, source)  # not a snapshot of this file: read + join
            return
        path = self._path(key)
        items: list[tuple[int, int] | memoryview] = [
            check_splice_part(key, p) if isinstance(p, tuple) else as_bytes_view(p) for p in parts
        ]
        need = any(isinstance(p, tuple) for p in items)
        own = -1
        if source is not None:
            src, size = source.fd, source.size
            if need and src < 0:
                raise StoreError(expected(f"{path}: the value being replaced", "present", "missing"))
        elif need:
            own, st = self._open_read_stat(key)
            if own < 0:
                raise StoreError(expected(f"{path}: the value being replaced", "present", "missing"))
            src, size = own, (st.st_size if st is not None else 0)
        else:
            src, size = -1, 0
        try:
            for p in items:
                if isinstance(p, tuple) and p[1] > (size or 0):
                    raise StoreError(expected(f"{path}: bytes [{p[0]}, {p[1]}) of the value being replaced",
                                              f"within its {size} bytes", "past the end"))
            self._replace(path, lambda fd: _write_parts(fd, items, src, path))
        finally:
            if own >= 0:
                os.close(own)

    def _replace(self, path: str, write: Callable[[int], None]) -> None:
        """Create a temp file next to ``path``, ``write(fd)`` its content, (fsync,)
        rename it over ``path`` (atomic); on any error the temp file is removed."""
        dirpath, name = path.rsplit(_SEP, 1)
        tmp = self._temp_name()
        if _DIR_FD:
            for attempt in range(_RETRIES):
                dfd = self._open_dir(dirpath)
                try:
                    try:
                        fd = os.open(tmp, _O_TMP, 0o666, dir_fd=dfd)
                    except FileNotFoundError:  # a concurrent erase removed the empty directory
                        continue
                    try:
                        try:
                            write(fd)
                            if self.fsync:
                                os.fsync(fd)
                        finally:
                            os.close(fd)
                        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                    except BaseException as e:
                        try:
                            os.unlink(tmp, dir_fd=dfd)
                        except OSError:
                            pass
                        if isinstance(e, IsADirectoryError) or getattr(e, "errno", None) in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
                            raise StoreError(f"{path}: is a directory, cannot be written as a key") from e
                        if isinstance(e, OSError) and not isinstance(e, StoreError):
                            raise StoreError(f"{path}: write failed: {e}") from e
                        raise
                    if self.fsync:
                        os.fsync(dfd)
                    return
                finally:
                    os.close(dfd)
            raise StoreError(f"{dirpath}: directory vanished repeatedly while writing")  # pragma: no cover
        else:  # portable path: check the directory by realpath, then temp + replace
            self._set_portable(path, dirpath, tmp, write)

    def _set_portable(self, path: str, dirpath: str, tmp: str, write: Callable[[int], None]) -> None:
        tmppath = dirpath + _SEP + tmp
        for attempt in range(_RETRIES):
            self._check_path(dirpath, allow_root=True)
            try:
                fd = os.open(tmppath, _O_TMP, 0o666)
                break
            except FileNotFoundError:
                self._makedirs(dirpath)
            except NotADirectoryError as e:
                raise StoreError(f"{dirpath}: a parent of the key is a file, not a directory") from e
        else:  # pragma: no cover
            raise StoreError(f"{dirpath}: directory vanished repeatedly while writing")
        try:
            try:
                write(fd)
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmppath, path)
        except BaseException as e:
            try:
                os.unlink(tmppath)
            except OSError:
                pass
            if isinstance(e, OSError) and not isinstance(e, StoreError):
                raise StoreError(f"{path}: write failed: {e}") from e
            raise

    def set_partial_values(self, key_start_values: Sequence[tuple[str, int, Buffer]]) -> None:
        """Write each value at its byte offset in place (``pwrite``; not atomic, see module doc)."""
        self._check_writable()
        by_key: dict[str, list[tuple[int, Buffer]]] = {}
        for key, start, value in key_start_values:
            if type(start) is not int or start < 0:
                raise StoreError(expected(f"{key}: start", "a non-negative int", start))
            by_key.setdefault(key, []).append((start, value))
        for key, items in by_key.items():
            path = self._path(key)
            dirpath = path.rsplit(_SEP, 1)[0]
            for attempt in range(_RETRIES):
                try:
                    fd = os.open(path, _O_RW, 0o666)
                    break
                except FileNotFoundError:
                    self._makedirs(dirpath)
                except IsADirectoryError as e:
                    raise StoreError(f"{path}: is a directory, cannot be written as a key") from e
                except NotADirectoryError as e:
                    raise StoreError(f"{dirpath}: a parent of the key is a file, not a directory") from e
                except OSError as e:
                    raise StoreError(f"{path}: cannot open for writing: {e}") from e
            else:  # pragma: no cover
                raise StoreError(f"{dirpath}: directory vanished repeatedly while writing")
            try:
                self._check_fd(fd, path)
                if os.fstat(fd).st_nlink > 1:
                    # another name (maybe outside the store) shares this inode: an
                    # in-place write would change it too (issue 12.11)
                    raise StoreError(f"{path}: has {os.fstat(fd).st_nlink} hard links; refusing an in-place write")
                for start, value in items:
                    mv = as_bytes_view(value)
                    if not len(mv) and os.fstat(fd).st_size < start:
                        os.ftruncate(fd, start)  # an empty write still extends, as in MemoryStore
                    written = 0
                    while written < len(mv):
                        written += os.pwrite(fd, mv[written:], start + written)
                if self.fsync:
                    os.fsync(fd)
            except OSError as e:
                if isinstance(e, StoreError):
                    raise
                raise StoreError(f"{path}: partial write failed: {e}") from e
            finally:
                os.close(fd)

    # -- deletes -------------------------------------------------------------------------
    def erase(self, key: str) -> None:
        self._check_writable()
        path = self._path(key)
        dirpath, name = path.rsplit(_SEP, 1)
        self._unlink(path, dirpath, name)
        # drop directories left empty, so listings never show prefixes without keys
        # (usually one failing rmdir: ENOTEMPTY); writers recreate them on demand
        self._prune({dirpath})

    def _unlink(self, path: str, dirpath: str, name: str) -> None:
        if _DIR_FD:
            try:
                dfd = os.open(dirpath, _O_DIR)
            except (FileNotFoundError, NotADirectoryError):
                return
            except OSError as e:
                raise StoreError(f"{dirpath}: cannot open directory: {e}") from e
            try:
                self._check_fd(dfd, dirpath, allow_root=True)
                os.unlink(name, dir_fd=dfd)
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                pass
            except OSError as e:
                if isinstance(e, StoreError):
                    raise
                if e.errno not in (errno.EISDIR, errno.EPERM) or not os.path.isdir(path):
                    raise StoreError(f"{path}: cannot erase: {e}") from e
            finally:
                os.close(dfd)
        else:
            try:
                self._check_path(dirpath, allow_root=True)
                os.unlink(path)
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
                if os.path.isfile(path):
                    raise
            except OSError as e:
                if isinstance(e, StoreError):
                    raise
                raise StoreError(f"{path}: cannot erase: {e}") from e

    def erase_values(self, keys: Iterable[str]) -> None:
        self._check_writable()
        keys = list(keys)
        for k in keys:
            self._path(k)  # validate all before erasing any
        for k in keys:
            self.erase(k)

    def erase_prefix(self, prefix: str) -> None:
        """Erase every key starting with ``prefix``, then the directories left empty.

        ``""`` empties the store but keeps the root directory.  Symlinks found while
        walking (including the prefix's own directory) are removed themselves, never
        followed; a symlinked directory *above* the prefix is resolved like any key
        path (within the root).  In-flight temp files of concurrent writers are left
        alone.
        """
        self._check_writable()
        check_prefix(prefix)
        if prefix.endswith("/"):
            top = self._path(prefix[:-1])
            if os.path.islink(top):  # the prefix's directory is a link: remove the link only
                dirpath, name = top.rsplit(_SEP, 1)
                self._unlink(top, dirpath, name)
                self._prune({dirpath})
                return
        dirs: set[str] = set()
        for key in list(self._walk_prefix(prefix, follow=False)):
            path = self._path(key)
            dirpath, name = path.rsplit(_SEP, 1)
            self._unlink(path, dirpath, name)
            dirs.add(dirpath)
        # the directory named by the prefix itself (e.g. "a/" -> "<root>/a") goes too
        if prefix.endswith("/"):
            dirs.add(self._prefix + prefix[:-1].replace("/", _SEP))
        self._prune(dirs)

    def _prune(self, dirs: builtins.set[str]) -> None:
        """rmdir each directory (deepest first) and its parents while empty, never the root.
        A directory holding nothing but an unused write-lock file counts as empty."""
        root, prefix = self.root, self._prefix
        for d in sorted(dirs, key=len, reverse=True):
            while d != root and d.startswith(prefix):
                try:
                    os.rmdir(d)
                except OSError as e:
                    if e.errno != errno.ENOTEMPTY:
                        break
                    mine = _filelock.held_in(d)
                    if mine is not None:  # our own lock keeps its file in use: prune on release
                        mine.prune_after = lambda top=d: self._prune({top})
                        break
                    if not _only_lock_file(d):
                        break
                    try:
                        os.rmdir(d)  # the lock file is gone now (unless a writer came)
                    except OSError:
                        break
                d = d.rsplit(_SEP, 1)[0]

    def remove_temp_files(self) -> int:
        """Delete temp files left by crashed writers (call when no writer is active); returns the count."""
        self._check_writable()
        n = 0
        for dirpath, _dirs, files in os.walk(self.root):
            for f in files:
                if f.startswith(TEMP_PREFIX) and f != _filelock.LOCK_NAME:  # lock files are not debris
                    try:
                        os.unlink(os.path.join(dirpath, f))
                        n += 1
                    except FileNotFoundError:
                        pass
        return n

    # -- listing -------------------------------------------------------------------------
    def list(self) -> Iterator[str]:
        return self._walk_prefix("", follow=True)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """Keys starting with ``prefix``; walks only the subtree of the prefix's directory part."""
        check_prefix(prefix)
        return self._walk_prefix(prefix, follow=True)

    def _walk_prefix(self, prefix: str, follow: bool) -> Iterator[str]:
        dirpart, _, namepart = prefix.rpartition("/")
        start = self._prefix + dirpart.replace("/", _SEP) if dirpart else self.root
        keybase = dirpart + "/" if dirpart else ""
        got = self._scan_checked(start)
        if got is None:
            return
        entries, real = got
        if namepart:
            entries = [e for e in entries if e.name.startswith(namepart)]
        seen = frozenset((real,)) if follow else frozenset()
        yield from self._walk_entries(entries, keybase, follow, seen, start)

    def _walk_entries(self, entries: builtins.list[os.DirEntry[str]], keybase: str, follow: bool,
                      seen: frozenset[str], dirpath: str) -> Iterator[str]:
        """Keys of the files below ``entries`` (of the directory ``dirpath``), depth
        first, without recursion: a stack of directory iterators, so any nesting depth
        works (1,100 nested directories under a chunk prefix used to raise
        RecursionError).  ``seen`` holds the real paths of the symlinked directories on
        the current path (cycle detection)."""
        stack: list[tuple[Iterator[os.DirEntry[str]], str, frozenset[str], str]] = [
            (iter(entries), keybase, seen, dirpath)]
        while stack:
            it, base, seen, here = stack[-1]
            entry = next(it, None)
            if entry is None:
                stack.pop()
                continue
            name = entry.name
            if name.startswith(TEMP_PREFIX):
                continue
            key = base + name
            path = here + _SEP + name  # (entry.path is only the name after a scandir of a descriptor)
            try:
                if entry.is_symlink():
                    if not follow:
                        yield key  # erase_prefix unlinks the link itself
                        continue
                    real = os.path.realpath(path)
                    if not self._inside(real):
                        continue  # a link leading outside the store is not part of it
                    if os.path.isdir(real):
                        if real in seen:
                            continue  # cycle
                        stack.append((iter(self._scandir(path)), key + "/", seen | {real}, path))
                    elif os.path.isfile(real):
                        yield key
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append((iter(self._scandir(path)), key + "/", seen, path))
                    continue
                is_file = entry.is_file(follow_symlinks=False)
            except FileNotFoundError:  # vanished while walking
                continue
            if is_file:
                yield key

    @staticmethod
    def _scandir(path: str) -> builtins.list[os.DirEntry[str]]:
        try:
            with os.scandir(path) as it:
                return list(it)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise StoreError(f"{path}: cannot list: {e}") from e

    def list_dir(self, prefix: str) -> builtins.list[str]:
        """Names of the files and directories directly under ``prefix`` (one scandir), sorted."""
        check_prefix(prefix)
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        path = self._prefix + prefix[:-1].replace("/", _SEP) if prefix else self.root
        got = self._scan_checked(path)
        if got is None:
            return []
        names = []
        for e in got[0]:
            if e.name.startswith(TEMP_PREFIX):
                continue
            if e.is_symlink() and not self._inside(os.path.realpath(path + _SEP + e.name)):
                continue
            names.append(e.name)
        names.sort()
        return names


#: a file whose ctime is less than this before a read began is not cached (the margin
#: covers coarse file-system timestamps -- FAT: 2 s -- and kernel clock ticks)
RACY_NS = 2_000_000_000


def _now_ns() -> int:
    """The wall clock file timestamps come from (tests move it to make files "old")."""
    return time.time_ns()


def _stat_token(st: os.stat_result, start: int) -> Hashable | None:
    """The decoded-chunk cache's token of a regular file, or None when its last change
    is less than ``RACY_NS`` before ``start`` (the read's start)."""
    if not stat.S_ISREG(st.st_mode) or st.st_ctime_ns >= start - RACY_NS:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class _FileSnapshot(ValueSnapshot):
    """``LocalStore.snapshot``: one open descriptor pins one version of the file."""

    pinned = True
    random_access = True

    def __init__(self, store: LocalStore, key: str) -> None:
        self.store = store
        self.key = key
        start = _now_ns()
        self.fd, st = store._open_read_stat(key)
        self.exists = self.fd >= 0
        self.size = st.st_size if st is not None else None
        self.identity = (st.st_dev, st.st_ino) if st is not None else None
        # the decoded-chunk cache's version token (zarrcy/chunk_cache.py): the stat of
        # the pinned inode, trusted only when its last change (ctime: set by the kernel,
        # never by users, forward on every change) lies RACY_NS before this read began
        # (git's racy-entry rule: a change in the same clock tick would keep the token)
        if st is not None:
            self.cache_token = _stat_token(st, start)
        # another hard link shares the inode: in-place writes would change it too
        self.in_place_ok = st is None or st.st_nlink == 1

    def get(self, byte_range: ByteRequest = None) -> bytes | None:
        if self.fd < 0:
            return None
        size = self.size or 0
        try:
            start, stop = (0, size) if byte_range is None else resolve_range(byte_range, size)
            return _pread_exact(self.fd, start, stop - start)
        except OSError as e:
            self._read_failed(e)

    def get_ranges(self, byte_ranges: Sequence[ByteRequest]) -> list[bytes | None]:
        """:meth:`get` of each range; plain ``RangeRequest``s of non-negative ints (what
        the shard reader asks for, many per call) are read with no per-range checks
        beyond the clipping :meth:`get` applies."""
        if self.fd < 0:
            return [None] * len(byte_ranges)
        size = self.size or 0
        out: list[bytes | None] = []
        try:
            for r in byte_ranges:
                if type(r) is RangeRequest and type(r[0]) is int and type(r[1]) is int and r[0] >= 0 and r[1] >= 0:
                    start = r[0] if r[0] < size else size
                    stop = start + r[1] if start + r[1] < size else size
                    out.append(_pread_exact(self.fd, start, stop - start))
                else:
                    out.append(self.get(r))
        except OSError as e:
            self._read_failed(e)
        return out

    def get_owned(self, byte_range: ByteRequest) -> bytearray | None:
        if self.fd < 0:
            return None
        start, stop = resolve_range(byte_range, self.size or 0)
        out = bytearray(max(0, stop - start))
        view = memoryview(out)
        got = 0
        try:
            while got < len(out):
                n = os.preadv(self.fd, [view[got:got + _MAX_READ]], start + got)
                if n <= 0:
                    break
                got += n
        except OSError as e:
            self._read_failed(e)
        finally:
            view.release()
        if got < len(out):
            del out[got:]  # the file shrank: the caller sees a short read, as with get()
        return out

    def _read_failed(self, e: OSError) -> NoReturn:
        """A failed read of the pinned file as a :class:`StoreError` naming it."""
        if isinstance(e, StoreError):
            raise e
        raise StoreError(f"{self.store._path(self.key)}: read failed: {e}") from e

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self.close()


def _pread_exact(fd: int, start: int, length: int) -> bytes:
    """``length`` bytes at ``start`` (fewer only if the file shrank); big reads in pieces."""
    if length <= 0:
        return b""
    if length <= _MAX_READ:
        data = os.pread(fd, length, start)
        if len(data) == length:
            return data
        parts = [data]
        got = len(data)
    else:
        parts, got = [], 0
    while got < length:
        piece = os.pread(fd, min(length - got, _MAX_READ), start + got)
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts)


def _write_all(fd: int, data: memoryview) -> None:
    n = len(data)
    written = os.write(fd, data)
    while written < n:
        written += os.write(fd, data[written:])


#: errnos with which ``copy_file_range`` refuses a pair of files (other file systems,
#: kernels without it, file systems without support): copy through user space instead
_CFR_REFUSED = frozenset(getattr(errno, n) for n in ("EXDEV", "ENOSYS", "EOPNOTSUPP", "ENOTSUP", "EINVAL")
                         if hasattr(errno, n))
_COPY_PIECE = 8 << 20  # user-space fallback: bytes per pread/pwrite
_IOV_BATCH = 512  # buffers per pwritev (below every IOV_MAX)


def _write_parts(fd: int, items: Sequence[tuple[int, int] | memoryview], src: int, path: str) -> None:
    """``set_spliced``'s content: buffers written, ranges of ``src`` copied, back to back
    from offset 0 of the (new, empty) file ``fd``."""
    pos = 0
    run: list[memoryview] = []  # consecutive buffers: one pwritev
    for p in items:
        if isinstance(p, tuple):
            if run:
                pos = _write_buffers(fd, run, pos)
                run = []
            a, b = p
            if b > a:
                _copy_range(src, a, b - a, fd, pos, path)
            pos += b - a
        elif len(p):
            run.append(p)
    if run:
        _write_buffers(fd, run, pos)


def _write_buffers(fd: int, bufs: list[memoryview], pos: int) -> int:
    """Write ``bufs`` back to back at ``pos`` (``pwritev`` in batches); returns the end."""
    pwritev = getattr(os, "pwritev", None)
    for i in range(0, len(bufs), _IOV_BATCH):
        batch = bufs[i:i + _IOV_BATCH]
        n = sum(len(b) for b in batch)
        done = pwritev(fd, batch, pos) if pwritev is not None and len(batch) > 1 else 0
        if done < n:  # a short (or no) vectored write: the rest piece by piece
            at = pos
            for b in batch:
                skip = min(max(done - (at - pos), 0), len(b))
                w = skip
                while w < len(b):
                    w += os.pwrite(fd, b[w:], at + w)
                at += len(b)
        pos += n
    return pos


def _copy_range(src: int, start: int, length: int, dst: int, at: int, path: str) -> None:
    """Copy ``length`` bytes at ``start`` of ``src`` to offset ``at`` of ``dst``: in the
    kernel when it can (no copy through user space), else ``pread``/``pwrite``."""
    done = 0
    cfr = getattr(os, "copy_file_range", None)
    while cfr is not None and done < length:
        try:
            n = cfr(src, dst, length - done, start + done, at + done)
        except OSError as e:
            if e.errno not in _CFR_REFUSED:
                raise
            break  # refused (maybe after a part was copied): the rest through user space
        if n == 0:
            _short(path, start, length, done)
        done += n
    while done < length:
        piece = os.pread(src, min(length - done, _COPY_PIECE), start + done)
        if not piece:
            _short(path, start, length, done)
        mv = memoryview(piece)
        w = 0
        while w < len(mv):
            w += os.pwrite(dst, mv[w:], at + done + w)
        done += len(piece)


def _short(path: str, start: int, length: int, done: int) -> None:
    raise StoreError(expected(f"{path}: bytes [{start}, {start + length}) of the value being replaced",
                              "present", f"the value ends at {start + done} (truncated meanwhile?)"))


def _reopen(root: str, read_only: bool, fsync: bool) -> LocalStore:
    return LocalStore(root, read_only=read_only, create=False, fsync=fsync)
