"""The conversion engine behind ``zarrcy convert`` and :func:`zarrcy.convert`.

Options -> select nodes -> plan -> journal -> create destination nodes -> convert
regions -> verify -> clean up.  This module is the driver; each role is an object of its
own with declared inputs: :class:`~zarrcy.convert.options.Settings` (the options,
parsed and checked once: an error names the option), :class:`~zarrcy.convert.plan.Planner`
(what each array becomes; with :mod:`~zarrcy.convert.cf`, the CF mapping),
:class:`~zarrcy.convert.journal.Journal` (resume state),
:mod:`~zarrcy.convert.execute` (reading/writing/verifying regions, the runners),
:mod:`~zarrcy.convert.model` (plans, results, the report).

* **Regions.** Each destination array is split into regions aligned to its stored
  objects: one shard per region when sharded, else a block of whole chunks of about
  ``region_bytes`` (decoded).  No two regions touch the same stored object, so workers
  (threads, or Dask tasks) need no locks, and memory stays bounded by a few regions
  per worker whatever the array size.  A rectilinear source grid
  (ext-chunk-grid-rectilinear.md) is kept unless ``--chunks``/``--shards`` rechunk it:
  its regions are whole source chunks (shards), grouped along axes the same way.
* **Modes.** ``copy`` moves the stored chunk bytes unchanged (metadata-only
  migration: a v2/v1 array whose codecs zarrcy has natively becomes a v3 array with the
  ``v2`` chunk key encoding; or nothing changes at all); ``rewrite`` reads the source
  region, and writes it through the destination's codecs.
* **Journal (resume).** ``<dst>/__zarrcy_convert/plan.json`` is written first (the
  options' fingerprint); after a region's objects are written, the CRC32C of each
  object (or "absent") goes atomically to
  ``__zarrcy_convert/arrays/<array path>/__done/<region id>``.  ``--resume`` checks
  the plan matches, re-reads each journaled region's objects and skips the region when
  every checksum matches; everything else is (re)done.  Stored values are written
  atomically (temp + rename), so a crash loses at most the regions in flight.  When
  every array is complete the whole ``__zarrcy_convert/`` prefix is erased: the
  finished output holds nothing but the converted nodes (byte-identical to an
  uninterrupted run).  Keys starting with ``__`` are reserved (v3-core.rst "Node names").
  Append-only stores (zip) get no journal and cannot be resumed.
* **In place.** ``SRC == DST`` (same directory and path) is allowed only for the
  metadata-only v2/v1 -> v3 migration: a ``zarr.json`` is added beside each node and no
  chunk is touched.  Any other overlap of source and destination is refused.
"""

from __future__ import annotations

import errno
import fnmatch
import math
import operator
import os
import threading
import time
from typing import Any, Sequence

import numpy as np

from zarrcy.array import META_KEY, Array, write_metadata
from zarrcy.casting import merge_reports
from zarrcy.errors import CorruptChunkError, MetadataError, ZarrcyError, expected
from zarrcy.group import open_node
from zarrcy.convert.execute import (QuantizeCheck, RegionTask, _check_quantize, _run_dask, _run_threads, _same,
                                    encoded_recorder, recording)
from zarrcy.convert.journal import JOURNAL_DIR, Journal, _fingerprint
from zarrcy.convert.model import ArrayPlan, ConvertError, ConvertOptions, ConvertReport, RegionResult, _join, _prefix
from zarrcy.convert.options import Settings, parse_settings
from zarrcy.convert.plan import Planner, _Unsupported, dst_metadata, estimate, group_metadata
from zarrcy.convert.progress import Progress
from zarrcy.convert.regions import region_selection
from zarrcy.storage import LocalStore, Store

__all__ = ["ConvertError", "ConvertOptions", "ConvertReport", "convert", "JOURNAL_DIR"]


