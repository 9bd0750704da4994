"""Per-inner-chunk loops of the ``sharding_indexed`` codec, without the GIL
(../shared/specs/v3-codec-sharding-indexed.rst; issue 13 item 3).

:func:`decode_scatter` (reads): for each task (one inner chunk), take its encoded bytes
from a buffer (the whole shard or a coalesced range buffer), decode them (raw bytes or
gzip, RFC 1952, through libdeflate) and scatter the orthogonal selection into the
output array; a missing inner chunk writes the fill value instead.

:func:`gather_encode` (full-shard writes): for each inner chunk of a shard-shaped
array, gather its region (edge chunks padded with the fill value), flag chunks that
hold only the fill value (bytewise), byte-swap if needed and gzip or copy it into a
caller buffer.

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

cdef extern from "numpy/ndarraytypes.h":
    int NPY_ITEM_HASOBJECT

cdef extern from *:
    """
    #include <string.h>
    #include <stdint.h>
    /* in-place byte swap of nbytes / w words of w = 2, 4 or 8 bytes (the shift
       patterns compile to bswap instructions) */
    static void zc_bswap(uint8_t *p, Py_ssize_t nbytes, int w) {
        Py_ssize_t i;
        if (w == 2) {
            for (i = 0; i + 2 <= nbytes; i += 2) {
                uint16_t v; memcpy(&v, p + i, 2);
                v = (uint16_t)((v >> 8) | (v << 8));
                memcpy(p + i, &v, 2);
            }
        } else if (w == 4) {
            for (i = 0; i + 4 <= nbytes; i += 4) {
                uint32_t v; memcpy(&v, p + i, 4);
                v = ((v & 0x000000FFu) << 24) | ((v & 0x0000FF00u) << 8)
                  | ((v & 0x00FF0000u) >> 8) | ((v & 0xFF000000u) >> 24);
                memcpy(p + i, &v, 4);
            }
        } else if (w == 8) {
            for (i = 0; i + 8 <= nbytes; i += 8) {
                uint64_t v; memcpy(&v, p + i, 8);
                v = ((v & 0x00000000000000FFull) << 56) | ((v & 0x000000000000FF00ull) << 40)
                  | ((v & 0x0000000000FF0000ull) << 24) | ((v & 0x00000000FF000000ull) << 8)
                  | ((v & 0x000000FF00000000ull) >> 8) | ((v & 0x0000FF0000000000ull) >> 24)
                  | ((v & 0x00FF000000000000ull) >> 40) | ((v & 0xFF00000000000000ull) >> 56);
                memcpy(p + i, &v, 8);
            }
        }
    }
    """
    void zc_bswap(uint8_t *p, Py_ssize_t nbytes, int w) noexcept nogil

cdef enum:
    MAX_NDIM = 64
    RUN_LOCAL = 1     # the chunk-local indices of a (dim, chunk) range are consecutive
    RUN_OUT = 2       # the output indices of a (dim, chunk) range are consecutive

# result codes (0 = every task done)
cpdef enum:
    OK = 0
    GZIP_BAD_DATA = 1     # libdeflate: not a valid gzip member
    GZIP_TOO_LONG = 2     # the member decodes to more than one inner chunk's bytes
    GZIP_TOO_SHORT = 3    # the first member decodes to fewer bytes (maybe more members follow)
    GZIP_TRAILING = 4     # non-zero bytes after the first member (maybe more members)
    RAW_SIZE = 5          # raw (no compression) bytes are not exactly one inner chunk
    NO_SPACE = 6          # gather_encode: an output slot was too small for the encoded chunk

# codecs
cpdef enum:
    RAW = 0
    GZIP = 1

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
# shared helpers
# ------------------------------------------------------------------------------------

cdef struct Geom:
    Py_ssize_t ndim
    Py_ssize_t itemsize
    Py_ssize_t chunk_bytes
    Py_ssize_t chunk_elems
    int swapw               # byte-swap word width (0: none)
    int fill_byte           # the fill value's byte when all its bytes are equal, else -1
    const uint8_t *fill
    int64_t cshape[MAX_NDIM]
    int64_t cstride[MAX_NDIM]   # byte strides of a C-order inner chunk
    int64_t oshape[MAX_NDIM]
    int64_t ostride[MAX_NDIM]   # byte strides of the C-contiguous array


cdef struct Sel:
    const int64_t *loc[MAX_NDIM]
    const int64_t *dst[MAX_NDIM]
    int64_t cnt[MAX_NDIM]
    uint8_t runs[MAX_NDIM]


cdef inline void _fill_run(uint8_t *p, Py_ssize_t n, const Geom *g) noexcept nogil:
    """``n`` consecutive fill values at ``p``."""
    cdef Py_ssize_t total = n * g.itemsize, done, k
    if total <= 0:
        return
    if g.fill_byte >= 0:
        memset(p, g.fill_byte, total)
        return
    memcpy(p, g.fill, g.itemsize)
    done = g.itemsize
    while done < total:
        k = done if done <= total - done else total - done
        memcpy(p + done, p, k)
        done += k


cdef inline void _copy_elems(uint8_t *o, const uint8_t *c, const int64_t *dj, const int64_t *lj,
                             Py_ssize_t n, Py_ssize_t isz) noexcept nogil:
    """``o[dj[j]] = c[lj[j]]`` for elements of ``isz`` bytes (specialised sizes)."""
    cdef Py_ssize_t j
    if isz == 1:
        for j in range(n):
            o[dj[j]] = c[lj[j]]
    elif isz == 2:
        for j in range(n):
            memcpy(o + 2 * dj[j], c + 2 * lj[j], 2)
    elif isz == 4:
        for j in range(n):
            memcpy(o + 4 * dj[j], c + 4 * lj[j], 4)
    elif isz == 8:
        for j in range(n):
            memcpy(o + 8 * dj[j], c + 8 * lj[j], 8)
    else:
        for j in range(n):
            memcpy(o + isz * dj[j], c + isz * lj[j], isz)


cdef inline void _fill_elems(uint8_t *o, const int64_t *dj, Py_ssize_t n, const Geom *g) noexcept nogil:
    cdef Py_ssize_t j, isz = g.itemsize
    cdef const uint8_t *f = g.fill
    cdef uint8_t b
    if isz == 1:
        b = f[0]
        for j in range(n):
            o[dj[j]] = b
    elif isz == 2:
        for j in range(n):
            memcpy(o + 2 * dj[j], f, 2)
    elif isz == 4:
        for j in range(n):
            memcpy(o + 4 * dj[j], f, 4)
    elif isz == 8:
        for j in range(n):
            memcpy(o + 8 * dj[j], f, 8)
    else:
        for j in range(n):
            memcpy(o + isz * dj[j], f, isz)


cdef void _scatter(const uint8_t *chunk, uint8_t *out, const Geom *g, const Sel *s) noexcept nogil:
    """Copy the selection ``s`` of a decoded (native order) inner chunk into ``out``;
    ``chunk == NULL`` writes the fill value instead.

    Rows along the innermost dimension are one memcpy when both index lists are runs
    (merged with the dimensions above while they span the chunk and ``out`` entirely),
    else an element loop; the outer dimensions are an odometer."""
    cdef Py_ssize_t ndim = g.ndim, inner, d
    cdef Py_ssize_t row, so, do
    cdef int64_t pos[MAX_NDIM]
    cdef bint runs
    if ndim == 0:
        if chunk == NULL:
            _fill_run(out, 1, g)
        else:
            memcpy(out, chunk, g.itemsize)
        return
    inner = ndim - 1
    if chunk == NULL:
        runs = (s.runs[inner] & RUN_OUT) != 0
    else:
        runs = (s.runs[inner] & (RUN_LOCAL | RUN_OUT)) == (RUN_LOCAL | RUN_OUT)
    row = s.cnt[inner]
    if runs:
        while inner > 0 and s.cnt[inner] == g.oshape[inner] and (chunk == NULL or s.cnt[inner] == g.cshape[inner]):
            if chunk == NULL:
                if not (s.runs[inner - 1] & RUN_OUT):
                    break
            elif (s.runs[inner - 1] & (RUN_LOCAL | RUN_OUT)) != (RUN_LOCAL | RUN_OUT):
                break
            inner -= 1
            row *= s.cnt[inner]
    for d in range(inner):
        pos[d] = 0
    while True:
        so = 0
        do = 0
        for d in range(inner):
            do += s.dst[d][pos[d]] * g.ostride[d]
        if chunk != NULL:
            for d in range(inner):
                so += s.loc[d][pos[d]] * g.cstride[d]
        if runs:
            do += s.dst[inner][0] * g.ostride[inner]
            if chunk == NULL:
                _fill_run(out + do, row, g)
            else:
                so += s.loc[inner][0] * g.cstride[inner]
                memcpy(out + do, chunk + so, row * g.itemsize)
        elif chunk == NULL:
            _fill_elems(out + do, s.dst[inner], row, g)
        else:
            _copy_elems(out + do, chunk + so, s.dst[inner], s.loc[inner], row, g.itemsize)
        # odometer over the outer dimensions
        d = inner - 1
        while d >= 0:
            pos[d] += 1
            if pos[d] < s.cnt[d]:
                break
            pos[d] = 0
            d -= 1
        if d < 0:
            break


cdef int _decode(int codec, void *dec, const uint8_t *src, int64_t n, uint8_t *dst,
                 Py_ssize_t nbytes) noexcept nogil:
    """Decode one inner chunk's bytes into ``dst`` (exactly ``nbytes``); a result code."""
    cdef size_t used = 0, got = 0
    cdef int r
    cdef int64_t i
    if codec == RAW:
        if n != nbytes:
            return RAW_SIZE
        memcpy(dst, src, nbytes)
        return OK
    if n <= 0:
        return GZIP_BAD_DATA
    r = dfl.c_gzip_decompress_ex(dec, src, <size_t>n, dst, <size_t>nbytes, &used, &got)
    if r == 3:  # LIBDEFLATE_INSUFFICIENT_SPACE
        return GZIP_TOO_LONG
    if r != 0:
        return GZIP_BAD_DATA
    if got != <size_t>nbytes:
        return GZIP_TOO_SHORT
    # trailing zero padding is accepted, as by the gzip codec's other routes
    for i in range(<int64_t>used, n):
        if src[i] != 0:
            return GZIP_TRAILING
    return OK


