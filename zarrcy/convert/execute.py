"""Executing a conversion: one region at a time (read, write, journal, verify), on
threads or a Dask cluster (see :mod:`zarrcy.convert.engine`)."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from zarrcy.array import Array
from zarrcy.config import named_pool, run_bounded
from zarrcy.errors import CastError, CorruptChunkError
from zarrcy.convert.journal import _crc, _journal_ok, _write_entry
from zarrcy.convert.model import ArrayPlan, ConvertError, ConvertOptions, RegionResult
from zarrcy.convert.plan import _stored_size, overlapping_objects, region_selection, stored_coords

_DELAY = float(os.environ.get("ZARRCY_CONVERT_REGION_DELAY", "0") or 0)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    if a.dtype.fields is not None or a.dtype.kind == "V":
        return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    return bool(np.array_equal(a, b))


# --------------------------------------------------------------------------------------
# regions
# --------------------------------------------------------------------------------------
@dataclass
class RegionTask:
    """One unit of work; pickles as (store URL, path) pairs through the Arrays."""

    src: Array
    dst: Array
    mode: str
    sel: tuple[slice, ...]             # the region (whole stored objects of the destination)
    rid: int
    journal_key: str
    verify: bool
    on_error: str
    resume: bool
    quantize: list[dict[str, Any]] | None
    journal: bool = True
    src_path: str = ""
    # --quantize: this region's report from the pre-pass (CastReport), or None to compute it
    # here (inline check, resumed runs)
    cast: Any = None
    # lossy codecs the destination applies besides --quantize (kept source filters)
    kept_filters: list[dict[str, Any]] | None = None


def _read_source(task: RegionTask, sel: tuple[slice, ...], corrupt: list[str]) -> np.ndarray:
    src = task.src
    try:
        return src[sel]
    except CorruptChunkError as e:
        if task.on_error != "skip":
            raise CorruptChunkError(f"source /{src.path}: corrupt chunk {e.key or ''}: {e} (use --on-error skip to "
                                    "replace corrupt chunks by the fill value)", key=e.key) from e
    # chunk by chunk: corrupt chunks become the fill value
    out = np.empty(tuple(s.stop - s.start for s in sel), dtype=src.dtype)
    for coords, sub in overlapping_objects(src, sel):
        dst_sel = tuple(slice(x.start - s.start, x.stop - s.start) for x, s in zip(sub, sel))
        try:
            out[dst_sel] = src[sub]
        except CorruptChunkError:
            corrupt.append(src._key(tuple(coords)))
            out[dst_sel] = src._fill
    return out


def _expected_after_codecs(task: RegionTask, data: np.ndarray) -> np.ndarray:
    """What a read of quantized data gives back: encode then decode through the quantize chain
    (and the lossy source filters the destination kept)."""
    chain = [*(task.quantize or ()), *(task.kept_filters or ())]
    if not chain:
        return data
    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.pipeline import CodecPipeline

    m = task.dst.metadata
    spec = ArraySpec(tuple(data.shape), m.data_type.dtype, m.fill_value, m.data_type)
    pipe = CodecPipeline.from_codecs([*chain, {"name": "bytes", "configuration": {"endian": "little"}}], spec)
    enc = pipe.encode(np.ascontiguousarray(data))
    return pipe.decode(enc if enc is not None else pipe.encode_empty())


def run_region(task: RegionTask) -> RegionResult:
    """Convert one region (idempotent: rerunning it rewrites the same objects)."""
    if task.resume:
        done = _journal_ok(task.dst.store, task.journal_key, task.rid)
        if done is not None:
            if task.verify:
                _verify_region(task)
            return done
    src, dst = task.src, task.dst
    if _DELAY:  # testing aid (crash/resume tests): slow each region down
        time.sleep(_DELAY)
    sel = task.sel
    res = RegionResult(task.rid)
    res.decoded_bytes = math.prod(s.stop - s.start for s in sel) * src.dtype.itemsize
    for coords in stored_coords(src, sel):
        res.bytes_in += _stored_size(src.store, src._key(coords))
    keys: dict[str, str | None] = {}
    if task.mode == "copy":
        for coords in stored_coords(dst, sel):
            sk, dk = src._key(coords), dst._key(coords)
            raw = src.store.get(sk)
            if raw is None:
                if dst.store.get(dk) is not None:
                    dst.store.erase(dk)
            else:
                dst.store.set(dk, raw)
            keys[dk] = _crc(raw)
            if raw is not None:
                res.bytes_out += len(raw)
                res.objects += 1
        if task.verify:
            for coords in stored_coords(dst, sel):
                if _crc(dst.store.get(dst._key(coords))) != _crc(src.store.get(src._key(coords))):
                    raise ConvertError(f"verify: /{dst.path} object {dst._key(coords)} differs from the source", 4)
    else:
        data = _read_source(task, sel, res.corrupt)
        if task.quantize:
            res.cast = task.cast if task.cast is not None else _region_cast_report(task.src_path or src.path, data, sel,
                                                                                 task.quantize)
        try:
            dst[sel] = data
        except CastError:
            if not task.quantize:
                raise
            raise _refusal(task.src_path or src.path, data, sel, task.quantize) from None
        for coords in stored_coords(dst, sel):
            dk = dst._key(coords)
            stored = dst.store.get(dk)
            keys[dk] = _crc(stored)
            if stored is not None:
                res.bytes_out += len(stored)
                res.objects += 1
        if task.verify:
            back = dst[sel]
            want = _expected_after_codecs(task, data)
            if not _same(np.asarray(back), np.asarray(want)):
                raise ConvertError(f"verify: /{dst.path} region {task.rid} {sel} reads back different values", 4)
        del data
    if task.journal:
        _write_entry(dst.store, task.journal_key, keys, res)
    return res


def _verify_region(task: RegionTask) -> None:
    sel = task.sel
    if task.mode == "copy":
        for coords in stored_coords(task.dst, sel):
            if _crc(task.dst.store.get(task.dst._key(coords))) != _crc(task.src.store.get(task.src._key(coords))):
                raise ConvertError(f"verify: /{task.dst.path} object {task.dst._key(coords)} differs from the source", 4)
        return
    corrupt: list[str] = []
    data = _read_source(task, sel, corrupt)
    if not _same(np.asarray(task.dst[sel]), np.asarray(_expected_after_codecs(task, data))):
        raise ConvertError(f"verify: /{task.dst.path} region {task.rid} {sel} reads back different values", 4)


# --------------------------------------------------------------------------------------
# executors
# --------------------------------------------------------------------------------------
def _run_threads(tasks: Iterable[RegionTask], workers: int | None, on_result: Callable[[RegionResult], None]) -> None:
    _run_parallel(run_region, tasks, workers, on_result)


def _run_dask(tasks: Iterable[RegionTask], address: str, on_result: Callable[[RegionResult], None]) -> None:
    """The regions on a Dask cluster, at most 2 x (cluster threads) submitted at once (as
    :func:`_run_parallel`).  On a failure nothing more is submitted and the regions in
    flight finish before the error propagates, so no region writes after this returns
    (the caller may remove the destination: a refused ``--quantize``)."""
    try:
        from distributed import Client, LocalCluster, as_completed, wait
    except ImportError as e:  # pragma: no cover
        raise ConvertError(f"--dask needs the 'dask' extra (dask[array], distributed): {e}", 2) from None
    cluster = None
    if address.startswith("local"):
        n = int(address.partition(":")[2] or 2)
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=False, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        window = 2 * max(1, sum(client.nthreads().values()))
        items = iter(tasks)
        pending: set[Any] = set()
        done_order = as_completed()

        def submit_next() -> None:
            task = next(items, None)
            if task is not None:
                fut = client.submit(run_region, task, pure=False)
                pending.add(fut)
                done_order.add(fut)

        for _ in range(window):
            submit_next()
        try:
            for fut in done_order:
                pending.discard(fut)
                on_result(fut.result())
                submit_next()
        except BaseException:
            wait(list(pending))  # at most the window: let them finish, submit nothing more
            raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _refusal(src_path: str, values: np.ndarray, sel: tuple[slice, ...], quantize: list[dict[str, Any]],
             before_start: bool = False) -> "ConvertError":
    """The exit-5 ConvertError for a region whose values the quantize chain cannot encode,
    with the cast-check report (first failing index in array coordinates)."""
    from zarrcy.casting import check_cast

    rep = check_cast(values, quantize, masks=False, max_indices=0, origin=[s.start for s in sel])
    return ConvertError(
        f"--quantize: refusing{' to start' if before_start else ''}: values of /{src_path} cannot be encoded "
        f"(region {sel}):\n" + rep.table(), 5, rep)


def _collision(src_path: str, sel: tuple[slice, ...], quantize: list[dict[str, Any]], rep: Any,
               before_start: bool = False) -> "ConvertError":
    """The exit-5 ConvertError for values that encode without error but would not read back
    as what they are: a non-NaN value encoding to the ``nan=V`` code (it would read back as
    NaN), or an infinity clamped to a finite code."""
    cv = quantize[-1].get("configuration", {})
    pairs = (cv.get("scalar_map") or {}).get("decode") or []
    codes = ", ".join(str(k) for k, _ in pairs)
    hint = (f" (nan={codes} collides with values that encode to {codes}: choose a nan= code outside the encoded "
            "range, e.g. the type's largest value with a scale that keeps the data below it)") if pairs else ""
    return ConvertError(
        f"--quantize: refusing{' to start' if before_start else ''}: {rep.round_trip_mismatches:,} value(s) of "
        f"/{src_path} in region {sel} would read back as a different kind of value (NaN or infinity gained or "
        f"lost){hint}:\n" + rep.table(), 5, rep)


def _region_cast_report(src_path: str, values: np.ndarray, sel: tuple[slice, ...], quantize: list[dict[str, Any]],
                        before_start: bool = False) -> Any:
    """The CastReport of one region under the quantize chain; raises the exit-5 refusal
    when a value fails or would not read back as what it is (collision with ``nan=V``)."""
    from zarrcy.casting import chain_report

    rep = chain_report(values, quantize, origin=[s.start for s in sel])
    if rep.failing:
        raise _refusal(src_path, values, sel, quantize, before_start=before_start)
    if rep.round_trip_mismatches:
        raise _collision(src_path, sel, quantize, rep, before_start=before_start)
    return rep


def _check_quantize(plans: list[ArrayPlan], src_store: Any, o: ConvertOptions) -> dict[str, dict[int, Any]]:
    """Refuse to start when a value of a quantized array cannot be encoded, or would not
    read back as what it is (a value encoding to the ``nan=V`` code): every source region
    goes through the quantize chain first (:func:`zarrcy.casting.chain_report`, one
    kernel pass).  Returns each region's report ({array rel: {region: report}})
    for the summary.  Regions are checked on ``workers`` threads."""
    from zarrcy.api import open_array

    out: dict[str, dict[int, Any]] = {}
    for p in plans:
        if not p.quantize:
            continue
        src = open_array(src_store, path=p.src_path, mode="r")
        reports: dict[int, Any] = {}
        out[p.rel] = reports

        def check(rid: int, p: ArrayPlan = p, src: Array = src) -> RegionResult:
            sel = region_selection(p, rid)
            rep = _region_cast_report(p.src_path, src[sel], sel, p.quantize or [], before_start=True)
            return RegionResult(rid, cast=rep)

        def keep(r: RegionResult, reports: dict[int, Any] = reports) -> None:
            reports[r.rid] = r.cast

        _run_parallel(check, p.region_ids(), o.workers, keep)
    return out


def _run_parallel(fn: Callable[[Any], RegionResult], items: Iterable[Any], workers: int | None,
                  on_result: Callable[[RegionResult], None]) -> None:
    """``fn`` over ``items`` on ``workers`` threads, at most 2 x workers in flight
    (:func:`zarrcy.config.run_bounded` on the process-wide ``convert`` pool; the regions'
    own chunk work runs on the shared pool, so region tasks never wait on their own)."""
    n = max(1, int(workers if workers is not None else (os.cpu_count() or 1)))
    pool = named_pool("convert", n) if n > 1 else None
    for r in run_bounded(fn, items, max_in_flight=2 * n if n > 1 else 1, pool=pool):
        on_result(r)