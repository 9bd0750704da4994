"""HDF5 / NetCDF-4 files as a read-only Zarr v3 store (issue 17).

:class:`HDF5Store` shows one HDF5 file -- or several concatenated along one
dimension -- as a Zarr v3 hierarchy, so everything that reads stores
(``open_group``, ``zarrcy convert``) reads HDF5 unchanged:

* every HDF5 group is a group and every supported dataset an array, each with a
  synthesised ``zarr.json`` (v3-core.rst "Metadata"): same data type, shape, chunk
  grid = the HDF5 chunk shape (contiguous datasets get one: whole rows of about
  :data:`CONTIGUOUS_CHUNK_BYTES`), fill value from ``_FillValue`` or the HDF5 fill
  value, attributes (NetCDF/HDF5 internals such as ``_Netcdf4Dimid``,
  ``DIMENSION_LIST``, ``CLASS`` dropped), ``dimension_names`` from the dimension
  scales (NetCDF dimensions);
* each chunk key ``c/i/j/...`` serves the chunk's *stored* bytes, read straight from
  the file with one ``pread`` (no HDF5 library call and no lock: the chunk index is
  read once per dataset with ``chunk_iter`` into a :class:`~zarrcy.storage.hdf5_file.ChunkTable`
  whose every offset and size was checked against the file first) and prefixed with a
  4-byte little-endian filter mask.  The internal ``zarrcy.hdf5_chunk`` codec
  (:mod:`zarrcy.codecs.hdf5`) undoes the HDF5 filters (deflate, shuffle, fletcher32)
  itself, outside h5py's global lock, so the array's tasks (``ExecContext.map``)
  decode chunks in parallel threads.  This is the one read path of HDF5 data: user
  reads (``a[sel]``, ``oindex``, ``vindex``...) and the converter's region reads alike.
  The served bytes are a memoryview of the reading thread's reused buffer (never
  overwritten while still referenced: no fresh pages per chunk) and ``get`` with a
  byte range covering the whole value returns them without a copy;
* contiguous datasets are served by byte range (one ``pread`` of whole rows per chunk;
  external raw data storage, when allowed, from its checked external files);
* only the chunks holding stored data are listed (:mod:`~zarrcy.storage.hdf5_stored`:
  from the chunk tables, never the grid; :meth:`HDF5Store.stored_chunk_ids`);
* data kept in other files (external storage, virtual-dataset sources, external links)
  is refused unless ``allow_external=True``, and then read only inside the source file's
  directory (:mod:`~zarrcy.storage.hdf5_refs`); refused datasets are listed in
  :attr:`HDF5Store.unsupported` and reading them raises :class:`HDF5SourceError`;
* a source file replaced or rewritten while it is read raises
  :class:`SourceChangedError` (an ``fstat`` after every read; :meth:`HDF5Store.check_unchanged`
  also re-reads the chunk tables);
* datasets whose filters zarrcy does not decode (szip, lzf, scale-offset, n-bit,
  plugins; an optional filter that is not installed is skipped per chunk, as HDF5
  does), compact storage, virtual datasets and variable-length strings
  are read through h5py
  (``dataset[region]``, under its lock); their chunks are served as raw bytes (mask
  ``0xFFFFFFFF``: every filter skipped) or, for strings, in the ``vlen-utf8`` layout.

Data types: numbers, bool, fixed-length bytes (``null_terminated_bytes``),
variable-length UTF-8 strings (``string``), enums (their base integer type, the
mapping as CF ``flag_values``/``flag_meanings``).  Anything else (compound,
variable-length non-string, references, opaque) is listed in :attr:`HDF5Store.unsupported`
with the reason and not shown as a node.

Several files (``HDF5Store([...], concat_dim="time")``): the files are ordered by
their ``concat_dim`` coordinate values; variables with that dimension are
concatenated along it, the others come from the first file and must be equal in
every file (dtype, shape, attributes).  Gaps, overlaps, non-monotonic coordinates
and mismatched variables raise :class:`HDF5SourceError` naming the file and the
variable.

The files and their datasets' layout are read by :mod:`zarrcy.storage.hdf5_file`;
this module is the store view.  Storage layer (layer 2): it knows the codec only by
its JSON name.
"""

from __future__ import annotations

