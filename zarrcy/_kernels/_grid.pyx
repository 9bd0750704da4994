"""Regular-grid index arithmetic (v3-chunk-grid-regular.rst) and per-dimension
selection projections (DESIGN.md "Read a[sel]" step 1).

Everything here works on one dimension at a time (or elementwise over dimensions);
the Python layer takes the product.  No Python objects are touched inside loops.
"""

from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcmp

import numpy as np

cimport numpy as cnp

cnp.import_array()

cdef extern from *:
    int ZARRCY_DEBUG  # set by setup.py: 1 in a ZARRCY_CYTHON_DEBUG=1 (checked) build


def debug_build():
    """True if the kernels were built with bounds/wraparound checks (ZARRCY_CYTHON_DEBUG=1)."""
    return bool(ZARRCY_DEBUG)


def grid_shape(const int64_t[::1] array_shape, const int64_t[::1] chunk_shape):
    """ceil(array_shape / chunk_shape) per dimension (chunk_shape > 0 checked by caller)."""
    cdef Py_ssize_t n = array_shape.shape[0], i
    if chunk_shape.shape[0] != n:
        raise ValueError("grid_shape: rank mismatch")
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for i in range(n):
            o[i] = (array_shape[i] + chunk_shape[i] - 1) // chunk_shape[i]
    return out


cdef inline int64_t _cdiv(int64_t a, int64_t b) noexcept nogil:
    # ceil(a / b) for a >= 0, b > 0
    return (a + b - 1) // b


def slice_projection(int64_t chunk_len, int64_t start, int64_t stop, int64_t step):
    """Project ``range(start, stop, step)`` (already clipped, step > 0) onto chunks.

    Returns int64 arrays ``(chunk, c_start, c_stop, o_start, o_stop)``: for each chunk
    touched, the in-chunk slice ``c_start:c_stop:step`` and the output slice
    ``o_start:o_stop`` (step 1).  ``c_stop`` is exclusive and tight (last index + 1).
    """
    cdef int64_t n_sel = 0 if stop <= start else _cdiv(stop - start, step)
    if n_sel == 0:
        e = np.empty(0, dtype=np.int64)
        return e, e, e, e, e
    cdef int64_t last = start + (n_sel - 1) * step
    cdef int64_t first_chunk = start // chunk_len, last_chunk = last // chunk_len
    cdef Py_ssize_t nchunks_max = <Py_ssize_t>(last_chunk - first_chunk + 1)
    chunk_a = np.empty(nchunks_max, dtype=np.int64)
    cs_a = np.empty(nchunks_max, dtype=np.int64)
    ce_a = np.empty(nchunks_max, dtype=np.int64)
    os_a = np.empty(nchunks_max, dtype=np.int64)
    oe_a = np.empty(nchunks_max, dtype=np.int64)
    cdef int64_t[::1] chunk = chunk_a, cs = cs_a, ce = ce_a, os_ = os_a, oe = oe_a
    cdef int64_t c, c0, c1, k0, k1, first_idx, last_idx
    cdef Py_ssize_t m = 0
    with nogil:
        c = first_chunk
        while c <= last_chunk:
            c0 = c * chunk_len
            c1 = c0 + chunk_len  # exclusive
            # first selected index >= c0: k0 = ceil((c0 - start) / step), clipped at 0
            if c0 <= start:
                k0 = 0
            else:
                k0 = _cdiv(c0 - start, step)
            first_idx = start + k0 * step
            if first_idx >= c1 or k0 >= n_sel:
                # step larger than chunk: skip ahead to the chunk holding first_idx
                if k0 >= n_sel:
                    break
                c = first_idx // chunk_len
                continue
            # last selected index < c1
            k1 = (c1 - 1 - start) // step
            if k1 > n_sel - 1:
                k1 = n_sel - 1
            last_idx = start + k1 * step
            chunk[m] = c
            cs[m] = first_idx - c0
            ce[m] = last_idx - c0 + 1
            os_[m] = k0
            oe[m] = k1 + 1
            m += 1
            c += 1
    return chunk_a[:m], cs_a[:m], ce_a[:m], os_a[:m], oe_a[:m]


def array_projection(const int64_t[::1] idx, int64_t chunk_len):
    """Project integer indices (non-negative, in bounds) onto chunks.

    Returns ``(chunk, bounds, in_chunk, out_pos)``: ``chunk[j]`` is the j-th chunk
    touched, and ``in_chunk[bounds[j]:bounds[j+1]]`` / ``out_pos[bounds[j]:bounds[j+1]]``
    are its in-chunk indices and the output positions they go to.  Indices need not be
    sorted (output order follows the input, as numpy's orthogonal indexing does).
    """
    cdef Py_ssize_t n = idx.shape[0], i
    cdef bint monotonic = True
    with nogil:
        for i in range(1, n):
            if idx[i] < idx[i - 1]:
                monotonic = False
                break
    if monotonic:
        order_a = np.arange(n, dtype=np.int64)
    else:
        order_a = np.argsort(np.asarray(idx), kind="stable").astype(np.int64, copy=False)
    cdef const int64_t[::1] order = order_a
    in_chunk_a = np.empty(n, dtype=np.int64)
    chunk_a = np.empty(n, dtype=np.int64)
    bounds_a = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] in_chunk = in_chunk_a, chunks = chunk_a, bounds = bounds_a
    cdef Py_ssize_t m = 0
    cdef int64_t v, c, prev = -1
    with nogil:
        for i in range(n):
            v = idx[order[i]]
            c = v // chunk_len
            if c != prev:
                chunks[m] = c
                bounds[m] = i
                m += 1
                prev = c
            in_chunk[i] = v - c * chunk_len
        bounds[m] = n
    return chunk_a[:m], bounds_a[:m + 1], in_chunk_a, order_a


def is_constant(const uint8_t[::1] data, const uint8_t[::1] pattern):
    """True if ``data`` is ``pattern`` repeated (bitwise fill-value test; early exit)."""
    cdef Py_ssize_t n = data.shape[0], k = pattern.shape[0], i
    cdef bint same = True
    if k == 0 or n % k:
        return False
    if n == 0:
        return True
    with nogil:
        if k == 1:
            for i in range(n):
                if data[i] != pattern[0]:
                    same = False
                    break
        else:
            i = 0
            while i < n:
                if memcmp(&data[i], &pattern[0], k) != 0:
                    same = False
                    break
                i += k
    return same