cdef bint _contiguous_block(const Geom *g) noexcept nogil:
    """True when a whole inner chunk placed in the array is one contiguous block:
    after its first dimension longer than 1, it spans the array's dimensions entirely."""
    cdef Py_ssize_t d = 0
    while d < g.ndim and g.cshape[d] == 1:
        d += 1
    d += 1
    while d < g.ndim:
        if g.cshape[d] != g.oshape[d]:
            return False
        d += 1
    return True


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
    code[0] = OK
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
            if r != OK:
                code[0] = r
                return t
            if g.swapw:
                zc_bswap(base, g.chunk_bytes, g.swapw)
            continue
        if c.codec == RAW and not g.swapw:
            if n != g.chunk_bytes:
                code[0] = RAW_SIZE
                return t
            chunk = c.src + c.toff[t]  # scatter straight from the stored bytes
        else:
            r = _decode(c.codec, c.dec, c.src + c.toff[t], n, c.scratch, g.chunk_bytes)
            if r != OK:
                code[0] = r
                return t
            if g.swapw:
                zc_bswap(c.scratch, g.chunk_bytes, g.swapw)
            chunk = c.scratch
        _scatter(chunk, c.out, g, &s)
    return -1


cdef int _swap_width(object swap, Py_ssize_t itemsize) except -1:
    cdef int w = int(swap)
    if w == 0 or itemsize == 1 and w == 1:
        return 0
    if w == 1:
        w = <int>itemsize
    if w not in (2, 4, 8) or itemsize % w:
        raise ValueError(f"swap: expected 0/1 or a word width 2/4/8 dividing itemsize {itemsize}, received {swap!r}")
    return w


