"""Partial shard reads through the decoded-chunk cache (``zarrcy.config(cache_bytes=N)``,
:mod:`zarrcy.chunk_cache`).

A read takes one snapshot of the shard and its version token (MemoryStore: the value
object; LocalStore: the pinned inode's stat, when not "racy"; object stores: the strong
ETag of a fresh index read -- or, behind an index too large to read whole
(``index_io``), of a HEAD, the missing chunks' entries then read If-Match on it).  The touched inner chunks are looked up under
``(cache_id, token, layout.cache_key, inner chunk)``; when all are cached, a pinned
store is not read at all (not even the index).  The missing ones are fetched through
the snapshot (one coalesced read), decoded with one kernel call into a stack of whole
chunks and cached read-only; then every touched chunk is scattered into the output by
the same native scatter as stored ones (:data:`.scatter.DECODED` plan: no codec, native
byte order).  Without a token (other stores, a recently changed file, no strong ETag)
the read takes the uncached path of :mod:`.reader`.

Across shards (:func:`read_box`, :func:`read_points`; the array asks before it splits a
read by shard): when every inner chunk a box or a point set touches is cached under its
shard's current token, the whole read is one cache lookup and one kernel call (a box:
``_box_copy.copy_box``; points: ``decode_points_all`` with the decoded plan), with no
store access but the token (LocalStore: one ``stat`` per shard).  Otherwise nothing is
written and the shard-by-shard path runs (and fills the cache).

Applies to layouts with a native kernel plan (fixed-size data types, the native codec
chains); whole-shard decodes are not cached.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Sequence

import numpy as np

import zarrcy.chunk_cache as chunk_cache
from zarrcy._kernels import _box_copy as KB
from zarrcy._kernels import _inner_chunks as KI
from zarrcy.codecs._base import ByteGetter, Selection
from zarrcy.codecs.sharding import index_io, reader, scatter
from zarrcy.codecs.sharding.format import ShardLayout
from zarrcy.errors import CorruptChunkError, StoreError
from zarrcy.execution import ExecContext

__all__ = ["decode_partial", "decode_points", "read_box", "read_point", "read_points"]

#: :func:`_decoded`'s answer when this read cannot use the cache (no version token)
_UNCACHED: Any = object()


def _active_layout(layout: ShardLayout) -> bool:
    return layout.cache_key is not None and bool(layout.chunk_shape) and scatter.usable(layout) and chunk_cache.enabled()


def _kernel(layout: ShardLayout) -> Any:
    """The layout's kernel plan (every cached layout has one: ``cache_key`` needs it)."""
    if layout.kernel is None:  # pragma: no cover - _active_layout checked cache_key
        raise AssertionError("a cached shard layout without a kernel plan")
    return layout.kernel


def _active(layout: ShardLayout, getter: ByteGetter) -> bool:
    return getter.cache_id is not None and _active_layout(layout)


class _ZeroBytes(dict[int, bytes]):
    def __missing__(self, n: int) -> bytes:
        self[n] = got = bytes(n)
        return got


def _decoded(getter: ByteGetter, layout: ShardLayout, linear: np.ndarray, ctx: ExecContext) -> Any:
    """The decoded inner chunks ``linear`` of the current shard version (read-only
    arrays, :data:`chunk_cache.FILL` where not stored), from the cache or decoded now
    and cached; None when the shard does not exist; :data:`_UNCACHED` without a token."""
    lins = linear.tolist()
    quick = getter.cache_token()  # the current version, unpinned: enough when all are cached
    if quick is not None:
        got = chunk_cache.get_many((getter.cache_id, quick, layout.cache_key), lins, count_misses=False)
        if all(e is not None for e in got):
            return got
    for _ in range(reader.STALE_RETRIES + 1):
        ranged = index_io.ranged(layout, len(lins))  # a large index: only the entries of the misses
        with (getter.pinned_snapshot() if ranged else getter.snapshot()) as snap:
            ranged = ranged and index_io.usable(snap)
            flat: Any = None
            version: Any = None
            if getter.conditional_reads and not ranged:  # the current ETag: one index GET, never the cached one
                flat, version = reader.load_index(getter, snap, layout, fresh=True)
                if flat is None:
                    return None
                token = version
            elif snap.exists is False:
                return None
            else:  # a pinned object-store snapshot's token: the ETag of its HEAD (= an index GET's)
                token = snap.cache_token
            if token is None:
                return _UNCACHED
            prefix = (getter.cache_id, token, layout.cache_key)
            got = chunk_cache.get_many(prefix, lins)
            miss = [k for k, e in enumerate(got) if e is None]
            if not miss:
                return got
            mlin = linear[miss]
            try:
                if ranged:
                    flat = index_io.load_entries(snap, layout, mlin)
                elif flat is None:
                    flat, version = reader.load_index(getter, snap, layout)
                if flat is None:
                    return None
                new = _decode(snap, getter, layout, flat, mlin, version, ctx)
            except reader.Stale:
                reader.drop_index(getter, layout)
                continue
            for k, e in zip(miss, new):
                got[k] = e
            chunk_cache.put_many(prefix, mlin.tolist(), new)
            return got
    raise StoreError(f"{getter.cache_id}: the shard changed between its index read and its data read "
                     f"{reader.STALE_RETRIES + 1} times in a row; giving up")


