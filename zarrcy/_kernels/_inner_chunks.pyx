"""Per-inner-chunk loops of the ``sharding_indexed`` codec, without the GIL
(../shared/specs/v3-codec-sharding-indexed.rst; issue 13 item 3).

:func:`decode_scatter` (reads): for each task (one inner chunk), take its encoded bytes
from a buffer (the whole shard or a coalesced range buffer), decode them through the
native codec engine (``_compress``: raw, gzip, zstd or blosc, then an optional crc32c;
stored as is or transposed) and scatter the orthogonal selection into the output
array; a missing inner chunk writes the fill value instead.

:func:`decode_points`: the same for any set of cells (vindex, point lists).

Full-shard writes (:func:`gather_encode`, :func:`slot_size`) live in ``_inner_encode``
(re-exported here); helpers shared by both modules in ``_inner_common.pxd``.

:func:`decode_scatter_all` / :func:`decode_points_all`: every task of one call, from
several source buffers (the coalesced ranges of a shard), split over the calling thread
and native pool helpers (``_workers``), each thread with its own scratch chunk and codec
contexts (``_compress.state``: thread-local C state, freed when the thread ends); a
status code per task.

Both kinds of task (scatter and points) share one stored-entry step (``_chunk_of``:
locate the entry, check a raw entry's size, or decode it into scratch and swap) and
one pair of runners (``_run_serial``/``_work`` over a ``Job``: one call per inner chunk
through the task's function pointer, never one per element).

Python runs once per call (one call per shard); the loops run with the GIL released,
trusting tables the wrapper validated first.  Like every kernel, this module knows
nothing of metadata or stores: failures are ``(task, code)`` pairs or per-task codes
(see :func:`describe`) which the caller turns into errors naming the inner chunk.
"""

from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcmp, memcpy, memset

cimport numpy as cnp
import numpy as np

cnp.import_array()

from zarrcy._kernels._inner_common cimport *
from zarrcy._kernels cimport _workers
from libc.stdlib cimport free, malloc

# result codes (0 = every task done) and codecs, as Python ints: the engine's
# (``_compress``), re-exported under the names the kernels had before it
from zarrcy._kernels._compress import (  # noqa: E402
    OK, GZIP_BAD_DATA, GZIP_TOO_LONG, GZIP_TOO_SHORT, GZIP_TRAILING, RAW_SIZE, NO_SPACE, NOT_RUN,
    RAW, GZIP, describe,
)

MAX_RANK = MAX_NDIM


# ------------------------------------------------------------------------------------
# decode + scatter
# ------------------------------------------------------------------------------------

# -- what both kinds of task share: the stored entries, their decode, the task runners ------

cdef struct Entries:
    const uint8_t **srcs   # source buffers
    const int64_t *tsrc    # source of each task (NULL: every task reads srcs[0])
    const int64_t *toff
    const int64_t *tlen    # -1: missing (fill value)
    uint8_t *out
    uint8_t *scratch       # the calling thread's scratch chunk (single-threaded calls)
    zc_state *st           # its codec state (single-threaded calls)
    Chain chain            # the inner chunks' bytes->bytes steps
    bint partial           # decode only the bytes a task needs where the format allows


cdef inline int _decode_native(const Entries *e, const Geom *g, Py_ssize_t t, uint8_t *dst,
                               zc_state *st, int64_t lo, int64_t hi) noexcept nogil:
    """Decode task ``t``'s stored bytes (a range the wrapper checked lies inside its
    source) into ``dst``, one inner chunk, in native byte order; a result code.  Only
    bytes ``[lo, hi)`` of it are needed (``0, chunk_bytes``: all): formats that can stop
    early or skip blocks without skipping an integrity check leave the rest unwritten."""
    cdef const uint8_t *src = e.srcs[e.tsrc[t] if e.tsrc != NULL else 0] + e.toff[t]
    cdef int r
    if lo == 0 and hi == g.chunk_bytes:
        r = zc.chain_decode(&e.chain, st, src, e.tlen[t], dst, g.chunk_bytes)
    else:
        r = zc.chain_decode_range(&e.chain, st, src, e.tlen[t], dst, g.chunk_bytes, lo, hi)
    if r == R_OK and g.swapw:
        zc_bswap(dst + lo, hi - lo, g.swapw)
    return r


