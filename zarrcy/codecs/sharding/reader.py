"""Reading shards: index fetch / cache / version checks, projection of a selection onto
inner chunks, coalesced range reads, point / partial reads.

**One version per read.**  A read opens ONE snapshot of the shard
(``ByteGetter.snapshot()``, ``zarrcy.byte_access``) and reads the index and every inner
chunk through it.  LocalStore pins the file with one open descriptor (a concurrent
temp + rename replace by any process cannot mix versions: the descriptor keeps the
inode it opened), MemoryStore pins the immutable value object.  Object stores cannot
pin (``conditional_reads``): the index GET returns a version token and every data read
is conditional on it -- ``If-Match`` on the ETag, or, from a server without a strong
ETag, one GET holding both the data and the index bytes, compared with those decoded
(``zarrcy.storage.remote``); a failed match re-reads the index (at most
``STALE_RETRIES`` times, then StoreError).  A store that returns no token at all gets
the whole shard read in one request.  A point or few-inner-chunk read behind a large
index reads only the entries it needs, through ``ByteGetter.pinned_snapshot`` (object
stores: a HEAD's strong ETag, then If-Match reads; ``index_io``).

**Execution context.**  The reads here get the call's
:class:`~zarrcy.execution.ExecContext`: coalescing options and the threads decoding
inner chunks (the kernel's helpers join within its budget; Python-path chains use
``ctx.map_inner``).  Decoding after a fetch runs inside ``ctx.cpu()`` (a budget slot
for latency-bound calls, whose items wait for the network without one).

**Index cache** (``zarrcy.config(shard_index_cache=bytes)``): keyed by the shard's
``cache_id``.  For pinned snapshots a cached index is used only when the index bytes
just read through the snapshot are byte-for-byte the cached ones (and the shard size is
the same): the cache saves the checksum, decode and validation, never the read, and a
stat token that can repeat (inode reuse, same size, coarse mtime -- issue 12.1) is
never trusted.  For object stores the cache is keyed by the version token, which the
next data read checks (the server, for an ETag; the store, for index bytes).

**Projection.**  A chunk selection arrives intact (ints, slices with steps, integer
arrays: see ``zarrcy.codecs._base.Selection``) and is projected onto the inner-chunk
grid per dimension by the same ``_grid`` kernels the array layer uses; only the inner
chunks the selection touches are fetched and decoded (``decode_stats`` counts them).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Sequence

import numpy as np

from zarrcy._kernels import _sharding as K
from zarrcy.byte_range import RangeRequest
from zarrcy.byte_access import BytesSnapshot, VersionChanged
from zarrcy.codecs._base import ByteGetter, Selection, ValueSnapshot, assign, select
from zarrcy.codecs.sharding import index_io, scatter
from zarrcy.codecs.sharding._parallel import decode_stats, scratch
from zarrcy.codecs.sharding.projection import BoxProjection, Projection, project, whole_projection
from zarrcy.codecs.sharding.format import SENTINEL, ShardLayout, flat_bytes
from zarrcy.config import get as _config_get
from zarrcy.errors import CorruptChunkError, StoreError
from zarrcy.execution import ExecContext

__all__ = ["Projection", "whole_projection", "decode_partial", "read_point", "locate_point", "fetch_ranges", "plan_and_fetch", "with_index", "clear_index_cache",
           "decode_stats"]

STALE_RETRIES = 3

# ------------------------------------------------------------------------------------
# index cache: cache_id + layout -> (raw index bytes, shard size, validated index)
# ------------------------------------------------------------------------------------

_CACHE: dict[Any, tuple[Any, Any, np.ndarray]] = {}
_CACHE_BYTES = [0]
_CACHE_LOCK = threading.Lock()


def _reset_after_fork() -> None:
    """The child must not inherit a lock held by a parent thread at fork time."""
    global _CACHE_LOCK
    _CACHE_LOCK = threading.Lock()
    _CACHE.clear()
    _CACHE_BYTES[0] = 0
    decode_stats.lock = threading.Lock()


def clear_index_cache() -> None:
    """Forget every cached shard index (benchmarks measuring cold reads; tests)."""
    with _CACHE_LOCK:
        _CACHE.clear()
        _CACHE_BYTES[0] = 0


def _cache_put(key: Any, token: Any, size: Any, flat: np.ndarray) -> None:
    limit = int(_config_get("shard_index_cache"))
    nbytes = flat.nbytes
    if nbytes > limit:
        return
    with _CACHE_LOCK:
        old = _CACHE.pop(key, None)
        if old is not None:
            _CACHE_BYTES[0] -= old[2].nbytes
        while _CACHE and _CACHE_BYTES[0] + nbytes > limit:  # drop the oldest
            _CACHE_BYTES[0] -= _CACHE.pop(next(iter(_CACHE)))[2].nbytes
        _CACHE[key] = (token, size, flat)
        _CACHE_BYTES[0] += nbytes


def drop_index(getter: ByteGetter, layout: ShardLayout) -> None:
    cid = getter.cache_id
    if cid is None:
        return
    with _CACHE_LOCK:
        old = _CACHE.pop(_cache_key(cid, layout), None)
        if old is not None:
            _CACHE_BYTES[0] -= old[2].nbytes


def _cache_key(cid: Any, layout: ShardLayout) -> Any:
    return (cid, layout.index_size, layout.start, layout.n)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


#: Internal: the shard is no longer the version its index was read from (raised here by a
#: conditional data read, or by a pinned object-store snapshot's If-Match read)
Stale = VersionChanged


class _CachedToken:
    """A version token served by the index cache, with no request made.  A data read
    conditional on it validates it (``used``); a read that makes no data request -- every
    inner chunk it touches is empty in the cached index -- has validated nothing, and
    :func:`with_index` runs it again on a freshly read index, so another process's write
    into an empty inner chunk is never hidden behind a cached index."""

    __slots__ = ("token", "used")

    def __init__(self, token: Any) -> None:
        self.token = token
        self.used = False


class _WholeValue(Exception):
    """Internal: the store returned no version token with the index (nothing can check
    that later reads see the same version): read the whole shard in one request."""


# ------------------------------------------------------------------------------------
# index
# ------------------------------------------------------------------------------------


def _parse_index(raw: Any, layout: ShardLayout, size: int | None, shared: bool = True) -> np.ndarray:
    isz = layout.index_size
    if len(raw) < isz:
        raise CorruptChunkError(f"shard is {len(raw)} bytes, shorter than its index ({isz} bytes)")
    flat = layout.decode_index(raw)
    layout.validate(flat, size)
    if shared:
        flat.flags.writeable = False  # shared through the cache
    return flat


def load_index(
    getter: ByteGetter, snap: ValueSnapshot, layout: ShardLayout, fresh: bool = False, conditional: bool = True,
    owned: bool = False,
) -> tuple[np.ndarray | None, Any]:
    """``(validated index or None if the shard does not exist, version)``.

    ``version`` is None, or the version token the index came from (an ETag, or the
    index bytes themselves: ``zarrcy.storage.remote``): then every data read must be
    conditional on it (:func:`read_ranges`).  ``fresh``: skip the cache.
    ``conditional=False``: read through ``snap`` even on a store with conditional reads."""
    if owned and layout.index_size > int(_config_get("shard_index_cache")):
        got = _load_owned(getter, snap, layout, conditional and getter.conditional_reads)
        if got is not None:
            return got
    cid = getter.cache_id
    use_cache = bool(_config_get("shard_index_cache")) and cid is not None
    ck = _cache_key(cid, layout) if use_cache else None
    if conditional and getter.conditional_reads:
        if ck is not None and not fresh and not getter.in_write_session:
            hit = _CACHE.get(ck)
            if hit is not None:
                return hit[2], _CachedToken(hit[0])
        raw, token = getter.get_versioned(layout.index_request())
        if raw is None:
            drop_index(getter, layout)
            return None, None
        if token is None:  # nothing validates a later read: index and data from ONE read
            drop_index(getter, layout)
            raise _WholeValue
        flat = _parse_index(flat_bytes(raw), layout, None)
        if ck is not None:
            _cache_put(ck, token, None, flat)
        return flat, token
    if snap.exists is False:
        return None, None
    raw = snap.get(layout.index_request())
    if raw is None:
        return None, None
    if not snap.pinned or len(raw) > int(_config_get("shard_index_cache")):
        ck = None  # not cached: decode straight from what was read (a view, no copy)
    elif not isinstance(raw, bytes):
        raw = bytes(flat_bytes(raw))  # cached: its own copy, never a view into a whole shard
    size = snap.size
    if ck is not None:
        hit = _CACHE.get(ck)
        # the same index bytes in the same-size object: the validated index applies
        # (the data are read through the same snapshot, so they belong to this version)
        if hit is not None and hit[1] == size and hit[0] == raw:
            return hit[2], None
    flat = _parse_index(raw, layout, size)
    if ck is not None:
        _cache_put(ck, raw, size, flat)
    return flat, None


def _load_owned(
    getter: ByteGetter, snap: ValueSnapshot, layout: ShardLayout, conditional: bool,
) -> tuple[np.ndarray | None, Any] | None:
    """A writer's large index (never cached) read into its own writable buffer, which
    the rewrite turns into the new index in place: the index is held once (issue 23.8).
    ``(index or None if the shard does not exist, version)``, or None when the store
    cannot read it so (then :func:`load_index` reads it as a reader does).

    On a store with conditional reads the index comes through a pinned snapshot (one
    HEAD, then If-Match range reads of that ETag, ``ValueSnapshot.get_owned``) and the
    ETag is the version every data read of the write is conditional on; a server
    without a strong ETag keeps the one-GET path, whose bytes the data read re-checks."""
    req = layout.index_request()
    if not conditional:
        mine = snap.get_owned(req)
        return None if mine is None else (_parse_index(mine, layout, snap.size, shared=False), None)
    with getter.pinned_snapshot() as pinned:
        if not pinned.pinned:
            return None
        if pinned.exists is False:
            drop_index(getter, layout)
            return None, None
        mine = pinned.get_owned(req)  # VersionChanged (= Stale): with_index reads again
        if mine is None:
            return None
        return _parse_index(mine, layout, pinned.size, shared=False), pinned.cache_token


def read_ranges(snap: ValueSnapshot, getter: ByteGetter, ranges: list[RangeRequest], version: Any) -> list[Any]:
    """Ranges of the shard, through ``snap`` -- or conditional on ``version`` (ETag):
    raises :class:`Stale` when the shard is no longer that version."""
    if version is None:
        return snap.get_ranges(ranges)
    if isinstance(version, _CachedToken):
        version.used = version.used or bool(ranges)
        version = version.token
    got = getter.get_ranges_if_version(ranges, version)
    if got is None:
        raise Stale
    return got


def _index_cached(getter: ByteGetter, layout: ShardLayout, fresh: bool) -> bool:
    """Whether an object store's index is in the cache (keyed by its ETag, which the data
    GET checks): a read then costs that one conditional GET, no index entries."""
    if fresh or not getter.conditional_reads or getter.in_write_session or not _config_get("shard_index_cache"):
        return False
    cid = getter.cache_id
    return cid is not None and _cache_key(cid, layout) in _CACHE


def with_index(
    getter: ByteGetter, layout: ShardLayout, body: Callable[[ValueSnapshot, Any, Any], Any], fresh: bool = False,
    owned: bool = False, linear: Sequence[int] | np.ndarray | None = None,
) -> Any:
    """``body(snapshot, index, version)`` on one snapshot of the shard; when a
    conditional data read finds the shard changed (:class:`Stale`), drop the cached
    index, re-read it and run ``body`` again -- at most ``STALE_RETRIES`` times.  A
    ``body`` that read no data behind a cached object-store index (:class:`_CachedToken`)
    runs again on a fresh one (``body`` must be a read: writers pass ``fresh=True``).
    ``owned``: a large index comes in its own writable buffer (:func:`load_index`).
    ``linear``: the inner chunks ``body`` reads; a large index is then not loaded whole
    when a pinned snapshot can serve their entries (``index_io``: ``index`` is a
    :class:`~.index_io.SparseIndex`)."""
    for _ in range(STALE_RETRIES + 1):
        ranged = (linear is not None and index_io.ranged(layout, len(linear))
                  and not _index_cached(getter, layout, fresh))
        with (getter.pinned_snapshot() if ranged else getter.snapshot()) as snap:
            flat: np.ndarray | index_io.SparseIndex | None
            try:
                if ranged and index_io.usable(snap):
                    assert linear is not None
                    flat, version = index_io.load_entries(snap, layout, linear), None
                else:
                    flat, version = load_index(getter, snap, layout, fresh, owned=owned)
            except _WholeValue:
                with BytesSnapshot(getter.get()) as whole:
                    flat, _ = load_index(getter, whole, layout, True, conditional=False)
                    return body(whole, flat, None)
            except Stale:  # a pinned object-store snapshot: the shard changed while its entries were read
                fresh = True
                continue
            try:
                result = body(snap, flat, version)
                if isinstance(version, _CachedToken) and not version.used:
                    fresh = True  # nothing validated the cached index: read it again
                    continue
                return result
            except Stale:
                drop_index(getter, layout)
                fresh = True
    where = getter.cache_id
    where = f"{where[0]}/{where[1]}: " if isinstance(where, tuple) else ""
    raise StoreError(
        f"{where}the shard changed between its index read and its data read "
        f"{STALE_RETRIES + 1} times in a row; giving up (no consistent version to read)"
    )


def fetch_ranges(
    snap: ValueSnapshot, getter: ByteGetter, layout: ShardLayout, which: np.ndarray, offs: np.ndarray,
    nbs: np.ndarray, version: Any, ctx: ExecContext,
) -> tuple[list[memoryview], np.ndarray, np.ndarray]:
    """Read the bytes of inner chunks ``which`` with one coalesced ``get_ranges`` call.

    Returns (group buffers, group of each chunk, group start offsets)."""
    m = which.size
    layout.check_fetch(which, nbs)
    if m and snap.size is not None:  # the size is known: refuse before reading
        ends = offs + nbs
        over = ends > np.uint64(snap.size)
        if over.any():
            bad = int(np.argmax(over))
            raise CorruptChunkError(
                f"{layout.chunk_name(int(which[bad]))}: points past the end of the shard "
                f"(offset={int(offs[bad])}, nbytes={int(nbs[bad])}, shard size {snap.size}; truncated?)"
            )
    g_of = np.zeros(m, np.int64)
    if m == 1:
        ng = 1
        gs = offs.astype(np.uint64)
        ge = gs + nbs
    else:
        order = np.argsort(offs, kind="stable").astype(np.int64)
        gs = np.empty(m, np.uint64)
        ge = np.empty(m, np.uint64)
        ng = K.coalesce(offs, nbs, order, ctx.coalesce_gap, ctx.coalesce_max, g_of, gs, ge)
    starts = gs[:ng].tolist()
    stops = ge[:ng].tolist()
    got = read_ranges(snap, getter, [RangeRequest(a, b - a) for a, b in zip(starts, stops)], version) if ng else []
    bufs: list[memoryview] = []
    for g, (raw, a, b) in enumerate(zip(got, starts, stops)):
        if raw is None:
            raise CorruptChunkError("shard disappeared while its inner chunks were read")
        raw = flat_bytes(raw)
        if len(raw) < b - a:
            avail = a + len(raw)
            members = np.flatnonzero(g_of == g)
            ends = offs[members] + nbs[members]
            bad = int(members[np.argmax(ends > avail)])
            raise CorruptChunkError(
                f"{layout.chunk_name(int(which[bad]))}: points past the end of the shard "
                f"(offset={int(offs[bad])}, nbytes={int(nbs[bad])}, shard ends at {avail}; truncated?)"
            )
        bufs.append(raw)
    return bufs, g_of, gs[:ng]


def plan_and_fetch(
    snap: ValueSnapshot, getter: ByteGetter, layout: ShardLayout, flat: np.ndarray, linear: np.ndarray,
    version: Any, ctx: ExecContext,
) -> tuple[list[memoryview], np.ndarray, np.ndarray, np.ndarray]:
    """Read the stored inner chunks among ``linear`` (C-order indices) with one coalesced
    ``get_ranges`` call.  Returns ``(buffers, task_src, task_off, task_len)``: task ``k``
    is ``buffers[task_src[k]][task_off[k]:][:task_len[k]]`` (``task_src[k] == -1``: not
    stored).  Lookup, checks and coalescing are one kernel call (``_sharding.plan_reads``);
    an implausible entry is reported by :func:`fetch_ranges`'s checks, naming it."""
    m = linear.size
    task_src = np.empty(m, np.int64)
    task_off = np.empty(m, np.int64)
    task_len = np.empty(m, np.int64)
    gs = np.empty(m, np.uint64)
    ge = np.empty(m, np.uint64)
    limit = layout.inner_limit
    ng = K.plan_reads(
        flat, linear, -1 if snap.size is None else snap.size, max(limit, 1 << 20), limit, 1 << 20,
        ctx.coalesce_gap, ctx.coalesce_max, task_src, task_off, task_len, gs, ge,
    )
    if ng < 0:  # raises naming the entry
        offs = flat[2 * linear]
        nbs = flat[2 * linear + 1]
        present = offs != SENTINEL
        fetch_ranges(snap, getter, layout, linear[present], offs[present], nbs[present], version, ctx)
        raise CorruptChunkError("shard index: implausible inner chunk entries")  # pragma: no cover
    if not ng:
        return [], task_src, task_off, task_len
    starts = gs[:ng].tolist()
    stops = ge[:ng].tolist()
    got = read_ranges(snap, getter, [RangeRequest(a, b - a) for a, b in zip(starts, stops)], version)
    bufs: list[memoryview] = []
    for g, (raw, a, b) in enumerate(zip(got, starts, stops)):
        if raw is None:
            raise CorruptChunkError("shard disappeared while its inner chunks were read")
        raw = flat_bytes(raw)
        if len(raw) < b - a:
            avail = a + len(raw)
            members = np.flatnonzero(task_src == g)
            ends = task_off[members] + task_len[members] + a
            bad = int(members[np.argmax(ends > avail)])
            raise CorruptChunkError(
                f"{layout.chunk_name(int(linear[bad]))}: points past the end of the shard "
                f"(offset={a + int(task_off[bad])}, nbytes={int(task_len[bad])}, shard ends at {avail}; truncated?)"
            )
        bufs.append(raw)
    return bufs, task_src, task_off, task_len


