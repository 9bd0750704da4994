"""cast_value kernels (ext-codec-cast_value.md "Procedure").

Two layers:

* a *generic* element caster (``_cast_num``) that decodes any source element to an exact
  ``(-1)^neg * m * 2^e`` and rounds it to any target format (ints of any width N, binary
  floats given by significand bits / exponent range / inf / NaN rules).  It is exact in
  every mode and also reports a per-element status (exact, rounded, clamped, wrapped...).
* *fast* specialised block loops for the hot pairs (float -> int <= 32 bits, float64 ->
  float32, int -> int, exact widenings).  A fast loop handles the common case and only
  *flags* anything unusual (NaN, Inf, out of range, huge values, ties it does not handle);
  flagged elements go through ``scalar_map`` and then the generic caster.  So the fast
  paths never decide an edge case on their own.

The hottest block loops (float64 -> int <= 32 bits nearest-even, plain and fused with
scale_offset encode; the fused decode from integers; integer narrowing with wrap) are one
C body each, compiled for the x86-64 baseline and with ``target("avx2")``, picked at run
time (``dispatch_isa``).  They use only IEEE add/sub/mul/div, compares and integer bit
operations (no FMA), so both builds give the same bits; like the Cython loops they only
*flag* a block, and a flagged block is redone by the careful path.

Loops are ``noexcept nogil`` and return -1 or the index of the first failing element.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memset
from libc.stdlib cimport malloc, free
from libc.math cimport fabs, frexp, isnan, isinf

from zarrcy._kernels._cast_types cimport (
    src_t, dst_t, flt_t, ivec_t, fmt_t, num_t,
    ST_EXACT, ST_ROUNDED, ST_CLAMPED, ST_WRAPPED, ST_MAPPED, ST_FAIL_NONFINITE, ST_FAIL_RANGE,
    R_NEAREST_EVEN, R_TOWARDS_ZERO, R_TOWARDS_POSITIVE, R_TOWARDS_NEGATIVE, R_NEAREST_AWAY,
    OOR_NONE, OOR_CLAMP, OOR_WRAP,
)

cdef extern from *:
    """
    static inline int zc_clz64(unsigned long long x) { return __builtin_clzll(x); }
    static inline int zc_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    static inline unsigned int zc_f2u(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
    static inline float zc_u2f(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
    static inline unsigned long long zc_d2u(double f) { unsigned long long u; memcpy(&u, &f, 8); return u; }
    static inline double zc_u2d(unsigned long long u) { double f; memcpy(&f, &u, 8); return f; }
    #define ZC_DBL_MAX 1.7976931348623157e308
    #define ZC_FLT_MAX 3.4028234663852886e38
    """
    int zc_clz64(uint64_t x) noexcept nogil
    int zc_ctz64(uint64_t x) noexcept nogil
    uint32_t zc_f2u(float f) noexcept nogil
    float zc_u2f(uint32_t u) noexcept nogil
    uint64_t zc_d2u(double f) noexcept nogil
    double zc_u2d(uint64_t u) noexcept nogil
    double ZC_DBL_MAX
    double ZC_FLT_MAX

cdef enum:
    BLOCK = 1024

ctypedef struct cfg_t:
    fmt_t f
    int rmode
    int oor
    Py_ssize_t nkeys
    const void* keys      # nkeys elements of the source storage type
    const void* vals      # nkeys elements of the target storage type
    num_t* knums          # keys decoded
    uint64_t* vbits       # values as target storage bits
    int keys_general      # 1: some key is finite -> mapping pass over every element
    int flag_nonfinite    # fast float paths must flag NaN/Inf (deferred NaN/Inf keys)
    int nan_key           # the map is exactly one NaN key: fast loops select its value inline
    uint64_t nan_val      # ... its value (target storage bits)


# ---------------------------------------------------------------------------------------
# exact decoding
# ---------------------------------------------------------------------------------------

cdef inline num_t _norm(num_t v) noexcept nogil:
    cdef int tz
    if v.cls != 0:
        return v
    if v.m == 0:
        v.e = 0
        v.neg = 0  # -0 and 0 compare equal; callers that need the sign read it before
    else:
        tz = zc_ctz64(v.m)
        v.m >>= tz
        v.e += tz
    return v


cdef inline num_t _from_double(double d) noexcept nogil:
    cdef num_t v
    cdef int ex
    cdef double f
    v.neg = zc_d2u(d) >> 63
    v.m = 0
    v.e = 0
    if isnan(d):
        v.cls = 2
        return v
    if isinf(d):
        v.cls = 1
        return v
    v.cls = 0
    if d == 0.0:
        return v
    f = frexp(fabs(d), &ex)          # f in [0.5, 1): f * 2^53 is an exact integer
    v.m = <uint64_t>(f * 9007199254740992.0)
    v.e = ex - 53
    return v


cdef inline num_t _from_i64(int64_t x) noexcept nogil:
    cdef num_t v
    v.cls = 0
    v.e = 0
    if x < 0:
        v.neg = 1
        v.m = (<uint64_t>0) - <uint64_t>x
    else:
        v.neg = 0
        v.m = <uint64_t>x
    return v


cdef inline num_t _from_u64(uint64_t x) noexcept nogil:
    cdef num_t v
    v.cls = 0
    v.e = 0
    v.neg = 0
    v.m = x
    return v


cdef inline num_t _dec(src_t x) noexcept nogil:
    if src_t is float or src_t is double:
        return _from_double(<double>x)
    elif src_t is int8_t or src_t is int16_t or src_t is int32_t or src_t is int64_t:
        return _from_i64(<int64_t>x)
    else:
        return _from_u64(<uint64_t>x)


cdef inline bint _num_eq(num_t a, num_t b) noexcept nogil:
    """Numerical equality of two *normalised* numbers (any NaN equals any NaN)."""
    if a.cls != b.cls:
        return False
    if a.cls == 2:
        return True
    if a.cls == 1:
        return a.neg == b.neg
    return a.m == b.m and a.e == b.e and (a.neg == b.neg or a.m == 0)


cdef inline Py_ssize_t _map_find(num_t v, const cfg_t* c) noexcept nogil:
    cdef Py_ssize_t k
    v = _norm(v)
    for k in range(c.nkeys):  # first occurrence wins
        if _num_eq(v, c.knums[k]):
            return k
    return -1


# ---------------------------------------------------------------------------------------
# exact rounding
# ---------------------------------------------------------------------------------------

cdef inline uint64_t _shift_round(uint64_t m, int sh, int neg, int rmode, int* inexact) noexcept nogil:
    """round(m / 2^sh) to an integer magnitude per ``rmode`` (``neg``: sign of the value); sh >= 1."""
    cdef uint64_t ip, rem, half
    cdef int cmp, up = 0
    if sh >= 64:
        ip = 0
        if m == 0:
            inexact[0] = 0
            return 0
        if sh == 64:
            half = (<uint64_t>1) << 63
            cmp = 1 if m > half else (0 if m == half else -1)
        else:
            cmp = -1
    else:
        ip = m >> sh
        rem = m & (((<uint64_t>1) << sh) - 1)
        if rem == 0:
            inexact[0] = 0
            return ip
        half = (<uint64_t>1) << (sh - 1)
        cmp = 1 if rem > half else (0 if rem == half else -1)
    inexact[0] = 1
    if rmode == R_NEAREST_EVEN:
        up = cmp > 0 or (cmp == 0 and (ip & 1))
    elif rmode == R_NEAREST_AWAY:
        up = cmp >= 0
    elif rmode == R_TOWARDS_POSITIVE:
        up = not neg
    elif rmode == R_TOWARDS_NEGATIVE:
        up = neg
    return ip + <uint64_t>up


cdef inline uint64_t _mask(int nbits) noexcept nogil:
    if nbits >= 64:
        return <uint64_t>0xFFFFFFFFFFFFFFFF
    return ((<uint64_t>1) << nbits) - 1


cdef int _cast_num(num_t v, const fmt_t* f, int rmode, int oor, uint64_t* out) noexcept nogil:
    """Cast one exact number to format ``f``; write the target storage bits; return a status."""
    cdef uint64_t mag = 0, low = 0, mm, sign
    cdef int big = 0, inexact = 0, L, ex, q, er
    cdef bint inrange
    if f.kind != 2:
        # ---- integer target
        if v.cls != 0:
            return ST_FAIL_NONFINITE
        if v.m == 0:
            out[0] = 0
            return ST_EXACT
        if v.e >= 0:
            if v.e >= 64:
                big = 1
                low = 0
            elif v.e > 0 and (v.m >> (64 - v.e)) != 0:
                big = 1
                low = v.m << v.e
            else:
                mag = v.m << v.e
        else:
            mag = _shift_round(v.m, -v.e, v.neg, rmode, &inexact)
        if not big and mag == 0:
            out[0] = 0
            return ST_ROUNDED if inexact else ST_EXACT
        if big:
            inrange = False
        elif v.neg:
            inrange = mag <= (<uint64_t>0) - <uint64_t>f.lo
        else:
            inrange = mag <= f.hi
        if inrange:
            out[0] = (((<uint64_t>0) - mag) if v.neg else mag) & _mask(f.nbits)
            return ST_ROUNDED if inexact else ST_EXACT
        if oor == OOR_CLAMP:
            out[0] = ((<uint64_t>f.lo) if v.neg else f.hi) & _mask(f.nbits)
            return ST_CLAMPED
        if oor == OOR_WRAP:
            if not big:
                low = mag
            out[0] = (((<uint64_t>0) - low) if v.neg else low) & _mask(f.nbits)
            return ST_WRAPPED
        return ST_FAIL_RANGE
    # ---- binary float target
    sign = (<uint64_t>v.neg) << (f.nbits - 1)
    if v.cls == 2:
        if not f.has_nan:
            return ST_FAIL_NONFINITE
        out[0] = f.nan_bits
        return ST_EXACT
    if v.cls == 1:
        if not f.has_inf:
            return ST_FAIL_NONFINITE
        out[0] = sign | ((((<uint64_t>1) << (f.nbits - f.p)) - 1) << (f.p - 1))
        return ST_EXACT
    if v.m == 0:
        out[0] = sign
        return ST_EXACT
    L = 64 - zc_clz64(v.m)
    ex = v.e + L - 1
    q = (ex if ex > f.emin else f.emin) - (f.p - 1)
    if q <= v.e:
        mm = v.m << (v.e - q)
    else:
        mm = _shift_round(v.m, q - v.e, v.neg, rmode, &inexact)
    if mm == ((<uint64_t>1) << f.p):
        mm >>= 1
        q += 1
    if mm == 0:
        out[0] = sign      # a zero produced by rounding keeps the input's sign
        return ST_ROUNDED
    if mm >= ((<uint64_t>1) << (f.p - 1)):
        er = q + f.p - 1
        if er > f.emax:
            # beyond the largest finite value (after rounding with an unbounded exponent)
            if oor == OOR_CLAMP:
                if f.has_inf:
                    out[0] = sign | ((((<uint64_t>1) << (f.nbits - f.p)) - 1) << (f.p - 1))
                else:
                    out[0] = sign | ((<uint64_t>(f.emax + f.bias)) << (f.p - 1)) | (((<uint64_t>1) << (f.p - 1)) - 1)
                return ST_CLAMPED
            return ST_FAIL_RANGE
        out[0] = sign | ((<uint64_t>(er + f.bias)) << (f.p - 1)) | (mm - ((<uint64_t>1) << (f.p - 1)))
    else:
        out[0] = sign | mm       # subnormal: biased exponent 0
    return ST_ROUNDED if inexact else ST_EXACT


cdef inline dst_t _from_bits(uint64_t b, dst_t* dummy) noexcept nogil:
    if dst_t is float:
        return zc_u2f(<uint32_t>b)
    elif dst_t is double:
        return zc_u2d(b)
    else:
        return <dst_t>b


cdef inline uint64_t _to_bits(dst_t x) noexcept nogil:
    if dst_t is float:
        return zc_f2u(x)
    elif dst_t is double:
        return zc_d2u(x)
    elif dst_t is int8_t:
        return <uint8_t>x
    elif dst_t is int16_t:
        return <uint16_t>x
    elif dst_t is int32_t:
        return <uint32_t>x
    else:
        return <uint64_t>x


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


cdef inline uint64_t _nz(uint64_t a) noexcept nogil:
    """1 if a != 0 else 0, without a compare (keeps the loop in 64-bit lanes)."""
    return ((a | ((<uint64_t>0) - a)) >> 63) & 1


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


# ---- runtime-dispatched C loops for the hottest float64 -> int (<= 32 bits) nearest-even
# pass (plain cast, and the fused scale_offset -> cast).  One C body, compiled twice: for
# the x86-64 baseline (SSE2) and, with a target attribute, for AVX2 (chosen at run time by
# __builtin_cpu_supports, so wheels still run on any x86-64).  Only IEEE add/sub/mul and
# compares: no FMA is enabled (target "avx2" does not imply "fma"), so both builds give
# bit-identical results.  Same arithmetic as _fp1_vec_loop with _RNE (see its docstring);
# the return value says only "this block needs the careful path".
cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #define ZC_MAGIC 6755399441055744.0
    #define ZC_EXP 0x7ff0000000000000ULL
    #define ZC_ONE_EXP 0x0010000000000000ULL
    static inline uint64_t zc_bits(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }
    /* FUSED: v = (x - o) * s first (the scale_offset encode step, in float64 arithmetic);
       a finite x giving a non-finite v, NaN/Inf outside the NaN key, or (OCLAMP == 0) a
       value that clamping moved -> return 1 */
    #define ZC_RNE_BODY(T, NK, OCLAMP, FUSED)                                              \\
        uint64_t accn = 0, accd = 0, acco = 0; Py_ssize_t i;                             \\
        for (i = 0; i < m; i++) {                                                         \\
            double v = x[i];                                                              \\
            if (FUSED) { double t = (v - o) * s;                                          \\
                acco |= (~((zc_bits(v) & ZC_EXP) + ZC_ONE_EXP)) & ((zc_bits(t) & ZC_EXP) + ZC_ONE_EXP); \\
                v = t; }                                                                  \\
            uint64_t b = zc_bits(v);                                                      \\
            double cc = v > lo ? v : lo;                                                  \\
            cc = cc < hi ? cc : hi;                                                       \\
            uint64_t k = zc_bits(cc + ZC_MAGIC);                                          \\
            if (NK) {                                                                     \\
                uint64_t nanm = (uint64_t)0 - (((b & 0x7fffffffffffffffULL) + 0x000fffffffffffffULL) >> 63); \\
                k = (k & ~nanm) | (nanv & nanm);                                          \\
                accn |= ((b & ZC_EXP) + ZC_ONE_EXP) & ~nanm;                              \\
                if (!OCLAMP) accd |= (zc_bits(cc - v) << 1) & ~nanm;                      \\
            } else {                                                                      \\
                accn |= (b & ZC_EXP) + ZC_ONE_EXP;                                        \\
                if (!OCLAMP) accd |= zc_bits(cc - v) << 1;                                \\
            }                                                                             \\
            y[i] = (T)k;                                                                  \\
        }                                                                                 \\
        return (((accn | acco) >> 63) | (accd != 0)) != 0;

    #define ZC_RNE_FN(NAME, ATTR, T, NK, OCLAMP, FUSED)                                    \\
        ATTR static int NAME(const double* __restrict x, T* __restrict y, Py_ssize_t m,    \\
                             double lo, double hi, uint64_t nanv, double o, double s)      \\
        { ZC_RNE_BODY(T, NK, OCLAMP, FUSED) }

    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(ZC_NO_AVX2)
    #define ZC_HAVE_AVX2_BUILD 1
    static int zc_avx2_state = -1;
    static inline int zc_use_avx2(void) {
        if (zc_avx2_state < 0) { __builtin_cpu_init(); zc_avx2_state = __builtin_cpu_supports("avx2") ? 1 : 0; }
        return zc_avx2_state;
    }
    #define ZC_RNE_VARIANTS(SUF, T, NK, OCLAMP, FUSED)                                     \\
        ZC_RNE_FN(zc_rne_base_##SUF, __attribute__((noinline)), T, NK, OCLAMP, FUSED)      \\
        ZC_RNE_FN(zc_rne_avx2_##SUF, __attribute__((noinline, target("avx2"))), T, NK, OCLAMP, FUSED) \\
        static int zc_rne_##SUF(const double* x, T* y, Py_ssize_t m, double lo, double hi, \\
                                uint64_t nanv, double o, double s) {                       \\
            return zc_use_avx2() ? zc_rne_avx2_##SUF(x, y, m, lo, hi, nanv, o, s)          \\
                                 : zc_rne_base_##SUF(x, y, m, lo, hi, nanv, o, s); }
    #else
    #define ZC_HAVE_AVX2_BUILD 0
    static int zc_avx2_state = 0;
    static inline int zc_use_avx2(void) { return 0; }
    #define ZC_RNE_VARIANTS(SUF, T, NK, OCLAMP, FUSED) ZC_RNE_FN(zc_rne_##SUF, , T, NK, OCLAMP, FUSED)
    #endif

    /* suffix: <target type>_<n: no key | k: one NaN key>_<c: clamp | x: no out_of_range>_<p: plain | f: fused> */
    #define ZC_RNE_TYPE(TN, T)                                                             \\
        ZC_RNE_VARIANTS(TN##_n_c_p, T, 0, 1, 0) ZC_RNE_VARIANTS(TN##_n_x_p, T, 0, 0, 0)     \\
        ZC_RNE_VARIANTS(TN##_k_c_p, T, 1, 1, 0) ZC_RNE_VARIANTS(TN##_k_x_p, T, 1, 0, 0)     \\
        ZC_RNE_VARIANTS(TN##_n_c_f, T, 0, 1, 1) ZC_RNE_VARIANTS(TN##_n_x_f, T, 0, 0, 1)     \\
        ZC_RNE_VARIANTS(TN##_k_c_f, T, 1, 1, 1) ZC_RNE_VARIANTS(TN##_k_x_f, T, 1, 0, 1)
    ZC_RNE_TYPE(i8, int8_t)
    ZC_RNE_TYPE(i16, int16_t)
    ZC_RNE_TYPE(i32, int32_t)
    ZC_RNE_TYPE(u8, uint8_t)
    ZC_RNE_TYPE(u16, uint16_t)
    ZC_RNE_TYPE(u32, uint32_t)

    /* integer -> narrower integer with wrap: conversion to the unsigned type of the target
       width is modulo 2^N, the same bits for signed and unsigned types of either side */
    #define ZC_NARROW_FN(NAME, ATTR, S, D) \
        ATTR static void NAME(const S* __restrict x, D* __restrict y, Py_ssize_t m) { \
            Py_ssize_t i; for (i = 0; i < m; i++) y[i] = (D)x[i]; }
    #if ZC_HAVE_AVX2_BUILD
    #define ZC_NARROW(SUF, S, D) \
        ZC_NARROW_FN(zc_narrow_base_##SUF, __attribute__((noinline)), S, D) \
        ZC_NARROW_FN(zc_narrow_avx2_##SUF, __attribute__((noinline, target("avx2"))), S, D) \
        static void zc_narrow_##SUF(const S* x, D* y, Py_ssize_t m) { \
            if (zc_use_avx2()) zc_narrow_avx2_##SUF(x, y, m); else zc_narrow_base_##SUF(x, y, m); }
    #else
    #define ZC_NARROW(SUF, S, D) ZC_NARROW_FN(zc_narrow_##SUF, , S, D)
    #endif
    ZC_NARROW(2_1, uint16_t, uint8_t)
    ZC_NARROW(4_1, uint32_t, uint8_t)
    ZC_NARROW(4_2, uint32_t, uint16_t)
    ZC_NARROW(8_1, uint64_t, uint8_t)
    ZC_NARROW(8_2, uint64_t, uint16_t)
    ZC_NARROW(8_4, uint64_t, uint32_t)
    /* sizes in bytes; returns 0 if the pair is not a narrowing one (caller loops itself) */
    static int zc_narrow(const void* x, int ssz, void* y, int dsz, Py_ssize_t m) {
        if (ssz == 2 && dsz == 1) { zc_narrow_2_1((const uint16_t*)x, (uint8_t*)y, m); return 1; }
        if (ssz == 4 && dsz == 1) { zc_narrow_4_1((const uint32_t*)x, (uint8_t*)y, m); return 1; }
        if (ssz == 4 && dsz == 2) { zc_narrow_4_2((const uint32_t*)x, (uint16_t*)y, m); return 1; }
        if (ssz == 8 && dsz == 1) { zc_narrow_8_1((const uint64_t*)x, (uint8_t*)y, m); return 1; }
        if (ssz == 8 && dsz == 2) { zc_narrow_8_2((const uint64_t*)x, (uint16_t*)y, m); return 1; }
        if (ssz == 8 && dsz == 4) { zc_narrow_8_4((const uint64_t*)x, (uint32_t*)y, m); return 1; }
        return 0;
    }

    /* fused decode: y = cast(x) / s + o for an integer source exact in F (no rounding, no
       range question), with at most one scalar_map key (x == key -> val before the division,
       so those elements get val / s + o).  Returns 1 if any result is non-finite (an
       integer source is always finite: that is scale_offset's overflow error, or a
       non-finite key value, both rare): the caller then redoes the block with the
       two-step path, which decides and names the element. */
    #define ZC_DSO_FN(NAME, ATTR, S, F, NK, FB) \
        ATTR static int NAME(const S* __restrict x, F* __restrict y, Py_ssize_t m, S key, F val, F o, F s) { \
            FB acc = 0; Py_ssize_t i; \
            for (i = 0; i < m; i++) { \
                F r = (F)x[i] / s + o; \
                acc |= ZC_NFB_##F(r); \
                y[i] = r; } \
            if (NK) { \
                F vr = val / s + o;   /* the key's element: the same two operations on val */ \
                if (!(ZC_NFB_##F(val) >> (sizeof(FB) * 8 - 1)) && (ZC_NFB_##F(vr) >> (sizeof(FB) * 8 - 1))) \
                    return 1; \
                i = 0; \
                if (sizeof(S) == 1) {  /* skip 8 elements at a time while none equals the key */ \
                    uint64_t kk = 0x0101010101010101ULL * (uint8_t)key; \
                    for (; i + 8 <= m; i += 8) { \
                        uint64_t w; memcpy(&w, x + i, 8); w ^= kk; \
                        if (((w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL) == 0) continue; \
                        for (Py_ssize_t j = i; j < i + 8; j++) if (x[j] == key) y[j] = vr; } \
                } \
                for (; i < m; i++) if (x[i] == key) y[i] = vr; } \
            return (acc >> (sizeof(FB) * 8 - 1)) != 0; }
    static inline uint64_t zc_nfb_double(double v) { return (zc_bits(v) & ZC_EXP) + ZC_ONE_EXP; }
    static inline uint32_t zc_nfb_float(float v) { uint32_t u; memcpy(&u, &v, 4); return (u & 0x7f800000U) + 0x00800000U; }
    #define ZC_NFB_double(v) zc_nfb_double(v)
    #define ZC_NFB_float(v) zc_nfb_float(v)
    #if ZC_HAVE_AVX2_BUILD
    #define ZC_DSO(SUF, S, F, FB) \
        ZC_DSO_FN(zc_dso_base0_##SUF, __attribute__((noinline)), S, F, 0, FB) \
        ZC_DSO_FN(zc_dso_base1_##SUF, __attribute__((noinline)), S, F, 1, FB) \
        ZC_DSO_FN(zc_dso_avx20_##SUF, __attribute__((noinline, target("avx2"))), S, F, 0, FB) \
        ZC_DSO_FN(zc_dso_avx21_##SUF, __attribute__((noinline, target("avx2"))), S, F, 1, FB) \
        static int zc_dso_##SUF(const S* x, F* y, Py_ssize_t m, int nk, S key, F val, F o, F s) { \
            if (zc_use_avx2()) return nk ? zc_dso_avx21_##SUF(x, y, m, key, val, o, s) : zc_dso_avx20_##SUF(x, y, m, key, val, o, s); \
            return nk ? zc_dso_base1_##SUF(x, y, m, key, val, o, s) : zc_dso_base0_##SUF(x, y, m, key, val, o, s); }
    #else
    #define ZC_DSO(SUF, S, F, FB) \
        ZC_DSO_FN(zc_dso_base0_##SUF, , S, F, 0, FB) \
        ZC_DSO_FN(zc_dso_base1_##SUF, , S, F, 1, FB) \
        static int zc_dso_##SUF(const S* x, F* y, Py_ssize_t m, int nk, S key, F val, F o, F s) { \
            return nk ? zc_dso_base1_##SUF(x, y, m, key, val, o, s) : zc_dso_base0_##SUF(x, y, m, key, val, o, s); }
    #endif
    ZC_DSO(u8_d, uint8_t, double, uint64_t)
    ZC_DSO(i8_d, int8_t, double, uint64_t)
    ZC_DSO(u16_d, uint16_t, double, uint64_t)
    ZC_DSO(i16_d, int16_t, double, uint64_t)
    ZC_DSO(u32_d, uint32_t, double, uint64_t)
    ZC_DSO(i32_d, int32_t, double, uint64_t)
    ZC_DSO(u8_f, uint8_t, float, uint32_t)
    ZC_DSO(i8_f, int8_t, float, uint32_t)
    ZC_DSO(u16_f, uint16_t, float, uint32_t)
    ZC_DSO(i16_f, int16_t, float, uint32_t)

    /* one entry point per target type: the (key, clamp, fused) choice is per block, not per element */
    #define ZC_RNE_PICK(TN, T)                                                             \\
        static int zc_rne_##TN(const double* x, T* y, Py_ssize_t m, double lo, double hi,  \\
                               int nk, int clamp, int fused, uint64_t nanv, double o, double s) { \\
            if (fused) {                                                                   \\
                if (nk) return clamp ? zc_rne_##TN##_k_c_f(x, y, m, lo, hi, nanv, o, s) : zc_rne_##TN##_k_x_f(x, y, m, lo, hi, nanv, o, s); \\
                return clamp ? zc_rne_##TN##_n_c_f(x, y, m, lo, hi, nanv, o, s) : zc_rne_##TN##_n_x_f(x, y, m, lo, hi, nanv, o, s); } \\
            if (nk) return clamp ? zc_rne_##TN##_k_c_p(x, y, m, lo, hi, nanv, o, s) : zc_rne_##TN##_k_x_p(x, y, m, lo, hi, nanv, o, s); \\
            return clamp ? zc_rne_##TN##_n_c_p(x, y, m, lo, hi, nanv, o, s) : zc_rne_##TN##_n_x_p(x, y, m, lo, hi, nanv, o, s); }
    ZC_RNE_PICK(i8, int8_t)
    ZC_RNE_PICK(i16, int16_t)
    ZC_RNE_PICK(i32, int32_t)
    ZC_RNE_PICK(u8, uint8_t)
    ZC_RNE_PICK(u16, uint16_t)
    ZC_RNE_PICK(u32, uint32_t)
    """
    int ZC_HAVE_AVX2_BUILD
    int zc_avx2_state
    int zc_use_avx2() noexcept nogil
    int zc_narrow(const void* x, int ssz, void* y, int dsz, Py_ssize_t m) noexcept nogil
    int zc_dso_u8_d(const uint8_t* x, double* y, Py_ssize_t m, int nk, uint8_t key, double val, double o, double s) noexcept nogil
    int zc_dso_i8_d(const int8_t* x, double* y, Py_ssize_t m, int nk, int8_t key, double val, double o, double s) noexcept nogil
    int zc_dso_u16_d(const uint16_t* x, double* y, Py_ssize_t m, int nk, uint16_t key, double val, double o, double s) noexcept nogil
    int zc_dso_i16_d(const int16_t* x, double* y, Py_ssize_t m, int nk, int16_t key, double val, double o, double s) noexcept nogil
    int zc_dso_u32_d(const uint32_t* x, double* y, Py_ssize_t m, int nk, uint32_t key, double val, double o, double s) noexcept nogil
    int zc_dso_i32_d(const int32_t* x, double* y, Py_ssize_t m, int nk, int32_t key, double val, double o, double s) noexcept nogil
    int zc_dso_u8_f(const uint8_t* x, float* y, Py_ssize_t m, int nk, uint8_t key, float val, float o, float s) noexcept nogil
    int zc_dso_i8_f(const int8_t* x, float* y, Py_ssize_t m, int nk, int8_t key, float val, float o, float s) noexcept nogil
    int zc_dso_u16_f(const uint16_t* x, float* y, Py_ssize_t m, int nk, uint16_t key, float val, float o, float s) noexcept nogil
    int zc_dso_i16_f(const int16_t* x, float* y, Py_ssize_t m, int nk, int16_t key, float val, float o, float s) noexcept nogil
    int zc_rne_i8(const double* x, int8_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
    int zc_rne_i16(const double* x, int16_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
    int zc_rne_i32(const double* x, int32_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
    int zc_rne_u8(const double* x, uint8_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
    int zc_rne_u16(const double* x, uint16_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
    int zc_rne_u32(const double* x, uint32_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil


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


cdef inline float _d2f(double v, int rmode, uint8_t flagnf, uint8_t* fl) noexcept nogil:
    """float64 -> float32 for |v| <= FLT_MAX; larger finite values are flagged."""
    cdef double av = fabs(v)
    cdef uint8_t bad = (av > ZC_FLT_MAX) & (av <= ZC_DBL_MAX)
    cdef float r
    cdef double rb, ar, ob
    cdef uint32_t b
    cdef int32_t away, toward, neg, tie
    if flagnf:
        bad = bad | (not (av <= ZC_DBL_MAX))
    fl[0] = bad
    v = 0.0 if bad else v
    r = <float>v
    if rmode == R_NEAREST_EVEN:
        return r
    rb = <double>r
    ar = fabs(rb)
    av = fabs(v)
    b = zc_f2u(r)
    away = ar < av          # magnitude rounded down
    toward = ar > av        # magnitude rounded up
    neg = (zc_d2u(v) >> 63) != 0
    if rmode == R_TOWARDS_ZERO:
        b = b - <uint32_t>toward
    elif rmode == R_TOWARDS_POSITIVE:
        b = b + <uint32_t>((not neg) & away) - <uint32_t>(neg & toward)
    elif rmode == R_TOWARDS_NEGATIVE:
        b = b + <uint32_t>(neg & away) - <uint32_t>((not neg) & toward)
    else:  # nearest-away: differs from nearest-even only at a tie rounded down in magnitude
        ob = fabs(<double>zc_u2f(b + 1))
        tie = away & ((ob - av) == (av - ar))
        b = b + <uint32_t>tie
    return zc_u2f(b)


cdef inline uint64_t _d2f_bits(double v, int rmode) noexcept nogil:
    """float64 -> float32 bits for |v| <= FLT_MAX (or non-finite), directed modes by bit
    arithmetic on d = v - float(v) (exact); 64-bit lanes only, so the loop vectorises."""
    cdef uint64_t vb = zc_d2u(v)
    cdef float r = <float>v
    cdef uint64_t b = <uint64_t>zc_f2u(r)
    cdef uint64_t db, fin, nzd, sv, up, down
    if rmode == R_NEAREST_EVEN:
        return b
    db = zc_d2u(v - <double>r)
    fin = 1 - (((vb & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000) >> 63)
    nzd = _nz(db << 1) & fin
    sv = vb >> 63
    up = (1 - (db >> 63)) & nzd          # v above float(v)
    down = (db >> 63) & nzd              # v below float(v)
    if rmode == R_TOWARDS_ZERO:          # magnitude was rounded up: step back
        return b - (((db ^ vb) >> 63) & nzd)
    elif rmode == R_TOWARDS_POSITIVE:
        return b + (up & (1 - sv)) - (up & sv)
    else:  # R_TOWARDS_NEGATIVE
        return b + (down & sv) - (down & (1 - sv))


cdef inline uint64_t _ovf_cand(double v) noexcept nogil:
    """1 if FLT_MAX < |v| <= DBL_MAX (|v| bit patterns are ordered like the values)."""
    cdef uint64_t ab = zc_d2u(v) & <uint64_t>0x7fffffffffffffff
    return (((<uint64_t>0x47efffffe0000000) - ab) & ~((<uint64_t>0x7fefffffffffffff) - ab)) >> 63


cdef inline uint64_t _nonfin(double v) noexcept nogil:
    return ((zc_d2u(v) & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000) >> 63


cdef uint8_t _fp2(const double* x, float* y, uint8_t* fl, Py_ssize_t m, const cfg_t* c) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint8_t acc8 = 0
    cdef uint8_t nf = <uint8_t>c.flag_nonfinite
    cdef uint64_t acc = 0, nfm = (<uint64_t>0) - <uint64_t>c.flag_nonfinite
    cdef uint32_t* yb = <uint32_t*>y
    if c.rmode == R_NEAREST_AWAY:
        for i in range(m):
            y[i] = _d2f(x[i], R_NEAREST_AWAY, nf, &fl[i])
            acc8 |= fl[i]
        return acc8
    # values beyond FLT_MAX (and NaN/Inf when a NaN/Inf key is deferred) go to the generic path
    if c.rmode == R_NEAREST_EVEN:
        for i in range(m):
            yb[i] = <uint32_t>_d2f_bits(x[i], R_NEAREST_EVEN)
            acc |= _ovf_cand(x[i]) | (_nonfin(x[i]) & nfm)
    elif c.rmode == R_TOWARDS_ZERO:
        for i in range(m):
            yb[i] = <uint32_t>_d2f_bits(x[i], R_TOWARDS_ZERO)
            acc |= _ovf_cand(x[i]) | (_nonfin(x[i]) & nfm)
    elif c.rmode == R_TOWARDS_POSITIVE:
        for i in range(m):
            yb[i] = <uint32_t>_d2f_bits(x[i], R_TOWARDS_POSITIVE)
            acc |= _ovf_cand(x[i]) | (_nonfin(x[i]) & nfm)
    else:
        for i in range(m):
            yb[i] = <uint32_t>_d2f_bits(x[i], R_TOWARDS_NEGATIVE)
            acc |= _ovf_cand(x[i]) | (_nonfin(x[i]) & nfm)
    if acc == 0:
        return 0
    for i in range(m):
        fl[i] = <uint8_t>(_ovf_cand(x[i]) | (_nonfin(x[i]) & nfm))
    return 1


cdef inline void _i2i(src_t x, int64_t lo, uint64_t hi, int oor, uint8_t* fl, dst_t* out) noexcept nogil:
    cdef uint8_t below, above
    if oor == OOR_WRAP:
        fl[0] = 0
        out[0] = <dst_t>x   # conversion to a narrower integer type is modulo 2^N
        return
    if src_t is int8_t or src_t is int16_t or src_t is int32_t or src_t is int64_t:
        below = <int64_t>x < lo
        above = (<int64_t>x >= 0) & (<uint64_t><int64_t>x > hi)
    else:
        below = 0
        above = <uint64_t>x > hi
    if oor == OOR_CLAMP:
        fl[0] = 0
        out[0] = <dst_t>lo if below else (<dst_t>hi if above else <dst_t>x)
    else:
        fl[0] = below | above
        out[0] = <dst_t>x


cdef uint8_t _fp3(const src_t* x, dst_t* y, uint8_t* fl, Py_ssize_t m, const cfg_t* c) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint8_t acc = 0
    cdef int64_t lo = c.f.lo
    cdef uint64_t hi = c.f.hi
    cdef uint8_t dummy
    if c.oor == OOR_WRAP:
        # narrowing: the dispatched C loop (AVX2 where available); same bits either way
        if sizeof(src_t) > sizeof(dst_t) and zc_narrow(x, sizeof(src_t), y, sizeof(dst_t), m):
            return 0
        for i in range(m):
            y[i] = <dst_t>x[i]      # conversion to a narrower integer type is modulo 2^N
        return 0
    if c.oor == OOR_CLAMP:
        for i in range(m):
            _i2i(x[i], lo, hi, OOR_CLAMP, &dummy, &y[i])
        return 0
    for i in range(m):
        _i2i(x[i], lo, hi, OOR_NONE, &fl[i], &y[i])
        acc |= fl[i]
    return acc


cdef uint8_t _fp4(const src_t* x, dst_t* y, uint8_t* fl, Py_ssize_t m, const cfg_t* c) noexcept nogil:
    """Exact conversions (every source value is a target value); NaN/Inf flagged on request."""
    cdef Py_ssize_t i
    cdef uint8_t acc = 0
    if (src_t is float or src_t is double) and c.flag_nonfinite:
        for i in range(m):
            y[i] = <dst_t>x[i]
            fl[i] = not (fabs(<double>x[i]) <= ZC_DBL_MAX)
            acc |= fl[i]
        return acc
    for i in range(m):
        y[i] = <dst_t>x[i]
    memset(fl, 0, <size_t>m)
    return 0


cdef inline uint8_t _flag_all(uint8_t* fl, Py_ssize_t m) noexcept nogil:
    memset(fl, 1, <size_t>m)
    return 1


cdef uint8_t _pass1(const src_t* x, dst_t* y, uint8_t* fl, Py_ssize_t m, const cfg_t* c) noexcept nogil:
    if not c.f.natural:
        return _flag_all(fl, m)
    if src_t is float or src_t is double:
        if dst_t is int8_t or dst_t is int16_t or dst_t is int32_t or dst_t is uint8_t or dst_t is uint16_t or dst_t is uint32_t:
            return _fp1(x, y, fl, m, c)
        elif dst_t is float:
            if src_t is double:
                return _fp2(x, y, fl, m, c)
            else:
                return _fp4(x, y, fl, m, c)
        elif dst_t is double:
            return _fp4(x, y, fl, m, c)
        else:
            return _flag_all(fl, m)
    else:
        if dst_t is float:
            if src_t is int8_t or src_t is int16_t or src_t is uint8_t or src_t is uint16_t:
                return _fp4(x, y, fl, m, c)
            return _flag_all(fl, m)
        elif dst_t is double:
            if src_t is int64_t or src_t is uint64_t:
                return _flag_all(fl, m)
            return _fp4(x, y, fl, m, c)
        else:
            return _fp3(x, y, fl, m, c)


# ---------------------------------------------------------------------------------------
# drivers
# ---------------------------------------------------------------------------------------

cdef bint _fix_one(const src_t* xb, dst_t* yb, Py_ssize_t i, const cfg_t* c) noexcept nogil:
    """scalar_map (deferred NaN/Inf keys) then the generic caster for one flagged element;
    True if the element fails."""
    cdef num_t v = _dec(xb[i])
    cdef Py_ssize_t k
    cdef uint64_t bits
    cdef int st
    cdef const dst_t* vals = <const dst_t*>c.vals
    if not c.keys_general and c.nkeys:
        k = _map_find(v, c)
        if k >= 0:
            yb[i] = vals[k]
            return False
    st = _cast_num(v, &c.f, c.rmode, c.oor, &bits)
    if st >= ST_FAIL_NONFINITE:
        return True
    yb[i] = _from_bits(bits, yb)
    return False


cdef Py_ssize_t _drive(const src_t* x, dst_t* y, Py_ssize_t n, const cfg_t* c) noexcept nogil:
    cdef uint8_t fl[BLOCK]
    cdef uint8_t matched[BLOCK]
    cdef Py_ssize_t start, m, i, k
    cdef uint8_t acc, h
    cdef const src_t* xb
    cdef dst_t* yb
    cdef const src_t* keys = <const src_t*>c.keys
    cdef const dst_t* vals = <const dst_t*>c.vals
    cdef src_t key
    cdef dst_t val
    cdef uint64_t bits
    cdef int st
    cdef num_t v
    start = 0
    while start < n:
        m = n - start
        if m > BLOCK:
            m = BLOCK
        xb = x + start
        yb = y + start
        acc = _pass1(xb, yb, fl, m, c)
        if c.keys_general:
            memset(matched, 0, <size_t>m)
            for k in range(c.nkeys):
                key = keys[k]
                val = vals[k]
                if c.knums[k].cls == 2:   # NaN key: any NaN
                    for i in range(m):
                        h = (xb[i] != xb[i]) & (not matched[i])
                        yb[i] = val if h else yb[i]
                        matched[i] |= h
                else:                     # numerical equality (-0.0 == 0)
                    for i in range(m):
                        h = (xb[i] == key) & (not matched[i])
                        yb[i] = val if h else yb[i]
                        matched[i] |= h
            acc = 0
            for i in range(m):
                fl[i] &= not matched[i]
                acc |= fl[i]
        if acc:
            i = 0
            while i < m:
                if i + 8 <= m and (<uint64_t*>(fl + i))[0] == 0:   # skip 8 clean elements at once
                    i += 8
                    continue
                if fl[i] and _fix_one(xb, yb, i, c):
                    return start + i
                i += 1
        start += m
    return -1


cdef Py_ssize_t _classify(const src_t* x, dst_t* y, uint8_t* status, Py_ssize_t n, const cfg_t* c) noexcept nogil:
    """Generic loop recording every element's status; returns the first failing index or -1."""
    cdef Py_ssize_t i, k, first = -1
    cdef const dst_t* vals = <const dst_t*>c.vals
    cdef uint64_t bits
    cdef int st
    cdef num_t v
    for i in range(n):
        v = _dec(x[i])
        if c.nkeys:
            k = _map_find(v, c)
            if k >= 0:
                y[i] = vals[k]
                status[i] = ST_MAPPED
                continue
        st = _cast_num(v, &c.f, c.rmode, c.oor, &bits)
        status[i] = <uint8_t>st
        if st >= ST_FAIL_NONFINITE:
            if first < 0:
                first = i
            y[i] = 0
        else:
            y[i] = _from_bits(bits, y)
    return first


cdef void _setup_keys(const src_t* x, dst_t* y, cfg_t* c) noexcept nogil:
    cdef Py_ssize_t k
    cdef const src_t* keys = <const src_t*>c.keys
    cdef const dst_t* vals = <const dst_t*>c.vals
    c.keys_general = 0
    c.flag_nonfinite = 0
    for k in range(c.nkeys):
        c.knums[k] = _norm(_dec(keys[k]))
        c.vbits[k] = _to_bits(vals[k])
        if c.knums[k].cls == 0:
            c.keys_general = 1
        else:
            c.flag_nonfinite = 1
    c.nan_key = c.nkeys == 1 and c.knums[0].cls == 2
    c.nan_val = c.vbits[0] if c.nan_key else 0


cdef Py_ssize_t _run(const src_t* x, dst_t* y, uint8_t* status, Py_ssize_t n, cfg_t* c) noexcept nogil:
    _setup_keys(x, y, c)
    if status != NULL:
        return _classify(x, y, status, n, c)
    return _drive(x, y, n, c)


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
    _setup_keys(x, y, c)
    if (dst_t is int8_t or dst_t is int16_t or dst_t is int32_t or dst_t is uint8_t
            or dst_t is uint16_t or dst_t is uint32_t):
        fast = (c.f.natural and c.rmode == R_NEAREST_EVEN and c.oor != OOR_WRAP
                and not c.keys_general and (c.nkeys == 0 or c.nan_key))
    while start < n:
        m = n - start
        if m > BLOCK:
            m = BLOCK
        if flt_t is double:
            if fast and _rne_any(x + start, y + start, m, flo, fhi, c.nan_key, c.oor == OOR_CLAMP, 1,
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
                if _rne_any(<const double*>tmpd, y + start, m, flo, fhi, c.nan_key, c.oor == OOR_CLAMP, 0,
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
        r = _drive(<const flt_t*>tmp, y + start, m, c)
        if r >= 0:
            stage[0] = 1
            return start + r
        start += m
    return -1


cdef inline int _dso_c(const src_t* x, flt_t* y, Py_ssize_t m, int nk, src_t key, flt_t val,
                       flt_t o, flt_t s) noexcept nogil:
    """The dispatched one-pass C decode loop for one block (1: not handled / flagged)."""
    if flt_t is double:
        if src_t is uint8_t:
            return zc_dso_u8_d(x, y, m, nk, key, val, o, s)
        elif src_t is int8_t:
            return zc_dso_i8_d(x, y, m, nk, key, val, o, s)
        elif src_t is uint16_t:
            return zc_dso_u16_d(x, y, m, nk, key, val, o, s)
        elif src_t is int16_t:
            return zc_dso_i16_d(x, y, m, nk, key, val, o, s)
        elif src_t is uint32_t:
            return zc_dso_u32_d(x, y, m, nk, key, val, o, s)
        elif src_t is int32_t:
            return zc_dso_i32_d(x, y, m, nk, key, val, o, s)
        else:
            return 1
    else:
        if src_t is uint8_t:
            return zc_dso_u8_f(x, y, m, nk, key, val, o, s)
        elif src_t is int8_t:
            return zc_dso_i8_f(x, y, m, nk, key, val, o, s)
        elif src_t is uint16_t:
            return zc_dso_u16_f(x, y, m, nk, key, val, o, s)
        elif src_t is int16_t:
            return zc_dso_i16_f(x, y, m, nk, key, val, o, s)
        else:
            return 1


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
    cdef src_t key = 0
    cdef flt_t val = 0
    _setup_keys(x, y, c)
    if c.f.natural and (c.nkeys == 0 or (c.nkeys == 1 and c.keys_general)):
        if src_t is uint8_t or src_t is int8_t or src_t is uint16_t or src_t is int16_t:
            fast = 1
        elif src_t is uint32_t or src_t is int32_t:
            if flt_t is double:
                fast = 1
        if fast and c.nkeys == 1:
            key = (<const src_t*>c.keys)[0]
            val = (<const flt_t*>c.vals)[0]
    while start < n:
        m = n - start
        if m > BLOCK:
            m = BLOCK
        if fast and _dso_c(x + start, y + start, m, <int>c.nkeys, key, val, o, s) == 0:
            start += m
            continue
        r = _drive(x + start, tmp, m, c)
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
    if dst_code == 0:
        return _so_cast(x, <int8_t*>y, n, o, s, c, stage)
    elif dst_code == 1:
        return _so_cast(x, <int16_t*>y, n, o, s, c, stage)
    elif dst_code == 2:
        return _so_cast(x, <int32_t*>y, n, o, s, c, stage)
    elif dst_code == 3:
        return _so_cast(x, <int64_t*>y, n, o, s, c, stage)
    elif dst_code == 4:
        return _so_cast(x, <uint8_t*>y, n, o, s, c, stage)
    elif dst_code == 5:
        return _so_cast(x, <uint16_t*>y, n, o, s, c, stage)
    elif dst_code == 6:
        return _so_cast(x, <uint32_t*>y, n, o, s, c, stage)
    elif dst_code == 7:
        return _so_cast(x, <uint64_t*>y, n, o, s, c, stage)
    elif dst_code == 8:
        return _so_cast(x, <float*>y, n, o, s, c, stage)
    else:
        return _so_cast(x, <double*>y, n, o, s, c, stage)


cdef Py_ssize_t _cast_so_src(const void* x, int src_code, flt_t* y, Py_ssize_t n, double o, double s,
                             cfg_t* c, int* stage) noexcept nogil:
    if src_code == 0:
        return _cast_so(<const int8_t*>x, y, n, o, s, c, stage)
    elif src_code == 1:
        return _cast_so(<const int16_t*>x, y, n, o, s, c, stage)
    elif src_code == 2:
        return _cast_so(<const int32_t*>x, y, n, o, s, c, stage)
    elif src_code == 3:
        return _cast_so(<const int64_t*>x, y, n, o, s, c, stage)
    elif src_code == 4:
        return _cast_so(<const uint8_t*>x, y, n, o, s, c, stage)
    elif src_code == 5:
        return _cast_so(<const uint16_t*>x, y, n, o, s, c, stage)
    elif src_code == 6:
        return _cast_so(<const uint32_t*>x, y, n, o, s, c, stage)
    elif src_code == 7:
        return _cast_so(<const uint64_t*>x, y, n, o, s, c, stage)
    elif src_code == 8:
        return _cast_so(<const float*>x, y, n, o, s, c, stage)
    else:
        return _cast_so(<const double*>x, y, n, o, s, c, stage)


cdef Py_ssize_t _run_dst(const src_t* x, void* y, int dst_code, uint8_t* status, Py_ssize_t n, cfg_t* c) noexcept nogil:
    if dst_code == 0:
        return _run(x, <int8_t*>y, status, n, c)
    elif dst_code == 1:
        return _run(x, <int16_t*>y, status, n, c)
    elif dst_code == 2:
        return _run(x, <int32_t*>y, status, n, c)
    elif dst_code == 3:
        return _run(x, <int64_t*>y, status, n, c)
    elif dst_code == 4:
        return _run(x, <uint8_t*>y, status, n, c)
    elif dst_code == 5:
        return _run(x, <uint16_t*>y, status, n, c)
    elif dst_code == 6:
        return _run(x, <uint32_t*>y, status, n, c)
    elif dst_code == 7:
        return _run(x, <uint64_t*>y, status, n, c)
    elif dst_code == 8:
        return _run(x, <float*>y, status, n, c)
    else:
        return _run(x, <double*>y, status, n, c)


cdef Py_ssize_t _run_any(const void* x, int src_code, void* y, int dst_code, uint8_t* status,
                         Py_ssize_t n, cfg_t* c) noexcept nogil:
    if src_code == 0:
        return _run_dst(<const int8_t*>x, y, dst_code, status, n, c)
    elif src_code == 1:
        return _run_dst(<const int16_t*>x, y, dst_code, status, n, c)
    elif src_code == 2:
        return _run_dst(<const int32_t*>x, y, dst_code, status, n, c)
    elif src_code == 3:
        return _run_dst(<const int64_t*>x, y, dst_code, status, n, c)
    elif src_code == 4:
        return _run_dst(<const uint8_t*>x, y, dst_code, status, n, c)
    elif src_code == 5:
        return _run_dst(<const uint16_t*>x, y, dst_code, status, n, c)
    elif src_code == 6:
        return _run_dst(<const uint32_t*>x, y, dst_code, status, n, c)
    elif src_code == 7:
        return _run_dst(<const uint64_t*>x, y, dst_code, status, n, c)
    elif src_code == 8:
        return _run_dst(<const float*>x, y, dst_code, status, n, c)
    else:
        return _run_dst(<const double*>x, y, dst_code, status, n, c)


# ---------------------------------------------------------------------------------------
# Python entry points (the zarrcy.casting layer validates everything before calling)
# ---------------------------------------------------------------------------------------

cdef int _fill_fmt(fmt_t* f, tuple t) except -1:
    (f.kind, f.nbits, f.itemsize, f.natural, f.lo, f.hi, f.p, f.emin, f.emax, f.bias,
     f.has_inf, f.has_nan, f.nan_bits) = t
    return 0


cdef int _setup_cfg(cfg_t* c, Py_ssize_t n, int src_itemsize, Py_ssize_t dst_len, tuple fmt,
                    int rounding, int out_of_range, int src_code, int dst_code,
                    const uint8_t[::1] keys, const uint8_t[::1] values) except -1:
    _fill_fmt(&c.f, fmt)
    c.knums = NULL
    c.vbits = NULL
    if dst_len != n * c.f.itemsize:
        raise ValueError("cast kernel: output size does not match the input")
    if not (0 <= rounding <= 4 and 0 <= out_of_range <= 2 and 0 <= src_code <= 9 and 0 <= dst_code <= 9):
        raise ValueError("cast kernel: bad mode or type code")
    c.rmode = rounding
    c.oor = out_of_range
    c.nkeys = 0
    c.keys = NULL
    c.vals = NULL
    if keys is not None and keys.shape[0]:
        c.nkeys = keys.shape[0] // src_itemsize
        if values is None or values.shape[0] != c.nkeys * c.f.itemsize:
            raise ValueError("cast kernel: scalar_map keys and values differ in length")
        c.keys = &keys[0]
        c.vals = &values[0]
        c.knums = <num_t*>malloc(c.nkeys * sizeof(num_t))
        c.vbits = <uint64_t*>malloc(c.nkeys * sizeof(uint64_t))
        if c.knums == NULL or c.vbits == NULL:
            free(c.knums)
            free(c.vbits)
            c.knums = NULL
            c.vbits = NULL
            raise MemoryError()
    return 0


def dispatch_isa(force=None):
    """Which build of the dispatched loops runs: ``"avx2"`` or ``"baseline"``.

    ``force="baseline"`` makes every later call use the baseline build, ``force="auto"``
    goes back to detecting the CPU (tests use this to compare both builds; not thread-safe).
    """
    global zc_avx2_state
    if force == "baseline":
        zc_avx2_state = 0
    elif force == "auto":
        zc_avx2_state = -1 if ZC_HAVE_AVX2_BUILD else 0
    elif force is not None:
        raise ValueError(f"dispatch_isa: expected None, 'baseline' or 'auto', received {force!r}")
    return "avx2" if zc_use_avx2() else "baseline"


def cast_into(const uint8_t[::1] src, uint8_t[::1] dst, int src_code, int src_itemsize,
              int dst_code, tuple fmt, int rounding, int out_of_range,
              const uint8_t[::1] keys=None, const uint8_t[::1] values=None,
              uint8_t[::1] status=None):
    """Cast ``src`` (storage type ``src_code``) into ``dst`` (storage ``dst_code``, format ``fmt``).

    Codes: 0..3 int8..int64, 4..7 uint8..uint64, 8 float32, 9 float64.  ``keys``/``values``
    are the scalar_map in source / target storage (same count).  With ``status`` (one byte
    per element) every element is classified and the loop does not stop at a failure.
    Returns -1 or the index of the first failing element.
    """
    cdef cfg_t c
    cdef Py_ssize_t n = src.shape[0] // src_itemsize
    cdef Py_ssize_t r = -1
    cdef uint8_t* st = NULL
    cdef const void* xp
    cdef void* yp
    if status is not None:
        if status.shape[0] != n:
            raise ValueError("cast_into: status size does not match the input")
        if n:
            st = &status[0]
    _setup_cfg(&c, n, src_itemsize, dst.shape[0], fmt, rounding, out_of_range, src_code, dst_code, keys, values)
    if n:
        xp = &src[0]
        yp = &dst[0]
        with nogil:
            r = _run_any(xp, src_code, yp, dst_code, st, n, &c)
    free(c.knums)
    free(c.vbits)
    return r


def scale_offset_cast_into(const uint8_t[::1] src, uint8_t[::1] dst, int src_code,
                           int dst_code, tuple fmt, int rounding, int out_of_range,
                           double offset, double scale,
                           const uint8_t[::1] keys=None, const uint8_t[::1] values=None):
    """Fused encode: ``cast((x - offset) * scale)`` for a float32/float64 source (src_code 8/9).

    Returns ``(index, stage)``: index -1 on success; stage 0 = scale_offset failed, 1 = cast failed.
    """
    cdef cfg_t c
    cdef int itemsize = 4 if src_code == 8 else 8
    cdef Py_ssize_t n = src.shape[0] // itemsize
    cdef Py_ssize_t r = -1
    cdef int stage = -1
    cdef const void* xp
    cdef void* yp
    if src_code != 8 and src_code != 9:
        raise ValueError("scale_offset_cast_into: source must be float32 or float64")
    _setup_cfg(&c, n, itemsize, dst.shape[0], fmt, rounding, out_of_range, src_code, dst_code, keys, values)
    if n:
        xp = &src[0]
        yp = &dst[0]
        with nogil:
            if src_code == 8:
                r = _so_cast_dst(<const float*>xp, yp, dst_code, n, offset, scale, &c, &stage)
            else:
                r = _so_cast_dst(<const double*>xp, yp, dst_code, n, offset, scale, &c, &stage)
    free(c.knums)
    free(c.vbits)
    return r, stage


def cast_scale_offset_into(const uint8_t[::1] src, uint8_t[::1] dst, int src_code, int src_itemsize,
                           int dst_code, tuple fmt, int rounding, int out_of_range,
                           double offset, double scale,
                           const uint8_t[::1] keys=None, const uint8_t[::1] values=None):
    """Fused decode: ``cast(x) / scale + offset`` into a float32/float64 output (dst_code 8/9).

    Returns ``(index, stage)`` like :func:`scale_offset_cast_into`.
    """
    cdef cfg_t c
    cdef Py_ssize_t n = src.shape[0] // src_itemsize
    cdef Py_ssize_t r = -1
    cdef int stage = -1
    cdef const void* xp
    cdef void* yp
    if dst_code != 8 and dst_code != 9:
        raise ValueError("cast_scale_offset_into: output must be float32 or float64")
    _setup_cfg(&c, n, src_itemsize, dst.shape[0], fmt, rounding, out_of_range, src_code, dst_code, keys, values)
    if n:
        xp = &src[0]
        yp = &dst[0]
        with nogil:
            if dst_code == 8:
                r = _cast_so_src(xp, src_code, <float*>yp, n, offset, scale, &c, &stage)
            else:
                r = _cast_so_src(xp, src_code, <double*>yp, n, offset, scale, &c, &stage)
    free(c.knums)
    free(c.vbits)
    return r, stage
