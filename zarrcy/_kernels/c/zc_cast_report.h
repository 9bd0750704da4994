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
/* the cast of v (finite: fin) to an integer in [lo, hi] (lo1 = lo - 1, hi1 = hi + 1): r
   the rounded value of v clamped to [lo - 1, hi + 1]; h / l above / below the range,
   rd rounded in range (0 / 1 integers) */
#define ZR_CAST_STEP(ADJ)                                                             \
        double cc = v > lo1 ? v : lo1;                                                \
        cc = cc < hi1 ? cc : hi1;                                                     \
        double r = (cc + ZR_MAGIC) - ZR_MAGIC;                                        \
        ADJ                                                                           \
        int64_t h = fin & (r > hi), l = fin & (r < lo);                               \
        int64_t rd = fin & (h ^ 1) & (l ^ 1) & (r != v);
#define ZR_STATUS_BODY(T, ADJ, OOR)                                                   \
    int64_t nr = 0, nh = 0, nl = 0, nn = 0; Py_ssize_t i;                             \
    double lo1 = lo - 1.0, hi1 = hi + 1.0;                                            \
    int64_t rmn = zr_key(a[0]), rmx = zr_key(a[1]), hmn = zr_key(a[2]), hmx = zr_key(a[3]); \
    int64_t lmn = zr_key(a[4]), lmx = zr_key(a[5]);                                   \
    for (i = 0; i < m; i++) {                                                         \
        double v = (double)t[i];                                                      \
        int64_t k = zr_key((double)x[i]);                                             \
        int64_t fin = fabs(v) <= ZR_DMAX;                                             \
        ZR_CAST_STEP(ADJ)                                                             \
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

/* One pass over a block for the report's fast path (natural integer targets whose codes
   convert to the source float type exactly; scale_offset as o = 0, s = 1 when absent, which
   computes the same values): per element the scale_offset result, its cast (the codec's
   arithmetic: clamp to [lo - 1, hi + 1], round, clamp to [lo, hi]; NaN -> the NaN key's
   code), the code stored, the class counts (q->n: rounded, high, low, NaN), the minimum /
   maximum of the source values of the rounded ones (q->a[0..1]; those of the high / low
   ones, rare, are left to the caller: a second pass over such blocks), the decode
   (code / s + o) and the round-trip errors (q->e, q->zero), and the codes equal to the fill
   code / the values bit-equal to the fill value (q->fc, q->fv).  Returns non-zero when the
   block needs the exact path: an infinite source, a scale_offset or decode result that
   overflows, a NaN without a NaN key, a value out of range without clamp, a code that hits
   the decode key without being a NaN (a sentinel collision), or a NaN whose code is not
   the decode key.  Branch-free: comparisons are 0/1 integers, minima / maxima selects. */
typedef struct {
    int on;                 /* the caller's: the chain takes the one-pass path */
    int mode;               /* rounding: 0..4 as R_NEAREST_EVEN .. R_NEAREST_AWAY */
    double od, sd, lo, hi;  /* scale_offset (0, 1 without), the target's range */
    int clamp, nank, hasdk, hasfc, hasfv;
    int64_t nanc, dkey;     /* the NaN key's code, the decode key */
    uint64_t fcode, fbits;  /* the fill code's and the fill value's bit patterns */
} zr_par_t;
typedef struct {
    int64_t n[4];
    double a[2];
    double e[2];
    int64_t zero, fc, fv;
} zr_one_t;
#define ZR_ONE_BODY(T, UT, D, ADJ)                                                    \
    int64_t nr = 0, nh = 0, nl = 0, nn = 0, bad = 0, zerr = 0, fc = 0, fv = 0;        \
    Py_ssize_t i;                                                                     \
    const T o = (T)p->od, s = (T)p->sd;                                               \
    const double lo = p->lo, hi = p->hi;                                              \
    const D nanc = (D)p->nanc, dkey = (D)p->dkey, fcode = (D)p->fcode;                \
    const UT fbits = (UT)p->fbits;                                                    \
    const int64_t clamp = p->clamp != 0, nank = p->nank != 0, hasdk = p->hasdk != 0;  \
    const int64_t hasfc = p->hasfc != 0, hasfv = p->hasfv != 0;                       \
    double lo1 = lo - 1.0, hi1 = hi + 1.0;                                            \
    int64_t rmn = zr_key(q->a[0]), rmx = zr_key(q->a[1]);                             \
    int64_t mabs = zr_bits(q->e[0]), mrel = zr_bits(q->e[1]);                         \
    const int64_t magic = zr_bits(ZR_MAGIC);                                          \
    for (i = 0; i < m; i++) {                                                         \
        T xv = x[i];                                                                  \
        UT xb; memcpy(&xb, &xv, sizeof(UT));                                          \
        T tt = (xv - o) * s;                                                          \
        double v = (double)tt, xd = (double)xv;                                       \
        int64_t k = zr_key(xd);                                                       \
        int64_t xn = xd != xd, xfin = fabs(xd) <= ZR_DMAX, fin = fabs(v) <= ZR_DMAX;  \
        ZR_CAST_STEP(ADJ)                                                             \
        double rc = r < lo ? lo : r;                                                  \
        rc = rc > hi ? hi : rc;                                                       \
        D code = xn ? nanc : (D)(zr_bits(rc + ZR_MAGIC) - magic);                     \
        y[i] = code;                                                                  \
        int64_t dk = hasdk & (code == dkey);                                          \
        T bt = (T)code / s + o;                                                       \
        double b = (double)bt;                                                        \
        int64_t bfin = fabs(b) <= ZR_DMAX;                                            \
        bad |= ((xfin | xn) ^ 1) | (xfin & ((fin & bfin) ^ 1)) | (xn & (nank ^ 1))    \
               | ((h | l) & (clamp ^ 1)) | (dk ^ xn);                                 \
        nr += rd; nh += h; nl += l; nn += xn;                                         \
        ZR_MINMAX(r, rd)                                                              \
        double ao = fabs(xd);                                                         \
        int64_t both = xfin & bfin, nz = ao != 0.0;                                   \
        int64_t mboth = -both, mnz = -nz;                                             \
        int64_t eb = zr_bits(fabs(b - xd)) & mboth;                                   \
        mabs = eb > mabs ? eb : mabs;                                                 \
        int64_t rb = zr_bits(zr_dbl(eb) / ao) & mnz & mboth;  /* masked: 0 / 0 */     \
        mrel = rb > mrel ? rb : mrel;                                                 \
        zerr |= both & (nz ^ 1) & (b != 0.0);                                         \
        fc += hasfc & (code == fcode);                                                \
        fv += hasfv & (xb == fbits);                                                  \
    }                                                                                 \
    q->n[0] += nr; q->n[1] += nh; q->n[2] += nl; q->n[3] += nn;                       \
    q->a[0] = zr_unkey(rmn); q->a[1] = zr_unkey(rmx);                                 \
    q->e[0] = zr_dbl(mabs); q->e[1] = zr_dbl(mrel); q->zero |= zerr != 0;             \
    q->fc += fc; q->fv += fv;                                                         \
    return bad != 0;
#define ZR_ONE_ARGS(T, D) (const T* __restrict x, D* __restrict y, Py_ssize_t m, const zr_par_t* p, zr_one_t* q)
#define ZR_ONE_DEF(SUF, ATTR, NAME, T, UT, D, ADJ) \
    ATTR static int zr_one_##NAME##SUF ZR_ONE_ARGS(T, D) { ZR_ONE_BODY(T, UT, D, ADJ) }
#define ZR_ONE_MODES(SUF, ATTR, P, T, UT, D)                                          \
    ZR_ONE_DEF(SUF, ATTR, P##_rne, T, UT, D, ZR_ADJ_RNE)                              \
    ZR_ONE_DEF(SUF, ATTR, P##_rtz, T, UT, D, ZR_ADJ_RTZ)                              \
    ZR_ONE_DEF(SUF, ATTR, P##_rtp, T, UT, D, ZR_ADJ_RTP)                              \
    ZR_ONE_DEF(SUF, ATTR, P##_rtn, T, UT, D, ZR_ADJ_RTN)                              \
    ZR_ONE_DEF(SUF, ATTR, P##_rna, T, UT, D, ZR_ADJ_RNA)
/* the source / code pairs whose codes convert exactly: float64 with every integer of <= 32
   bits, float32 with those of <= 16 bits */
#define ZR_ONE_FNS(SUF, ATTR)                                                         \
    ZR_ONE_MODES(SUF, ATTR, d_i8, double, uint64_t, int8_t)                           \
    ZR_ONE_MODES(SUF, ATTR, d_i16, double, uint64_t, int16_t)                         \
    ZR_ONE_MODES(SUF, ATTR, d_i32, double, uint64_t, int32_t)                         \
    ZR_ONE_MODES(SUF, ATTR, d_u8, double, uint64_t, uint8_t)                          \
    ZR_ONE_MODES(SUF, ATTR, d_u16, double, uint64_t, uint16_t)                        \
    ZR_ONE_MODES(SUF, ATTR, d_u32, double, uint64_t, uint32_t)                        \
    ZR_ONE_MODES(SUF, ATTR, f_i8, float, uint32_t, int8_t)                            \
    ZR_ONE_MODES(SUF, ATTR, f_i16, float, uint32_t, int16_t)                          \
    ZR_ONE_MODES(SUF, ATTR, f_u8, float, uint32_t, uint8_t)                           \
    ZR_ONE_MODES(SUF, ATTR, f_u16, float, uint32_t, uint16_t)

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
ZR_ONE_FNS(_base, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(ZC_NO_AVX2)
ZR_FNS(_avx2, __attribute__((target("avx2"))))
ZR_ONE_FNS(_avx2, __attribute__((target("avx2"))))
/* the one-pass loops also for AVX-512 (F, VL, DQ, BW): 512-bit vectors, native 64-bit
   minima / maxima and mask registers; 1.9x the AVX2 build's speed on float32 -> uint16 */
#if defined(__clang__)
#define ZR_AVX512_ATTR __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw")))
#else
#define ZR_AVX512_ATTR __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,prefer-vector-width=512")))
#endif
ZR_ONE_FNS(_avx512, ZR_AVX512_ATTR)
static int zr_isa = -1;  /* 0 baseline, 1 AVX2, 2 AVX-512 (the one-pass loops; the rest AVX2) */
static int zr_detect(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2")) return 0;
    return (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
            && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw")) ? 2 : 1;
}
static int zr_level(void) {
    if (zr_isa < 0) zr_isa = zr_detect();
    return zr_isa;
}
#define ZR_PICK(NAME) (zr_level() >= 1 ? NAME##_avx2 : NAME##_base)
/* the one-pass loops' pick: AVX-512 from level 2 */
#define ZR_PICK_ONE(NAME) (zr_level() >= 2 ? NAME##_avx512 : ZR_PICK(NAME))
/* state 0 baseline, 1 AVX2, 2 AVX-512 (each capped at what the CPU has), -1 detect again,
   other: query; returns the level in use */
static int zr_set_isa(int state) {
    if (state >= 0) { int d = zr_detect(); zr_isa = state < d ? state : d; }
    else if (state == -1) { zr_isa = -1; }
    return zr_level();
}
#else
#define ZR_PICK(NAME) NAME##_base
#define ZR_PICK_ONE(NAME) NAME##_base
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
/* the one-pass block (ZR_ONE_BODY) of a source (0 float32, 1 float64) and a code type
   (T_* storage code: int8 0, int16 1, int32 2, uint8 4, uint16 5, uint32 6) for p->mode, as
   the build picked at run time; 1 (the exact path) for pairs it does not take */
#define ZR_ONE_MODE(P, T, D) switch (p->mode) {                                       \
        case 1: return ZR_PICK_ONE(zr_one_##P##_rtz)((const T*)x, (D*)y, m, p, q);        \
        case 2: return ZR_PICK_ONE(zr_one_##P##_rtp)((const T*)x, (D*)y, m, p, q);        \
        case 3: return ZR_PICK_ONE(zr_one_##P##_rtn)((const T*)x, (D*)y, m, p, q);        \
        case 4: return ZR_PICK_ONE(zr_one_##P##_rna)((const T*)x, (D*)y, m, p, q);        \
        default: return ZR_PICK_ONE(zr_one_##P##_rne)((const T*)x, (D*)y, m, p, q); }
static int zr_one(int dbl, int dc, const void* x, void* y, Py_ssize_t m, const zr_par_t* p, zr_one_t* q) {
    if (dbl) switch (dc) {
        case 0: ZR_ONE_MODE(d_i8, double, int8_t)
        case 1: ZR_ONE_MODE(d_i16, double, int16_t)
        case 2: ZR_ONE_MODE(d_i32, double, int32_t)
        case 4: ZR_ONE_MODE(d_u8, double, uint8_t)
        case 5: ZR_ONE_MODE(d_u16, double, uint16_t)
        case 6: ZR_ONE_MODE(d_u32, double, uint32_t)
        default: return 1;
    } else switch (dc) {
        case 0: ZR_ONE_MODE(f_i8, float, int8_t)
        case 1: ZR_ONE_MODE(f_i16, float, int16_t)
        case 4: ZR_ONE_MODE(f_u8, float, uint8_t)
        case 5: ZR_ONE_MODE(f_u16, float, uint16_t)
        default: return 1;
    }
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
