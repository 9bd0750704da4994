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
from zarrcy.errors import CorruptChunkError
from zarrcy.execution import ExecContext

__all__ = ["usable", "writes_strided", "scatter_tables", "decode_tasks", "decode_point_tasks", "decode_element",
           "ENABLED"]

#: tests switch the kernel path off to compare it with the Python path
ENABLED = True

_RETRY_IN_PYTHON = (KI.GZIP_TOO_SHORT, KI.GZIP_TRAILING)


def usable(layout: Any) -> bool:
    """The kernel can decode this layout's inner chunks."""
    return ENABLED and layout.kernel is not None


def scatter_tables(proj: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The projection as the kernel's CSR tables: ``(task_coords, dim_base, dim_start,
    dim_local, dim_out)`` -- for each dimension and touched inner chunk (row), the
    chunk-local indices and the output indices they go to (an int selection is one
    pair into an output axis of length 1).  Size: the selected indices per dimension."""
    starts: list[np.ndarray] = []
    locs: list[np.ndarray] = []
    outs: list[np.ndarray] = []
    base = []
    pos = 0  # entries of dim_local so far
    nstart = 0  # entries of dim_start so far
    for csel_d, osel_d in zip(proj.csel, proj.osel):
        base.append(nstart)
        row_start = [pos]
        for cs, os_ in zip(csel_d, osel_d):
            if isinstance(cs, slice):
                loc = np.arange(cs.start, cs.stop, cs.step, dtype=np.int64)
                out = np.arange(os_.start, os_.stop, dtype=np.int64)
            elif isinstance(cs, np.ndarray):
                loc = np.asarray(cs, np.int64)
                out = np.asarray(os_, np.int64)
            else:  # an int: one cell, on an output axis of length 1
                loc = np.array([cs], np.int64)
                out = np.zeros(1, np.int64)
            locs.append(loc)
            outs.append(out)
            pos += loc.size
            row_start.append(pos)
        starts.append(np.asarray(row_start, np.int64))
        nstart += len(row_start)
    counts = proj.counts
    if counts:
        coords = np.stack(np.unravel_index(np.arange(proj.m, dtype=np.int64), counts), axis=1).astype(np.int64)
    else:
        coords = np.zeros((1, 0), np.int64)
    cat = np.concatenate
    empty = np.empty(0, np.int64)
    return (
        np.ascontiguousarray(coords),
        np.asarray(base, np.int64),
        cat(starts) if starts else empty,
        cat(locs) if locs else empty,
        cat(outs) if outs else empty,
    )


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
        return proj, scatter_tables(proj)

    return layout.kernel.whole(build)


def decode_tasks(
    ctx: ExecContext, layout: Any, proj: Any, out: np.ndarray, bufs: list[Any], task_src: np.ndarray,
    task_off: np.ndarray, task_len: np.ndarray, python_task: Callable[[int, np.ndarray], None],
    tables: tuple[np.ndarray, ...] | None = None,
) -> None:
    """Decode and scatter every task of ``proj`` into ``out`` (the selection's shape).

    ``task_src[t]``: buffer of task ``t`` (-1: inner chunk not stored, fill; then
    ``task_len[t] == -1``); ``task_off`` / ``task_len``: its byte range in that buffer
    (:func:`.reader.plan_and_fetch`).  One kernel call runs every task on the threads
    ``ctx`` allows (the native pool of ``_workers``, within the call's budget);
    ``python_task(t, dest)`` decodes one task into ``dest`` through the Python codec
    (retries of ambiguous gzip codes)."""
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
    coords, dim_base, dim_start, dim_local, dim_out = scatter_tables(proj) if tables is None else tables
    status = np.empty(task_src.size, np.uint8)
    kernel = layout.kernel
    plan = kernel.plan
    KI.decode_scatter_all(
        bufs, task_src, coords, task_off, task_len, dim_base, dim_start, dim_local, dim_out,
        kernel.shape, layout.itemsize, plan.swap, plan.chain, kernel.fill, target,
        status, ctx.kernel_threads(task_src.size, layout.inner_spec.nbytes), plan.order, ctx.budget,
    )
    _settle(layout, proj.linear, status, task_len, lambda t: python_task(t, dest))
    if not direct:
        out[...] = dest


def decode_point_tasks(
    ctx: ExecContext, layout: Any, out: np.ndarray, bufs: list[Any], linear: np.ndarray, task_src: np.ndarray,
    task_off: np.ndarray, task_len: np.ndarray, groups: list[np.ndarray], local: np.ndarray,
    python_task: Callable[[int], None],
) -> None:
    """vindex: task ``j`` (inner chunk ``linear[j]``) provides the points ``groups[j]``
    (positions in the 1-d ``out``) at chunk coordinates ``local[:, groups[j]]``."""
    sizes = np.fromiter((g.size for g in groups), np.int64, len(groups))
    pt_start = np.zeros(len(groups) + 1, np.int64)
    np.cumsum(sizes, out=pt_start[1:])
    pt_out = np.concatenate(groups).astype(np.int64) if groups else np.empty(0, np.int64)
    kernel = layout.kernel
    plan = kernel.plan
    if not layout.chunk_shape:
        pt_local = np.zeros(pt_out.size, np.int64)
    elif plan.order is None:
        pt_local = np.ravel_multi_index(tuple(local[:, pt_out]), layout.chunk_shape).astype(np.int64)
    else:  # flat indices of the stored (transposed) array
        order = plan.order
        pt_local = np.ravel_multi_index(tuple(local[list(order)][:, pt_out]),
                                        tuple(layout.chunk_shape[o] for o in order)).astype(np.int64)
    status = np.empty(task_src.size, np.uint8)
    KI.decode_points_all(
        bufs, task_src, task_off, task_len, pt_start, pt_local, pt_out, kernel.shape, layout.itemsize,
        plan.swap, plan.chain, kernel.fill, out, status, ctx.kernel_threads(task_src.size, layout.inner_spec.nbytes),
        ctx.budget,
    )
    _settle(layout, linear, status, task_len, python_task)


def decode_element(layout: Any, raw: Any, rel: tuple[int, ...]) -> Any:
    """The element at in-chunk coordinates ``rel`` of one stored inner chunk ``raw``:
    zstd frames without a checksum decoded only up to it, blosc only its block."""
    plan = layout.kernel.plan
    cs = layout.chunk_shape
    if not cs:
        flat = 0
    elif plan.order is None:
        flat = int(np.ravel_multi_index(rel, cs))
    else:  # the stored array is transposed
        flat = int(np.ravel_multi_index(tuple(rel[o] for o in plan.order), tuple(cs[o] for o in plan.order)))
    isz = layout.itemsize
    buf = scratch(layout.inner_spec).reshape(-1).view(np.uint8)
    _native.decode_range_into(plan.chain, raw, buf, flat * isz, (flat + 1) * isz)
    dt = layout.spec.dtype
    stored = dt.newbyteorder() if plan.swap else dt
    return np.frombuffer(buf[flat * isz:(flat + 1) * isz].tobytes(), dtype=stored).astype(dt)[0]