cdef inline int _chunk_of(const Entries *e, const Geom *g, Py_ssize_t t, uint8_t *scratch, zc_state *st,
                          const uint8_t **chunk, int64_t lo, int64_t hi) noexcept nogil:
    """Task ``t``'s decoded inner chunk (stored, ``tlen[t] >= 0``) in native order, for a
    scatter of its bytes ``[lo, hi)``: the stored bytes themselves when raw and native
    (their size checked), else decoded into ``scratch``.  Sets ``chunk``; a result code."""
    if e.chain.codec == C_RAW and not e.chain.crc32c and not g.swapw:
        if e.tlen[t] != g.chunk_bytes:
            return R_RAW_SIZE
        chunk[0] = e.srcs[e.tsrc[t] if e.tsrc != NULL else 0] + e.toff[t]
        return R_OK
    chunk[0] = scratch
    if not e.partial:
        lo = 0
        hi = g.chunk_bytes
    return _decode_native(e, g, t, scratch, st, lo, hi)


ctypedef int (*task_fn)(const void *ctx, const Geom *g, Py_ssize_t t, uint8_t *scratch,
                        zc_state *st) noexcept nogil


cdef struct Job:
    task_fn run            # one call per task (per inner chunk), never per element
    const void *ctx        # a DecodeCtx or a PointsCtx, whose first member is the Entries
    Geom g
    long next
    long t1
    uint8_t *status


cdef Py_ssize_t _run_serial(const Job *job, Py_ssize_t t0, int *code) noexcept nogil:
    """Run tasks ``t0..job.t1-1`` on this thread; -1 when all succeeded, else the failing
    task (``code`` set; later tasks not run)."""
    cdef const Entries *e = <const Entries *>job.ctx
    cdef Py_ssize_t t
    cdef int r
    code[0] = R_OK
    for t in range(t0, job.t1):
        r = job.run(job.ctx, &job.g, t, e.scratch, e.st)
        if r != R_OK:
            code[0] = r
            return t
    return -1


cdef void _work(void *arg) noexcept nogil:
    """One thread's share of a parallel decode: claim tasks until none are left."""
    cdef Job *job = <Job *>arg
    cdef zc_state *st = zc.state(job.g.chunk_bytes)
    cdef long t
    if st == NULL:
        return  # no memory here: other threads take the tasks (or they stay NOT_RUN)
    while True:
        t = _workers.claim_as_helper(&job.next, job.t1)
        if t >= job.t1:
            return
        job.status[t] = <uint8_t>job.run(job.ctx, &job.g, t, st.scratch, st)


