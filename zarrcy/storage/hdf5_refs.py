"""Data an HDF5 file keeps in *other* files (issue 23, item 3): external raw data files
(``H5Pset_external``), virtual-dataset sources and external links.

A hostile ``.nc`` can declare ``external=[("/abs/secret", 0, 64)]`` and have any local
file served as its data.  zarrcy therefore reads nothing outside the source file unless
the caller allows it (``HDF5Store(..., allow_external=True)``, ``zarrcy convert
--allow-external``), and even then only files inside the source file's directory:

* every name is resolved against that directory (absolute names taken as they are),
  symlinks resolved (``realpath``); the result must lie inside the directory (also
  resolved) and be a regular file -- ``..`` or absolute paths leading elsewhere, a
  symlink pointing out, a FIFO or a device are refused;
* external raw data is read by zarrcy itself (:class:`ExternalData`, positioned reads
  on descriptors opened once, after the check, with ``O_NOFOLLOW`` and an identity
  check), never by HDF5's own lookup (which tries the current directory);
* virtual datasets are read through h5py with the source directory as their
  ``virtual_prefix`` after each source file was checked (no printf-style source names;
  a source that is itself virtual or external is refused); ``HDF5_VDS_PREFIX`` set in
  the environment makes relative sources refused (HDF5 would search it first);
* external links are followed by opening the target file (checked the same way) as a
  source file of its own (single-file sources only).

What is refused is listed in :attr:`HDF5Store.unsupported` with the reason (dataset and
path named); reading it raises :class:`HDF5SourceError`.  Storage layer (layer 2).
"""

from __future__ import annotations

import os
import stat
from typing import Any

import numpy as np

from zarrcy.storage.hdf5_errors import HDF5SourceError, SourceChangedError

__all__ = ["ExternalData", "confine", "check_virtual", "external_link_on_path", "OPT_IN"]

#: how the refusal tells the user to allow external files
OPT_IN = ("allow_external=True / zarrcy convert --allow-external reads such files when they are inside the source "
          "file's directory")


class RefusedExternal(Exception):
    """A reference to data outside the source file that the policy refuses (the reason)."""


def confine(base: str, name: str, what: str, rel_dir: str | None = None) -> str:
    """The real path of ``name`` (relative to ``rel_dir``, the referring file's real
    directory, by default ``base``) if it is a regular file inside ``base`` (the source
    file's real directory); else RefusedExternal naming ``what`` and the path."""
    if not name or "\0" in name:
        raise RefusedExternal(f"{what}: expected a file name, received {name!r}")
    real = os.path.realpath(os.path.join(rel_dir or base, name))
    try:
        inside = os.path.commonpath([real, base]) == base
    except ValueError:  # different drives (Windows)
        inside = False
    if not inside:
        raise RefusedExternal(f"{what}: {name!r} resolves to {real}, outside the source file's directory {base} "
                              "(only files inside it can be read)")
    try:
        st = os.stat(real)
    except OSError as e:
        raise RefusedExternal(f"{what}: {name!r} ({real}) cannot be read: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise RefusedExternal(f"{what}: {name!r} ({real}) is not a regular file")
    return real


def _open_checked(real: str, what: str) -> int:
    """A read-only descriptor on ``real`` (from :func:`confine`), refusing a path swapped
    for a symlink or another file since the check."""
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise RefusedExternal(f"{what}: {real} cannot be opened: {e.strerror or e}") from None
    try:
        a, b = os.fstat(fd), os.stat(real)
        if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino) or not stat.S_ISREG(a.st_mode):
            raise RefusedExternal(f"{what}: {real} changed while it was opened")
    except BaseException:
        os.close(fd)
        raise
    return fd


