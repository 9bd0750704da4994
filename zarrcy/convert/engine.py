"""The conversion engine behind ``zarrcy convert`` and :func:`zarrcy.convert`.

Plan -> create destination nodes -> convert regions -> verify -> clean up.  This module
is the driver; the stages live beside it: :mod:`~zarrcy.convert.plan` (what each array
becomes, its destination metadata and regions), :mod:`~zarrcy.convert.journal` (resume
state), :mod:`~zarrcy.convert.execute` (reading/writing/verifying regions, the runners),
:mod:`~zarrcy.convert.model` (options, plans, results, the report).

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
import json
import math
import threading
import time
from typing import Any, Sequence

import numpy as np

from zarrcy.array import META_KEY, Array, write_metadata
from zarrcy.casting import merge_reports
from zarrcy.errors import CorruptChunkError, MetadataError, ZarrcyError, expected
from zarrcy.group import open_node
from zarrcy.metadata._parse import load_json_object
from zarrcy.convert.execute import (
    RegionTask,
    _check_quantize,
    _run_dask,
    _run_threads,
    _same,
)
from zarrcy.convert.journal import JOURNAL_DIR, _fingerprint
from zarrcy.convert.model import ArrayPlan, ConvertError, ConvertOptions, ConvertReport, RegionResult, _join, _prefix
from zarrcy.convert.options import parse_shape
from zarrcy.convert.plan import (
    _dst_metadata,
    _estimate,
    _group_metadata,
    _plan_array,
    region_selection,
    _Unsupported,
)
from zarrcy.convert.progress import Progress

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
# the driver
# --------------------------------------------------------------------------------------
def _open_stores(src: Any, dst: Any, o: ConvertOptions) -> tuple[Any, Any]:
    from zarrcy.storage import store_from_url
    from zarrcy.convert.hdf5 import HDF5SourceError, open_source

    try:  # HDF5 / NetCDF-4: one file, or several along --concat-dim (zarrcy/convert/hdf5.py)
        s = open_source(src, o.concat_dim, o.cf_packing, o.allow_external) or store_from_url(src, mode="r")
    except HDF5SourceError as e:
        raise ConvertError(f"source: {e}", 2) from None
    if o.dry_run:
        try:
            d = store_from_url(dst, mode="r")
        except ZarrcyError:
            d = None
    else:
        d = store_from_url(dst, mode="a")
    return s, d


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
    """Convert the Zarr v1/v2/v3 array or hierarchy at ``src`` into ``dst`` (see
    :class:`ConvertOptions` for the keyword options and the module docstring for the
    semantics).  Returns a :class:`ConvertReport`; raises :class:`ConvertError`."""
    o = kwargs.pop("options", None) or ConvertOptions()
    for k, v in kwargs.items():
        if not hasattr(o, k):
            raise TypeError(f"convert: unknown option {k!r}")
        setattr(o, k, v)
    if o.on_error not in ("stop", "skip"):
        raise ConvertError(expected("--on-error", "'stop' or 'skip'", o.on_error), 2)
    if o.on_unsupported not in ("stop", "skip"):
        raise ConvertError(expected("--on-unsupported", "'stop' or 'skip'", o.on_unsupported), 2)
    if o.cf_packing not in ("keep", "chain"):
        raise ConvertError(expected("--cf-packing", "'keep' or 'chain'", o.cf_packing), 2)
    if o.workers is not None:
        import operator

        try:
            ok = not isinstance(o.workers, bool) and operator.index(o.workers) >= 1
        except TypeError:
            ok = False
        if not ok:
            raise ConvertError(expected("--workers", "a positive integer", o.workers), 2)
        o.workers = operator.index(o.workers)
    from zarrcy.storage import Store

    new_dir = _new_local_dir(dst)
    src_store, dst_store = _open_stores(src, dst, o)
    try:
        return _convert(src_store, dst_store, o)
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
    import os

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
    import os

    if not os.path.isdir(root):
        return
    for dirpath, _dirs, _files in os.walk(root, topdown=False):
        try:
            os.rmdir(dirpath)
        except OSError:
            return


def _convert(src_store: Any, dst_store: Any, o: ConvertOptions) -> ConvertReport:
    t0 = time.perf_counter()
    if o.quantize_check not in ("first", "inline"):
        raise ConvertError(expected("--quantize-check", "'first' or 'inline'", o.quantize_check), 2)
    report = ConvertReport(dry_run=o.dry_run)
    src_path = (o.path or "").strip("/")
    dst_root = (o.dst_path or "").strip("/")
    try:
        node = open_node(src_store, src_path)
    except ZarrcyError as e:
        raise ConvertError(f"source {src_store.url}: not a Zarr array or group at '/{src_path}' ({e})", 2) from e
    groups, arrays = _walk(node)
    src_formats = {rel: getattr(a.metadata, "zarr_format", 3) for rel, a in arrays}
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
    from zarrcy.convert.hdf5 import check_source, source_changed, source_identity, stored_regions, unsupported_datasets

    for upath, why in unsupported_datasets(src_store):  # HDF5 datasets without a v3 form
        rel = upath if not src_path else upath[len(src_path) + 1:] if upath.startswith(src_path + "/") else None
        if rel is None or (o.include and not _matches(rel, o.include)) or (o.exclude and _matches(rel, o.exclude)):
            continue
        if o.on_unsupported != "skip":
            raise ConvertError(f"source {src_store.url}: variable /{upath}: {why} "
                               "(use --on-unsupported skip to leave it out)", 2)
        report.skipped_arrays.append((rel, why))
    plans: list[ArrayPlan] = []
    for rel, arr in arrays:
        try:
            plans.append(_plan_array(arr, rel, _join(dst_root, rel), o, single=isinstance(node, Array)))
            plans[-1].src_format = src_formats[rel]
            stored_regions(plans[-1], arr)  # HDF5: only the regions holding stored chunks
        except _Unsupported as e:
            if o.on_unsupported == "skip":
                report.skipped_arrays.append((rel, str(e)))
                continue
            raise ConvertError(f"source /{arr.path}: {e} (use --on-unsupported skip to leave it out, or --format 2)", 2) from None
        except MetadataError as e:
            raise ConvertError(f"source /{arr.path}: cannot build the destination metadata: {e}", 2) from e
    if not isinstance(node, Array):
        for name, raw in (("--chunks", o.chunks), ("--shards", o.shards)):
            shape = parse_shape(raw, name)
            if shape is not None and arrays and not any(len(a.shape) == len(shape) for _, a in arrays):
                ranks = sorted({len(a.shape) for _, a in arrays})
                report.warnings.append(f"{name} {','.join(map(str, shape))}: no array has rank {len(shape)} "
                                       f"(ranks here: {ranks}), so it applies to none; every array keeps its chunking")
    # validate the destination metadata (and build the pipelines) before writing anything
    for p in plans:
        try:
            _dst_metadata(p)
        except (MetadataError, ValueError) as e:
            raise ConvertError(f"destination /{p.dst_path}: invalid metadata: {e}", 2) from e
    report.arrays, report.groups, report.plans = len(plans), len(groups), plans
    report.regions = sum(p.n_regions for p in plans)
    dst_fmt = int(o.zarr_format)
    group_paths = [r for r, _ in groups]
    fp = _fingerprint(o, plans, group_paths, source_identity(src_store))
    jroot = _prefix(dst_root) + JOURNAL_DIR + "/"

    # ---- source and destination in the same place (compared as file system paths for
    # local stores, so "x.zarr/sub" vs "x.zarr" as two stores is caught as well)
    if dst_store is not None:
        a, b = _location(src_store, src_path), _location(dst_store, dst_root)
        if a == b or a.startswith(b + "/") or b.startswith(a + "/"):
            if a == b and dst_fmt == 3 and all(p.mode == "copy" and p.src_format in (1, 2) for p in plans):
                for p in plans:
                    p.mode = "in-place"
                if o.dry_run:
                    report.seconds = time.perf_counter() - t0
                    return report
                return _in_place(plans, groups, arrays, dst_store, o, report, t0)
            raise ConvertError(
                f"destination {dst_store.url}/{dst_root} overlaps the source /{src_path}: use another destination "
                "(in place, only a metadata-only v2/v1 -> v3 migration of the same path is possible: it adds zarr.json "
                "documents next to the v2 ones and leaves every chunk as it is)", 2)

    if o.dry_run:
        _estimate(plans, src_store)
        report.seconds = time.perf_counter() - t0
        return report

    # ---- destination checks
    # the journal needs deletes (it is erased at the end): append-only stores (zip) go without
    journal = bool(getattr(dst_store, "supports_deletes", True))
    if o.resume and not journal:
        raise ConvertError(f"destination {dst_store.url}: --resume needs a store that supports deletes "
                           "(a zip archive is written in one go; convert into a directory to resume)", 2)
    plan_raw = dst_store.get(jroot + "plan.json")
    exists = _node_exists(dst_store, dst_root)
    if plan_raw is not None:
        if not o.resume and not o.overwrite:
            raise ConvertError(f"destination {dst_store.url}/{dst_root}: an interrupted conversion is there; "
                               "rerun with --resume to finish it (or --overwrite to start over)", 2)
        if o.resume and load_json_object(plan_raw, jroot + "plan.json").get("fingerprint") != fp:
            raise ConvertError(f"destination {dst_store.url}/{dst_root}: --resume with different options or source "
                               "than the interrupted run (rerun with the same options, or --overwrite)", 2)
    elif exists:
        if o.resume and not o.overwrite:
            # no journal: "complete" only if the nodes are the ones these options write (an
            # --overwrite killed before its journal mark, other options, a node erased)
            differs = _differs_from_plan(dst_store, plans, groups, dst_root, dst_fmt)
            if differs is not None:
                raise ConvertError(f"destination {dst_store.url}/{dst_root}: --resume: no interrupted conversion is "
                                   f"journaled there, and /{differs} is not what these options write (another "
                                   "conversion, or an incomplete one: rerun with --overwrite)", 2)
            # a finished run killed while erasing its journal leaves entries without plan.json
            # (plan.json goes last, see _erase_journal): finish that clean-up
            if journal and next(iter(dst_store.list_prefix(jroot)), None) is not None:
                _erase_journal(dst_store, jroot)
            report.already_complete = True
            report.seconds = time.perf_counter() - t0
            return report
        if not o.overwrite:
            raise ConvertError(f"destination {dst_store.url}/{dst_root}: a node exists there (pass --overwrite)", 2)
    resuming = o.resume and plan_raw is not None
    if resuming and load_json_object(plan_raw, jroot + "plan.json").get("erasing"):
        resuming = False  # killed while --overwrite erased the old destination: erase again, start afresh
    if (o.overwrite or plan_raw is not None) and not resuming and (exists or plan_raw is not None):
        if journal:
            # mark the journal first: a run killed while erasing leaves plan.json saying so
            # (a half-erased old destination must never pass for a complete one on --resume)
            dst_store.set(jroot + "plan.json", json.dumps({"fingerprint": fp, "format": dst_fmt, "erasing": True}).encode())
            _erase_except(dst_store, _prefix(dst_root), jroot + "plan.json")
        else:
            dst_store.erase_prefix(_prefix(dst_root))
    if resuming:
        cleanup = getattr(dst_store, "remove_temp_files", None)
        if cleanup is not None:
            cleanup()
    # quantize: refuse to start if any value would fail (cast-check over the source)
    checked: dict[str, dict[int, Any]] = {}
    if not resuming and o.quantize_check == "first":
        checked = _check_quantize(plans, src_store, o)
    progress = Progress(sum(p.nbytes for p in plans), mode=o.progress, interval=o.progress_interval)
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
        progress.update(r.decoded_bytes)

    from zarrcy.api import open_array

    try:
        if not resuming and journal:
            dst_store.set(jroot + "plan.json", json.dumps({"fingerprint": fp, "format": dst_fmt}).encode())
        # ---- nodes (rewritten on resume too: identical bytes, and a crash may have come first)
        for rel, g in groups:
            write_metadata(dst_store, _prefix(_join(dst_root, rel)), _group_metadata(dst_fmt, g.metadata.attributes))
        if dst_fmt == 3 and dst_root:
            _ensure_v3_parents(dst_store, dst_root)
        elif dst_fmt == 2 and dst_root:
            from zarrcy.v2.metadata import ensure_parents_v2

            ensure_parents_v2(dst_store, dst_root)
        for p in plans:
            write_metadata(dst_store, _prefix(p.dst_path), _dst_metadata(p))
        for p in plans:
            sa = open_array(src_store, path=p.src_path, mode="r")
            da = Array(dst_store, p.dst_path, _dst_metadata(p))
            jdir = jroot + "arrays/" + (p.rel or "_") + "/"
            # no per-array "complete" shortcut: resuming goes region by region, and a region
            # is skipped only while its objects still have their journaled checksums (an
            # object erased or replaced since is converted again)
            pre = checked.get(p.rel, {})
            tasks = (RegionTask(sa, da, p.mode, region_selection(p, rid), rid, f"{jdir}__done/{rid}", o.verify,
                                o.on_error, resuming, p.quantize, journal, p.src_path, pre.get(rid), p.kept_filters)
                     for rid in p.region_ids())
            report.decoded_bytes += p.fill_bytes  # regions left out: all fill value, nothing to write
            progress.update(p.fill_bytes)
            totals: list[Any] = []
            partial = [False]

            def on_array_result(r: RegionResult, totals: list[Any] = totals, partial: list[bool] = partial) -> None:
                on_result(r)
                if r.cast is None:
                    partial[0] = True
                elif not totals:
                    totals.append(r.cast)
                else:
                    merge_reports(totals[0], r.cast)

            if o.dask:
                _run_dask(tasks, o.dask, on_array_result)
            else:
                _run_threads(tasks, o.workers, on_array_result)
            if p.quantize:
                if totals:
                    p.quantize_report = totals[0].to_json()
                    if partial[0]:
                        p.quantize_report["partial"] = True
    except KeyboardInterrupt:
        progress.close()
        raise ConvertError("interrupted: everything journaled so far is kept; rerun with --resume to finish", 130, report) from None
    except ConvertError as e:
        progress.close()
        if e.exit_code == 5:
            # an inline quantize check failed: remove what this run wrote (journal
            # included), so a refused conversion leaves no destination behind
            if journal:  # plan.json last: a kill in between leaves a journal, not a "complete" node
                _erase_except(dst_store, _prefix(dst_root), jroot + "plan.json")
            dst_store.erase_prefix(_prefix(dst_root))
            e.args = (str(e) + "\n(checked while converting: the partly written destination was removed)",)
        raise
    except (OSError, ZarrcyError) as e:
        progress.close()
        changed = source_changed(e, src_store)
        if changed is not None:
            raise _changed_error(changed, report) from e
        if is_enospc(e):
            raise ConvertError(f"destination {dst_store.url}: out of disk space ({e}); free some space and rerun "
                               "with --resume (completed regions are kept)", 3, report) from e
        if isinstance(e, CorruptChunkError):
            raise ConvertError(f"{e}; completed regions are kept (--resume continues)", 1, report) from e
        raise ConvertError(f"conversion stopped: {e}; completed regions are kept (--resume continues)", 1, report) from e
    progress.close()
    try:  # a source replaced or rewritten meanwhile: the output may mix its versions
        check_source(src_store)
    except ZarrcyError as e:
        raise _changed_error(e, report) from e
    if journal:
        _erase_journal(dst_store, jroot)
    report.verified = bool(o.verify)
    report.seconds = time.perf_counter() - t0
    return report


def _differs_from_plan(store: Any, plans: list[ArrayPlan], groups: list[tuple[str, Any]], dst_root: str,
                       dst_fmt: int) -> str | None:
    """The first destination node whose metadata documents are not byte for byte the ones
    this conversion writes (missing included), or None when all are."""
    from zarrcy.storage import MemoryStore

    docs = [(_join(dst_root, rel), _group_metadata(dst_fmt, g.metadata.attributes)) for rel, g in groups]
    docs += [(p.dst_path, _dst_metadata(p)) for p in plans]
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


def _erase_journal(store: Any, jroot: str) -> None:
    """Erase a finished conversion's journal with ``plan.json`` last, so a run killed in
    the middle still has a journal: ``--resume`` then skips every region and erases the
    rest (erasing ``plan.json`` first would leave entries that no run ever removes)."""
    plan_key = jroot + "plan.json"
    store.erase_values([k for k in store.list_prefix(jroot) if k != plan_key])
    store.erase_prefix(jroot)


def _erase_except(store: Any, prefix: str, keep: str) -> None:
    """Erase every key under ``prefix`` but ``keep``, in batches (bounded memory)."""
    batch: list[str] = []
    for k in store.list_prefix(prefix):
        if k != keep:
            batch.append(k)
            if len(batch) >= 4096:
                store.erase_values(batch)
                batch = []
    if batch:
        store.erase_values(batch)


def _location(store: Any, path: str) -> str:
    """Where a node lives: ``<real directory>/<path>`` for local stores, else ``<url>/<path>``."""
    import os

    root = getattr(store, "root", None)
    base = os.path.realpath(root) if isinstance(root, str) and store.url.startswith("file:") else store.url
    return (base.rstrip("/") + "/" + path).rstrip("/")


def _in_place(plans: list[ArrayPlan], groups: list[tuple[str, Any]], arrays: list[tuple[str, Array]], store: Any,
              o: ConvertOptions, report: ConvertReport, t0: float) -> ConvertReport:
    """Metadata-only migration in place: a ``zarr.json`` beside each v2/v1 node; the
    chunks (and the v2 documents, for v2 readers) stay as they are."""
    from zarrcy.document.group import GroupMetadata

    src_arrays = dict(arrays)
    for rel, g in groups:
        if getattr(g.metadata, "zarr_format", 3) == 2:
            store.set(_prefix(g.path) + META_KEY, GroupMetadata(attributes=dict(g.metadata.attributes)).to_bytes())
    progress = Progress(sum(p.nbytes for p in plans), mode=o.progress, interval=o.progress_interval)
    try:
        for p in plans:
            meta = _dst_metadata(p)
            dst = Array(store, p.dst_path, meta)
            src = src_arrays[p.rel]
            store.set(_prefix(p.dst_path) + META_KEY, meta.to_bytes())
            report.decoded_bytes += p.nbytes
            if o.verify:
                for rid in range(p.n_regions):
                    sel = region_selection(p, rid)
                    if not _same(np.asarray(src[sel]), np.asarray(dst[sel])):
                        raise ConvertError(f"verify: /{p.dst_path} region {rid} {sel}: the v3 view differs from v2", 4)
                    progress.update(math.prod(x.stop - x.start for x in sel) * src.dtype.itemsize)
            else:
                progress.update(p.nbytes)
    finally:
        progress.close()
    report.verified = bool(o.verify)
    report.seconds = time.perf_counter() - t0
    return report


def _ensure_v3_parents(store: Any, path: str) -> None:
    from zarrcy.document.group import GroupMetadata

    parts = path.split("/")[:-1]
    for i in range(len(parts) + 1):
        p = "/".join(parts[:i])
        if not _node_exists(store, p):
            store.set(_prefix(p) + META_KEY, GroupMetadata().to_bytes())

