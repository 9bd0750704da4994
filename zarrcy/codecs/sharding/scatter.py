"""Partial and whole-shard reads through the C inner-chunk kernel
(``zarrcy._kernels._inner_chunks``): locate, decode (the native codec engine: raw, gzip,
zstd or blosc, then an optional crc32c; transposed or not), byte-swap and scatter every
touched inner chunk of a selection without the GIL -- one kernel call per shard,
whatever the number of inner chunks or coalesced buffers (issues 13.3, 21).

The call splits its inner chunks over the calling thread and helpers of a native pool
(``zarrcy._kernels._workers``: pthreads that spin briefly, then block; no Python thread
hand-off, no GIL), as many as the execution context allows
(``ExecContext.kernel_threads``): helpers join only with a free slot of the call's
thread budget; each thread claims one inner chunk at a time.

Applies when the inner codec chain has a kernel plan (``ShardLayout.kernel``, declared by
the codecs: ``transpose``? , ``bytes`` , [gzip | zstd | blosc] , [crc32c], fixed-size
data types); everything else uses the Python path in :mod:`.reader`.  zstd frames
without a checksum are decoded only up to the last byte a selection needs, blosc frames
only in the blocks it touches.  Every inner chunk gets a status code; a gzip code that
may only mean "several members" (valid gzip the kernel does not stitch) is retried for
that one inner chunk through the Python codec, which decides; any other failure raises
naming the inner chunk.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zarrcy._kernels import _inner_chunks as KI
from zarrcy.codecs import _native
from zarrcy.codecs.sharding._parallel import decode_stats, scratch
from zarrcy.codecs.sharding.projection import whole_projection
from zarrcy.config import get as _config_get
from zarrcy.errors import CorruptChunkError
from zarrcy.execution import ExecContext

__all__ = ["usable", "writes_strided", "decode_tasks", "decode_point_tasks", "decode_element",
           "encode_chunks", "merge_chunks", "decode_stacked", "DECODED", "ENABLED"]

#: tests switch the kernel path off to compare it with the Python path
ENABLED = True

_RETRY_IN_PYTHON = (KI.GZIP_TOO_SHORT, KI.GZIP_TRAILING)

#: the kernel plan of decoded chunks (C order, native byte order, no codec): cached
#: chunks reach the output through the same scatter as stored ones
DECODED = _native.KernelPlan(None, 0, (KI.RAW, False, 0, False, "", 0, 0, 0))
_UNCOUNTED = np.full(1, -1, np.int64)  # _settle's task lengths when nothing counts as decoded


def usable(layout: Any) -> bool:
    """The kernel can decode this layout's inner chunks."""
    return ENABLED and layout.kernel is not None


def _settle(layout: Any, linear: np.ndarray, status: np.ndarray, task_len: np.ndarray,
            retry: Callable[[int], None]) -> None:
    """After a kernel call: count the decoded chunks; a gzip code that may only mean
    "several members" is retried through the Python codec (which decides); any other
    failure raises, naming the first failing inner chunk."""
    failed = np.flatnonzero(status)
    if decode_stats.enabled:
        decode_stats.add(int((task_len >= 0).sum()) - failed.size)
    for t in failed.tolist():
        code = int(status[t])
        if code not in _RETRY_IN_PYTHON:
            raise CorruptChunkError(f"{layout.chunk_name(int(linear[t]))}: {KI.describe(code)}")
    for t in failed.tolist():
        retry(t)  # the codec decides (raises when corrupt)


def writes_strided(out: np.ndarray) -> bool:
    """The kernel writes into this (non-contiguous) view directly: non-negative
    strides, the last dimension contiguous (``_inner_common._strided_ok``)."""
    if out.ndim == 0 or 0 in out.shape or min(out.strides) < 0 or out.dtype.hasobject:
        return False
    return out.shape[-1] == 1 or out.strides[-1] == out.itemsize


def whole_tables(layout: Any) -> tuple[Any, tuple[np.ndarray, ...]]:
    """(projection, kernel tables) of a whole shard: immutable per layout, so built once
    and kept on it (up to 65,536 inner chunks; larger grids rebuild them per shard)."""
    def build() -> tuple[Any, tuple[np.ndarray, ...]]:
        proj = whole_projection(layout)
        return proj, proj.kernel_tables()

    return layout.kernel.whole(build)


