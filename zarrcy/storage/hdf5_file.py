"""HDF5 / NetCDF-4 files as zarrcy reads them (issue 17): the file, its datasets' layout
and the Zarr metadata fields derived from them, for :mod:`zarrcy.storage.hdf5`.

* :class:`_File`: one open file (an h5py handle for metadata and fallback reads, a raw
  descriptor for positioned reads of stored chunks, a lock around every h5py call);
* :class:`_Var` and :func:`describe`: one dataset of one file -- shape, stored dtype,
  how its chunks are read (``chunked``: raw stored chunks; ``contiguous``: byte ranges;
  ``h5py`` / ``vlen``: through h5py), its filter pipeline and chunk index (read once
  with ``chunk_iter``, every entry checked to lie inside the file);
* attribute values as JSON, data types, dimension names (dimension scales), fill values
  (``_FillValue`` or the HDF5 fill value), the ``--cf-packing chain`` codecs.

Storage layer (layer 2): the codec is known only by its JSON name.
"""

from __future__ import annotations

import glob as _glob
import json
import math
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from zarrcy.config import at_fork_reset
from zarrcy.errors import StoreError, expected
from zarrcy.storage.hdf5_errors import HDF5SourceError, SourceChangedError
from zarrcy.storage.hdf5_refs import OPT_IN, ExternalData, RefusedExternal, check_virtual, external_link_on_path

__all__ = ["HDF5SourceError", "SourceChangedError", "is_hdf5", "describe", "expand_sources", "HDF5_SIGNATURE", "NATIVE_FILTERS", "RAW_MASK",
           "ChunkTable", "build_chunk_table"]

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
#: HDF5 filters the internal codec decodes (H5Zpublic.h: deflate 1, shuffle 2, fletcher32 3)
NATIVE_FILTERS = {1: "deflate", 2: "shuffle", 3: "fletcher32"}
#: filter mask meaning "every filter skipped": the bytes are the raw chunk
RAW_MASK = 0xFFFFFFFF

#: attributes that are HDF5 / NetCDF-4 bookkeeping, not data attributes
_INTERNAL_ATTRS = frozenset((
    "DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME", "_Netcdf4Dimid", "_Netcdf4Coordinates",
    "_NCProperties", "_nc3_strict", "DIMENSION_LABELS", "_SuperblockVersion", "_IsNetcdf4",
))
_NC_DIM_ONLY = b"This is a netCDF dimension but not a netCDF variable"



def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def is_hdf5(path: str) -> bool:
    """True if ``path`` is a file with the HDF5 signature at offset 0, 512, 1024, 2048...
    (the superblock may follow a user block whose size is a power of two >= 512)."""
    try:
        if not os.path.isfile(path):
            return False
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            off = 0
            while off + 8 <= size:
                f.seek(off)
                if f.read(8) == HDF5_SIGNATURE:
                    return True
                off = 512 if off == 0 else off * 2
    except OSError:
        return False
    return False


def _h5py() -> Any:
    try:
        import h5py
    except ImportError as e:  # pragma: no cover - the hdf5 extra is missing
        raise StoreError(f"reading HDF5 / NetCDF-4 files needs h5py (pip install 'zarrcy[hdf5]'): {e}") from None
    return h5py


