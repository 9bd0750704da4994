"""Rectilinear chunk grid arithmetic (ext-chunk-grid-rectilinear.md "Indexing").

One axis of a rectilinear grid is a list of *runs*: run ``r`` holds ``count[r]`` chunks of
edge length ``edge[r]``.  The caller passes three int64 tables per axis, built once from
the metadata and validated there (edges >= 1, counts >= 1, every origin fits int64):

* ``origin[r]``       array index of the first element of run ``r`` (strictly increasing,
                      ``origin[0] == 0``);
* ``first_chunk[r]``  chunk index of the first chunk of run ``r`` (strictly increasing);
* ``edge[r]``         the edge length of every chunk of run ``r``.

A run-length encoded description therefore stays its own size: a repeat of 2**40 is one
run, never 2**40 entries.  Looking up the chunk that holds index ``i`` is a binary search
over ``origin`` (the spec's "first element of the cumulative sums that exceeds ``i``")
and one division inside the run: O(log runs).  The last run may be unbounded (the
integer form of ``chunk_shapes``): sums are saturated at INT64_MAX, never wrapped.

Projections return the same arrays as ``_grid.slice_projection`` /
``_grid.array_projection`` so the selection engine treats both grids alike; their size
is the number of chunks the selection touches, never the span it covers.
"""

from libc.stdint cimport int64_t

import numpy as np

cdef extern from "zc_rectilinear.h":
    int zarrcy_add_sat(long long a, long long b, long long *r) noexcept nogil
    int zarrcy_mul_sat(long long a, long long b, long long *r) noexcept nogil


cdef inline int64_t _add(int64_t a, int64_t b) noexcept nogil:
    cdef long long r
    zarrcy_add_sat(a, b, &r)
    return r


cdef inline int64_t _mul(int64_t a, int64_t b) noexcept nogil:
    cdef long long r
    zarrcy_mul_sat(a, b, &r)
    return r


cdef inline Py_ssize_t _last_le(const int64_t* a, Py_ssize_t n, int64_t v) noexcept nogil:
    """Largest r with a[r] <= v (a strictly increasing, a[0] <= v)."""
    cdef Py_ssize_t lo = 0, hi = n - 1, mid
    while lo < hi:
        mid = hi - (hi - lo) // 2
        if a[mid] <= v:
            lo = mid
        else:
            hi = mid - 1
    return lo


cdef inline int64_t _chunk_of(const int64_t* origin, const int64_t* first_chunk, const int64_t* edge,
                              Py_ssize_t n, int64_t i, int64_t* chunk_origin) noexcept nogil:
    """The chunk holding array index ``i`` (>= 0); its origin goes to ``chunk_origin``."""
    cdef Py_ssize_t r = _last_le(origin, n, i)
    cdef int64_t q = (i - origin[r]) // edge[r]
    chunk_origin[0] = origin[r] + q * edge[r]  # <= i: cannot overflow
    return first_chunk[r] + q


cdef inline int64_t _origin_of(const int64_t* origin, const int64_t* first_chunk, const int64_t* edge,
                               Py_ssize_t n, int64_t c, int64_t* length) noexcept nogil:
    """Origin of chunk ``c`` (>= 0); its edge length goes to ``length``.  Saturates."""
    cdef Py_ssize_t r = _last_le(first_chunk, n, c)
    length[0] = edge[r]
    return _add(origin[r], _mul(c - first_chunk[r], edge[r]))


cdef _check_tables(const int64_t[::1] origin, const int64_t[::1] first_chunk, const int64_t[::1] edge):
    cdef Py_ssize_t n = origin.shape[0], r
    if n == 0 or first_chunk.shape[0] != n or edge.shape[0] != n:
        raise ValueError("rectilinear tables: expected three non-empty arrays of one length")
    if origin[0] != 0 or first_chunk[0] != 0:
        raise ValueError("rectilinear tables: expected origin[0] == first_chunk[0] == 0")
    for r in range(n):
        if edge[r] < 1:
            raise ValueError(f"rectilinear tables: edge[{r}] must be >= 1, received {edge[r]}")
        if r and (origin[r] <= origin[r - 1] or first_chunk[r] <= first_chunk[r - 1]):
            raise ValueError(f"rectilinear tables: origin/first_chunk must increase strictly at run {r}")


def locate(const int64_t[::1] origin, const int64_t[::1] first_chunk, const int64_t[::1] edge,
           const int64_t[::1] idx):
    """For non-negative indices ``idx``: ``(chunk, in_chunk)`` int64 arrays."""
    _check_tables(origin, first_chunk, edge)
    cdef Py_ssize_t n = origin.shape[0], m = idx.shape[0], j
    for j in range(m):
        if idx[j] < 0:
            raise IndexError(f"locate: index {idx[j]} is negative")
    chunk_a = np.empty(m, dtype=np.int64)
    local_a = np.empty(m, dtype=np.int64)
    cdef int64_t[::1] chunk = chunk_a, local = local_a
    cdef int64_t co
    with nogil:
        for j in range(m):
            chunk[j] = _chunk_of(&origin[0], &first_chunk[0], &edge[0], n, idx[j], &co)
            local[j] = idx[j] - co
    return chunk_a, local_a


def chunk_extents(const int64_t[::1] origin, const int64_t[::1] first_chunk, const int64_t[::1] edge,
                  const int64_t[::1] chunks):
    """For non-negative chunk indices: ``(start, length)`` int64 arrays (unclipped)."""
    _check_tables(origin, first_chunk, edge)
    cdef Py_ssize_t n = origin.shape[0], m = chunks.shape[0], j
    for j in range(m):
        if chunks[j] < 0:
            raise IndexError(f"chunk_extents: chunk index {chunks[j]} is negative")
    start_a = np.empty(m, dtype=np.int64)
    length_a = np.empty(m, dtype=np.int64)
    cdef int64_t[::1] start = start_a, length = length_a
    cdef int64_t ln
    with nogil:
        for j in range(m):
            start[j] = _origin_of(&origin[0], &first_chunk[0], &edge[0], n, chunks[j], &ln)
            length[j] = ln
    return start_a, length_a