# ------------------------------------------------------------------------------------
# reads
# ------------------------------------------------------------------------------------


def decode_partial(
    layout: ShardLayout, getter: ByteGetter, selection: Selection, out: np.ndarray | None, ctx: ExecContext
) -> np.ndarray | None:
    lin = _one_inner_chunk(selection, layout)
    if lin is not None and (out is None or out.shape == layout.chunk_shape):
        # exactly one whole inner chunk (aligned reads): no projection, no tables
        dest = np.empty(layout.chunk_shape, dtype=layout.spec.dtype) if out is None else out
        return with_index(getter, layout, lambda snap, flat, version: _one(
            snap, getter, layout, lin, flat, version, dest, ctx), linear=[lin])
    proj, out = projected(selection, layout, out)
    if out.size == 0:
        return out
    return with_index(getter, layout, lambda snap, flat, version: _partial(
        snap, getter, layout, proj, flat, version, out, ctx), linear=proj.linear)


def projected(selection: Selection, layout: ShardLayout,
              out: np.ndarray | None) -> tuple[Projection | BoxProjection, np.ndarray]:
    """The selection's projection and the output it is decoded into (``out``, checked,
    or a new array)."""
    proj = project(selection, layout, box=scatter.usable(layout))
    if out is None:
        out = np.empty(proj.out_shape, dtype=layout.spec.dtype)
    elif tuple(out.shape) != proj.out_shape:
        raise ValueError(f"decode_partial: expected out of shape {proj.out_shape}, received {tuple(out.shape)}")
    return proj, out


