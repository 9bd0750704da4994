"""Partial reads through the C inner-chunk kernel (``zarrcy._kernels._inner_chunks``):
locate, decode (raw bytes or gzip via libdeflate) and scatter every touched inner chunk
of an orthogonal selection without the GIL -- Python runs once per coalesced buffer
and thread, not once per inner chunk (issue 13.3).

Applies when the inner codec chain is ``bytes`` in native order, optionally followed by
``gzip`` (``ShardLayout.kernel_kind``), for fixed-size data types; everything else uses
the Python path in :mod:`.reader`.  The kernel reports ``(task, code)``; a gzip code
that may only mean "several members" (valid gzip the kernel does not stitch) is retried
for that one inner chunk through the Python codec, which decides.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zarrcy._kernels import _inner_chunks as KI
from zarrcy.codecs.sharding._parallel import PARALLEL_MIN_BYTES, run
from zarrcy.config import get as _config_get
from zarrcy.errors import CorruptChunkError

__all__ = ["usable", "scatter_tables", "decode_tasks", "decode_point_tasks", "ENABLED"]

#: tests switch the kernel path off to compare it with the Python path
ENABLED = True

_RETRY_IN_PYTHON = (KI.GZIP_TOO_SHORT, KI.GZIP_TRAILING)


def usable(layout: Any) -> bool:
    """The kernel can decode this layout's inner chunks."""
    kind = layout.kernel_kind
    if not ENABLED or kind is None or layout.has_object:
        return False
    if kind == "gzip":
        from zarrcy._kernels import _deflate

        return bool(_deflate.available())
    return True


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


def decode_tasks(
    layout: Any, proj: Any, out: np.ndarray, bufs: list[Any], g_of_task: np.ndarray,
    off_in_group: np.ndarray, nbytes: np.ndarray, python_task: Callable[[int, np.ndarray], None],
) -> None:
    """Decode and scatter every task of ``proj`` into ``out`` (the selection's shape).

    ``g_of_task[t]``: coalesced buffer of task ``t`` (-1: inner chunk not stored, fill);
    ``off_in_group`` / ``nbytes``: its byte range in that buffer.  ``python_task(t, dest)``
    decodes one task into ``dest`` through the Python codec (retries of ambiguous gzip
    codes)."""
    ndim = len(layout.chunk_shape)
    kshape = [1] * ndim
    k = 0
    for d in range(ndim):
        if d not in proj.dropped:
            kshape[d] = proj.out_shape[k]
            k += 1
    direct = out.flags.c_contiguous and out.flags.writeable
    target = out.reshape(kshape) if direct else np.empty(kshape, out.dtype)
    dest = target.reshape(out.shape)  # a view: what the Python retries write into
    coords, dim_base, dim_start, dim_local, dim_out = scatter_tables(proj)
    cshape = np.asarray(layout.chunk_shape, np.int64)
    itemsize = layout.itemsize
    codec = KI.GZIP if layout.kernel_kind == "gzip" else KI.RAW
    fill = np.asarray(layout.fill, dtype=layout.spec.dtype).tobytes()
    order, task_off, task_len, work = _plan_work(layout, g_of_task, off_in_group, nbytes)
    coords = np.ascontiguousarray(coords[order])

    def call(t0: int, t1: int, src: Any, buf: np.ndarray) -> tuple[int, int]:
        return KI.decode_scatter(
            src, coords, task_off, task_len, t0, t1, dim_base, dim_start, dim_local, dim_out,
            cshape, itemsize, layout.kernel_swap, codec, fill, target, buf,
        )

    work = [(t0, t1, bufs[g] if g >= 0 else b"") for t0, t1, g in work]
    one = _driver(layout, proj.linear, order, task_len, work, call, lambda t: python_task(t, dest))
    run(len(work), one, len(work) > 1)
    if not direct:
        out[...] = dest


