/* C helpers of zarrcy/_kernels/_cast_scale_offset.pyx (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_CAST_SCALE_OFFSET_H
#define ZC_CAST_SCALE_OFFSET_H

#include <stdint.h>
#include <string.h>
#include <math.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("no-trapping-math")
#endif
#define ZQ_MAGIC 6755399441055744.0
#define ZQ_DMAX 1.7976931348623157e308
static inline int64_t zq_bits(double f) { int64_t u; memcpy(&u, &f, 8); return u; }
static inline double zq_dbl(int64_t u) { double f; memcpy(&f, &u, 8); return f; }
/* r: the nearest-even integer of cc (|cc| < 2^51, default FP environment); each mode
   moves it by one where it rounds the other way (ext-codec-cast_value.md "rounding") */
#define ZQ_ADJ_RNE
#define ZQ_ADJ_RTZ r = r - (double)((cc >= 0.0) & (r > cc)) + (double)((cc < 0.0) & (r < cc));
#define ZQ_ADJ_RTP r = r + (double)(r < cc);
#define ZQ_ADJ_RTN r = r - (double)(r > cc);
#define ZQ_ADJ_RNA { double d = cc - r; \
    r = r + (double)((d == 0.5) & (cc > 0.0)) - (double)((d == -0.5) & (cc < 0.0)); }
/* n[0] rounded, n[1] out of range after rounding, n[2] NaN, n[3] +-Inf */
#define ZQ_STATUS_BODY(T, ADJ)                                                        \
    int64_t nr = 0, no = 0, nn = 0, ni = 0; Py_ssize_t i;                             \
    double lo1 = lo - 1.0, hi1 = hi + 1.0;                                            \
    for (i = 0; i < m; i++) {                                                         \
        double v = (double)t[i];                                                      \
        int64_t nan = v != v;                                                         \
        int64_t fin = fabs(v) <= ZQ_DMAX;                                             \
        double cc = v > lo1 ? v : lo1;                                                \
        cc = cc < hi1 ? cc : hi1;                                                     \
        double r = (cc + ZQ_MAGIC) - ZQ_MAGIC;                                        \
        ADJ                                                                           \
        int64_t inr = (r >= lo) & (r <= hi);                                          \
        nr += fin & inr & (r != v);                                                   \
        no += fin & (inr ^ 1);                                                        \
        nn += nan;                                                                    \
        ni += (fin | nan) ^ 1;                                                        \
    }                                                                                 \
    n[0] += nr; n[1] += no; n[2] += nn; n[3] += ni;
/* check_cast's round-trip rule, in float64: st[0] mismatches, st[1] an original zero
   read back non-zero; e[0] max abs error, e[1] max rel error (finite on both sides);
   errors are >= +0, so their maxima are those of their bit patterns */
#define ZQ_STATS_BODY(T)                                                              \
    int64_t mism = 0, zerr = 0, mabs = zq_bits(e[0]), mrel = zq_bits(e[1]); Py_ssize_t i; \
    const int64_t one = zq_bits(1.0);                                                 \
    for (i = 0; i < m; i++) {                                                         \
        double o = (double)x[i], b = (double)back[i];                                 \
        int64_t no = o != o, nb = b != b;                                             \
        double ao = fabs(o);                                                          \
        int64_t fo = ao <= ZQ_DMAX, fb = fabs(b) <= ZQ_DMAX;                          \
        mism += (no ^ nb) | (fo ^ fb) | (((fo | no) ^ 1) & (o != b));                 \
        int64_t both = fo & fb, nz = ao != 0.0;                                       \
        int64_t mboth = -both, mnz = -nz;                                             \
        int64_t eb = zq_bits(fabs(b - o)) & mboth;                                    \
        mabs = eb > mabs ? eb : mabs;                                                 \
        double den = zq_dbl((zq_bits(ao) & mnz) | (one & ~mnz));                      \
        int64_t rb = zq_bits(zq_dbl(eb) / den) & mnz & mboth;                         \
        mrel = rb > mrel ? rb : mrel;                                                 \
        zerr |= both & (nz ^ 1) & (b != 0.0);                                         \
    }                                                                                 \
    st[0] += mism; st[1] |= zerr != 0; e[0] = zq_dbl(mabs); e[1] = zq_dbl(mrel);