cdef int _geometry(Geom *g, const int64_t[::1] chunk_shape, object arr, Py_ssize_t itemsize,
                   object swap, const uint8_t[::1] fill, str what, bint same_rank=True) except -1:
    """Fill ``g`` from the chunk shape and the C-contiguous array ``arr`` (of the chunk's
    rank unless not ``same_rank``; then ``g.oshape``/``g.ostride`` are left unset)."""
    cdef Py_ssize_t ndim = chunk_shape.shape[0], d
    cdef int64_t limit = (<int64_t>1) << 62
    if ndim > MAX_NDIM:
        raise ValueError(f"chunk_shape: expected at most {MAX_NDIM} dimensions, received {ndim}")
    if itemsize <= 0:
        raise ValueError(f"itemsize: expected a positive size, received {itemsize}")
    if not isinstance(arr, np.ndarray):
        raise ValueError(f"{what}: expected a numpy array, received {type(arr).__name__}")
    cdef cnp.ndarray a = <cnp.ndarray>arr
    if same_rank and cnp.PyArray_NDIM(a) != ndim:
        raise ValueError(f"{what}: expected {ndim} dimensions, received {arr.ndim}")
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError(f"{what}: expected a C-contiguous array")
    if (a.descr.flags & NPY_ITEM_HASOBJECT) or cnp.PyArray_ITEMSIZE(a) != itemsize:
        raise ValueError(f"{what}: expected a dtype of {itemsize} bytes without objects, received {arr.dtype}")
    if fill.shape[0] != itemsize:
        raise ValueError(f"fill: expected {itemsize} bytes, received {fill.shape[0]}")
    g.ndim = ndim
    g.itemsize = itemsize
    g.swapw = _swap_width(swap, itemsize)
    g.fill = &fill[0]
    g.fill_byte = fill[0]
    for d in range(1, itemsize):
        if fill[d] != fill[0]:
            g.fill_byte = -1
    cdef int64_t n = 1
    for d in range(ndim):
        if chunk_shape[d] <= 0 or chunk_shape[d] > limit // n // itemsize:
            raise ValueError(f"chunk_shape[{d}]: expected a positive extent (chunk under 2^62 bytes), "
                             f"received {chunk_shape[d]}")
        g.cshape[d] = chunk_shape[d]
        n *= chunk_shape[d]
        g.oshape[d] = cnp.PyArray_DIMS(a)[d] if same_rank else 0
    g.chunk_elems = n
    g.chunk_bytes = n * itemsize
    cdef int64_t cs = itemsize, os = itemsize
    for d in range(ndim - 1, -1, -1):
        g.cstride[d] = cs
        cs *= g.cshape[d]
        g.ostride[d] = os
        os *= g.oshape[d]
    return 0