# --------------------------------------------------------------------------------------
# one dataset of one file
# --------------------------------------------------------------------------------------
@dataclass
class _Var:
    """What a dataset of one file contributes: layout, decoding, chunk index."""

    file: "_File"
    name: str                           # HDF5 path without the leading '/'
    shape: tuple[int, ...]
    dtype: np.dtype                     # stored dtype (with byte order)
    kind: str                           # "chunked" | "contiguous" | "h5py" | "vlen"
    h5_chunks: tuple[int, ...] | None
    filters: list[dict[str, Any]]       # in HDF5 pipeline (encode) order
    contiguous_offset: int | None = None
    index: "ChunkTable | None" = None
    #: HDF5 storage layout: "chunked", "contiguous", "compact", "virtual" (external: "contiguous")
    layout: str = "chunked"
    #: virtual datasets: the element boxes ``(lo, hi)`` their mappings cover
    mapped: "tuple[np.ndarray, np.ndarray] | None" = None
    #: external storage (allowed and checked, zarrcy/storage/hdf5_refs.py): the raw data's reader
    external: "ExternalData | None" = None

    def codec_filters(self) -> list[dict[str, Any]]:
        """The pipeline the ``zarrcy.hdf5_chunk`` codec undoes: the filters but the
        optional ones not installed here (:meth:`codec_mask`)."""
        return [{"id": x["id"], "values": x["values"]} for x in self.filters if not x.get("missing")]

    def codec_mask(self, mask: int, coords: "Sequence[int]") -> int:
        """The chunk's filter mask over :meth:`codec_filters`.  An optional filter that is
        not installed must have been skipped for this chunk (its mask bit set), as HDF5
        skips it when writing without it; a chunk stored through it is refused
        (HDF5SourceError naming file, variable, chunk and filter), as HDF5 refuses it."""
        out, j = 0, 0
        for i, x in enumerate(self.filters):
            bit = (mask >> i) & 1
            if x.get("missing"):
                if not bit:
                    raise HDF5SourceError(f"{self.file.path}: variable /{self.name} chunk {list(coords)}: stored "
                                          f"through the optional HDF5 filter {x['id']} ({x['name']}), which is not "
                                          "available here (install its HDF5 filter plugin, e.g. hdf5plugin)")
                continue
            out |= bit << j
            j += 1
        return out if mask != RAW_MASK else RAW_MASK

    def check_masks(self) -> None:
        """Refuse, before anything is read, a stored chunk that needs a filter that is
        not installed (:meth:`codec_mask`)."""
        missing = [i for i, x in enumerate(self.filters) if x.get("missing")]
        if not missing or self.kind != "chunked":
            return
        t = self.chunk_index()
        for i in missing:
            bad = np.flatnonzero(((t.masks >> np.uint32(i)) & np.uint32(1)) == 0)
            if bad.size:
                coords = [int(c) for c in np.unravel_index(int(t.keys[int(bad[0])]), t.grid)]
                self.codec_mask(int(t.masks[int(bad[0])]), coords)

    def raw(self) -> "_File | ExternalData":
        """Where a contiguous dataset's bytes are read (the file, or its external files)."""
        return self.external if self.external is not None else self.file

    def dataset(self) -> Any:
        if self.layout == "virtual" and self.file.allow_external:
            # sources in other files: looked up in the directory they were checked in
            h5py = _h5py()
            dapl = h5py.h5p.create(h5py.h5p.DATASET_ACCESS)
            dapl.set_virtual_prefix(os.fsencode(self.file.dir))
            return h5py.Dataset(h5py.h5d.open(self.file.h5.id, self.name.encode(), dapl=dapl))
        return self.file.h5[self.name]

    def chunk_index(self) -> "ChunkTable":
        """The dataset's stored chunks (:class:`ChunkTable`), read once with ``chunk_iter``
        and checked entry by entry against the file (HDF5SourceError naming file,
        dataset and chunk otherwise) before any read trusts an offset."""
        idx = self.index
        if idx is not None:
            return idx
        # under the file's lock (an RLock reset in a forked child: a build in progress in
        # another thread at fork time cannot leave the child waiting on it forever)
        with self.file.lock:
            if self.index is None:
                self.index = self.read_chunk_table(self.dataset())
            return self.index

    def read_chunk_table(self, dset: Any) -> "ChunkTable":
        """The :class:`ChunkTable` of ``dset`` (this dataset, from some handle on its file)."""
        entries: list[tuple[tuple[int, ...], int | None, int, int]] = []

        def visit(si: Any) -> None:
            entries.append((tuple(si.chunk_offset), si.byte_offset, si.size, si.filter_mask))

        try:
            dset.id.chunk_iter(visit)
        except (OSError, RuntimeError, ValueError, KeyError, TypeError) as e:
            raise HDF5SourceError(f"{self.file.path}: variable /{self.name}: cannot read the chunk index "
                                  f"(truncated or damaged file?): {e}") from None
        return build_chunk_table(entries, self.shape, self.h5_chunks or (), self.dtype.itemsize,
                                 self.file.size, f"{self.file.path}: variable /{self.name}")


    def stored_boxes(self) -> "tuple[np.ndarray, np.ndarray] | None":
        """Where this dataset holds stored data: element boxes ``(lo, hi)`` (int64, shape
        ``(n, ndim)``) -- the stored chunks of a chunked dataset (from the chunk table),
        the mapped regions of a virtual one, none for a contiguous dataset never written
        -- or None: stored whole (contiguous, compact, external)."""
        nd = len(self.shape)
        none = (np.empty((0, nd), np.int64), np.empty((0, nd), np.int64))
        if any(s == 0 for s in self.shape):
            return none
        if self.layout == "chunked" and self.h5_chunks:
            t = self.chunk_index()
            if not len(t):
                return none
            cs = np.asarray(self.h5_chunks, dtype=np.int64).reshape(1, nd)
            lo = np.stack(np.unravel_index(t.keys, t.grid), axis=1).astype(np.int64) * cs
            return lo, np.minimum(lo + cs, np.asarray(self.shape, dtype=np.int64).reshape(1, nd))
        if self.layout == "virtual":
            return self.mapped if self.mapped is not None else None
        if self.layout == "contiguous" and self.kind == "contiguous" and self.contiguous_offset is None:
            return none  # never written: the fill value
        return None


