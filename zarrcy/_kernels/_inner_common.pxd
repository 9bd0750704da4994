# Shared C-level pieces of the per-inner-chunk kernels (``_inner_chunks``: decodes,
# ``_inner_encode``: encodes): geometry of an inner chunk inside an array, selection
# tables, fill / copy / scatter helpers, one inner chunk's decode, byte swaps, and the
# argument checks that run with the GIL before a loop trusts its tables.
# (../shared/specs/v3-codec-sharding-indexed.rst; issue 13 item 3.)

from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcmp, memcpy, memset

from zarrcy._kernels cimport _compress as zc
from zarrcy._kernels._compress cimport Chain, zc_state

cimport numpy as cnp
import numpy as np

cdef extern from "numpy/ndarraytypes.h":
    int NPY_ITEM_HASOBJECT

cdef extern from "zc_inner_common.h":
    void zc_bswap(uint8_t *p, Py_ssize_t nbytes, int w) noexcept nogil

cdef enum:
    MAX_NDIM = 64
    RUN_LOCAL = 1     # the chunk-local indices of a (dim, chunk) range are consecutive
    RUN_OUT = 2       # the output indices of a (dim, chunk) range are consecutive

# result codes (0 = every task done): the engine's (``_compress``, c/zc_codecs.h); the
# names the kernels used before it
cdef enum:
    R_OK = zc.ZC_OK
    R_GZIP_TOO_SHORT = zc.ZC_GZIP_TOO_SHORT  # maybe more members follow: the codec decides
    R_GZIP_TRAILING = zc.ZC_GZIP_TRAILING    # maybe more members
    R_RAW_SIZE = zc.ZC_RAW_SIZE
    R_NO_SPACE = zc.ZC_NO_SPACE
    R_NO_MEMORY = zc.ZC_NO_MEMORY
    R_NOT_RUN = zc.ZC_NOT_RUN                # status of a task no thread ran (no scratch memory)

# the chain codecs of the older integer ``codec`` arguments
cdef enum:
    C_RAW = zc.ZC_RAW
    C_GZIP = zc.ZC_GZIP

cdef struct Geom:
    Py_ssize_t ndim
    Py_ssize_t itemsize
    Py_ssize_t chunk_bytes
    Py_ssize_t chunk_elems
    int swapw               # byte-swap word width (0: none)
    int fill_byte           # the fill value's byte when all its bytes are equal, else -1
    const uint8_t *fill
    int64_t cshape[MAX_NDIM]
    int64_t cstride[MAX_NDIM]   # byte strides of a decoded inner chunk as stored: C order,
                                # or of its transposed (encoded) layout (``order``)
    bint corder                 # cstride are the C-order strides of cshape
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
                             Py_ssize_t n, Py_ssize_t isz, int64_t cst) noexcept nogil:
    """``o[dj[j]] = c[lj[j]]`` for elements of ``isz`` bytes (specialised sizes), the
    source ``cst`` bytes apart (``isz`` unless the chunk is stored transposed)."""
    cdef Py_ssize_t j
    if isz == 1:
        for j in range(n):
            o[dj[j]] = c[lj[j] * cst]
    elif isz == 2:
        for j in range(n):
            memcpy(o + 2 * dj[j], c + cst * lj[j], 2)
    elif isz == 4:
        for j in range(n):
            memcpy(o + 4 * dj[j], c + cst * lj[j], 4)
    elif isz == 8:
        for j in range(n):
            memcpy(o + 8 * dj[j], c + cst * lj[j], 8)
    else:
        for j in range(n):
            memcpy(o + isz * dj[j], c + cst * lj[j], isz)


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


cdef inline void _scatter(const uint8_t *chunk, uint8_t *out, const Geom *g, const Sel *s) noexcept nogil:
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
        runs = ((s.runs[inner] & (RUN_LOCAL | RUN_OUT)) == (RUN_LOCAL | RUN_OUT)
                and g.cstride[inner] == g.itemsize)
    row = s.cnt[inner]
    if runs:
        while (inner > 0 and s.cnt[inner] == g.oshape[inner]
           and (chunk == NULL or (s.cnt[inner] == g.cshape[inner]
                                  and g.cstride[inner - 1] == g.cstride[inner] * g.cshape[inner]))
           and g.ostride[inner - 1] == g.ostride[inner] * g.oshape[inner]):
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
            _copy_elems(out + do, chunk + so, s.dst[inner], s.loc[inner], row, g.itemsize, g.cstride[inner])
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


cdef inline bint _contiguous_block(const Geom *g) noexcept nogil:
    """True when a whole inner chunk placed in the array is one contiguous block: from
    its first dimension longer than 1 on, the array's byte strides are the chunk's own
    (C order), so the chunk's later dimensions span the array's entirely."""
    cdef Py_ssize_t d = 0
    while d < g.ndim and g.cshape[d] == 1:
        d += 1
    if d < g.ndim and g.ostride[d] != g.cstride[d]:
        return False
    d += 1
    while d < g.ndim:
        if g.cshape[d] != g.oshape[d] or g.ostride[d] != g.cstride[d]:
            return False
        d += 1
    return True