cdef int _check_entries(Entries *e, const int64_t[::1] task_off, const int64_t[::1] task_len,
                        const int64_t[::1] task_src, const Py_ssize_t *src_len, Py_ssize_t nsrcs,
                        Py_ssize_t ntask, Py_ssize_t t0, Py_ssize_t t1, object codec, out) except -1:
    """Validate the stored entries of tasks ``t0..t1-1`` (each byte range inside its
    source buffer), the codec chain and ``out``; fill ``e`` (except ``srcs``, ``scratch``,
    ``st``, ``partial``)."""
    cdef Py_ssize_t t, nsrc
    cdef int64_t off, ln, si
    if task_off.shape[0] != ntask or task_len.shape[0] != ntask:
        raise ValueError(f"task_off/task_len: expected {ntask} entries each, "
                         f"received {task_off.shape[0]} and {task_len.shape[0]}")
    if task_src is not None and task_src.shape[0] != ntask:
        raise ValueError(f"task_src: expected {ntask} entries, received {task_src.shape[0]}")
    if not 0 <= t0 <= t1 <= ntask:
        raise IndexError(f"t0, t1: expected 0 <= t0 <= t1 <= {ntask}, received {t0}, {t1}")
    _chain_arg(&e.chain, codec)  # checks the chain (and that its libraries are loaded)
    if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>out):
        raise ValueError("out: expected a writable array")
    for t in range(t0, t1):
        ln = task_len[t]
        if ln == -1:
            continue
        si = task_src[t] if task_src is not None else 0
        if si < 0 or si >= nsrcs:
            raise IndexError(f"task_src[{t}]: expected 0 <= index < {nsrcs} for a stored chunk, received {si}")
        nsrc = src_len[si]
        off = task_off[t]
        if ln < 0 or off < 0 or off > nsrc or ln > nsrc - off:
            raise ValueError(f"task {t}: expected a byte range inside src ({nsrc} bytes), "
                             f"received offset={off}, length={ln}")
    e.tsrc = &task_src[0] if task_src is not None and ntask else NULL
    e.toff = &task_off[0] if ntask else NULL
    e.tlen = &task_len[0] if ntask else NULL
    e.out = <uint8_t *>cnp.PyArray_DATA(<cnp.ndarray>out)  # the caller's argument keeps out alive
    # zstd / blosc decode only the bytes a task needs where that skips no integrity check
    # (_compress.chain_decode_range decides per stream)
    e.partial = e.chain.codec == zc.ZC_ZSTD or e.chain.codec == zc.ZC_BLOSC
    return 0


cdef class _Sources:
    """The buffers of a parallel decode, held (and their pointers listed) for one call."""
    cdef const uint8_t **ptr
    cdef Py_ssize_t *size
    cdef Py_ssize_t n
    cdef list views
    cdef uint8_t dummy

    def __cinit__(self, srcs):
        cdef const uint8_t[::1] mv
        cdef Py_ssize_t i
        self.views = []
        self.n = len(srcs)
        self.ptr = <const uint8_t **>malloc(max(self.n, 1) * sizeof(uint8_t *))
        self.size = <Py_ssize_t *>malloc(max(self.n, 1) * sizeof(Py_ssize_t))
        if self.ptr == NULL or self.size == NULL:
            raise MemoryError()
        for i in range(self.n):
            mv = srcs[i]
            self.views.append(mv)
            self.size[i] = mv.shape[0]
            self.ptr[i] = &mv[0] if mv.shape[0] else &self.dummy

    def __dealloc__(self):
        free(self.ptr)
        free(self.size)


cdef Py_ssize_t _finish_status(const uint8_t[::1] status, Py_ssize_t n) except -1:
    cdef Py_ssize_t t, bad = 0
    for t in range(n):
        if status[t] == R_NOT_RUN:
            raise MemoryError("inner-chunk decode: no memory for a thread's scratch chunk")
        if status[t] != R_OK:
            bad += 1
    return bad


cdef object _run_one(Job *job, const uint8_t[::1] src, Py_ssize_t t0, Py_ssize_t t1, uint8_t[::1] scratch):
    """The single-buffer calls: tasks ``t0..t1-1`` from ``src`` on the calling thread,
    with its ``scratch``; ``(-1, 0)`` or ``(failing task, code)``."""
    cdef Entries *e = <Entries *>job.ctx
    if scratch.shape[0] < job.g.chunk_bytes:
        raise ValueError(f"scratch: expected at least {job.g.chunk_bytes} bytes, received {scratch.shape[0]}")
    if t0 == t1:
        return -1, R_OK
    cdef uint8_t dummy = 0
    cdef const uint8_t *sp = &src[0] if src.shape[0] else &dummy
    e.srcs = &sp
    e.scratch = &scratch[0]
    e.st = zc.state(0)
    if e.st == NULL:
        raise MemoryError("inner-chunk decode: no memory for this thread's codec state")
    job.t1 = t1
    cdef int code = R_OK
    cdef Py_ssize_t bad
    with nogil:
        bad = _run_serial(job, t0, &code)
    return bad, code


