"""``ZipStore``: a whole hierarchy in one ``.zip`` file.

* Modes: ``"r"`` read-only; ``"w"`` create/truncate; ``"x"`` create, fail if the file
  exists; ``"a"`` append to an existing archive (created if missing).
* Members are written ``ZIP_STORED`` by default (``compression=zipfile.ZIP_DEFLATED``
  etc. to compress).  Stored members are range-read straight from the member's data
  offset with ``pread`` (no lock, no whole-member read); compressed members (deflate,
  bzip2, LZMA; other methods are refused) are inflated by a streaming decoder that
  reads the compressed bytes 1 MiB at a time and stops at the end of the requested
  range (a whole read: one byte past the declared size, to catch a lie), so a zip bomb
  or a directory entry claiming gigabytes costs no more memory than the read asked
  for.  Whole reads verify the member's CRC-32.
* **Append-only while open.**  A zip cannot drop content without being rewritten, so
  ``erase``/``erase_values``/``erase_prefix`` of existing keys raise ``StoreError``
  (``supports_deletes = False``); erasing keys that do not exist is a no-op, so
  writers that erase never-written all-fill chunks keep working.  Writing an existing key appends a new member; the
  latest one wins on read, and ``close()`` leaves only the latest entry of each name
  in the central directory (the superseded bytes stay in the file as dead space; use a
  fresh archive to compact).  ``close()`` (or leaving a ``with`` block) writes the
  central directory: an archive that was never closed is unreadable by other tools.
* **Mode "a" is copy-on-write.**  Appending in place would overwrite the central
  directory with new members, so a process killed before ``close()`` would lose the
  whole archive.  Instead the archive is copied to a temporary file beside it
  (``.<name>.<random>.zarrcy-append``, same directory, kernel-side copy), members are
  appended there, and ``close()`` writes the central directory, fsyncs and atomically
  renames the copy over the original (then fsyncs the directory).  Until then the
  original archive is untouched: after a crash it is exactly the archive committed
  before the append (the temporary file is left behind; delete it), and other
  processes read the old archive until the rename.  Costs: one copy of the archive per
  append session, free space for it, and write permission on the directory.  A
  symlinked path keeps its link (the target is replaced); a hard-linked archive is
  detached from its other names.  Two processes appending at once: the last ``close()``
  wins (the other's members are lost, not merged).  Modes "w"/"x" write the file in
  place (nothing was committed before them).
* **Zip-slip.**  Member names that could escape an extraction directory or are not
  valid keys (``../x``, ``a/../../b``, ``/abs``, ``C:/x``, backslashes, NUL, empty
  components) are refused: reading such a key or listing a prefix that covers one
  raises ``StoreError`` naming the member.  ``set`` refuses the same names.
  Directory entries (names ending in ``/``) are ignored.
* Thread-safe: one lock guards the ``zipfile.ZipFile``; stored-member reads bypass it.
* Pickles as ``(path, mode="r")``: the copy reopens the (closed) archive read-only.
"""

from __future__ import annotations

import builtins
import bz2
import lzma
import os
import shutil
import struct
import tempfile
import threading
import time
import weakref
import zipfile
import zlib
from typing import Any, Callable, Iterable, Iterator, Literal, Sequence

from zarrcy.byte_access import ValueSnapshot
from zarrcy.byte_range import ByteRequest
from zarrcy.config import at_fork_reset
from zarrcy.errors import CorruptChunkError, ReadOnlyError, StoreError, expected
from zarrcy.storage._base import Buffer, Store
from zarrcy.storage._common import as_bytes_view, check_key, check_prefix, resolve_range

__all__ = ["ZipStore", "ZipMode", "find_open_zip"]

# writable archives open in this process, by absolute path: a second ZipFile on the same
# file would corrupt it, and the file has no valid central directory until close()
_open_writers: "weakref.WeakValueDictionary[str, ZipStore]" = weakref.WeakValueDictionary()
_open_writers_lock = threading.Lock()
_STATES: "weakref.WeakSet[_ZipState]" = weakref.WeakSet()


