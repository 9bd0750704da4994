/* C helpers of zarrcy/_kernels/_cast_report.pyx: the vectorisable report loops (moved out
   of an inline `cdef extern from *` block so C tooling and reviewers see them; static:
   each including module gets its own copy). */
#ifndef ZC_CAST_REPORT_H
#define ZC_CAST_REPORT_H

#include <stdint.h>
#include <string.h>
#include <math.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("no-trapping-math")
#endif
#define ZR_MAGIC 6755399441055744.0
#define ZR_DMAX 1.7976931348623157e308
static inline int64_t zr_bits(double f) { int64_t u; memcpy(&u, &f, 8); return u; }
static inline double zr_dbl(int64_t u) { double f; memcpy(&f, &u, 8); return f; }
/* r: the nearest-even integer of cc (|cc| < 2^51, default FP environment); each mode
   moves it by one where it rounds the other way (ext-codec-cast_value.md "rounding") */
#define ZR_ADJ_RNE
#define ZR_ADJ_RTZ r = r - (double)((cc >= 0.0) & (r > cc)) + (double)((cc < 0.0) & (r < cc));
#define ZR_ADJ_RTP r = r + (double)(r < cc);
#define ZR_ADJ_RTN r = r - (double)(r > cc);
#define ZR_ADJ_RNA { double d = cc - r; \
    r = r + (double)((d == 0.5) & (cc > 0.0)) - (double)((d == -0.5) & (cc < 0.0)); }
/* a double as an int64 with the same order (NaN excluded; -0.0 just below +0.0), and back */
static inline int64_t zr_key(double f) { int64_t b = zr_bits(f); return b ^ ((b >> 63) & INT64_MAX); }
static inline double zr_unkey(int64_t k) { return zr_dbl(k ^ ((k >> 63) & INT64_MAX)); }
/* the cast t -> integer [lo, hi]: n[0] rounded, n[1] above hi after rounding, n[2] below
   lo, n[3] NaN; a[0..5]: min / max of the source values x of the rounded, high, low ones
   (as order-preserving int64 keys: integer min / max reductions vectorise, double ones
   with a condition do not) */
#define ZR_MINMAX(M, CND) { int64_t mk = -(CND);                                    \
    int64_t lo_ = (k & mk) | (INT64_MAX & ~mk), hi_ = (k & mk) | (INT64_MIN & ~mk);  \
    M##mn = lo_ < M##mn ? lo_ : M##mn; M##mx = hi_ > M##mx ? hi_ : M##mx; }
#define ZR_STATUS_BODY(T, ADJ, OOR)                                                   \
    int64_t nr = 0, nh = 0, nl = 0, nn = 0; Py_ssize_t i;                             \
    double lo1 = lo - 1.0, hi1 = hi + 1.0;                                            \
    int64_t rmn = zr_key(a[0]), rmx = zr_key(a[1]), hmn = zr_key(a[2]), hmx = zr_key(a[3]); \
    int64_t lmn = zr_key(a[4]), lmx = zr_key(a[5]);                                   \
    for (i = 0; i < m; i++) {                                                         \
        double v = (double)t[i];                                                      \
        int64_t k = zr_key((double)x[i]);                                             \
        int64_t fin = fabs(v) <= ZR_DMAX;                                             \
        double cc = v > lo1 ? v : lo1;                                                \
        cc = cc < hi1 ? cc : hi1;                                                     \
        double r = (cc + ZR_MAGIC) - ZR_MAGIC;                                        \
        ADJ                                                                           \
        int64_t h = fin & (r > hi), l = fin & (r < lo);                               \
        int64_t rd = fin & (h ^ 1) & (l ^ 1) & (r != v);                              \
        nr += rd; nh += h; nl += l; nn += v != v;                                     \
        ZR_MINMAX(r, rd)                                                              \
        if (OOR) { ZR_MINMAX(h, h) ZR_MINMAX(l, l) }                                  \
    }                                                                                 \
    n[0] += nr; n[1] += nh; n[2] += nl; n[3] += nn;                                   \
    a[0] = zr_unkey(rmn); a[1] = zr_unkey(rmx); a[2] = zr_unkey(hmn); a[3] = zr_unkey(hmx); \
    a[4] = zr_unkey(lmn); a[5] = zr_unkey(lmx);
/* the round-trip rule, in float64: st[0] elements whose NaN-ness / finiteness / infinity
   changed, st[1] an original zero read back non-zero; e[0] max abs error, e[1] max rel
   error (finite on both sides); errors are >= +0, so their maxima are those of their bits */
#define ZR_STATS_BODY(T)                                                              \
    int64_t mism = 0, zerr = 0, mabs = zr_bits(e[0]), mrel = zr_bits(e[1]); Py_ssize_t i; \
    const int64_t one = zr_bits(1.0);                                                 \
    for (i = 0; i < m; i++) {                                                         \
        double o = (double)x[i], b = (double)back[i];                                 \
        int64_t no = o != o, nb = b != b;                                             \
        double ao = fabs(o);                                                          \
        int64_t fo = ao <= ZR_DMAX, fb = fabs(b) <= ZR_DMAX;                          \
        mism += (no ^ nb) | (fo ^ fb) | (((fo | no) ^ 1) & (o != b));                 \
        int64_t both = fo & fb, nz = ao != 0.0;                                       \
        int64_t mboth = -both, mnz = -nz;                                             \
        int64_t eb = zr_bits(fabs(b - o)) & mboth;                                    \
        mabs = eb > mabs ? eb : mabs;                                                 \
        double den = zr_dbl((zr_bits(ao) & mnz) | (one & ~mnz));                      \
        int64_t rb = zr_bits(zr_dbl(eb) / den) & mnz & mboth;                         \
        mrel = rb > mrel ? rb : mrel;                                                 \
        zerr |= both & (nz ^ 1) & (b != 0.0);                                         \
    }                                                                                 \
    st[0] += mism; st[1] |= zerr != 0; e[0] = zr_dbl(mabs); e[1] = zr_dbl(mrel);