class ChunkTable:
    """Where the stored chunks of one chunked dataset are: chunk grid coordinates ->
    (file offset, stored size, filter mask), in numpy arrays sorted by the chunk's
    linear (C-order) grid index -- about 24 bytes per stored chunk, plus a dense 4-byte
    position per grid cell when the grid is not much larger than the stored chunks
    (else a binary search).  Built only by :func:`build_chunk_table`, which checks every
    entry against the file first: offsets and sizes here are inside the file."""

    __slots__ = ("grid", "_strides", "keys", "offsets", "sizes", "masks", "_pos")

    def __init__(self, grid: tuple[int, ...], keys: np.ndarray, offsets: np.ndarray, sizes: np.ndarray,
                 masks: np.ndarray) -> None:
        self.grid = grid
        strides = []
        acc = 1
        for g in reversed(grid):
            strides.append(acc)
            acc *= g
        self._strides = tuple(reversed(strides))
        self.keys, self.offsets, self.sizes, self.masks = keys, offsets, sizes, masks
        self._pos: np.ndarray | None = None
        if acc <= 8 * keys.shape[0] + (1 << 16):  # dense: one int32 per grid cell (bounded above)
            pos = np.full(acc, -1, dtype=np.int64 if keys.shape[0] >= 2**31 else np.int32)
            pos[keys] = np.arange(keys.shape[0], dtype=pos.dtype)
            self._pos = pos

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def _find(self, coords: tuple[int, ...]) -> int:
        if len(coords) != len(self.grid):
            return -1
        lin = 0
        for c, g, st in zip(coords, self.grid, self._strides):
            if not 0 <= c < g:
                return -1
            lin += c * st
        if self._pos is not None:
            return int(self._pos[lin])
        i = int(np.searchsorted(self.keys, lin))
        return i if i < self.keys.shape[0] and int(self.keys[i]) == lin else -1

    def get(self, coords: tuple[int, ...]) -> tuple[int, int, int] | None:
        """(offset, size, filter mask) of the chunk at grid ``coords``; None: not stored."""
        i = self._find(coords)
        if i < 0:
            return None
        return int(self.offsets[i]), int(self.sizes[i]), int(self.masks[i])

    def __contains__(self, coords: object) -> bool:
        return isinstance(coords, tuple) and self._find(coords) >= 0

    def same(self, other: "ChunkTable") -> bool:
        """The same chunks at the same places (offsets, sizes, filter masks)."""
        return (self.grid == other.grid and all(np.array_equal(x, y) for x, y in zip(
            (self.keys, self.offsets, self.sizes, self.masks), (other.keys, other.offsets, other.sizes, other.masks))))

    def coords(self) -> "list[tuple[int, ...]]":
        """The grid coordinates of the stored chunks, in C order."""
        return [tuple(int(x) for x in c) for c in zip(*np.unravel_index(self.keys, self.grid))] if len(self) else []