class ExternalData:
    """The raw bytes of a contiguous dataset kept in external files: segments
    ``(name, file offset, size)`` in dataset order (``H5Pset_external``), each file
    confined (:func:`confine`) and opened once.  Every byte the dataset needs must be in
    its file (a shorter file is refused as truncated: HDF5 would read zeros).  A file
    rewritten after it was opened (size, mtime, ctime) raises SourceChangedError on the
    next read (:meth:`check`), as the source file itself does."""

    def __init__(self, segments: list[tuple[str, int, int]], nbytes: int, base: str, rel_dir: str, where: str) -> None:
        self.where = where
        self._segs: list[tuple[int, str, int, int, int]] = []  # (fd, path, file offset, start in data, length)
        self._ident: dict[int, tuple[int, int, int]] = {}  # fd -> (size, mtime, ctime) when opened
        acc = 0
        try:
            for name, off, size in segments:
                if acc >= nbytes:
                    break
                what = f"external storage file {name!r}"
                real = confine(base, name, what, rel_dir)
                n = min(int(size), nbytes - acc)
                fd = _open_checked(real, what)
                self._segs.append((fd, real, int(off), acc, n))
                self._ident[fd] = _stamp(os.fstat(fd))
                have = os.fstat(fd).st_size
                if int(off) < 0 or int(off) + n > have:
                    raise RefusedExternal(f"{what} ({real}): expected {n} bytes at byte {off}, the file "
                                          f"holds {have} bytes (a truncated file)")
                acc += n
            if acc < nbytes:
                raise RefusedExternal(f"external storage: the files hold {acc} bytes of the {nbytes} the dataset needs")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        segs, self._segs = self._segs, []
        for fd, *_ in segs:
            try:
                os.close(fd)
            except OSError:
                pass

    def pread_into(self, offset: int, size: int, mv: memoryview, what: str = "") -> None:
        """``size`` bytes of the dataset's data from ``offset`` into ``mv`` (across files)."""
        pos, end, out = offset, offset + size, 0
        for fd, real, foff, start, n in self._segs:
            if pos >= end:
                break
            if pos >= start + n or end <= start:
                continue
            k = min(end, start + n) - pos
            got = 0
            while got < k:
                try:
                    r = os.preadv(fd, [mv[out + got: out + k]], foff + (pos - start) + got)
                except OSError as e:
                    raise HDF5SourceError(f"{self.where}: {what}: read of {real} failed: {e}") from None
                if r <= 0:
                    raise HDF5SourceError(f"{self.where}: {what}: unexpected end of {real} (truncated while open?)")
                got += r
            self._check_one(fd, real, what)
            pos += k
            out += k
        if pos < end:
            raise HDF5SourceError(f"{self.where}: {what}: bytes {pos}..{end} are in no external file")

    def _check_one(self, fd: int, real: str, what: str = "") -> None:
        if _stamp(os.fstat(fd)) != self._ident[fd]:
            raise SourceChangedError(f"{self.where}: the external storage file {real} was rewritten while zarrcy "
                                     f"read it{' (' + what + ')' if what else ''}")

    def check(self) -> None:
        """SourceChangedError if an external file changed since it was opened."""
        for fd, real, *_ in self._segs:
            self._check_one(fd, real)

    def pread(self, offset: int, size: int, into_offset: int = 0, what: str = "") -> bytearray:
        buf = bytearray(into_offset + size)
        self.pread_into(offset, size, memoryview(buf)[into_offset:], what)
        return buf


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def external_link_on_path(group: Any, name: str) -> tuple[str, str, str] | None:
    """``(link path, target file, target object)`` of the first external link met on the
    way to ``name`` from ``group`` (an h5py group), without following it; None if the
    path uses hard and soft links only."""
    import h5py

    cur = group
    parts = [p for p in name.split("/") if p]
    for i, p in enumerate(parts):
        try:
            link = cur.get(p, getlink=True)
        except (OSError, RuntimeError, KeyError, ValueError):
            return None
        if isinstance(link, h5py.ExternalLink):
            return "/".join(parts[: i + 1]), str(link.filename), str(link.path)
        if i + 1 < len(parts):
            try:
                cur = cur[p]
            except (OSError, RuntimeError, KeyError, ValueError):
                return None
            if not isinstance(cur, h5py.Group):
                return None
    return None


def check_virtual(dset: Any, h5file: Any, base: str, rel_dir: str, allow: bool) -> tuple[np.ndarray, np.ndarray]:
    """Check a virtual dataset's sources against the policy and return the element boxes
    ``(lo, hi)`` (int64 arrays of shape ``(n, ndim)``) where it has stored data: the
    stored chunks of each source mapped block to block (the whole mapping when a
    selection is not one block or the source is stored whole), so a huge virtual
    dataset over a sparse source costs what is stored.  Sources in the same file (``"."``) are read by
    default; sources in other files only when ``allow`` (confined to ``base``, the
    files opened and checked here).  A source that is virtual or external itself, or a
    printf-style source name, is refused.  Sources are resolved against ``rel_dir`` (the
    virtual dataset's file's directory, the ``virtual_prefix`` its reads use)."""
    import h5py

    try:
        maps = dset.virtual_sources()
    except (OSError, RuntimeError, ValueError, TypeError) as e:
        raise RefusedExternal(f"cannot read the virtual dataset's mappings: {e}") from None
    nd = len(dset.shape)
    vfill = _fill_bytes(dset)
    los: list[np.ndarray] = [np.empty((0, nd), np.int64)]
    his: list[np.ndarray] = [np.empty((0, nd), np.int64)]
    for m in maps:
        fname, dname = str(m.file_name), str(m.dset_name)
        what = f"virtual dataset source {fname}:{dname}"
        if "%" in fname or "%" in dname:
            raise RefusedExternal(f"{what}: printf-style source names are not read")
        try:
            lo, hi = m.vspace.get_select_bounds()
        except (OSError, RuntimeError, ValueError, TypeError):
            lo, hi = None, None
        if lo is None or hi is None:
            raise RefusedExternal(f"{what}: the mapping has no bounded selection")
        vlo, vhi = np.array(lo, np.int64), np.array(hi, np.int64) + 1
        if fname == ".":
            got = _mapped(_check_source(h5file, dname, what, vfill), m, vlo, vhi)
            los.append(got[0])
            his.append(got[1])
            continue
        if not allow:
            raise RefusedExternal(f"{what}: the source is another file ({OPT_IN})")
        if not os.path.isabs(fname) and os.environ.get("HDF5_VDS_PREFIX"):
            raise RefusedExternal(f"{what}: HDF5_VDS_PREFIX is set, so HDF5 would look for {fname!r} elsewhere")
        real = confine(base, fname, what, rel_dir)
        try:
            with h5py.File(real, "r") as other:
                got = _mapped(_check_source(other, dname, what, vfill), m, vlo, vhi)
        except OSError as e:
            raise RefusedExternal(f"{what}: cannot open {real} as HDF5: {e}") from None
        los.append(got[0])
        his.append(got[1])
    return np.concatenate(los), np.concatenate(his)