def _plan_work(
    layout: Any, g_of_task: np.ndarray, off_in_group: np.ndarray, nbytes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int, Any]]]:
    """Tasks sorted by source buffer (missing chunks form their own range), their byte
    ranges, and the work items ``(t0, t1, buffer index)``: each range split across the
    threads when it is worth it."""
    chunk_bytes = layout.inner_spec.nbytes
    order = np.argsort(g_of_task, kind="stable")
    g_sorted = g_of_task[order]
    task_off = np.where(g_sorted >= 0, off_in_group[order], 0).astype(np.int64)
    task_len = np.where(g_sorted >= 0, nbytes[order], -1).astype(np.int64)
    cuts = np.flatnonzero(g_sorted[1:] != g_sorted[:-1]) + 1
    bounds = np.r_[0, cuts, g_sorted.size].astype(np.int64).tolist()
    threads = max(1, int(_config_get("threads")))
    work: list[tuple[int, int, Any]] = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        if a == b:
            continue
        g = int(g_sorted[a])
        # small items (about PARALLEL_MIN_BYTES of decoded chunks each) claimed from one
        # counter balance the threads even when a helper thread starts late
        per = b - a if g < 0 or (b - a) * chunk_bytes < PARALLEL_MIN_BYTES or threads < 2 else \
            max(1, min(-(-(b - a) // threads), PARALLEL_MIN_BYTES // max(1, 2 * chunk_bytes)))
        for t0 in range(a, b, max(1, per)):
            work.append((t0, min(b, t0 + max(1, per)), g))
    return order, task_off, task_len, work


def _driver(
    layout: Any, linear: np.ndarray, order: np.ndarray, task_len: np.ndarray, work: list[tuple[int, int, Any]],
    call: Callable[[int, int, Any, np.ndarray], tuple[int, int]], retry: Callable[[int], None],
) -> Callable[[int], None]:
    """``one(w)``: run work item ``w`` through the kernel ``call``; an ambiguous gzip
    code is retried for that one task through the Python codec, then the kernel resumes."""
    from zarrcy.codecs.sharding._parallel import scratch as _scratch_chunk
    from zarrcy.codecs.sharding._parallel import decode_stats

    def one(w: int) -> None:
        t0, t1, src = work[w]
        buf = _scratch_chunk(layout.inner_spec).reshape(-1).view(np.uint8)
        while t0 < t1:
            bad, code = call(t0, t1, src, buf)
            done_to = t1 if bad == -1 else bad
            if decode_stats.enabled:
                decode_stats.add(int((task_len[t0:done_to] >= 0).sum()))
            if bad == -1:
                return
            if code not in _RETRY_IN_PYTHON:
                raise CorruptChunkError(f"{layout.chunk_name(int(linear[order[bad]]))}: {KI.describe(code)}")
            retry(int(order[bad]))  # the codec decides (raises when corrupt)
            t0 = bad + 1

    return one


def decode_point_tasks(
    layout: Any, out: np.ndarray, bufs: list[Any], linear: np.ndarray, g_of_task: np.ndarray,
    off_in_group: np.ndarray, nbytes: np.ndarray, groups: list[np.ndarray], local: np.ndarray,
    python_task: Callable[[int], None],
) -> None:
    """vindex: task ``j`` (inner chunk ``linear[j]``) provides the points ``groups[j]``
    (positions in the 1-d ``out``) at chunk coordinates ``local[:, groups[j]]``."""
    order, task_off, task_len, work = _plan_work(layout, g_of_task, off_in_group, nbytes)
    sizes = np.asarray([groups[j].size for j in order.tolist()], np.int64)
    pt_start = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    pt_out = np.concatenate([groups[j] for j in order.tolist()]).astype(np.int64)
    pt_local = np.ravel_multi_index(tuple(local[:, pt_out]), layout.chunk_shape).astype(np.int64) \
        if layout.chunk_shape else np.zeros(pt_out.size, np.int64)
    cshape = np.asarray(layout.chunk_shape, np.int64)
    codec = KI.GZIP if layout.kernel_kind == "gzip" else KI.RAW
    fill = np.asarray(layout.fill, dtype=layout.spec.dtype).tobytes()
    srcs = [bufs[g] if g >= 0 else b"" for _, _, g in work]
    work = [(t0, t1, src) for (t0, t1, _), src in zip(work, srcs)]

    def call(t0: int, t1: int, src: Any, buf: np.ndarray) -> tuple[int, int]:
        return KI.decode_points(src, task_off, task_len, t0, t1, pt_start, pt_local, pt_out, cshape,
                                layout.itemsize, layout.kernel_swap, codec, fill, out, buf)

    one = _driver(layout, linear, order, task_len, work, call, python_task)
    run(len(work), one, len(work) > 1)