cdef Py_ssize_t _run_all(Job *job, _Sources S, Py_ssize_t ntask, uint8_t[::1] status, int threads,
                         budget) except -1:
    """The multi-buffer calls: every task on up to ``threads`` threads (the caller and
    pool helpers), a status code per task; the number of failed tasks.  With a
    ``budget`` (``_workers.Budget``, the API call's), helpers join only with one of its
    slots (the calling thread holds one already)."""
    cdef void *b = _workers.budget_ptr(budget)
    if ntask == 0:
        return 0
    memset(&status[0], R_NOT_RUN, ntask)
    (<Entries *>job.ctx).srcs = S.ptr
    job.next = 0
    job.t1 = ntask
    job.status = &status[0]
    cdef int helpers = min(max(threads, 1) - 1, ntask - 1)
    with nogil:
        if b != NULL:
            _workers.run_in(_work, job, helpers, b)
        else:
            _workers.run(_work, job, helpers, max(threads, 1))
    return _finish_status(status, ntask)


# -- decode + scatter (orthogonal selections) ------------------------------------------------

cdef struct DecodeCtx:
    Entries e              # first: a Job reaches it through its ctx pointer
    const int64_t *coords
    const int64_t *dbase
    const int64_t *dstart
    const int64_t *dlocal
    const int64_t *dout
    const uint8_t *runs
    bint block          # a whole inner chunk in out is one contiguous block


cdef inline void _sel_span(const Geom *g, const Sel *s, int64_t *lo, int64_t *hi) noexcept nogil:
    """The bytes ``[lo, hi)`` of a stored inner chunk that hold every cell of ``s``."""
    cdef Py_ssize_t d, k
    cdef int64_t a, b, v
    lo[0] = 0
    hi[0] = g.itemsize
    for d in range(g.ndim):
        if s.runs[d] & RUN_LOCAL:
            a = s.loc[d][0]
            b = s.loc[d][s.cnt[d] - 1]
        else:
            a = b = s.loc[d][0]
            for k in range(1, s.cnt[d]):
                v = s.loc[d][k]
                if v < a:
                    a = v
                elif v > b:
                    b = v
        lo[0] += a * g.cstride[d]
        hi[0] += b * g.cstride[d]


cdef int _decode_task(const void *ctx, const Geom *g, Py_ssize_t t, uint8_t *scratch,
                      zc_state *st) noexcept nogil:
    """Decode and scatter task ``t``; a result code."""
    cdef const DecodeCtx *c = <const DecodeCtx *>ctx
    cdef Sel s
    cdef Py_ssize_t d, ndim = g.ndim, j
    cdef int64_t k0, n, off
    cdef bint whole = True
    cdef uint8_t *base = NULL
    cdef const uint8_t *chunk
    cdef const int64_t *co = c.coords + t * ndim
    cdef int64_t lo = 0, hi = g.chunk_bytes
    cdef int r
    for d in range(ndim):
        j = c.dbase[d] + co[d]
        k0 = c.dstart[j]
        n = c.dstart[j + 1] - k0
        if n == 0:
            return R_OK  # nothing selected: the chunk is not even decoded
        s.cnt[d] = n
        s.loc[d] = c.dlocal + k0
        s.dst[d] = c.dout + k0
        s.runs[d] = c.runs[j]
        if n != g.cshape[d] or (c.runs[j] & (RUN_LOCAL | RUN_OUT)) != (RUN_LOCAL | RUN_OUT):
            whole = False
    if whole and c.block:
        # the selection is the whole chunk, in order, one contiguous block of out
        off = 0
        for d in range(ndim):
            off += s.dst[d][0] * g.ostride[d]
        base = c.e.out + off
    if c.e.tlen[t] < 0:  # missing inner chunk: fill value
        if base != NULL:
            _fill_run(base, g.chunk_elems, g)
        else:
            _scatter(NULL, c.e.out, g, &s)
        return R_OK
    if base != NULL:
        return _decode_native(&c.e, g, t, base, st, 0, g.chunk_bytes)
    if c.e.partial and not whole:
        _sel_span(g, &s, &lo, &hi)
    r = _chunk_of(&c.e, g, t, scratch, st, &chunk, lo, hi)
    if r != R_OK:
        return r
    _scatter(chunk, c.e.out, g, &s)
    return R_OK