import bisect
import builtins
import json
import math
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from zarrcy.byte_range import ByteRequest
from zarrcy.config import at_fork_reset
from zarrcy.errors import ReadOnlyError, StoreError, expected
from zarrcy.storage._base import Store
from zarrcy.storage._common import check_prefix, resolve_range
from zarrcy.storage.hdf5_refs import OPT_IN, RefusedExternal, confine, external_link_on_path
from zarrcy.storage.hdf5_stored import array_chunk_coords, array_chunk_ids
from zarrcy.storage.hdf5_cf import comparable_attrs, recoded, recoded_from, time_recoders
from zarrcy.storage.hdf5_concat import order_files
from zarrcy.storage.hdf5_file import (  # noqa: F401  (HDF5_SIGNATURE, is_hdf5, expand_sources: re-exported)
    _NC_DIM_ONLY,
    HDF5_SIGNATURE,
    RAW_MASK,
    HDF5SourceError,
    SourceChangedError,
    _attributes,
    _attrs_cmp,
    _cf_chain,
    _File,
    _fill_json,
    _h5py,
    _Skip,
    _valid_name,
    _Var,
    _vlen_utf8,
    _xarray_fill,
    describe,
    expand_sources,
    is_hdf5,
)

__all__ = ["HDF5Store", "HDF5SourceError", "SourceChangedError", "is_hdf5", "HDF5_SIGNATURE", "CODEC_NAME", "CONTIGUOUS_CHUNK_BYTES",
           "expand_sources"]

#: the internal codec that decodes the served chunk bytes (zarrcy/codecs/hdf5.py)
CODEC_NAME = "zarrcy.hdf5_chunk"
#: target decoded size of the chunks given to contiguous datasets
CONTIGUOUS_CHUNK_BYTES = 4 << 20
META_KEY = "zarr.json"
#: per-thread served-chunk buffers up to this size are kept between reads (:func:`_served_buffer`)
KEEP_SERVED_BYTES = 64 << 20
#: at most this many external links are followed (allow_external=True)
MAX_LINKED = 256

_SERVED = threading.local()


@at_fork_reset
def _reset_served_after_fork() -> None:
    """Forked child: forget the forking thread's buffer (per-thread state, CONVENTIONS 13)."""
    global _SERVED
    _SERVED = threading.local()


def _served_buffer(nbytes: int) -> np.ndarray:
    """A uint8 buffer of at least ``nbytes`` for one served chunk: this thread's reused
    one when nothing else still references it (every view of it served before has been
    dropped -- a held one is never overwritten: a new buffer is made), so reading chunk
    after chunk faults in no fresh pages.  Bounded: one buffer per thread, kept only up
    to ``KEEP_SERVED_BYTES``."""
    if nbytes > KEEP_SERVED_BYTES:
        return np.empty(nbytes, np.uint8)
    d = _SERVED.__dict__
    buf: np.ndarray | None = d.get("buf")
    # references when free: the thread's dict, ``buf`` and getrefcount's argument
    if buf is None or buf.shape[0] < nbytes or sys.getrefcount(buf) > 3:
        buf = np.empty(max(nbytes + (nbytes >> 3), 64), np.uint8)  # headroom: stored sizes vary
        d["buf"] = buf
    return buf

# --------------------------------------------------------------------------------------
# nodes as the store shows them (possibly several files per array)
# --------------------------------------------------------------------------------------
@dataclass
class _Array:
    path: str
    doc: dict[str, Any]
    chunk_shape: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype                      # zarr (native) dtype
    parts: list[_Var]                    # one per file along concat_axis (or one)
    concat_axis: int | None = None
    starts: list[int] = field(default_factory=list)   # chunk-grid start of each part along concat_axis
    direct: bool = True                  # chunks map 1:1 onto the HDF5 chunks of each part
    # CF (zarrcy/storage/hdf5_cf.py): per part, the function re-encoding its time values
    # (None: served as stored); scale_factor/add_offset as stored; "file (units)" re-encoded
    recode: list[Any] | None = None
    packing: dict[str, Any] = field(default_factory=dict)
    recoded_from: list[str] = field(default_factory=list)


