"""One plain (unsharded) chunk decoded straight into a strided view -- a chunk's region of
a larger output array, or through a ``transpose`` -- in one native call without the GIL
(issue 21): the per-inner-chunk kernel (``_kernels._inner_chunks``) with a single task
covering the whole chunk, so the engine decodes into the thread's scratch chunk and the
kernel scatters its rows into the view (no chunk-sized copy in Python, no numpy
transpose).  Used by :class:`~zarrcy.codecs.pipeline.CodecPipeline` when its chain has a
kernel plan (:class:`~zarrcy.codecs._native.KernelPlan`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zarrcy._kernels import _inner_chunks as KI
from zarrcy.codecs import _native
from zarrcy.codecs._common import as_uint8

__all__ = ["RegionDecoder", "writable_view"]


def writable_view(out: np.ndarray) -> bool:
    """The kernel writes this view directly: writable, non-negative strides, the last
    dimension contiguous, no empty dimension."""
    if not out.flags.writeable or out.ndim == 0 or 0 in out.shape or min(out.strides) < 0:
        return False
    return out.shape[-1] == 1 or out.strides[-1] == out.itemsize


class RegionDecoder:
    """The kernel's constant arguments for chunks of one shape (built once per pipeline)."""

    __slots__ = ("plan", "shape", "itemsize", "fill", "tables", "coords", "task_src", "task_off")

    def __init__(self, plan: _native.KernelPlan, shape: tuple[int, ...], dtype: np.dtype) -> None:
        ndim = len(shape)
        self.plan = plan
        self.shape = np.asarray(shape, np.int64)
        self.itemsize = dtype.itemsize
        self.fill = bytes(dtype.itemsize)  # unused: the one task is always stored
        # one table row per dimension: every index of the chunk, to the same index of out
        base = np.arange(0, 2 * ndim, 2, dtype=np.int64)
        ends = np.cumsum(np.asarray(shape, np.int64))
        start = np.empty(2 * ndim, np.int64)
        start[0::2] = ends - np.asarray(shape, np.int64)
        start[1::2] = ends
        local = np.concatenate([np.arange(n, dtype=np.int64) for n in shape])
        self.tables = (base, start, local, local)
        self.coords = np.zeros((1, ndim), np.int64)
        self.task_src = np.zeros(1, np.int64)
        self.task_off = np.zeros(1, np.int64)

    def decode_into(self, data: Any, out: np.ndarray) -> bool:
        """Decode ``data`` into the view ``out`` (``writable_view``); False when the
        stream may only be valid for the Python codecs (several gzip members), so the
        caller decodes it that way; CorruptChunkError / MemoryError otherwise."""
        src = as_uint8(data)
        status = np.empty(1, np.uint8)
        plan = self.plan
        KI.decode_scatter_all([src], self.task_src, self.coords, self.task_off, np.array([src.shape[0]], np.int64),
                              *self.tables, self.shape, self.itemsize, plan.swap, plan.chain, self.fill, out, status,
                              1, plan.order)
        code = int(status[0])
        if code == 0:
            return True
        if code in _native.RETRY_IN_PYTHON:
            return False
        _native.fail(code)
