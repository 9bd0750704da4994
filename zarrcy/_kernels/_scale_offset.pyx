"""scale_offset kernels (ext-codec-scale_offset.md "Algorithm").

encode ``(x - offset) * scale``, decode ``x / scale + offset``, in the array type's own
arithmetic: floats are one IEEE operation per step in that type (round to nearest-even),
integers are exact and every intermediate and final value must fit the type (decode
division must leave no remainder).  A finite float input producing +-Inf/NaN is an error;
NaN/Inf inputs propagate.  Loops return -1 or the index of the first failing element.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, INT64_MIN, uintptr_t
from libc.math cimport fabs

from zarrcy._kernels._cast_types cimport so_t

cdef extern from "zc_scale_offset.h":
    bint zc_sub_i64(int64_t a, int64_t b, int64_t* r) noexcept nogil
    bint zc_add_i64(int64_t a, int64_t b, int64_t* r) noexcept nogil
    bint zc_mul_i64(int64_t a, int64_t b, int64_t* r) noexcept nogil
    bint zc_sub_u64(uint64_t a, uint64_t b, uint64_t* r) noexcept nogil
    bint zc_add_u64(uint64_t a, uint64_t b, uint64_t* r) noexcept nogil
    bint zc_mul_u64(uint64_t a, uint64_t b, uint64_t* r) noexcept nogil
    double ZC_SO_DBL_MAX
    int zc_so_enc_f64_stream(const double* x, double* y, Py_ssize_t m, double o, double s) noexcept nogil
    void zc_so_sfence() noexcept nogil
    int ZC_SO_HAVE_STREAM
    uintptr_t zc_so_addr(const void* p) noexcept nogil
    int zc_so_avx2_state
    int zc_so_use_avx2() noexcept nogil
    int zc_so_enc_d(const double* x, double* y, Py_ssize_t m, double o, double s) noexcept nogil
    int zc_so_enc_f(const float* x, float* y, Py_ssize_t m, float o, float s) noexcept nogil
    int zc_so_dec_d(const double* x, double* y, Py_ssize_t m, double o, double s) noexcept nogil
    int zc_so_dec_f(const float* x, float* y, Py_ssize_t m, float o, float s) noexcept nogil
    uint64_t zc_nf64(double v) noexcept nogil
    uint32_t zc_nf32(float v) noexcept nogil

cdef enum:
    SO_BLOCK = 2048

# float64 encode outputs at least this many elements (32 MiB, beyond typical last-level
# cache shares) are written with non-temporal stores; smaller ones stay in cache for the
# next codec
cdef Py_ssize_t SO_STREAM_MIN = 1 << 22


cdef inline bint _fin(double v) noexcept nogil:
    return fabs(v) <= ZC_SO_DBL_MAX


cdef inline int64_t _lo(so_t* d) noexcept nogil:
    if so_t is int8_t:
        return -128
    elif so_t is int16_t:
        return -32768
    elif so_t is int32_t:
        return -2147483647 - 1
    else:
        return 0


cdef inline int64_t _hi(so_t* d) noexcept nogil:
    if so_t is int8_t:
        return 127
    elif so_t is int16_t:
        return 32767
    elif so_t is int32_t:
        return 2147483647
    elif so_t is uint8_t:
        return 255
    elif so_t is uint16_t:
        return 65535
    else:
        return <int64_t>4294967295U


cdef inline uint8_t _enc_block(const so_t* x, so_t* y, Py_ssize_t start, Py_ssize_t m, so_t o, so_t s) noexcept nogil:
    """One vectorisable pass: y = (x - o) * s; nonzero iff a finite x gave a non-finite y."""
    if so_t is double:
        return zc_so_enc_d(x + start, y + start, m, o, s) != 0
    elif so_t is float:
        return zc_so_enc_f(x + start, y + start, m, o, s) != 0
    else:
        return 0


cdef inline uint8_t _dec_block(const so_t* x, so_t* y, Py_ssize_t start, Py_ssize_t m, so_t o, so_t s) noexcept nogil:
    if so_t is double:
        return zc_so_dec_d(x + start, y + start, m, o, s) != 0
    elif so_t is float:
        return zc_so_dec_f(x + start, y + start, m, o, s) != 0
    else:
        return 0


cdef Py_ssize_t _encode(const so_t* x, so_t* y, Py_ssize_t n, so_t o, so_t s) noexcept nogil:
    cdef Py_ssize_t i, start, m
    cdef uint8_t acc
    cdef int64_t t, lo, hi
    cdef int64_t a64
    cdef uint64_t u64, ut
    if so_t is double:
        if ZC_SO_HAVE_STREAM and n >= SO_STREAM_MIN and (zc_so_addr(y) & 15) == 0:
            start = 0
            while start < n:       # blocks of SO_BLOCK keep y + start 16-byte aligned
                m = n - start
                if m > SO_BLOCK:
                    m = SO_BLOCK
                if zc_so_enc_f64_stream(x + start, y + start, m, o, s):
                    zc_so_sfence()
                    for i in range(start, start + m):
                        if _fin(x[i]) and not _fin(y[i]):
                            return i
                start += m
            zc_so_sfence()
            return -1
    if so_t is float or so_t is double:
        start = 0
        while start < n:
            m = n - start
            if m > SO_BLOCK:
                m = SO_BLOCK
            acc = _enc_block(x, y, start, m, o, s)
            if acc:
                for i in range(start, start + m):
                    if _fin(x[i]) and not _fin(y[i]):
                        return i
            start += m
        return -1
    elif so_t is int64_t:
        for i in range(n):
            if zc_sub_i64(x[i], o, &a64) or zc_mul_i64(a64, s, &a64):
                return i
            y[i] = a64
        return -1
    elif so_t is uint64_t:
        for i in range(n):
            if zc_sub_u64(x[i], o, &u64) or zc_mul_u64(u64, s, &u64):
                return i
            y[i] = u64
        return -1
    elif so_t is uint32_t:
        for i in range(n):
            if x[i] < o:
                return i
            ut = (<uint64_t>(x[i] - o)) * <uint64_t>s      # < 2^64: exact
            if ut > <uint64_t>4294967295U:
                return i
            y[i] = <so_t>ut
        return -1
    else:
        lo = _lo(y)
        hi = _hi(y)
        for i in range(n):
            t = <int64_t>x[i] - <int64_t>o                  # |t| < 2^33, exact
            if t < lo or t > hi:
                return i
            t = t * <int64_t>s                              # |t| < 2^63, exact
            if t < lo or t > hi:
                return i
            y[i] = <so_t>t
        return -1


cdef Py_ssize_t _decode(const so_t* x, so_t* y, Py_ssize_t n, so_t o, so_t s) noexcept nogil:
    cdef Py_ssize_t i, start, m
    cdef uint8_t acc
    cdef int64_t t, lo, hi, a64
    cdef uint64_t u64
    if so_t is float or so_t is double:
        start = 0
        while start < n:
            m = n - start
            if m > SO_BLOCK:
                m = SO_BLOCK
            acc = _dec_block(x, y, start, m, o, s)
            if acc:
                for i in range(start, start + m):
                    if _fin(x[i]) and not _fin(y[i]):
                        return i
            start += m
        return -1
    elif so_t is int64_t:
        for i in range(n):
            # INT64_MIN / -1 does not fit (and would trap): check before dividing
            if s == -1 and x[i] == INT64_MIN:
                return i
            if x[i] % s != 0:
                return i
            if zc_add_i64(x[i] / s, o, &a64):
                return i
            y[i] = a64
        return -1
    elif so_t is uint64_t:
        for i in range(n):
            if x[i] % s != 0:
                return i
            if zc_add_u64(x[i] / s, o, &u64):
                return i
            y[i] = u64
        return -1
    else:
        lo = _lo(y)
        hi = _hi(y)
        for i in range(n):
            t = <int64_t>x[i]
            if t % <int64_t>s != 0:
                return i
            t = t / <int64_t>s
            if t < lo or t > hi:
                return i
            t = t + <int64_t>o
            if t < lo or t > hi:
                return i
            y[i] = <so_t>t
        return -1


def dispatch_isa(force=None):
    """Which build of the float loops runs: ``"avx2"`` or ``"baseline"``; ``force="baseline"``
    / ``"auto"`` switch it for later calls (tests compare both builds; not thread-safe)."""
    global zc_so_avx2_state
    if force == "baseline":
        zc_so_avx2_state = 0
    elif force == "auto":
        zc_so_avx2_state = -1
    elif force is not None:
        raise ValueError(f"dispatch_isa: expected None, 'baseline' or 'auto', received {force!r}")
    return "avx2" if zc_so_use_avx2() else "baseline"


def encode_into(const so_t[::1] x, so_t[::1] y, offset, scale):
    """``y = (x - offset) * scale``; -1 or the first failing index.  offset/scale already parsed."""
    cdef so_t o = offset
    cdef so_t s = scale
    cdef Py_ssize_t n = x.shape[0], r
    if y.shape[0] != n:
        raise ValueError("encode_into: output length differs from input")
    if n == 0:
        return -1
    with nogil:
        r = _encode(&x[0], &y[0], n, o, s)
    return r


def decode_into(const so_t[::1] x, so_t[::1] y, offset, scale):
    """``y = x / scale + offset``; -1 or the first failing index.  ``scale`` must be non-zero."""
    cdef so_t o = offset
    cdef so_t s = scale
    cdef Py_ssize_t n = x.shape[0], r
    if y.shape[0] != n:
        raise ValueError("decode_into: output length differs from input")
    if s == 0:
        raise ValueError("decode_into: scale is zero")
    if n == 0:
        return -1
    with nogil:
        r = _decode(&x[0], &y[0], n, o, s)
    return r
