"""Assemble a box of an array from whole decoded chunks, without the GIL (issue 24.4).

A box read served by the decoded-chunk cache (``zarrcy.chunk_cache``) touches a few
whole chunks per dimension; per dimension ``d`` a chunk contributes the range
``[start, start + extent)`` of its own axis to ``[ostart, ostart + extent)`` of the
output.  The pieces of all dimensions combine row-major into the tasks: task ``k`` copies
from ``srcs[k]`` (a C-contiguous array of the chunk shape; None: the fill value).  One
call copies every task, row by row (``memcpy`` of the last dimension's extent), so a
box costs one Python call however many chunks it touches.

The wrapper checks every table entry against the chunk shape and the output shape, and
every source's size, before the loop runs (nothing from a file reaches this kernel: the
sources are decoded chunks, but the tables come from callers).
"""

from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from zarrcy._kernels._odometer cimport advance

cimport numpy as cnp
import numpy as np

cnp.import_array()

cdef enum:
    MAX_RANK = 64


cdef inline void _fill_row(uint8_t *row, Py_ssize_t n, const uint8_t *pattern, Py_ssize_t itemsize) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        memcpy(row + i * itemsize, pattern, itemsize)


def copy_box(srcs, const int64_t[:, ::1] pieces, const int64_t[::1] counts, const int64_t[::1] chunk_shape,
             cnp.ndarray out, const uint8_t[::1] fill):
    """Copy every task of the box into ``out`` (C-contiguous, writable, rank ``r`` =
    ``len(counts)`` = ``len(chunk_shape)`` >= 1).

    ``pieces``: ``sum(counts)`` rows ``(start, extent, ostart)``, dimension 0's
    ``counts[0]`` rows first; ``srcs``: ``prod(counts)`` entries in row-major order of the
    per-dimension rows, each None (write ``fill``, one element's bytes) or a C-contiguous
    array of ``prod(chunk_shape)`` elements of ``out``'s item size.
    """
    cdef Py_ssize_t r = counts.shape[0], d, k, ntask = 1, nrows = 0, itemsize = out.itemsize
    cdef Py_ssize_t t, max_row = 0, chunk_elems = 1
    cdef int64_t s, e, o
    if r < 1 or r > MAX_RANK:
        raise ValueError(f"counts: expected 1 to {MAX_RANK} dimensions, received {r}")
    if chunk_shape.shape[0] != r or cnp.PyArray_NDIM(out) != r:
        raise ValueError(f"chunk_shape / out: expected rank {r}, received {chunk_shape.shape[0]} / {out.ndim}")
    if not cnp.PyArray_IS_C_CONTIGUOUS(out) or not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("out: expected a C-contiguous writable array")
    if fill.shape[0] != itemsize:
        raise ValueError(f"fill: expected {itemsize} bytes, received {fill.shape[0]}")
    if pieces.shape[1] != 3:
        raise ValueError(f"pieces: expected rows of 3, received {pieces.shape[1]}")
    for d in range(r):
        if counts[d] < 1:
            raise ValueError(f"counts[{d}]: expected >= 1, received {counts[d]}")
        if chunk_shape[d] < 1:
            raise ValueError(f"chunk_shape[{d}]: expected >= 1, received {chunk_shape[d]}")
        ntask *= counts[d]
        chunk_elems *= chunk_shape[d]
        for k in range(nrows, nrows + counts[d]):
            if k >= pieces.shape[0]:
                raise ValueError(f"pieces: expected {nrows + counts[d]} or more rows, received {pieces.shape[0]}")
            s, e, o = pieces[k, 0], pieces[k, 1], pieces[k, 2]
            if s < 0 or e < 0 or o < 0 or s + e > chunk_shape[d] or o + e > out.shape[d]:
                raise ValueError(f"pieces[{k}] (dimension {d}): expected 0 <= start, start + extent <= "
                                 f"{chunk_shape[d]}, 0 <= ostart, ostart + extent <= {out.shape[d]}, "
                                 f"received {(s, e, o)}")
            if d == r - 1 and e > max_row:
                max_row = e
        nrows += counts[d]
    if pieces.shape[0] != nrows:
        raise ValueError(f"pieces: expected {nrows} rows, received {pieces.shape[0]}")
    srcs = tuple(srcs)  # the caller's list may change; these references live through the loop
    if len(srcs) != ntask:
        raise ValueError(f"srcs: expected {ntask} entries, received {len(srcs)}")
    cdef const uint8_t **ptr = <const uint8_t **>malloc(ntask * sizeof(uint8_t *))
    cdef uint8_t *fill_row = NULL
    if ptr == NULL:
        raise MemoryError()
    cdef cnp.ndarray a
    cdef bint any_fill = False
    try:
        for t in range(ntask):
            x = srcs[t]
            if x is None:
                ptr[t] = NULL
                any_fill = True
                continue
            if not isinstance(x, np.ndarray):
                raise TypeError(f"srcs[{t}]: expected a numpy array or None, received {type(x).__name__}")
            a = <cnp.ndarray>x
            if not cnp.PyArray_IS_C_CONTIGUOUS(a) or a.itemsize != itemsize or cnp.PyArray_SIZE(a) != chunk_elems:
                raise ValueError(f"srcs[{t}]: expected a C-contiguous array of {chunk_elems} elements of "
                                 f"{itemsize} bytes")
            ptr[t] = <const uint8_t *>cnp.PyArray_DATA(a)
        if any_fill:
            fill_row = <uint8_t *>malloc(max_row * itemsize if max_row else 1)
            if fill_row == NULL:
                raise MemoryError()
            _fill_row(fill_row, max_row, &fill[0], itemsize)
        with nogil:
            _copy_all(ptr, &pieces[0, 0], &counts[0], &chunk_shape[0], <uint8_t *>cnp.PyArray_DATA(out),
                      <const cnp.npy_intp *>cnp.PyArray_DIMS(out), r, ntask, itemsize, fill_row)
    finally:
        free(ptr)
        free(fill_row)