cdef object _check_decode(Job *job, DecodeCtx *c, const int64_t[:, ::1] task_coords,
                          const int64_t[::1] task_off, const int64_t[::1] task_len,
                          const int64_t[::1] task_src, const Py_ssize_t *src_len, Py_ssize_t nsrcs,
                          Py_ssize_t t0, Py_ssize_t t1,
                          const int64_t[::1] dim_base, const int64_t[::1] dim_start,
                          const int64_t[::1] dim_local, const int64_t[::1] dim_out, object codec, out):
    """Validate a decode call's tasks ``t0..t1-1`` and tables; fill ``c`` (except
    ``e.srcs``, ``e.scratch``, ``e.dec``) and point ``job`` at it.  Returns the array
    ``c.runs`` points into."""
    cdef Geom *g = &job.g
    cdef Py_ssize_t ndim = g.ndim, ntask = task_coords.shape[0], t, d, j, k, nk, ns
    if task_coords.shape[1] != ndim and ntask:
        raise ValueError(f"task_coords: expected {ndim} columns, received {task_coords.shape[1]}")
    _check_entries(&c.e, task_off, task_len, task_src, src_len, nsrcs, ntask, t0, t1, codec, out)
    if dim_base.shape[0] != ndim:
        raise ValueError(f"dim_base: expected {ndim} entries, received {dim_base.shape[0]}")
    if dim_local.shape[0] != dim_out.shape[0]:
        raise ValueError(f"dim_local/dim_out: expected equal lengths, received "
                         f"{dim_local.shape[0]} and {dim_out.shape[0]}")
    nk = dim_local.shape[0]
    ns = dim_start.shape[0]
    cdef int64_t cmax, lo, hi, b, v, w
    # per-dimension tables: coordinates, CSR ranges, indices; runs are recorded per range
    runs = np.zeros(max(ns, 1), np.uint8)
    cdef uint8_t[::1] rv = runs
    cdef uint8_t flag
    for d in range(ndim if t1 > t0 else 0):
        cmax = -1
        for t in range(t0, t1):
            v = task_coords[t, d]
            if v < 0:
                raise IndexError(f"task_coords[{t}, {d}]: expected a non-negative coordinate, received {v}")
            if v > cmax:
                cmax = v
        b = dim_base[d]
        if b < 0 or b > ns or cmax >= ns - b - 1:
            raise IndexError(f"dim_base[{d}]: expected room for {cmax + 2} entries in dim_start "
                             f"({ns}), received {b}")
        for j in range(b, b + cmax + 1):
            lo = dim_start[j]
            hi = dim_start[j + 1]
            if lo < 0 or hi < lo or hi > nk:
                raise IndexError(f"dim_start[{j}:{j + 2}]: expected 0 <= start <= stop <= {nk}, "
                                 f"received {lo}, {hi}")
            flag = RUN_LOCAL | RUN_OUT
            for k in range(lo, hi):
                v = dim_local[k]
                w = dim_out[k]
                if v < 0 or v >= g.cshape[d]:
                    raise IndexError(f"dim_local[{k}] (dimension {d}): expected 0 <= index < "
                                     f"{g.cshape[d]}, received {v}")
                if w < 0 or w >= g.oshape[d]:
                    raise IndexError(f"dim_out[{k}] (dimension {d}): expected 0 <= index < "
                                     f"{g.oshape[d]}, received {w}")
                if k > lo:
                    if v != dim_local[k - 1] + 1:
                        flag &= ~RUN_LOCAL
                    if w != dim_out[k - 1] + 1:
                        flag &= ~RUN_OUT
            rv[j] = flag
    c.coords = &task_coords[0, 0] if ntask and ndim else NULL
    c.dbase = &dim_base[0] if ndim else NULL
    c.dstart = &dim_start[0] if ns else NULL
    c.dlocal = &dim_local[0] if nk else NULL
    c.dout = &dim_out[0] if nk else NULL
    c.runs = &rv[0]
    c.block = _contiguous_block(g)
    job.run = _decode_task
    job.ctx = c
    return runs


