"""``ZipStore``: a whole hierarchy in one ``.zip`` file.

* Modes: ``"r"`` read-only; ``"w"`` create/truncate; ``"x"`` create, fail if the file
  exists; ``"a"`` append to an existing archive (created if missing).
* Members are written ``ZIP_STORED`` by default (``compression=zipfile.ZIP_DEFLATED``
  etc. to compress).  Stored members are range-read straight from the member's data
  offset with ``pread`` (no lock, no whole-member read); compressed members are read
  whole, checked and then sliced.  Whole reads verify the member's CRC-32.
* **Append-only while open.**  A zip cannot drop content without being rewritten, so
  ``erase``/``erase_values``/``erase_prefix`` of existing keys raise ``StoreError``
  (``supports_deletes = False``); erasing keys that do not exist is a no-op, so
  writers that erase never-written all-fill chunks keep working.  Writing an existing key appends a new member; the
  latest one wins on read, and ``close()`` leaves only the latest entry of each name
  in the central directory (the superseded bytes stay in the file as dead space; use a
  fresh archive to compact).  ``close()`` (or leaving a ``with`` block) writes the
  central directory: an archive that was never closed is unreadable by other tools.
* **Zip-slip.**  Member names that could escape an extraction directory or are not
  valid keys (``../x``, ``a/../../b``, ``/abs``, ``C:/x``, backslashes, NUL, empty
  components) are refused: reading such a key or listing a prefix that covers one
  raises ``StoreError`` naming the member.  ``set`` refuses the same names.
  Directory entries (names ending in ``/``) are ignored.
* Thread-safe: one lock guards the ``zipfile.ZipFile``; stored-member reads bypass it.
* Pickles as ``(path, mode="r")``: the copy reopens the (closed) archive read-only.
"""

from __future__ import annotations

import os
import struct
import threading
import time
import weakref
import zipfile
import zlib
from typing import Iterator, Literal, Sequence

from zarrcy.byte_range import ByteRequest
from zarrcy.errors import CorruptChunkError, ReadOnlyError, StoreError, expected
from zarrcy.storage._base import Store
from zarrcy.storage._common import as_bytes_view, check_key, check_prefix, resolve_range

__all__ = ["ZipStore", "ZipMode", "find_open_zip"]

# writable archives open in this process, by absolute path: a second ZipFile on the same
# file would corrupt it, and the file has no valid central directory until close()
_open_writers: "weakref.WeakValueDictionary[str, ZipStore]" = weakref.WeakValueDictionary()
_open_writers_lock = threading.Lock()


def find_open_zip(path) -> "ZipStore | None":
    """The writable ZipStore this process has open on ``path``, if any (``store_from_url`` reuses it)."""
    with _open_writers_lock:
        z = _open_writers.get(os.path.abspath(os.fspath(path)))
    return None if z is None or z.closed else z

ZipMode = Literal["r", "w", "a", "x"]
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length
_O_READ = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _bad_name(name: str) -> bool:
    """True if a member name could escape an extraction directory or is not a valid key."""
    if not name or name[0] in "/\\" or "\\" in name or "\x00" in name:
        return True
    if len(name) >= 2 and name[1] == ":" and name[0].isalpha():
        return True  # drive letter
    body = name[:-1] if name.endswith("/") else name
    return any(p in ("", ".", "..") for p in body.split("/"))


try:
    from lzma import LZMAError as _lzma_error
except ImportError:  # pragma: no cover - Python built without lzma
    _lzma_error = zlib.error


class _ZipState:
    """What a ZipStore and its read-only views share."""

    def __init__(self, path: str, mode: str, compression: int, compresslevel: int | None) -> None:
        self.path = path
        self.mode = mode
        self.compression = compression
        self.compresslevel = compresslevel
        self.lock = threading.RLock()
        self.closed = False
        if mode == "a" and os.path.isfile(path) and os.path.getsize(path) and not zipfile.is_zipfile(path):
            raise StoreError(f"{path}: exists and is not a zip file; refusing to append to it")
        try:
            self.zf = zipfile.ZipFile(path, mode, compression=compression, allowZip64=True, compresslevel=compresslevel)
        except FileNotFoundError as e:
            raise StoreError(f"{path}: zip file does not exist") from e
        except FileExistsError as e:
            raise StoreError(f"{path}: zip file already exists (mode 'x')") from e
        except (zipfile.BadZipFile, NotImplementedError, EOFError, ValueError, OverflowError, RuntimeError, struct.error) as e:
            # a hostile central directory can make zipfile raise any of these
            raise StoreError(f"{path}: not a valid zip file: {type(e).__name__}: {e}") from e
        except OSError as e:
            raise StoreError(f"{path}: cannot open zip file: {e}") from e
        try:
            if mode != "r":
                self.zf.fp.flush()
            self.fd = os.open(path, _O_READ)  # a private descriptor for lock-free preads
        except OSError as e:
            self.zf.close()
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
                zf.close()
            finally:
                os.close(self.fd)