def decode_tasks(
    ctx: ExecContext, layout: Any, proj: Any, out: np.ndarray, bufs: list[Any], task_src: np.ndarray,
    task_off: np.ndarray, task_len: np.ndarray, python_task: Callable[[int, np.ndarray], None],
    tables: tuple[np.ndarray, ...] | None = None, plan: Any = None,
) -> None:
    """Decode and scatter every task of ``proj`` into ``out`` (the selection's shape).

    ``task_src[t]``: buffer of task ``t`` (-1: inner chunk not stored, fill; then
    ``task_len[t] == -1``); ``task_off`` / ``task_len``: its byte range in that buffer
    (:func:`.reader.plan_and_fetch`).  One kernel call runs every task on the threads
    ``ctx`` allows (the native pool of ``_workers``, within the call's budget);
    ``python_task(t, dest)`` decodes one task into ``dest`` through the Python codec
    (retries of ambiguous gzip codes).  ``plan``: the kernel plan the buffers are in
    (default: the layout's; :data:`DECODED` for decoded chunks, e.g. cached ones)."""
    ndim = len(layout.chunk_shape)
    kshape = [1] * ndim
    k = 0
    for d in range(ndim):
        if d not in proj.dropped:
            kshape[d] = proj.out_shape[k]
            k += 1
    direct = out.flags.writeable and (out.flags.c_contiguous or writes_strided(out))
    if direct:  # the selection's shape with its dropped dimensions back as length 1: a view
        target = out[tuple(None if d in proj.dropped else slice(None) for d in range(ndim))]
    else:
        target = np.empty(kshape, out.dtype)
    dest = target.reshape(out.shape)  # a view: what the Python retries write into
    coords, dim_base, dim_start, dim_local, dim_out = proj.kernel_tables() if tables is None else tables
    status = np.empty(task_src.size, np.uint8)
    kernel = layout.kernel
    counted = plan is None  # decoded chunks (plan given) are not counted as decodes
    plan = kernel.plan if plan is None else plan
    failed = KI.decode_scatter_all(
        bufs, task_src, coords, task_off, task_len, dim_base, dim_start, dim_local, dim_out,
        kernel.shape, layout.itemsize, plan.swap, plan.chain, kernel.fill, target,
        status, ctx.kernel_threads(task_src.size, layout.inner_spec.nbytes) if counted else 1, plan.order, ctx.budget,
    )
    if failed or decode_stats.enabled:
        _settle(layout, proj.linear, status, task_len if counted else _UNCOUNTED, lambda t: python_task(t, dest))
    if not direct:
        out[...] = dest


def decode_point_tasks(
    ctx: ExecContext, layout: Any, out: np.ndarray, bufs: list[Any], linear: np.ndarray, task_src: np.ndarray,
    task_off: np.ndarray, task_len: np.ndarray, groups: list[np.ndarray], local: np.ndarray,
    python_task: Callable[[int], None], plan: Any = None,
) -> None:
    """vindex: task ``j`` (inner chunk ``linear[j]``) provides the points ``groups[j]``
    (positions in the 1-d ``out``) at chunk coordinates ``local[:, groups[j]]``
    (``plan``: as in :func:`decode_tasks`)."""
    sizes = np.fromiter((g.size for g in groups), np.int64, len(groups))
    pt_start = np.zeros(len(groups) + 1, np.int64)
    np.cumsum(sizes, out=pt_start[1:])
    pt_out = np.concatenate(groups).astype(np.int64) if groups else np.empty(0, np.int64)
    kernel = layout.kernel
    counted = plan is None
    plan = kernel.plan if plan is None else plan
    if not layout.chunk_shape:
        pt_local = np.zeros(pt_out.size, np.int64)
    elif plan.order is None:
        pt_local = np.ravel_multi_index(tuple(local[:, pt_out]), layout.chunk_shape).astype(np.int64)
    else:  # flat indices of the stored (transposed) array
        order = plan.order
        pt_local = np.ravel_multi_index(tuple(local[list(order)][:, pt_out]),
                                        tuple(layout.chunk_shape[o] for o in order)).astype(np.int64)
    status = np.empty(task_src.size, np.uint8)
    failed = KI.decode_points_all(
        bufs, task_src, task_off, task_len, pt_start, pt_local, pt_out, kernel.shape, layout.itemsize,
        plan.swap, plan.chain, kernel.fill, out, status,
        ctx.kernel_threads(task_src.size, layout.inner_spec.nbytes) if counted else 1, ctx.budget,
    )
    if failed or decode_stats.enabled:
        _settle(layout, linear, status, task_len if counted else _UNCOUNTED, python_task)