cdef void *_gzip_decompressor(int codec) except? NULL:
    if codec != RAW and codec != GZIP:
        raise ValueError(f"codec: expected 0 (raw) or 1 (gzip), received {codec}")
    if codec == RAW:
        return NULL
    if not dfl.loaded():
        raise RuntimeError("libdeflate entry points are not loaded (_deflate.load)")
    return dfl._decompressor()


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
    if codec != RAW and codec != GZIP:
        raise ValueError(f"codec: expected 0 (raw) or 1 (gzip), received {codec}")
    if codec == GZIP and not dfl.loaded():
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
        return -1, OK
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
    c.dec = dfl._decompressor() if codec == GZIP else NULL
    cdef int code = OK
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
    code[0] = OK
    for t in range(t0, t1):
        k0 = c.pstart[t]
        n = c.pstart[t + 1] - k0
        if n == 0:
            continue
        ln = c.tlen[t]
        if ln < 0:
            _fill_elems(c.out, c.pout + k0, n, g)
            continue
        if c.codec == RAW and not g.swapw:
            if ln != g.chunk_bytes:
                code[0] = RAW_SIZE
                return t
            chunk = c.src + c.toff[t]
        else:
            r = _decode(c.codec, c.dec, c.src + c.toff[t], ln, c.scratch, g.chunk_bytes)
            if r != OK:
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
        return -1, OK
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
    cdef int code = OK
    cdef Py_ssize_t bad
    with nogil:
        bad = _points_loop(&c, &g, t0, t1, &code)
    return bad, code


# ------------------------------------------------------------------------------------
# gather + encode
# ------------------------------------------------------------------------------------

cdef struct EncodeCtx:
    const uint8_t *src
    const uint8_t *fill_row    # chunk_shape[-1] fill values
    uint8_t *out
    const int64_t *ooff
    int64_t *nbytes
    uint8_t *empty
    uint8_t *scratch
    void *comp
    int codec
    bint write_empty
    bint block
    int64_t grid[MAX_NDIM]


