"""Executing a conversion: one region at a time (read, write, journal, verify), on
threads or a Dask cluster (see :mod:`zarrcy.convert.engine`).

A :class:`RegionTask` is the runners' unit of work; it reaches the arrays through their
public API only (selections, ``fill_value``, the chunk grid and chunk key encoding of
the metadata).  The checksums the journal needs are taken while the region is written
(:class:`_ChecksumStore` sees every value the array stores), so a finished region is
never read back just to checksum it."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from zarrcy.array import Array
from zarrcy.errors import CastError, CorruptChunkError
from zarrcy.execution import ExecContext
from zarrcy.convert.journal import _crc, _journal_ok, _write_entry
from zarrcy.convert.model import ArrayPlan, ConvertError, RegionResult
from zarrcy.convert.regions import object_key, overlapping_objects, region_selection, stored_coords, stored_size
from zarrcy.storage._base import Store
from zarrcy.storage.wrapper import StoreWrapper

_DELAY = float(os.environ.get("ZARRCY_CONVERT_REGION_DELAY", "0") or 0)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    if a.dtype.fields is not None or a.dtype.kind == "V":
        return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    return bool(np.array_equal(a, b))


class _ChecksumStore(StoreWrapper):
    """The destination store as the region writes see it: every call goes to ``inner``;
    a value stored whole (``set``) is checksummed on the way, an erased key recorded as
    absent; a value the store assembled itself (``set_spliced``, partial writes,
    truncation) is marked for one read-back.  One per destination array, shared by its
    regions: regions never share a stored object, so each key is written by one region's
    tasks only, and each region takes (:meth:`take`) its own keys' records.  The records
    are plain dict/set operations (atomic under the GIL): no lock."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        #: key -> (crc32c, size) of what was stored; None: erased
        self.written: dict[str, tuple[str, int] | None] = {}
        self.reread: set[str] = set()

    def __reduce__(self):  # (Dask) a new recorder around the store the inner one pickles as
        return (_ChecksumStore, (self.inner,))

    # writes: recorded
    def set(self, key: str, value: Any) -> None:
        crc = _crc(value)
        assert crc is not None
        self.inner.set(key, value)
        self.written[key] = (crc, memoryview(value).nbytes)
        self.reread.discard(key)

    def _assembled(self, key: str) -> None:
        self.written.pop(key, None)
        self.reread.add(key)

    def set_spliced(self, key: str, parts: Any, source: Any = None) -> None:
        self.inner.set_spliced(key, parts, source)
        self._assembled(key)

    def set_partial_values(self, key_start_values: Any) -> None:
        self.inner.set_partial_values(key_start_values)
        for key, _start, _value in key_start_values:
            self._assembled(key)

    def truncate(self, key: str, length: int, identity: object | None = None) -> None:
        self.inner.truncate(key, length, identity)
        self._assembled(key)

    def erase(self, key: str) -> None:
        self.inner.erase(key)
        self.written[key] = None
        self.reread.discard(key)

    def erase_values(self, keys: Any) -> None:
        keys = list(keys)
        self.inner.erase_values(keys)
        for k in keys:
            self.written[k] = None
            self.reread.discard(k)

    def erase_prefix(self, prefix: str) -> None:
        self.inner.erase_prefix(prefix)
        for k in [k for k in self.written if k.startswith(prefix)]:
            self.written[k] = None

    def take(self, key: str) -> tuple[str | None, int]:
        """``(crc32c or None when absent, stored size)`` of ``key`` after its region's
        write; the record is dropped (the next region's records are its own)."""
        hit = self.written.pop(key, ...)
        reread = key in self.reread
        self.reread.discard(key)
        if reread or hit is ...:
            if hit is ... and not reread and self.inner.getsize(key) is None:
                return None, 0  # never touched, and nothing there (an all-fill object)
            raw = self.inner.get(key)
            return _crc(raw), 0 if raw is None else len(raw)
        if hit is None:
            return None, 0
        return hit


def recording(dst: Array) -> Array:
    """``dst`` over a :class:`_ChecksumStore` (one per destination array: its codec
    pipelines and scratch buffers are reused by every region, as the plain array's are)."""
    return Array(_ChecksumStore(dst.store), dst.path, dst.metadata)


