"""Per-inner-chunk loops of the ``sharding_indexed`` codec, without the GIL
(../shared/specs/v3-codec-sharding-indexed.rst; issue 13 item 3).

:func:`decode_scatter` (reads): for each task (one inner chunk), take its encoded bytes
from a buffer (the whole shard or a coalesced range buffer), decode them (raw bytes or
gzip, RFC 1952, through libdeflate) and scatter the orthogonal selection into the
output array; a missing inner chunk writes the fill value instead.

:func:`decode_points`: the same for any set of cells (vindex, point lists).

Full-shard writes (:func:`gather_encode`, :func:`slot_size`) live in ``_inner_encode``
(re-exported here); helpers shared by both modules in ``_inner_common.pxd``.

Python runs once per call (one call per shard and thread); the loops run with the GIL
released, trusting tables the wrapper validated first.  Like every kernel, this module
knows nothing of metadata or stores: failures are ``(task, code)`` pairs (see
:func:`describe`) which the caller turns into errors naming the inner chunk.
"""

from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcmp, memcpy, memset

from zarrcy._kernels cimport _deflate as dfl

cimport numpy as cnp
import numpy as np

cnp.import_array()

from zarrcy._kernels._inner_common cimport *

# result codes (0 = every task done) and codecs, as Python ints
OK = R_OK
GZIP_BAD_DATA = R_GZIP_BAD_DATA
GZIP_TOO_LONG = R_GZIP_TOO_LONG
GZIP_TOO_SHORT = R_GZIP_TOO_SHORT
GZIP_TRAILING = R_GZIP_TRAILING
RAW_SIZE = R_RAW_SIZE
NO_SPACE = R_NO_SPACE
NOT_RUN = R_NOT_RUN
RAW = C_RAW
GZIP = C_GZIP

MAX_RANK = MAX_NDIM

_TEXT = {
    OK: "ok",
    GZIP_BAD_DATA: "invalid gzip data",
    GZIP_TOO_LONG: "gzip data decodes to more bytes than the inner chunk holds",
    GZIP_TOO_SHORT: "the first gzip member decodes to fewer bytes than the inner chunk holds",
    GZIP_TRAILING: "non-zero bytes after the first gzip member",
    RAW_SIZE: "stored size differs from the inner chunk's size",
    NO_SPACE: "encoded inner chunk does not fit its output slot",
}


def describe(int code):
    """A short English text for a result code (the caller adds which chunk, which key)."""
    return _TEXT.get(code, f"unknown result code {code}")


# ------------------------------------------------------------------------------------
# decode + scatter
# ------------------------------------------------------------------------------------

cdef struct DecodeCtx:
    const uint8_t *src
    const int64_t *coords
    const int64_t *toff
    const int64_t *tlen
    const int64_t *dbase
    const int64_t *dstart
    const int64_t *dlocal
    const int64_t *dout
    const uint8_t *runs
    uint8_t *out
    uint8_t *scratch
    void *dec
    int codec
    bint block          # a whole inner chunk in out is one contiguous block