def is_enospc(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return True
        if "No space left" in str(exc) or "ENOSPC" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def _matches(path: str, patterns: Sequence[str]) -> bool:
    """True if ``path`` or one of its ancestors matches a glob (``/`` prefixes optional)."""
    parts = path.split("/") if path else []
    cands = ["/".join(parts[: i + 1]) for i in range(len(parts))] or [""]
    for pat in patterns:
        p = pat.strip("/")
        for c in cands:
            if fnmatch.fnmatchcase(c, p):
                return True
    return False


# --------------------------------------------------------------------------------------
# options and stores
# --------------------------------------------------------------------------------------
def _check_options(o: ConvertOptions) -> Settings:
    """Every option checked before anything is opened or planned (exit 2, one line
    naming the option)."""
    if isinstance(o.progress, bool):  # progress=False / True (Python callers)
        o.progress = "auto" if o.progress else "off"
    for name, value, allowed in (("--on-error", o.on_error, ("stop", "skip")),
                                 ("--on-unsupported", o.on_unsupported, ("stop", "skip")),
                                 ("--cf-packing", o.cf_packing, ("keep", "chain")),
                                 ("--quantize-check", o.quantize_check, ("first", "inline")),
                                 ("--progress", o.progress, ("auto", "bar", "lines", "off"))):
        if value not in allowed:
            raise ConvertError(expected(name, " or ".join(repr(a) for a in allowed), value), 2)
    if o.workers is not None:
        try:
            ok = not isinstance(o.workers, bool) and operator.index(o.workers) >= 1
        except TypeError:
            ok = False
        if not ok:
            raise ConvertError(expected("--workers", "a positive integer", o.workers), 2)
        o.workers = operator.index(o.workers)
    if o.dask is not None and o.dask.startswith("local"):
        n = o.dask.partition(":")[2]
        if n and (not n.isdigit() or int(n) < 1):
            raise ConvertError(expected("--dask", "tcp://host:port or local:N with N >= 1", o.dask), 2)
    try:
        return parse_settings(o)
    except MetadataError as e:
        raise ConvertError(str(e), 2) from None


def _open_stores(src: Any, dst: Any, o: ConvertOptions) -> tuple[Any, Any]:
    from zarrcy.storage import store_from_url
    from zarrcy.convert.hdf5 import HDF5SourceError, open_source

    try:  # HDF5 / NetCDF-4: one file, or several along --concat-dim (zarrcy/convert/hdf5.py)
        s = (open_source(src, o.concat_dim, o.cf_packing, o.allow_external, o.time_units)
             or store_from_url(src, mode="r"))
    except HDF5SourceError as e:
        raise ConvertError(f"source: {e}", 2) from None
    if o.time_units is not None and not _is_hdf5_store(s):
        raise ConvertError("--time-units: applies to HDF5 / NetCDF-4 files joined with --concat-dim", 2)
    if o.dry_run:
        try:
            d = store_from_url(dst, mode="r")
        except ZarrcyError:
            d = None
    else:
        d = store_from_url(dst, mode="a")
    return s, d


def _is_hdf5_store(store: Any) -> bool:
    from zarrcy.storage.hdf5 import HDF5Store

    return isinstance(store, HDF5Store)


def _node_exists(store: Any, path: str) -> bool:
    from zarrcy.storage._common import get_metadata

    p = _prefix(path)
    return any(get_metadata(store, p + k) is not None for k in (META_KEY, ".zarray", ".zgroup"))


def _walk(node: Any) -> tuple[list[tuple[str, Any]], list[tuple[str, Array]]]:
    if isinstance(node, Array):
        return [], [("", node)]
    groups: list[tuple[str, Any]] = [("", node)]
    arrays: list[tuple[str, Array]] = []
    for rel, n in node.walk():
        (arrays if isinstance(n, Array) else groups).append((rel, n))
    return groups, arrays


def convert(src: Any, dst: Any, **kwargs: Any) -> ConvertReport:
    """Convert the Zarr v1/v2/v3 array or hierarchy (or HDF5 / NetCDF-4 file(s)) at
    ``src`` into ``dst`` (see :class:`ConvertOptions` for the keyword options and the
    module docstring for the semantics).  Returns a :class:`ConvertReport`; raises
    :class:`ConvertError`."""
    o = kwargs.pop("options", None) or ConvertOptions()
    for k, v in kwargs.items():
        if k not in ConvertOptions.__dataclass_fields__:
            raise TypeError(f"convert: unknown option {k!r}")
        setattr(o, k, v)
    settings = _check_options(o)
    new_dir = _new_local_dir(dst)
    src_store, dst_store = _open_stores(src, dst, o)
    try:
        return _Driver(src_store, dst_store, o, settings).run()
    except BaseException:
        # a run that failed leaves no empty destination behind (opening the store created it)
        if new_dir is not None:
            if dst_store is not None and not isinstance(dst, Store):
                dst_store.close()
            _remove_empty_dirs(new_dir)
        raise
    finally:  # stores opened here are closed here (a zip archive is finalised on close)
        for given, st in ((src, src_store), (dst, dst_store)):
            if st is not None and not isinstance(given, Store):
                st.close()


def _new_local_dir(dst: Any) -> str | None:
    """The local directory ``dst`` names if it does not exist yet (else None)."""
    if not isinstance(dst, (str, os.PathLike)):
        return None
    path = os.fspath(dst)
    if path.startswith("file://"):
        path = path[len("file://"):]
    elif "://" in path or path.endswith(".zip"):
        return None
    return None if os.path.exists(path) else os.path.abspath(path)


def _remove_empty_dirs(root: str) -> None:
    """Remove ``root`` if it holds nothing but empty directories (``rmdir`` only: a file
    anywhere below keeps it, so nothing written is ever deleted here)."""
    if not os.path.isdir(root):
        return
    for dirpath, _dirs, _files in os.walk(root, topdown=False):
        try:
            os.rmdir(dirpath)
        except OSError:
            return


# --------------------------------------------------------------------------------------
# the driver
# --------------------------------------------------------------------------------------
class _Driver:
    """One conversion run: selects the nodes, plans them, prepares the destination
    (journal), converts every array region by region, finishes."""

    def __init__(self, src_store: Any, dst_store: Any, o: ConvertOptions, settings: Settings) -> None:
        self.src_store, self.dst_store, self.o, self.settings = src_store, dst_store, o, settings
        self.t0 = time.perf_counter()
        self.report = ConvertReport(dry_run=o.dry_run)
        self.src_path = (o.path or "").strip("/")
        self.dst_root = (o.dst_path or "").strip("/")

    def _done(self) -> ConvertReport:
        self.report.seconds = time.perf_counter() - self.t0
        return self.report

    # -- selection ------------------------------------------------------------------------
    def _select(self) -> tuple[Any, list[tuple[str, Any]], list[tuple[str, Array]]]:
        o = self.o
        try:
            node = open_node(self.src_store, self.src_path)
        except ZarrcyError as e:
            raise ConvertError(f"source {self.src_store.url}: not a Zarr array or group at '/{self.src_path}' "
                               f"({e})", 2) from e
        groups, arrays = _walk(node)
        from zarrcy.convert.hdf5 import unsupported_datasets

        sp = self.src_path
        every = [r for r, _ in groups if r] + [r for r, _ in arrays if r] + [
            u if not sp else u[len(sp) + 1:] for u, _ in unsupported_datasets(self.src_store)
            if not sp or u.startswith(sp + "/")]
        for name, pats in (("--include", o.include), ("--exclude", o.exclude)):
            for pat in pats:
                if not any(_matches(r, [pat]) for r in every):
                    raise ConvertError(expected(name, f"a glob matching a node under /{self.src_path} "
                                                f"(nodes: {', '.join(sorted(every)[:8]) or 'none'}"
                                                f"{' ...' if len(every) > 8 else ''})", pat), 2)
        if o.include:
            arrays = [(r, a) for r, a in arrays if _matches(r, o.include)]
            keep = {""}
            for r, _ in arrays:
                parts = r.split("/")
                keep.update("/".join(parts[:i]) for i in range(len(parts)))
            groups = [(r, g) for r, g in groups if r in keep or _matches(r, o.include)]
        if o.exclude:
            arrays = [(r, a) for r, a in arrays if not _matches(r, o.exclude)]
            groups = [(r, g) for r, g in groups if r == "" or not _matches(r, o.exclude)]
        if not isinstance(node, Array):
            for name, shape in (("--chunks", self.settings.chunks), ("--shards", self.settings.shards)):
                if shape is not None and arrays and not any(a.ndim == len(shape) for _, a in arrays):
                    ranks = sorted({a.ndim for _, a in arrays})
                    raise ConvertError(expected(name, f"sizes for the rank of an array here ({ranks})",
                                                ",".join(map(str, shape))), 2)
        return node, groups, arrays

    def _unsupported(self) -> None:
        """HDF5 datasets without a v3 form: refused, or listed as skipped."""
        from zarrcy.convert.hdf5 import unsupported_datasets

        o, sp = self.o, self.src_path
        for upath, why in unsupported_datasets(self.src_store):
            rel = upath if not sp else upath[len(sp) + 1:] if upath.startswith(sp + "/") else None
            if rel is None or (o.include and not _matches(rel, o.include)) or (o.exclude and _matches(rel, o.exclude)):
                continue
            if o.on_unsupported != "skip":
                raise ConvertError(f"source {self.src_store.url}: variable /{upath}: {why} "
                                   "(use --on-unsupported skip to leave it out)", 2)
            self.report.skipped_arrays.append((rel, why))

    def _plan(self, node: Any, arrays: list[tuple[str, Array]]) -> list[ArrayPlan]:
        from zarrcy.convert.hdf5 import stored_regions

        planner = Planner(self.settings, single=isinstance(node, Array))
        plans: list[ArrayPlan] = []
        for rel, arr in arrays:
            try:
                plans.append(planner.plan(arr, rel, _join(self.dst_root, rel)))
                stored_regions(plans[-1], arr)  # HDF5: only the regions holding stored chunks
            except _Unsupported as e:
                if self.o.on_unsupported == "skip":
                    self.report.skipped_arrays.append((rel, str(e)))
                    continue
                raise ConvertError(f"source /{arr.path}: {e} (use --on-unsupported skip to leave it out, or "
                                   "--format 2)", 2) from None
            except MetadataError as e:
                raise ConvertError(f"source /{arr.path}: cannot build the destination metadata: {e}", 2) from e
        # validate the destination metadata (and build the pipelines) before writing anything
        for p in plans:
            try:
                dst_metadata(p)
            except (MetadataError, ValueError) as e:
                raise ConvertError(f"destination /{p.dst_path}: invalid metadata: {e}", 2) from e
        return plans

    # -- the run --------------------------------------------------------------------------
    def run(self) -> ConvertReport:
        o, report = self.o, self.report
        node, groups, arrays = self._select()
        self._unsupported()
        plans = self._plan(node, arrays)
        sources = {rel: a for rel, a in arrays}
        report.arrays, report.groups, report.plans = len(plans), len(groups), plans
        report.regions = sum(p.n_regions for p in plans)
        dst_store = self.dst_store
        if dst_store is not None:  # source and destination in the same place
            a, b = _location(self.src_store, self.src_path), _location(dst_store, self.dst_root)
            if a == b or a.startswith(b + "/") or b.startswith(a + "/"):
                if a == b and self.settings.zarr_format == 3 and all(
                        p.mode == "copy" and p.src_format in (1, 2) for p in plans):
                    for p in plans:
                        p.mode = "in-place"
                    return self._done() if o.dry_run else self._in_place(plans, groups, sources)
                raise ConvertError(
                    f"destination {dst_store.url}/{self.dst_root} overlaps the source /{self.src_path}: use another "
                    "destination (in place, only a metadata-only v2/v1 -> v3 migration of the same path is "
                    "possible: it adds zarr.json documents next to the v2 ones and leaves every chunk as it is)", 2)
        if o.dry_run:
            estimate(plans, sources)
            return self._done()
        from zarrcy.convert.hdf5 import check_source, source_changed, source_identity

        journal = Journal(dst_store, self.dst_root,
                          _fingerprint(plans, [r for r, _ in groups], source_identity(self.src_store)),
                          self.settings.zarr_format)
        start = journal.start(o.resume, o.overwrite, _node_exists(dst_store, self.dst_root),
                              lambda: _differs_from_plan(dst_store, plans, groups, self.dst_root,
                                                         self.settings.zarr_format))
        if start.already_complete:
            report.already_complete = True
            return self._done()
        checked: dict[str, dict[int, Any]] = {}
        if not start.resuming and o.quantize_check == "first":  # refuse before writing anything
            checked = _check_quantize(plans, sources, o.workers)
        progress = Progress(sum(p.nbytes for p in plans), mode=o.progress, interval=o.progress_interval)
        try:
            if not start.resuming:
                journal.begin()
            self._write_nodes(groups, plans)
            for p in plans:
                self._convert_array(p, sources[p.rel], journal, start.resuming, checked.get(p.rel, {}), progress)
        except KeyboardInterrupt:
            progress.close()
            raise ConvertError("interrupted: everything journaled so far is kept; rerun with --resume to finish",
                               130, report) from None
        except ConvertError as e:
            progress.close()
            if e.exit_code == 5:
                # an inline quantize check failed: remove what this run wrote (journal
                # included), so a refused conversion leaves no destination behind
                journal.discard()
                e.args = (str(e) + "\n(checked while converting: the partly written destination was removed)",)
            raise
        except (OSError, ZarrcyError) as e:
            progress.close()
            changed = source_changed(e, self.src_store)
            if changed is not None:
                raise _changed_error(changed, report) from e
            if is_enospc(e):
                raise ConvertError(f"destination {dst_store.url}: out of disk space ({e}); free some space and rerun "
                                   "with --resume (completed regions are kept)", 3, report) from e
            if isinstance(e, CorruptChunkError):
                raise ConvertError(f"{e}; completed regions are kept (--resume continues)", 1, report) from e
            raise ConvertError(f"conversion stopped: {e}; completed regions are kept (--resume continues)", 1,
                               report) from e
        progress.close()
        try:  # a source replaced or rewritten meanwhile: the output may mix its versions
            check_source(self.src_store)
        except ZarrcyError as e:
            raise _changed_error(e, report) from e
        journal.finish()
        report.verified = bool(o.verify)
        return self._done()

    def _write_nodes(self, groups: list[tuple[str, Any]], plans: list[ArrayPlan]) -> None:
        """Group and array metadata (rewritten on resume too: identical bytes, and a crash
        may have come first)."""
        store, root, fmt = self.dst_store, self.dst_root, self.settings.zarr_format
        for rel, g in groups:
            write_metadata(store, _prefix(_join(root, rel)), group_metadata(fmt, g.metadata.attributes))
        if fmt == 3 and root:
            _ensure_v3_parents(store, root)
        elif fmt == 2 and root:
            from zarrcy.v2.metadata import ensure_parents_v2

            ensure_parents_v2(store, root)
        for p in plans:
            write_metadata(store, _prefix(p.dst_path), dst_metadata(p))

    def _convert_array(self, p: ArrayPlan, src: Array, journal: Journal, resuming: bool, pre: dict[int, Any],
                       progress: Progress) -> None:
        o, report = self.o, self.report
        # no per-array "complete" shortcut: resuming goes region by region, and a region
        # is skipped only while its objects still have their journaled checksums (an
        # object erased or replaced since is converted again)
        dst = Array(self.dst_store, p.dst_path, dst_metadata(p))
        rec = recording(dst) if p.mode == "rewrite" else None
        q = QuantizeCheck.of(p)
        enc = encoded_recorder(rec, p.quantize) if rec is not None else None
        tasks = (RegionTask(src, dst, p.mode, region_selection(p, rid), rid, journal.region_key(p.rel, rid), o.verify,
                            o.on_error, resuming, q, journal.enabled, pre.get(rid), p.kept_filters, rec, enc)
                 for rid in p.region_ids())
        report.decoded_bytes += p.fill_bytes  # regions left out: all fill value, nothing to write
        progress.update(p.fill_bytes)
        tally = _QuantizeTally()
        lock = threading.Lock()

        def on_result(r: RegionResult) -> None:
            with lock:
                if r.skipped:
                    report.regions_skipped += 1
                else:
                    report.regions_done += 1
                report.decoded_bytes += r.decoded_bytes
                report.bytes_in += r.bytes_in
                report.bytes_out += r.bytes_out
                report.objects_written += r.objects
                report.corrupt_chunks.extend(r.corrupt)
                tally.add(r)
            progress.update(r.decoded_bytes)

        if o.dask:
            _run_dask(tasks, o.dask, on_result)
        else:
            _run_threads(tasks, o.workers, on_result)
        if p.quantize:
            p.quantize_report = tally.to_json(p)

    def _in_place(self, plans: list[ArrayPlan], groups: list[tuple[str, Any]],
                  sources: dict[str, Array]) -> ConvertReport:
        """Metadata-only migration in place: a ``zarr.json`` beside each v2/v1 node; the
        chunks (and the v2 documents, for v2 readers) stay as they are."""
        from zarrcy.document.group import GroupMetadata
        from zarrcy.v2.metadata import V2GroupMetadata

        o, store, report = self.o, self.dst_store, self.report
        for _rel, g in groups:
            if isinstance(g.metadata, V2GroupMetadata):
                store.set(_prefix(g.path) + META_KEY, GroupMetadata(attributes=dict(g.metadata.attributes)).to_bytes())
        progress = Progress(sum(p.nbytes for p in plans), mode=o.progress, interval=o.progress_interval)
        try:
            for p in plans:
                meta = dst_metadata(p)
                dst = Array(store, p.dst_path, meta)
                src = sources[p.rel]
                store.set(_prefix(p.dst_path) + META_KEY, meta.to_bytes())
                report.decoded_bytes += p.nbytes
                if not o.verify:
                    progress.update(p.nbytes)
                    continue
                for rid in range(p.n_regions):
                    sel = region_selection(p, rid)
                    if not _same(np.asarray(src[sel]), np.asarray(dst[sel])):
                        raise ConvertError(f"verify: /{p.dst_path} region {rid} {sel}: the v3 view differs from v2", 4)
                    progress.update(math.prod(x.stop - x.start for x in sel) * src.dtype.itemsize)
        finally:
            progress.close()
        report.verified = bool(o.verify)
        return self._done()


class _QuantizeTally:
    """One array's quantize report, merged from its regions' reports."""

    def __init__(self) -> None:
        self.total: Any = None
        self.partial = False
        self.collisions = 0
        self.counts: dict[str, int] = {}

    def add(self, r: RegionResult) -> None:
        if r.cast is None:
            self.partial = True
            return
        self.total = r.cast if self.total is None else merge_reports(self.total, r.cast)
        self.collisions += r.collisions
        for k, n in (r.sentinel_counts or {}).items():
            self.counts[k] = self.counts.get(k, 0) + int(n)

    def to_json(self, p: ArrayPlan) -> dict[str, Any] | None:
        if self.total is None:
            return None
        d: dict[str, Any] = self.total.to_json()
        if self.partial:
            d["partial"] = True
        if p.sentinels:
            d["sentinels"] = [{**s, "count": self.counts.get(f"{s['what']}={s['code']}", 0)} for s in p.sentinels]
            d["sentinel_collisions"] = self.collisions
        return d


def _differs_from_plan(store: Any, plans: list[ArrayPlan], groups: list[tuple[str, Any]], dst_root: str,
                       dst_fmt: int) -> str | None:
    """The first destination node whose metadata documents are not byte for byte the ones
    this conversion writes (missing included), or None when all are."""
    from zarrcy.storage import MemoryStore

    docs = [(_join(dst_root, rel), group_metadata(dst_fmt, g.metadata.attributes)) for rel, g in groups]
    docs += [(p.dst_path, dst_metadata(p)) for p in plans]
    for path, doc in docs:
        want = MemoryStore()
        write_metadata(want, _prefix(path), doc)
        if any(store.get(k) != want.get(k) for k in want.list()):
            return path
    return None


def _changed_error(e: BaseException, report: ConvertReport) -> ConvertError:
    """Exit 1 for a source that changed while it was converted (zarrcy/convert/hdf5.py
    ``check_source``): the journal stays (the destination never passes for complete)
    and ``--resume`` refuses the changed source, so only ``--overwrite`` starts over."""
    return ConvertError(f"source changed during the conversion: {e}; the destination may mix old and new data "
                        "and is left unfinished: rerun with --overwrite", 1, report)


def _location(store: Any, path: str) -> str:
    """Where a node lives: ``<real directory>/<path>`` for local stores, else ``<url>/<path>``."""
    base = os.path.realpath(store.root) if isinstance(store, LocalStore) else store.url
    return (base.rstrip("/") + "/" + path).rstrip("/")


def _ensure_v3_parents(store: Any, path: str) -> None:
    from zarrcy.document.group import GroupMetadata

    parts = path.split("/")[:-1]
    for i in range(len(parts) + 1):
        p = "/".join(parts[:i])
        if not _node_exists(store, p):
            store.set(_prefix(p) + META_KEY, GroupMetadata().to_bytes())