def _contiguous_chunks(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Whole trailing rows of about CONTIGUOUS_CHUNK_BYTES (a chunk is then one byte
    range of a contiguous dataset); the leading dimension split first."""
    if not shape:
        return ()
    chunks = list(shape)
    for d in range(len(shape)):
        rest = math.prod(chunks[d + 1:]) * itemsize
        if rest <= 0:
            break
        if rest * shape[d] <= CONTIGUOUS_CHUNK_BYTES:
            break
        chunks[d] = max(1, CONTIGUOUS_CHUNK_BYTES // rest)
        if chunks[d] > 1 or rest <= CONTIGUOUS_CHUNK_BYTES:
            break
    return tuple(max(1, c) for c in chunks)


class HDF5Store(Store):
    """A read-only Zarr v3 view of one HDF5 file or of several concatenated along
    ``concat_dim`` (see the module docstring).  Pickles as (paths, concat_dim)."""

    supports_writes = False
    supports_deletes = False
    supports_partial_reads = True

    def __init__(self, paths: str | Sequence[str], concat_dim: str | None = None, cf_packing: str = "keep",
                 allow_external: bool = False, expect: Sequence[Sequence[int]] | None = None,
                 time_units: str | None = None) -> None:
        super().__init__(read_only=True)
        #: read data kept in other files (external storage, virtual-dataset sources,
        #: external links) when inside the source file's directory (zarrcy/storage/hdf5_refs.py)
        self.allow_external = bool(allow_external)
        if time_units is not None and concat_dim is None:
            raise HDF5SourceError("--time-units: applies to the files joined along --concat-dim (pass --concat-dim)")
        #: CF time variables along concat_dim are re-encoded onto these units (None: the first file's)
        self.time_units = time_units
        if cf_packing not in ("keep", "chain"):
            raise HDF5SourceError(expected("cf_packing", "'keep' or 'chain'", cf_packing))
        self.cf_packing = cf_packing
        if isinstance(paths, (str, os.PathLike)):
            paths = [os.fspath(paths)]
        self.paths = [os.path.abspath(os.fspath(p)) for p in paths]
        if not self.paths:
            raise HDF5SourceError("no HDF5 source files")
        self.concat_dim = concat_dim
        self._files: list[_File] = []
        #: path -> reason, for datasets that have no Zarr v3 form (compound, references...)
        self.unsupported: dict[str, str] = {}
        self._groups: dict[str, dict[str, Any]] = {}
        self._arrays: dict[str, _Array] = {}
        self._docs: dict[str, bytes] = {}
        self._children: dict[str, set[str]] = {}
        self._linked: dict[str, _File] = {}  # files reached through external links (allowed)
        try:
            for i, p in enumerate(self.paths):  # ``expect``: the identities a pickle carries
                self._files.append(_File(p, self.allow_external, expect=None if expect is None else expect[i]))
            if concat_dim is not None and len(self._files) > 1:
                self._order_files()
            self._scan()
        except BaseException:
            self.close()
            raise

    # -- identity -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if len(self.paths) == 1:
            return self.paths[0]
        return f"{self.paths[0]} (+{len(self.paths) - 1} files along {self.concat_dim!r})"

    def __reduce__(self):
        if not self._files:
            return (HDF5Store, (self.paths, self.concat_dim, self.cf_packing, self.allow_external, None,
                                self.time_units))
        return (HDF5Store, ([f.path for f in self._files], self.concat_dim, self.cf_packing, self.allow_external,
                            self.identity(), self.time_units))

    def __repr__(self) -> str:
        return f"HDF5Store({self.url!r})"

    def close(self) -> None:
        for f in [*self._files, *self._linked.values()]:
            f.close()
        self._files = []
        self._linked = {}

    def __del__(self) -> None:  # unpickled copies (one per Dask task) close their files when dropped
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    # -- scanning -------------------------------------------------------------------------
    def _order_files(self) -> None:
        """Sort the files by their concat_dim coordinate (zarrcy/storage/hdf5_concat.py)."""
        assert self.concat_dim is not None
        self._files = order_files(self._files, self.concat_dim, self.time_units)

    def _scan(self) -> None:
        first = self._files[0]
        self._groups[""] = {"zarr_format": 3, "node_type": "group", "attributes": _attributes(first.h5)}
        self._children[""] = set()
        # (store path of the root, file, object path in the file): the source file, then
        # the groups external links lead to (when allowed)
        roots: list[tuple[str, _File, str]] = [("", first, "/")]
        seen = {(os.path.realpath(first.path), "/")}
        while roots:
            prefix, f, obj = roots.pop(0)
            self._scan_root(prefix, f, obj, roots, seen)
        if self.concat_dim is not None and len(self._files) > 1 and not any(
                a.concat_axis is not None for a in self._arrays.values()):
            raise HDF5SourceError(f"{first.path}: --concat-dim {self.concat_dim!r}: expected a dimension of some "
                                  "variable, received a name no variable uses")
        for k in list(self._children):  # every parent exists as a group
            if k and k not in self._groups:
                self._groups[k] = {"zarr_format": 3, "node_type": "group", "attributes": {}}

    def _scan_root(self, prefix: str, f: _File, obj: str, roots: list[tuple[str, _File, str]],
                   seen: set[tuple[str, str]]) -> None:
        """Show the hierarchy under ``obj`` of file ``f`` at store path ``prefix``;
        external links met there are refused, or queued on ``roots`` when allowed."""
        h5py = _h5py()
        visits: list[tuple[str, Any]] = []

        def visit(name: str, o: Any) -> None:
            visits.append((name, o))

        try:
            with f.lock:
                top = f.h5[obj]
                top.visititems(visit)  # hard links only: external links are listed below
                groups = [("", top)] + [(n, o) for n, o in visits if isinstance(o, h5py.Group)]
                links = [(f"{n}/{k}" if n else k, lk) for n, g in groups for k in g
                         if isinstance(lk := g.get(k, getlink=True), h5py.ExternalLink)]
        except (OSError, RuntimeError, KeyError, ValueError) as e:
            raise HDF5SourceError(f"{f.path}: cannot list the HDF5 hierarchy (truncated or damaged?): {e}") from None
        base_obj = obj.strip("/")
        for name, o in visits:
            spath = f"{prefix}/{name}" if prefix else name
            parent, _, base = spath.rpartition("/")
            if not _valid_name(base):
                self.unsupported[spath] = f"name {base!r} is not a valid Zarr node name"
                continue
            if isinstance(o, h5py.Group):
                self._groups[spath] = {"zarr_format": 3, "node_type": "group", "attributes": _attributes(o)}
                self._children.setdefault(spath, set())
                self._children.setdefault(parent, set()).add(base)
            elif isinstance(o, h5py.Dataset):
                if o.attrs.get("NAME", b"").startswith(_NC_DIM_ONLY) if isinstance(o.attrs.get("NAME", b""), bytes) else False:
                    continue  # a NetCDF dimension without a coordinate variable: not a variable
                try:
                    arr = self._array(spath, f, f"{base_obj}/{name}" if base_obj else name)
                except _Skip as e:
                    self.unsupported[spath] = str(e)
                    continue
                self._arrays[spath] = arr
                self._children.setdefault(parent, set()).add(base)
        for name, lk in links:
            spath = f"{prefix}/{name}" if prefix else name
            self._follow(spath, f, str(lk.filename), str(lk.path), roots, seen)

    def _follow(self, spath: str, f: _File, fname: str, target: str, roots: list[tuple[str, _File, str]],
                seen: set[tuple[str, str]]) -> None:
        """The external link at store path ``spath`` (to ``fname``:``target``): refused
        (listed in :attr:`unsupported`) unless allowed, single-file and inside the source
        file's directory; then its target is shown there (a dataset, or a group whose
        hierarchy is scanned in turn)."""
        h5py = _h5py()
        parent, _, base = spath.rpartition("/")
        what = f"external link to {fname}:{target}"
        if not _valid_name(base):
            self.unsupported[spath] = f"name {base!r} is not a valid Zarr node name"
            return
        if not f.allow_external:
            self.unsupported[spath] = f"{what}: zarrcy reads no file but the source ({OPT_IN})"
            return
        if len(self._files) > 1:
            self.unsupported[spath] = f"{what}: external links are followed for a single source file only"
            return
        try:
            real = confine(f.root, fname, what, f.dir)
        except RefusedExternal as e:
            self.unsupported[spath] = str(e)
            return
        if (real, "/" + target.strip("/")) in seen or len(seen) > MAX_LINKED:
            self.unsupported[spath] = f"{what}: a cycle of external links (or more than {MAX_LINKED})"
            return
        seen.add((real, "/" + target.strip("/")))
        tf = self._linked.get(real)
        if tf is None:
            tf = self._linked[real] = _File(real, True, f.root)
        with tf.lock:
            hop = external_link_on_path(tf.h5, target)
            try:
                o = None if hop is not None else tf.h5[target]
            except (OSError, RuntimeError, KeyError, ValueError) as e:
                self.unsupported[spath] = f"{what}: no such object ({e})"
                return
        if hop is not None:
            self.unsupported[spath] = f"{what}: the target is behind another external link ({hop[1]})"
        elif isinstance(o, h5py.Group):
            self._groups[spath] = {"zarr_format": 3, "node_type": "group", "attributes": _attributes(o)}
            self._children.setdefault(spath, set())
            self._children.setdefault(parent, set()).add(base)
            roots.append((spath, tf, target))
        else:
            try:
                self._arrays[spath] = self._array(spath, tf, target.strip("/"))
            except _Skip as e:
                self.unsupported[spath] = str(e)
                return
            self._children.setdefault(parent, set()).add(base)

    def _array(self, name: str, file: _File | None = None, obj: str | None = None) -> _Array:
        """Array ``name`` of the store: dataset ``obj`` (default ``name``) of ``file``
        (default the first source file), concatenated with the same dataset of the other
        files along ``concat_dim``."""
        from zarrcy.metadata.data_type import from_numpy

        var, info = describe(file or self._files[0], name if obj is None else obj)
        zdt: np.dtype = info["zdt"]
        dims = info["dims"]
        parts = [var]
        infos = [info]
        axis = None
        if self.concat_dim is not None and len(self._files) > 1:
            if dims is not None and self.concat_dim in dims:
                axis = dims.index(self.concat_dim)
            for f in self._files[1:]:
                try:
                    with f.lock:  # (an external link on the way is refused by describe, never followed)
                        present = external_link_on_path(f.h5, name) is not None or name in f.h5
                except (OSError, RuntimeError, ValueError):
                    present = False
                if not present:
                    raise HDF5SourceError(f"{f.path}: variable /{name}: expected in every file (it is in "
                                          f"{self._files[0].path}), received no such variable")
                try:
                    v2, i2 = describe(f, name)
                except _Skip as e:
                    raise HDF5SourceError(f"{f.path}: variable /{name}: {e} (readable in {self._files[0].path})") from None
                what = None
                if i2["zdt"] != zdt or v2.dtype != var.dtype:
                    what = f"data type {var.dtype}, received {v2.dtype}"
                elif len(v2.shape) != len(var.shape) or any(
                        a != b for d, (a, b) in enumerate(zip(v2.shape, var.shape)) if d != axis):
                    what = f"shape {var.shape} (except along {self.concat_dim!r}), received {v2.shape}"
                elif i2["dims"] != dims:
                    what = f"dimensions {dims}, received {i2['dims']}"
                elif _attrs_cmp(comparable_attrs(i2["attrs"], axis)) != _attrs_cmp(comparable_attrs(info["attrs"], axis)):
                    diff = sorted(k for k in set(i2["attrs"]) | set(info["attrs"])
                                  if _attrs_cmp(i2["attrs"].get(k)) != _attrs_cmp(info["attrs"].get(k)))
                    what = f"the attributes of {self._files[0].path}, received different {', '.join(diff)}"
                elif _attrs_cmp(i2["fill"]) != _attrs_cmp(info["fill"]):
                    what = f"fill value {info['fill']!r}, received {i2['fill']!r}"
                if what is not None:
                    raise HDF5SourceError(f"{f.path}: variable /{name}: expected {what}")
                if axis is not None:
                    parts.append(v2)
                    infos.append(i2)
        recode = time_recoders(self._files, name, infos, self.time_units) if axis is not None else None
        shape = list(var.shape)
        if axis is not None:
            shape[axis] = sum(p.shape[axis] for p in parts)
        # the chunk grid: the HDF5 chunk shape (chunked datasets), else rows of ~4 MiB
        mixed = False  # the files chunk the variable differently: chunks through h5py
        if var.kind == "chunked" or (var.kind in ("h5py", "vlen") and var.h5_chunks):
            chunk = list(var.h5_chunks or ())
            if any(p.h5_chunks != var.h5_chunks or p.kind != var.kind for p in parts):
                chunk = list(_contiguous_chunks(tuple(shape), max(1, zdt.itemsize)))
                mixed = True
        else:
            chunk = list(_contiguous_chunks(tuple(shape), max(1, zdt.itemsize if zdt.kind != "O" else 16)))
        direct = var.kind in ("chunked", "contiguous") and not mixed and not (recode and any(recode))
        starts = [0]
        if axis is not None:
            # every part must start on a chunk boundary along the concat axis for the chunks
            # to be the files' own; otherwise chunks of gcd size, read through h5py
            lens = [p.shape[axis] for p in parts]
            c = chunk[axis]
            if any(n % c for n in lens[:-1]):
                g = c
                for n in lens[:-1]:
                    g = math.gcd(g, n)
                chunk[axis] = max(1, g)
                direct = direct and var.kind == "contiguous"
            starts = []
            acc = 0
            for n in lens:
                starts.append(acc // chunk[axis])
                acc += n
        if var.kind == "contiguous":
            # a chunk must be one byte range: whole trailing rows only
            for d in range(len(shape)):
                if chunk[d] != shape[d] and any(chunk[e] != shape[e] for e in range(d + 1, len(shape))):
                    direct = False
        chunk = [max(1, c) for c in chunk]
        dt3 = from_numpy(zdt if zdt.kind != "O" else "str")
        if info["kind"] == "vlen":
            codecs: list[Any] = [{"name": "vlen-utf8"}]
        else:
            endian = "big" if var.dtype.byteorder == ">" else "little"
            filters = var.codec_filters() if var.kind == "chunked" else []
            codecs = [{"name": CODEC_NAME, "configuration": {"filters": filters, "endian": endian}}]
        doc: dict[str, Any] = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": shape,
            "data_type": dt3.to_json(),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": _fill_json(zdt, info["fill"]),
            "codecs": codecs,
            "attributes": info["attrs"],
        }
        if dims is not None:
            doc["dimension_names"] = dims
        if recode is not None and self.time_units is not None:
            doc["attributes"] = {**doc["attributes"], "units": self.time_units}
        if info["has_fill_attr"]:
            xf = _xarray_fill(zdt, info["fill"])
            if xf is not None:
                doc["attributes"] = {**doc["attributes"], "_FillValue": xf}
        packing = info["packing"]
        if (self.cf_packing == "chain" and packing and zdt.kind in "iu" and not info["enum"]
                and all(np.asarray(v).dtype.kind in "iuf" for v in packing.values())):
            _cf_chain(doc, zdt, packing, info["fill"], info["has_fill_attr"])
        return _Array(name, doc, tuple(chunk), tuple(shape), zdt, parts, axis, starts, direct,
                      recode if recode and any(recode) else None, dict(packing), recoded_from(parts, infos, recode))

    def cf_record(self, path: str) -> Any:
        """Array ``path``'s record: its ``parts`` (one dataset per file), ``packing`` and
        ``recoded_from`` (for :mod:`zarrcy.storage.hdf5_cf`)."""
        return self._arrays[path]

    def validate_array(self, path: str) -> None:
        """Check that the stored bytes of array ``path`` lie inside their files
        (HDF5SourceError naming file and variable otherwise): a truncated file."""
        a = self._arrays[path]
        for part in a.parts:
            if part.kind == "chunked":
                part.chunk_index()
                part.check_masks()
            elif part.kind == "contiguous" and part.contiguous_offset is not None and part.external is None:
                n = math.prod(part.shape) * part.dtype.itemsize
                if part.contiguous_offset + n > part.file.size:
                    raise HDF5SourceError(expected(
                        f"{part.file.path}: variable /{part.name}: data at byte {part.contiguous_offset}",
                        f"{n} bytes inside the file ({part.file.size} bytes)", "a truncated file"))

    def identity(self) -> list[list[int]]:
        """What each source file was when opened (device, inode, size, mtime, ctime):
        part of a conversion's resume fingerprint, and carried by pickles (a Dask
        worker's copy refuses a file that changed since)."""
        return [list(f.identity) for f in self._files]

    def check_unchanged(self) -> None:
        """Raise :class:`SourceChangedError` naming the file if a source file was
        replaced or rewritten since it was opened: its path and descriptor (size, mtime,
        ctime, inode), then a second look at the chunk table of every dataset whose
        table was read, through a fresh handle (HDF5 caches what it read)."""
        h5py = _h5py()
        files = [*self._files, *self._linked.values()]
        for f in files:
            f.check_path()
            for ext in f.externals:
                ext.check()
        for f in files:
            parts = [p for a in self._arrays.values() for p in a.parts if p.file is f and p.index is not None]
            if not parts:
                continue
            try:  # through a Python file object: HDF5 would share (and cache) a second open of the path
                with f.lock, open(f.path, "rb") as fh, h5py.File(fh, "r") as fresh:
                    for p in parts:
                        assert p.index is not None
                        if not p.index.same(p.read_chunk_table(fresh[p.name])):
                            raise SourceChangedError(f"{f.path}: the source file was rewritten while zarrcy read "
                                                     f"it (the chunk index of /{p.name} changed)")
            except (OSError, KeyError, ValueError, RuntimeError) as e:
                if isinstance(e, HDF5SourceError):
                    raise SourceChangedError(f"{f.path}: the source file changed while zarrcy read it ({e})") from None
                raise SourceChangedError(f"{f.path}: the source file changed while zarrcy read it: {e}") from None
            f.check_path()

    # -- reads ----------------------------------------------------------------------------
    def _doc(self, path: str) -> bytes | None:
        raw = self._docs.get(path)
        if raw is None:
            doc = self._groups.get(path)
            if doc is None:
                a = self._arrays.get(path)
                if a is None:
                    return None
                doc = a.doc
            raw = self._docs[path] = json.dumps(doc, allow_nan=False).encode()
        return raw

    def _locate(self, key: str) -> tuple[_Array, tuple[int, ...]] | None:
        """(array, chunk coordinates) of a chunk key in the default encoding, else None."""
        coords: tuple[int, ...]
        if key.endswith("/c"):
            path, coords = key[:-2], ()
        else:
            path, sep, rest = key.rpartition("/c/")
            if not sep:
                return None
            parts = rest.split("/")
            # canonical decimals only (as the default key encoding): "c/01" is no alias of "c/1"
            if not all(p.isascii() and p.isdigit() and (p[0] != "0" or p == "0") for p in parts):
                return None
            coords = tuple(int(p) for p in parts)
        a = self._arrays.get(path)
        if a is None or len(coords) != len(a.shape) or any(s == 0 for s in a.shape):
            return None
        for c, s, cs in zip(coords, a.shape, a.chunk_shape):
            if c * cs >= s:
                return None
        return a, coords

    @staticmethod
    def _part(a: _Array, coords: tuple[int, ...]) -> tuple[_Var, list[int]]:
        """The file part holding chunk ``coords`` and the chunk's coordinates in it."""
        part, local = a.parts[0], list(coords)
        if a.concat_axis is not None:
            ax = a.concat_axis
            i = max(0, bisect.bisect_right(a.starts, coords[ax]) - 1)  # empty parts: the later one
            part = a.parts[i]
            local[ax] = coords[ax] - a.starts[i]
        return part, local

    @staticmethod
    def _target(n: int) -> memoryview:
        """``n`` writable bytes of this thread's served-chunk buffer (:func:`_served_buffer`)."""
        return memoryview(_served_buffer(n))[:n]

    def _chunk(self, a: _Array, coords: tuple[int, ...]) -> bytes | bytearray | memoryview | None:
        """The served bytes of chunk ``coords`` (see the module docstring).  Stored chunks
        and contiguous byte ranges are read with one ``pread`` at offsets the chunk table
        checked against the file size."""
        part, local = self._part(a, coords)
        cs = a.chunk_shape
        lo = [c * s for c, s in zip(local, cs)]
        region = tuple(slice(o, min(o + s, n)) for o, s, n in zip(lo, cs, part.shape))
        if any(r.start >= r.stop for r in region):
            return None
        if a.direct and part.kind == "chunked":
            hit = part.chunk_index().get(tuple(local))
            if hit is None:
                return None
            off, size, mask = hit
            if part.filters:
                mask = part.codec_mask(mask, local)
            mv = self._target(size + 4)
            part.file.pread_into(off, size, mv[4:], f"variable /{part.name} chunk {list(local)}")
            mv[0:4] = mask.to_bytes(4, "little")
            return mv
        if a.direct and part.kind == "contiguous":
            if part.contiguous_offset is None:
                return None  # never written: the fill value
            raw = part.raw()  # the file, or its external files (checked: hdf5_refs.py)
            strides = [part.dtype.itemsize * math.prod(part.shape[d + 1:]) for d in range(len(part.shape))]
            start = part.contiguous_offset + sum(o * st for o, st in zip(lo, strides))
            n = math.prod(r.stop - r.start for r in region) * part.dtype.itemsize
            what = f"variable /{part.name} rows {[(r.start, r.stop) for r in region]}"
            if tuple(r.stop - r.start for r in region) != tuple(cs):
                return self._pad(a, raw.pread(start, n, 0, what), region, part.dtype)
            mv = self._target(n + 4)
            raw.pread_into(start, n, mv[4:], what)
            mv[0:4] = RAW_MASK.to_bytes(4, "little")
            return mv
        # through h5py (its filters, its lock)
        try:
            with part.file.lock:
                data = part.dataset()[region]
        except (OSError, RuntimeError, ValueError, TypeError) as e:
            raise HDF5SourceError(f"{part.file.path}: variable /{part.name}: cannot read {region}: {e}") from None
        part.file.check(f"variable /{part.name}")
        if a.recode is not None and (fn := a.recode[a.parts.index(part)]) is not None:
            data = recoded(fn, data, part.file, part.name)
        if part.kind == "vlen":
            return _vlen_utf8(data, cs, region)
        return self._pad(a, np.ascontiguousarray(data, dtype=part.dtype).view(np.uint8).reshape(-1), region, part.dtype)

    def _pad(self, a: _Array, raw: Any, region: tuple[slice, ...], dtype: np.dtype) -> bytearray:
        """``raw`` (the C-order bytes of ``region``) as a whole raw chunk (mask: every
        filter skipped); the part outside the array stays zero."""
        cs = a.chunk_shape
        sub = tuple(r.stop - r.start for r in region)
        arr = np.frombuffer(raw, dtype=dtype).reshape(sub)
        out = bytearray(4 + math.prod(cs) * dtype.itemsize)
        out[0:4] = RAW_MASK.to_bytes(4, "little")
        full = np.frombuffer(out, dtype=dtype, offset=4).reshape(cs)
        # the part outside the array is never read (v3-core.rst "Chunk grids": edge chunks)
        full[tuple(slice(0, s) for s in sub)] = arr
        return out

    def get(self, key: str, byte_range: ByteRequest = None) -> bytes | None:
        if type(key) is not str:
            raise StoreError(expected("key", "a str", key))
        if key == META_KEY or key.endswith("/" + META_KEY):
            path = key[: -len(META_KEY)].rstrip("/")
            value: Any = self._doc(path)
            if value is None and path in self.unsupported:  # refused, never silently absent
                raise HDF5SourceError(f"{self.url}: variable /{path}: {self.unsupported[path]}")
        else:
            loc = self._locate(key)
            if loc is None:
                return None
            value = self._chunk(*loc)
        if value is None:
            return None
        if byte_range is not None:
            start, stop = resolve_range(byte_range, len(value))
            if start != 0 or stop != len(value):
                return bytes(value[start:stop])
        # a chunk: the served bytes as they are, no copy (a memoryview of this thread's
        # reused buffer, never overwritten while the caller holds it; see _served_buffer)
        return value  # bytes-like (Buffer), as readers use it

    def getsize(self, key: str) -> int | None:
        """Size of a value without reading it: the chunk index has the stored size; a
        chunk read through h5py counts its served (decoded) size."""
        loc = self._locate(key) if not key.endswith(META_KEY) else None
        if loc is not None:
            a, coords = loc
            part, local = self._part(a, coords)
            if a.direct and part.kind == "chunked":
                hit = part.chunk_index().get(tuple(local))
                return None if hit is None else hit[1] + 4
            if part.kind != "vlen":
                return 4 + math.prod(a.chunk_shape) * a.dtype.itemsize
        v = self.get(key)
        return None if v is None else len(v)

    def exists(self, key: str) -> bool:
        if key == META_KEY or key.endswith("/" + META_KEY):
            return self._doc(key[: -len(META_KEY)].rstrip("/")) is not None
        return self.getsize(key) is not None

    # -- writes: none ---------------------------------------------------------------------
    def set(self, key: str, value: Any) -> None:
        raise ReadOnlyError(f"{self.url}: HDF5 sources are read-only")

    def erase(self, key: str) -> None:
        raise ReadOnlyError(f"{self.url}: HDF5 sources are read-only")

    def erase_prefix(self, prefix: str) -> None:
        raise ReadOnlyError(f"{self.url}: HDF5 sources are read-only")

    # -- listing --------------------------------------------------------------------------
    def stored_chunk_ids(self, path: str) -> np.ndarray | None:
        """Sorted linear ids (C order in the array's chunk grid) of the chunks of array
        ``path`` that hold stored data -- from the chunk tables, so time and memory follow
        the stored chunks, never the grid (issue 23: a ``2**50``-element dataset with one
        chunk written) -- or None when some file part is stored whole (allocated
        contiguous, compact, external data: every chunk of it holds data)."""
        a = self._arrays[path]
        return array_chunk_ids(a.shape, a.chunk_shape, a.parts, a.concat_axis)

    def _chunk_keys(self, a: _Array) -> Iterator[str]:
        """The keys of the chunks holding stored data (:meth:`stored_chunk_ids`; parts
        stored whole: every chunk of their extent, lazily)."""
        pre = (a.path + "/c") if a.path else "c"
        for coords in array_chunk_coords(a.shape, a.chunk_shape, a.parts, a.concat_axis):
            yield pre + "".join(f"/{c}" for c in coords)

    def list(self) -> Iterator[str]:
        for g in self._groups:
            yield (g + "/" if g else "") + META_KEY
        for p, a in self._arrays.items():
            yield (p + "/" if p else "") + META_KEY
            yield from self._chunk_keys(a)

    def list_prefix(self, prefix: str) -> Iterator[str]:
        check_prefix(prefix)
        return (k for k in self.list() if k.startswith(prefix))

    def list_dir(self, prefix: str) -> builtins.list[str]:
        check_prefix(prefix)
        path = prefix.rstrip("/")
        out: set[str] = set()
        if path in self._groups:
            out.update(self._children.get(path, ()))
            out.add(META_KEY)
        elif path in self._arrays:
            out.add(META_KEY)
            if not any(s == 0 for s in self._arrays[path].shape):
                out.add("c")
        return sorted(out)