cdef inline int _swap_width(object swap, Py_ssize_t itemsize) except -1:
    cdef int w = int(swap)
    if w == 0 or itemsize == 1 and w == 1:
        return 0
    if w == 1:
        w = <int>itemsize
    if w not in (2, 4, 8) or itemsize % w:
        raise ValueError(f"swap: expected 0/1 or a word width 2/4/8 dividing itemsize {itemsize}, received {swap!r}")
    return w


cdef inline int _geometry(Geom *g, const int64_t[::1] chunk_shape, object arr, Py_ssize_t itemsize,
                   object swap, const uint8_t[::1] fill, str what, bint same_rank=True,
                   bint strided=False, object order=None) except -1:
    """Fill ``g`` from the chunk shape and the C-contiguous array ``arr`` (of the chunk's
    rank unless not ``same_rank``; then ``g.oshape``/``g.ostride`` are left unset).

    ``order``: None, or the permutation of a ``transpose`` codec before ``bytes``
    (v3-codec-transpose.rst): an inner chunk is then stored as the C-order array of shape
    ``chunk_shape[order[i]]``, and ``g.cstride`` are its strides per decoded dimension.

    ``strided``: ``arr`` may also be a strided view whose last dimension is contiguous
    (its stride the item size) and whose strides are non-negative (a region of a larger
    array); ``g.ostride`` are then its byte strides.  Every address the kernels form is
    ``sum(index[d] * ostride[d])`` with ``0 <= index[d] < oshape[d]``: inside the view."""
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
    if not cnp.PyArray_IS_C_CONTIGUOUS(a) and not (strided and same_rank and _strided_ok(a, itemsize)):
        raise ValueError(f"{what}: expected a C-contiguous array"
                         + (" or a view with a contiguous last dimension and non-negative strides" if strided else ""))
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
    _chunk_strides(g, order)
    cdef int64_t os = itemsize
    cdef bint own = same_rank and not cnp.PyArray_IS_C_CONTIGUOUS(a)
    for d in range(ndim - 1, -1, -1):
        # a strided view: its own strides, except along length-1 dimensions (index 0
        # only), which get the C value so that run merging sees through them
        g.ostride[d] = cnp.PyArray_STRIDES(a)[d] if own and g.oshape[d] > 1 else os
        os = g.ostride[d] * g.oshape[d]
    return 0


cdef inline int _chunk_strides(Geom *g, object order) except -1:
    """``g.cstride`` / ``g.corder`` for the stored layout of an inner chunk (C order, or
    the transposed array of a ``transpose`` codec's ``order``)."""
    cdef Py_ssize_t ndim = g.ndim, d, i
    cdef int64_t es = g.itemsize
    g.corder = True
    if order is None:
        for d in range(ndim - 1, -1, -1):
            g.cstride[d] = es
            es *= g.cshape[d]
        return 0
    perm = [int(x) for x in order]
    if sorted(perm) != list(range(ndim)):
        raise ValueError(f"order: expected a permutation of 0..{ndim - 1}, received {order!r}")
    # the stored array has axes order[0], order[1], ...: axis i is decoded dimension order[i]
    for i in range(ndim - 1, -1, -1):
        g.cstride[perm[i]] = es
        es *= g.cshape[perm[i]]
    es = g.itemsize
    for d in range(ndim - 1, -1, -1):
        if g.cstride[d] != es and g.cshape[d] > 1:
            g.corder = False
        es *= g.cshape[d]
    if g.corder:  # only length-1 axes moved: the C layout
        es = g.itemsize
        for d in range(ndim - 1, -1, -1):
            g.cstride[d] = es
            es *= g.cshape[d]
    return 0


cdef inline bint _strided_ok(cnp.ndarray a, Py_ssize_t itemsize):
    """A view the strided kernels can write: non-negative strides, the last dimension
    (when longer than 1) contiguous, no zero-size dimension."""
    cdef Py_ssize_t d, nd = cnp.PyArray_NDIM(a)
    if nd == 0:
        return False
    for d in range(nd):
        if cnp.PyArray_DIMS(a)[d] == 0 or cnp.PyArray_STRIDES(a)[d] < 0:
            return False
    return cnp.PyArray_DIMS(a)[nd - 1] == 1 or cnp.PyArray_STRIDES(a)[nd - 1] == itemsize


cdef inline int _chain_arg(Chain *c, object codec, int level=0) except -1:
    """``c`` from a kernel's ``codec`` argument: a chain tuple (``_compress``), or the
    older integers 0 (raw) / 1 (gzip at ``level``)."""
    if isinstance(codec, tuple):
        return zc.chain_check(c, codec)
    if isinstance(codec, bool) or not isinstance(codec, int) or codec not in (C_RAW, C_GZIP):
        raise ValueError(f"codec: expected 0 (raw), 1 (gzip) or a chain tuple, received {codec!r}")
    return zc.chain_check(c, (int(codec), False, level, False, "", 0, 0, 0))