def _one_inner_chunk(selection: Selection, layout: ShardLayout) -> int | None:
    """The C-order index of the inner chunk ``selection`` covers exactly (unit-step
    slices on inner-chunk boundaries), or None."""
    if len(selection) != len(layout.chunk_shape) or not layout.chunk_shape:
        return None
    lin = 0
    for sel, c, g in zip(selection, layout.chunk_shape, layout.cps):
        if type(sel) is not slice or (sel.step is not None and sel.step != 1):
            return None
        a, b = sel.start, sel.stop
        if type(a) is not int or type(b) is not int or b - a != c or a < 0 or a % c:
            return None
        q = a // c
        if q >= g:
            return None
        lin = lin * g + q
    return lin


def _read_one(snap: ValueSnapshot, getter: ByteGetter, layout: ShardLayout, lin: int, flat: np.ndarray,
              version: Any, ctx: ExecContext) -> Any:
    """The stored bytes of inner chunk ``lin`` (one range read; None: not stored), with
    the checks of :func:`fetch_ranges` on plain ints (the latency path)."""
    off = int(flat[2 * lin])
    nb = int(flat[2 * lin + 1])
    if off == SENTINEL:
        return None
    if nb > max(layout.inner_limit, 1 << 20) or (snap.size is not None and off + nb > snap.size):
        fetch_ranges(snap, getter, layout, np.array([lin]), np.array([off], np.uint64),
                     np.array([nb], np.uint64), version, ctx)  # raises with the full message
    (raw,) = read_ranges(snap, getter, [RangeRequest(off, nb)], version)
    if raw is None:
        raise CorruptChunkError("shard disappeared while its inner chunks were read")
    if len(raw) < nb:
        raise CorruptChunkError(
            f"{layout.chunk_name(lin)}: points past the end of the shard "
            f"(offset={off}, nbytes={nb}, shard ends at {off + len(raw)}; truncated?)"
        )
    return raw


