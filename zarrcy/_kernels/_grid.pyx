"""Regular-grid index arithmetic (v3-chunk-grid-regular.rst) and per-dimension
selection projections (DESIGN.md "Read a[sel]" step 1).

Everything here works on one dimension at a time (or elementwise over dimensions);
the Python layer takes the product.  No Python objects are touched inside loops.
"""

from libc.stdint cimport INT64_MAX, int64_t, uint8_t
from libc.string cimport memcmp

from zarrcy._kernels._odometer cimport advance

import numpy as np

cimport numpy as cnp

cnp.import_array()

cdef extern from *:
    int ZARRCY_DEBUG  # set by setup.py: 1 in a ZARRCY_CYTHON_DEBUG=1 (checked) build


def debug_build():
    """True if the kernels were built with bounds/wraparound checks (ZARRCY_CYTHON_DEBUG=1)."""
    return bool(ZARRCY_DEBUG)


# Overflow safety (issue 12 item 3).  Zarr quantities are int64 and an array may end
# just below 2**63 (v3-core.rst "shape": any non-negative integer; zarrcy refuses only
# element counts beyond int64).  Every expression below is bounded by a value already
# known to fit: chunk origins never exceed the last selected index, and "one past the
# end" (origin + chunk_len, ceil((a + b - 1) / b)) is never formed -- the kernels compare
# distances instead (``last - c0 < chunk_len``).  The comments give each bound.

cdef inline int64_t _cdiv(int64_t a, int64_t b) noexcept nogil:
    # ceil(a / b) for a >= 0, b > 0, without forming a + b - 1 (which can overflow)
    return a // b + (1 if a % b else 0)


cdef Py_ssize_t _grid_shape(const int64_t[::1] array_shape, const int64_t[::1] chunk_shape,
                            int64_t[::1] out) noexcept nogil:
    """-1, or the first dimension whose extent is negative or chunk length < 1."""
    cdef Py_ssize_t i
    for i in range(array_shape.shape[0]):
        if array_shape[i] < 0 or chunk_shape[i] < 1:
            return i
        out[i] = _cdiv(array_shape[i], chunk_shape[i])
    return -1


def grid_shape(const int64_t[::1] array_shape, const int64_t[::1] chunk_shape):
    """ceil(array_shape / chunk_shape) per dimension, exact for every int64 extent.

    Raises ValueError for a rank mismatch, a negative extent or a chunk length < 1.
    """
    cdef Py_ssize_t n = array_shape.shape[0], bad
    if chunk_shape.shape[0] != n:
        raise ValueError(f"grid_shape: expected chunk_shape of rank {n}, received rank {chunk_shape.shape[0]}")
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        bad = _grid_shape(array_shape, chunk_shape, o)
    if bad >= 0:
        raise ValueError(
            f"grid_shape: dimension {bad}: expected extent >= 0 and chunk length >= 1, "
            f"received {array_shape[bad]} and {chunk_shape[bad]}"
        )
    return out


cdef Py_ssize_t _slice_projection(int64_t chunk_len, int64_t start, int64_t n_sel, int64_t step,
                                  int64_t first_chunk, int64_t last_chunk, int64_t last,
                                  int64_t* chunk, int64_t* cs, int64_t* ce, int64_t* os_, int64_t* oe,
                                  Py_ssize_t cap) noexcept nogil:
    """Fill the runs; return how many, or -1 if ``cap`` or the step budget would be
    exceeded (impossible for valid input: a guard, so a bug fails instead of spinning)."""
    cdef int64_t c = first_chunk, c0, hi, k0, k1, first_idx, last_idx
    cdef Py_ssize_t m = 0
    # each pass either emits a run or jumps to a chunk that holds a selected index (and
    # emits there next): at most 2 passes per run
    cdef Py_ssize_t budget = 2 * cap + 2
    while c <= last_chunk:
        budget -= 1
        if budget < 0:
            return -1
        c0 = c * chunk_len  # <= last (c <= last // chunk_len): fits
        # first selected index >= c0: k0 = ceil((c0 - start) / step), at least 0
        k0 = 0 if c0 <= start else _cdiv(c0 - start, step)
        if k0 >= n_sel:
            break
        first_idx = start + k0 * step  # a selected index (k0 < n_sel): <= last
        # the chunk's last index within the selection range: min(last, c0 + chunk_len - 1),
        # compared as a distance so c0 + chunk_len is never formed
        hi = last if last - c0 < chunk_len else c0 + (chunk_len - 1)
        if first_idx > hi:
            # a step longer than a chunk: jump straight to the chunk holding first_idx
            c = first_idx // chunk_len
            continue
        k1 = (hi - start) // step  # <= n_sel - 1 since hi <= last
        last_idx = start + k1 * step  # <= hi
        if m >= cap:
            return -1
        chunk[m] = c
        cs[m] = first_idx - c0
        ce[m] = last_idx - c0 + 1  # <= chunk_len
        os_[m] = k0
        oe[m] = k1 + 1  # <= n_sel
        m += 1
        c += 1  # <= last_chunk + 1 <= 2**63 - 1
    return m