cdef Py_ssize_t _decode_loop(const DecodeCtx *c, const Geom *g, Py_ssize_t t0, Py_ssize_t t1,
                             int *code) noexcept nogil:
    """Run tasks ``t0..t1-1``; -1 when all succeeded, else the failing task (``code`` set)."""
    cdef Sel s
    cdef Py_ssize_t t, d, ndim = g.ndim, j
    cdef int64_t k0, n, off
    cdef bint empty, whole
    cdef uint8_t *base
    cdef const uint8_t *chunk
    cdef const int64_t *co
    cdef int r
    code[0] = R_OK
    for t in range(t0, t1):
        co = c.coords + t * ndim
        empty = False
        whole = True
        for d in range(ndim):
            j = c.dbase[d] + co[d]
            k0 = c.dstart[j]
            n = c.dstart[j + 1] - k0
            if n == 0:
                empty = True
                break
            s.cnt[d] = n
            s.loc[d] = c.dlocal + k0
            s.dst[d] = c.dout + k0
            s.runs[d] = c.runs[j]
            if n != g.cshape[d] or (c.runs[j] & (RUN_LOCAL | RUN_OUT)) != (RUN_LOCAL | RUN_OUT):
                whole = False
        if empty:
            continue  # nothing selected: the chunk is not even decoded
        base = NULL
        if whole and c.block:
            # the selection is the whole chunk, in order, one contiguous block of out
            off = 0
            for d in range(ndim):
                off += s.dst[d][0] * g.ostride[d]
            base = c.out + off
        n = c.tlen[t]
        if n < 0:  # missing inner chunk: fill value
            if base != NULL:
                _fill_run(base, g.chunk_elems, g)
            else:
                _scatter(NULL, c.out, g, &s)
            continue
        if base != NULL:
            r = _decode(c.codec, c.dec, c.src + c.toff[t], n, base, g.chunk_bytes)
            if r != R_OK:
                code[0] = r
                return t
            if g.swapw:
                zc_bswap(base, g.chunk_bytes, g.swapw)
            continue
        if c.codec == C_RAW and not g.swapw:
            if n != g.chunk_bytes:
                code[0] = R_RAW_SIZE
                return t
            chunk = c.src + c.toff[t]  # scatter straight from the stored bytes
        else:
            r = _decode(c.codec, c.dec, c.src + c.toff[t], n, c.scratch, g.chunk_bytes)
            if r != R_OK:
                code[0] = r
                return t
            if g.swapw:
                zc_bswap(c.scratch, g.chunk_bytes, g.swapw)
            chunk = c.scratch
        _scatter(chunk, c.out, g, &s)
    return -1