def _mapped(src: tuple[tuple[np.ndarray, np.ndarray] | None, tuple[int, ...]], m: Any, vlo: np.ndarray,
            vhi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The source's stored boxes (``None``: stored whole) seen through mapping ``m``
    (virtual block ``[vlo, vhi)``): shifted block to block when both selections are
    one block of the same shape, else the whole virtual block."""
    import h5py

    src_boxes, src_shape = src
    whole = (vlo.reshape(1, -1), vhi.reshape(1, -1))
    try:
        if m.src_space.get_select_type() == h5py.h5s.SEL_ALL:  # the whole source dataset
            slo_a, shi_a = np.zeros(len(src_shape), np.int64), np.array(src_shape, np.int64)
            src_block = True
        else:
            slo, shi = m.src_space.get_select_bounds()
            slo_a, shi_a = np.array(slo, np.int64), np.array(shi, np.int64) + 1
            src_block = m.src_space.get_select_npoints() == int(np.prod(shi_a - slo_a))
        blocks = src_block and m.vspace.get_select_npoints() == int(np.prod(vhi - vlo))
    except (OSError, RuntimeError, ValueError, TypeError):
        return whole
    if src_boxes is None or not blocks or slo_a.shape != vlo.shape or not np.array_equal(shi_a - slo_a, vhi - vlo):
        return whole
    lo = np.maximum(src_boxes[0], slo_a)
    hi = np.minimum(src_boxes[1], shi_a)
    keep = np.all(hi > lo, axis=1)
    return lo[keep] - slo_a + vlo, hi[keep] - slo_a + vlo


def _fill_bytes(dset: Any) -> bytes | None:
    try:
        return np.asarray(dset.fillvalue, dtype=dset.dtype).tobytes()
    except (OSError, RuntimeError, ValueError, TypeError):
        return None


def _check_source(h5file: Any, dname: str, what: str,
                  vfill: bytes | None) -> tuple[tuple[np.ndarray, np.ndarray] | None, tuple[int, ...]]:
    """Refuse a source that is not a plain dataset; return where it has stored data
    (its stored chunks; None: stored whole, or its unallocated chunks read as a fill
    value other than the virtual dataset's ``vfill``) and its shape."""
    import h5py

    link = external_link_on_path(h5file, dname)
    if link is not None:
        raise RefusedExternal(f"{what}: reached through an external link to {link[1]}")
    try:
        src = h5file[dname]
    except (OSError, RuntimeError, KeyError, ValueError) as e:
        raise RefusedExternal(f"{what}: no such source dataset ({e})") from None
    if not isinstance(src, h5py.Dataset) or src.is_virtual or src.external is not None:
        raise RefusedExternal(f"{what}: a source that is not a plain dataset (virtual or external itself) is not read")
    shape = tuple(int(s) for s in src.shape or ())
    nd = len(shape)
    try:
        if not src.chunks or vfill is None or _fill_bytes(src) != vfill:
            return None, shape
        cs = np.array(src.chunks, np.int64).reshape(1, nd)
        offs: list[tuple[int, ...]] = []

        def visit(si: Any) -> None:
            if si.byte_offset is not None:
                offs.append(tuple(si.chunk_offset))

        src.id.chunk_iter(visit)
    except (OSError, RuntimeError, ValueError, TypeError):
        return None, shape  # (read as HDF5 reads it; only the listing is coarser)
    lo = np.array(offs, np.int64).reshape(-1, nd)
    return (lo, np.minimum(lo + cs, np.array(shape, np.int64).reshape(1, nd))), shape