/* OOR 0: the minima / maxima of the rounded values only; 1: also of the out-of-range ones
   (a second pass over the blocks that have some) */
#define ZR_STATUS_DEF(SUF, ATTR, NAME, T, ADJ) \
    ATTR static void zr_status_##NAME##SUF(const T* __restrict x, const T* __restrict t, Py_ssize_t m, \
                                         double lo, double hi, int64_t* n, double* a) { ZR_STATUS_BODY(T, ADJ, 0) } \
    ATTR static void zr_status_oor_##NAME##SUF(const T* __restrict x, const T* __restrict t, Py_ssize_t m, \
                                         double lo, double hi, int64_t* n, double* a) { ZR_STATUS_BODY(T, ADJ, 1) }
#define ZR_FNS(SUF, ATTR)                                                             \
    ZR_STATUS_DEF(SUF, ATTR, f_rne, float, ZR_ADJ_RNE)                                \
    ZR_STATUS_DEF(SUF, ATTR, f_rtz, float, ZR_ADJ_RTZ)                                \
    ZR_STATUS_DEF(SUF, ATTR, f_rtp, float, ZR_ADJ_RTP)                                \
    ZR_STATUS_DEF(SUF, ATTR, f_rtn, float, ZR_ADJ_RTN)                                \
    ZR_STATUS_DEF(SUF, ATTR, f_rna, float, ZR_ADJ_RNA)                                \
    ZR_STATUS_DEF(SUF, ATTR, d_rne, double, ZR_ADJ_RNE)                               \
    ZR_STATUS_DEF(SUF, ATTR, d_rtz, double, ZR_ADJ_RTZ)                               \
    ZR_STATUS_DEF(SUF, ATTR, d_rtp, double, ZR_ADJ_RTP)                               \
    ZR_STATUS_DEF(SUF, ATTR, d_rtn, double, ZR_ADJ_RTN)                               \
    ZR_STATUS_DEF(SUF, ATTR, d_rna, double, ZR_ADJ_RNA)                               \
    ATTR static void zr_stats_f##SUF(const float* __restrict x, const float* __restrict back, Py_ssize_t m, int64_t* st, double* e) { ZR_STATS_BODY(float) } \
    ATTR static void zr_stats_d##SUF(const double* __restrict x, const double* __restrict back, Py_ssize_t m, int64_t* st, double* e) { ZR_STATS_BODY(double) }

ZR_FNS(_base, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(ZC_NO_AVX2)
ZR_FNS(_avx2, __attribute__((target("avx2"))))
static int zr_avx2 = -1;
static int zr_use_avx2(void) {
    if (zr_avx2 < 0) { __builtin_cpu_init(); zr_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0; }
    return zr_avx2;
}
#define ZR_PICK(NAME) (zr_use_avx2() ? NAME##_avx2 : NAME##_base)
/* state 0 baseline, 1 AVX2 (where the CPU has it), -1 detect again, other: query */
static int zr_set_isa(int state) {
    if (state >= 0) { __builtin_cpu_init(); zr_avx2 = state && __builtin_cpu_supports("avx2"); }
    else if (state == -1) { zr_avx2 = -1; }
    return zr_use_avx2();
}
#else
#define ZR_PICK(NAME) NAME##_base
static int zr_set_isa(int state) { (void)state; return 0; }
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
/* mode: 0..4 as R_NEAREST_EVEN .. R_NEAREST_AWAY; oor: also the out-of-range minima / maxima */
#define ZR_DISPATCH(P, T)                                                             \
static void zr_status_##P(const T* x, const T* t, Py_ssize_t m, int mode, int oor, double lo, double hi, \
                          int64_t* n, double* a) {                                    \
    if (oor) switch (mode) {                                                          \
        case 1: ZR_PICK(zr_status_oor_##P##_rtz)(x, t, m, lo, hi, n, a); break;       \
        case 2: ZR_PICK(zr_status_oor_##P##_rtp)(x, t, m, lo, hi, n, a); break;       \
        case 3: ZR_PICK(zr_status_oor_##P##_rtn)(x, t, m, lo, hi, n, a); break;       \
        case 4: ZR_PICK(zr_status_oor_##P##_rna)(x, t, m, lo, hi, n, a); break;       \
        default: ZR_PICK(zr_status_oor_##P##_rne)(x, t, m, lo, hi, n, a);             \
    } else switch (mode) {                                                            \
        case 1: ZR_PICK(zr_status_##P##_rtz)(x, t, m, lo, hi, n, a); break;           \
        case 2: ZR_PICK(zr_status_##P##_rtp)(x, t, m, lo, hi, n, a); break;           \
        case 3: ZR_PICK(zr_status_##P##_rtn)(x, t, m, lo, hi, n, a); break;           \
        case 4: ZR_PICK(zr_status_##P##_rna)(x, t, m, lo, hi, n, a); break;           \
        default: ZR_PICK(zr_status_##P##_rne)(x, t, m, lo, hi, n, a);                 \
    }                                                                                 \
}
ZR_DISPATCH(f, float)
ZR_DISPATCH(d, double)
static void zr_stats_f(const float* x, const float* back, Py_ssize_t m, int64_t* st, double* e) {
    ZR_PICK(zr_stats_f)(x, back, m, st, e);
}
static void zr_stats_d(const double* x, const double* back, Py_ssize_t m, int64_t* st, double* e) {
    ZR_PICK(zr_stats_d)(x, back, m, st, e);
}

#endif
