"""The float -> integer (<= 32 bits) block loops of cast_value (ext-codec-cast_value.md
"Procedure"): the hottest fast path, in its own module so it compiles beside the others.

One specialised loop per (source float type, target int type, rounding, out_of_range,
NaN key): no mode test is left inside a loop.  Like every fast loop these only *flag*
elements they do not decide (NaN/Inf, out of range, huge values); ``_cast_fast._drive``
sends the flagged ones to the exact generic caster.  float64 nearest-even runs the
dispatched C loop (AVX2 / baseline, ``_cast_simd.pxd``), also used per block by the fused
scale_offset encode (``rne_block``).

Loops are ``noexcept nogil``; a block function returns 1 if some element is flagged.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.math cimport fabs

from zarrcy._kernels._cast_types cimport (
    dst_t, flt_t, ivec_t, cfg_t, _nz,
    T_INT8, T_INT16, T_INT32, T_UINT8, T_UINT16, T_UINT32, T_FLOAT32,
    R_NEAREST_EVEN, R_TOWARDS_ZERO, R_TOWARDS_POSITIVE, R_TOWARDS_NEGATIVE, R_NEAREST_AWAY,
    OOR_NONE, OOR_CLAMP, OOR_WRAP,
    zc_d2u, ZC_DBL_MAX,
)
from zarrcy._kernels._cast_simd cimport (
    zc_set_avx2_state, zc_use_avx2, zc_rne_i8, zc_rne_i16, zc_rne_i32, zc_rne_u8, zc_rne_u16, zc_rne_u32,
)


# ---------------------------------------------------------------------------------------
# fast paths (pass 1): compute the common case, flag everything else
# ---------------------------------------------------------------------------------------

cdef inline double _rnd(double c, int rmode) noexcept nogil:
    # |c| < 2^51 here: (c + 1.5*2^52) - 1.5*2^52 is round-to-nearest-even
    cdef double r = (c + 6755399441055744.0) - 6755399441055744.0
    cdef double d
    if rmode == R_TOWARDS_ZERO:
        r = r - 1.0 if (c >= 0.0 and r > c) else r
        r = r + 1.0 if (c < 0.0 and r < c) else r
    elif rmode == R_TOWARDS_POSITIVE:
        r = r + 1.0 if r < c else r
    elif rmode == R_TOWARDS_NEGATIVE:
        r = r - 1.0 if r > c else r
    elif rmode == R_NEAREST_AWAY:
        d = c - r
        r = r + 1.0 if (d == 0.5 and c > 0.0) else r
        r = r - 1.0 if (d == -0.5 and c < 0.0) else r
    return r


cdef inline void _f2i(double v, double lo, double hi, int rmode, int oor, uint8_t* fl, dst_t* out) noexcept nogil:
    cdef double c, r
    cdef uint8_t bad = not (fabs(v) <= ZC_DBL_MAX)
    if oor == OOR_WRAP:
        bad = bad | (not (fabs(v) < 1125899906842624.0))   # 2^50: larger -> generic
        c = v if fabs(v) < 1125899906842624.0 else 0.0
        r = _rnd(c, rmode)
        fl[0] = bad
        out[0] = <dst_t><int64_t>r
        return
    c = v if v > lo - 1.0 else lo - 1.0
    c = c if c < hi + 1.0 else hi + 1.0
    r = _rnd(c, rmode)
    if oor == OOR_NONE:
        bad = bad | (r < lo) | (r > hi)
    r = lo if r < lo else r
    r = hi if r > hi else r
    fl[0] = bad
    if dst_t is uint32_t:
        out[0] = <dst_t><int64_t>r
    else:
        out[0] = <dst_t><int32_t>r


cdef inline uint8_t _fp1_loop(const flt_t* x, ivec_t* y, uint8_t* fl, Py_ssize_t m,
                              double lo, double hi, int rmode, int oor) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint8_t acc = 0
    for i in range(m):
        _f2i(<double>x[i], lo, hi, rmode, oor, &fl[i], &y[i])
        acc |= fl[i]
    return acc


cdef inline uint64_t _k_adjust(double cc, double r, uint64_t k, int rmode) noexcept nogil:
    """Directed / nearest-away correction of the nearest-even integer k (bit arithmetic only)."""
    cdef uint64_t db = zc_d2u(cc - (r - 6755399441055744.0))   # exact: cc minus its nearest integer
    cdef uint64_t cb = zc_d2u(cc)
    cdef uint64_t negnz = (db >> 63) & _nz(db << 1)                 # cc below the nearest integer
    cdef uint64_t posnz = (1 - (db >> 63)) & _nz(db)                 # cc above it
    cdef uint64_t cneg = cb >> 63
    cdef uint64_t cpos = (1 - cneg) & _nz(cb)
    cdef uint64_t e1, e2
    if rmode == R_TOWARDS_NEGATIVE:
        return k - negnz
    elif rmode == R_TOWARDS_POSITIVE:
        return k + posnz
    elif rmode == R_TOWARDS_ZERO:
        return k - (negnz & (1 - cneg)) + (posnz & cneg)
    else:  # nearest-away: a tie nearest-even sent towards zero goes one further
        e1 = db ^ <uint64_t>0x3FE0000000000000                     # d == +0.5
        e2 = db ^ <uint64_t>0xBFE0000000000000                     # d == -0.5
        e1 = 1 - _nz(e1)
        e2 = 1 - _nz(e2)
        return k + (e1 & cpos) - (e2 & cneg)


cdef inline int _rne_any(const double* x, dst_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp,
                         int fused, uint64_t nanv, double o, double s) noexcept nogil:
    """The dispatched one-pass C loop for one block of doubles: cast_rne((x - o) * s) when
    ``fused``, else cast_rne(x); 0 = block done, 1 = not handled (other target types) or
    flagged."""
    if dst_t is int8_t:
        return zc_rne_i8(x, y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    elif dst_t is int16_t:
        return zc_rne_i16(x, y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    elif dst_t is int32_t:
        return zc_rne_i32(x, y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    elif dst_t is uint8_t:
        return zc_rne_u8(x, y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    elif dst_t is uint16_t:
        return zc_rne_u16(x, y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    elif dst_t is uint32_t:
        return zc_rne_u32(x, y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    else:
        return 1


# compile-time variants of the vectorised float -> int loop (one specialisation per
# rounding x out_of_range x NaN-key: no mode test is left inside the loop, and nothing
# depends on the C compiler inlining a shared body into 20 call sites)
cdef struct _RNE:
    char _
cdef struct _RTZ:
    char _
cdef struct _RTP:
    char _
cdef struct _RTN:
    char _
cdef struct _RNA:
    char _
cdef struct _ONONE:
    char _
cdef struct _OCLAMP:
    char _
cdef struct _NK0:
    char _
cdef struct _NK1:
    char _

ctypedef fused rtag:
    _RNE
    _RTZ
    _RTP
    _RTN
    _RNA

ctypedef fused otag:
    _ONONE
    _OCLAMP

ctypedef fused ntag:
    _NK0
    _NK1


cdef inline uint64_t _fp1_vec_main(const flt_t* x, ivec_t* y, Py_ssize_t m, double lo, double hi,
                                   rtag* rt, otag* ot, ntag* nt, uint64_t nanv) noexcept nogil:
    """float -> int (<= 32 bits), clamp / none: a loop GCC vectorises (SSE2).

    Clamp to [lo, hi] first (so every rounding stays in range), round with the 1.5*2^52
    trick and read the integer from the low mantissa bits; directed modes fix k with bit
    arithmetic.  No per-element flag store (mixed-width masks defeat the vectoriser): two
    integer reductions say whether the block holds NaN/Inf or (no out_of_range) any value
    that clamping moved (nonzero return); then the caller computes per-element flags.
    """
    cdef Py_ssize_t i
    cdef uint64_t accn = 0, accd = 0, k, b, nanm
    cdef double v, cc, r
    for i in range(m):
        v = <double>x[i]
        b = zc_d2u(v)
        cc = v if v > lo else lo
        cc = cc if cc < hi else hi
        r = cc + 6755399441055744.0
        k = zc_d2u(r)
        if rtag is _RTZ:
            k = _k_adjust(cc, r, k, R_TOWARDS_ZERO)
        elif rtag is _RTP:
            k = _k_adjust(cc, r, k, R_TOWARDS_POSITIVE)
        elif rtag is _RTN:
            k = _k_adjust(cc, r, k, R_TOWARDS_NEGATIVE)
        elif rtag is _RNA:
            k = _k_adjust(cc, r, k, R_NEAREST_AWAY)
        if ntag is _NK1:
            # a single NaN scalar_map key: NaN lanes take its value, and are not flagged
            nanm = (<uint64_t>0) - (((b & <uint64_t>0x7fffffffffffffff) + <uint64_t>0x000fffffffffffff) >> 63)
            k = (k & ~nanm) | (nanv & nanm)
            accn |= ((b & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000) & ~nanm
            if otag is _ONONE:
                accd |= (zc_d2u(cc - v) << 1) & ~nanm
        else:
            accn |= (b & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000
            if otag is _ONONE:
                accd |= zc_d2u(cc - v) << 1
        y[i] = <ivec_t>k
    return (accn >> 63) | accd


cdef uint8_t _fp1_vec_loop(const flt_t* x, ivec_t* y, uint8_t* fl, Py_ssize_t m, double lo, double hi,
                           rtag* rt, otag* ot, ntag* nt, uint64_t nanv) noexcept nogil:
    """One block of float -> int (<= 32 bits), clamp / none; 1 if some element is flagged."""
    cdef Py_ssize_t i
    cdef double v, cc
    cdef int nk = 0, clamp = 0
    if ntag is _NK1:
        nk = 1
    if otag is _OCLAMP:
        clamp = 1
    if flt_t is double and rtag is _RNE:
        # the same loop in C, dispatched to an AVX2 build where the CPU has it
        if _rne_any(x, y, m, lo, hi, nk, clamp, 0, nanv, 0.0, 1.0) == 0:
            return 0
    else:
        if _fp1_vec_main(x, y, m, lo, hi, rt, ot, nt, nanv) == 0:
            return 0
    # per-element flags, still in integer lanes (vectorisable): NaN/Inf, or moved by clamping
    for i in range(m):
        v = <double>x[i]
        cc = v if v > lo else lo
        cc = cc if cc < hi else hi
        if otag is _ONONE:
            fl[i] = <uint8_t>((((zc_d2u(v) & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000) >> 63)
                              | _nz(zc_d2u(cc - v) << 1))
        else:
            fl[i] = <uint8_t>(((zc_d2u(v) & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000) >> 63)
    return 1


cdef uint8_t _fp1_vec_o(const flt_t* x, ivec_t* y, uint8_t* fl, Py_ssize_t m, double lo, double hi,
                        int rmode, otag* ot, ntag* nt, uint64_t nanv) noexcept nogil:
    if rmode == R_NEAREST_EVEN:
        return _fp1_vec_loop(x, y, fl, m, lo, hi, <_RNE*>NULL, ot, nt, nanv)
    if rmode == R_TOWARDS_ZERO:
        return _fp1_vec_loop(x, y, fl, m, lo, hi, <_RTZ*>NULL, ot, nt, nanv)
    if rmode == R_TOWARDS_POSITIVE:
        return _fp1_vec_loop(x, y, fl, m, lo, hi, <_RTP*>NULL, ot, nt, nanv)
    if rmode == R_TOWARDS_NEGATIVE:
        return _fp1_vec_loop(x, y, fl, m, lo, hi, <_RTN*>NULL, ot, nt, nanv)
    return _fp1_vec_loop(x, y, fl, m, lo, hi, <_RNA*>NULL, ot, nt, nanv)


cdef uint8_t _fp1_vec(const flt_t* x, ivec_t* y, uint8_t* fl, Py_ssize_t m,
                      double lo, double hi, int rmode, int oor, int nank, uint64_t nanv) noexcept nogil:
    if nank:
        if oor == OOR_CLAMP:
            return _fp1_vec_o(x, y, fl, m, lo, hi, rmode, <_OCLAMP*>NULL, <_NK1*>NULL, nanv)
        return _fp1_vec_o(x, y, fl, m, lo, hi, rmode, <_ONONE*>NULL, <_NK1*>NULL, nanv)
    if oor == OOR_CLAMP:
        return _fp1_vec_o(x, y, fl, m, lo, hi, rmode, <_OCLAMP*>NULL, <_NK0*>NULL, nanv)
    return _fp1_vec_o(x, y, fl, m, lo, hi, rmode, <_ONONE*>NULL, <_NK0*>NULL, nanv)


cdef uint8_t _fp1(const flt_t* x, ivec_t* y, uint8_t* fl, Py_ssize_t m, const cfg_t* c) noexcept nogil:
    cdef double lo = <double>c.f.lo, hi = <double>c.f.hi
    cdef int r = c.rmode, o = c.oor
    if o != OOR_WRAP:
        return _fp1_vec(x, y, fl, m, lo, hi, r, o, c.nan_key, c.nan_val)
    # one specialised loop per (rounding, out_of_range): the mode tests leave the inner loop
    if o == OOR_NONE:
        if r == R_NEAREST_EVEN: return _fp1_loop(x, y, fl, m, lo, hi, R_NEAREST_EVEN, OOR_NONE)
        if r == R_TOWARDS_ZERO: return _fp1_loop(x, y, fl, m, lo, hi, R_TOWARDS_ZERO, OOR_NONE)
        if r == R_TOWARDS_POSITIVE: return _fp1_loop(x, y, fl, m, lo, hi, R_TOWARDS_POSITIVE, OOR_NONE)
        if r == R_TOWARDS_NEGATIVE: return _fp1_loop(x, y, fl, m, lo, hi, R_TOWARDS_NEGATIVE, OOR_NONE)
        return _fp1_loop(x, y, fl, m, lo, hi, R_NEAREST_AWAY, OOR_NONE)
    if o == OOR_CLAMP:
        if r == R_NEAREST_EVEN: return _fp1_loop(x, y, fl, m, lo, hi, R_NEAREST_EVEN, OOR_CLAMP)
        if r == R_TOWARDS_ZERO: return _fp1_loop(x, y, fl, m, lo, hi, R_TOWARDS_ZERO, OOR_CLAMP)
        if r == R_TOWARDS_POSITIVE: return _fp1_loop(x, y, fl, m, lo, hi, R_TOWARDS_POSITIVE, OOR_CLAMP)
        if r == R_TOWARDS_NEGATIVE: return _fp1_loop(x, y, fl, m, lo, hi, R_TOWARDS_NEGATIVE, OOR_CLAMP)
        return _fp1_loop(x, y, fl, m, lo, hi, R_NEAREST_AWAY, OOR_CLAMP)
    if r == R_NEAREST_EVEN: return _fp1_loop(x, y, fl, m, lo, hi, R_NEAREST_EVEN, OOR_WRAP)
    if r == R_TOWARDS_ZERO: return _fp1_loop(x, y, fl, m, lo, hi, R_TOWARDS_ZERO, OOR_WRAP)
    if r == R_TOWARDS_POSITIVE: return _fp1_loop(x, y, fl, m, lo, hi, R_TOWARDS_POSITIVE, OOR_WRAP)
    if r == R_TOWARDS_NEGATIVE: return _fp1_loop(x, y, fl, m, lo, hi, R_TOWARDS_NEGATIVE, OOR_WRAP)
    return _fp1_loop(x, y, fl, m, lo, hi, R_NEAREST_AWAY, OOR_WRAP)


# ---------------------------------------------------------------------------------------
# across the module boundary (void pointers + storage type codes)
# ---------------------------------------------------------------------------------------

cdef inline uint8_t _fp1_d(const flt_t* x, void* y, int dst_code, uint8_t* fl, Py_ssize_t m,
                           const cfg_t* c) noexcept nogil:
    if dst_code == T_INT8:
        return _fp1(x, <int8_t*>y, fl, m, c)
    elif dst_code == T_INT16:
        return _fp1(x, <int16_t*>y, fl, m, c)
    elif dst_code == T_INT32:
        return _fp1(x, <int32_t*>y, fl, m, c)
    elif dst_code == T_UINT8:
        return _fp1(x, <uint8_t*>y, fl, m, c)
    elif dst_code == T_UINT16:
        return _fp1(x, <uint16_t*>y, fl, m, c)
    else:
        return _fp1(x, <uint32_t*>y, fl, m, c)


cdef uint8_t fp1_block(const void* x, int src_code, void* y, int dst_code, uint8_t* fl, Py_ssize_t m,
                       const cfg_t* c) noexcept nogil:
    """Pass 1 of one block, float32/float64 -> int8..int32 / uint8..uint32 (``dst_code``);
    1 if some element is flagged (``fl``)."""
    if src_code == T_FLOAT32:
        return _fp1_d(<const float*>x, y, dst_code, fl, m, c)
    return _fp1_d(<const double*>x, y, dst_code, fl, m, c)


cdef int rne_block(const double* x, void* y, int dst_code, Py_ssize_t m, double lo, double hi, int nk,
                   int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil:
    """The dispatched one-pass C loop (see ``_rne_any``) for a target type code."""
    if dst_code == T_INT8:
        return _rne_any(x, <int8_t*>y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    elif dst_code == T_INT16:
        return _rne_any(x, <int16_t*>y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    elif dst_code == T_INT32:
        return _rne_any(x, <int32_t*>y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    elif dst_code == T_UINT8:
        return _rne_any(x, <uint8_t*>y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    elif dst_code == T_UINT16:
        return _rne_any(x, <uint16_t*>y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    elif dst_code == T_UINT32:
        return _rne_any(x, <uint32_t*>y, m, lo, hi, nk, clamp, fused, nanv, o, s)
    return 1


cdef void set_isa(int state) noexcept nogil:
    """``_cast_fast.dispatch_isa``: -1 detect the CPU on next use, 0 baseline."""
    zc_set_avx2_state(state)


cdef int uses_avx2() noexcept nogil:
    """1 if this module's dispatched loops run their AVX2 build."""
    return zc_use_avx2()