@at_fork_reset
def _reset_locks_after_fork() -> None:
    """A forked child gets fresh locks: one held by another parent thread at the fork
    would never be released there (CONVENTIONS rule 13)."""
    global _open_writers_lock
    _open_writers_lock = threading.Lock()
    for state in list(_STATES):
        state.lock = threading.RLock()


def find_open_zip(path: str | os.PathLike[str]) -> "ZipStore | None":
    """The writable ZipStore this process has open on ``path``, if any (``store_from_url`` reuses it)."""
    with _open_writers_lock:
        z = _open_writers.get(os.path.abspath(os.fspath(path)))
    return None if z is None or z.closed else z

ZipMode = Literal["r", "w", "a", "x"]
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length
_PIECE = 1 << 20  # compressed bytes read at a time when inflating a member
_O_READ = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _bad_name(name: str) -> bool:
    """True if a member name could escape an extraction directory or is not a valid key."""
    if not name or name[0] in "/\\" or "\\" in name or "\x00" in name:
        return True
    if len(name) >= 2 and name[1] == ":" and name[0].isalpha():
        return True  # drive letter
    body = name[:-1] if name.endswith("/") else name
    return any(p in ("", ".", "..") for p in body.split("/"))


_lzma_error = lzma.LZMAError

#: the most one compressed byte can inflate to, per method: deflate 1032 (a 258-byte
#: match in 2 bits), LZMA ~7,100 (a 273-byte rep-match in ~0.3 bits once every
#: probability saturates at 2017/2048; 16,384 leaves a margin), bzip2 ~45.9 million
#: (runs through RLE1 + RLE2).  A member declaring more than ``ratio x compressed
#: size`` (+ ``_RATIO_SLACK``) lies about its size: refused before any inflating,
#: instead of inflating what the stream holds (50 s of CPU for an LZMA bomb, issue 23.11).
_MAX_RATIO = {zipfile.ZIP_DEFLATED: 1032, zipfile.ZIP_LZMA: 16384, zipfile.ZIP_BZIP2: 45_899_236}
_RATIO_SLACK = 1 << 16


def _flush(zf: zipfile.ZipFile) -> None:
    """Push zipfile's buffered writes to the OS, so our pread descriptor sees them
    (``zf.fp`` is None only once the archive is closed; callers hold it open)."""
    if zf.fp is not None:
        zf.fp.flush()