def decode_scatter(const uint8_t[::1] src, const int64_t[:, ::1] task_coords,
                   const int64_t[::1] task_off, const int64_t[::1] task_len,
                   Py_ssize_t t0, Py_ssize_t t1,
                   const int64_t[::1] dim_base, const int64_t[::1] dim_start,
                   const int64_t[::1] dim_local, const int64_t[::1] dim_out,
                   const int64_t[::1] chunk_shape, Py_ssize_t itemsize, swap, int codec,
                   const uint8_t[::1] fill, out, uint8_t[::1] scratch):
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

    ``codec``: 0 raw bytes, 1 gzip (libdeflate; ``_deflate.load`` must have succeeded).
    ``swap``: 0 none, 1 reverse each element's bytes, or 2/4/8 reverse words of that
    width (complex types).  ``out``: C-contiguous writable numpy array of ``len(chunk_shape)``
    dimensions and ``itemsize``-byte elements.  ``scratch``: at least one inner chunk's
    bytes, owned by the calling thread.

    Everything is validated here (ValueError/IndexError) before the GIL is released.
    Returns ``(-1, 0)`` when all tasks are done, else ``(t, code)``: tasks before ``t``
    are done, task ``t`` failed (``code``, see :func:`describe`), later ones were not run.
    """
    cdef Geom g
    cdef DecodeCtx c
    _geometry(&g, chunk_shape, out, itemsize, swap, fill, "out")
    cdef Py_ssize_t ndim = g.ndim, ntask = task_coords.shape[0], t, d, j, k, nk, ns
    if task_coords.shape[1] != ndim and ntask:
        raise ValueError(f"task_coords: expected {ndim} columns, received {task_coords.shape[1]}")
    if task_off.shape[0] != ntask or task_len.shape[0] != ntask:
        raise ValueError(f"task_off/task_len: expected {ntask} entries each, "
                         f"received {task_off.shape[0]} and {task_len.shape[0]}")
    if not 0 <= t0 <= t1 <= ntask:
        raise IndexError(f"t0, t1: expected 0 <= t0 <= t1 <= {ntask}, received {t0}, {t1}")
    if codec != C_RAW and codec != C_GZIP:
        raise ValueError(f"codec: expected 0 (raw) or 1 (gzip), received {codec}")
    if codec == C_GZIP and not dfl.loaded():
        raise RuntimeError("libdeflate entry points are not loaded (_deflate.load)")
    if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>out):
        raise ValueError("out: expected a writable array")
    if scratch.shape[0] < g.chunk_bytes:
        raise ValueError(f"scratch: expected at least {g.chunk_bytes} bytes, received {scratch.shape[0]}")
    if dim_base.shape[0] != ndim:
        raise ValueError(f"dim_base: expected {ndim} entries, received {dim_base.shape[0]}")
    if dim_local.shape[0] != dim_out.shape[0]:
        raise ValueError(f"dim_local/dim_out: expected equal lengths, received "
                         f"{dim_local.shape[0]} and {dim_out.shape[0]}")
    if t0 == t1:
        return -1, R_OK
    nk = dim_local.shape[0]
    ns = dim_start.shape[0]
    cdef Py_ssize_t nsrc = src.shape[0]
    cdef int64_t off, ln, cmax, lo, hi, b, v, w
    # byte ranges inside src
    for t in range(t0, t1):
        ln = task_len[t]
        if ln == -1:
            continue
        off = task_off[t]
        if ln < 0 or off < 0 or off > nsrc or ln > nsrc - off:
            raise ValueError(f"task {t}: expected a byte range inside src ({nsrc} bytes), "
                             f"received offset={off}, length={ln}")
    # per-dimension tables: coordinates, CSR ranges, indices; runs are recorded per range
    runs = np.zeros(ns, np.uint8)
    cdef uint8_t[::1] rv = runs
    cdef uint8_t flag
    for d in range(ndim):
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
    cdef uint8_t dummy = 0
    c.src = &src[0] if nsrc else &dummy
    c.coords = &task_coords[0, 0] if ntask and ndim else NULL
    c.toff = &task_off[0]
    c.tlen = &task_len[0]
    c.dbase = &dim_base[0] if ndim else NULL
    c.dstart = &dim_start[0] if ns else NULL
    c.dlocal = &dim_local[0] if nk else NULL
    c.dout = &dim_out[0] if nk else NULL
    c.runs = &rv[0] if ns else NULL
    c.out = <uint8_t *>cnp.PyArray_DATA(<cnp.ndarray>out)  # the argument keeps out alive
    c.scratch = &scratch[0]
    c.codec = codec
    c.block = _contiguous_block(&g)
    c.dec = dfl._decompressor() if codec == C_GZIP else NULL
    cdef int code = R_OK
    cdef Py_ssize_t bad
    with nogil:
        bad = _decode_loop(&c, &g, t0, t1, &code)
    return bad, code


# ------------------------------------------------------------------------------------
# decode + point scatter (non-orthogonal selections: vindex, points)
# ------------------------------------------------------------------------------------

cdef struct PointsCtx:
    const uint8_t *src
    const int64_t *toff
    const int64_t *tlen
    const int64_t *pstart
    const int64_t *plocal
    const int64_t *pout
    uint8_t *out
    uint8_t *scratch
    void *dec
    int codec


cdef Py_ssize_t _points_loop(const PointsCtx *c, const Geom *g, Py_ssize_t t0, Py_ssize_t t1,
                             int *code) noexcept nogil:
    cdef Py_ssize_t t
    cdef int64_t k0, n, ln
    cdef const uint8_t *chunk
    cdef int r
    code[0] = R_OK
    for t in range(t0, t1):
        k0 = c.pstart[t]
        n = c.pstart[t + 1] - k0
        if n == 0:
            continue
        ln = c.tlen[t]
        if ln < 0:
            _fill_elems(c.out, c.pout + k0, n, g)
            continue
        if c.codec == C_RAW and not g.swapw:
            if ln != g.chunk_bytes:
                code[0] = R_RAW_SIZE
                return t
            chunk = c.src + c.toff[t]
        else:
            r = _decode(c.codec, c.dec, c.src + c.toff[t], ln, c.scratch, g.chunk_bytes)
            if r != R_OK:
                code[0] = r
                return t
            if g.swapw:
                zc_bswap(c.scratch, g.chunk_bytes, g.swapw)
            chunk = c.scratch
        _copy_elems(c.out, chunk, c.pout + k0, c.plocal + k0, n, g.itemsize)
    return -1


def decode_points(const uint8_t[::1] src, const int64_t[::1] task_off, const int64_t[::1] task_len,
                  Py_ssize_t t0, Py_ssize_t t1, const int64_t[::1] pt_start, const int64_t[::1] pt_local,
                  const int64_t[::1] pt_out, const int64_t[::1] chunk_shape, Py_ssize_t itemsize, swap,
                  int codec, const uint8_t[::1] fill, out, uint8_t[::1] scratch):
    """Like :func:`decode_scatter`, for any set of cells (vindex, point lists).

    Task ``t`` (bytes ``task_off[t]``/``task_len[t]``, -1 = missing: ``fill``) provides
    the cells ``k`` in ``pt_start[t] : pt_start[t + 1]``: element ``pt_local[k]`` of the
    decoded chunk (flat C-order index, ``< prod(chunk_shape)``) goes to element
    ``pt_out[k]`` of ``out`` (flat C-order index, ``< out.size``; ``out`` may have any
    rank).  ``pt_start`` has one entry per task plus one.  Returns ``(-1, 0)`` or
    ``(t, code)`` as :func:`decode_scatter` does.
    """
    cdef Geom g
    cdef PointsCtx c
    _geometry(&g, chunk_shape, out, itemsize, swap, fill, "out", False)
    cdef Py_ssize_t ntask = task_off.shape[0], t, k, npt = pt_local.shape[0], nsrc = src.shape[0]
    cdef int64_t off, ln, lo, hi, v, size = cnp.PyArray_SIZE(<cnp.ndarray>out)
    if task_len.shape[0] != ntask or pt_start.shape[0] != ntask + 1:
        raise ValueError(f"task_len/pt_start: expected {ntask} and {ntask + 1} entries, "
                         f"received {task_len.shape[0]} and {pt_start.shape[0]}")
    if pt_out.shape[0] != npt:
        raise ValueError(f"pt_local/pt_out: expected equal lengths, received {npt} and {pt_out.shape[0]}")
    if not 0 <= t0 <= t1 <= ntask:
        raise IndexError(f"t0, t1: expected 0 <= t0 <= t1 <= {ntask}, received {t0}, {t1}")
    c.dec = _gzip_decompressor(codec)
    if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>out):
        raise ValueError("out: expected a writable array")
    if scratch.shape[0] < g.chunk_bytes:
        raise ValueError(f"scratch: expected at least {g.chunk_bytes} bytes, received {scratch.shape[0]}")
    if t0 == t1:
        return -1, R_OK
    for t in range(t0, t1):
        lo = pt_start[t]
        hi = pt_start[t + 1]
        if lo < 0 or hi < lo or hi > npt:
            raise IndexError(f"pt_start[{t}:{t + 2}]: expected 0 <= start <= stop <= {npt}, received {lo}, {hi}")
        for k in range(lo, hi):
            v = pt_local[k]
            if v < 0 or v >= g.chunk_elems:
                raise IndexError(f"pt_local[{k}]: expected 0 <= index < {g.chunk_elems}, received {v}")
            v = pt_out[k]
            if v < 0 or v >= size:
                raise IndexError(f"pt_out[{k}]: expected 0 <= index < {size}, received {v}")
        ln = task_len[t]
        if ln == -1:
            continue
        off = task_off[t]
        if ln < 0 or off < 0 or off > nsrc or ln > nsrc - off:
            raise ValueError(f"task {t}: expected a byte range inside src ({nsrc} bytes), "
                             f"received offset={off}, length={ln}")
    cdef uint8_t dummy = 0
    c.src = &src[0] if nsrc else &dummy
    c.toff = &task_off[0]
    c.tlen = &task_len[0]
    c.pstart = &pt_start[0]
    c.plocal = &pt_local[0] if npt else NULL
    c.pout = &pt_out[0] if npt else NULL
    c.out = <uint8_t *>cnp.PyArray_DATA(<cnp.ndarray>out)  # the argument keeps out alive
    c.scratch = &scratch[0]
    c.codec = codec
    cdef int code = R_OK
    cdef Py_ssize_t bad
    with nogil:
        bad = _points_loop(&c, &g, t0, t1, &code)
    return bad, code



# the encode kernels live in their own module (file size); their old home re-exports them
from zarrcy._kernels._inner_encode import gather_encode, slot_size  # noqa: E402