def decode_element(layout: Any, raw: Any, rel: tuple[int, ...]) -> Any:
    """The element at in-chunk coordinates ``rel`` of one stored inner chunk ``raw``:
    zstd frames without a checksum decoded only up to it, blosc only its block."""
    plan = layout.kernel.plan
    cs = layout.chunk_shape
    axes = range(len(cs)) if plan.order is None else plan.order  # the stored (maybe transposed) order
    flat = 0
    for o in axes:  # C-order flat index in the stored array (rel is in bounds: checked by locate_point)
        flat = flat * cs[o] + int(rel[o])
    isz = layout.itemsize
    buf = scratch(layout.inner_spec).reshape(-1).view(np.uint8)
    _native.decode_range_into(plan.chain, raw, buf, flat * isz, (flat + 1) * isz)
    dt = layout.spec.dtype
    stored = dt.newbyteorder() if plan.swap else dt
    if dt.kind in "biufcmM":  # a numpy scalar is its own copy, in native byte order
        return buf[flat * isz:(flat + 1) * isz].view(stored)[0]
    return np.frombuffer(buf[flat * isz:(flat + 1) * isz].tobytes(), dtype=stored).astype(dt)[0]


def encode_chunks(ctx: ExecContext, layout: Any, arr: np.ndarray, n: int,
                  alloc: Callable[[int], np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every inner chunk of ``arr`` (C-contiguous; its inner grid of ``n`` chunks in C
    order, edge chunks padded with fill) gathered, checked for emptiness and encoded
    through the native engine as the layout's kernel plan says, in one C loop per part
    (``_inner_encode.gather_encode``; as many parts as ``ctx`` has threads, run in the
    caller's slot and the slots free now, :meth:`.ExecContext.map_inner`).  Returns ``(slots, slot_off, nbytes)``: chunk
    ``i`` is ``slots[slot_off[i]:][:nbytes[i]]``, ``nbytes[i] == -1`` when it holds
    only the fill value (unless ``write_empty_chunks``).  ``alloc(size)`` gives the slot
    buffer."""
    kernel = layout.kernel
    plan = kernel.plan
    slot = int(KI.slot_size(plan.chain, 0, layout.inner_spec.nbytes))
    slots = alloc(n * slot)
    slot_off = np.arange(n + 1, dtype=np.int64) * slot
    nbytes = np.empty(n, np.int64)
    empty = np.empty(n, np.uint8)
    keep = bool(_config_get("write_empty_chunks"))
    parts = min(ctx.threads, n)
    bounds = [n * k // parts for k in range(parts + 1)]

    def one(k: int) -> None:
        buf = scratch(layout.inner_spec).reshape(-1).view(np.uint8)
        bad, code = KI.gather_encode(arr, kernel.shape, layout.itemsize, plan.swap, plan.chain, 0, kernel.fill, keep,
                                     bounds[k], bounds[k + 1], slots, slot_off, nbytes, empty, buf, plan.order)
        if bad != -1:  # pragma: no cover - slots are sized for the worst case
            raise CorruptChunkError(f"{layout.chunk_name(bad)}: {KI.describe(code)}")

    ctx.map_inner(parts, one, arr.nbytes)
    return slots, slot_off, nbytes


def merge_chunks(ctx: ExecContext, layout: Any, linear: np.ndarray, full: np.ndarray, old_bytes: Callable[[int], Any],
                 put: Callable[[int, np.ndarray], None]) -> list[memoryview | None]:
    """A partial write's touched inner chunks (``linear``; ``full[k]``: the write covers
    chunk ``k`` entirely) rebuilt and re-encoded with two kernel calls: the stored
    partially covered chunks decoded (``old_bytes(i)``: their bytes, None: fill) into one
    staging array of the touched chunks, ``put(k, chunk)`` writes the new values into
    each, then all are encoded (:func:`encode_chunks`).  The encoded bytes of each chunk,
    None where it is now empty."""
    cs = layout.chunk_shape
    m = int(linear.size)
    staging = np.empty((m * cs[0],) + tuple(cs[1:]), layout.spec.dtype)
    part = np.flatnonzero(~full)
    if part.size:
        srcs: list[Any] = []
        tsrc = np.full(part.size, -1, np.int64)
        tlen = np.full(part.size, -1, np.int64)
        for j, k in enumerate(part.tolist()):
            b = old_bytes(int(linear[k]))
            if b is not None:
                tsrc[j] = len(srcs)
                tlen[j] = len(b)
                srcs.append(b)
        decode_stacked(ctx, layout, srcs, tsrc, np.zeros(part.size, np.int64), tlen, part, linear[part], staging)
    for k in range(m):
        put(k, staging[k * cs[0]:(k + 1) * cs[0]])
    slots, slot_off, nbytes = encode_chunks(ctx, layout, staging, m, lambda size: np.empty(size, np.uint8))
    mv = memoryview(slots)
    return [None if nb < 0 else mv[o:o + nb] for o, nb in zip(slot_off[:-1].tolist(), nbytes.tolist())]


def decode_stacked(ctx: ExecContext, layout: Any, srcs: list[Any], task_src: np.ndarray, task_off: np.ndarray, task_len: np.ndarray,
                   rows: np.ndarray, linear: np.ndarray, staging: np.ndarray) -> None:
    """Decode task ``j`` (inner chunk ``linear[j]``; bytes as in :func:`decode_tasks`,
    ``task_src[j] == -1``: fill) into whole chunk ``rows[j]`` of ``staging`` (inner
    chunks stacked along the first dimension) with one kernel call."""
    kernel = layout.kernel
    plan = kernel.plan
    cs = layout.chunk_shape
    n = int(rows.size)
    coords = np.zeros((n, len(cs)), np.int64)
    coords[:, 0] = rows
    status = np.empty(n, np.uint8)
    KI.decode_scatter_all(srcs, task_src, coords, task_off, task_len,
                          *_staging_tables(cs, staging.shape[0] // cs[0]), kernel.shape, layout.itemsize, plan.swap,
                          plan.chain, kernel.fill, staging, status, ctx.kernel_threads(n, layout.inner_spec.nbytes),
                          plan.order, ctx.budget)
    inner = layout.inner

    def retry(j: int) -> None:  # several gzip members: the Python codecs decide
        k = int(rows[j])
        o = int(task_off[j])
        try:
            inner.decode_into(srcs[int(task_src[j])][o:o + int(task_len[j])], staging[k * cs[0]:(k + 1) * cs[0]])
        except CorruptChunkError as e:
            raise CorruptChunkError(f"{layout.chunk_name(int(linear[j]))}: {e}") from e

    _settle(layout, linear, status, task_len, retry)


def _staging_tables(cs: tuple[int, ...], m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Kernel tables writing whole inner chunk ``k`` to rows ``k * cs[0]:`` of a staging
    array of ``m`` chunks stacked along the first dimension."""
    ndim = len(cs)
    base = np.empty(ndim, np.int64)
    starts: list[np.ndarray] = []
    locs: list[np.ndarray] = []
    outs: list[np.ndarray] = []
    pos = nstart = 0
    for d, c in enumerate(cs):
        rows = m if d == 0 else 1
        base[d] = nstart
        starts.append(pos + np.arange(rows + 1, dtype=np.int64) * c)
        locs.append(np.tile(np.arange(c, dtype=np.int64), rows))
        outs.append(np.arange(rows * c, dtype=np.int64))
        pos += rows * c
        nstart += rows + 1
    return base, np.concatenate(starts), np.concatenate(locs), np.concatenate(outs)
