"""Full-shard writes of the ``sharding_indexed`` codec without the GIL
(../shared/specs/v3-codec-sharding-indexed.rst; issue 13 item 3).

:func:`gather_encode`: for each inner chunk of a shard-shaped array, gather its region
(edge chunks padded with the fill value), flag chunks that hold only the fill value
(bytewise), byte-swap if needed, lay it out as stored (C order, or transposed by a
``transpose`` codec before ``bytes``) and encode it through the native codec engine
(``_compress``: raw, gzip, zstd or blosc, then an optional crc32c) into a caller buffer.
Shared helpers: ``_inner_common.pxd``; result codes and their texts: ``_compress``.
"""

from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcmp, memcpy, memset

from zarrcy._kernels._inner_common cimport *
from zarrcy._kernels._odometer cimport advance

cimport numpy as cnp
import numpy as np

cnp.import_array()

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
    zc_state *st
    Chain chain
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
    cdef int64_t cap, k, last = ndim - 1 if ndim else 0
    cdef int r
    code[0] = R_OK
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
                if not advance(pos, ext, ndim - 1):
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
                if g.corder or ndim == 0:
                    memcpy(c.scratch + ro, base + so, row)
                else:  # stored transposed: the row's elements lie cstride[-1] apart
                    for k in range(ext[last]):
                        memcpy(c.scratch + ro + k * g.cstride[last], base + so + k * g.itemsize, g.itemsize)
                if not advance(pos, ext, ndim - 1):
                    break
            if g.swapw:
                zc_bswap(c.scratch, g.chunk_bytes, g.swapw)
            inp = c.scratch
        cap = c.ooff[i + 1] - c.ooff[i]
        n = zc.chain_encode(&c.chain, c.st, inp, <size_t>g.chunk_bytes, c.out + c.ooff[i], <size_t>cap, &r)
        if r != R_OK:
            code[0] = r
            return i
        c.nbytes[i] = <int64_t>n
    return -1


def slot_size(codec, int level, Py_ssize_t chunk_bytes):
    """Bytes :func:`gather_encode` needs per inner chunk of ``chunk_bytes`` (worst case);
    ``codec`` a ``_compress`` chain tuple or 0 (raw) / 1 (gzip at ``level``)."""
    cdef Chain c
    if chunk_bytes < 0:
        raise ValueError(f"chunk_bytes: expected a size >= 0, received {chunk_bytes}")
    _chain_arg(&c, codec, level)
    cdef size_t b = zc.chain_bound(&c, <size_t>chunk_bytes)
    if b == zc.ZC_BOUND_ERROR:
        raise MemoryError("no memory for a compressor")
    return <Py_ssize_t>b


def gather_encode(src, const int64_t[::1] chunk_shape, Py_ssize_t itemsize, swap, codec,
                  int level, const uint8_t[::1] fill, bint write_empty,
                  Py_ssize_t t0, Py_ssize_t t1, uint8_t[::1] out_buf, const int64_t[::1] out_offsets,
                  int64_t[::1] out_nbytes, uint8_t[::1] empty_flags, uint8_t[::1] scratch, order=None):
    """Encode inner chunks ``t0 <= i < t1`` (C order of the inner grid) of ``src``.

    ``src``: C-contiguous numpy array (the shard; read-only is fine), native order,
    ``itemsize``-byte elements; the inner grid is ``ceil(src.shape / chunk_shape)`` and
    edge chunks are padded with ``fill``.  Unless ``write_empty``, a chunk whose cells all
    equal ``fill`` (bytewise, so ``-0.0`` or another NaN payload counts as data) gets
    ``empty_flags[i] = 1``, ``out_nbytes[i] = -1`` and is not encoded.  Otherwise
    ``empty_flags[i] = 0`` and the chunk, byte-swapped per ``swap`` (as in
    :func:`decode_scatter`) and laid out as stored (transposed by ``order``, as there),
    is encoded through ``codec`` (a ``_compress`` chain tuple, or 0 raw / 1 one gzip
    member at ``level``, libdeflate levels 0..12) into ``out_buf[out_offsets[i]:]``, and
    ``out_nbytes[i]`` is its size.  ``out_offsets`` has one entry per chunk plus one;
    each slot ``out_offsets[i + 1] - out_offsets[i]`` must hold :func:`slot_size` bytes.
    ``out_nbytes`` and ``empty_flags`` have one entry per chunk; only ``[t0, t1)`` is written.

    Returns ``(-1, 0)``, or ``(i, code)`` for the first chunk that failed.
    """
    cdef Geom g
    cdef EncodeCtx c
    _geometry(&g, chunk_shape, src, itemsize, swap, fill, "src", True, False, order)
    cdef Py_ssize_t ndim = g.ndim, d, i, nchunks = 1
    for d in range(ndim):
        c.grid[d] = (g.oshape[d] + g.cshape[d] - 1) // g.cshape[d]
        nchunks *= c.grid[d]
    _chain_arg(&c.chain, codec, level)
    if out_offsets.shape[0] != nchunks + 1:
        raise ValueError(f"out_offsets: expected {nchunks + 1} entries, received {out_offsets.shape[0]}")
    if out_nbytes.shape[0] != nchunks or empty_flags.shape[0] != nchunks:
        raise ValueError(f"out_nbytes/empty_flags: expected {nchunks} entries each, received "
                         f"{out_nbytes.shape[0]} and {empty_flags.shape[0]}")
    if not 0 <= t0 <= t1 <= nchunks:
        raise IndexError(f"t0, t1: expected 0 <= t0 <= t1 <= {nchunks}, received {t0}, {t1}")
    if scratch.shape[0] < g.chunk_bytes:
        raise ValueError(f"scratch: expected at least {g.chunk_bytes} bytes, received {scratch.shape[0]}")
    cdef size_t bound = zc.chain_bound(&c.chain, <size_t>g.chunk_bytes)
    if bound == zc.ZC_BOUND_ERROR:
        raise MemoryError("no memory for a compressor")
    cdef Py_ssize_t need = <Py_ssize_t>bound, nout = out_buf.shape[0]
    cdef int64_t lo, hi
    for i in range(t0, t1):
        lo = out_offsets[i]
        hi = out_offsets[i + 1]
        if lo < 0 or hi > nout or hi - lo < need:
            raise ValueError(f"out_offsets[{i}:{i + 2}]: expected a slot of at least {need} bytes "
                             f"inside out_buf ({nout} bytes), received {lo}, {hi}")
    if t0 == t1:
        return -1, R_OK
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
    c.write_empty = write_empty
    c.block = _contiguous_block(&g)
    c.st = zc.state(0)
    if c.st == NULL:
        raise MemoryError("gather_encode: no memory for this thread's codec state")
    cdef int code = R_OK
    cdef Py_ssize_t bad
    with nogil:
        bad = _encode_loop(&c, &g, t0, t1, &code)
    return bad, code