def _one(snap: ValueSnapshot, getter: ByteGetter, layout: ShardLayout, lin: int, flat: Any, version: Any,
         out: np.ndarray, ctx: ExecContext) -> np.ndarray | None:
    if flat is None:
        return None
    raw = _read_one(snap, getter, layout, lin, flat, version, ctx)
    if raw is None:
        out[...] = layout.fill
        return out
    try:
        with ctx.cpu():
            if out.flags.c_contiguous and out.flags.writeable:
                layout.inner.decode_into(raw, out, ctx=ctx)
            else:
                buf = scratch(layout.inner_spec)
                layout.inner.decode_into(raw, buf, ctx=ctx)
                out[...] = buf
    except CorruptChunkError as e:
        raise CorruptChunkError(f"{layout.chunk_name(lin)}: {e}") from e
    decode_stats.add(1)
    return out


def _decode_into(layout: ShardLayout, data: Any, osel: tuple[Any, ...], csel: tuple[Any, ...], full: bool,
                 proj: Projection | BoxProjection, out: np.ndarray, ctx: ExecContext) -> None:
    inner = layout.inner
    if proj.covers_all(full, osel):
        inner.decode_into(data, out[osel + (Ellipsis,)], ctx=ctx)
    else:  # partly covered: decode into this thread's scratch chunk, copy the part
        buf = scratch(layout.inner_spec)
        inner.decode_into(data, buf, ctx=ctx)
        assign(out, osel, select(buf, csel))
    decode_stats.add(1)