cdef void _copy_all(const uint8_t **ptr, const int64_t *pieces, const int64_t *counts, const int64_t *cshape,
                    uint8_t *out, const cnp.npy_intp *oshape, Py_ssize_t r, Py_ssize_t ntask,
                    Py_ssize_t itemsize, const uint8_t *fill_row) noexcept nogil:
    cdef Py_ssize_t first[MAX_RANK]   # the first row of each dimension in ``pieces``
    cdef int64_t task[MAX_RANK]       # the task's row per dimension (odometer)
    cdef int64_t pos[MAX_RANK]        # the position inside the task's sub-box (odometer)
    cdef int64_t cstride[MAX_RANK]
    cdef int64_t ostride[MAX_RANK]
    cdef int64_t ext[MAX_RANK]
    cdef Py_ssize_t d, t, row_bytes
    cdef int64_t soff, ooff, src_base, out_base
    cdef const int64_t *p
    cdef bint empty
    first[0] = 0
    for d in range(1, r):
        first[d] = first[d - 1] + counts[d - 1]
    cstride[r - 1] = itemsize
    ostride[r - 1] = itemsize
    for d in range(r - 2, -1, -1):
        cstride[d] = cstride[d + 1] * cshape[d + 1]
        ostride[d] = ostride[d + 1] * oshape[d + 1]
    for d in range(r):
        task[d] = 0
    for t in range(ntask):
        src_base = 0
        out_base = 0
        for d in range(r):
            p = pieces + 3 * (first[d] + task[d])
            src_base += p[0] * cstride[d]
            ext[d] = p[1]
            out_base += p[2] * ostride[d]
            pos[d] = 0
        row_bytes = ext[r - 1] * itemsize
        empty = False
        for d in range(r):
            if ext[d] == 0:
                empty = True
        while not empty:
            soff = src_base
            ooff = out_base
            for d in range(r - 1):
                soff += pos[d] * cstride[d]
                ooff += pos[d] * ostride[d]
            if ptr[t] == NULL:
                memcpy(out + ooff, fill_row, row_bytes)
            else:
                memcpy(out + ooff, ptr[t] + soff, row_bytes)
            if not advance(pos, ext, r - 1):  # next row of the sub-box (dimensions 0 .. r-2)
                break
        advance(task, counts, r)  # next task