def _decode(snap: Any, getter: ByteGetter, layout: ShardLayout, flat: Any, linear: np.ndarray,
            version: Any, ctx: ExecContext) -> list[Any]:
    """Inner chunks ``linear`` fetched (one coalesced read) and decoded (one kernel call)
    into whole read-only chunks (:data:`chunk_cache.FILL`: not stored)."""
    bufs, task_src, task_off, task_len = reader.plan_and_fetch(snap, getter, layout, *index_io.compact(flat, linear),
                                                               version, ctx)
    cs = layout.chunk_shape
    m = int(linear.size)
    staging = np.empty((m * cs[0],) + tuple(cs[1:]), layout.spec.dtype)
    with ctx.cpu():
        scatter.decode_stacked(ctx, layout, bufs, task_src, task_off, task_len, np.arange(m, dtype=np.int64), linear,
                               staging)
    out: list[Any] = []
    for k in range(m):
        if task_src[k] < 0:
            out.append(chunk_cache.FILL)
            continue
        chunk = staging if m == 1 else staging[k * cs[0]:(k + 1) * cs[0]].copy()  # own memory per entry
        chunk.flags.writeable = False
        out.append(chunk)
    return out


def _sources(entries: Sequence[Any]) -> tuple[list[Any], np.ndarray, np.ndarray, np.ndarray]:
    """Kernel sources of decoded chunks: (buffers, task_src, task_off, task_len)."""
    m = len(entries)
    srcs: list[Any] = []
    task_src = np.full(m, -1, np.int64)
    task_len = np.full(m, -1, np.int64)
    for k, e in enumerate(entries):
        if e is not chunk_cache.FILL:
            task_src[k] = len(srcs)
            task_len[k] = e.nbytes
            srcs.append(memoryview(e).cast("B"))  # C-contiguous: the bytes, no copy
    return srcs, task_src, np.zeros(m, np.int64), task_len


def _never(*_: Any) -> None:  # pragma: no cover - the decoded plan has no codec to fail
    raise CorruptChunkError("decoded chunk: unexpected kernel status")


def decode_partial(layout: ShardLayout, getter: ByteGetter, selection: Selection,
                   out: np.ndarray | None, ctx: ExecContext) -> np.ndarray | None:
    """:func:`.reader.decode_partial` through the cache."""
    if not _active(layout, getter):
        return reader.decode_partial(layout, getter, selection, out, ctx)
    box = _box(layout, selection)
    if box is not None:
        return _read_box(layout, getter, selection, box, out, ctx)
    proj, out = reader.projected(selection, layout, out)
    if out.size == 0:
        return out
    got = _decoded(getter, layout, proj.linear, ctx)
    if got is _UNCACHED:
        return reader.decode_partial(layout, getter, selection, out, ctx)
    if got is None:
        return None
    srcs, task_src, task_off, task_len = _sources(got)
    scatter.decode_tasks(ctx, layout, proj, out, srcs, task_src, task_off, task_len, _never, plan=scatter.DECODED)
    return out