def _partial(
    snap: ValueSnapshot, getter: ByteGetter, layout: ShardLayout, proj: Projection | BoxProjection, flat: Any, version: Any,
    out: np.ndarray, ctx: ExecContext,
) -> np.ndarray | None:
    if flat is None:
        return None
    lin = proj.linear
    bufs, task_src, task_off, task_len = plan_and_fetch(snap, getter, layout, *index_io.compact(flat, lin), version,
                                                        ctx)
    fill = layout.fill

    def task(k: int, dest: np.ndarray = out) -> None:
        csel, osel, full = proj.task(k)
        g = int(task_src[k])
        if g < 0:
            assign(dest, osel, fill)
        else:
            o = int(task_off[k])
            try:
                _decode_into(layout, bufs[g][o:o + int(task_len[k])], osel, csel, full, proj, dest, ctx)
            except CorruptChunkError as e:
                raise CorruptChunkError(f"{layout.chunk_name(int(lin[k]))}: {e}") from e

    with ctx.cpu():
        if scatter.usable(layout):  # one kernel call, even for one inner chunk (its tables are built)
            scatter.decode_tasks(ctx, layout, proj, out, bufs, task_src, task_off, task_len, task)
            return out
        ctx.map_inner(proj.m, task, int((task_len >= 0).sum()) * layout.inner_spec.nbytes)
    return out