def build_chunk_table(entries: "Any", shape: tuple[int, ...], chunks: tuple[int, ...], itemsize: int,
                      file_size: int, where: str) -> ChunkTable:
    """The :class:`ChunkTable` of ``entries`` (``(chunk element offset, byte offset or
    None when unallocated, stored size, filter mask)`` as ``chunk_iter`` reports them),
    each checked first: the element offset a multiple of the chunk shape inside the
    dataset, stored once; the byte range inside the file and at most a generous bound
    over the decoded chunk (twice its bytes + 64 KiB: deflate never expands that much).
    A hostile or damaged index raises HDF5SourceError naming ``where`` (file and
    dataset) and the chunk."""
    if len(chunks) != len(shape) or any(int(c) <= 0 for c in chunks):
        raise HDF5SourceError(expected(f"{where}: chunk shape", f"{len(shape)} positive lengths", chunks))
    grid = tuple(-(-int(s) // int(c)) for s, c in zip(shape, chunks))
    total = math.prod(grid)
    if total >= 2**62:
        raise HDF5SourceError(expected(f"{where}: chunk grid", "fewer than 2**62 chunks", grid))
    limit = 2 * math.prod(chunks) * itemsize + (1 << 16)
    n = len(entries)
    keys = np.empty(n, np.int64)
    offs = np.empty(n, np.uint64)
    sizes = np.empty(n, np.uint64)
    masks = np.empty(n, np.uint32)
    k = 0
    for elem, off, size, mask in entries:
        coords = tuple(int(o) // int(c) for o, c in zip(elem, chunks)) if len(elem) == len(chunks) else ()
        what = f"{where}: chunk {list(coords) if coords else list(elem)}"
        if (not coords or any(int(o) % int(c) for o, c in zip(elem, chunks))
                or any(not 0 <= x < g for x, g in zip(coords, grid))):
            raise HDF5SourceError(expected(f"{where}: chunk at element {list(elem)}",
                                           f"a multiple of the chunk shape {list(chunks)} inside {list(shape)}",
                                           "a chunk outside the dataset"))
        if off is None:
            continue  # unallocated: the fill value
        off, size = int(off), int(size)
        if off < 0 or size < 0 or size > limit:
            raise HDF5SourceError(expected(f"{what} at byte {off}", f"a stored size of at most {limit} bytes",
                                           size))
        if off + size > file_size:
            raise HDF5SourceError(expected(f"{what} at byte {off}", f"{size} bytes inside the file "
                                           f"({file_size} bytes)", "a truncated file"))
        lin = 0
        for x, g in zip(coords, grid):
            lin = lin * g + x
        keys[k], offs[k], sizes[k], masks[k] = lin, off, size, int(mask) & 0xFFFFFFFF
        k += 1
    order = np.argsort(keys[:k], kind="stable")
    keys, offs, sizes, masks = keys[:k][order], offs[:k][order], sizes[:k][order], masks[:k][order]
    if k > 1 and bool(np.any(keys[1:] == keys[:-1])):
        dup = int(keys[1:][keys[1:] == keys[:-1]][0])
        raise HDF5SourceError(expected(f"{where}: chunk {list(int(x) for x in np.unravel_index(dup, grid))}",
                                       "one stored chunk per grid cell", "two entries"))
    return ChunkTable(grid, keys, offs, sizes, masks)


_FILES: "weakref.WeakSet[_File]" = weakref.WeakSet()


@at_fork_reset
def _reset_locks_after_fork() -> None:
    """Fresh per-file locks in a forked child (a parent thread may have held one)."""
    for f in list(_FILES):
        f.lock = threading.RLock()


class _File:
    """One open HDF5 file: h5py handle (metadata, fallback reads) + a raw descriptor."""

    def __init__(self, path: str, allow_external: bool = False, root: str | None = None,
                 expect: Sequence[int] | None = None) -> None:
        h5py = _h5py()
        self.path = path
        #: data in other files (zarrcy/storage/hdf5_refs.py): read only when allowed, and
        #: only inside ``root`` (the first source file's real directory); names resolve
        #: against ``dir`` (this file's real directory)
        self.allow_external = bool(allow_external)
        self.dir = os.path.dirname(os.path.realpath(path))
        self.root = root or self.dir
        self.externals: list[ExternalData] = []
        if not is_hdf5(path):
            raise HDF5SourceError(expected(path, "an HDF5 / NetCDF-4 file (HDF5 signature)", "no signature"))
        self.lock = threading.RLock()
        _FILES.add(self)
        try:
            self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except OSError as e:
            raise HDF5SourceError(f"{path}: cannot open: {e.strerror or e}") from None
        self.pid = os.getpid()
        #: what the file was when opened (device, inode, size, mtime, ctime): a source
        #: replaced or rewritten while it is read is detected (:meth:`check`)
        self.identity = _identity(os.fstat(self.fd))
        self.size = self.identity[2]
        try:
            self.h5 = h5py.File(path, "r")
        except (OSError, ValueError, RuntimeError) as e:
            os.close(self.fd)
            raise HDF5SourceError(f"{path}: cannot open as HDF5 (truncated or damaged?): {e}") from None
        try:
            if expect is not None and tuple(expect) != self.identity:
                raise SourceChangedError(f"{path}: the source file changed since the conversion started "
                                         f"({self._why(tuple(expect), self.identity)})")
            self.check_path()  # h5py opened the file the descriptor holds
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _why(a: tuple[int, ...], b: tuple[int, ...]) -> str | None:
        if a[:2] != b[:2]:
            return "replaced by another file"
        if a[2] != b[2]:
            return f"rewritten: {a[2]} bytes, now {b[2]}"
        if a[3:] != b[3:]:
            return "rewritten: its modification (or status change) time changed"
        return None

    def check(self, what: str = "") -> None:
        """Raise :class:`SourceChangedError` if the open file was rewritten since it was
        opened (one ``fstat``: size, mtime, ctime; a forked child's own descriptor: also
        the inode)."""
        why = self._why(self.identity, _identity(os.fstat(self.descriptor())))
        if why is not None:
            raise SourceChangedError(f"{self.path}: the source file was {why} while zarrcy read it"
                                     f"{' (' + what + ')' if what else ''}")

    def check_path(self) -> None:
        """:meth:`check`, and the path still names the file that was opened (a file
        replaced by a rename is detected too)."""
        try:
            st = os.stat(self.path)
        except OSError as e:
            raise SourceChangedError(f"{self.path}: the source file is gone ({e.strerror or e})") from None
        why = self._why(self.identity, _identity(st))
        if why is not None:
            raise SourceChangedError(f"{self.path}: the source file was {why} while zarrcy read it")
        self.check()

    def descriptor(self) -> int:
        """The raw descriptor for positioned reads; a forked child opens its own once,
        under the file's lock (reset at fork), so concurrent first reads in the child
        never close a descriptor another thread is about to use."""
        if self.pid != os.getpid():
            with self.lock:
                if self.pid != os.getpid():
                    old, self.fd = self.fd, os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
                    self.pid = os.getpid()
                    try:
                        os.close(old)  # the parent's copy (no thread of this child has used it)
                    except OSError:
                        pass
        return self.fd

    def close(self) -> None:
        for ext in self.externals:
            ext.close()
        self.externals = []
        try:
            self.h5.close()
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass

    def pread(self, offset: int, size: int, into_offset: int = 0, what: str = "") -> bytearray:
        """``size`` bytes at ``offset`` in a new buffer, after ``into_offset`` bytes of room."""
        buf = bytearray(into_offset + size)
        self.pread_into(offset, size, memoryview(buf)[into_offset:], what)
        return buf

    def pread_into(self, offset: int, size: int, mv: memoryview, what: str = "") -> None:
        """Read ``size`` bytes at ``offset`` into the first ``size`` bytes of ``mv``
        (HDF5SourceError naming the file and ``what`` -- dataset and chunk -- when they
        are not all inside the file, e.g. a file truncated after it was opened)."""
        where = f"{self.path}: {what}" if what else f"{self.path}: data"
        if offset < 0 or size < 0 or offset + size > self.size or size > len(mv):
            raise HDF5SourceError(expected(f"{where} at byte {offset}", f"{size} bytes inside the file "
                                           f"({self.size} bytes)", "a truncated file"))
        got = 0
        if not hasattr(os, "preadv"):  # pragma: no cover - Windows: one positioned read at a time
            with self.lock, open(self.path, "rb") as fh:
                fh.seek(offset)
                got = fh.readinto(mv[:size])
            if got != size:
                raise HDF5SourceError(f"{where}: unexpected end of file at byte {offset + got} (truncated?)")
            return
        while got < size:
            try:
                n = os.preadv(self.descriptor(), [mv[got:size]], offset + got)
            except OSError as e:
                raise HDF5SourceError(f"{where}: read failed at byte {offset + got}: {e}") from None
            if n <= 0:
                raise HDF5SourceError(f"{where}: unexpected end of file at byte {offset + got} (truncated?)")
            got += n
        self.check(what)  # the bytes come from the file as it was opened


# --------------------------------------------------------------------------------------
# attributes, data types
# --------------------------------------------------------------------------------------
def _json_value(v: Any) -> Any:
    """An HDF5 attribute value as JSON (numbers keep their value exactly: a float32
    becomes the float64 of the same value); ValueError if it has no JSON form."""
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "biufSUO" and v.dtype.fields is None:
            if v.ndim == 0 or v.size == 1:  # NetCDF attributes are arrays; one value reads as a scalar
                return _json_value(v.reshape(-1)[0])
            return [_json_value(x) for x in v.reshape(-1).tolist()] if v.ndim == 1 else [_json_value(x) for x in v]
        raise ValueError(v.dtype)
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    raise ValueError(type(v))


def _attributes(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        names = list(obj.attrs.keys())
    except (OSError, RuntimeError, KeyError):
        return out
    for k in names:
        if k in _INTERNAL_ATTRS or k == "_FillValue":  # _FillValue: see _xarray_fill
            continue
        try:
            v = obj.attrs[k]
            out[k] = _json_value(v)
        except (OSError, RuntimeError, ValueError, TypeError, KeyError):
            continue  # references, compound... (no JSON form): left out
    return out


def _data_type(dset: Any) -> tuple[str, np.dtype | None, str, dict[str, Any]]:
    """(kind, zarr numpy dtype, reason when unsupported, extra attributes)."""
    h5py = _h5py()
    dt = dset.dtype
    extra: dict[str, Any] = {}
    if h5py.check_string_dtype(dt) is not None:
        info = h5py.check_string_dtype(dt)
        if info.length is None:
            if info.encoding == "utf-8" or info.encoding == "ascii":
                return "vlen", np.dtype(object), "", extra
        else:
            return "fixed", np.dtype(f"S{max(1, int(info.length))}"), "", extra
    if h5py.check_vlen_dtype(dt) is not None:
        return "", None, f"variable-length {h5py.check_vlen_dtype(dt)} data type (no Zarr v3 equivalent)", extra
    if h5py.check_ref_dtype(dt) is not None:
        return "", None, "reference data type (no Zarr v3 equivalent)", extra
    enum = h5py.check_enum_dtype(dt)
    if enum is not None and dt.kind != "b":
        items = sorted(enum.items(), key=lambda kv: kv[1])
        extra["flag_values"] = [int(v) for _, v in items]
        extra["flag_meanings"] = " ".join(str(k) for k, _ in items)
        return "fixed", np.dtype(dt.str).newbyteorder("="), "", extra
    if dt.fields is not None:
        return "", None, f"compound data type {dt} (no Zarr v3 equivalent)", extra
    if dt.subdtype is not None:
        return "", None, f"array data type {dt} (no Zarr v3 equivalent)", extra
    if dt.kind in "biufc" and dt.itemsize > 0 and not (dt.kind == "f" and dt.itemsize > 8):
        return "fixed", np.dtype(dt.str).newbyteorder("="), "", extra
    return "", None, f"data type {dt}", extra


def _dim_names(dset: Any, name: str) -> list[str] | None:
    """NetCDF dimensions / HDF5 dimension scales of ``dset`` (None when any is unknown)."""
    out: list[str] = []
    try:
        is_scale = dset.attrs.get("CLASS") == b"DIMENSION_SCALE"
        for i, dim in enumerate(dset.dims):
            if len(dim) > 0:
                out.append(dim[0].name.rsplit("/", 1)[-1])
            elif is_scale and dset.ndim == 1:
                out.append(name.rsplit("/", 1)[-1])
            else:
                return None
    except (OSError, RuntimeError, KeyError, ValueError, TypeError):
        return None
    return out


def _fill_value(dset: Any, zdt: np.dtype, kind: str) -> Any:
    """``_FillValue`` (NetCDF) or the HDF5 fill value, as a Python value of ``zdt``."""
    v = None
    if "_FillValue" in dset.attrs:
        try:
            v = np.asarray(dset.attrs["_FillValue"]).reshape(-1)[0]
        except (OSError, RuntimeError, IndexError, ValueError, TypeError):
            v = None
    if kind == "vlen":
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else (v if isinstance(v, str) else "")
    if v is None:
        try:
            v = dset.fillvalue
        except (OSError, RuntimeError, ValueError, TypeError):
            v = None
    if v is None:
        v = np.zeros((), zdt)[()]
    if zdt.kind == "S":
        return np.asarray(v, dtype=zdt)[()]
    out = np.asarray(v).astype(zdt, copy=False).reshape(())[()]
    raw = np.asarray(v)
    if "_FillValue" in dset.attrs and zdt.kind in "iuf" and (raw.dtype.kind not in "iufb" or not (
            out == raw or (np.isnan(out) and np.isnan(raw)) if raw.dtype.kind == "f" and zdt.kind == "f" else out == raw)):
        raise _BadFill(f"_FillValue {raw.item()!r}: expected a value of the variable's type {zdt} "
                       "(CF 2.5.1: the fill value has the variable's type)")
    return out


def _fill_json(zdt: np.dtype, value: Any) -> Any:
    from zarrcy.metadata.data_type import from_numpy

    dt3 = from_numpy(zdt)
    if zdt == np.dtype(object):
        return value
    return dt3.fill_value_to_json(np.asarray(value, dtype=zdt)[()])



def describe(f: _File, name: str) -> tuple[_Var, dict[str, Any]]:
    """Layout of dataset ``name`` of file ``f`` and its Zarr metadata fields (``_Skip``
    when it has no Zarr form)."""
    h5py = _h5py()
    external: ExternalData | None = None
    try:
        with f.lock:
            link = external_link_on_path(f.h5, name)
            if link is not None:  # (only through here when it names another file's object)
                raise _Skip(f"reached through the external link /{link[0]} to {link[1]}:{link[2]}")
            dset = f.h5[name]
            kind, zdt, why, extra = _data_type(dset)
            if zdt is None:
                raise _Skip(why)
            shape = tuple(int(s) for s in dset.shape) if dset.shape is not None else None
            if shape is None:
                raise _Skip("null dataspace")
            dcpl = dset.id.get_create_plist()
            layout = dcpl.get_layout()
            filters = []
            for i in range(dcpl.get_nfilters()):
                code, flags, values, fname = dcpl.get_filter(i)
                filters.append({"id": int(code), "values": [int(x) for x in values], "optional": bool(flags & 1),
                                "name": fname.decode("ascii", "replace") if isinstance(fname, bytes) else str(fname)})
            for flt in filters:
                flt["missing"] = not h5py.h5z.filter_avail(flt["id"]) and flt["id"] not in NATIVE_FILTERS
                if flt["missing"] and not flt["optional"]:
                    raise _Skip(f"compressed with HDF5 filter {flt['id']} ({flt['name']}), which is not "
                                "available here (install its HDF5 filter plugin, e.g. hdf5plugin)")
            attrs = _attributes(dset)
            attrs.update(extra)
            packing = {k: np.asarray(dset.attrs[k]).reshape(-1)[0] for k in ("scale_factor", "add_offset")
                       if k in dset.attrs and np.asarray(dset.attrs[k]).size == 1}
            has_fill_attr = "_FillValue" in dset.attrs
            dims = _dim_names(dset, name)
            fill = _fill_value(dset, zdt, kind)
            h5_chunks = tuple(int(c) for c in dset.chunks) if dset.chunks else None
            offset = None
            segments = dset.external
            if segments is not None:  # raw data in other files (zarrcy/storage/hdf5_refs.py)
                names = ", ".join(repr(os.fsdecode(x[0])) for x in segments)
                if not f.allow_external:
                    raise _Skip(f"external storage in {names}: zarrcy reads no file but the source ({OPT_IN})")
                if kind != "fixed":
                    raise _Skip(f"external storage of variable-length data in {names}")
                nbytes = math.prod(shape) * np.dtype(dset.dtype.str).itemsize
                external = ExternalData([(os.fsdecode(x[0]), int(x[1]), int(x[2])) for x in segments], nbytes,
                                        f.root, f.dir, f"{f.path}: variable /{name}")
                f.externals.append(external)
                offset = 0
            elif layout == h5py.h5d.CONTIGUOUS and kind == "fixed":
                try:
                    offset = dset.id.get_offset()
                except (OSError, RuntimeError, ValueError):
                    offset = None
            mapped = None
            if dset.is_virtual:
                mapped = check_virtual(dset, f.h5, f.root, f.dir, f.allow_external)
    except RefusedExternal as e:
        raise _Skip(str(e)) from None
    except HDF5SourceError:
        raise
    except _Skip:
        raise
    except _BadFill as e:
        raise HDF5SourceError(f"{f.path}: variable /{name}: {e}") from None
    except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
        raise HDF5SourceError(f"{f.path}: variable /{name}: cannot read its HDF5 description: {e}") from None
    stored = np.dtype(dset.dtype.str) if kind == "fixed" else zdt
    # optional filters that are not installed: HDF5 skips them per chunk (the chunk's
    # filter mask says so); zarrcy does the same and refuses a chunk that needs one
    readable = all(x["id"] in NATIVE_FILTERS or x["missing"] for x in filters)
    if kind == "vlen":
        vkind = "vlen"
    elif layout == h5py.h5d.CHUNKED and readable and not dset.is_virtual:
        vkind = "chunked"
    elif layout == h5py.h5d.CONTIGUOUS and not filters and not dset.is_virtual:
        vkind = "contiguous"
    else:
        vkind = "h5py"
    lay = {h5py.h5d.CHUNKED: "chunked", h5py.h5d.CONTIGUOUS: "contiguous", h5py.h5d.COMPACT: "compact"}.get(
        layout, "virtual" if dset.is_virtual else "other")
    var = _Var(f, name, shape, np.dtype(stored), vkind, h5_chunks, filters if vkind == "chunked" else [], offset,
               layout="virtual" if dset.is_virtual else lay, mapped=mapped, external=external)
    info = {"zdt": zdt, "attrs": attrs, "dims": dims, "fill": fill, "kind": kind, "packing": packing,
            "has_fill_attr": has_fill_attr, "enum": "flag_meanings" in extra}
    return var, info



class _Skip(Exception):
    pass


class _BadFill(ValueError):
    """A ``_FillValue`` the variable's type cannot hold (described with file and variable)."""


def _xarray_fill(zdt: np.dtype, value: Any) -> Any:
    """NetCDF's ``_FillValue`` kept as an attribute in the form xarray writes (and reads)
    beside a Zarr v3 array's ``fill_value`` (xarray.backends.zarr ``FillValueCoder``:
    floats as base64 of a little-endian float64, bytes as base64), so that
    ``xarray.open_zarr`` masks missing values as ``open_dataset`` does."""
    import base64
    import struct

    try:
        if zdt.kind == "f":
            return base64.standard_b64encode(struct.pack("<d", float(value))).decode()
        if zdt.kind in "iu":
            return int(value)
        if zdt.kind == "b":
            return bool(value)
        if zdt.kind == "S":
            return base64.standard_b64encode(bytes(value)).decode()
        if zdt.kind == "O" and isinstance(value, str):
            return value
    except (TypeError, ValueError, OverflowError):
        return None
    return None


def _cf_chain(doc: dict[str, Any], zdt: np.dtype, packing: dict[str, Any], fill: Any, masked: bool) -> None:
    """Show a CF-packed integer variable (``scale_factor``/``add_offset``) as the
    floats it stands for, through ``[scale_offset, cast_value]`` (ext-codec-scale_offset.md:
    decode ``x / scale + offset``; ext-codec-cast_value.md); ``_FillValue`` becomes NaN
    through ``scalar_map``.  The float type is the attributes' own (float32 when they
    are float32), float64 otherwise.  Exactness is checked by the converter
    (zarrcy/convert/hdf5.py ``check_packing``)."""
    from zarrcy.metadata.data_type import from_numpy

    from zarrcy.storage.hdf5_cf import cf_unpacked_dtype

    fdt = cf_unpacked_dtype(zdt, packing)
    sf = fdt.type(packing.get("scale_factor", 1))
    ao = fdt.type(packing.get("add_offset", 0))
    if not np.isfinite(sf) or sf == 0 or not np.isfinite(ao):
        return
    with np.errstate(all="ignore"):
        scale = fdt.type(1) / sf
    if not np.isfinite(scale):
        return
    dt3 = from_numpy(fdt)
    so: dict[str, Any] = {"offset": dt3.fill_value_to_json(ao), "scale": dt3.fill_value_to_json(scale)}
    cv: dict[str, Any] = {"data_type": from_numpy(zdt).to_json(), "rounding": "nearest-even"}
    # the fill value (``_FillValue``, else the HDF5 fill value) <-> NaN: the decoded fill
    # value must round-trip exactly (ext-codec-cast_value.md), which NaN does
    f = int(fill)
    cv["scalar_map"] = {"encode": [["NaN", f]], "decode": [[f, "NaN"]]}
    doc["fill_value"] = "NaN"
    del masked
    doc["data_type"] = dt3.to_json()
    doc["codecs"] = [{"name": "scale_offset", "configuration": so}, {"name": "cast_value", "configuration": cv},
                     *doc["codecs"]]
    attrs = dict(doc["attributes"])
    attrs.pop("scale_factor", None)
    attrs.pop("add_offset", None)
    attrs.pop("_FillValue", None)  # now the NaN of scalar_map
    doc["attributes"] = attrs


def _attrs_cmp(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _valid_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and not name.startswith("__") and "/" not in name


def _vlen_utf8(data: np.ndarray, chunk_shape: tuple[int, ...], region: tuple[slice, ...]) -> bytes:
    """Strings in the zarr-extensions ``vlen-utf8`` chunk layout: a little-endian u32
    count, then per element (C order) a u32 byte length and the UTF-8 bytes; the
    part of the chunk outside ``region`` holds empty strings (the fill value)."""
    full = np.full(chunk_shape, b"", dtype=object)
    flat_src = np.asarray(data, dtype=object)
    full[tuple(slice(0, r.stop - r.start) for r in region)] = flat_src
    parts = [int(full.size).to_bytes(4, "little")]
    for x in full.reshape(-1):
        b = x if isinstance(x, bytes) else str(x).encode("utf-8")
        parts.append(len(b).to_bytes(4, "little"))
        parts.append(b)
    return b"".join(parts)


def expand_sources(src: Any) -> list[str]:
    """A glob pattern, a path or a list of them -> the existing files (sorted; a
    pattern that matches nothing is an error)."""
    items = [src] if isinstance(src, (str, os.PathLike)) else list(src)
    out: list[str] = []
    for it in items:
        s = os.fspath(it)
        if any(ch in s for ch in "*?[") and not os.path.exists(s):
            hits = sorted(_glob.glob(s))
            if not hits:
                raise HDF5SourceError(expected("source", "files matching the pattern", s))
            out.extend(hits)
        else:
            out.append(s)
    return out