# --------------------------------------------------------------------------------------
# regions
# --------------------------------------------------------------------------------------
@dataclass
class QuantizeCheck:
    """What a quantized array's regions are checked with: ``chain`` (as written) and
    ``check_chain`` (numeric sentinel codes decode to NaN there, so a data value landing
    on one shows as a round-trip mismatch), the numeric sentinel values (their own
    mismatches are no collision) and whether collisions are accepted."""

    chain: list[dict[str, Any]]
    check_chain: list[dict[str, Any]] | None = None
    sentinels: Sequence[dict[str, Any]] = ()
    allow_collisions: bool = False

    @classmethod
    def of(cls, plan: ArrayPlan) -> "QuantizeCheck | None":
        if not plan.quantize:
            return None
        return cls(plan.quantize, plan.check_quantize, plan.sentinels, plan.allow_collisions)

    @property
    def numeric(self) -> list[float]:
        return [float(s["value"]) for s in self.sentinels if s.get("what") != "NaN"]


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
    quantize: QuantizeCheck | None
    journal: bool = True
    # --quantize: this region's report from the pre-pass, or None to compute it here
    # (inline check, resumed runs)
    cast: "RegionCast | None" = None
    # lossy codecs the destination applies besides --quantize (kept source filters)
    kept_filters: list[dict[str, Any]] | None = None
    # ``dst`` over a _ChecksumStore (:func:`recording`), shared by the array's regions
    recorder: Array | None = None
    # --quantize, fused: ``recorder`` as written with values already encoded by the
    # quantize chain (:func:`encoded_recorder`); None: values go through the whole chain
    encoded: Array | None = None


def _read_source(task: RegionTask, sel: tuple[slice, ...], corrupt: list[str], ctx: ExecContext | None) -> np.ndarray:
    src = task.src
    try:
        return src.get_basic_selection(sel, context=ctx)
    except CorruptChunkError as e:
        if task.on_error != "skip":
            raise CorruptChunkError(f"source /{src.path}: corrupt chunk {e.key or ''}: {e} (use --on-error skip to "
                                    "replace corrupt chunks by the fill value)", key=e.key) from e
    # chunk by chunk: corrupt chunks become the fill value
    out = np.empty(tuple(s.stop - s.start for s in sel), dtype=src.dtype)
    for coords, sub in overlapping_objects(src, sel):
        dst_sel = tuple(slice(x.start - s.start, x.stop - s.start) for x, s in zip(sub, sel))
        try:
            out[dst_sel] = src.get_basic_selection(sub, context=ctx)
        except CorruptChunkError:
            corrupt.append(object_key(src, tuple(coords)))
            out[dst_sel] = src.fill_value
    return out


def _expected_after_codecs(task: RegionTask, data: np.ndarray) -> np.ndarray:
    """What a read of quantized data gives back: encode then decode through the quantize chain
    (and the lossy source filters the destination kept)."""
    chain = [*(task.quantize.chain if task.quantize else ()), *(task.kept_filters or ())]
    if not chain:
        return data
    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.pipeline import CodecPipeline

    m = task.dst.metadata
    spec = ArraySpec(tuple(data.shape), m.data_type.dtype, m.fill_value, m.data_type)
    pipe = CodecPipeline.from_codecs([*chain, {"name": "bytes", "configuration": {"endian": "little"}}], spec)
    enc = pipe.encode(np.ascontiguousarray(data))
    return pipe.decode(enc if enc is not None else pipe.encode_empty())


def _copy_objects(task: RegionTask, res: RegionResult) -> dict[str, str | None]:
    src, dst = task.src, task.dst
    keys: dict[str, str | None] = {}
    for coords in stored_coords(dst, task.sel):
        sk, dk = object_key(src, coords), object_key(dst, coords)
        raw = src.store.get(sk)
        if raw is None:
            if dst.store.getsize(dk) is not None:
                dst.store.erase(dk)
        else:
            dst.store.set(dk, raw)
            res.bytes_out += len(raw)
            res.objects += 1
        keys[dk] = _crc(raw)
    if task.verify:
        for coords in stored_coords(dst, task.sel):
            dk = object_key(dst, coords)
            if _crc(dst.store.get(dk)) != keys.get(dk):
                raise ConvertError(f"verify: /{dst.path} object {dk} differs from the source", 4)
    return keys


def encoded_recorder(rec: Array, quantize: list[dict[str, Any]] | None) -> Array | None:
    """``rec`` as the fused ``--quantize`` path writes it (:meth:`Array.encoded_by`: the
    chain minus the quantize codecs, the values and fill value in their encoded type);
    None without --quantize.  (A region whose values the cast kernel does not encode,
    :func:`zarrcy.casting.quantize_with_report`, is written through ``rec``.)"""
    return rec.encoded_by(quantize) if quantize else None