def read_point(layout: ShardLayout, getter: ByteGetter, local: Sequence[int], ctx: ExecContext) -> Any:
    """One element at in-shard coordinates ``local`` (in bounds): the index (cached),
    one range read of its inner chunk, a decode into a per-thread scratch chunk.  A large
    index is not loaded: only the entry's 16 bytes, or the index streamed in pieces for
    its crc32c (``index_io``)."""
    lin, rel = locate_point(layout, local)
    return with_index(getter, layout,
                      lambda snap, flat, version: _point(snap, getter, layout, lin, rel, flat, version, ctx),
                      linear=[lin])


def locate_point(layout: ShardLayout, local: Sequence[int]) -> tuple[int, list[int]]:
    """``(linear index of the inner chunk holding the shard-local point, the point
    within that inner chunk)``."""
    lin = 0
    rel = []
    for x, c, g in zip(local, layout.chunk_shape, layout.cps):
        q = x // c
        lin = lin * g + q
        rel.append(x - q * c)
    return lin, rel


def _point(snap: ValueSnapshot, getter: ByteGetter, layout: ShardLayout, lin: int, rel: list[int], flat: Any,
           version: Any, ctx: ExecContext) -> Any:
    if flat is None:
        return layout.fill_scalar
    raw = _read_one(snap, getter, layout, lin, flat, version, ctx)
    if raw is None:
        return layout.fill_scalar
    try:
        if scatter.usable(layout):  # decodes only what the element needs, where it can
            value = scatter.decode_element(layout, raw, tuple(rel))
            decode_stats.add(1)
            return value
        buf = scratch(layout.inner_spec)
        with ctx.cpu():
            layout.inner.decode_into(raw, buf, ctx=ctx)
    except CorruptChunkError as e:
        raise CorruptChunkError(f"{layout.chunk_name(lin)}: {e}") from e
    decode_stats.add(1)
    value = buf[tuple(rel)]
    return value.copy() if isinstance(value, np.generic) else value  # str/bytes elements: immutable