def slice_projection(int64_t chunk_len, int64_t start, int64_t stop, int64_t step):
    """Project ``range(start, stop, step)`` (``0 <= start``, ``step >= 1``, ``chunk_len >= 1``;
    ``stop < start`` selects nothing) onto chunks.

    Returns int64 arrays ``(chunk, c_start, c_stop, o_start, o_stop)``: for each chunk
    touched, the in-chunk slice ``c_start:c_stop:step`` and the output slice
    ``o_start:o_stop`` (step 1).  ``c_stop`` is exclusive and tight (last index + 1).
    Work and memory are proportional to the chunks touched (at most the number of
    selected indices), never to the span between the first and the last; exact for
    every int64 input (no intermediate overflows).
    """
    if chunk_len < 1 or start < 0 or step < 1:
        raise ValueError(
            f"slice_projection: expected chunk_len >= 1, start >= 0, step >= 1, "
            f"received {chunk_len}, {start}, {step}"
        )
    # stop - start fits: both in [0, 2**63 - 1]
    cdef int64_t n_sel = 0 if stop <= start else _cdiv(stop - start, step)
    if n_sel == 0:
        e = np.empty(0, dtype=np.int64)
        return e, e, e, e, e
    # (n_sel - 1) * step <= stop - start - 1: fits
    cdef int64_t last = start + (n_sel - 1) * step
    cdef int64_t first_chunk = start // chunk_len, last_chunk = last // chunk_len
    # a touched chunk holds at least one selected index: runs <= min(n_sel, span)
    cdef int64_t span = last_chunk - first_chunk  # + 1 below, compared first
    cdef Py_ssize_t cap = <Py_ssize_t>(n_sel if n_sel <= span else span + 1)
    runs = np.empty((5, cap), dtype=np.int64)
    cdef int64_t[:, ::1] r = runs
    cdef Py_ssize_t m
    with nogil:
        m = _slice_projection(chunk_len, start, n_sel, step, first_chunk, last_chunk, last,
                              &r[0, 0], &r[1, 0], &r[2, 0], &r[3, 0], &r[4, 0], cap)
    if m < 0:
        raise RuntimeError(f"slice_projection: internal error for ({chunk_len}, {start}, {stop}, {step})")
    return runs[0, :m], runs[1, :m], runs[2, :m], runs[3, :m], runs[4, :m]


cdef Py_ssize_t _first_negative(const int64_t[::1] idx, bint* monotonic) noexcept nogil:
    """-1 or the position of the first negative index; sets ``monotonic``."""
    cdef Py_ssize_t n = idx.shape[0], i
    monotonic[0] = True
    for i in range(n):
        if idx[i] < 0:
            return i
        if i and idx[i] < idx[i - 1]:
            monotonic[0] = False
    return -1


def array_projection(const int64_t[::1] idx, int64_t chunk_len):
    """Project integer indices (non-negative; in bounds is the caller's business) onto chunks.

    Returns ``(chunk, bounds, in_chunk, out_pos)``: ``chunk[j]`` is the j-th chunk
    touched, and ``in_chunk[bounds[j]:bounds[j+1]]`` / ``out_pos[bounds[j]:bounds[j+1]]``
    are its in-chunk indices and the output positions they go to.  Indices need not be
    sorted (output order follows the input, as numpy's orthogonal indexing does).
    Memory is O(len(idx)); ``v // chunk_len`` and ``v - c * chunk_len`` cannot overflow
    for ``v >= 0`` (negative indices are refused with ValueError).
    """
    cdef Py_ssize_t n = idx.shape[0], i, bad
    cdef bint monotonic = True
    if chunk_len < 1:
        raise ValueError(f"array_projection: expected chunk_len >= 1, received {chunk_len}")
    with nogil:
        bad = _first_negative(idx, &monotonic)
    if bad >= 0:
        raise ValueError(f"array_projection: index {bad}: expected >= 0, received {idx[bad]}")
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
            in_chunk[i] = v - c * chunk_len  # c * chunk_len <= v
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


# -- box selections of a shard: the inner-chunk kernel's tables in one call ------------------

cdef enum:
    BOX_MAX_NDIM = 64  # as the inner-chunk kernel's MAX_NDIM