class _ZipState:
    """What a ZipStore and its read-only views share."""

    def __init__(self, path: str, mode: ZipMode, compression: int, compresslevel: int | None) -> None:
        self.path = path
        self.mode = mode
        self.compression = compression
        self.compresslevel = compresslevel
        self.lock = threading.RLock()
        _STATES.add(self)
        self.closed = False
        if mode == "a" and os.path.isfile(path) and os.path.getsize(path) and not zipfile.is_zipfile(path):
            raise StoreError(f"{path}: exists and is not a zip file; refusing to append to it")
        # mode "a": work on a copy, renamed over the original by close() (module docstring)
        self.commit_to: str | None = None
        work = path
        if mode == "a":
            self.commit_to = os.path.realpath(path)
            work = self._copy_for_append(self.commit_to)
        self.work_path = work
        try:
            self.zf = zipfile.ZipFile(work, mode, compression=compression, allowZip64=True, compresslevel=compresslevel)
        except FileNotFoundError as e:
            self._discard()
            raise StoreError(f"{path}: zip file does not exist") from e
        except FileExistsError as e:
            self._discard()
            raise StoreError(f"{path}: zip file already exists (mode 'x')") from e
        except (zipfile.BadZipFile, NotImplementedError, EOFError, ValueError, OverflowError, RuntimeError, struct.error) as e:
            # a hostile central directory can make zipfile raise any of these
            self._discard()
            raise StoreError(f"{path}: not a valid zip file: {type(e).__name__}: {e}") from e
        except OSError as e:
            self._discard()
            raise StoreError(f"{path}: cannot open zip file: {e}") from e
        try:
            if mode != "r":
                _flush(self.zf)
            self.fd = os.open(work, _O_READ)  # a private descriptor for lock-free preads
        except OSError as e:
            self.zf.close()
            self._discard()
            raise StoreError(f"{path}: cannot open zip file: {e}") from e
        self.index: dict[str, zipfile.ZipInfo] = {}
        self.bad: list[str] = []
        for info in self.zf.infolist():  # later duplicates overwrite earlier ones: latest wins
            name = info.filename
            if _bad_name(name):
                self.bad.append(name)
            elif not name.endswith("/"):
                self.index[name] = info
        self.bad_set = set(self.bad)
        self.data_offsets: dict[int, int] = {}  # id(ZipInfo) -> offset of its data

    @staticmethod
    def _copy_for_append(target: str) -> str:
        """A copy of ``target`` (or an empty file if it does not exist) in its directory."""
        d, base = os.path.split(target)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".zarrcy-append", dir=d or ".")
        except OSError as e:
            raise StoreError(f"{target}: cannot create the copy for appending beside it: {e}") from e
        try:
            with os.fdopen(fd, "wb") as dst:
                try:
                    src = open(target, "rb")
                except FileNotFoundError:
                    return tmp  # a new archive
                with src:
                    if os.name == "posix":
                        _copy_fd(src.fileno(), dst.fileno())
                    else:  # pragma: no cover - Windows
                        shutil.copyfileobj(src, dst, 1 << 20)
                shutil.copymode(target, tmp)
        except BaseException as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if isinstance(e, OSError):
                raise StoreError(f"{target}: cannot copy the archive for appending: {e}") from e
            raise
        return tmp

    def _discard(self) -> None:
        """Remove the append copy (the original archive is untouched)."""
        if self.commit_to is not None and self.work_path != self.commit_to:
            try:
                os.unlink(self.work_path)
            except OSError:
                pass

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            try:
                zf = self.zf
                if zf.mode != "r":
                    # one central-directory entry per name: the latest member wins
                    zf.filelist = [i for i in zf.filelist if zf.NameToInfo.get(i.filename) is i]
                try:
                    zf.close()
                except BaseException:
                    self._discard()  # an incomplete copy never replaces the archive
                    raise
                if self.commit_to is not None:
                    self._commit()
            finally:
                os.close(self.fd)

    def _commit(self) -> None:
        """fsync the finished copy, rename it over the archive, fsync the directory."""
        work, target = self.work_path, self.commit_to
        assert target is not None
        try:
            fd = os.open(work, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(work, target)
        except OSError as e:
            self._discard()
            raise StoreError(f"{self.path}: committing the appended archive failed (the original is unchanged): {e}") from e
        try:
            dfd = os.open(os.path.dirname(target) or ".", os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:  # pragma: no cover - some file systems refuse directory fsync
            pass


class ZipStore(Store):
    """``ZipStore(path, mode="r", *, compression=zipfile.ZIP_STORED, compresslevel=None)``."""

    supports_deletes = False
    supports_partial_reads = True
    supports_partial_writes = False
    supports_listing = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: ZipMode = "r",
        *,
        compression: int = zipfile.ZIP_STORED,
        compresslevel: int | None = None,
        read_only: bool | None = None,
    ) -> None:
        if read_only and mode != "r":  # zarr-python's keyword: read_only=True is mode "r"
            raise StoreError(f"read_only=True contradicts mode={mode!r}")
        if mode not in ("r", "w", "a", "x"):
            raise StoreError(expected("mode", "one of 'r', 'w', 'a', 'x'", mode))
        try:
            path = os.path.abspath(os.fspath(path))
        except TypeError:
            raise StoreError(expected("path", "a path to a .zip file", path)) from None
        super().__init__(read_only=(mode == "r"))
        self.supports_writes = not self.read_only
        if mode != "r" and find_open_zip(path) is not None:
            raise StoreError(f"{path}: already open for writing in this process (reuse that ZipStore)")
        self._st = _ZipState(path, mode, compression, compresslevel)
        self._owner = True
        if mode != "r":
            with _open_writers_lock:
                _open_writers[path] = self

    # -- identity ------------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._st.path

    @property
    def mode(self) -> ZipMode:
        return self._st.mode if not self.read_only else "r"

    @property
    def url(self) -> str:
        from pathlib import Path

        return Path(self._st.path).as_uri()

    def __repr__(self) -> str:
        return f"ZipStore({self._st.path!r}, mode={self.mode!r})"

    def __reduce__(self) -> tuple[Callable[[str], ZipStore], tuple[str]]:
        return (_reopen, (self._st.path,))

    def with_read_only(self, read_only: bool = True) -> "ZipStore":
        """A view of the same open archive with another ``read_only`` flag."""
        if read_only == self.read_only:
            return self
        if not read_only and self._st.mode == "r":
            raise ReadOnlyError(f"{self.url}: archive was opened with mode 'r'")
        view = ZipStore.__new__(ZipStore)
        Store.__init__(view, read_only=read_only)
        view.supports_writes = not read_only
        view._st = self._st
        view._owner = False
        return view

    @property
    def closed(self) -> bool:
        return self._st.closed

    def close(self) -> None:
        """Write the central directory (writable modes) and release the file; idempotent.
        Views from ``with_read_only`` do not close the shared archive."""
        if self._owner:
            self._st.close()

    def __del__(self) -> None:  # best effort: an unclosed writable archive is unreadable
        try:
            if getattr(self, "_owner", False) and not self._st.closed:
                self._st.close()
        except Exception:
            pass

    def _check_open(self) -> None:
        if self._st.closed:
            raise StoreError(f"{self.url}: zip store is closed")

    # -- reads ---------------------------------------------------------------------------
    def _info(self, key: str) -> zipfile.ZipInfo | None:
        check_key(key)
        st = self._st
        if st.closed:
            raise StoreError(f"{self.url}: zip store is closed")
        info = st.index.get(key)
        if info is None and key in st.bad_set:
            raise StoreError(f"{st.path}: member {key!r} has an unsafe name (zip-slip); refused")
        return info

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        st = self._st
        off = st.data_offsets.get(id(info))
        if off is not None:
            return off
        head = os.pread(st.fd, _LOCAL_HEADER.size, info.header_offset)
        if len(head) != _LOCAL_HEADER.size:
            raise CorruptChunkError(f"{st.path}: member {info.filename!r}: truncated local header", info.filename)
        sig, nlen, elen = _LOCAL_HEADER.unpack(head)
        if sig != b"PK\x03\x04":
            raise CorruptChunkError(f"{st.path}: member {info.filename!r}: bad local header signature", info.filename)
        off = info.header_offset + _LOCAL_HEADER.size + nlen + elen
        st.data_offsets[id(info)] = off
        return off

    def _read_member(self, info: zipfile.ZipInfo, start: int, stop: int, whole: bool) -> bytes:
        """Bytes ``[start, stop)`` of the member's uncompressed value."""
        st = self._st
        if info.header_offset < 0:  # a hostile central directory (zipfile computes the offset)
            raise CorruptChunkError(
                f"{st.path}: member {info.filename!r}: local header offset {info.header_offset} is negative", info.filename
            )
        if info.flag_bits & 0x1:
            raise StoreError(f"{st.path}: member {info.filename!r} is encrypted; not supported")
        if info.compress_type == zipfile.ZIP_STORED:
            if stop <= start:
                return b""
            base = self._data_offset(info)
            data = os.pread(st.fd, stop - start, base + start)
            if len(data) != stop - start:
                raise CorruptChunkError(f"{st.path}: member {info.filename!r}: truncated data", info.filename)
            if whole and zlib.crc32(data) != info.CRC:
                raise CorruptChunkError(f"{st.path}: member {info.filename!r}: CRC-32 mismatch", info.filename)
            return data
        # compressed: inflate only what is asked for (a zip bomb never expands past
        # ``stop``); a whole read inflates at most one byte past the declared size to
        # catch a lie.  The compressed bytes are read in pieces, so a hostile (sparse,
        # huge) compressed size costs no memory either.  A declared size no stream of
        # the compressed size can reach is refused before any work.
        ratio = _MAX_RATIO.get(info.compress_type)
        if ratio is not None and info.file_size > ratio * max(info.compress_size, 0) + _RATIO_SLACK:
            raise CorruptChunkError(
                f"{st.path}: member {info.filename!r}: declares {info.file_size} bytes from {info.compress_size} "
                f"compressed bytes, more than compression method {info.compress_type} can produce (at most "
                f"{ratio}:1); refused without inflating (zip bomb or corrupt directory)", info.filename)
        want = info.file_size + 1 if whole else stop
        full, eof = self._inflate(info, want)
        if not whole:
            if len(full) < stop:
                raise CorruptChunkError(f"{st.path}: member {info.filename!r}: truncated data", info.filename)
            return full[start:stop]
        # raw LZMA1 members may omit the end marker: their end is the compressed size
        if (len(full) != info.file_size or not (eof or info.compress_type == zipfile.ZIP_LZMA)
                or zlib.crc32(full) != info.CRC):
            raise CorruptChunkError(f"{st.path}: member {info.filename!r}: CRC-32/size mismatch", info.filename)
        return full if whole else full[start:stop]

    def _decompressor(self, info: zipfile.ZipInfo, want: int) -> tuple[Any, int]:
        """A streaming decompressor for the member (one with ``decompress(data,
        max_length)``, ``eof``) and the number of header bytes to skip before its data."""
        st = self._st
        ct = info.compress_type
        if ct == zipfile.ZIP_DEFLATED:
            return zlib.decompressobj(-15), 0
        if ct == zipfile.ZIP_BZIP2:
            return bz2.BZ2Decompressor(), 0
        if ct == zipfile.ZIP_LZMA:
            # APPNOTE 5.8.8: version (2 bytes), properties size (2), LZMA1 properties
            head = os.pread(st.fd, 4, self._data_offset(info))
            psize = int.from_bytes(head[2:4], "little") if len(head) == 4 else 0
            props = os.pread(st.fd, psize, self._data_offset(info) + 4) if psize >= 5 else b""
            if len(props) < 5 or psize > info.compress_size:
                raise CorruptChunkError(f"{st.path}: member {info.filename!r}: bad LZMA header", info.filename)
            d = props[0]
            if d >= 9 * 5 * 5:
                raise CorruptChunkError(f"{st.path}: member {info.filename!r}: bad LZMA properties", info.filename)
            # the dictionary never needs to exceed the output we accept (a match cannot
            # reach before the start): a hostile dict_size allocates nothing
            dict_size = min(int.from_bytes(props[1:5], "little"), max(want, 4096))
            f = {"id": lzma.FILTER_LZMA1, "dict_size": max(dict_size, 4096), "lc": d % 9, "lp": (d // 9) % 5, "pb": d // 45}
            try:
                return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[f]), 4 + psize
            except (lzma.LZMAError, ValueError) as e:
                raise CorruptChunkError(f"{st.path}: member {info.filename!r}: {e}", info.filename) from e
        raise CorruptChunkError(
            f"{st.path}: member {info.filename!r}: compression method {ct} is not supported", info.filename
        )

    def _inflate(self, info: zipfile.ZipInfo, want: int) -> tuple[bytes, bool]:
        """At most ``want`` bytes of the member's value (fewer if it ends first), and
        whether its stream ended.  Compressed bytes are read ``_PIECE`` at a time."""
        st = self._st
        if want <= 0:
            return b"", False
        d, pos = self._decompressor(info, want)
        base = self._data_offset(info)
        csize = info.compress_size
        parts: list[bytes] = []
        got = 0
        tail = b""
        is_zlib = info.compress_type == zipfile.ZIP_DEFLATED
        try:
            while got < want and not d.eof:
                buf = tail
                if (not buf) if is_zlib else d.needs_input:
                    if pos >= csize:
                        break  # input exhausted: the caller sees a short or unfinished stream
                    buf = os.pread(st.fd, min(_PIECE, csize - pos), base + pos)
                    if not buf:
                        break
                    pos += len(buf)
                out = d.decompress(buf, want - got)
                tail = d.unconsumed_tail if is_zlib else b""
                if not out and not buf:
                    break  # pragma: no cover - no progress possible
                parts.append(out)
                got += len(out)
        except (zlib.error, OSError, EOFError, ValueError, _lzma_error, MemoryError) as e:
            # any failure of a hostile member is corruption
            raise CorruptChunkError(f"{st.path}: member {info.filename!r}: {type(e).__name__}: {e}", info.filename) from e
        return (parts[0] if len(parts) == 1 else b"".join(parts)), bool(d.eof)

    def get(self, key: str, byte_range: ByteRequest = None) -> bytes | None:
        info = self._info(key)
        if info is None:
            return None
        start, stop = resolve_range(byte_range, info.file_size)
        return self._read_member(info, start, stop, byte_range is None or (start == 0 and stop == info.file_size))

    def get_partial_values(self, key_ranges: Sequence[tuple[str, ByteRequest]]) -> list[bytes | None]:
        """Stored members: one pread per range.  Compressed members: decompressed once per key."""
        by_key: dict[str, list[int]] = {}
        for i, (key, _) in enumerate(key_ranges):
            by_key.setdefault(key, []).append(i)
        out: list[bytes | None] = [None] * len(key_ranges)
        for key, idxs in by_key.items():
            info = self._info(key)
            if info is not None:
                for i, v in zip(idxs, self._member_ranges(info, [key_ranges[i][1] for i in idxs])):
                    out[i] = v
        return out

    def _member_ranges(self, info: zipfile.ZipInfo, ranges: Sequence[ByteRequest]) -> list[bytes | None]:
        """Ranges of one member: a pread each when stored; decompressed once, only as far
        as the furthest range needs, when compressed."""
        spans = [resolve_range(r, info.file_size) for r in ranges]
        if not spans:
            return []
        if info.compress_type == zipfile.ZIP_STORED:
            return [self._read_member(info, a, b, r is None) for (a, b), r in zip(spans, ranges)]
        need = max(b for _, b in spans)
        full = self._read_member(info, 0, need, need == info.file_size)
        return [full[a:b] for a, b in spans]

    def snapshot(self, key: str) -> ValueSnapshot:
        """Reads of the member ``key`` names now (pinned): a new value is a new member
        appended to the archive, never a rewrite of the old one's bytes, so the entry
        taken here keeps naming this version while the store is open."""
        return _MemberSnapshot(self, self._info(key))

    def exists(self, key: str) -> bool:
        return self._info(key) is not None

    def getsize(self, key: str) -> int | None:
        info = self._info(key)
        return None if info is None else info.file_size

    # -- writes --------------------------------------------------------------------------
    def set(self, key: str, value: Buffer) -> None:
        self._check_writable()
        check_key(key)
        if _bad_name(key):
            raise StoreError(expected("key", "a zip-safe member name (no '\\', no drive letter)", key))
        data = as_bytes_view(value)
        st = self._st
        info = zipfile.ZipInfo(key, date_time=time.localtime(time.time())[:6])
        info.external_attr = 0o644 << 16
        info.compress_type = st.compression
        with st.lock:
            self._check_open()
            zf = st.zf
            zf.NameToInfo.pop(key, None)  # overwrite = new member; avoids zipfile's duplicate warning
            try:
                zf.writestr(info, data, compresslevel=st.compresslevel)
                _flush(zf)  # make the bytes visible to our pread descriptor
            except OSError as e:
                raise StoreError(f"{st.path}: writing member {key!r} failed: {e}") from e
            st.index[key] = info

    def set_partial_values(self, key_start_values: Sequence[tuple[str, int, Buffer]]) -> None:
        self._check_writable()
        raise StoreError(f"{self.url}: zip stores do not support partial writes (members are written whole)")

    def _no_delete(self, what: str, keys: list[str]) -> None:
        """Erasing nothing is fine (the array layer erases all-fill chunks that were never
        written); erasing an existing member is refused: the archive is append-only."""
        self._check_writable()
        st = self._st
        self._check_open()
        present = [k for k in keys if k in st.index]
        if present:
            raise StoreError(
                f"{self.url}: zip stores are append-only while open; {what} would delete "
                f"{present[0]!r}{f' and {len(present) - 1} more' if len(present) > 1 else ''} "
                "(write a new archive without those keys instead)"
            )

    def erase(self, key: str) -> None:
        check_key(key)
        self._no_delete(f"erase({key!r})", [key])

    def erase_values(self, keys: Iterable[str]) -> None:
        keys = [check_key(k) for k in keys]
        self._no_delete("erase_values", keys)

    def erase_prefix(self, prefix: str) -> None:
        check_prefix(prefix)
        self._no_delete(f"erase_prefix({prefix!r})", self._names(prefix) if not self.read_only else [])

    # -- listing -------------------------------------------------------------------------
    def _names(self, prefix: str) -> list[str]:
        st = self._st
        with st.lock:
            self._check_open()
            for name in st.bad:
                if name.startswith(prefix):
                    raise StoreError(f"{st.path}: member {name!r} has an unsafe name (zip-slip); refused")
            return [k for k in st.index if k.startswith(prefix)] if prefix else list(st.index)

    def list(self) -> Iterator[str]:
        return iter(self._names(""))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        check_prefix(prefix)
        return iter(self._names(prefix))

    def list_dir(self, prefix: str) -> builtins.list[str]:
        check_prefix(prefix)
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        n = len(prefix)
        return sorted({k[n:].partition("/")[0] for k in self._names(prefix)})


def _copy_fd(src: int, dst: int) -> None:
    """Copy a whole file in the kernel (copy_file_range: a reflink where the file system
    can; else sendfile), falling back to read/write."""
    size = os.fstat(src).st_size
    off = 0
    copy = getattr(os, "copy_file_range", None)
    try:
        while off < size:
            if copy is not None:
                n = copy(src, dst, min(size - off, 1 << 30), off, off)
            else:  # pragma: no cover - Linux has copy_file_range
                n = os.sendfile(dst, src, off, min(size - off, 1 << 30))
            if n <= 0:
                break
            off += n
    except OSError:
        pass  # e.g. EXDEV/ENOSYS/EINVAL on some file systems: finish with plain reads
    if off < size:
        os.lseek(dst, off, os.SEEK_SET)
        while off < size:
            buf = os.pread(src, min(size - off, 1 << 20), off)
            if not buf:
                raise OSError(f"archive shrank while copying it ({off} of {size} bytes)")
            mv = memoryview(buf)
            while mv:
                mv = mv[os.write(dst, mv):]
            off += len(buf)


def _reopen(path: str) -> ZipStore:
    live = find_open_zip(path)  # same process, archive still being written: a view of it
    return live.with_read_only(True) if live is not None else ZipStore(path, mode="r")


class _MemberSnapshot(ValueSnapshot):
    """``ZipStore.snapshot``: one member entry (None: the key did not exist)."""

    pinned = True

    def __init__(self, store: ZipStore, info: zipfile.ZipInfo | None) -> None:
        self.store = store
        self.info = info
        self.exists = info is not None
        self.size = None if info is None else info.file_size
        # a compressed member inflates from its start for every range read
        self.random_access = info is None or info.compress_type == zipfile.ZIP_STORED

    def get(self, byte_range: ByteRequest = None) -> bytes | None:
        return self.get_ranges([byte_range])[0]

    def get_ranges(self, byte_ranges: Sequence[ByteRequest]) -> list[bytes | None]:
        if self.info is None:
            return [None] * len(byte_ranges)
        self.store._check_open()
        return self.store._member_ranges(self.info, byte_ranges)