def decode_points(layout: ShardLayout, getter: ByteGetter, coords: np.ndarray, ctx: ExecContext) -> np.ndarray | None:
    """Elements at in-shard coordinates ``coords`` ((ndim, k) int64, in bounds; vindex):
    the inner chunks holding them are fetched (coalesced) and decoded once each."""
    k = coords.shape[1] if coords.ndim == 2 else 0
    out = np.empty(k, dtype=layout.spec.dtype)
    if k == 0:
        return out
    if not layout.cps:
        lin = np.zeros(k, np.int64)
        local = coords
    else:
        cs = np.asarray(layout.chunk_shape, np.int64)[:, None]
        q = coords // cs
        local = coords - q * cs
        lin = np.ravel_multi_index(tuple(q), layout.cps).astype(np.int64)
    order = np.argsort(lin, kind="stable")
    ls = lin[order]
    cuts = np.flatnonzero(ls[1:] != ls[:-1]) + 1
    starts = np.r_[0, cuts]
    uniq = ls[starts]
    groups = np.split(order, cuts)
    return with_index(
        getter, layout,
        lambda snap, flat, version: _points(snap, getter, layout, flat, version, uniq, groups, local, out, ctx),
        linear=uniq,
    )


def _points(snap: ValueSnapshot, getter: ByteGetter, layout: ShardLayout, flat: Any, version: Any,
            uniq: np.ndarray, groups: list[np.ndarray], local: np.ndarray, out: np.ndarray,
            ctx: ExecContext) -> np.ndarray | None:
    if flat is None:
        return None
    bufs, task_src, task_off, task_len = plan_and_fetch(snap, getter, layout, *index_io.compact(flat, uniq), version,
                                                        ctx)
    fill = layout.fill

    def task(j: int) -> None:
        idx = groups[j]
        g = int(task_src[j])
        if g < 0:
            out[idx] = fill
            return
        buf = scratch(layout.inner_spec)
        o = int(task_off[j])
        try:
            layout.inner.decode_into(bufs[g][o:o + int(task_len[j])], buf, ctx=ctx)
        except CorruptChunkError as e:
            raise CorruptChunkError(f"{layout.chunk_name(int(uniq[j]))}: {e}") from e
        decode_stats.add(1)
        out[idx] = buf[tuple(local[:, idx])]

    with ctx.cpu():
        if uniq.size > 1 and scatter.usable(layout):
            scatter.decode_point_tasks(ctx, layout, out, bufs, uniq, task_src, task_off, task_len, groups, local, task)
            return out
        ctx.map_inner(uniq.size, task, int((task_len >= 0).sum()) * layout.inner_spec.nbytes)
    return out