def _fills_agree(counts: tuple[int, int] | None) -> bool:
    """The values equal to ``dst``'s fill value (bit for bit) are exactly those whose
    code is ``view``'s fill code, so every chunk (inner chunk) is all fill in one type
    exactly when it is in the other: writing ``encoded`` through ``view`` stores what
    writing ``data`` through ``dst`` would.  The fill value encodes to the fill code, so
    comparing the two counts is enough (and no code at the fill code needs no count of
    ``data``).  ``counts``: ``(codes bit-equal to view's fill code, values of data bit-equal
    to dst's fill value)``, counted by the region report's kernel pass
    (``CastReport.fill_counts``; None: not counted, so no fused write)."""
    if counts is None:
        return False
    codes, values = counts
    return codes == 0 or codes == values


def _rewrite_objects(task: RegionTask, res: RegionResult, ctx: ExecContext | None) -> dict[str, str | None]:
    src, dst, sel = task.src, task.dst, task.sel
    data = _read_source(task, sel, res.corrupt, ctx)
    q = task.quantize
    rec = task.recorder if task.recorder is not None else recording(dst)
    target, values = rec, data
    if q is not None:
        if task.cast is not None:
            rc = task.cast
        else:  # one cast: the report and the encoded values (written without casting again)
            fills = (dst.fill_value, task.encoded.fill_value) if task.encoded is not None else None
            rc = _region_cast_report(src.path, data, sel, q, encode=task.encoded is not None, fills=fills)
        res.cast, res.collisions, res.sentinel_counts = rc.report, rc.collisions, rc.sentinel_counts
        if (task.encoded is not None and rc.encoded is not None and data.dtype == dst.dtype
                and _fills_agree(rc.report.fill_counts)):
            target, values = task.encoded, rc.encoded
    store = rec.store
    assert isinstance(store, _ChecksumStore) and target.store is store
    try:
        target.set_basic_selection(sel, values, context=ctx)
    except CastError:
        if q is None:
            raise
        raise _refusal(src.path, data, sel, q.chain) from None
    keys: dict[str, str | None] = {}
    for coords in stored_coords(dst, sel):
        dk = object_key(dst, coords)
        crc, size = store.take(dk)
        keys[dk] = crc
        if crc is not None:
            res.bytes_out += size
            res.objects += 1
    if task.verify and not _same(np.asarray(dst.get_basic_selection(sel, context=ctx)),
                                 np.asarray(_expected_after_codecs(task, data))):
        raise ConvertError(f"verify: /{dst.path} region {task.rid} {sel} reads back different values", 4)
    return keys


def run_region(task: RegionTask, ctx: ExecContext | None = None) -> RegionResult:
    """Convert one region (idempotent: rerunning it rewrites the same objects).  ``ctx``:
    the conversion's execution context, whose thread budget the region's reads and
    writes share with the other regions (None, on a Dask worker: each array call makes
    its own)."""
    if task.resume:
        done = _journal_ok(task.dst.store, task.journal_key, task.rid)
        if done is not None:
            if task.verify:
                _verify_region(task, ctx)
            return done
    if _DELAY:  # testing aid (crash/resume tests): slow each region down
        time.sleep(_DELAY)
    src = task.src
    res = RegionResult(task.rid)
    res.decoded_bytes = math.prod(s.stop - s.start for s in task.sel) * src.dtype.itemsize
    for coords in stored_coords(src, task.sel):
        res.bytes_in += stored_size(src.store, object_key(src, coords))
    keys = _copy_objects(task, res) if task.mode == "copy" else _rewrite_objects(task, res, ctx)
    if task.journal:
        _write_entry(task.dst.store, task.journal_key, keys, res)
    return res


def _verify_region(task: RegionTask, ctx: ExecContext | None) -> None:
    sel = task.sel
    src, dst = task.src, task.dst
    if task.mode == "copy":
        for coords in stored_coords(dst, sel):
            dk = object_key(dst, coords)
            if _crc(dst.store.get(dk)) != _crc(src.store.get(object_key(src, coords))):
                raise ConvertError(f"verify: /{dst.path} object {dk} differs from the source", 4)
        return
    data = _read_source(task, sel, [], ctx)
    if not _same(np.asarray(dst.get_basic_selection(sel, context=ctx)), np.asarray(_expected_after_codecs(task, data))):
        raise ConvertError(f"verify: /{dst.path} region {task.rid} {sel} reads back different values", 4)