cdef Py_ssize_t _encode_loop(const EncodeCtx *c, const Geom *g, Py_ssize_t t0, Py_ssize_t t1,
                             int *code) noexcept nogil:
    cdef Py_ssize_t ndim = g.ndim, i, d, q, so, ro, row
    cdef int64_t org[MAX_NDIM]
    cdef int64_t ext[MAX_NDIM]
    cdef int64_t pos[MAX_NDIM]
    cdef bint partial, empty
    cdef const uint8_t *base
    cdef const uint8_t *inp
    cdef size_t n
    cdef int64_t cap
    code[0] = OK
    for i in range(t0, t1):
        # origin and in-bounds extent of inner chunk i (C order of the inner grid)
        q = i
        for d in range(ndim - 1, -1, -1):
            org[d] = (q % c.grid[d]) * g.cshape[d]
            q //= c.grid[d]
        partial = False
        so = 0
        for d in range(ndim):
            ext[d] = g.oshape[d] - org[d]
            if ext[d] >= g.cshape[d]:
                ext[d] = g.cshape[d]
            else:
                partial = True
            so += org[d] * g.ostride[d]
        base = c.src + so
        # rows of the in-bounds region: ext[-1] elements at each position of the others
        row = ext[ndim - 1] * g.itemsize if ndim else g.itemsize
        if not c.write_empty:
            empty = True
            for d in range(ndim):
                pos[d] = 0
            while True:
                so = 0
                for d in range(ndim - 1):
                    so += pos[d] * g.ostride[d]
                if memcmp(base + so, c.fill_row, row) != 0:
                    empty = False
                    break
                d = ndim - 2
                while d >= 0:
                    pos[d] += 1
                    if pos[d] < ext[d]:
                        break
                    pos[d] = 0
                    d -= 1
                if d < 0:
                    break
            if empty:
                c.empty[i] = 1
                c.nbytes[i] = -1
                continue
        c.empty[i] = 0
        if not partial and c.block and not g.swapw:
            inp = base  # the chunk is one contiguous block of the array: encode it in place
        else:
            if partial:
                _fill_run(c.scratch, g.chunk_elems, g)
            for d in range(ndim):
                pos[d] = 0
            while True:
                so = 0
                ro = 0
                for d in range(ndim - 1):
                    so += pos[d] * g.ostride[d]
                    ro += pos[d] * g.cstride[d]
                memcpy(c.scratch + ro, base + so, row)
                d = ndim - 2
                while d >= 0:
                    pos[d] += 1
                    if pos[d] < ext[d]:
                        break
                    pos[d] = 0
                    d -= 1
                if d < 0:
                    break
            if g.swapw:
                zc_bswap(c.scratch, g.chunk_bytes, g.swapw)
            inp = c.scratch
        cap = c.ooff[i + 1] - c.ooff[i]
        if c.codec == RAW:
            if cap < g.chunk_bytes:
                code[0] = NO_SPACE
                return i
            memcpy(c.out + c.ooff[i], inp, g.chunk_bytes)
            c.nbytes[i] = g.chunk_bytes
        else:
            n = dfl.c_gzip_compress(c.comp, inp, <size_t>g.chunk_bytes, c.out + c.ooff[i], <size_t>cap)
            if n == 0:
                code[0] = NO_SPACE
                return i
            c.nbytes[i] = <int64_t>n
    return -1


def slot_size(int codec, int level, Py_ssize_t chunk_bytes):
    """Bytes :func:`gather_encode` needs per inner chunk of ``chunk_bytes`` (worst case)."""
    if chunk_bytes < 0:
        raise ValueError(f"chunk_bytes: expected a size >= 0, received {chunk_bytes}")
    if codec == RAW:
        return chunk_bytes
    if codec != GZIP:
        raise ValueError(f"codec: expected 0 (raw) or 1 (gzip), received {codec}")
    if not dfl.loaded():
        raise RuntimeError("libdeflate entry points are not loaded (_deflate.load)")
    if not 0 <= level <= 12:
        raise ValueError(f"level: expected 0..12, received {level}")
    return <Py_ssize_t>dfl.c_gzip_compress_bound(dfl._compressor(level), <size_t>chunk_bytes)