def decode_scatter(const uint8_t[::1] src, const int64_t[:, ::1] task_coords,
                   const int64_t[::1] task_off, const int64_t[::1] task_len,
                   Py_ssize_t t0, Py_ssize_t t1,
                   const int64_t[::1] dim_base, const int64_t[::1] dim_start,
                   const int64_t[::1] dim_local, const int64_t[::1] dim_out,
                   const int64_t[::1] chunk_shape, Py_ssize_t itemsize, swap, codec,
                   const uint8_t[::1] fill, out, uint8_t[::1] scratch, order=None):
    """Decode inner chunks ``t0 <= t < t1`` from ``src`` and scatter them into ``out``.

    Task ``t`` is the inner chunk at ``task_coords[t]`` (inner-grid coordinates), stored
    as ``src[task_off[t] : task_off[t] + task_len[t]]``; ``task_len[t] == -1`` means
    missing: its selected cells get ``fill`` (``itemsize`` bytes, native order).

    The selection is orthogonal: along dimension ``d``, table row ``c = task_coords[t, d]``
    contributes the pairs ``(dim_local[k], dim_out[k])`` (index within the chunk, index in
    ``out``) for ``k`` in ``dim_start[dim_base[d] + c] : dim_start[dim_base[d] + c + 1]``;
    the task's cells are the product over dimensions (duplicates and any order allowed).
    ``c`` only indexes the table: it may be the inner-chunk coordinate, or the position
    of the chunk among those the selection touches along ``d`` (the ``bounds`` /
    ``in_chunk`` / ``out_pos`` of ``_grid.array_projection`` are such a table), so the
    tables grow with the selection, not with the span of the shard.  The wrapper checks
    that every row a task uses lies inside the tables, not which chunk it describes.

    ``codec``: the inner chunks' bytes->bytes chain, a ``_compress`` chain tuple
    (compressor: raw, gzip, zstd, blosc; then an optional crc32c), or 0 (raw) / 1 (gzip
    level 1).  Stored zstd frames without a checksum are decoded only up to the last
    byte a task selects, blosc frames only in the blocks it touches.
    ``order``: None, or the permutation of a ``transpose`` codec before ``bytes``: inner
    chunks are stored as the C-order array of shape ``chunk_shape[order]``.
    ``swap``: 0 none, 1 reverse each element's bytes, or 2/4/8 reverse words of that
    width (complex types).  ``out``: C-contiguous writable numpy array of ``len(chunk_shape)``
    dimensions and ``itemsize``-byte elements.  ``scratch``: at least one inner chunk's
    bytes, owned by the calling thread.

    Everything is validated here (ValueError/IndexError) before the GIL is released.
    Returns ``(-1, 0)`` when all tasks are done, else ``(t, code)``: tasks before ``t``
    are done, task ``t`` failed (``code``, see :func:`describe`), later ones were not run.
    """
    cdef Job job
    cdef DecodeCtx c
    _geometry(&job.g, chunk_shape, out, itemsize, swap, fill, "out", True, False, order)
    cdef Py_ssize_t nsrc = src.shape[0]
    runs = _check_decode(&job, &c, task_coords, task_off, task_len, None, &nsrc, 1, t0, t1,
                         dim_base, dim_start, dim_local, dim_out, codec, out)
    return _run_one(&job, src, t0, t1, scratch)


