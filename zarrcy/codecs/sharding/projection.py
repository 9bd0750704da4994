"""Projection of a chunk's selection onto a shard's inner-chunk grid (DESIGN.md "Read",
step 4): per dimension, the touched inner chunks with their chunk-local and output
selections, from the same ``_grid`` kernels the array layer uses (Python lists when few
chunks are touched).  Work and memory follow the inner chunks touched, never the span."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zarrcy._kernels import _grid
from zarrcy.codecs._base import Selection
from zarrcy.codecs.sharding.format import ShardLayout

__all__ = ["Projection", "BoxProjection", "project", "whole_projection"]


# ------------------------------------------------------------------------------------
# projection of a chunk selection onto the inner chunks
# ------------------------------------------------------------------------------------


class Projection:
    """``selection`` of a shard projected onto its inner-chunk grid, per dimension.

    For dimension ``d``: ``chunks[d]`` (touched inner-chunk indices along ``d``), and
    for each of them the chunk-local selection ``csel[d][j]`` (int, slice with the
    selection's step, or int64 array), the output selection ``osel[d][j]`` (slice or
    int64 array of output positions; None for an int, which drops the axis) and
    ``full[d][j]`` (it covers the inner chunk exactly, in order).  Work and memory are
    proportional to the inner chunks touched per dimension (never to a span).  Task
    ``k`` (C order over the product of the touched lists) is inner chunk
    ``linear[k]``."""

    __slots__ = ("out_shape", "chunks", "csel", "osel", "full", "counts", "m", "linear", "n_arrays", "dropped")

    def __init__(self, selection: Selection, layout: ShardLayout) -> None:
        shape = layout.spec.shape
        if len(selection) != len(shape):
            raise ValueError(
                f"selection: expected {len(shape)} entries (one per dimension), received {len(selection)}"
            )
        self.chunks: list[Any] = []
        self.csel: list[list[Any]] = []
        self.osel: list[list[Any]] = []
        self.full: list[Any] = []
        out_shape: list[int] = []
        n_arrays = 0
        dropped = []
        for d, (sel, size, c) in enumerate(zip(selection, shape, layout.chunk_shape)):
            if isinstance(sel, slice):
                start, stop, step = sel.indices(size)
                if step <= 0:
                    raise ValueError(f"selection[{d}]: expected a positive step, received {sel!r}")
                stop = max(start, stop)
                if step >= stop - start:  # at most one element: no step arithmetic near 2^63
                    stop, step = min(stop, start + 1), 1
                n_sel = len(range(start, stop, step))
                out_shape.append(n_sel)
                runs = slice_runs(c, start, n_sel, step)
                self.chunks.append(runs[0])
                self.csel.append([slice(a, b, step) for a, b in zip(runs[1], runs[2])])
                self.osel.append([slice(a, b) for a, b in zip(runs[3], runs[4])])
                self.full.append([step == 1 and a == 0 and b == c for a, b in zip(runs[1], runs[2])])
            elif isinstance(sel, np.ndarray):
                idx = np.ascontiguousarray(sel, dtype=np.int64)
                if idx.ndim != 1:
                    raise ValueError(f"selection[{d}]: expected a 1-d integer array, received {idx.ndim}-d")
                if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
                    raise ValueError(f"selection[{d}]: indices must lie in [0, {size})")
                n_arrays += 1
                out_shape.append(idx.size)
                ch, bounds, in_chunk, order = _grid.array_projection(idx, c)
                bl = bounds.tolist()
                csel = [in_chunk[bl[j]:bl[j + 1]] for j in range(ch.size)]
                self.chunks.append(ch.tolist())
                self.csel.append(csel)
                self.osel.append([order[bl[j]:bl[j + 1]] for j in range(ch.size)])
                ar = np.arange(c)
                self.full.append([x.size == c and bool((x == ar).all()) for x in csel])
            else:
                i = int(sel)
                if not 0 <= i < size:
                    raise ValueError(f"selection[{d}]: index {i} outside [0, {size})")
                dropped.append(d)
                q = i // c
                self.chunks.append([q])
                self.csel.append([i - q * c])
                self.osel.append([None])
                self.full.append([c == 1])
        self.out_shape = tuple(out_shape)
        self.n_arrays = n_arrays
        self.dropped = tuple(dropped)
        self.counts = tuple(len(ch) for ch in self.chunks)
        self.m = math.prod(self.counts)
        # linear inner-chunk index of each task, C order over the touched product
        strides = []
        stride = 1
        for g in reversed(layout.cps):
            strides.append(stride)
            stride *= g
        strides.reverse()
        if self.m <= 64:
            lin_l = [0]
            for ch, st in zip(self.chunks, strides):
                lin_l = [x + q * st for x in lin_l for q in ch]
            self.linear = np.asarray(lin_l, np.int64)
        else:
            lin = np.zeros(self.counts, np.int64) if self.counts else np.zeros((), np.int64)
            for d, (ch, st) in enumerate(zip(self.chunks, strides)):
                view = [1] * len(shape)
                view[d] = self.counts[d]
                lin = lin + (np.asarray(ch, np.int64) * st).reshape(view)
            self.linear = np.ascontiguousarray(lin).reshape(-1)

    def task(self, k: int) -> tuple[tuple[Any, ...], tuple[Any, ...], bool]:
        """(chunk-local selection, output selection, fully covered) of task ``k``."""
        js = []
        for cnt in reversed(self.counts):
            k, j = divmod(k, cnt)
            js.append(j)
        js.reverse()
        csel = tuple(self.csel[d][j] for d, j in enumerate(js))
        osel = tuple(self.osel[d][j] for d, j in enumerate(js) if self.osel[d][j] is not None)
        full = all(self.full[d][j] for d, j in enumerate(js))
        return csel, osel, full

    def full_tasks(self) -> np.ndarray:
        """Per task: the selection covers the inner chunk exactly (bool array, C order)."""
        f = np.ones(self.counts, bool) if self.counts else np.ones((), bool)
        for d, fd in enumerate(self.full):
            view = [1] * len(self.counts)
            view[d] = len(fd)
            f = f & np.asarray(fd, bool).reshape(view)
        return np.ascontiguousarray(f).reshape(-1)

    def covers_all(self, k_full: bool, osel: tuple[Any, ...]) -> bool:
        """Task is a whole inner chunk landing on a plain (sliced) region of the output."""
        return k_full and not self.dropped and all(isinstance(s, slice) for s in osel)

    def kernel_tables(self) -> KernelTables:
        """The projection as the inner-chunk kernel's CSR tables: ``(task_coords, dim_base,
        dim_start, dim_local, dim_out)`` -- for each dimension and touched inner chunk
        (row), the chunk-local indices and the output indices they go to (an int
        selection is one pair into an output axis of length 1).  Size: the selected
        indices per dimension."""
        starts: list[np.ndarray] = []
        locs: list[np.ndarray] = []
        outs: list[np.ndarray] = []
        base = []
        pos = 0  # entries of dim_local so far
        nstart = 0  # entries of dim_start so far
        for csel_d, osel_d in zip(self.csel, self.osel):
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
        counts = self.counts
        if counts:
            coords = np.stack(np.unravel_index(np.arange(self.m, dtype=np.int64), counts), axis=1).astype(np.int64)
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


#: the inner-chunk kernel's tables of a projection (:meth:`Projection.kernel_tables`)
KernelTables = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class BoxProjection:
    """A box selection of a shard (slices and ints; no index arrays) projected for the
    inner-chunk kernel: task order, inner chunks and kernel tables from one
    ``_grid.box_tables`` call, without the per-dimension Python lists of
    :class:`Projection` (a partial read's latency path).  The few users of per-task
    selections (the Python retries of ambiguous gzip codes) get them from a
    :class:`Projection` built on first use."""

    __slots__ = ("selection", "layout", "out_shape", "dropped", "linear", "m", "_tables", "_full")

    def __init__(self, selection: Selection, layout: ShardLayout, starts: list[int], n_sels: list[int],
                 steps: list[int], ints: list[bool]) -> None:
        self.selection = selection
        self.layout = layout
        self.out_shape = tuple(n for n, i in zip(n_sels, ints) if not i)
        self.dropped = tuple(d for d, i in enumerate(ints) if i)
        linear, *tables = _grid.box_tables(starts, n_sels, steps, ints, layout.chunk_shape, layout.cps)
        self.linear = linear
        self.m = int(linear.size)
        self._tables: KernelTables = tuple(tables)  # type: ignore[assignment]
        self._full: Projection | None = None

    def kernel_tables(self) -> KernelTables:
        return self._tables

    def full(self) -> Projection:
        if self._full is None:
            self._full = Projection(self.selection, self.layout)
        return self._full

    def task(self, k: int) -> tuple[tuple[Any, ...], tuple[Any, ...], bool]:
        return self.full().task(k)

    def covers_all(self, k_full: bool, osel: tuple[Any, ...]) -> bool:
        return self.full().covers_all(k_full, osel)


def project(selection: Selection, layout: ShardLayout, box: bool = False) -> Projection | BoxProjection:
    """``selection``'s projection; with ``box`` (the kernel reads the layout) a
    :class:`BoxProjection` when the selection is slices and ints selecting something.
    Bad selections raise as :class:`Projection` does."""
    shape = layout.spec.shape
    if not box or len(selection) != len(shape):
        return Projection(selection, layout)
    starts, n_sels, steps, ints = [], [], [], []
    for sel, size in zip(selection, shape):
        if type(sel) is slice:
            start, stop, step = sel.indices(size)
            if step <= 0 or stop <= start:
                return Projection(selection, layout)  # refused or empty there
            n = (stop - start - 1) // step + 1
            starts.append(start)
            n_sels.append(n)
            steps.append(step if n > 1 else 1)
            ints.append(False)
        elif isinstance(sel, np.ndarray):
            return Projection(selection, layout)
        else:
            i = int(sel)
            if not 0 <= i < size:
                return Projection(selection, layout)  # refused there
            starts.append(i)
            n_sels.append(1)
            steps.append(1)
            ints.append(True)
    return BoxProjection(selection, layout, starts, n_sels, steps, ints)


def slice_runs(c: int, start: int, n_sel: int, step: int) -> tuple[list[int], ...]:
    """``range(start, start + n_sel * step, step)`` split at multiples of ``c``: lists of
    (chunk, in-chunk start, in-chunk stop, out start, out stop).  Few touched chunks: in
    Python (no array round trips); many: the ``_grid`` kernel the array layer uses."""
    if n_sel == 0:
        return [], [], [], [], []
    first = start // c
    last = (start + (n_sel - 1) * step) // c
    if last - first >= 64:
        ch, cs, ce, os_, oe = _grid.slice_projection(c, start, start + (n_sel - 1) * step + 1, step)
        return ch.tolist(), cs.tolist(), ce.tolist(), os_.tolist(), oe.tolist()
    chs: list[int] = []
    css: list[int] = []
    ces: list[int] = []
    oss: list[int] = []
    oes: list[int] = []
    q = first
    while q <= last:
        c0 = q * c
        c1 = c0 + c
        k0 = 0 if c0 <= start else -(-(c0 - start) // step)
        if k0 >= n_sel:
            break
        fi = start + k0 * step
        if fi >= c1:  # a step longer than a chunk: go to the chunk holding the next index
            q = fi // c
            continue
        k1 = min((c1 - 1 - start) // step, n_sel - 1)
        chs.append(q)
        css.append(fi - c0)
        ces.append(start + k1 * step - c0 + 1)
        oss.append(k0)
        oes.append(k1 + 1)
        q += 1
    return chs, css, ces, oss, oes


def whole_projection(layout: ShardLayout) -> Projection:
    """The projection of the whole shard (cached on nothing: O(inner chunks) to build)."""
    return Projection(tuple(slice(0, s, 1) for s in layout.spec.shape), layout)
