"""The fused quantize loops: scale_offset and cast_value in one pass over memory.

(ext-codec-scale_offset.md "Algorithm" then ext-codec-cast_value.md "Procedure", or the
reverse on decode.)  Per block of ``BLOCK`` elements: the one-pass dispatched C loop of
``_cast_f2i`` / ``_cast_fast`` where it applies (float64 -> int nearest-even encode, integer -> float
decode), else the two steps in turn -- the scale_offset arithmetic in the array type, then
the plain cast block driver.  A block the one-pass loop flags is redone by the two-step
path, which decides every edge case, so results and the reported (index, stage) are those
of the two codecs run one after the other.

Loops are ``noexcept nogil`` and return -1 or the index of the first failing element.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.math cimport fabs

from zarrcy._kernels._cast_types cimport (
    src_t, dst_t, flt_t, cfg_t, code_of_src, code_of_dst,
    T_INT8, T_INT16, T_INT32, T_INT64, T_UINT8, T_UINT16, T_UINT32, T_UINT64, T_FLOAT32, T_FLOAT64,
    R_NEAREST_EVEN, R_TOWARDS_ZERO, R_TOWARDS_POSITIVE, R_TOWARDS_NEGATIVE, R_NEAREST_AWAY,
    OOR_NONE, OOR_CLAMP, OOR_WRAP, BLOCK, zc_d2u, ZC_DBL_MAX,
    ST_EXACT, ST_ROUNDED, ST_CLAMPED, ST_WRAPPED, ST_MAPPED,
)
from zarrcy._kernels._cast_exact cimport Arrays, CastFormat, setup_cfg, release_cfg, setup_keys, classify
from zarrcy._kernels._cast_fast cimport drive, dso_block
from zarrcy._kernels._cast_f2i cimport rne_block


# ---- fused quantize path: scale_offset (float array type) then cast, one pass over memory

cdef inline uint64_t _nfbits(double v) noexcept nogil:
    """bit 63 set iff v is NaN or +-Inf."""
    return (zc_d2u(v) & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000


cdef inline bint _finite(double v) noexcept nogil:
    return fabs(v) <= ZC_DBL_MAX


cdef Py_ssize_t _so_cast(const flt_t* x, dst_t* y, Py_ssize_t n, double od, double sd,
                         cfg_t* c, int* stage) noexcept nogil:
    """encode: t = (x - offset) * scale in src_t arithmetic, then cast t -> dst_t, per block.

    float64 -> int (<= 32 bits), nearest-even, clamp / none, no key or one NaN key: each
    block first tries the one-pass C loop; a block it flags (overflow, NaN/Inf outside the
    key, out of range) is redone below by the two-step path, which decides every edge case
    (so results and the reported index / stage are the same as without the fast loop).
    """
    cdef flt_t tmp[BLOCK]
    cdef double tmpd[BLOCK]
    cdef Py_ssize_t start = 0, m, i, r
    cdef uint64_t accb
    cdef uint8_t acc
    cdef flt_t o = <flt_t>od
    cdef flt_t s = <flt_t>sd
    cdef int fast = 0
    cdef double flo = <double>c.f.lo, fhi = <double>c.f.hi
    cdef int sc = code_of_src(x), dc = code_of_dst(<const dst_t*>y)
    setup_keys(c, sc, dc)
    if (dst_t is int8_t or dst_t is int16_t or dst_t is int32_t or dst_t is uint8_t
            or dst_t is uint16_t or dst_t is uint32_t):
        fast = (c.f.natural and c.rmode == R_NEAREST_EVEN and c.oor != OOR_WRAP
                and not c.keys_general and (c.nkeys == 0 or c.nan_key))
    while start < n:
        m = n - start
        if m > BLOCK:
            m = BLOCK
        if flt_t is double:
            if fast and rne_block(x + start, y + start, dc, m, flo, fhi, c.nan_key, c.oor == OOR_CLAMP, 1,
                                  c.nan_val, o, s) == 0:
                start += m
                continue
        else:
            # float32: t = (x - o) * s in float32 arithmetic (scale_offset spec: the input
            # type's arithmetic), widened exactly to double, then the same one-pass RNE cast
            # loop as float64 sources.  A block the loop flags (an overflow to Inf is flagged
            # as a non-finite value) is redone below by the two-step path.
            if fast:
                for i in range(m):
                    tmpd[i] = <double>((x[start + i] - o) * s)
                if rne_block(<const double*>tmpd, y + start, dc, m, flo, fhi, c.nan_key, c.oor == OOR_CLAMP, 0,
                             c.nan_val, 0.0, 1.0) == 0:
                    start += m
                    continue
        acc = 0
        if flt_t is double:
            accb = 0
            for i in range(m):
                tmp[i] = (x[start + i] - o) * s
                accb |= (~_nfbits(x[start + i])) & _nfbits(tmp[i])
            acc = (accb >> 63) != 0
        else:
            for i in range(m):
                tmp[i] = (x[start + i] - o) * s
                acc |= _finite(<double>x[start + i]) & (not _finite(<double>tmp[i]))
        if acc:
            for i in range(m):
                if _finite(<double>x[start + i]) and not _finite(<double>tmp[i]):
                    stage[0] = 0
                    return start + i
        r = drive(<const flt_t*>tmp, sc, y + start, dc, m, c)
        if r >= 0:
            stage[0] = 1
            return start + r
        start += m
    return -1


cdef Py_ssize_t _cast_so(const src_t* x, flt_t* y, Py_ssize_t n, double od, double sd,
                         cfg_t* c, int* stage) noexcept nogil:
    """decode: t = cast(x) -> dst_t, then y = t / scale + offset in dst_t arithmetic, per block.

    Integer sources exact in dst_t (<= 32 bits into float64, <= 16 bits into float32) with
    no key or one (finite) scalar_map key: each block first tries the one-pass C loop; a
    flagged block (scale_offset overflow) is redone by the two-step path below.
    """
    cdef flt_t tmp[BLOCK]
    cdef Py_ssize_t start = 0, m, i, r
    cdef uint8_t acc
    cdef flt_t o = <flt_t>od
    cdef flt_t s = <flt_t>sd
    cdef int fast = 0
    cdef int sc = code_of_src(x), dc = code_of_dst(<const flt_t*>y)
    setup_keys(c, sc, dc)
    if c.f.natural and (c.nkeys == 0 or (c.nkeys == 1 and c.keys_general)):
        if src_t is uint8_t or src_t is int8_t or src_t is uint16_t or src_t is int16_t:
            fast = 1
        elif src_t is uint32_t or src_t is int32_t:
            if flt_t is double:
                fast = 1
    while start < n:
        m = n - start
        if m > BLOCK:
            m = BLOCK
        if fast and dso_block(x + start, sc, y + start, dc, m, <int>c.nkeys, c.keys, c.vals, <double>o,
                              <double>s) == 0:
            start += m
            continue
        r = drive(x + start, sc, tmp, dc, m, c)
        if r >= 0:
            stage[0] = 1
            return start + r
        acc = 0
        for i in range(m):
            y[start + i] = tmp[i] / s + o
            acc |= _finite(<double>tmp[i]) & (not _finite(<double>y[start + i]))
        if acc:
            for i in range(m):
                if _finite(<double>tmp[i]) and not _finite(<double>y[start + i]):
                    stage[0] = 0
                    return start + i
        start += m
    return -1


cdef Py_ssize_t _so_cast_dst(const flt_t* x, void* y, int dst_code, Py_ssize_t n, double o, double s,
                             cfg_t* c, int* stage) noexcept nogil:
    if dst_code == T_INT8:
        return _so_cast(x, <int8_t*>y, n, o, s, c, stage)
    elif dst_code == T_INT16:
        return _so_cast(x, <int16_t*>y, n, o, s, c, stage)
    elif dst_code == T_INT32:
        return _so_cast(x, <int32_t*>y, n, o, s, c, stage)
    elif dst_code == T_INT64:
        return _so_cast(x, <int64_t*>y, n, o, s, c, stage)
    elif dst_code == T_UINT8:
        return _so_cast(x, <uint8_t*>y, n, o, s, c, stage)
    elif dst_code == T_UINT16:
        return _so_cast(x, <uint16_t*>y, n, o, s, c, stage)
    elif dst_code == T_UINT32:
        return _so_cast(x, <uint32_t*>y, n, o, s, c, stage)
    elif dst_code == T_UINT64:
        return _so_cast(x, <uint64_t*>y, n, o, s, c, stage)
    elif dst_code == T_FLOAT32:
        return _so_cast(x, <float*>y, n, o, s, c, stage)
    else:
        return _so_cast(x, <double*>y, n, o, s, c, stage)


cdef Py_ssize_t _cast_so_src(const void* x, int src_code, flt_t* y, Py_ssize_t n, double o, double s,
                             cfg_t* c, int* stage) noexcept nogil:
    if src_code == T_INT8:
        return _cast_so(<const int8_t*>x, y, n, o, s, c, stage)
    elif src_code == T_INT16:
        return _cast_so(<const int16_t*>x, y, n, o, s, c, stage)
    elif src_code == T_INT32:
        return _cast_so(<const int32_t*>x, y, n, o, s, c, stage)
    elif src_code == T_INT64:
        return _cast_so(<const int64_t*>x, y, n, o, s, c, stage)
    elif src_code == T_UINT8:
        return _cast_so(<const uint8_t*>x, y, n, o, s, c, stage)
    elif src_code == T_UINT16:
        return _cast_so(<const uint16_t*>x, y, n, o, s, c, stage)
    elif src_code == T_UINT32:
        return _cast_so(<const uint32_t*>x, y, n, o, s, c, stage)
    elif src_code == T_UINT64:
        return _cast_so(<const uint64_t*>x, y, n, o, s, c, stage)
    elif src_code == T_FLOAT32:
        return _cast_so(<const float*>x, y, n, o, s, c, stage)
    else:
        return _cast_so(<const double*>x, y, n, o, s, c, stage)


# ---------------------------------------------------------------------------------------
# Python entry points (zarrcy.codecs.scale_offset validates everything before calling)
# ---------------------------------------------------------------------------------------

cdef int _take_all(Arrays a, str name, src, dst, CastFormat fmt, keys, values) except -1:
    a.take(0, src, False, name + ": src")
    a.take(1, dst, True, name + ": dst")
    a.take(2, keys, False, name + ": keys")
    a.take(3, values, False, name + ": values")
    if a.n[1] != a.n[0]:
        raise ValueError(f"{name}: dst: expected {a.n[0]} elements, received {a.n[1]}")
    if a.code[1] != fmt.code:
        raise ValueError(f"{name}: dst: expected the storage type of {fmt!r}")
    if (keys is not None and a.code[2] != a.code[0]) or (values is not None and a.code[3] != a.code[1]):
        raise ValueError(f"{name}: keys, values: expected the source and the target storage types")
    return 0


def scale_offset_cast_into(src, dst, CastFormat fmt not None, int rounding, int out_of_range,
                           double offset, double scale, keys=None, values=None):
    """Fused encode: ``cast((x - offset) * scale)`` for a float32/float64 source into ``dst``
    (1-d C-contiguous, the storage type of the cast's target format ``fmt``); modes and
    scalar_map as in :func:`zarrcy._kernels._cast_fast.cast_into`.

    Returns ``(index, stage)``: index -1 on success; stage 0 = scale_offset failed, 1 = cast failed.
    """
    cdef Arrays a = Arrays()
    cdef cfg_t c
    cdef Py_ssize_t n, r = -1
    cdef int stage = -1, sc, dc
    cdef const void* xp
    cdef void* yp
    _take_all(a, "scale_offset_cast_into", src, dst, fmt, keys, values)
    n = a.n[0]
    sc = a.code[0]
    dc = a.code[1]
    if sc != T_FLOAT32 and sc != T_FLOAT64:
        raise ValueError("scale_offset_cast_into: src: expected float32 or float64")
    setup_cfg(&c, &fmt.f, rounding, out_of_range, a.ptr[2], a.n[2], a.ptr[3], a.n[3])
    if n:
        xp = a.ptr[0]
        yp = a.ptr[1]
        with nogil:
            if sc == T_FLOAT32:
                r = _so_cast_dst(<const float*>xp, yp, dc, n, offset, scale, &c, &stage)
            else:
                r = _so_cast_dst(<const double*>xp, yp, dc, n, offset, scale, &c, &stage)
    release_cfg(&c)
    return r, stage


def cast_scale_offset_into(src, dst, CastFormat fmt not None, int rounding, int out_of_range,
                           double offset, double scale, keys=None, values=None):
    """Fused decode: ``cast(x) / scale + offset`` into a float32/float64 output ``dst`` (``fmt``:
    its format, the cast's target).  Returns ``(index, stage)`` like :func:`scale_offset_cast_into`.
    """
    cdef Arrays a = Arrays()
    cdef cfg_t c
    cdef Py_ssize_t n, r = -1
    cdef int stage = -1, sc, dc
    cdef const void* xp
    cdef void* yp
    _take_all(a, "cast_scale_offset_into", src, dst, fmt, keys, values)
    n = a.n[0]
    sc = a.code[0]
    dc = a.code[1]
    if dc != T_FLOAT32 and dc != T_FLOAT64:
        raise ValueError("cast_scale_offset_into: dst: expected float32 or float64")
    setup_cfg(&c, &fmt.f, rounding, out_of_range, a.ptr[2], a.n[2], a.ptr[3], a.n[3])
    if n:
        xp = a.ptr[0]
        yp = a.ptr[1]
        with nogil:
            if dc == T_FLOAT32:
                r = _cast_so_src(xp, sc, <float*>yp, n, offset, scale, &c, &stage)
            else:
                r = _cast_so_src(xp, sc, <double*>yp, n, offset, scale, &c, &stage)
    release_cfg(&c)
    return r, stage



# ---------------------------------------------------------------------------------------
# block entry points for the report kernel (_cast_report): fused functions cannot cross a
# module boundary, so these dispatch on the storage type codes
# ---------------------------------------------------------------------------------------

cdef Py_ssize_t so_cast_block(const void* x, int src_code, void* y, int dst_code, Py_ssize_t n, double offset,
                              double scale, cfg_t* c, int* stage) noexcept nogil:
    """The codec's fused encode of ``n`` float32 / float64 elements (``_so_cast``)."""
    if src_code == T_FLOAT32:
        return _so_cast_dst(<const float*>x, y, dst_code, n, offset, scale, c, stage)
    return _so_cast_dst(<const double*>x, y, dst_code, n, offset, scale, c, stage)


cdef Py_ssize_t cast_so_block(const void* x, int src_code, void* y, int dst_code, Py_ssize_t n, double offset,
                              double scale, cfg_t* c, int* stage) noexcept nogil:
    """The codec's fused decode into ``n`` float32 / float64 elements (``_cast_so``)."""
    if dst_code == T_FLOAT32:
        return _cast_so_src(x, src_code, <float*>y, n, offset, scale, c, stage)
    return _cast_so_src(x, src_code, <double*>y, n, offset, scale, c, stage)