def gather_encode(src, const int64_t[::1] chunk_shape, Py_ssize_t itemsize, swap, int codec,
                  int level, const uint8_t[::1] fill, bint write_empty,
                  Py_ssize_t t0, Py_ssize_t t1, uint8_t[::1] out_buf, const int64_t[::1] out_offsets,
                  int64_t[::1] out_nbytes, uint8_t[::1] empty_flags, uint8_t[::1] scratch):
    """Encode inner chunks ``t0 <= i < t1`` (C order of the inner grid) of ``src``.

    ``src``: C-contiguous numpy array (the shard; read-only is fine), native order,
    ``itemsize``-byte elements; the inner grid is ``ceil(src.shape / chunk_shape)`` and
    edge chunks are padded with ``fill``.  Unless ``write_empty``, a chunk whose cells all
    equal ``fill`` (bytewise, so ``-0.0`` or another NaN payload counts as data) gets
    ``empty_flags[i] = 1``, ``out_nbytes[i] = -1`` and is not encoded.  Otherwise
    ``empty_flags[i] = 0`` and the chunk, byte-swapped per ``swap`` (as in
    :func:`decode_scatter`), is stored raw (``codec`` 0) or as one gzip member at
    ``level`` (1; libdeflate levels 0..12) into ``out_buf[out_offsets[i]:]``, and
    ``out_nbytes[i]`` is its size.  ``out_offsets`` has one entry per chunk plus one;
    each slot ``out_offsets[i + 1] - out_offsets[i]`` must hold :func:`slot_size` bytes.
    ``out_nbytes`` and ``empty_flags`` have one entry per chunk; only ``[t0, t1)`` is written.

    Returns ``(-1, 0)``, or ``(i, code)`` for the first chunk that failed.
    """
    cdef Geom g
    cdef EncodeCtx c
    _geometry(&g, chunk_shape, src, itemsize, swap, fill, "src")
    cdef Py_ssize_t ndim = g.ndim, d, i, nchunks = 1
    for d in range(ndim):
        c.grid[d] = (g.oshape[d] + g.cshape[d] - 1) // g.cshape[d]
        nchunks *= c.grid[d]
    if codec != RAW and codec != GZIP:
        raise ValueError(f"codec: expected 0 (raw) or 1 (gzip), received {codec}")
    if out_offsets.shape[0] != nchunks + 1:
        raise ValueError(f"out_offsets: expected {nchunks + 1} entries, received {out_offsets.shape[0]}")
    if out_nbytes.shape[0] != nchunks or empty_flags.shape[0] != nchunks:
        raise ValueError(f"out_nbytes/empty_flags: expected {nchunks} entries each, received "
                         f"{out_nbytes.shape[0]} and {empty_flags.shape[0]}")
    if not 0 <= t0 <= t1 <= nchunks:
        raise IndexError(f"t0, t1: expected 0 <= t0 <= t1 <= {nchunks}, received {t0}, {t1}")
    if scratch.shape[0] < g.chunk_bytes:
        raise ValueError(f"scratch: expected at least {g.chunk_bytes} bytes, received {scratch.shape[0]}")
    cdef Py_ssize_t need = slot_size(codec, level, g.chunk_bytes), nout = out_buf.shape[0]
    cdef int64_t lo, hi
    for i in range(t0, t1):
        lo = out_offsets[i]
        hi = out_offsets[i + 1]
        if lo < 0 or hi > nout or hi - lo < need:
            raise ValueError(f"out_offsets[{i}:{i + 2}]: expected a slot of at least {need} bytes "
                             f"inside out_buf ({nout} bytes), received {lo}, {hi}")
    if t0 == t1:
        return -1, OK
    rowlen = g.cshape[ndim - 1] if ndim else 1
    fill_row = np.tile(np.asarray(fill), rowlen)
    cdef const uint8_t[::1] fr = fill_row
    c.src = <const uint8_t *>cnp.PyArray_DATA(<cnp.ndarray>src)  # the argument keeps src alive
    c.fill_row = &fr[0]
    c.out = &out_buf[0]
    c.ooff = &out_offsets[0]
    c.nbytes = &out_nbytes[0]
    c.empty = &empty_flags[0]
    c.scratch = &scratch[0]
    c.codec = codec
    c.write_empty = write_empty
    c.block = _contiguous_block(&g)
    c.comp = dfl._compressor(level) if codec == GZIP else NULL
    cdef int code = OK
    cdef Py_ssize_t bad
    with nogil:
        bad = _encode_loop(&c, &g, t0, t1, &code)
    return bad, code