def box_tables(object starts, object n_sels, object steps, object ints, object chunk_shape, object grid):
    """The scatter tables of a box selection of one shard (per dimension a slice
    ``range(starts[d], starts[d] + n_sels[d] * steps[d], steps[d])`` or, where
    ``ints[d]``, the single index ``starts[d]``) on its inner-chunk grid (``chunk_shape``
    cells per inner chunk, ``grid`` inner chunks per dimension).

    Returns ``(linear, coords, dim_base, dim_start, dim_local, dim_out)`` -- the tables
    ``zarrcy.codecs.sharding.scatter.decode_tasks`` passes to the inner-chunk kernel:
    task ``k`` (C order over the touched inner chunks) is inner chunk ``linear[k]`` and
    takes row ``coords[k, d]`` of dimension ``d``, whose chunk-local indices and output
    indices are ``dim_local[dim_start[dim_base[d] + r]:dim_start[dim_base[d] + r + 1]]``
    and the same range of ``dim_out`` (an int is one pair, to output position 0).
    Work and memory follow the selected indices and the touched inner chunks, never the
    span; every input is checked (ValueError) before the loops."""
    cdef Py_ssize_t ndim = len(chunk_shape), d, r, j, k
    if ndim > BOX_MAX_NDIM or not (len(starts) == len(n_sels) == len(steps) == len(ints) == len(grid) == ndim):
        raise ValueError(f"box_tables: expected {ndim} entries per argument (at most {BOX_MAX_NDIM})")
    cdef int64_t st[BOX_MAX_NDIM]
    cdef int64_t ns[BOX_MAX_NDIM]
    cdef int64_t sp[BOX_MAX_NDIM]
    cdef int64_t cs[BOX_MAX_NDIM]
    cdef int64_t gr[BOX_MAX_NDIM]
    cdef int64_t rows[BOX_MAX_NDIM]
    cdef int64_t first[BOX_MAX_NDIM]  # each dimension's first run in the runs buffer
    cdef bint isint[BOX_MAX_NDIM]
    cdef int64_t cap = 0, n_idx = 0, m = 1, last
    for d in range(ndim):
        st[d] = starts[d]
        ns[d] = n_sels[d]
        sp[d] = steps[d]
        cs[d] = chunk_shape[d]
        gr[d] = grid[d]
        isint[d] = bool(ints[d])
        if cs[d] < 1 or gr[d] < 1 or st[d] < 0 or sp[d] < 1 or ns[d] < 1 or (isint[d] and ns[d] != 1):
            raise ValueError(f"box_tables: dimension {d}: expected chunk >= 1, grid >= 1, start >= 0, step >= 1, "
                             f"count >= 1, received {cs[d]}, {gr[d]}, {st[d]}, {sp[d]}, {ns[d]}")
        # the last selected index lies inside the shard: start + (n - 1) * step < chunk * grid
        if (ns[d] - 1 > (INT64_MAX - st[d]) // sp[d] or gr[d] > INT64_MAX // cs[d]
                or st[d] + (ns[d] - 1) * sp[d] >= cs[d] * gr[d]):
            raise ValueError(f"box_tables: dimension {d}: the selection leaves the shard")
        last = st[d] + (ns[d] - 1) * sp[d]
        first[d] = cap
        # a touched inner chunk holds a selected index: runs <= min(count, chunks spanned)
        cap += min(ns[d], last // cs[d] - st[d] // cs[d] + 1)
        n_idx += ns[d]
    runs_a = np.empty((5, max(cap, 1)), dtype=np.int64)
    cdef int64_t[:, ::1] ru = runs_a
    cdef Py_ssize_t got
    for d in range(ndim):
        last = st[d] + (ns[d] - 1) * sp[d]
        got = _slice_projection(cs[d], st[d], ns[d], sp[d], st[d] // cs[d], last // cs[d], last,
                                &ru[0, first[d]], &ru[1, first[d]], &ru[2, first[d]], &ru[3, first[d]],
                                &ru[4, first[d]], cap - first[d])
        if got < 1:
            raise RuntimeError(f"box_tables: internal error in dimension {d}")
        rows[d] = got
        if m > INT64_MAX // got:
            raise ValueError("box_tables: too many inner chunks")
        m *= got
    linear_a = np.empty(m, dtype=np.int64)
    coords_a = np.empty((m, ndim), dtype=np.int64)
    base_a = np.empty(ndim, dtype=np.int64)
    start_a = np.empty(cap + ndim, dtype=np.int64)
    local_a = np.empty(n_idx, dtype=np.int64)
    out_a = np.empty(n_idx, dtype=np.int64)
    cdef int64_t[::1] linear = linear_a, base = base_a, dstart = start_a, local = local_a, out = out_a
    cdef int64_t[:, ::1] coords = coords_a
    cdef int64_t pos = 0, nstart = 0, x, o, lin
    cdef int64_t at[BOX_MAX_NDIM]
    with nogil:
        for d in range(ndim):
            base[d] = nstart
            for r in range(rows[d]):
                dstart[nstart] = pos
                nstart += 1
                x = ru[1, first[d] + r]  # chunk-local start, step sp[d], up to the tight stop
                o = ru[3, first[d] + r]
                for j in range(ru[4, first[d] + r] - o):
                    local[pos] = x
                    out[pos] = 0 if isint[d] else o + j
                    x += sp[d]
                    pos += 1
            dstart[nstart] = pos
            nstart += 1
        # tasks: the odometer over the touched rows, last dimension fastest
        for d in range(ndim):
            at[d] = 0
        for k in range(m):
            lin = 0
            for d in range(ndim):
                coords[k, d] = at[d]
                lin = lin * gr[d] + ru[0, first[d] + at[d]]
            linear[k] = lin
            advance(at, rows, ndim)
    return linear_a, coords_a, base_a, start_a[:nstart], local_a, out_a