#define ZQ_FNS(SUF, ATTR)                                                             \
    ATTR static void zq_status_f_rne##SUF(const float* __restrict t, Py_ssize_t m, double lo, double hi, int64_t* n) { ZQ_STATUS_BODY(float, ZQ_ADJ_RNE) } \
    ATTR static void zq_status_f_rtz##SUF(const float* __restrict t, Py_ssize_t m, double lo, double hi, int64_t* n) { ZQ_STATUS_BODY(float, ZQ_ADJ_RTZ) } \
    ATTR static void zq_status_f_rtp##SUF(const float* __restrict t, Py_ssize_t m, double lo, double hi, int64_t* n) { ZQ_STATUS_BODY(float, ZQ_ADJ_RTP) } \
    ATTR static void zq_status_f_rtn##SUF(const float* __restrict t, Py_ssize_t m, double lo, double hi, int64_t* n) { ZQ_STATUS_BODY(float, ZQ_ADJ_RTN) } \
    ATTR static void zq_status_f_rna##SUF(const float* __restrict t, Py_ssize_t m, double lo, double hi, int64_t* n) { ZQ_STATUS_BODY(float, ZQ_ADJ_RNA) } \
    ATTR static void zq_status_d_rne##SUF(const double* __restrict t, Py_ssize_t m, double lo, double hi, int64_t* n) { ZQ_STATUS_BODY(double, ZQ_ADJ_RNE) } \
    ATTR static void zq_status_d_rtz##SUF(const double* __restrict t, Py_ssize_t m, double lo, double hi, int64_t* n) { ZQ_STATUS_BODY(double, ZQ_ADJ_RTZ) } \
    ATTR static void zq_status_d_rtp##SUF(const double* __restrict t, Py_ssize_t m, double lo, double hi, int64_t* n) { ZQ_STATUS_BODY(double, ZQ_ADJ_RTP) } \
    ATTR static void zq_status_d_rtn##SUF(const double* __restrict t, Py_ssize_t m, double lo, double hi, int64_t* n) { ZQ_STATUS_BODY(double, ZQ_ADJ_RTN) } \
    ATTR static void zq_status_d_rna##SUF(const double* __restrict t, Py_ssize_t m, double lo, double hi, int64_t* n) { ZQ_STATUS_BODY(double, ZQ_ADJ_RNA) } \
    ATTR static void zq_stats_f##SUF(const float* __restrict x, const float* __restrict back, Py_ssize_t m, int64_t* st, double* e) { ZQ_STATS_BODY(float) } \
    ATTR static void zq_stats_d##SUF(const double* __restrict x, const double* __restrict back, Py_ssize_t m, int64_t* st, double* e) { ZQ_STATS_BODY(double) }

ZQ_FNS(_base, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(ZC_NO_AVX2)
ZQ_FNS(_avx2, __attribute__((target("avx2"))))
static int zq_avx2 = -1;
static int zq_use_avx2(void) {
    if (zq_avx2 < 0) { __builtin_cpu_init(); zq_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0; }
    return zq_avx2;
}
#define ZQ_PICK(NAME) (zq_use_avx2() ? NAME##_avx2 : NAME##_base)
/* state 0 baseline, 1 AVX2 (where the CPU has it), -1 detect again, other: query */
static int zq_set_isa(int state) {
    if (state >= 0) { __builtin_cpu_init(); zq_avx2 = state && __builtin_cpu_supports("avx2"); }
    else if (state == -1) { zq_avx2 = -1; }
    return zq_use_avx2();
}
#else
#define ZQ_PICK(NAME) NAME##_base
static int zq_set_isa(int state) { (void)state; return 0; }
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
/* mode: 0..4 as R_NEAREST_EVEN .. R_NEAREST_AWAY */
static void zq_status_f(const float* t, Py_ssize_t m, int mode, double lo, double hi, int64_t* n) {
    switch (mode) {
        case 1: ZQ_PICK(zq_status_f_rtz)(t, m, lo, hi, n); break;
        case 2: ZQ_PICK(zq_status_f_rtp)(t, m, lo, hi, n); break;
        case 3: ZQ_PICK(zq_status_f_rtn)(t, m, lo, hi, n); break;
        case 4: ZQ_PICK(zq_status_f_rna)(t, m, lo, hi, n); break;
        default: ZQ_PICK(zq_status_f_rne)(t, m, lo, hi, n);
    }
}
static void zq_status_d(const double* t, Py_ssize_t m, int mode, double lo, double hi, int64_t* n) {
    switch (mode) {
        case 1: ZQ_PICK(zq_status_d_rtz)(t, m, lo, hi, n); break;
        case 2: ZQ_PICK(zq_status_d_rtp)(t, m, lo, hi, n); break;
        case 3: ZQ_PICK(zq_status_d_rtn)(t, m, lo, hi, n); break;
        case 4: ZQ_PICK(zq_status_d_rna)(t, m, lo, hi, n); break;
        default: ZQ_PICK(zq_status_d_rne)(t, m, lo, hi, n);
    }
}
static void zq_stats_f(const float* x, const float* back, Py_ssize_t m, int64_t* st, double* e) {
    ZQ_PICK(zq_stats_f)(x, back, m, st, e);
}
static void zq_stats_d(const double* x, const double* back, Py_ssize_t m, int64_t* st, double* e) {
    ZQ_PICK(zq_stats_d)(x, back, m, st, e);
}

#endif