def decode_scatter_all(srcs, const int64_t[::1] task_src, const int64_t[:, ::1] task_coords,
                       const int64_t[::1] task_off, const int64_t[::1] task_len,
                       const int64_t[::1] dim_base, const int64_t[::1] dim_start,
                       const int64_t[::1] dim_local, const int64_t[::1] dim_out,
                       const int64_t[::1] chunk_shape, Py_ssize_t itemsize, swap, codec,
                       const uint8_t[::1] fill, out, uint8_t[::1] status, int threads, order=None,
                       budget=None):
    """:func:`decode_scatter` of every task, on up to ``threads`` threads (the caller and
    helpers of the native pool, ``_workers``), from several source buffers.

    Task ``t`` reads ``srcs[task_src[t]][task_off[t] : task_off[t] + task_len[t]]``
    (``task_len[t] == -1``: missing, fill; ``task_src[t]`` is then ignored).  Every task
    runs; ``status[t]`` gets its result code (0 ok, see :func:`describe`).  Returns the
    number of failed tasks.  Each thread uses its own scratch chunk and codec contexts.

    ``out`` may be a strided view (non-negative strides, last dimension contiguous),
    e.g. a shard's region of the whole output array: whole inner chunks are then
    decoded into the thread's scratch chunk and scattered row by row.
    """
    cdef Job job
    cdef DecodeCtx c
    _geometry(&job.g, chunk_shape, out, itemsize, swap, fill, "out", True, True, order)
    cdef _Sources S = _Sources(srcs)
    cdef Py_ssize_t ntask = task_coords.shape[0]
    if status.shape[0] != ntask:
        raise ValueError(f"status: expected {ntask} entries, received {status.shape[0]}")
    runs = _check_decode(&job, &c, task_coords, task_off, task_len, task_src, S.size, S.n, 0, ntask,
                         dim_base, dim_start, dim_local, dim_out, codec, out)
    return _run_all(&job, S, ntask, status, threads, budget)


# -- decode + point scatter (non-orthogonal selections: vindex, points) ----------------------

cdef struct PointsCtx:
    Entries e              # first: a Job reaches it through its ctx pointer
    const int64_t *pstart
    const int64_t *plocal
    const int64_t *pout


cdef int _points_task(const void *ctx, const Geom *g, Py_ssize_t t, uint8_t *scratch,
                      zc_state *st) noexcept nogil:
    cdef const PointsCtx *c = <const PointsCtx *>ctx
    cdef int64_t k0 = c.pstart[t], n = c.pstart[t + 1] - c.pstart[t], k, lo, hi
    cdef const uint8_t *chunk
    cdef int r
    if n == 0:
        return R_OK
    if c.e.tlen[t] < 0:
        _fill_elems(c.e.out, c.pout + k0, n, g)
        return R_OK
    lo = hi = c.plocal[k0]
    if c.e.partial:
        for k in range(k0 + 1, k0 + n):
            if c.plocal[k] < lo:
                lo = c.plocal[k]
            elif c.plocal[k] > hi:
                hi = c.plocal[k]
    r = _chunk_of(&c.e, g, t, scratch, st, &chunk, lo * g.itemsize, (hi + 1) * g.itemsize)
    if r != R_OK:
        return r
    _copy_elems(c.e.out, chunk, c.pout + k0, c.plocal + k0, n, g.itemsize, g.itemsize)
    return R_OK


cdef int _check_points(Job *job, PointsCtx *c, const int64_t[::1] task_off, const int64_t[::1] task_len,
                       const int64_t[::1] task_src, const Py_ssize_t *src_len, Py_ssize_t nsrcs,
                       Py_ssize_t t0, Py_ssize_t t1, const int64_t[::1] pt_start,
                       const int64_t[::1] pt_local, const int64_t[::1] pt_out, object codec, out) except -1:
    cdef Py_ssize_t ntask = task_off.shape[0], t, k, npt = pt_local.shape[0]
    cdef int64_t lo, hi, v, size = cnp.PyArray_SIZE(<cnp.ndarray>out)
    if pt_start.shape[0] != ntask + 1:
        raise ValueError(f"pt_start: expected {ntask + 1} entries, received {pt_start.shape[0]}")
    if pt_out.shape[0] != npt:
        raise ValueError(f"pt_local/pt_out: expected equal lengths, received {npt} and {pt_out.shape[0]}")
    _check_entries(&c.e, task_off, task_len, task_src, src_len, nsrcs, ntask, t0, t1, codec, out)
    for t in range(t0, t1):
        lo = pt_start[t]
        hi = pt_start[t + 1]
        if lo < 0 or hi < lo or hi > npt:
            raise IndexError(f"pt_start[{t}:{t + 2}]: expected 0 <= start <= stop <= {npt}, received {lo}, {hi}")
        for k in range(lo, hi):
            v = pt_local[k]
            if v < 0 or v >= job.g.chunk_elems:
                raise IndexError(f"pt_local[{k}]: expected 0 <= index < {job.g.chunk_elems}, received {v}")
            v = pt_out[k]
            if v < 0 or v >= size:
                raise IndexError(f"pt_out[{k}]: expected 0 <= index < {size}, received {v}")
    c.pstart = &pt_start[0]
    c.plocal = &pt_local[0] if npt else NULL
    c.pout = &pt_out[0] if npt else NULL
    job.run = _points_task
    job.ctx = c
    return 0