def slice_projection(const int64_t[::1] origin, const int64_t[::1] first_chunk, const int64_t[::1] edge,
                     int64_t start, int64_t stop, int64_t step):
    """Project ``range(start, stop, step)`` (clipped to the array: 0 <= start, stop <= the
    array length; step >= 1) onto the chunks of one axis.

    Returns ``(chunk, c_start, c_stop, o_start, o_stop)`` like ``_grid.slice_projection``:
    per touched chunk the in-chunk slice ``c_start:c_stop:step`` (``c_stop`` tight) and
    the output slice ``o_start:o_stop``.  Arrays hold only the touched chunks.
    """
    _check_tables(origin, first_chunk, edge)
    if start < 0 or step < 1:
        raise ValueError(f"slice_projection: expected start >= 0 and step >= 1, received {start}, {step}")
    cdef Py_ssize_t n = origin.shape[0]
    cdef int64_t n_sel = 0
    if stop > start:
        n_sel = (stop - start - 1) // step + 1  # no overflow: stop - start > 0
    if n_sel == 0:
        e = np.empty(0, dtype=np.int64)
        return e, e, e, e, e
    cdef int64_t last = start + (n_sel - 1) * step  # <= stop - 1
    cdef int64_t co0, co1
    cdef int64_t c_first = _chunk_of(&origin[0], &first_chunk[0], &edge[0], n, start, &co0)
    cdef int64_t c_last = _chunk_of(&origin[0], &first_chunk[0], &edge[0], n, last, &co1)
    # touched chunks: at most one per selected element, at most every chunk in the span
    cdef int64_t cap = c_last - c_first + 1
    if n_sel < cap:
        cap = n_sel
    chunk_a = np.empty(cap, dtype=np.int64)
    cs_a = np.empty(cap, dtype=np.int64)
    ce_a = np.empty(cap, dtype=np.int64)
    os_a = np.empty(cap, dtype=np.int64)
    oe_a = np.empty(cap, dtype=np.int64)
    cdef int64_t[::1] chunk = chunk_a, cs = cs_a, ce = ce_a, os_ = os_a, oe = oe_a
    cdef int64_t k = 0, k1, i, c, co, cend, ln
    cdef Py_ssize_t m = 0
    with nogil:
        while k < n_sel and m < cap:
            i = start + k * step  # <= last: no overflow
            c = _chunk_of(&origin[0], &first_chunk[0], &edge[0], n, i, &co)
            _origin_of(&origin[0], &first_chunk[0], &edge[0], n, c, &ln)
            cend = _add(co, ln)  # exclusive end, saturated
            # last selected position inside this chunk: start + k1 * step < cend
            if cend > last:
                k1 = n_sel - 1
            else:
                k1 = (cend - 1 - start) // step
            chunk[m] = c
            cs[m] = i - co
            ce[m] = start + k1 * step - co + 1
            os_[m] = k
            oe[m] = k1 + 1
            m += 1
            k = k1 + 1
    return chunk_a[:m], cs_a[:m], ce_a[:m], os_a[:m], oe_a[:m]


def array_projection(const int64_t[::1] origin, const int64_t[::1] first_chunk, const int64_t[::1] edge,
                     const int64_t[::1] idx):
    """Project integer indices (non-negative, in bounds) onto the chunks of one axis.

    Returns ``(chunk, bounds, in_chunk, order)`` like ``_grid.array_projection``: chunk
    ``chunk[j]`` receives ``in_chunk[bounds[j]:bounds[j+1]]`` whose output positions are
    ``order[bounds[j]:bounds[j+1]]`` (stable order within a chunk).
    """
    _check_tables(origin, first_chunk, edge)
    cdef Py_ssize_t n = origin.shape[0], m = idx.shape[0], j
    for j in range(m):
        if idx[j] < 0:
            raise IndexError(f"array_projection: index {idx[j]} is negative")
    cdef bint monotonic = True
    with nogil:
        for j in range(1, m):
            if idx[j] < idx[j - 1]:
                monotonic = False
                break
    if monotonic:
        order_a = np.arange(m, dtype=np.int64)
    else:
        order_a = np.argsort(np.asarray(idx), kind="stable").astype(np.int64, copy=False)
    cdef const int64_t[::1] order = order_a
    in_chunk_a = np.empty(m, dtype=np.int64)
    chunk_a = np.empty(m, dtype=np.int64)
    bounds_a = np.empty(m + 1, dtype=np.int64)
    cdef int64_t[::1] in_chunk = in_chunk_a, chunks = chunk_a, bounds = bounds_a
    cdef Py_ssize_t nc = 0
    cdef int64_t v, c, co = 0, cend = 0, ln, prev = -1
    with nogil:
        for j in range(m):
            v = idx[order[j]]
            if prev < 0 or v < co or v >= cend:  # a new chunk (sorted input: moves forward)
                c = _chunk_of(&origin[0], &first_chunk[0], &edge[0], n, v, &co)
                _origin_of(&origin[0], &first_chunk[0], &edge[0], n, c, &ln)
                cend = _add(co, ln)
                if c != prev:
                    chunks[nc] = c
                    bounds[nc] = j
                    nc += 1
                    prev = c
            in_chunk[j] = v - co
        bounds[nc] = m
    return chunk_a[:nc], bounds_a[:nc + 1], in_chunk_a, order_a