class ZipStore(Store):
    """``ZipStore(path, mode="r", *, compression=zipfile.ZIP_STORED, compresslevel=None)``."""

    supports_deletes = False
    supports_partial_reads = True
    supports_partial_writes = False
    supports_listing = True

    def __init__(
        self,
        path,
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
        if mode != "r" and find_open_zip(path) is not None:
            raise StoreError(f"{path}: already open for writing in this process (reuse that ZipStore)")
        self._st = _ZipState(path, mode, compression, compresslevel)
        self._owner = True
        if mode != "r":
            with _open_writers_lock:
                _open_writers[path] = self

    # -- identity ------------------------------------------------------------------------
    @property
    def supports_writes(self) -> bool:  # type: ignore[override]
        return not self.read_only

    @property
    def path(self) -> str:
        return self._st.path

    @property
    def mode(self) -> str:
        return self._st.mode if not self.read_only else "r"

    @property
    def url(self) -> str:
        from pathlib import Path

        return Path(self._st.path).as_uri()

    def __repr__(self) -> str:
        return f"ZipStore({self._st.path!r}, mode={self.mode!r})"

    def __reduce__(self):
        return (_reopen, (self._st.path,))

    def with_read_only(self, read_only: bool = True) -> "ZipStore":
        """A view of the same open archive with another ``read_only`` flag."""
        if read_only == self.read_only:
            return self
        if not read_only and self._st.mode == "r":
            raise ReadOnlyError(f"{self.url}: archive was opened with mode 'r'")
        view = ZipStore.__new__(ZipStore)
        Store.__init__(view, read_only=read_only)
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
        if info.compress_type == zipfile.ZIP_DEFLATED:
            raw = os.pread(st.fd, info.compress_size, self._data_offset(info))
            # inflate only what is asked for (a zip bomb never expands past ``stop``); a
            # whole read inflates at most one byte past the declared size to catch a lie
            want = info.file_size + 1 if whole else stop
            try:
                d = zlib.decompressobj(-15)
                full = d.decompress(raw, want) if want > 0 else b""
            except zlib.error as e:
                raise CorruptChunkError(f"{st.path}: member {info.filename!r}: {e}", info.filename) from e
            if not whole:
                if len(full) < stop:
                    raise CorruptChunkError(f"{st.path}: member {info.filename!r}: truncated data", info.filename)
                return full[start:stop]
            if len(full) != info.file_size or not d.eof or zlib.crc32(full) != info.CRC:
                raise CorruptChunkError(f"{st.path}: member {info.filename!r}: CRC-32/size mismatch", info.filename)
        else:
            with st.lock:
                self._check_open()
                try:
                    full = st.zf.read(info)
                except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError, OSError, ValueError,
                        zlib.error, _lzma_error) as e:  # any failure of a hostile member is corruption
                    raise CorruptChunkError(f"{st.path}: member {info.filename!r}: {e}", info.filename) from e
        return full if whole else full[start:stop]

    def get(self, key: str, byte_range: ByteRequest = None) -> bytes | None:
        info = self._info(key)
        if info is None:
            return None
        start, stop = resolve_range(byte_range, info.file_size)
        return self._read_member(info, start, stop, byte_range is None or (start == 0 and stop == info.file_size))

    def get_partial_values(self, key_ranges: Sequence[tuple[str, ByteRequest]]) -> list[bytes | None]:
        """Stored members: one pread per range.  Compressed members: decompressed once per key."""
        out: list[bytes | None] = []
        cache: dict[str, bytes] = {}
        for key, rng in key_ranges:
            info = self._info(key)
            if info is None:
                out.append(None)
                continue
            start, stop = resolve_range(rng, info.file_size)
            if info.compress_type == zipfile.ZIP_STORED:
                out.append(self._read_member(info, start, stop, rng is None))
            else:
                # decompressed once per key, and only as far as the furthest range needs
                full = cache.get(key)
                if full is None:
                    need = max(resolve_range(r, info.file_size)[1] for k, r in key_ranges if k == key)
                    full = cache[key] = self._read_member(info, 0, need, need == info.file_size)
                out.append(full[start:stop])
        return out

    def exists(self, key: str) -> bool:
        return self._info(key) is not None

    def getsize(self, key: str) -> int | None:
        info = self._info(key)
        return None if info is None else info.file_size

    # -- writes --------------------------------------------------------------------------
    def set(self, key: str, value) -> None:
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
                zf.fp.flush()  # make the bytes visible to our pread descriptor
            except OSError as e:
                raise StoreError(f"{st.path}: writing member {key!r} failed: {e}") from e
            st.index[key] = info

    def set_partial_values(self, key_start_values) -> None:
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

    def erase_values(self, keys) -> None:
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

    def list_dir(self, prefix: str) -> list[str]:
        check_prefix(prefix)
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        n = len(prefix)
        return sorted({k[n:].partition("/")[0] for k in self._names(prefix)})


def _reopen(path: str) -> ZipStore:
    live = find_open_zip(path)  # same process, archive still being written: a view of it
    return live.with_read_only(True) if live is not None else ZipStore(path, mode="r")