def decode_points(const uint8_t[::1] src, const int64_t[::1] task_off, const int64_t[::1] task_len,
                  Py_ssize_t t0, Py_ssize_t t1, const int64_t[::1] pt_start, const int64_t[::1] pt_local,
                  const int64_t[::1] pt_out, const int64_t[::1] chunk_shape, Py_ssize_t itemsize, swap,
                  codec, const uint8_t[::1] fill, out, uint8_t[::1] scratch):
    """Like :func:`decode_scatter`, for any set of cells (vindex, point lists).

    Task ``t`` (bytes ``task_off[t]``/``task_len[t]``, -1 = missing: ``fill``) provides
    the cells ``k`` in ``pt_start[t] : pt_start[t + 1]``: element ``pt_local[k]`` of the
    decoded chunk as stored (flat C-order index of the stored array: of the transposed
    array when a ``transpose`` codec precedes ``bytes``; ``< prod(chunk_shape)``) goes to element
    ``pt_out[k]`` of ``out`` (flat C-order index, ``< out.size``; ``out`` may have any
    rank).  ``pt_start`` has one entry per task plus one.  Returns ``(-1, 0)`` or
    ``(t, code)`` as :func:`decode_scatter` does.
    """
    cdef Job job
    cdef PointsCtx c
    _geometry(&job.g, chunk_shape, out, itemsize, swap, fill, "out", False)
    cdef Py_ssize_t nsrc = src.shape[0]
    _check_points(&job, &c, task_off, task_len, None, &nsrc, 1, t0, t1, pt_start, pt_local, pt_out, codec, out)
    return _run_one(&job, src, t0, t1, scratch)


def decode_points_all(srcs, const int64_t[::1] task_src, const int64_t[::1] task_off,
                      const int64_t[::1] task_len, const int64_t[::1] pt_start, const int64_t[::1] pt_local,
                      const int64_t[::1] pt_out, const int64_t[::1] chunk_shape, Py_ssize_t itemsize, swap,
                      codec, const uint8_t[::1] fill, out, uint8_t[::1] status, int threads, budget=None):
    """:func:`decode_points` of every task from several buffers on up to ``threads``
    threads, as :func:`decode_scatter_all` (``status`` per task; returns the failures)."""
    cdef Job job
    cdef PointsCtx c
    _geometry(&job.g, chunk_shape, out, itemsize, swap, fill, "out", False)
    cdef _Sources S = _Sources(srcs)
    cdef Py_ssize_t ntask = task_off.shape[0]
    if status.shape[0] != ntask:
        raise ValueError(f"status: expected {ntask} entries, received {status.shape[0]}")
    _check_points(&job, &c, task_off, task_len, task_src, S.size, S.n, 0, ntask, pt_start, pt_local,
                  pt_out, codec, out)
    return _run_all(&job, S, ntask, status, threads, budget)


# the encode kernels live in their own module (file size); their old home re-exports them
from zarrcy._kernels._inner_encode import gather_encode, slot_size  # noqa: E402