def _box(layout: ShardLayout, selection: Selection) -> list[list[tuple[int, int, int, int]]] | None:
    """A selection of unit-step slices (a box) as, per dimension, the touched inner
    chunks ``(chunk index, local start, local stop, output start)``; None otherwise."""
    if len(selection) != len(layout.chunk_shape):
        return None
    dims = []
    for sel, c, n in zip(selection, layout.chunk_shape, layout.spec.shape):
        if type(sel) is not slice or sel.step not in (None, 1):
            return None
        a, b, _ = sel.indices(n)
        if b <= a:
            return None
        dims.append([(q, max(a - q * c, 0), min(b - q * c, c), max(q * c - a, 0))
                     for q in range(a // c, (b - 1) // c + 1)])
    return dims


def _read_box(layout: ShardLayout, getter: ByteGetter, selection: Selection,
              dims: list[list[tuple[int, int, int, int]]], out: np.ndarray | None,
              ctx: ExecContext) -> np.ndarray | None:
    """A box through the cache: one strided numpy copy per touched inner chunk (a
    box's chunk-local and output regions are plain slices; no kernel tables needed)."""
    shape = tuple(sum(t[2] - t[1] for t in d) for d in dims)
    if out is None:
        out = np.empty(shape, dtype=layout.spec.dtype)
    elif tuple(out.shape) != shape:
        raise ValueError(f"decode_partial: expected out of shape {shape}, received {tuple(out.shape)}")
    tasks = list(itertools.product(*dims))
    strides = [1] * len(dims)
    for d in range(len(dims) - 2, -1, -1):
        strides[d] = strides[d + 1] * layout.cps[d + 1]
    linear = np.fromiter((sum(t[0] * st for t, st in zip(task, strides)) for task in tasks), np.int64, len(tasks))
    got = _decoded(getter, layout, linear, ctx)
    if got is _UNCACHED:
        return reader.decode_partial(layout, getter, selection, out, ctx)
    if got is None:
        return None
    fill = layout.fill
    for task, e in zip(tasks, got):
        osel = tuple(slice(o, o + b - a) for _, a, b, o in task)
        if e is chunk_cache.FILL:
            out[osel] = fill
        else:
            out[osel] = e[tuple(slice(a, b) for _, a, b, _ in task)]
    return out


def read_box(layout: ShardLayout, getter_of: Callable[[tuple[int, ...]], ByteGetter],
             box: Sequence[tuple[int, int]], out: np.ndarray) -> bool:
    """A box of the array (per dimension ``[start, stop)``, non-empty, inside the
    array; shards of ``layout`` on a regular grid, ``getter_of(shard coords)``) served
    from cached inner chunks alone, across every shard it touches: True when every
    touched inner chunk is cached under its shard's current version token (``out``, C
    order, the box's shape, filled by one kernel call); False when one is not (or a shard
    has no token): nothing was read or written, the caller takes the shard-by-shard
    path, which fills the cache.  The same rule as a one-shard read's first look
    (:func:`_decoded`): the current, unpinned token is enough when everything is cached."""
    if not _active_layout(layout) or out.dtype != layout.spec.dtype:  # (bytes are copied as they are)
        return False
    cs = layout.chunk_shape
    cps = layout.cps
    r = len(cs)
    strides = [1] * r
    for d in range(r - 2, -1, -1):
        strides[d] = strides[d + 1] * cps[d + 1]
    pieces: list[tuple[int, int, int]] = []
    counts: list[int] = []
    keys = []  # per dimension: (shard coordinate, linear contribution) of each touched chunk
    for (a, b), c, p, st in zip(box, cs, cps, strides):
        dk = []
        for q in range(a // c, (b - 1) // c + 1):
            lo = q * c
            s0 = a - lo if a > lo else 0
            pieces.append((s0, (b - lo if b - lo < c else c) - s0, lo - a if lo > a else 0))
            dk.append((q // p, (q % p) * st))
        counts.append(len(dk))
        keys.append(dk)
    tasks = [(shard, sum(lins)) for shard, lins in (zip(*task) for task in itertools.product(*keys))]
    srcs = _cached_entries(layout, getter_of, tasks)
    if srcs is None:
        return False
    fill = False
    for k, e in enumerate(srcs):
        if e is chunk_cache.FILL:
            srcs[k] = None
            fill = True
    KB.copy_box(srcs, np.array(pieces, np.int64), np.array(counts, np.int64), np.array(cs, np.int64),
                out.reshape(tuple(b - a for a, b in box)), _kernel(layout).fill if fill else _NO_FILL[layout.itemsize])
    return True


def _cached_entries(layout: ShardLayout, getter_of: Callable[[tuple[int, ...]], ByteGetter],
                    tasks: Iterable[tuple[tuple[int, ...], int]]) -> list[Any] | None:
    """The cached entries of ``(shard coords, inner chunk)`` tasks, each under its
    shard's current version token (one token per shard, one lookup); None when a shard
    has no token or an entry is not cached (misses are not counted: the caller reads
    shard by shard and counts them there)."""
    prefixes: dict[tuple[int, ...], Any] = {}
    wanted = []
    for shard, lin in tasks:
        prefix = prefixes.get(shard)
        if prefix is None:
            getter = getter_of(shard)
            token = getter.cache_token() if getter.cache_id is not None else None
            if token is None:
                return None
            prefix = prefixes[shard] = (getter.cache_id, token, layout.cache_key)
        wanted.append(prefix + (lin,))
    got = chunk_cache.get_keys(wanted, count_misses=False)
    return None if any(e is None for e in got) else got


#: the fill argument of a box without fill-value pieces (any bytes of the item size)
_NO_FILL = _ZeroBytes()


def decode_points(layout: ShardLayout, getter: ByteGetter, coords: np.ndarray, ctx: ExecContext) -> np.ndarray | None:
    """:func:`.reader.decode_points` through the cache: the cached chunks' elements
    gathered by one kernel call (``decode_points_all`` with the decoded plan)."""
    k = coords.shape[1] if coords.ndim == 2 else 0
    kernel = layout.kernel
    if k == 0 or kernel is None or not _active(layout, getter):
        return reader.decode_points(layout, getter, coords, ctx)
    cs = np.asarray(layout.chunk_shape, np.int64)[:, None]
    q = coords // cs
    lin = np.ravel_multi_index(tuple(q), layout.cps).astype(np.int64)
    order = np.argsort(lin, kind="stable")
    ls = lin[order]
    starts = np.flatnonzero(np.concatenate(([True], ls[1:] != ls[:-1])))
    uniq = ls[starts]
    got = _decoded(getter, layout, uniq, ctx)
    if got is _UNCACHED:
        return reader.decode_points(layout, getter, coords, ctx)
    if got is None:
        return None
    out = np.empty(k, dtype=layout.spec.dtype)
    _gather(layout, got, starts, coords - q * cs, order, out)
    return out


def _gather(layout: ShardLayout, entries: list[Any], starts: np.ndarray, local: np.ndarray, order: np.ndarray,
            out: np.ndarray) -> None:
    """Points into the 1-d ``out`` from decoded chunks ``entries`` by one kernel call:
    the points ``order[starts[j]:starts[j + 1]]`` lie in ``entries[j]``, at in-chunk
    coordinates ``local`` ((ndim, N), in the original point order)."""
    kernel = _kernel(layout)
    srcs, task_src, task_off, task_len = _sources(entries)
    pt_start = np.append(starts, order.size).astype(np.int64)
    pt_local = np.ravel_multi_index(tuple(local), layout.chunk_shape).astype(np.int64)[order]
    status = np.empty(len(entries), np.uint8)
    KI.decode_points_all(srcs, task_src, task_off, task_len, pt_start, pt_local, order.astype(np.int64),
                         kernel.shape, layout.itemsize, 0, scatter.DECODED.chain, kernel.fill, out, status, 1)
    if status.any():  # pragma: no cover - decoded chunks of the checked size cannot fail
        _never()


def read_points(layout: ShardLayout, getter_of: Callable[[tuple[int, ...]], ByteGetter], coords: np.ndarray,
                out: np.ndarray) -> bool:
    """Points of the array (``coords``: (ndim, N) int64, in bounds; shards of ``layout``
    on a regular grid) served from cached inner chunks alone, across every shard they
    touch, into the 1-d ``out``: True when every touched inner chunk is cached under its
    shard's current version token (one kernel call); False otherwise (nothing written;
    the caller reads shard by shard) -- :func:`read_box`'s rule."""
    if (not _active_layout(layout) or layout.kernel is None or coords.ndim != 2 or not coords.shape[1]
            or out.dtype != layout.spec.dtype):
        return False
    cs = np.asarray(layout.chunk_shape, np.int64)[:, None]
    q = coords // cs  # global inner-chunk coordinates
    glin = np.ravel_multi_index(tuple(q), tuple((q.max(axis=1) + 1).tolist()))
    order = np.argsort(glin, kind="stable")
    gs = glin[order]
    starts = np.flatnonzero(np.concatenate(([True], gs[1:] != gs[:-1])))
    uq = q[:, order[starts]]
    cps = np.asarray(layout.cps, np.int64)[:, None]
    shards = map(tuple, (uq // cps).T.tolist())
    entries = _cached_entries(layout, getter_of, zip(shards, np.ravel_multi_index(tuple(uq % cps), layout.cps).tolist()))
    if entries is None:
        return False
    _gather(layout, entries, starts, coords - q * cs, order, out)
    return True


def read_point(layout: ShardLayout, getter: ByteGetter, local: Sequence[int], ctx: ExecContext) -> Any:
    """:func:`.reader.read_point` through the cache."""
    if not _active(layout, getter):
        return reader.read_point(layout, getter, local, ctx)
    lin, rel = reader.locate_point(layout, local)
    got = _decoded(getter, layout, np.array([lin], np.int64), ctx)
    if got is _UNCACHED:
        return reader.read_point(layout, getter, local, ctx)
    if got is None or got[0] is chunk_cache.FILL:
        return layout.fill_scalar
    return got[0][tuple(rel)].copy()
