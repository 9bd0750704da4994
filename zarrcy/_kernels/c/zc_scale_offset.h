/* C helpers of zarrcy/_kernels/_scale_offset.pyx (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_SCALE_OFFSET_H
#define ZC_SCALE_OFFSET_H

#include <stdint.h>
static inline int zc_sub_i64(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
static inline int zc_add_i64(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
static inline int zc_mul_i64(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }
static inline int zc_sub_u64(uint64_t a, uint64_t b, uint64_t* r) { return __builtin_sub_overflow(a, b, r); }
static inline int zc_add_u64(uint64_t a, uint64_t b, uint64_t* r) { return __builtin_add_overflow(a, b, r); }
static inline int zc_mul_u64(uint64_t a, uint64_t b, uint64_t* r) { return __builtin_mul_overflow(a, b, r); }
#define ZC_SO_DBL_MAX 1.7976931348623157e308
#include <string.h>
/* bit 63 (bit 31) set iff the value is NaN or +-Inf (exponent all ones) */
static inline unsigned long long zc_nf64(double v) { unsigned long long u; memcpy(&u, &v, 8);
    return (u & 0x7ff0000000000000ULL) + 0x0010000000000000ULL; }
static inline unsigned int zc_nf32(float v) { unsigned int u; memcpy(&u, &v, 4);
    return (u & 0x7f800000U) + 0x00800000U; }
#include <stdint.h>
static inline uintptr_t zc_so_addr(const void* p) { return (uintptr_t)p; }
/* float64 encode block with non-temporal stores, for outputs far larger than the caches
   (no read-for-ownership of the output lines).  Same IEEE operations as the plain loop:
   y = (x - o) * s, then the "finite x gave a non-finite y" flag.  y 16-byte aligned. */
#if defined(__SSE2__)
#include <emmintrin.h>
#define ZC_SO_HAVE_STREAM 1
static int zc_so_enc_f64_stream(const double* x, double* y, Py_ssize_t m, double o, double s) {
    const __m128d vo = _mm_set1_pd(o), vs = _mm_set1_pd(s);
    const __m128i em = _mm_set1_epi64x(0x7ff0000000000000LL), one = _mm_set1_epi64x(0x0010000000000000LL);
    __m128i acc = _mm_setzero_si128();
    Py_ssize_t i = 0;
    for (; i + 2 <= m; i += 2) {
        __m128d vx = _mm_loadu_pd(x + i);
        __m128d vy = _mm_mul_pd(_mm_sub_pd(vx, vo), vs);
        __m128i nx = _mm_add_epi64(_mm_and_si128(_mm_castpd_si128(vx), em), one);
        __m128i ny = _mm_add_epi64(_mm_and_si128(_mm_castpd_si128(vy), em), one);
        acc = _mm_or_si128(acc, _mm_andnot_si128(nx, ny));
        _mm_stream_pd(y + i, vy);
    }
    int bad = _mm_movemask_pd(_mm_castsi128_pd(acc)) != 0;
    for (; i < m; i++) {
        y[i] = (x[i] - o) * s;
        bad |= (int)(((~zc_nf64(x[i])) & zc_nf64(y[i])) >> 63);
    }
    return bad;
}
static inline void zc_so_sfence(void) { _mm_sfence(); }
#else
#define ZC_SO_HAVE_STREAM 0
static int zc_so_enc_f64_stream(const double* x, double* y, Py_ssize_t m, double o, double s) { return -1; }
static inline void zc_so_sfence(void) { }
#endif

/* float encode / decode blocks: one C body compiled for the baseline and, where the CPU
   has it, AVX2 (runtime check; no FMA enabled, so both give the same bits).  Nonzero
   iff a finite x gave a non-finite y. */
#define ZC_SO_BODY(F, FB, NF, EXPR) { \
    FB acc = 0; Py_ssize_t i; \
    for (i = 0; i < m; i++) { F r = EXPR; acc |= (~NF(x[i])) & NF(r); y[i] = r; } \
    return (int)(acc >> (sizeof(FB) * 8 - 1)); }
#define ZC_SO_FNS(SUF, ATTR) \
    ATTR static int zc_so_enc_d_##SUF(const double* __restrict x, double* __restrict y, Py_ssize_t m, double o, double s) \
        ZC_SO_BODY(double, uint64_t, zc_nf64, (x[i] - o) * s) \
    ATTR static int zc_so_enc_f_##SUF(const float* __restrict x, float* __restrict y, Py_ssize_t m, float o, float s) \
        ZC_SO_BODY(float, uint32_t, zc_nf32, (x[i] - o) * s) \
    ATTR static int zc_so_dec_d_##SUF(const double* __restrict x, double* __restrict y, Py_ssize_t m, double o, double s) \
        ZC_SO_BODY(double, uint64_t, zc_nf64, x[i] / s + o) \
    ATTR static int zc_so_dec_f_##SUF(const float* __restrict x, float* __restrict y, Py_ssize_t m, float o, float s) \
        ZC_SO_BODY(float, uint32_t, zc_nf32, x[i] / s + o)
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(ZC_NO_AVX2)
ZC_SO_FNS(base, __attribute__((noinline)))
ZC_SO_FNS(avx2, __attribute__((noinline, target("avx2"))))
static int zc_so_avx2_state = -1;
static inline int zc_so_use_avx2(void) {
    if (zc_so_avx2_state < 0) { __builtin_cpu_init(); zc_so_avx2_state = __builtin_cpu_supports("avx2") ? 1 : 0; }
    return zc_so_avx2_state; }
#else
ZC_SO_FNS(base, )
#define zc_so_enc_d_avx2 zc_so_enc_d_base
#define zc_so_enc_f_avx2 zc_so_enc_f_base
#define zc_so_dec_d_avx2 zc_so_dec_d_base
#define zc_so_dec_f_avx2 zc_so_dec_f_base
static int zc_so_avx2_state = 0;
static inline int zc_so_use_avx2(void) { return 0; }
#endif
static int zc_so_enc_d(const double* x, double* y, Py_ssize_t m, double o, double s) {
    return zc_so_use_avx2() ? zc_so_enc_d_avx2(x, y, m, o, s) : zc_so_enc_d_base(x, y, m, o, s); }
static int zc_so_enc_f(const float* x, float* y, Py_ssize_t m, float o, float s) {
    return zc_so_use_avx2() ? zc_so_enc_f_avx2(x, y, m, o, s) : zc_so_enc_f_base(x, y, m, o, s); }
static int zc_so_dec_d(const double* x, double* y, Py_ssize_t m, double o, double s) {
    return zc_so_use_avx2() ? zc_so_dec_d_avx2(x, y, m, o, s) : zc_so_dec_d_base(x, y, m, o, s); }
static int zc_so_dec_f(const float* x, float* y, Py_ssize_t m, float o, float s) {
    return zc_so_use_avx2() ? zc_so_dec_f_avx2(x, y, m, o, s) : zc_so_dec_f_base(x, y, m, o, s); }

#endif