# --------------------------------------------------------------------------------------
# executors
# --------------------------------------------------------------------------------------
def _run_threads(tasks: Iterable[RegionTask], workers: int | None, on_result: Callable[[RegionResult], None]) -> None:
    _run_parallel(run_region, tasks, workers, on_result)


def _run_dask(tasks: Iterable[RegionTask], address: str, on_result: Callable[[RegionResult], None]) -> None:
    """The regions on a Dask cluster, at most 2 x (cluster threads) submitted at once.  On a failure nothing more is submitted and the regions in
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


# --------------------------------------------------------------------------------------
# --quantize checks
# --------------------------------------------------------------------------------------
def _refusal(src_path: str, values: np.ndarray, sel: tuple[slice, ...], quantize: list[dict[str, Any]],
             before_start: bool = False) -> "ConvertError":
    """The exit-5 ConvertError for a region whose values the quantize chain cannot encode,
    with the cast-check report (first failing index in array coordinates)."""
    from zarrcy.casting import check_cast

    rep = check_cast(values, quantize, masks=False, max_indices=0, origin=[s.start for s in sel])
    return ConvertError(
        f"--quantize: refusing{' to start' if before_start else ''}: values of /{src_path} cannot be encoded "
        f"(region {sel}):\n" + rep.table(), 5, rep)


def _collision(src_path: str, values: np.ndarray, sel: tuple[slice, ...], q: QuantizeCheck, rep: Any, n: int,
               before_start: bool = False) -> "ConvertError":
    """The exit-5 ConvertError for data values that encode without error but would not
    read back as what they are: a value encoding to a sentinel code (``nan=V``, or a
    fill value's code: it would read back as NaN / the fill value, i.e. missing), or
    an infinity clamped to a finite code."""
    from zarrcy.convert.cf import QuantizeMapping, Sentinel

    codes = [s for s in q.sentinels]
    first = None
    if codes:
        m = QuantizeMapping(q.chain, q.check_chain or q.chain,
                            [Sentinel(s["what"], float(s["value"]), int(s["code"]), bool(s["chosen"])) for s in codes])
        first = m.first_collision(values)
    where = ""
    if first is not None:
        idx, value, code = first
        what = next((s["what"] for s in codes if int(s["code"]) == code), "sentinel")
        where = (f"; the first: index {tuple(i + s.start for i, s in zip(idx, sel))} value {value!r} encodes to "
                 f"code {code}, the {what} code")
    key = {"NaN": "nan", "_FillValue": "fill"}
    names = ", ".join(f"{key.get(s['what'], s['what'])}={s['code']}" for s in codes)
    hint = (f" ({names} collides with values that encode to {', '.join(str(s['code']) for s in codes)}: choose "
            "sentinel codes outside the encoded range of the data (nan=, fill=), e.g. the type's largest values with "
            "a scale that keeps the data below them; collisions=allow accepts them, and such values then read back "
            "as missing)") if codes else ""
    return ConvertError(
        f"--quantize: refusing{' to start' if before_start else ''}: {n:,} value(s) of /{src_path} in region {sel} "
        f"would read back as a different kind of value (NaN, infinity or a sentinel){where}{hint}:\n" + rep.table(),
        5, rep)


@dataclass
class RegionCast:
    """A region's quantize report: the cast report (its ``round_trip_mismatches``:
    collisions only), the data values that encode to a sentinel code (accepted with
    ``collisions=allow``) and how many values each sentinel stood for."""

    report: Any
    collisions: int = 0
    sentinel_counts: dict[str, int] | None = None
    #: the region's values encoded by the quantize chain (asked for with ``encode``)
    encoded: np.ndarray | None = None


def _region_cast_report(src_path: str, values: np.ndarray, sel: tuple[slice, ...], q: QuantizeCheck,
                        before_start: bool = False, encode: bool = False, fills: Any = None) -> RegionCast:
    """The CastReport of one region under the quantize chain; raises the exit-5 refusal
    when a value fails or would not read back as what it is (a collision with a
    sentinel code, unless allowed).  Numeric sentinels (fill values) are checked
    through ``check_chain``: their own round trip counts as mapped, not as a mismatch.
    ``encode``: also the values as ``chain`` encodes them (``RegionCast.encoded``; the
    same kernel pass: ``check_chain`` differs from ``chain`` only in decoding), None
    where the kernel does not take the chain; ``fills``: ``(fill value, fill code)`` whose
    counts the same pass takes (``report.fill_counts``, see ``_fills_agree``)."""
    from zarrcy.casting import quantize_with_report

    encoded, rep = quantize_with_report(values, q.check_chain or q.chain, encode=encode, origin=[s.start for s in sel],
                                        fills=fills)
    if rep.failing:
        raise _refusal(src_path, values, sel, q.chain, before_start=before_start)
    counts: dict[str, int] = {}
    legit = 0
    for s in q.sentinels:
        if s.get("what") != "NaN":
            n = int(np.count_nonzero(values == np.asarray(float(s["value"]), dtype=values.dtype)))
            legit += n
            counts[f"{s['what']}={s['code']}"] = n
    for s in q.sentinels:  # NaN: the rest of what scalar_map mapped (no extra pass over the values)
        if s.get("what") == "NaN":
            counts[f"{s['what']}={s['code']}"] = max(0, rep.scalar_mapped - legit)
    collisions = max(0, rep.round_trip_mismatches - legit)
    rep.round_trip_mismatches = collisions  # (the fill values' own round trips are no mismatch)
    rep.causes["kind_changed"].count = max(0, rep.causes["kind_changed"].count - legit)
    if legit and rep.causes["kind_changed"].count:  # allowed collisions beside fill values
        rep.causes["kind_changed"] = _kind_changed_without_fills(values, q, sel)
    if collisions and not q.allow_collisions:
        raise _collision(src_path, values, sel, q, rep, collisions, before_start=before_start)
    return RegionCast(rep, collisions if q.sentinels else 0, counts or None, encoded)


def _kind_changed_without_fills(values: np.ndarray, q: QuantizeCheck, sel: tuple[slice, ...]) -> Any:
    """The "read back as another kind" cause of a region whose numeric fill values (which
    read back as NaN by design) are left out: count, min/max and first index of the data
    values alone (a second pass with per-element codes; only when collisions are allowed
    and fill values are present)."""
    from zarrcy.casting import check_cast
    from zarrcy.casting.report import Cause

    full = check_cast(values, q.check_chain or q.chain, masks=True, max_indices=0)
    kind = full.mask("kind_changed")
    for s in q.sentinels:
        if s.get("what") != "NaN":
            kind &= values != np.asarray(float(s["value"]), dtype=values.dtype)
    cause = Cause(count=int(np.count_nonzero(kind)))
    if cause.count:
        picked = values[kind]
        finite = picked[~np.isnan(picked)] if picked.dtype.kind == "f" else picked
        if finite.size:
            cause.min, cause.max = finite.min().item(), finite.max().item()
        first = np.unravel_index(int(np.argmax(kind.reshape(-1))), values.shape)
        cause.first_index = tuple(int(i) + s.start for i, s in zip(first, sel))
    return cause


def _check_quantize(plans: list[ArrayPlan], sources: dict[str, Array],
                    workers: int | None) -> dict[str, dict[int, RegionCast]]:
    """Refuse to start when a value of a quantized array cannot be encoded, or would not
    read back as what it is: every source region goes through the quantize chain first
    (:func:`zarrcy.casting.chain_report`, one kernel pass).  Returns each region's
    report ({array rel: {region: report}}) for the summary.  Regions are checked on
    ``workers`` threads."""
    out: dict[str, dict[int, Any]] = {}
    for p in plans:
        q = QuantizeCheck.of(p)
        if q is None:
            continue
        src = sources[p.rel]
        reports: dict[int, Any] = {}
        out[p.rel] = reports

        def check(rid: int, ctx: ExecContext, p: ArrayPlan = p, src: Array = src, q: QuantizeCheck = q) -> RegionResult:
            sel = region_selection(p, rid)
            values = src.get_basic_selection(sel, context=ctx)
            return RegionResult(rid, cast=_region_cast_report(p.src_path, values, sel, q, before_start=True))

        def keep(r: RegionResult, reports: dict[int, Any] = reports) -> None:
            reports[r.rid] = r.cast

        _run_parallel(check, p.region_ids(), workers, keep)
    return out


def _run_parallel(fn: Callable[[Any, ExecContext], RegionResult], items: Iterable[Any], workers: int | None,
                  on_result: Callable[[RegionResult], None]) -> None:
    """``on_result(fn(item, ctx))`` for every item, ``ctx`` the conversion's execution
    context (:meth:`ExecContext.for_regions`: ``workers`` threads, the regions' own
    reads and writes within the same budget)."""
    ctx = ExecContext.for_regions(workers)
    ctx.map(lambda item: on_result(fn(item, ctx)), items)
